"""Output busy periods and minimum transit per packet size."""
import numpy as np
import pytest

from frames import BIG, frame
from hopscope.analysis.busy import busy_periods, min_transit_by_size, wire_ns


def _output_run(pairs, **kw):
    """Packets with output (t3, t4); t1, t2 just before t3."""
    t3 = [a for a, _ in pairs]
    return frame([a - 20 for a in t3], [a - 10 for a in t3], t3, [b for _, b in pairs], **kw)


def test_known_busy_periods():
    # [0,10) [5,12) touch [12,15): one period; [20,25) another
    b = busy_periods(_output_run([(20, 25), (0, 10), (12, 15), (5, 12)]))
    assert list(b["start_ns"] - BIG) == [0, 20]
    assert list(b["end_ns"] - BIG) == [15, 25]
    assert list(b["duration_ns"]) == [15, 5]
    assert list(b["packets"]) == [3, 1]


def test_link_time_lengthens_them():
    df = _output_run([(0, 10), (100, 110)], ip_len=[62, 62])
    assert wire_ns(np.array([62]), 1e9)[0] == 800  # (62 + 38) B * 8 at 1 Gb/s
    assert len(busy_periods(df)) == 2
    b = busy_periods(df, link_bps=1e9)  # the first frame is on the wire until 810
    assert list(b["duration_ns"]) == [910] and list(b["packets"]) == [2]


def test_unseen_exits_and_negative_are_counted():
    df = _output_run([(0, 10), (20, None), (40, 30)])
    b = busy_periods(df)
    assert len(b) == 1 and (b.attrs["open"], b.attrs["negative"]) == (1, 1)


def test_empty_and_one_packet():
    empty = busy_periods(frame([], [], [], []))
    assert len(empty) == 0 and list(empty.columns) == ["start_ns", "end_ns", "duration_ns",
                                                       "packets"]
    one = busy_periods(_output_run([(5, 9)]))
    assert list(one["duration_ns"]) == [4] and list(one["packets"]) == [1]


def test_min_transit_by_size():
    df = frame([0, 0, 0, 0, 0, 0], [10, 10, 10, 10, 10, 10], [20, 20, 20, 20, 20, 20],
               [50, 40, 90, 70, 1, 30], ["complete"] * 5 + ["dropped"],
               ip_len=[100, 100, 1500, 1500, 100, 100])
    m = min_transit_by_size(df)
    # size 100: 50, 40, and 1 whose t4 < t3 (transit still >= 0: kept); the dropped one is out
    assert list(m["ip_len"]) == [100, 1500]
    assert list(m["min_transit_ns"]) == [1, 70]
    assert list(m["count"]) == [3, 2]
    assert m["min_transit_ns"].dtype == np.int64


def test_min_transit_leaves_out_negative_and_empty():
    df = frame([100], [110], [120], [50])
    assert len(min_transit_by_size(df)) == 0
    assert len(min_transit_by_size(frame([], [], [], []))) == 0


def test_bad_link_rate():
    with pytest.raises(ValueError):
        busy_periods(_output_run([(0, 1)]), link_bps=-1)
