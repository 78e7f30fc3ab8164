"""What the paper's claims read of each run, and the campaigns' conditions.

A run is reduced once to its facts (the records are not kept): per stage
and sender the histogram at BIN_NS bins and a few statistics, the queues'
time-weighted occupancy, the coffee breaks at the thresholds fixed before
looking, the paper's queue estimate against the exact occupancy, and what
the generators sent and the receiver got.

The arrival instant is t0 (netif_rx: the packet entered the input backlog,
where the paper's input hook stood) when the run recorded it, else t1 (XDP):
the input queue, the single-hop delay and the coffee breaks start there. On
a veth testbed t0 is stamped on the sender's CPU, so a d_iq from t0 holds
the router CPU's wake-up; d_iq from t1 (after the backlog, without it) is
kept beside it.
"""
from dataclasses import dataclass, field

import numpy as np

from .coffee import (SWEEP_QUANTILES, at_least, default_arrival, every_break, interoccurrence,
                     thresholds)
from .hist import relative_histogram
from .interarrival import seen_sorted
from .queues import (QueueSeries, arrivals_per_departure, stage_interval, step_count,
                     time_weighted_hist)
from .stats import grouped_delays, quantile_sorted

# Modes and peaks at 50 ns: delays here are a few hundred ns, so the paper's
# 1 µs bins would put all of d_p in one bin; 50 ns is a few times the probes'
# own spread (±10-60 ns, evaluation/accuracy.md), so a bin is not the probes' noise.
BIN_NS = 50
DELAYS = ("d_iq", "d_p", "d_oq")
# d_iq from t1, after the backlog: without the wake-up a t0 on the sender's CPU carries
D_IQ_T1 = "d_iq from t1"
QUEUES = ("input", "output")
ALL = "all"  # the group of every packet of a run, beside each TOS
SOLO_SETS = ("Type1", "Type2", "Type3")
COMPETITIVE_SETS = ("Table I", "Table II", "Table III")
ALL_SETS = SOLO_SETS + COMPETITIVE_SETS


# ---- one run ----

@dataclass
class DelayFacts:
    """One stage's delays of one group of one run."""
    first_bin: int         # counts[i] is the bin [(first_bin + i) * BIN_NS, ... + BIN_NS)
    counts: np.ndarray
    overflow: int          # delays beyond the histogram's bins
    mean: float
    p10: float
    p50: float
    p90: float
    least: float

    @property
    def total(self):
        return int(self.counts.sum()) + self.overflow

    @property
    def freq(self):
        return self.counts / max(self.counts.sum(), 1)

    @property
    def mode_ns(self):
        """The centre of the fullest bin; NaN without delays."""
        if not self.counts.sum():
            return np.nan
        return (self.first_bin + int(np.argmax(self.counts)) + 0.5) * BIN_NS

    @property
    def modal_share(self):
        """Of all the delays, those in the fullest bin."""
        return self.counts.max() / self.total if self.total else np.nan

    @property
    def beyond_share(self):
        """Of all the delays, those beyond the histogram's range."""
        return self.overflow / self.total if self.total else np.nan

    @property
    def spread(self):
        """p90 - p10: the central 80 %, which a few outliers do not move."""
        return self.p90 - self.p10


@dataclass
class Estimate:
    """The paper's queue estimate (eqs. 7-8: arrivals per inter-departure)
    against the exact occupancy at each departure, the departing packet
    counted, over the departures that left a queue behind (exact ≥ 2)."""
    queued: int             # such departures
    mean_abs_error: float   # packets; NaN without any


@dataclass
class RunFacts:
    """What the claims need of one run, computed once (the records are not kept)."""
    arrival: str                 # "t0" or "t1"
    delays: dict                 # (ALL or TOS, stage) -> DelayFacts
    queues: dict                 # "input"/"output" -> (sizes, fraction of the time at each)
    # (threshold, shortest break ns, interoccurrence) at each threshold fixed
    # before looking (coffee.thresholds' judged ones), the arrival gap first
    coffee: list
    break_ns: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))  # every break
    span_ns: int = 0             # first to last arrival
    packets_t2: int = 0          # packets that reached t2
    estimate: dict = field(default_factory=dict)   # "input"/"output" -> Estimate
    d_p_noise_ns: float = np.nan  # the probes' own spread of d_p (p90 - p10 equivalent)
    sent: int = None             # the generators' count, None where unknown
    received: int = None         # the receiver's
    # TOS -> share of its packets that waited behind another TOS's packet
    # in the input or the output queue
    behind_other: dict = field(default_factory=dict)

    def delay(self, group, stage):
        """DelayFacts of a group (ALL or a TOS); empty for a TOS the run never saw."""
        return self.delays.get((group, stage)) or delay_facts(np.zeros(0))

    def queue_quantile(self, queue, q, busy=False):
        """The q quantile of the time-weighted occupancy; busy: of the time
        the queue held a packet or more (NaN if it never did)."""
        sizes, frac = self.queues[queue]
        if busy:
            sizes, frac = sizes[1:], frac[1:]
            frac = frac / frac.sum() if frac.sum() > 0 else frac[:0]
        if not len(frac):
            return np.nan
        return float(sizes[min(np.searchsorted(np.cumsum(frac), q), len(sizes) - 1)])

    def busy_share(self, queue):
        _, frac = self.queues[queue]
        return float(frac[1:].sum()) if len(frac) else np.nan

    @property
    def lost_share(self):
        """Of the packets sent, those the receiver did not get; NaN where unknown."""
        if self.sent is None or self.received is None or not self.sent:
            return np.nan
        return (self.sent - self.received) / self.sent

    def breaks_per_s(self, least_ns):
        return (np.count_nonzero(self.break_ns >= least_ns) / (self.span_ns / 1e9)
                if self.span_ns > 0 else np.nan)

    @property
    def interoccurrence(self):
        """Packets between coffee breaks of at least the arrival gap (Fig. 7c)."""
        return self.coffee[0][2] if self.coffee else np.zeros(0, np.int64)


def run_facts(df, counts=None):
    """RunFacts of one loaded run; counts: its campaign metadata's counts
    (sent, received), where known."""
    arrival = default_arrival(df)
    stages = DELAYS + ("transit",)
    if arrival == "t0":  # the input queue and the transit start at the backlog
        df = df.assign(**{D_IQ_T1: df["d_iq"], "d_iq": df["d_rxq"] + df["d_iq"],
                          "transit": df["d_rxq"] + df["transit"]})
        stages += (D_IQ_T1,)
    delays = {}
    for by in (None, "tos"):
        for d in grouped_delays(df, by, stages):
            delays[(int(d.key[0]) if by else ALL, d.stage)] = delay_facts(d.values)
    # each queue's packets, entry and exit instants, found once for every use
    spans = {name: stage_interval(df, a, b)[:3]
             for name, (a, b) in (("input", (arrival, "t2")), ("output", ("t3", "t4")))}
    queues = {name: time_weighted_hist(QueueSeries(*step_count(s, e)))
              for name, (s, e, _) in spans.items()}
    every, waits, gap = every_break(df, [arrival])[arrival]
    coffee = [("arrival gap" if rule == "arrival gap" else f"idle floor p{q * 100:g}", least,
               interoccurrence(at_least(every, least)))
              for rule, q, _, least, judged in thresholds(waits, gap, (), SWEEP_QUANTILES)
              if judged]
    arrived = seen_sorted(df, arrival)
    floor = (df.attrs.get("probe_floor") or {}).get("d_p") or {}
    counts = counts or {}
    return RunFacts(arrival, delays, queues, coffee,
                    every["duration_ns"].to_numpy(np.int64),
                    int(arrived[-1] - arrived[0]) if len(arrived) else 0,
                    int(np.count_nonzero(df["t2"].to_numpy())),
                    {name: estimate(s, e) for name, (s, e, _) in spans.items()},
                    # a normal spread's p90 - p10 is 2.56 of its deviations
                    2.56 * floor["spread_ns"] if floor.get("spread_ns") is not None else np.nan,
                    counts.get("sent"), counts.get("received"),
                    behind_other(df["tos"].to_numpy(), spans.values()))


def delay_facts(values):
    """DelayFacts of sorted valid delays (stats.Delays.values)."""
    h = relative_histogram(values, BIN_NS)
    binned = h.count - h.overflow
    counts = np.rint(h.freq * binned).astype(np.int64)
    first = int(round(h.edges_ns[0] / BIN_NS)) if len(h.edges_ns) else 0
    if not len(values):
        return DelayFacts(first, counts, 0, *(np.nan,) * 5)
    return DelayFacts(first, counts, h.overflow, float(np.mean(values)),
                      quantile_sorted(values, 0.1), quantile_sorted(values, 0.5),
                      quantile_sorted(values, 0.9), float(values[0]))


def estimate(enter, leave):
    """Estimate of a queue whose packets entered and left at these instants
    (stage_interval: the packets seen at both ends)."""
    s, e = np.sort(enter), np.sort(leave)
    if len(e) < 2:
        return Estimate(0, np.nan)
    guess = arrivals_per_departure(s, e)
    # at departure k: entered by then, less those gone before it
    exact = (np.searchsorted(s, e, side="right") - np.searchsorted(e, e, side="left"))[1:]
    queued = exact >= 2
    if not queued.any():
        return Estimate(0, np.nan)
    return Estimate(int(queued.sum()), float(np.abs(guess[queued] - exact[queued]).mean()))


def behind_other(tos, spans):
    """{TOS: share of its packets that found a packet of another TOS in one
    of the queues when they entered it}: one that entered before and left
    after. tos: each record's; spans: each queue's (entry, exit, kept) of
    stage_interval. Packets seen at neither end of a queue are not in it."""
    kinds = np.unique(tos)
    hit = np.zeros(len(tos), bool)
    for s, e, kept in spans:
        t = tos[kept]
        rows = np.flatnonzero(kept)
        for k in kinds:
            mine, other = t == k, t != k
            order = np.argsort(s[other], kind="stable")
            entered = s[other][order]
            # of the others that entered before it, the latest to leave
            left = np.maximum.accumulate(e[other][order]) if len(order) else e[:0]
            j = np.searchsorted(entered, s[mine], side="left") - 1
            found = j >= 0
            found[found] = left[j[found]] > s[mine][found]
            hit[rows[mine]] |= found
    return {int(k): float(hit[tos == k].mean()) for k in kinds}


def peaks(freq, min_freq, prominence):
    """Indices of a histogram's peaks: bins holding at least min_freq whose
    prominence (height above the higher of the lowest bins between them and a
    higher bin on either side, or the histogram's end) is at least
    `prominence` of their height. Of a flat top, its first bin."""
    f = np.concatenate([[0.0], np.asarray(freq, np.float64), [0.0]])
    top = np.flatnonzero((f[1:-1] >= min_freq) & (f[1:-1] > f[:-2]) & (f[1:-1] >= f[2:])) + 1
    found = []
    for i in top:
        higher = np.flatnonzero(f > f[i])
        left, right = higher[higher < i], higher[higher > i]
        valley_left = f[(left[-1] if len(left) else 0):i].min()
        valley_right = f[i + 1:(right[0] + 1 if len(right) else len(f))].min()
        if f[i] - max(valley_left, valley_right) >= prominence * f[i]:
            found.append(i - 1)
    return found


# ---- the campaigns' conditions ----

@dataclass(frozen=True)
class Traffic:
    """One sender's traffic, as a campaign's condition describes it."""
    tos: int
    size: tuple        # the size's settings, sorted: (("dist", "constant"), ("value", 550))
    gaps: str          # constant | exponential | pareto
    rate: float
    cpu: object = "sender"   # where its generator ran: a testbed role or a CPU number
    generator: str = ""
    asked: float = None      # packets: its count, or rate x duration; None where unknown

    @classmethod
    def of(cls, sender):
        """From a sender of a campaign run's condition (metadata.json)."""
        rate, count, duration = float(sender["rate"]), sender.get("count"), sender.get("duration")
        return cls(int(sender["tos"]), tuple(sorted(sender["size"].items())),
                   sender["gaps"]["dist"], rate, sender.get("cpu", "sender"),
                   sender.get("generator", ""),
                   float(count) if count else rate * duration if duration else None)

    @property
    def size_dist(self):
        return dict(self.size)["dist"]

    @property
    def mean_size(self):
        """Mean payload bytes; None for a distribution this does not know."""
        s = dict(self.size)
        return {"constant": lambda: s["value"], "normal": lambda: s["mean"],
                "uniform": lambda: (s["min"] + s["max"]) / 2,
                "pareto": lambda: s["shape"] * s["scale"] / (s["shape"] - 1)
                if s["shape"] > 1 else None}.get(s["dist"], lambda: None)()

    @property
    def type(self):
        """The paper's Type1 (constant size and rate), Type2 (variable size),
        Type3 (variable gaps), or None (both vary)."""
        constant_size, constant_gaps = self.size_dist == "constant", self.gaps == "constant"
        return ("Type1" if constant_size and constant_gaps else "Type2" if constant_gaps
                else "Type3" if constant_size else None)

    def describe(self):
        s = dict(self.size)
        size = f"{s['value']} B" if s["dist"] == "constant" else f"{s['dist']} size"
        return f"{size}, {self.gaps} gaps, {self.rate:g} pps"


@dataclass
class Condition:
    """One condition of a campaign and its finished runs, in repetition order."""
    name: str
    senders: list      # Traffic, sender1 first
    runs: list = field(default_factory=list)   # RunFacts

    @property
    def set(self):
        """Type1..3 alone (sender1 only), Table I..III (sender2 of Type1..3
        beside sender1's Type1), else None (also a control: a generator on
        the router's CPU)."""
        # a generator on the router's CPU (the paper files' control
        # conditions) is not the paper's set-up: its twin is the condition
        if any(s.cpu == "router" for s in self.senders):
            return None
        types = [s.type for s in self.senders]
        if len(types) == 1 and types[0]:
            return types[0]
        if len(types) == 2 and types[0] == "Type1" and types[1]:
            return COMPETITIVE_SETS[SOLO_SETS.index(types[1])]
        return None


def sent_of_asked(c):
    """Each run's packets sent over those its senders were asked for; NaN
    where either is unknown."""
    asked = sum(s.asked for s in c.senders) if all(s.asked for s in c.senders) else None
    return [r.sent / asked if asked and r.sent is not None else np.nan for r in c.runs]


def of_set(conditions, *sets):
    return [c for c in conditions if c.set in sets]


def solo_like(conditions, traffic):
    """The solo condition with the same size and gaps as traffic, from the
    same generator first (generators differ in bursts), then the nearest
    rate; None if there is none."""
    same = [c for c in of_set(conditions, *SOLO_SETS)
            if (c.senders[0].size, c.senders[0].gaps) == (traffic.size, traffic.gaps)]
    return min(same, key=lambda c: (c.senders[0].generator != traffic.generator,
                                    abs(c.senders[0].rate - traffic.rate)), default=None)


def type1_nearest_size(conditions, traffic):
    """The Type1 condition whose size is nearest traffic's mean size (the
    paper sets its Gaussian and Pareto sizes, mean 600 B, beside 550 B),
    from the same generator first."""
    mean = traffic.mean_size
    if mean is None:
        return None
    return min(of_set(conditions, "Type1"),
               key=lambda c: (c.senders[0].generator != traffic.generator,
                              abs(c.senders[0].mean_size - mean),
                              abs(c.senders[0].rate - traffic.rate)), default=None)


def arrivals(conditions):
    """Which arrival instant the runs used: t0, t1, or how many of each."""
    seen = [r.arrival for c in conditions for r in c.runs]
    kinds = sorted(set(seen))
    if len(kinds) == 1:
        return kinds[0]
    return ", ".join(f"{k} ({seen.count(k)} runs)" for k in kinds) or "no runs"
