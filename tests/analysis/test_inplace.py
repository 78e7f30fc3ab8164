"""analysis.inplace: numpy's a[keep] and np.diff, done in the array's own
memory a slice at a time; the same values whatever the slices' size."""
import numpy as np
import pytest

from hopscope.analysis import inplace


@pytest.fixture(params=[1, 3, 1 << 20])
def chunk(request, monkeypatch):
    monkeypatch.setattr(inplace, "CHUNK", request.param)
    return request.param


@pytest.mark.parametrize("n", [0, 1, 2, 7, 10])
def test_compact_is_the_masked_copy(chunk, n):
    rng = np.random.default_rng(n)
    a = rng.integers(-1000, 1000, n)
    for keep in (rng.random(n) < 0.5, np.ones(n, bool), np.zeros(n, bool)):
        want = a[keep]
        got = inplace.compact(a.copy(), keep)
        assert got.dtype == a.dtype and np.array_equal(got, want)


@pytest.mark.parametrize("n", [0, 1, 2, 7, 10])
def test_diff_is_np_diff(chunk, n):
    a = np.random.default_rng(n).integers(-1000, 1000, n)
    got = inplace.diff(a.copy())
    assert got.dtype == a.dtype and np.array_equal(got, np.diff(a))


def test_the_result_is_the_array_given():
    a = np.arange(10)
    assert inplace.compact(a, a % 2 == 0) is a and np.array_equal(a, [0, 2, 4, 6, 8])
    assert inplace.diff(a) is a and np.array_equal(a, [2, 2, 2, 2])
