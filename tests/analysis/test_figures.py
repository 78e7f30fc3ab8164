"""The report's binned figures: what each bin shows equals what the raw
values say, brute force, so drawing per bin hides nothing a reader can see."""
import numpy as np
import pytest

from hopscope.report.figures import binned_quantiles, log_scale, peak_per_bin, time_bins
from hopscope.report.page import plt


def _peak_brute(t, n, edges):
    """Maximum of the step function over each bin, from its definition."""
    out = []
    for i in range(len(edges) - 1):
        lo, hi = edges[i], edges[i + 1]
        last = i == len(edges) - 2
        inside = (t >= lo) & ((t <= hi) if last else (t < hi))
        in_force = n[t <= lo][-1:] if (t <= lo).any() else n[:0]
        # a step exactly at the bin's start replaces the one in force before it
        if (t == lo).any():
            in_force = n[:0]
        out.append(max([0, *n[inside], *in_force]))
    return np.array(out)


@pytest.mark.parametrize("seed", range(5))
def test_peak_per_bin_is_the_step_functions_maximum(seed):
    rng = np.random.default_rng(seed)
    # steps clustered in time: many bins have none of their own
    t = np.sort(np.concatenate([rng.uniform(0, 1, 50), rng.uniform(5, 6, 50)]))
    n = rng.integers(0, 30, len(t))
    edges = np.linspace(t[0], t[-1], 41)
    t[7] = edges[3]  # a step right on an edge
    t.sort()
    assert list(peak_per_bin(t, n, edges)) == list(_peak_brute(t, n, edges))


def test_an_empty_bin_shows_the_queue_in_force():
    # 5 packets from 0 to 10, then empty: the bins in between are not 0
    t = np.array([0.0, 10.0])
    n = np.array([5, 0])
    edges = np.linspace(0, 10, 11)
    assert list(peak_per_bin(t, n, edges)) == [5] * 10


def test_binned_quantiles_match_each_bins_values():
    rng = np.random.default_rng(3)
    t = rng.integers(1, 10**9, 5000)  # in no order: records are not in t1's
    v = rng.exponential(3, len(t))
    v[::17] = np.nan  # not a delay: left out
    keep = np.ones(len(t), bool)
    keep[::5] = False  # not complete: not drawn
    rows, bounds, mid = time_bins(t, keep, t0=t.min())
    mid, (p50, p99) = binned_quantiles(v[rows], bounds, mid, (0.5, 0.99))
    ok = keep & ~np.isnan(v)
    lo, width = t[keep].min(), (t[keep].max() - t[keep].min()) // 400 + 1
    assert len(mid) == len(np.unique((t[ok] - lo) // width))
    for m, a, b in zip(mid, p50, p99):
        k = int(m * 1e9 + t.min() - lo) // width
        seg = v[ok & ((t - lo) // width == k)]
        assert (a, b) == pytest.approx((np.median(seg), np.quantile(seg, 0.99)))


def test_bins_without_values_are_skipped():
    t = np.array([1, 2, 99, 100])
    rows, bounds, mid = time_bins(t, np.ones(4, bool), t0=1, bins=10)
    mid, (p50,) = binned_quantiles(np.array([1.0, 3.0, 5.0, 7.0])[rows], bounds, mid, (0.5,))
    assert list(p50) == [2.0, 6.0] and mid[0] < 10e-9 < 90e-9 < mid[1]


def test_time_bins_take_the_kept_instants_seen():
    t = np.array([30, 0, 10, 20, 25])
    rows, bounds, mid = time_bins(t, np.array([True, True, True, True, False]), t0=10, bins=2)
    # 10 and 20 fall in the first bin (width 11 ns), 30 in the second
    assert sorted(rows[:2]) == [2, 3] and list(rows[2:]) == [0]
    assert list(bounds) == [0, 2, 3] and list(mid) == pytest.approx([5.5e-9, 16.5e-9])


def test_no_instant_seen_gives_no_bins():
    rows, bounds, mid = time_bins(np.zeros(3, np.int64), np.ones(3, bool), t0=0)
    assert binned_quantiles(np.zeros(0), bounds, mid, (0.5,))[0].size == 0


def test_log_axes_are_labelled_in_plain_numbers():
    """Not matplotlib's 10^n, which its TeX-like parser draws slowly; a span
    under a decade still gets labels (its minor ticks')."""
    f, (wide, short) = plt.subplots(1, 2)
    wide.plot([0.5, 20], [1e-5, 1])
    short.plot([5, 7.5], [1, 2])
    for ax in (wide, short):
        log_scale(ax, "x")
        log_scale(ax)
    f.canvas.draw()

    def shown(axis):
        return [t.get_text() for t in axis.get_ticklabels(which="both") if t.get_text()]
    assert {"1", "10"} <= set(shown(wide.xaxis)) and "1e-05" in shown(wide.yaxis)
    assert {"5", "6", "7"} <= set(shown(short.xaxis))
    for ax in (wide, short):
        assert not any("$" in s for s in shown(ax.xaxis) + shown(ax.yaxis))
    plt.close(f)
