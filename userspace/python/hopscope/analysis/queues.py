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

from . import inplace
from .interarrival import seen_sorted

# queue: (enter stage, leave stage). input and output are the paper's; the
# backlog (t0) and the qdisc (t_tceg) exist when those stages were recorded
QUEUES = {"input": ("t1", "t2"), "output": ("t3", "t4"),
          "backlog": ("t0", "t1"), "qdisc": ("t_tceg", "t4")}
# the paper's estimate: arrivals into the queue counted per inter-departure
PAPER_ESTIMATE = {"input": ("t1", "t2"), "output": ("t3", "t4")}
_MAX = np.iinfo(np.int64).max
_CHUNK = 1 << 20


@dataclass
class QueueSeries:
    t_ns: np.ndarray   # int64 instants where the occupancy changes, ascending
    n: np.ndarray      # int32 packets in the queue on [t_ns[i], t_ns[i+1]); last is 0
    open: int = 0      # packets left out: entered, exit not seen
    negative: int = 0  # packets left out: exit before entry


def stage_interval(df, enter, leave):
    """(enter ns, leave ns, kept mask, open count, negative count) of the
    packets seen at both stages with leave >= enter, as int64."""
    s, e, kept, n_open, n_negative = interval_mask(df, enter, leave)
    return s[kept], e[kept], kept, n_open, n_negative


def interval_mask(df, enter, leave):
    """stage_interval with every row's instants, as the columns give them,
    and the mask of those kept (a new array, the caller's to change)."""
    for stage in (enter, leave):
        if stage not in df.columns:
            raise ValueError(f"stage {stage} was not recorded in this run")
    s = df[enter].to_numpy(np.int64)
    e = df[leave].to_numpy(np.int64)
    entered = s != 0
    both = entered & (e != 0)
    negative = both & (e < s)
    kept = both & ~negative
    return s, e, kept, int(np.count_nonzero(entered & (e == 0))), int(np.count_nonzero(negative))


def occupancy(df, queue):
    """Exact occupancy of queue ("input": t1 <= t < t2, "output": t3 <= t < t4,
    also "backlog", "qdisc") as a step function."""
    if queue not in QUEUES:
        raise ValueError(f"unknown queue {queue!r}: one of {', '.join(QUEUES)}")
    s, e, kept, n_open, n_negative = interval_mask(df, *QUEUES[queue])
    t, n = step_count(s, e, kept)
    return QueueSeries(t, n, n_open, n_negative)


def step_count(s, e, keep=None):
    """(instants where the count changes, number of intervals [s, e)
    covering each instant onward); keep: a mask of the intervals to count
    (None: all).

    After sorting all entries and exits together, a cumulative sum of +1/-1
    gives the count after every event, and the last event at each instant
    gives the count from that instant on.
    """
    if (len(s) if keep is None else np.count_nonzero(keep)) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int32)
    key, base = sort_tagged(e, s, keep)
    # in place and int32 counts where possible: fresh memory is slow on a VM
    n = np.bitwise_and(key, 1, out=np.empty(len(key), np.int32), casting="unsafe")
    n <<= 1
    n -= 1
    np.cumsum(n, out=n)
    key >>= 1
    keep = np.empty(len(key), bool)  # the last event at each instant
    np.not_equal(key[1:], key[:-1], out=keep[:-1])
    keep[-1] = True
    n = inplace.compact(n, keep)
    change = np.empty(len(n), bool)  # an entry and an exit at one instant change nothing
    change[0] = True
    np.not_equal(n[1:], n[:-1], out=change[1:])
    keep[keep] = change  # one pass over the instants kept, not one per step
    key = inplace.compact(key, keep)
    key += base
    return key, inplace.compact(n, change)


def sort_tagged(a, b, keep=None):
    """a and b (of them the elements keep selects, None: all) sorted together
    as one int64 array of keys (t - base) << 1 | tag, tag 0 for a and 1 for
    b, so at equal instants a comes first; returns (keys, base).

    One sort of int64 beats both argsort and searchsorted here; the stable
    sort (timsort) is the fast one because records come nearly in time
    order. The offset from the earliest instant keeps the arithmetic in int64
    whatever the clock's absolute value.
    """
    where = True if keep is None else keep
    base = min(int(a.min(initial=_MAX, where=where)), int(b.min(initial=_MAX, where=where)))
    top = max(int(a.max(initial=base, where=where)), int(b.max(initial=base, where=where)))
    if top - base >= 1 << 62:
        raise ValueError("timestamps span more than 2**62 ns: not one recording's clock")
    na = len(a) if keep is None else int(np.count_nonzero(keep))
    nb = len(b) if keep is None else na
    key = np.empty(na + nb, np.int64)
    for part, t, tag in ((key[:na], a, 0), (key[na:], b, 1)):
        if keep is not None:  # straight into the keys: no copy of the kept ones
            t = np.compress(keep, t, out=part)
        np.subtract(t, base, out=part)  # in place: fresh memory is slow on a VM
        part <<= 1
        part |= tag
    key.sort(kind="stable")
    return key, base


def time_weighted_hist(series):
    """(n values 0..max, fraction of the observed time spent at each), the
    time from the first change to the last."""
    t, n = series.t_ns, series.n
    if len(t) < 2:
        return np.zeros(0, np.int64), np.zeros(0)
    w = np.zeros(int(n[:-1].max()) + 1)
    # a slice of steps at a time: the durations of every step at once would
    # be hundreds of MB of fresh memory, slow on a VM
    for i in range(0, len(t) - 1, _CHUNK):
        j = min(i + _CHUNK, len(t) - 1)
        w += np.bincount(n[i:j], weights=np.diff(t[i:j + 1]).astype(np.float64),
                         minlength=len(w))
    return np.arange(len(w), dtype=np.int64), w / (t[-1] - t[0])


def paper_estimate(df, queue):
    """The paper's queue-size estimate: for each inter-departure interval
    (Δpr for the input queue, Δo for the output queue), the number of packets
    that entered the queue during it, i.e. in (t_leave(n-1), t_leave(n)].
    Every packet seen at the stage counts; int64, one per interval."""
    if queue not in PAPER_ESTIMATE:
        raise ValueError(f"the paper estimates {' and '.join(PAPER_ESTIMATE)} queues only, "
                         f"not {queue!r}")
    return arrivals_per_departure(*(seen_sorted(df, s) for s in PAPER_ESTIMATE[queue]))


def arrivals_per_departure(enter, leave):
    """paper_estimate from the sorted instants of entry and of leaving
    (interarrival.seen_sorted): an entry at a leave's instant counts in the
    interval that leave ends."""
    if len(leave) < 2:
        return np.zeros(0, np.int64)
    out = np.empty(len(leave) - 1, np.int64)
    # a slice of leaves at a time: not every leave's position at once (fresh
    # memory is slow on a VM); the searches go up with the leaves, and numpy
    # starts each where the last ended
    for i in range(0, len(out), _CHUNK):
        below = np.searchsorted(enter, leave[i:i + _CHUNK + 1], side="right")
        np.subtract(below[1:], below[:-1], out=out[i:i + _CHUNK])
    return out
