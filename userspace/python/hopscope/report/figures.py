"""The report's figures, one function per kind, each drawing into axes it is
given. Times arrive in ns and are shown in µs; frequencies are relative."""
import textwrap

import numpy as np
from matplotlib import ticker

from ..analysis.stats import STAGES, quantile_sorted

US = 1e-3
STAGE_LABEL = {
    "d_iq": "input queue d_iq = t2 − t1",
    "d_p": "processing d_p = t3 − t2",
    "d_oq": "output queue d_oq = t4 − t3",
    "transit": "transit t4 − t1",
}
# the paper's two senders
TOS_LABEL = {4: "sender1 (TOS 4)", 5: "sender2 (TOS 5)"}
# most of a long tail is empty bins: show up to this quantile, say what is beyond
SHOWN_QUANTILE = 0.999
# characters of a note under a quarter page's panel (report/layout.py
# measures text, but it sets matplotlib's backend: not for notebooks)
NOTE_CHARS = 64
# points per time series: enough for a printed page, never millions
SERIES_BINS = 400


def tos_label(tos):
    return TOS_LABEL.get(int(tos), f"TOS {int(tos)}")


class _PlainLog(ticker.LogFormatter):
    """The ticks matplotlib's log formatter labels, labelled %g (0.5, 20,
    1e+06); on an axis of more than 0.4 decades only 1, 2 and 5 times a
    power of ten: matplotlib's 2, 3, 4 and 6 run into each other on a
    short one (a panel of three on a page)."""
    def __call__(self, x, pos=None):
        if not super().__call__(x, pos):
            return ""
        lo, hi = sorted(self.axis.get_view_interval())
        mantissa = round(x / 10 ** np.floor(np.log10(x)), 6)
        return "" if mantissa not in (1, 2, 5) and hi > lo * 10 ** 0.4 else f"{x:g}"


def log_scale(ax, axis="y"):
    """A log axis labelled in plain numbers: matplotlib's default 10^n labels
    each go through its TeX-like parser, about 5 ms a label, more than
    drawing a page's data costs."""
    (ax.set_xscale if axis == "x" else ax.set_yscale)("log")
    which = ax.xaxis if axis == "x" else ax.yaxis
    which.set_major_formatter(_PlainLog())
    which.set_minor_formatter(_PlainLog(labelOnlyBase=False))


def histogram(ax, h, label=None, log_x=False, step=True, note=True):
    """A relative-frequency histogram (hist.Histogram) as a step line, x in µs,
    cut at SHOWN_QUANTILE of its mass; the share beyond the cut, written on
    the axes unless note is False (several on one axes: beyond())."""
    if not len(h.freq):
        ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes)
        return 0.0
    cum = np.cumsum(h.freq)
    last = min(int(np.searchsorted(cum, SHOWN_QUANTILE)) + 1, len(h.freq))
    x = h.edges_ns[:last + 1] * US
    y = h.freq[:last]
    if step:
        ax.stairs(y, x, label=label)
    else:
        ax.plot((x[:-1] + x[1:]) / 2, y, label=label)
    if log_x:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.set_xlabel("delay (µs)")
    ax.set_ylabel("relative frequency")
    share = 1 - cum[last - 1] + h.overflow / max(h.count, 1)
    if note:
        beyond(ax, [(None, share)])
    return share


def beyond(ax, shares):
    """The shares beyond the axis, [(label or None, share)], under the x
    label: clear of the data; several wrapped to a quarter page's panel."""
    def pct(share):
        return "< 0.01%" if share < 0.0001 else f"{share:.2%}"
    shown = [f"{label} {pct(s)}" if label else pct(s) for label, s in shares if s > 0]
    if shown:
        note = f"{ax.get_xlabel()}; beyond the axis: {', '.join(shown)}"
        ax.set_xlabel("\n".join(textwrap.wrap(note, NOTE_CHARS)))


def stage_grid(fig, hists, title, log_x=False, labels=None):
    """2 × 2 panels, one per stage; hists is a list of {stage: Histogram}
    (one per run or sender) overlaid with labels."""
    axes = fig.subplots(2, 2).ravel()
    for ax, stage in zip(axes, STAGES):
        beyond(ax, [(labels[i] if labels and len(hists) > 1 else None,
                     histogram(ax, hs[stage], label=labels[i] if labels else None,
                               log_x=log_x, note=False))
                    for i, hs in enumerate(hists) if stage in hs])
        ax.set_title(STAGE_LABEL[stage])
        if labels and len(labels) > 1:
            ax.legend(fontsize=8)
    fig.suptitle(title)


def queue_hist(ax, values, weights, label):
    if not len(values):
        ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes)
        return
    ax.bar(values, weights, width=0.8, label=label, alpha=0.7)
    ax.set_xlabel("packets in the queue")
    ax.set_ylabel("fraction")


def counts_hist(ax, counts, label):
    """Relative frequency of small integers (queue estimates, interoccurrences)."""
    counts = np.asarray(counts)
    if not len(counts):
        ax.text(0.5, 0.5, "none", ha="center", va="center", transform=ax.transAxes)
        return
    hi = int(np.quantile(counts, SHOWN_QUANTILE))
    width = max(1, int(np.ceil((hi + 1) / 100)))
    # half-integer edges: value k sits in the middle of its bin, as queue_hist's bars
    edges = np.arange(0, hi + width + 1, width) - 0.5
    f, _ = np.histogram(counts, edges)
    ax.stairs(f / len(counts), edges, label=label)
    ax.set_ylabel("relative frequency")


def first_instant(df):
    """The run's first t1, ns: its time axes start there."""
    t1 = df["t1"].to_numpy()
    return int(t1.min(where=t1 > 0, initial=np.iinfo(t1.dtype).max))  # no copy of the seen


def occupancy_series(ax, q, t0, label):
    """Queue occupancy over time: per time bin, the maximum (what a printed
    step plot of millions of steps would show anyway)."""
    if len(q.t_ns) < 2:
        ax.text(0.5, 0.5, "empty", ha="center", va="center", transform=ax.transAxes)
        return
    # bins in whole ns: the steps' instants are searched as they are, not
    # converted to seconds first (millions of them)
    edges = np.linspace(q.t_ns[0], q.t_ns[-1], SERIES_BINS + 1).round().astype(np.int64)
    ax.stairs(peak_per_bin(q.t_ns, q.n, edges), (edges - t0) * 1e-9, label=label)
    ax.set_xlabel("time since the first packet (s)")
    ax.set_ylabel("packets (max per bin)")


def peak_per_bin(t, n, edges):
    """Maximum of the step function (n[i] from t[i] on, t ascending, t[0] =
    edges[0]) over each bin [edges[i], edges[i+1]) (the last one closed): the
    steps inside the bin and the one in force as it starts. One reduction
    over slices, not a scattered update per step."""
    starts = np.searchsorted(t, edges[:-1], side="left")
    peak = np.maximum.reduceat(n, np.minimum(starts, len(n) - 1))
    # a bin without a step of its own reduceat gives the next step: take the
    # one in force instead
    nxt = np.append(starts[1:], len(n))
    peak[nxt == starts] = 0
    # the step in force at the bin's start, unless a step starts right there
    carried = (starts > 0) & ((nxt == starts) | (t[np.minimum(starts, len(t) - 1)] > edges[:-1]))
    return np.maximum(peak, np.where(carried, n[np.maximum(starts - 1, 0)], 0))


def delay_series(ax, mid, d_us, bounds, label):
    """A delay over time: per time bin the median and the 99th percentile.
    mid, bounds: time_bins'; d_us the delays of its rows (sorted here, bin by
    bin)."""
    mid, (p50, p99) = binned_quantiles(d_us, bounds, mid, (0.5, 0.99))
    if not len(mid):
        ax.text(0.5, 0.5, "no values", ha="center", va="center", transform=ax.transAxes)
        return
    ax.plot(mid, p50, label=f"{label} median")
    ax.plot(mid, p99, label=f"{label} p99", alpha=0.6)
    ax.set_xlabel("time since the first packet (s)")
    ax.set_ylabel("delay (µs)")
    log_scale(ax)


def time_bins(t_ns, keep, t0, bins=SERIES_BINS):
    """The rows kept whose instant t_ns > 0, in `bins` equal time bins from
    the first instant to the last: (the rows bin by bin, bounds: bin i is
    rows[bounds[i]:bounds[i + 1]], each bin's middle in s since t0). The
    instants become bin numbers in place and those are counting-sorted: no
    sort of the instants, whose order inside a bin its quantiles ignore."""
    rows = np.flatnonzero(keep & (t_ns > 0))
    if not len(rows):
        return rows, np.zeros(1, np.int64), np.zeros(0)
    t = t_ns[rows]  # our copy
    lo = int(t.min())
    width = (int(t.max()) - lo) // bins + 1  # whole ns, the last instant inside the last bin
    t -= lo
    t //= width
    # narrow bin numbers sort by radix
    b = t.astype(np.int16 if bins <= np.iinfo(np.int16).max else np.int64)
    del t
    order = np.argsort(b, kind="stable")
    bounds = np.concatenate([[0], np.cumsum(np.bincount(b, minlength=bins))])
    return rows[order], bounds, (lo - t0 + (np.arange(bins) + 0.5) * width) * 1e-9


def binned_quantiles(v, bounds, mid, qs):
    """(the middles of the bins with a value, [quantile q of each such bin
    for q in qs]); v: the bins' values one after another (time_bins'
    bounds), sorted here in place bin by bin. NaN is no value."""
    keep, out = [], []
    for i in range(len(bounds) - 1):  # a slice per bin, not a step per value
        b = v[bounds[i]:bounds[i + 1]]
        b.sort()  # one sort serves every q; NaN goes last
        n = int(np.searchsorted(b, np.inf, side="right"))
        if n:
            keep.append(i)
            out.append([quantile_sorted(b[:n], q) for q in qs])
    return mid[keep], [np.array([o[j] for o in out]) for j in range(len(qs))]


def relative_hist(ax, values, bins, log=False):
    """Relative-frequency histogram of many values, counted with numpy and
    drawn as one filled step (ax.hist draws a patch per bin and copies the
    values through Python lists)."""
    counts, edges = np.histogram(values, bins)
    ax.stairs(counts / len(values), edges, fill=True)
    if log:
        log_scale(ax)

