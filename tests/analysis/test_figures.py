"""The report's binned figures: what each bin shows equals what the raw
values say, brute force, so drawing per bin hides nothing a reader can see."""
import numpy as np
import pytest

from hopscope.report.figures import binned_quantiles, peak_per_bin, time_order


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
    t = np.sort(rng.uniform(0, 10, 5000))
    v = rng.exponential(3, len(t))
    v[::17] = np.nan  # not a delay: left out
    mid, (p50, p99) = binned_quantiles(t, v, (0.5, 0.99), bins=20)
    ok = ~np.isnan(v)
    edges = np.linspace(t[ok][0], t[ok][-1] + 1e-9, 21)
    for i, m in enumerate(mid):
        k = int(np.searchsorted(edges, m)) - 1
        seg = v[ok][(t[ok] >= edges[k]) & (t[ok] < edges[k + 1])]
        assert (p50[i], p99[i]) == pytest.approx((np.median(seg), np.quantile(seg, 0.99)))


def test_bins_without_values_are_skipped():
    t = np.array([0.0, 0.1, 9.9, 10.0])
    mid, (p50,) = binned_quantiles(t, np.array([1.0, 3.0, 5.0, 7.0]), (0.5,), bins=10)
    assert list(p50) == [2.0, 6.0] and mid[0] < 1 < 9 < mid[1]


def test_time_order_keeps_instants_seen_in_time_order():
    order, s = time_order(np.array([30, 0, 10, 20]), 10)
    assert list(order) == [2, 3, 0] and list(s) == pytest.approx([0, 1e-8, 2e-8])
