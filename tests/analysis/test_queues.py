"""Queue occupancy (exact and the paper's estimate) on hand-made runs."""
import numpy as np
import pytest

from frames import BIG, frame
from hopscope.analysis import queues
from hopscope.analysis.queues import occupancy, paper_estimate, step_count, time_weighted_hist


def _input_run(pairs, **kw):
    """Packets with (t1, t2); processing and output 5 ns each after t2."""
    t1 = [a for a, _ in pairs]
    t2 = [b for _, b in pairs]
    return frame(t1, t2, [None if b is None else b + 5 for b in t2],
                 [None if b is None else b + 10 for b in t2], **kw)


def test_known_input_occupancy():
    # [0,10) [2,5) [5,8) [12,12) (zero wait: never in the queue) [14,20)
    q = occupancy(_input_run([(0, 10), (2, 5), (5, 8), (12, 12), (14, 20)]), "input")
    # at 5 one packet leaves and one enters: no change, no point
    assert list(q.t_ns - BIG) == [0, 2, 8, 10, 14, 20]
    assert list(q.n) == [1, 2, 1, 0, 1, 0]
    assert (q.open, q.negative) == (0, 0)
    values, frac = time_weighted_hist(q)
    # from 0 to 20: n=0 for 4 ns (10..14), 1 for 10 (0..2, 8..10, 14..20), 2 for 6 (2..8)
    assert list(values) == [0, 1, 2]
    assert frac == pytest.approx([4 / 20, 10 / 20, 6 / 20])


def test_known_output_occupancy():
    df = frame([0, 1, 2], [1, 2, 3], [2, 3, 30], [10, 4, 40])
    q = occupancy(df, "output")
    assert list(q.t_ns - BIG) == [2, 3, 4, 10, 30, 40]
    assert list(q.n) == [1, 2, 1, 0, 1, 0]


def test_unseen_exits_and_negative_waits_are_left_out_and_counted():
    q = occupancy(_input_run([(0, 10), (3, None), (20, 15), (30, 31)]), "input")
    assert (q.open, q.negative) == (1, 1)
    assert list(q.n) == [1, 0, 1, 0]


def test_records_out_of_order():
    pairs = [(0, 10), (2, 5), (5, 8), (14, 20)]
    q1 = occupancy(_input_run(pairs), "input")
    q2 = occupancy(_input_run(pairs[::-1]), "input")
    assert list(q1.t_ns) == list(q2.t_ns) and list(q1.n) == list(q2.n)


def test_empty_one_packet_all_dropped():
    empty = occupancy(_input_run([]), "input")
    assert len(empty.t_ns) == 0 and len(time_weighted_hist(empty)[0]) == 0
    one = occupancy(_input_run([(7, 9)]), "input")
    assert list(one.t_ns - BIG) == [7, 9] and list(one.n) == [1, 0]
    assert list(time_weighted_hist(one)[1]) == [0.0, 1.0]
    dropped = occupancy(_input_run([(0, None), (1, None)], status=["dropped"] * 2), "input")
    assert len(dropped.n) == 0 and dropped.open == 2


def test_recording_without_t4():
    df = frame([0, 1], [1, 2], [2, 3], [None, None])
    q = occupancy(df, "output")
    assert len(q.n) == 0 and q.open == 2
    assert len(paper_estimate(df, "output")) == 0


def test_clock_near_int64_max():
    q = occupancy(_input_run([(0, 3), (1, 2)], base=2**63 - 100), "input")
    assert list(q.t_ns - (2**63 - 100)) == [0, 1, 2, 3] and list(q.n) == [1, 2, 1, 0]


def test_queue_names():
    df = _input_run([(0, 1)])
    with pytest.raises(ValueError, match="unknown queue"):
        occupancy(df, "middle")
    with pytest.raises(ValueError, match="t0 was not recorded"):
        occupancy(df, "backlog")
    with pytest.raises(ValueError, match="input and output"):
        paper_estimate(df, "backlog")
    with_t0 = frame([5], [6], [7], [8], t0=[1])
    assert list(occupancy(with_t0, "backlog").n) == [1, 0]


def test_paper_estimate_counts_arrivals_per_interdeparture():
    # t2 (departures from the input queue): 10 20 30 40; t1 (arrivals): 0 5 9 12 20 35
    # intervals (10,20] (20,30] (30,40]: arrivals 12,20 | none | 35 (and 9 is before)
    df = frame([0, 5, 9, 12, 20, 35], [10, 20, 30, 40, None, None],
               [11, 21, 31, 41, None, None], [12, 22, 32, 42, None, None])
    assert list(paper_estimate(df, "input")) == [2, 0, 1]
    # output: t4 departures 12 22 32 42; t3 arrivals 11 21 31 41: one per interval
    assert list(paper_estimate(df, "output")) == [1, 1, 1]


@pytest.mark.parametrize("chunk", [1, 2, 1 << 20])
def test_paper_estimate_a_slice_of_departures_at_a_time(monkeypatch, chunk):
    """The searches taken a slice of departures at a time give what one
    search of them all gives, at every slice boundary."""
    monkeypatch.setattr(queues, "_CHUNK", chunk)
    rng = np.random.default_rng(chunk)
    enter = np.sort(rng.integers(0, 100, 40))
    leave = np.sort(rng.integers(0, 100, 25))
    want = np.diff(np.searchsorted(enter, leave, side="right"))
    assert np.array_equal(queues.arrivals_per_departure(enter, leave), want)


def test_step_count_against_brute_force():
    rng = np.random.default_rng(7)
    s = rng.integers(0, 200, 300)
    e = s + rng.integers(0, 30, 300)  # zero-length and tied intervals included
    t, n = step_count(s, e)
    for instant in range(0, 240):
        expect = np.count_nonzero((s <= instant) & (instant < e))
        i = np.searchsorted(t, instant, side="right") - 1
        assert (n[i] if i >= 0 else 0) == expect
    assert n[-1] == 0 and np.all(np.diff(t) > 0)


def test_area_under_occupancy_is_the_sum_of_waits():
    rng = np.random.default_rng(8)
    t1 = np.cumsum(rng.integers(1, 2000, 5000))
    wait = rng.integers(0, 9000, 5000)
    df = _input_run(list(zip(t1, t1 + wait)))
    q = occupancy(df, "input")
    assert np.sum(q.n[:-1] * np.diff(q.t_ns)) == wait.sum()  # Little's law, exactly


def test_times_from_different_clocks_are_refused():
    df = _input_run([(0, 1), (2**62, 2**62 + 1)], base=1)
    with pytest.raises(ValueError, match="2\\*\\*62"):
        occupancy(df, "input")
