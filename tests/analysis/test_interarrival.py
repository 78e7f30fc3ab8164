"""Δpr and Δo (the paper's eqs. 7 and 8)."""
import numpy as np

from frames import frame
from hopscope.analysis.interarrival import output_interarrivals, prerouting_interarrivals


def test_in_time_order_whatever_the_record_order():
    # records out of order; packet 3 dropped after t2 (still counts for Δpr),
    # packet 4 never reached t2
    df = frame([0, 50, 10, 40, 60], [5, 80, 20, 45, None], [6, 90, 25, 46, None],
               [7, 100, 30, None, None])
    assert list(prerouting_interarrivals(df)) == [15, 25, 35]   # t2: 5 20 45 80
    assert list(output_interarrivals(df)) == [23, 70]           # t4: 7 30 100
    assert prerouting_interarrivals(df).dtype == np.int64


def test_empty_and_one_packet():
    assert len(prerouting_interarrivals(frame([], [], [], []))) == 0
    assert len(output_interarrivals(frame([0], [1], [2], [3]))) == 0


def test_big_clock_values_stay_exact():
    df = frame([0, 1], [1, 2], [2, 3], [3, 4], base=2**63 - 100)
    assert list(prerouting_interarrivals(df)) == [1]
