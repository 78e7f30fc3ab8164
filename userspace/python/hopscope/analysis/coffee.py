"""Coffee breaks: the router idles while work waits.

A coffee break is a maximal interval during which a packet is waiting in the
input queue (arrival <= t < t2) while no packet is being processed
(t2 <= t < t3), the output queue is empty (t3 <= t < t4) and the output link
is idle (t4 plus the frame's time on the wire, when a link rate is given).
Processing and output of one packet are back to back, so "downstream busy" is
the union of [t2, leave) over packets; breaks are the parts of its gaps where
some packet waits. Within a gap no packet leaves the input queue (that would
start a downstream interval), so the queue only fills: the break runs from
the earliest arrival still waiting at the gap's end (or the gap's start, if
later) to the gap's end, the t2 of the packet that ends it.

The result never invents a break:
- a packet seen at t2 whose exit is not known (dropped, still inside, stages
  out of order) is taken as busy until the next packet reaches t2;
- a packet that arrived but never reached t2 is not taken as waiting;
- the gap before the first t2 is not a break (the router's earlier work was
  not recorded).
Those packets are counted in the result's attrs.

Interoccurrence is counted as the paper does (Fig. 7c): the number of
packets that left the input queue (reached t2) from the end of one break to
the start of the next; the paper saw a new break about every 390 packets.
"""
import numpy as np
import pandas as pd

from .busy import merge, wire_ns

# The least minimum duration: the paper's time resolution (it could not see
# anything shorter). analyse() raises it to the run's idle floor (below).
DEFAULT_MIN_NS = 1000
IDLE_GAP_NS = 50_000     # no packet in the router for this long: it is idle
IDLE_QUANTILE = 0.999
IDLE_MIN_PACKETS = 100
COLUMNS = ("start_ns", "end_ns", "duration_ns", "packets_since_previous")
_NEVER = np.iinfo(np.int64).max  # arrival of a packet not taken as waiting


def coffee_breaks(df, min_duration_ns=DEFAULT_MIN_NS, arrival="t1", link_bps=None):
    """DataFrame(start_ns, end_ns, duration_ns, packets_since_previous), one
    row per break of at least min_duration_ns, in time order; the first row's
    packets_since_previous counts from the start of the recording.

    arrival: the stage at which a packet joins the input queue ("t0" puts the
    backlog in it when t0 was recorded). link_bps: the output link's rate, to
    keep it busy while a frame is on the wire; None for veth or unknown.
    attrs: min_duration_ns; shorter (breaks left out as too short); open
    (packets seen at t2 with no known exit, taken as busy); negative (stages
    out of order); not_waiting (arrived, never reached t2); missing_stages
    (stages no packet was seen at: then nothing can be found).
    """
    if min_duration_ns < 0:
        raise ValueError(f"min_duration_ns must be >= 0, not {min_duration_ns}")
    stages = (arrival, "t2", "t3", "t4")
    for stage in stages:
        if stage not in df.columns:
            raise ValueError(f"stage {stage} was not recorded in this run")
    t = {s: df[s].to_numpy(np.int64) for s in stages}
    attrs = dict(min_duration_ns=int(min_duration_ns), shorter=0, open=0, negative=0,
                 not_waiting=int(np.count_nonzero((t[arrival] != 0) & (t["t2"] == 0))),
                 missing_stages=[s for s in stages if not t[s].any()])
    if attrs["missing_stages"]:  # e.g. no t4: the output's state is unknown
        return _table([], [], [], attrs)

    # packets seen at t2 in t2 order; each column gathered once (memory is
    # the cost here: fresh pages are slow on a VM)
    rows = np.flatnonzero(t["t2"])
    rows = rows[np.argsort(t["t2"][rows], kind="stable")]
    s, t3, leave, waiting_since = (t[x].take(rows) for x in ("t2", "t3", "t4", arrival))
    closed = (t3 != 0) & (leave != 0) & (s <= t3) & (t3 <= leave)
    wrong_order = (((t3 != 0) & (t3 < s)) | ((leave != 0) & (t3 != 0) & (leave < t3))
                   | (waiting_since > s))
    attrs["negative"] = int(np.count_nonzero(wrong_order))
    attrs["open"] = int(np.count_nonzero(~closed))
    if link_bps is not None:  # the frame is on the wire after t4
        leave[closed] += wire_ns(df["ip_len"].to_numpy().take(rows[closed]), link_bps)
    # unknown exit: busy until the next packet reaches t2 (the last one: at its t2)
    nxt = np.searchsorted(s, s[~closed], side="right")
    leave[~closed] = s[np.minimum(nxt, len(s) - 1)]
    waiting_since[(waiting_since == 0) | (waiting_since > s)] = _NEVER

    first, reach = merge(s, leave)
    k = first[1:]                      # packet ending each gap
    gap_start, gap_end = reach[:-1], s[k]
    # earliest arrival among the packets reaching t2 at or after each gap's end
    backwards = waiting_since[::-1]
    np.minimum.accumulate(backwards, out=backwards)
    earliest = waiting_since[k]
    start = np.maximum(gap_start, earliest)
    found = earliest < gap_end
    long_enough = found & (gap_end - start >= min_duration_ns)
    attrs["shorter"] = int(np.count_nonzero(found & ~long_enough))
    k = k[long_enough]
    return _table(start[long_enough], gap_end[long_enough], np.diff(k, prepend=0), attrs)


def interoccurrence(breaks):
    """Packets that left the input queue between consecutive breaks (int64,
    one fewer than the breaks)."""
    return breaks["packets_since_previous"].to_numpy(np.int64)[1:]


def _table(start, end, since, attrs):
    start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
    out = pd.DataFrame(dict(zip(COLUMNS, (start, end, end - start, np.asarray(since, np.int64)))))
    out.attrs.update(attrs)
    return out


def idle_floor_ns(df, quantile=IDLE_QUANTILE):
    """How long a packet that finds the router idle spends between t1 and t2
    anyway (the quantile of d_iq over packets arriving when no packet had been
    in the router for IDLE_GAP_NS): skb building, GRO, the probes themselves.
    Nothing waits there, yet the stage timestamps alone would call it a break,
    so breaks are counted only above it. Measured here: p99.9 1.6 µs on the
    default testbed at 14000 pps, 6.6-7.2 µs on runs recording t0 as well
    (docs/measurements.md: 150-250 ns of each stage gap is the probe). None with fewer
    than IDLE_MIN_PACKETS such packets (a router never idle)."""
    c, idle = found_idle(df, ["t1", "t4", "d_iq"])
    if idle.sum() < IDLE_MIN_PACKETS:
        return None
    return int(np.quantile(c["d_iq"].to_numpy()[idle], quantile))


def found_idle(df, columns=None):
    """The complete packets (those columns, t1 and t4 among them) in t1 order,
    and which of them arrived when no packet had been in the router for
    IDLE_GAP_NS: they found it idle."""
    c = df.loc[(df["status"] == "complete").to_numpy(), columns if columns else slice(None)]
    c = c.sort_values("t1", kind="stable")
    t1, t4 = c["t1"].to_numpy(np.int64), c["t4"].to_numpy(np.int64)
    if not len(c):
        return c, np.zeros(0, bool)
    last_exit = np.maximum.accumulate(t4)
    return c, np.r_[False, t1[1:] > last_exit[:-1] + IDLE_GAP_NS]
