"""The plots' margins by rule: room for each axes' title, axis labels and
tick labels reckoned in points from their text and the fonts' sizes, not
measured by drawing them. matplotlib's constrained layout measures every
tick label of every axes before the page is drawn (and then draws them
again): 40 % of a report's time at 10 M records. What the rule cannot see
is the tick labels' text; TICK_LABEL_WIDTH holds seven digits at 10 pt."""
from matplotlib import rcParams
from matplotlib.font_manager import FontProperties

from .layout import PT

LEADING = 1.2  # a label's line pitch in font sizes
EDGE = 10  # points between the plots and the (sub)figure's edge
TICK_LABEL_WIDTH = 46  # points: seven digits at 10 pt ("1000000" 44.5, "−0.0002" 43.4)
# the title's top rests at figure y 0.98 (matplotlib's default)
SUPTITLE_TOP = 0.02


def _points(size):
    """a font size of rcParams ("medium", 11) in points"""
    return FontProperties(size=size).get_size_in_points()


def _lines(text):
    return text.count("\n") + 1 if text else 0


def _tick_room(axis, label_width):
    """points from the spine to the far edge of the ticks and, if they
    show, their labels (label_width: None for one line of text)"""
    params = axis.get_tick_params()
    name = axis.axis_name
    room = rcParams[f"{name}tick.major.size"]
    if not params.get("labelbottom" if name == "x" else "labelleft", True):
        return room
    size = _points(rcParams[f"{name}tick.labelsize"])
    return room + rcParams[f"{name}tick.major.pad"] + (size * LEADING if label_width is None
                                                        else label_width)


def _needs(ax):
    """(above, below, left) points ax needs outside its box"""
    label = _points(rcParams["axes.labelsize"]) * LEADING
    pad = rcParams["axes.labelpad"]
    above = (_lines(ax.get_title()) * _points(rcParams["axes.titlesize"]) * LEADING
             + rcParams["axes.titlepad"])
    xlabel, ylabel = ax.get_xlabel(), ax.get_ylabel()
    below = _tick_room(ax.xaxis, None) + (_lines(xlabel) * label + pad if xlabel else 0)
    left = _tick_room(ax.yaxis, TICK_LABEL_WIDTH) + (_lines(ylabel) * label + pad if ylabel else 0)
    return above, below, left


def apply(f):
    """Sets the margins and gaps of every grid of plots on page f and its
    subfigures (one grid each, as the report's pages have), from what their
    axes show; call it once they are drawn."""
    for fig in (f, *f.subfigs):
        axes = [ax for ax in fig.axes
                if ax.get_figure(root=False) is fig and ax.get_subplotspec() is not None]
        if axes:
            _adjust(f, fig, axes)


def _adjust(f, fig, axes):
    spec = axes[0].get_subplotspec().get_gridspec()
    nrows, ncols = spec.get_geometry()
    above, below, left = [0.0] * nrows, [0.0] * nrows, [0.0] * ncols
    for ax in axes:
        s = ax.get_subplotspec()
        a, b, l = _needs(ax)
        above[s.rowspan.start] = max(above[s.rowspan.start], a)
        below[s.rowspan.stop - 1] = max(below[s.rowspan.stop - 1], b)
        left[s.colspan.start] = max(left[s.colspan.start], l)
    x0, y0, x1, y1 = fig.bbox.extents  # display units: dots
    width, height = (x1 - x0) * PT / f.dpi, (y1 - y0) * PT / f.dpi
    top = above[0] + EDGE
    title = f.get_suptitle()
    if title and y1 >= f.bbox.y1 - 0.5:  # under the page's title
        top += SUPTITLE_TOP * f.bbox.height * PT / f.dpi \
            + _lines(title) * _points(rcParams["figure.titlesize"]) * LEADING
    # every gap as the widest one, as a grid has one wspace and one hspace
    hgap = max((below[r] + above[r + 1] for r in range(nrows - 1)), default=0)
    wgap = max(left[1:], default=0) + EDGE
    plot_h = (height - top - below[-1] - EDGE - hgap * (nrows - 1)) / nrows
    # the last x tick label centred on the right end: half of it beyond
    right = EDGE + TICK_LABEL_WIDTH / 2
    plot_w = (width - left[0] - EDGE - right - wgap * (ncols - 1)) / ncols
    fig.subplots_adjust(left=(left[0] + EDGE) / width, right=1 - right / width,
                        bottom=(below[-1] + EDGE) / height, top=1 - top / height,
                        wspace=wgap / plot_w, hspace=hgap / plot_h)
