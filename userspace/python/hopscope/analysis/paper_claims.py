"""The claims of the paper's Sec. IV-D and IV-E, checked on campaign results.

Angrisani et al. (IEEE TIM 2006) drew their conclusions from histograms of a
2.4 GHz Celeron of 2006; absolute delays on another machine cannot match
them. So each claim is checked on the shape of the results: modes and peaks
at BIN_NS bins, ratios of means and spreads, queue sizes in packets, orders
across repetitions. Every tolerance is fixed below, before any campaign was
looked at, with the reason for it.

A claim is judged over items (a condition, a sender, a stage). An item's
statistic is computed on every repetition, or every pair of repetitions when
two conditions are compared; the item holds when all of them pass the
tolerance, does not hold when none does, and cannot tell when they straddle
it (the spread across repetitions overlaps the tolerance) or when a condition
has fewer than MIN_REPETITIONS. A claim about every operative condition
holds when all its items hold and does not hold when any does not; a claim
about what happens on average holds when more than half its items hold and
does not hold when at least half do not. A claim whose conditions the
campaigns lack cannot tell.

The arrival instant is t0 (netif_rx: the packet entered the input backlog,
where the paper's input hook stood) when the run recorded it, else t1 (XDP):
the input queue, the single-hop delay and the coffee breaks start there.
"""
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from .coffee import (SWEEP_QUANTILES, at_least, default_arrival, every_break, interoccurrence,
                     interoccurrence_stats, thresholds)
from .hist import relative_histogram
from .queues import QueueSeries, stage_interval, step_count, time_weighted_hist
from .stats import grouped_delays, quantile_sorted

HOLDS, FAILS, UNKNOWN = "holds", "does not hold", "cannot tell"

# Modes and peaks at 50 ns: delays here are a few hundred ns, so the paper's
# 1 µs bins would put all of d_p in one bin; 50 ns is a few times the probes'
# own spread (±10-60 ns, evaluation/accuracy.md), so a bin is not the probes' noise.
BIN_NS = 50
# one repetition has no spread to hold against a tolerance
MIN_REPETITIONS = 2
# a peak: a bin holding at least 1 % of the packets (at ~150000 packets a run,
# 1500 of them, 40 times the counting noise)...
PEAK_MIN_FREQ = 0.01
# ...standing above the valley towards any higher bin by half its height: a
# separate peak, as the paper's histograms show, not a shoulder of another
PEAK_PROMINENCE = 0.5
SEVERAL_PEAKS = 2
# "limited queuing": 99 % of the time at most 10 packets wait, where the
# queues hold 1000 (netdev_max_backlog, the TBF's limit)
QUEUE_QUANTILE = 0.99
QUEUE_LIMITED = 10
# "about 390 packets": the mode of the interoccurrence within a factor of 2 of
# it, since another kernel's scheduler sets another rhythm, not a faster one
COFFEE_PAPER = 390
COFFEE_RANGE = (COFFEE_PAPER / 2, COFFEE_PAPER * 2)
# two modes are "close": within two bins (the least difference 50 ns bins
# show) or 10 % of the reference mode, where modes are long queue waits
MODE_CLOSE_NS = 2 * BIN_NS
MODE_CLOSE_REL = 0.10
# "significant differences" between means: 10 % or more
MEANS_DIFFER = 0.10
# "greater", "increased": by 5 % or more; less is not called a rise
RISE = 0.05

DELAYS = ("d_iq", "d_p", "d_oq")
QUEUES = ("input", "output")
SOLO_SETS = ("Type1", "Type2", "Type3")
COMPETITIVE_SETS = ("Table I", "Table II", "Table III")
ALL_SETS = SOLO_SETS + COMPETITIVE_SETS
ALL = "all"  # the group of every packet of a run, beside each TOS


# ---- one run ----

@dataclass
class DelayFacts:
    """One stage's delays of one group of one run."""
    first_bin: int         # counts[i] is the bin [(first_bin + i) * BIN_NS, ... + BIN_NS)
    counts: np.ndarray
    overflow: int          # delays beyond the histogram's bins
    mean: float
    p10: float
    p90: float

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
    def spread(self):
        """p90 - p10: the central 80 %, which a few outliers do not move."""
        return self.p90 - self.p10


@dataclass
class RunFacts:
    """What the claims need of one run, computed once (the records are not kept)."""
    arrival: str                 # "t0" or "t1"
    delays: dict                 # (ALL or TOS, stage) -> DelayFacts
    queues: dict                 # "input"/"output" -> (sizes, fraction of the time at each)
    # (threshold, shortest break ns, interoccurrence) at each threshold fixed
    # before looking (coffee.thresholds' judged ones), the arrival gap first
    coffee: list

    def delay(self, group, stage):
        """DelayFacts of a group (ALL or a TOS); empty for a TOS the run never saw."""
        return self.delays.get((group, stage)) or _delay_facts(np.zeros(0))

    def queue_quantile(self, queue, q=QUEUE_QUANTILE):
        sizes, frac = self.queues[queue]
        if not len(sizes):
            return np.nan
        return float(sizes[min(np.searchsorted(np.cumsum(frac), q), len(sizes) - 1)])

    @property
    def interoccurrence(self):
        """Packets between coffee breaks of at least the arrival gap (Fig. 7c)."""
        return self.coffee[0][2] if self.coffee else np.zeros(0, np.int64)


def run_facts(df):
    """RunFacts of one loaded run."""
    arrival = default_arrival(df)
    if arrival == "t0":  # the input queue and the transit start at the backlog
        df = df.assign(d_iq=df["d_rxq"] + df["d_iq"], transit=df["d_rxq"] + df["transit"])
    delays = {}
    for by in (None, "tos"):
        for d in grouped_delays(df, by, DELAYS + ("transit",)):
            delays[(int(d.key[0]) if by else ALL, d.stage)] = _delay_facts(d.values)
    queues = {name: time_weighted_hist(QueueSeries(*step_count(*stage_interval(df, a, b)[:2])))
              for name, (a, b) in (("input", (arrival, "t2")), ("output", ("t3", "t4")))}
    every, waits, gap = every_break(df, [arrival])[arrival]
    coffee = [("arrival gap" if rule == "arrival gap" else f"idle floor p{q * 100:g}", least,
               interoccurrence(at_least(every, least)))
              for rule, q, _, least, judged in thresholds(waits, gap, (), SWEEP_QUANTILES)
              if judged]
    return RunFacts(arrival, delays, queues, coffee)


def _delay_facts(values):
    """DelayFacts of sorted valid delays (stats.Delays.values)."""
    h = relative_histogram(values, BIN_NS)
    binned = h.count - h.overflow
    counts = np.rint(h.freq * binned).astype(np.int64)
    first = int(round(h.edges_ns[0] / BIN_NS)) if len(h.edges_ns) else 0
    if not len(values):
        return DelayFacts(first, counts, 0, *(np.nan,) * 3)
    return DelayFacts(first, counts, h.overflow, float(np.mean(values)),
                      quantile_sorted(values, 0.1), quantile_sorted(values, 0.9))


def peaks(freq, min_freq=PEAK_MIN_FREQ, prominence=PEAK_PROMINENCE):
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

    @classmethod
    def of(cls, sender):
        """From a sender of a campaign run's condition (metadata.json)."""
        return cls(int(sender["tos"]), tuple(sorted(sender["size"].items())),
                   sender["gaps"]["dist"], float(sender["rate"]), sender.get("cpu", "sender"))

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


def of_set(conditions, *sets):
    return [c for c in conditions if c.set in sets]


def solo_like(conditions, traffic):
    """The solo condition with the same size and gaps as traffic, the nearest
    rate first; None if there is none."""
    same = [c for c in of_set(conditions, *SOLO_SETS)
            if (c.senders[0].size, c.senders[0].gaps) == (traffic.size, traffic.gaps)]
    return min(same, key=lambda c: abs(c.senders[0].rate - traffic.rate), default=None)


def type1_nearest_size(conditions, traffic):
    """The Type1 condition whose size is nearest traffic's mean size (the
    paper sets its Gaussian and Pareto sizes, mean 600 B, beside 550 B)."""
    mean = traffic.mean_size
    if mean is None:
        return None
    return min(of_set(conditions, "Type1"),
               key=lambda c: (abs(c.senders[0].mean_size - mean),
                              abs(c.senders[0].rate - traffic.rate)), default=None)


# ---- verdicts ----

@dataclass
class Item:
    where: str
    value: str            # the statistic over repetitions, as text
    verdict: str
    median: float = np.nan


@dataclass
class Outcome:
    verdict: str
    measured: str
    arrival: str
    items: list


@dataclass(frozen=True)
class Claim:
    id: str
    section: str
    text: str
    statistic: str
    tolerance: str      # fixed before looking, and why
    sets: tuple         # the sets of conditions it reads
    uses_arrival: bool
    check: Callable     # conditions -> Outcome (arrival filled in by evaluate)


def judge(oks):
    """An item's verdict from its pass/fail per repetition (or pair)."""
    if not oks:
        return UNKNOWN
    return HOLDS if all(oks) else FAILS if not any(oks) else UNKNOWN


def spread_text(values, fmt="{:.0f}"):
    """The finite values (each as fmt) as median (min–max); one value alone;
    "no value" without any."""
    v = np.asarray(values, np.float64)
    finite = v[np.isfinite(v)]
    if not len(finite):
        return "no value"
    if finite.min() == finite.max():
        return fmt.format(finite[0])
    return (f"{fmt.format(np.median(finite))} "
            f"({fmt.format(finite.min())}–{fmt.format(finite.max())})")


def item(where, values, oks, fmt, unit="", runs_ok=True):
    """An Item: the values (each as fmt) as median (min–max) unit, judged
    unless a condition had too few repetitions."""
    v = np.asarray(values, np.float64)
    finite = v[np.isfinite(v)]
    return Item(where, f"{spread_text(v, fmt)} {unit}".strip(),
                judge(list(oks)) if runs_ok and len(finite) == len(v) else UNKNOWN,
                float(np.median(finite)) if len(finite) else np.nan)


def enough(*conditions):
    return all(len(c.runs) >= MIN_REPETITIONS for c in conditions)


def pairs(a, b, f):
    """f(run of a, run of b) over every pair of their repetitions."""
    return [f(x, y) for x in a.runs for y in b.runs]


def every(items, missing):
    """About every operative condition: any item that does not hold decides."""
    if not items:
        return Outcome(UNKNOWN, f"no {missing} in the campaigns", "", [])
    verdicts = [i.verdict for i in items]
    verdict = (FAILS if FAILS in verdicts else HOLDS if all(v == HOLDS for v in verdicts)
               else UNKNOWN)
    return Outcome(verdict, _tally(verdicts), "", items)


def most(items, missing):
    """About what happens on average: more than half the items decide."""
    if not items:
        return Outcome(UNKNOWN, f"no {missing} in the campaigns", "", [])
    verdicts = [i.verdict for i in items]
    n_holds, n_fails = verdicts.count(HOLDS), verdicts.count(FAILS)
    verdict = (HOLDS if n_holds > len(items) / 2 else FAILS if n_fails >= len(items) / 2
               else UNKNOWN)
    return Outcome(verdict, _tally(verdicts), "", items)


def _tally(verdicts):
    return (f"{verdicts.count(HOLDS)} hold, {verdicts.count(FAILS)} do not, "
            f"{verdicts.count(UNKNOWN)} cannot tell (of {len(verdicts)} items)")


# ---- the claims ----

def ratio(a, b):
    """a / b; NaN (no verdict) where b is not above 0, as a constant delay's spread."""
    return a / b if b > 0 else np.nan


def _mode_close(a, b):
    return abs(a - b) <= max(MODE_CLOSE_NS, MODE_CLOSE_REL * b)


def d_p_peaks(conditions):
    items = []
    for c in of_set(conditions, "Type1"):
        n = [len(peaks(r.delay(ALL, "d_p").freq)) for r in c.runs]
        items.append(item(c.name, n, [k >= SEVERAL_PEAKS for k in n], "{:.3g}", "peaks", enough(c)))
    return every(items, "Type1 conditions")


def _queues_limited(conditions, sets):
    items = []
    for c in of_set(conditions, *sets):
        for q in QUEUES:
            p = [r.queue_quantile(q) for r in c.runs]
            items.append(item(f"{c.name} {q} queue", p, [x <= QUEUE_LIMITED for x in p],
                              "{:.3g}", "packets", enough(c)))
    return items


def queues_limited_solo(conditions):
    return every(_queues_limited(conditions, ("Type1",)), "Type1 conditions")


def queues_limited_competitive(conditions):
    return every(_queues_limited(conditions, COMPETITIVE_SETS), "Table I-III conditions")


def coffee_every_390(conditions):
    """Each Type1 condition judged at every threshold fixed before looking,
    in every repetition: holds where all pass, cannot tell where they
    disagree. Fewer than two breaks fail (in runs of thousands of packets,
    where breaks every ~390 packets would be dozens)."""
    items = []
    lo, hi = COFFEE_RANGE
    for c in of_set(conditions, "Type1"):
        by = {}
        for r in c.runs:
            for name, least, gaps in r.coffee:
                by.setdefault(name, []).append((least, interoccurrence_stats(gaps)))
        modes = [st["mode"] for found in by.values() for _, st in found]
        parts = []
        for name, found in by.items():
            stat = {k: [st[k] for _, st in found] for k in ("mode", "median", "mean")}
            few = sum(st["count"] == 0 for _, st in found)
            shortest = spread_text([x / 1000 for x, _ in found], "{:.3g}")
            mode, median, mean = (spread_text(stat[k]) for k in ("mode", "median", "mean"))
            parts.append(f"≥ {name} {shortest} µs: mode {mode} (median {median}, mean {mean})"
                         + (f", under two breaks in {few} of {len(found)} runs" if few else ""))
        oks = [lo <= m <= hi for m in modes]  # a NaN mode (under two breaks) fails
        items.append(Item(c.name, "; ".join(parts) or "no break counted",
                          judge(oks) if enough(c) else UNKNOWN,
                          float(np.nanmedian(modes)) if np.isfinite(modes).any() else np.nan))
    return every(items, "Type1 conditions")


def _against_type1(conditions, stat, fmt):
    """Type2 and Type3 conditions against the Type1 one of the nearest mean
    size, stage by stage."""
    items = []
    for c in of_set(conditions, "Type2", "Type3"):
        ref = type1_nearest_size(conditions, c.senders[0])
        if ref is None:
            items.append(Item(c.name, "no Type1 condition to compare with", UNKNOWN))
            continue
        for stage in DELAYS:
            v = pairs(c, ref, lambda a, b: stat(a.delay(ALL, stage), b.delay(ALL, stage)))
            items.append(item(f"{c.name} vs {ref.name} {stage}", [x for x, _ in v],
                              [y for _, y in v], *fmt, enough(c, ref)))
    return items


def modes_follow_mean_size(conditions):
    items = _against_type1(conditions,
                           lambda a, b: (a.mode_ns - b.mode_ns, _mode_close(a.mode_ns, b.mode_ns)),
                           ("{:+.0f}", "ns"))
    return every(items, "Type2/Type3 conditions beside a Type1 one")


def means_differ(conditions):
    def stat(a, b):
        r = ratio(a.mean, b.mean) - 1
        return r, abs(r) >= MEANS_DIFFER
    return most(_against_type1(conditions, stat, ("{:+.0%}", "")),
                "Type2/Type3 conditions beside a Type1 one")


def competition_raises_delay(conditions):
    items = []
    for c in of_set(conditions, *COMPETITIVE_SETS):
        ref = solo_like(conditions, c.senders[0])
        if ref is None:
            items.append(Item(c.name, "no solo run of sender1's traffic", UNKNOWN))
            continue
        r = pairs(c, ref, lambda a, b: ratio(a.delay(ALL, "transit").mean,
                                             b.delay(ALL, "transit").mean))
        items.append(item(f"{c.name} vs {ref.name}", r, [x >= 1 + RISE for x in r], "×{:.2f}", "",
                          enough(c, ref)))
    return most(items, "Table I-III conditions")


def _per_sender(conditions, each):
    """each(condition, sender Traffic, its solo condition) -> items, for
    every sender of every competitive condition."""
    items = []
    for c in of_set(conditions, *COMPETITIVE_SETS):
        for k, s in enumerate(c.senders, 1):
            ref = solo_like(conditions, s)
            if ref is None:
                items.append(Item(f"{c.name} sender{k}", f"no solo run of {s.describe()}",
                                  UNKNOWN))
            else:
                items += each(c, k, s, ref)
    return items


def modes_stay_solo(conditions):
    def each(c, k, s, ref):
        out = []
        for stage in DELAYS:
            v = pairs(c, ref, lambda a, b: (a.delay(s.tos, stage).mode_ns,
                                            b.delay(ALL, stage).mode_ns))
            out.append(item(f"{c.name} sender{k} {stage} vs {ref.name}", [a - b for a, b in v],
                            [_mode_close(a, b) for a, b in v], "{:+.0f}", "ns",
                            enough(c, ref)))
        return out
    return every(_per_sender(conditions, each), "Table I-III conditions")


def _d_p_growth(c, k, s, ref):
    """(mean ratio items, spread ratio items) of sender k's d_p against its solo run."""
    out = []
    for what in ("mean", "spread"):
        r = pairs(c, ref, lambda a, b: ratio(getattr(a.delay(s.tos, "d_p"), what),
                                             getattr(b.delay(ALL, "d_p"), what)))
        out.append(item(f"{c.name} sender{k} d_p {what} vs {ref.name}", r,
                        [x >= 1 + RISE for x in r], "×{:.2f}", "", enough(c, ref)))
    return out


def d_p_grows(conditions):
    return every(_per_sender(conditions, _d_p_growth), "Table I-III conditions")


def d_p_grows_most_in_table3(conditions):
    """Table III's median ratio (mean, spread) against the other two sets'."""
    medians = {}
    for name in COMPETITIVE_SETS:
        growth = _per_sender(of_set(conditions, name, *SOLO_SETS), _d_p_growth)
        for what in ("mean", "spread"):
            ratios = [i.median for i in growth
                      if f" d_p {what} " in i.where and np.isfinite(i.median)]
            if ratios:
                medians[name, what] = float(np.median(ratios))
    verdicts = {}
    for what in ("mean", "spread"):
        have = [medians.get((name, what)) for name in COMPETITIVE_SETS]
        verdicts[what] = (UNKNOWN if None in have else
                          HOLDS if have[2] > max(have[:2]) else FAILS)
    items = [Item(f"{name} d_p {what}", f"×{m:.2f} (median over senders and conditions)",
                  verdicts[what] if name == "Table III" else "", m)
             for (name, what), m in medians.items()]
    missing = [n for n in COMPETITIVE_SETS if (n, "mean") not in medians]
    if missing:
        return Outcome(UNKNOWN, f"no {', '.join(missing)} beside its solo runs", "", items)
    both = set(verdicts.values())
    return Outcome(both.pop() if len(both) == 1 else UNKNOWN,
                   "Table III largest: " + ", ".join(
                       f"{w} {'yes' if v == HOLDS else 'no'}" for w, v in verdicts.items()),
                   "", items)

_MODE_TOL = (f"|Δ| ≤ {MODE_CLOSE_NS} ns or {MODE_CLOSE_REL:.0%} of the reference mode, "
             "whichever is larger: two 50 ns bins, or a tenth where modes are long waits")
_QUEUE_TOL = (f"≤ {QUEUE_LIMITED} packets: a few packets waiting, where each queue "
              "holds 1000 (netdev_max_backlog, the TBF's limit)")

CLAIMS = (
    Claim("D1", "IV-D 1)", "d_p is not constant: its histograms show several peaks "
          "(Figs. 4(b), 5(b), 6(b))",
          f"peaks of d_p's histogram at {BIN_NS} ns bins (≥ {PEAK_MIN_FREQ:.0%} of the "
          f"packets, prominence ≥ {PEAK_PROMINENCE:.0%} of the height), each Type1 condition",
          f"≥ {SEVERAL_PEAKS} peaks in every repetition: 'several', and a lone peak is "
          "what a constant d_p plus noise gives", ("Type1",), False, d_p_peaks),
    Claim("D2", "IV-D 2)", "d_iq and d_oq show limited queuing (Fig. 7(a), (b))",
          f"p{QUEUE_QUANTILE * 100:g} of the time-weighted occupancy of the input "
          "(arrival..t2) and output (t3..t4) queues, each Type1 condition",
          _QUEUE_TOL, ("Type1",), True, queues_limited_solo),
    Claim("D3", "IV-D 3)", "a new coffee break is very likely after about 390 packets "
          "(Fig. 7(c))",
          "mode (median and mean beside it) of the coffee-break interoccurrence (packets that "
          "reached t2 between two breaks), each Type1 condition, at every shortest break "
          "fixed before looking: one arrival gap, and the idle floor at p99, p99.9, p99.99 "
          "where the run has the idle packets for it (analysis/coffee.py)",
          f"{COFFEE_RANGE[0]:.0f}–{COFFEE_RANGE[1]:.0f} packets at every such threshold: within "
          "a factor of 2 of 390, since another kernel's scheduler sets its own rhythm; where "
          "the thresholds disagree, cannot tell", ("Type1",), True, coffee_every_390),
    Claim("D4", "IV-D 4)", "the most frequent delays depend only on the mean payload size, "
          "not on the distributions (Figs. 8, 9 against 5)",
          f"mode at {BIN_NS} ns bins of d_iq, d_p, d_oq of each Type2/Type3 condition minus "
          "that of the Type1 condition of the nearest mean size",
          _MODE_TOL, SOLO_SETS, True, modes_follow_mean_size),
    Claim("D5", "IV-D 5)", "the mean delays differ significantly between configurations",
          "mean d_iq, d_p, d_oq of each Type2/Type3 condition over that of the Type1 "
          "condition of the nearest mean size, minus 1",
          f"|difference| ≥ {MEANS_DIFFER:.0%} in more than half the comparisons: 'significant', "
          "and the paper speaks of the configurations at large", SOLO_SETS, True, means_differ),
    Claim("E1", "IV-E 1)", "with competitive traffic the single-hop delay is on average "
          "greater than without",
          "mean transit (arrival..t4, all packets) of each Table I-III condition over that of "
          "sender1's traffic alone (Type1, same size)",
          f"≥ {1 + RISE:.2f} in more than half the conditions: 'on average', and a rise under "
          f"{RISE:.0%} is not called one", ALL_SETS, True, competition_raises_delay),
    Claim("E2", "IV-E 2)", "each sender's most frequent delays stay close to those of its "
          "traffic alone",
          f"mode at {BIN_NS} ns bins of d_iq, d_p, d_oq of each sender (by TOS) minus that "
          "of the same traffic alone (same size and gaps)",
          _MODE_TOL + "; in every condition, as the paper says", ALL_SETS, True, modes_stay_solo),
    Claim("E3", "IV-E 3)", "queuing stays limited with competitive traffic",
          f"p{QUEUE_QUANTILE * 100:g} of the time-weighted occupancy of the input and output "
          "queues, each Table I-III condition", _QUEUE_TOL, COMPETITIVE_SETS, True,
          queues_limited_competitive),
    Claim("E4", "IV-E 4)", "d_p's mean and dispersion increase against the traffic alone",
          "d_p mean and spread (p90 - p10) of each sender over those of its traffic alone",
          f"both ≥ {1 + RISE:.2f}: 'all histograms' show it, and a rise under {RISE:.0%} is "
          "not called one", ALL_SETS, False, d_p_grows),
    Claim("E4b", "IV-E 4)", "d_p's increase is largest in the third set (Table III)",
          "median over senders and conditions of the ratios of claim E4, per set",
          "Table III's median the largest of the three sets, for the mean and the spread "
          "(a rank: no margin to choose)", ALL_SETS, False, d_p_grows_most_in_table3),
)


def evaluate(conditions, claims=CLAIMS):
    """[(Claim, Outcome)], each outcome saying which arrival instant it used."""
    out = []
    for claim in claims:
        o = claim.check(conditions)
        o.arrival = (arrivals(of_set(conditions, *claim.sets)) if claim.uses_arrival
                     else "not used (t2, t3, t4)")
        out.append((claim, o))
    return out


def arrivals(conditions):
    """Which arrival instant the runs used: t0, t1, or how many of each."""
    seen = [r.arrival for c in conditions for r in c.runs]
    kinds = sorted(set(seen))
    if len(kinds) == 1:
        return kinds[0]
    return ", ".join(f"{k} ({seen.count(k)} runs)" for k in kinds) or "no runs"
