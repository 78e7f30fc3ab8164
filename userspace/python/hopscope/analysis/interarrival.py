"""The paper's inter-arrival times: Δpr(n) = t2(n) − t2(n−1) (eq. 7) and
Δo(n) = t4(n) − t4(n−1) (eq. 8), n in order of the instant itself.

Every packet seen at the stage counts, whatever became of it later: a packet
dropped after PRE_ROUTING still went through it.
"""
import numpy as np

from . import inplace


def seen_sorted(df, stage):
    """Sorted int64 instants of the packets seen at stage (0 = not seen).

    Records come roughly in completion order, so the stable sort (timsort,
    which finds the runs) is the fast one here.
    """
    t = df[stage].to_numpy(np.int64)
    seen = t[t != 0]
    seen.sort(kind="stable")  # in place: our own copy already
    return seen


def prerouting_interarrivals(df):
    """Δpr in ns (int64), len = packets seen at t2 minus one."""
    return inplace.diff(seen_sorted(df, "t2"))


def output_interarrivals(df):
    """Δo in ns (int64), len = packets seen at t4 minus one."""
    return inplace.diff(seen_sorted(df, "t4"))
