"""Coffee breaks: the router idles while work waits.

The paper (Angrisani et al., IEEE TIM 2006, Sec. III) names so the intervals
"during which the router does not process any packet even though output
queues are empty and output link is not busy", and counts how many packets
leave the input queue between two of them (Sec. IV-D, Fig. 7c).

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

Where a packet joins the input queue (the arrival) is a choice, and every
result says which it used (attrs["arrival"]):
- "t0" (netif_rx): before the input backlog. The paper stamped arrival in
  its input card's driver, before the input queue: this is its placement on
  the veth testbed, and the default when the run recorded t0.
- "t1" (XDP): after the backlog, where the router's CPU takes the packet;
  the default otherwise.

The result never invents a break:
- a packet seen at t2 whose exit is not known (dropped, still inside, stages
  out of order) is taken as busy until the next packet reaches t2;
- a packet that arrived but never reached t2 is not taken as waiting;
- the gap before the first t2 is not a break (the router's earlier work was
  not recorded).
Those packets are counted in the result's attrs.

How long a break must be to count is chosen without looking at the breaks,
and no one length both means "a break" and stays put when the machine's
state moves. Two readings of "the router idles while work waits" are fixed
before looking, and a verdict is given at both (thresholds()):
- the arrival gap (arrival_gap_ns): the mean time between two arrivals, set
  by the traffic, not the machine. The paper cares for breaks because their
  duration "could affect the size of input queues" (Sec. III): a break that
  starts with a packet's arrival and ends within one gap is over before the
  next packet comes, so that packet waits alone. analyse() counts breaks of
  at least this by default (and at least DEFAULT_MIN_NS).
- the idle floor (idle_floor_ns): a packet that finds the router idle still
  takes some time from its arrival to t2 (skb building, the probes, from t0
  a CPU waking up), which the stage timestamps alone would call a break; a
  quantile of those waits, measured on the run. It is the machine's state
  itself: from t0 it is mostly the router's vCPU waking up (median 15 µs on
  the paper testbed), and that wait's tail moves from run to run. At 1400 B
  and 8500 pps two repetitions of one campaign, minutes apart, each with
  about 15000 packets that found the router idle, had p99.9 of 47 and
  248 µs. A quantile counts only where at least IDLE_TAIL_PACKETS idle waits
  lie above it: with fewer it is the longest of a handful of waits.
sweep() shows how the answer moves with every choice, and which thresholds
were fixed before looking (its "judged" column); a claim judged at them
holds only where they agree (analysis/paper_claims.py).

Interoccurrence is counted as the paper does (Fig. 7c): the number of
packets that left the input queue (reached t2) from the end of one break to
the start of the next. The paper's "a new coffee break is very likely to
occur after about 390 packets" is the peak of that histogram, its mode:
interoccurrence_stats() gives it, with the median and the mean beside it.
"""
import numpy as np
import pandas as pd

from ..record.paths import stack_complete
from .busy import merge, wire_ns

# The least minimum duration: the paper's time resolution (it could not see
# anything shorter). analyse() raises it to the run's arrival gap (above).
DEFAULT_MIN_NS = 1000
IDLE_GAP_NS = 50_000     # no packet in the router for this long: it is idle
IDLE_QUANTILE = 0.999
# a quantile of the idle waits is a floor only with this many waits above it
IDLE_TAIL_PACKETS = 10
ARRIVAL_TRIM = 0.01  # of the arrivals, at each end, left out of the arrival gap
# the choices sweep() varies: the shortest break (µs) and the idle floor's quantile
SWEEP_MIN_US = (0.5, 1, 2, 5, 10, 20)
SWEEP_QUANTILES = (0.99, 0.999, 0.9999)
# the mode is looked for in bins this wide: one exact value of a spread-out
# count is as rare as its neighbours, the histogram's peak is not
MODE_BIN_PACKETS = 10
ARRIVALS = {"t0": "netif_rx, before the backlog (the paper's hook)",
            "t1": "XDP, after the backlog"}
COLUMNS = ("start_ns", "end_ns", "duration_ns", "packets_since_previous")
_NEVER = np.iinfo(np.int64).max  # arrival of a packet not taken as waiting


def default_arrival(df):
    """"t0" when the run recorded it (the paper's placement), else "t1"."""
    return "t0" if "t0" in df.columns and bool(df["t0"].to_numpy().any()) else "t1"


def coffee_breaks(df, min_duration_ns=DEFAULT_MIN_NS, arrival=None, link_bps=None):
    """DataFrame(start_ns, end_ns, duration_ns, packets_since_previous), one
    row per break of at least min_duration_ns, in time order; the first row's
    packets_since_previous counts from the start of the recording.

    arrival: the stage at which a packet joins the input queue, "t0" or "t1"
    (None: default_arrival). link_bps: the output link's rate, to keep it
    busy while a frame is on the wire; None for veth or unknown.
    attrs: arrival; min_duration_ns; shorter (breaks left out as too short);
    open (packets seen at t2 with no known exit, taken as busy); negative
    (stages out of order); not_waiting (arrived, never reached t2);
    missing_stages (stages no packet was seen at: then nothing can be found).
    """
    if min_duration_ns < 0:
        raise ValueError(f"min_duration_ns must be >= 0, not {min_duration_ns}")
    arrival = arrival or default_arrival(df)
    stages = (arrival, "t2", "t3", "t4")
    for stage in stages:
        if stage not in df.columns:
            raise ValueError(f"stage {stage} was not recorded in this run")
    t = {s: df[s].to_numpy(np.int64) for s in stages}
    attrs = dict(arrival=arrival, min_duration_ns=0, shorter=0, open=0, negative=0,
                 not_waiting=int(np.count_nonzero((t[arrival] != 0) & (t["t2"] == 0))),
                 missing_stages=[s for s in stages if not t[s].any()])
    if attrs["missing_stages"]:  # e.g. no t4: the output's state is unknown
        return at_least(_table([], [], [], attrs), min_duration_ns)

    # the checks on the columns as they are, in file order: t3 is then never
    # gathered (memory is the cost here: fresh pages are slow on a VM)
    t2, t3, t4, came = (t[x] for x in ("t2", "t3", "t4", arrival))
    seen = t2 != 0
    closed = (t3 != 0) & (t4 != 0) & (t2 <= t3) & (t3 <= t4)
    wrong_order = ((t3 != 0) & (t3 < t2)) | ((t4 != 0) & (t3 != 0) & (t4 < t3)) | (came > t2)
    attrs["negative"] = int(np.count_nonzero(wrong_order & seen))
    attrs["open"] = int(np.count_nonzero(seen & ~closed))
    del wrong_order
    # packets seen at t2 in t2 order; each column gathered once
    rows = np.flatnonzero(seen)
    rows = rows[np.argsort(t2[rows], kind="stable")]
    s, leave, waiting_since, closed = (x.take(rows) for x in (t2, t4, came, closed))
    if link_bps is not None:  # the frame is on the wire after t4
        leave[closed] += wire_ns(df["ip_len"].to_numpy().take(rows[closed]), link_bps)
    del rows  # before merge's and the searches' arrays: fresh memory is slow on a VM
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
    k = k[found]
    return at_least(_table(start[found], gap_end[found], np.diff(k, prepend=0), attrs),
                    min_duration_ns)


def at_least(breaks, min_duration_ns):
    """The breaks of a coffee_breaks() table at least min_duration_ns long,
    their packets_since_previous counted again between those kept (a table
    found with a smaller minimum gives the same as finding them anew)."""
    if min_duration_ns < breaks.attrs["min_duration_ns"]:
        raise ValueError(f"these breaks are all at least {breaks.attrs['min_duration_ns']} ns;"
                         f" cannot lower the minimum to {min_duration_ns}")
    keep = breaks["duration_ns"].to_numpy() >= min_duration_ns
    ends = np.cumsum(breaks["packets_since_previous"].to_numpy(np.int64))[keep]
    attrs = dict(breaks.attrs, min_duration_ns=int(min_duration_ns),
                 shorter=breaks.attrs["shorter"] + int(np.count_nonzero(~keep)))
    return _table(breaks["start_ns"].to_numpy()[keep], breaks["end_ns"].to_numpy()[keep],
                  np.diff(ends, prepend=0), attrs)


def interoccurrence(breaks):
    """Packets that left the input queue between consecutive breaks (int64,
    one fewer than the breaks)."""
    return breaks["packets_since_previous"].to_numpy(np.int64)[1:]


def interoccurrence_stats(gaps, bin_packets=MODE_BIN_PACKETS):
    """{"count", "mode", "median", "mean"} of interoccurrence() values; NaN
    (count 0) with none. mode is the paper's statistic ("very likely after
    about N packets"): the most frequent value within the most populated bin
    of bin_packets (the lowest such bin and value on a tie)."""
    gaps = np.asarray(gaps, np.int64)
    if not len(gaps):
        return {"count": 0, "mode": np.nan, "median": np.nan, "mean": np.nan}
    bins, per_bin = np.unique(gaps // bin_packets, return_counts=True)
    peak = bins[np.argmax(per_bin)]
    values, n = np.unique(gaps[gaps // bin_packets == peak], return_counts=True)
    return {"count": int(len(gaps)), "mode": int(values[np.argmax(n)]),
            "median": float(np.median(gaps)), "mean": float(gaps.mean())}


def _table(start, end, since, attrs):
    start, end = np.asarray(start, np.int64), np.asarray(end, np.int64)
    # copy=False: the columns stay the arrays made here, not stacked into one
    # block (a copy of millions of rows with every break however short)
    out = pd.DataFrame(dict(zip(COLUMNS, (start, end, end - start, np.asarray(since, np.int64)))),
                       copy=False)
    out.attrs.update(attrs)
    return out


def idle_waits(df, arrival=None):
    """t2 − arrival (ns, float) of the complete packets that found the router
    idle (idle_rows): what a packet waits with nothing in its way."""
    arrival = arrival or default_arrival(df)
    rows = idle_rows(df, arrival)
    return (df["t2"].to_numpy(np.int64)[rows] - df[arrival].to_numpy(np.int64)[rows]).astype(float)


def idle_floor_ns(df, quantile=IDLE_QUANTILE, arrival=None):
    """How long a packet that finds the router idle waits from its arrival
    to t2 anyway (floor_of idle_waits): skb building, GRO, the probes
    themselves, and from t0 the router's CPU waking up. Measured here: p99.9
    of t2 - t1 1.6 µs on the default testbed at 14000 pps
    (evaluation/measurements.md: 150-250 ns of each stage gap is the probe)."""
    return floor_of(idle_waits(df, arrival), quantile)


def floor_of(waits, quantile):
    """The quantile of idle waits (ns, int); None unless IDLE_TAIL_PACKETS of
    them lie above it (a router seldom idle: the quantile would be the
    longest of a handful of waits)."""
    if round(len(waits) * (1 - quantile), 6) < IDLE_TAIL_PACKETS:
        return None
    return int(np.quantile(waits, quantile))


def arrival_gap_ns(df, arrival=None):
    """The mean time between two arrivals (ns, int), over the middle arrivals
    (ARRIVAL_TRIM of them left out at each end: a generator's stray packet a
    second before or after its traffic would stretch the span); None with
    fewer than two."""
    t = df[arrival or default_arrival(df)].to_numpy(np.int64)
    t = t[t != 0]
    k = int(len(t) * ARRIVAL_TRIM)
    if len(t) - 2 * k < 2:
        return None
    # two order statistics: partitioned in place, not a sorted copy
    t.partition((k, len(t) - 1 - k))
    return int((t[-1 - k] - t[k]) // (len(t) - 1 - 2 * k))


def default_min_ns(df, arrival=None):
    """analyse()'s shortest break: the arrival gap, at least DEFAULT_MIN_NS."""
    return max(DEFAULT_MIN_NS, arrival_gap_ns(df, arrival) or 0)


def idle_rows(df, arrival=None):
    """Positions, in arrival order, of the complete packets that arrived
    (at arrival, default_arrival by default) when no packet had been in the
    router for IDLE_GAP_NS: they found it idle. Positions, not a copy of the
    frame's rows: its columns are gathered by those who need them."""
    t = df[arrival or default_arrival(df)].to_numpy(np.int64)
    rows = np.flatnonzero(stack_complete(df) & (t != 0))
    rows = rows[np.argsort(t[rows], kind="stable")]
    return rows[_idle(t[rows], df["t4"].to_numpy(np.int64)[rows])]


def _idle(t, t4):
    """Which packets, arrived at t (ascending) and gone at t4, arrived more
    than IDLE_GAP_NS after every earlier one had gone."""
    if not len(t):
        return np.zeros(0, bool)
    last_exit = np.maximum.accumulate(t4)
    return np.r_[False, t[1:] > last_exit[:-1] + IDLE_GAP_NS]


def recorded_arrivals(df):
    """The arrivals this run has: "t0" (when recorded) and "t1"."""
    return [a for a in ARRIVALS if a in df.columns and bool(df[a].to_numpy().any())] or ["t1"]


def every_break(df, arrivals=None, link_bps=None, known=None):
    """{arrival: (every break however short, idle_waits, arrival_gap_ns)},
    what sweep() and a report's pages pick their thresholds from (at_least).
    known: {arrival: every break however short} already found (an Analysis's
    coffee_every), not found again."""
    known = known or {}
    return {a: (known[a] if a in known else coffee_breaks(df, 0, a, link_bps),
                idle_waits(df, a), arrival_gap_ns(df, a))
            for a in arrivals or recorded_arrivals(df)}


def thresholds(waits, gap_ns, min_us=SWEEP_MIN_US, quantiles=SWEEP_QUANTILES):
    """(rule, quantile, floor_ns, min_ns, judged) of every threshold sweep()
    tries: fixed ones (min_us), the arrival gap, the idle floor at each
    quantile (NaN floor where floor_of has none; DEFAULT_MIN_NS then). judged:
    fixed before looking at the interoccurrence (the module's docstring): the
    arrival gap, and each idle floor the run's idle packets support."""
    out = [("fixed", np.nan, np.nan, round(us * 1000), False) for us in min_us]
    if gap_ns is not None:
        out.append(("arrival gap", np.nan, np.nan, max(DEFAULT_MIN_NS, gap_ns), True))
    for q in quantiles:
        floor = floor_of(waits, q)
        out.append(("idle floor", q, np.nan if floor is None else floor,
                    max(DEFAULT_MIN_NS, floor or 0), floor is not None))
    return out


def sweep(df, min_us=SWEEP_MIN_US, quantiles=SWEEP_QUANTILES, found=None):
    """How the breaks depend on the choices behind them: one row per
    arrival and threshold (thresholds()). found: every_break(df), by default
    of every recorded arrival.
    Columns: arrival, rule, quantile, floor_ns (the idle floor itself, NaN
    when unknown), min_ns, judged, breaks, shorter, total_ns (their summed
    duration), packets (that reached t2), and the interoccurrence's count,
    mode, median and mean (interoccurrence_stats)."""
    packets = int(np.count_nonzero(df["t2"].to_numpy()))
    rows = []
    for arrival, (every, waits, gap) in (found or every_break(df)).items():
        # at_least's counts without a table per threshold
        duration = every["duration_ns"].to_numpy()
        ends = np.cumsum(every["packets_since_previous"].to_numpy(np.int64))
        for rule, q, floor, least, judged in thresholds(waits, gap, min_us, quantiles):
            keep = duration >= least
            n = int(np.count_nonzero(keep))
            rows.append({"arrival": arrival, "rule": rule, "quantile": q, "floor_ns": floor,
                         "min_ns": least, "judged": judged, "breaks": n,
                         "shorter": every.attrs["shorter"] + len(keep) - n,
                         "total_ns": int(duration[keep].sum()), "packets": packets,
                         **interoccurrence_stats(np.diff(ends[keep]))})
    return pd.DataFrame(rows)
