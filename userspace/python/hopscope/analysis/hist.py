"""Relative-frequency histograms of delays, as the paper draws them (1 µs bins)."""
from dataclasses import dataclass

import numpy as np

# a linear histogram never gets more bins than this (10 ms at 1 µs): beyond,
# a few outliers would cost millions of empty bins; they go to `overflow`
MAX_BINS = 10_000
LOG_BINS_PER_DECADE = 20


@dataclass
class Histogram:
    edges_ns: np.ndarray   # len(freq) + 1 bin edges, ns; bin i is [edges[i], edges[i+1])
    freq: np.ndarray       # fraction of the binned values per bin; sums to 1 (empty: no bins)
    count: int             # finite values given
    overflow: int          # of those, values outside the edges (not in freq)


def relative_histogram(values_ns, resolution_ns=1000, log=False, bins=None, sorted_finite=False):
    """Histogram of the finite values (NaN is skipped, not counted).

    Linear: bins of resolution_ns from the bin holding the smallest value;
    `bins` of them, else as many as the values need up to MAX_BINS. Log (for a
    log x axis): `bins` bins (default LOG_BINS_PER_DECADE per decade) spaced
    evenly in log from the smallest positive value, at least resolution_ns, to
    the largest, which the last bin includes; values below the first edge
    (zero and negative ones too) are overflow. sorted_finite: the values are
    sorted and all finite (stats.Delays.values), so neither is checked again.
    """
    if resolution_ns <= 0:
        raise ValueError(f"resolution_ns must be positive, not {resolution_ns}")
    if bins is not None and bins < 1:
        raise ValueError(f"bins must be at least 1, not {bins}")
    v = np.asarray(values_ns, dtype=np.float64)
    finite = True if sorted_finite else np.isfinite(v)
    if not np.all(finite):
        v = v[finite]
    if len(v) == 0:
        return Histogram(np.zeros(0), np.zeros(0), 0, 0)
    # sorted values make every bin count a binary search: cheaper than binning
    # each value, and free when the caller's values are sorted already
    # (stats.grouped_delays)
    if not sorted_finite and not np.all(v[:-1] <= v[1:]):
        v = np.sort(v)
    edges = _log_edges(v, resolution_ns, bins) if log else _linear_edges(v, resolution_ns, bins)
    below = np.searchsorted(v, edges, side="left")  # values < each edge
    if log:  # the last bin includes the largest value
        below[-1] = np.searchsorted(v, edges[-1], side="right")
    counts = np.diff(below)
    binned = int(counts.sum())
    freq = counts / binned if binned else counts.astype(np.float64)
    return Histogram(edges, freq, len(v), len(v) - binned)


def _linear_edges(v, res, bins):
    # delays are whole ns far below 2**53: float division floors them exactly
    lo = np.floor(v[0] / res) * res
    n = int(np.floor((v[-1] - lo) / res)) + 1 if bins is None else int(bins)
    n = min(n, MAX_BINS) if bins is None else n
    return lo + res * np.arange(n + 1, dtype=np.float64)


def _log_edges(v, res, bins):
    first_positive = np.searchsorted(v, 0, side="right")
    lo = max(float(v[first_positive]), float(res)) if first_positive < len(v) else float(res)
    hi = max(float(v[-1]), lo)
    n = bins if bins is not None else max(1, int(np.ceil(LOG_BINS_PER_DECADE * np.log10(hi / lo))))
    if hi <= lo:  # one distinct value: give it one bin's width
        hi = lo * 10 ** (1 / LOG_BINS_PER_DECADE)
    return np.geomspace(lo, hi, n + 1)
