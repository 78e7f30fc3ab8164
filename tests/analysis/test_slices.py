"""The analysis works on slices and masks to spare memory: each such path
gives what the plain computation gives."""
import numpy as np
import pytest

from hopscope.analysis import queues
from hopscope.analysis.queues import (QueueSeries, arrivals_per_departure, sort_tagged,
                                      step_count, time_weighted_hist)
from hopscope.analysis.stats import sample_std


def _intervals(seed, n=500):
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 10_000, n)
    return s, s + rng.integers(0, 200, n)


@pytest.mark.parametrize("chunk", [1, 7, 1 << 16])
def test_sample_std_in_slices_is_numpys(chunk):
    v = np.random.default_rng(1).exponential(1e3, 1001) + 1e6
    assert sample_std(v, float(v.mean()), chunk) == pytest.approx(np.std(v, ddof=1), rel=1e-12)


def test_time_weighted_hist_in_slices_is_the_whole(monkeypatch):
    q = QueueSeries(*step_count(*_intervals(2)))
    whole = time_weighted_hist(q)
    monkeypatch.setattr(queues, "_CHUNK", 3)
    values, frac = time_weighted_hist(q)
    assert list(values) == list(whole[0]) and frac == pytest.approx(whole[1], rel=1e-12)


def test_step_count_of_a_mask_is_that_of_the_kept_intervals():
    s, e = _intervals(3)
    keep = np.random.default_rng(4).random(len(s)) < 0.6
    for got, want in zip(step_count(s, e, keep), step_count(s[keep], e[keep])):
        assert np.array_equal(got, want)
    for got, want in zip(sort_tagged(e, s, keep), sort_tagged(e[keep], s[keep])):
        assert np.array_equal(got, want)


def test_arrivals_per_departure_counts_entries_up_to_each_leave():
    enter = np.sort(np.random.default_rng(5).integers(0, 1000, 300))
    leave = np.sort(np.random.default_rng(6).integers(0, 1000, 200))
    want = [np.count_nonzero((enter > a) & (enter <= b)) for a, b in zip(leave[:-1], leave[1:])]
    assert list(arrivals_per_departure(enter, leave)) == want
