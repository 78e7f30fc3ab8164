"""What every page of hopscope's PDFs shares: the size, the fonts, and a
matplotlib that draws into files only, never onto a display."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PAGE = (11.69, 8.27)  # A4 landscape, inches
plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "figure.titlesize": 13,
                     # TrueType, not Type 3: text a reader finds and copies whole, and
                     # word boxes of the font's real height (a Type 3 font of
                     # matplotlib's has the box of its tallest glyph: lines overlap)
                     "pdf.fonttype": 42,
                     # the x axis's first label clear of the y axis's last
                     "xtick.major.pad": 5, "xtick.minor.pad": 5})

__all__ = ["PAGE", "plt"]
