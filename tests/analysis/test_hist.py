"""relative_histogram: bins, frequencies, overflow, log bins."""
import numpy as np
import pytest

from hopscope.analysis.hist import MAX_BINS, relative_histogram


def test_linear_bins_at_the_resolution():
    h = relative_histogram([0, 999, 1000, 2500, np.nan])
    assert list(h.edges_ns) == [0, 1000, 2000, 3000]
    assert list(h.freq) == [0.5, 0.25, 0.25]
    assert (h.count, h.overflow) == (4, 0)  # NaN is not a value


def test_linear_starts_at_the_bin_of_the_smallest_value():
    h = relative_histogram([2500, 2600, 4100], resolution_ns=500)
    assert h.edges_ns[0] == 2500 and h.edges_ns[-1] == 4500
    assert list(h.freq) == pytest.approx([2 / 3, 0, 0, 1 / 3])


def test_unsorted_input_is_left_alone():
    v = np.array([3000.0, 10.0, 1500.0])
    h = relative_histogram(v)
    assert list(v) == [3000, 10, 1500]
    assert list(h.freq) == pytest.approx([1 / 3, 1 / 3, 0, 1 / 3])


def test_fixed_bins_send_the_rest_to_overflow():
    h = relative_histogram([0, 10, 1500, 2000, 2500], bins=2)
    assert list(h.edges_ns) == [0, 1000, 2000]
    assert list(h.freq) == pytest.approx([2 / 3, 1 / 3])
    assert (h.count, h.overflow) == (5, 2)


def test_outliers_cannot_make_millions_of_bins():
    h = relative_histogram([0, 1, 10**12])
    assert len(h.freq) == MAX_BINS and h.overflow == 1
    assert h.freq.sum() == pytest.approx(1)


def test_log_bins():
    h = relative_histogram([1000, 5000, 10_000, 100_000], log=True, bins=2)
    assert h.edges_ns == pytest.approx([1e3, 1e4, 1e5])
    assert list(h.freq) == pytest.approx([0.5, 0.5])  # 10 µs opens bin 1; the max is in it


def test_log_bins_leave_out_zero_and_negative():
    h = relative_histogram([-5, 0, 2000, 20_000], log=True)
    assert h.edges_ns[0] == 2000 and h.edges_ns[-1] == pytest.approx(20_000)
    assert len(h.freq) == 20  # one decade at 20 bins per decade
    assert (h.count, h.overflow) == (4, 2) and h.freq.sum() == pytest.approx(1)


def test_log_bins_of_one_value():
    h = relative_histogram([5000, 5000], log=True)
    assert list(h.freq) == [1.0] and h.overflow == 0


def test_empty():
    h = relative_histogram([])
    assert (h.count, h.overflow, len(h.freq), len(h.edges_ns)) == (0, 0, 0, 0)
    assert relative_histogram([np.nan]).count == 0


def test_bad_arguments():
    with pytest.raises(ValueError, match="resolution"):
        relative_histogram([1], resolution_ns=0)
    with pytest.raises(ValueError, match="bins"):
        relative_histogram([1], bins=0)


def test_frequencies_match_numpy_histogram():
    v = np.random.default_rng(4).lognormal(8, 1, 5000).round()
    h = relative_histogram(v, resolution_ns=250)
    counts, _ = np.histogram(v, bins=h.edges_ns)  # numpy closes the last bin; ours has room
    assert h.freq == pytest.approx(counts / len(v))
