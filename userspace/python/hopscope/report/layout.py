"""Text and tables laid out in points from a corner, not in fractions of an
axes whose size the layout decides later: a table is as wide as its cells
(each column as its widest cell or header), narrowed to the page by
wrapping its headers, then its longest text columns, then by a smaller
font; text is wrapped to the page. `Pages` puts such blocks one below the
other and goes on to a new page, a table's header repeated, when one is
full."""
import re
from functools import lru_cache

from matplotlib.font_manager import FontProperties
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle
from matplotlib.textpath import text_to_path
from matplotlib.transforms import Affine2D, ScaledTranslation

from .page import PAGE, plt

PT = 72  # points per inch
WIDTH, HEIGHT = PAGE[0] * PT, PAGE[1] * PT
MARGIN = 24  # points between the text pages' text and the page's edges
PAD = 2.5  # points between a cell's text and its neighbours
# line pitch in font sizes: a word's box (pdftotext's) is 1.17 sizes tall
LEADING = 1.25
SMALLEST = 5  # points: a table's font shrinks no further to fit the page
# cells aligned right, as numbers: 12, -0.5, 3.2e+06, 1/0, 99.9%, — (none)
NUMBER = re.compile(r"[-+−]?\d[\d.,]*(e[-+]?\d+)?(/\d+)?%?|—|-|")


@lru_cache(maxsize=None)
def _font(size, weight):
    return FontProperties(size=size, weight=weight)


@lru_cache(maxsize=65536)
def text_width(s, size, weight="normal"):
    """s's width in points (its widest line), as the PDF is set: unhinted."""
    font = _font(size, weight)
    return max((text_to_path.get_text_width_height_descent(line, font, ismath=False)[0]
                for line in s.split("\n") if line), default=0.0)


def wrap(s, size, width, weight="normal"):
    """s's lines, each broken at spaces into lines of at most width points
    where its words allow (a longer word keeps a line of its own)."""
    out = []
    for para in s.split("\n"):
        line = ""
        for word in para.split(" "):
            longer = f"{line} {word}" if line else word
            if line and text_width(longer, size, weight) > width + 0.01:  # rounding
                out.append(line)
                line = word
            else:
                line = longer
        out.append(line)
    return out


def once(rows):
    """rows with their first cell blank where it repeats the row above's:
    each group of rows named once."""
    return [[""] + r[1:] if i and r[0] == rows[i - 1][0] else r for i, r in enumerate(rows)]


def origin(ax):
    """A transform from points right of and below ax's top left corner."""
    f = ax.get_figure()
    return (Affine2D().scale(1 / PT, -1 / PT) + f.dpi_scale_trans +
            ScaledTranslation(0, 1, ax.transAxes))


def strip(f, height, top=False):
    """Page f split: a strip `height` points tall at its bottom (or top),
    an axes to draw text in points on, and the rest, a subfigure for the
    plots, laid out by f's engine (a title of f's goes above the plots:
    with the strip on top, draw the title in the strip)."""
    height += 12  # the layout's pads around the subfigures
    ratios = [height, HEIGHT - height]
    parts = f.subfigures(2, 1, height_ratios=ratios if top else ratios[::-1], hspace=0)
    text, rest = parts if top else parts[::-1]
    ax = text.add_axes((0, 0, 1, 1))
    ax.axis("off")
    return rest, ax


def _text(ax, x, y, s, size, **kw):
    ax.text(x, y, s, transform=origin(ax), fontsize=size, va="top", in_layout=False, **kw)


class Text:
    """A paragraph wrapped to `width` points."""

    def __init__(self, text, size=9, width=WIDTH - 2 * MARGIN, gap=4):
        self.size, self.gap = size, gap
        self.lines = wrap(text, size, width)
        self.height = len(self.lines) * size * LEADING + gap

    def draw(self, ax, x, y):
        for i, line in enumerate(self.lines):
            _text(ax, x, y + i * self.size * LEADING, line, self.size)
        return y + self.height


class Table:
    """rows (lists of strings) under columns, titled, fitted to `width`
    points; drawn from (x, y) points off an axes' top left corner."""

    def __init__(self, rows, columns, title=None, size=8, width=WIDTH - 2 * MARGIN):
        # no rows: say so in the first column
        rows = rows or [["(none)"] + [""] * (len(columns) - 1)]
        self.rows, self.columns = rows, columns
        self.right = [all(NUMBER.fullmatch(r[i]) for r in rows) for i in range(len(columns))]
        self.size = size
        while not self._fit(width) and self.size > SMALLEST:
            self.size -= 0.5
        self.title = Text(title, 10, width) if title else None
        self.pitch = self.size * LEADING
        self.row_heights = [len(max(r, key=len)) * self.pitch + 2 * PAD for r in self.cells]
        self.header_height = len(max(self.header, key=len)) * self.pitch + 2 * PAD

    def _fit(self, width):
        """Column widths within width at self.size: each column as wide as
        its cells and header; too wide, the headers wider than their cells
        wrapped, then the widest text columns, as far as their words allow;
        False if that is not enough."""
        size = self.size

        def widest(texts, weight="normal"):
            return 2 * PAD + max((text_width(t, size, weight) for t in texts), default=0)
        body = [widest(r[i] for r in self.rows) for i in range(len(self.columns))]
        head = [widest([c], "bold") for c in self.columns]
        widths = [max(b, h) for b, h in zip(body, head)]
        excess = sum(widths) - width
        words = [widest(c.split(" "), "bold") for c in self.columns]
        for i in sorted(range(len(widths)), key=lambda i: body[i] - head[i]):
            give = min(excess, widths[i] - max(body[i], words[i]))
            if give > 0:
                widths[i] -= give
                excess -= give
        for i in sorted(range(len(widths)), key=lambda i: -widths[i]):
            if self.right[i]:
                continue
            # as narrow as its longest word, but not under a quarter of the
            # table where there is more to say: a column of a word a line reads badly
            least = max(words[i], widest(w for r in self.rows for w in r[i].split(" ")),
                        min(widths[i], width / 4))
            give = min(excess, widths[i] - least)
            if give > 0:
                widths[i] -= give
                excess -= give
        self.widths = widths
        self.header = [wrap(c, size, w - 2 * PAD, "bold") for c, w in zip(self.columns, widths)]
        self.cells = [[wrap(c, size, w - 2 * PAD) for c, w in zip(r, widths)] for r in self.rows]
        return excess <= 0

    @property
    def width(self):
        return sum(self.widths)

    def height(self, rows=None):
        rows = self.row_heights if rows is None else self.row_heights[rows]
        return (self.title.height if self.title else 0) + self.header_height + sum(rows)

    def fitting(self, start, space):
        """How many rows from start fit in space points below the header."""
        room = space - self.height(slice(0, 0))
        n = 0
        while start + n < len(self.rows) and room >= self.row_heights[start + n]:
            room -= self.row_heights[start + n]
            n += 1
        return n

    def draw(self, ax, x=0, y=0, rows=slice(None)):
        """Draws the title, the header and rows at (x, y); returns the y
        below it."""
        t = origin(ax)
        if self.title:
            y = self.title.draw(ax, x, y)
        lines = [(y, 0.8)]
        y = self._row(ax, x, y, self.header, self.header_height, weight="bold")
        lines.append((y, 0.5))
        for i, (cells, h) in enumerate(zip(self.cells[rows], self.row_heights[rows])):
            if i % 2:  # banded: the eye follows a wide row
                ax.add_artist(Rectangle((x, y), self.width, h, transform=t, lw=0,
                                        facecolor="0.93", in_layout=False))
            y = self._row(ax, x, y, cells, h)
        lines.append((y, 0.8))
        for at, lw in lines:
            ax.add_artist(Line2D([x, x + self.width], [at, at], transform=t, lw=lw,
                                 color="k", in_layout=False))
        return y

    def _row(self, ax, x, y, cells, height, **kw):
        for lines, w, right in zip(cells, self.widths, self.right):
            for j, line in enumerate(lines):
                _text(ax, x + (w - PAD if right else PAD), y + PAD + j * self.pitch, line,
                      self.size, ha="right" if right else "left", zorder=3, **kw)
            x += w
        return y + height


class Pages:
    """Blocks (Text, Table) drawn one below the other on pages titled
    `title`, as many pages as they take, into a PdfPages."""

    def __init__(self, pdf, title):
        self.pdf, self.title, self.pages = pdf, title, 0
        self.ax = None

    def _new(self):
        self.close()
        f = plt.figure(figsize=PAGE)
        self.ax = f.add_axes((0, 0, 1, 1))
        self.ax.axis("off")
        head = Text(self.title + (" (continued)" if self.pages else ""), 14, gap=8)
        self.y = self.top = head.draw(self.ax, MARGIN, MARGIN)

    def space(self, points):
        self.y += points

    def add(self, block):
        """Draws block below the last, on a new page if it does not fit
        (a table: its rows that do not, under its header again)."""
        if self.ax is None:
            self._new()
        if not isinstance(block, Table):
            if self.y + block.height > HEIGHT - MARGIN and self.y > self.top:
                self._new()
            self.y = block.draw(self.ax, MARGIN, self.y)
            return
        start = 0
        while start < len(block.rows):
            n = block.fitting(start, HEIGHT - MARGIN - self.y)
            if not n and self.y > self.top:  # not a row here: on the next page
                self._new()
                n = block.fitting(start, HEIGHT - MARGIN - self.y)
            n = max(n, 1)  # a row taller than a page: as it is
            self.y = block.draw(self.ax, MARGIN, self.y, slice(start, start + n)) + 8
            start += n
            if start < len(block.rows):
                self._new()

    def close(self):
        """Writes the page drawn; returns the pages written."""
        if self.ax is not None:
            f = self.ax.get_figure()
            self.pdf.savefig(f)
            plt.close(f)
            self.ax = None
            self.pages += 1
        return self.pages
