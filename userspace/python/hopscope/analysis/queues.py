"""Queue sizes over time: exact occupancy from the timestamps, and the paper's estimate.

A packet is in a queue from the instant it enters to the instant it leaves,
half open: at t it counts if enter <= t < leave. Packets that entered but were
never seen leaving (dropped inside, or still there at the end) have no known
exit: they are left out and counted (`open`), so the occupancy is a lower
bound whenever open > 0. Exits before entries are clock or matching errors:
left out and counted (`negative`).
"""
from dataclasses import dataclass

import numpy as np

# queue: (enter stage, leave stage). input and output are the paper's; the
# backlog (t0) and the qdisc (t_tceg) exist when those stages were recorded
QUEUES = {"input": ("t1", "t2"), "output": ("t3", "t4"),
          "backlog": ("t0", "t1"), "qdisc": ("t_tceg", "t4")}
# the paper's estimate: arrivals into the queue counted per inter-departure
PAPER_ESTIMATE = {"input": ("t1", "t2"), "output": ("t3", "t4")}
_MAX = np.iinfo(np.int64).max


@dataclass
class QueueSeries:
    t_ns: np.ndarray   # int64 instants where the occupancy changes, ascending
    n: np.ndarray      # int32 packets in the queue on [t_ns[i], t_ns[i+1]); last is 0
    open: int = 0      # packets left out: entered, exit not seen
    negative: int = 0  # packets left out: exit before entry


def stage_interval(df, enter, leave):
    """(enter ns, leave ns, kept mask, open count, negative count) of the
    packets seen at both stages with leave >= enter, as int64."""
    for stage in (enter, leave):
        if stage not in df.columns:
            raise ValueError(f"stage {stage} was not recorded in this run")
    s = df[enter].to_numpy(np.int64)
    e = df[leave].to_numpy(np.int64)
    entered = s != 0
    both = entered & (e != 0)
    negative = both & (e < s)
    kept = both & ~negative
    return (s[kept], e[kept], kept, int(np.count_nonzero(entered & (e == 0))),
            int(np.count_nonzero(negative)))


def occupancy(df, queue):
    """Exact occupancy of queue ("input": t1 <= t < t2, "output": t3 <= t < t4,
    also "backlog", "qdisc") as a step function."""
    if queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}: one of {', '.join(QUEUES)}")
    s, e, _, n_open, n_negative = stage_interval(df, *QUEUES[queue])
    t, n = step_count(s, e)
    return QueueSeries(t, n, n_open, n_negative)


def step_count(s, e):
    """(instants where the count changes, number of intervals [s, e)
    covering each instant onward).

    After sorting all entries and exits together, a cumulative sum of +1/-1
    gives the count after every event, and the last event at each instant
    gives the count from that instant on.
    """
    if len(s) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    key, base = sort_tagged(e, s)
    # in place and int32 counts where possible: fresh memory is slow on a VM
    n = np.bitwise_and(key, 1, out=np.empty(len(key), np.int32), casting="unsafe")
    n <<= 1
    n -= 1
    np.cumsum(n, out=n)
    key >>= 1
    last = np.empty(len(key), bool)  # the last event at each instant
    np.not_equal(key[1:], key[:-1], out=last[:-1])
    last[-1] = True
    if not last.all():
        key, n = key[last], n[last]
    change = np.empty(len(n), bool)  # an entry and an exit at one instant change nothing
    change[0] = True
    np.not_equal(n[1:], n[:-1], out=change[1:])
    if not change.all():
        key, n = key[change], n[change]
    key += base
    return key, n


def sort_tagged(a, b):
    """a and b sorted together as one int64 array of keys
    (t - base) << 1 | tag, tag 0 for a and 1 for b, so at equal instants a
    comes first; returns (keys, base).

    One sort of int64 beats both argsort and searchsorted here; the stable
    sort (timsort) is the fast one because records come nearly in time
    order. The offset from the earliest instant keeps the arithmetic in int64
    whatever the clock's absolute value.
    """
    base = min(int(a.min(initial=_MAX)), int(b.min(initial=_MAX)))
    top = max(int(a.max(initial=base)), int(b.max(initial=base)))
    if top - base >= 1 << 62:
        raise ValueError("timestamps span more than 2**62 ns: not one recording's clock")
    key = np.empty(len(a) + len(b), np.int64)
    for part, t, tag in ((key[:len(a)], a, 0), (key[len(a):], b, 1)):
        np.subtract(t, base, out=part)  # in place: fresh memory is slow on a VM
        part <<= 1
        part |= tag
    key.sort(kind="stable")
    return key, base


def time_weighted_hist(series):
    """(n values 0..max, fraction of the observed time spent at each), the
    time from the first change to the last."""
    if len(series.t_ns) < 2:
        return np.zeros(0, np.int64), np.zeros(0)
    dt = np.diff(series.t_ns)
    w = np.bincount(series.n[:-1], weights=dt.astype(np.float64))
    return np.arange(len(w), dtype=np.int64), w / dt.sum()


def paper_estimate(df, queue):
    """The paper's queue-size estimate: for each inter-departure interval
    (Δpr for the input queue, Δo for the output queue), the number of packets
    that entered the queue during it, i.e. in (t_leave(n-1), t_leave(n)].
    Every packet seen at the stage counts; int64, one per interval."""
    if queue not in PAPER_ESTIMATE:
        raise ValueError(f"the paper estimates {' and '.join(PAPER_ESTIMATE)} queues only, "
                         f"not {queue!r}")
    enter, leave = PAPER_ESTIMATE[queue]
    t_enter, t_leave = (df[s].to_numpy(np.int64) for s in (enter, leave))
    t_enter, t_leave = t_enter[t_enter != 0], t_leave[t_leave != 0]
    if len(t_leave) < 2:
        return np.zeros(0, np.int64)
    key, _ = sort_tagged(t_enter, t_leave)
    # entries sort before a leave at the same instant; the j-th leave at
    # position p has p - j entries before it, so between two leaves
    # diff(p) - 1 entries
    is_leave = np.bitwise_and(key, 1, out=np.empty(len(key), np.int8), casting="unsafe")
    entered = np.diff(np.flatnonzero(is_leave))
    entered -= 1
    return entered
