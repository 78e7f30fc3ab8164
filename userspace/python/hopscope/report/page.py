"""What every page of hopscope's PDFs shares: the size, the fonts, and a
matplotlib that draws into files only, never onto a display."""
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PAGE = (11.69, 8.27)  # A4 landscape, inches
plt.rcParams.update({"font.size": 10, "axes.titlesize": 11, "figure.titlesize": 13})

__all__ = ["PAGE", "plt"]
