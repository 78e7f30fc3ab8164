"""The claims of the paper, checked on campaign results.

Angrisani et al. (IEEE TIM 2006) drew their conclusions from histograms of a
2.4 GHz Celeron of 2006; absolute delays on another machine cannot match
them. So each claim is checked on the shape of the results, for the reason
the paper gives: modes and peaks at BIN_NS bins, ratios of means and
spreads, queue sizes in packets, rates of coffee breaks. Every tolerance is
fixed below, with the reason for it; tolerances on modes are absolute (two
bins), since a share of a delay that holds a CPU's wake-up would say nothing
of the router.

Each item's verdict comes from the interval of its statistic over the
repetitions (paper_verdict). Comparisons that assume a working router (the
paper's conditions were lossless, its queues short) leave out a condition
that lost more than LOSS_WORKING of its packets or whose queue reached
QUEUE_OVERLOAD, and name it.
"""
from dataclasses import dataclass
from typing import Callable

import numpy as np

from .coffee import interoccurrence_stats
from .paper_facts import (ALL, ALL_SETS, BIN_NS, COMPETITIVE_SETS, D_IQ_T1, DELAYS, QUEUES,
                          SOLO_SETS, arrivals, of_set, peaks, solo_like, type1_nearest_size)
from .paper_verdict import (FAILS, HOLDS, MIN_REPETITIONS, UNKNOWN, Item, Outcome, bootstrap,
                            cv_interval, every, interval_text, item, judge_interval, most, one,
                            spread_text, tally)

# a peak: a bin holding at least 1 % of the packets (at ~150000 packets a run,
# 1500 of them, 40 times the counting noise)...
PEAK_MIN_FREQ = 0.01
# ...standing above the valley towards any higher bin by half its height: a
# separate peak, as the paper's histograms show, not a shoulder of another
PEAK_PROMINENCE = 0.5
SEVERAL_PEAKS = 2
# "not constant": d_p's central 80 % at least twice what the probes' own
# spread (or one bin, where the file has no probe samples) makes of a constant
NOT_CONSTANT = 2.0
# "limited queuing": while a queue holds packets, 99 % of that time at most
# 10 wait, where the queues hold 1000 (netdev_max_backlog, the TBF's limit);
# the time it is empty would otherwise decide the quantile
QUEUE_QUANTILE = 0.99
QUEUE_LIMITED = 10
# "about 390 packets": the mode of the interoccurrence within a factor of 2 of
# it, since another kernel's scheduler sets another rhythm, not a faster one
COFFEE_PAPER = 390
COFFEE_RANGE = (COFFEE_PAPER / 2, COFFEE_PAPER * 2)
# a mode of fewer interoccurrences is not a rhythm; fewer breaks still bound
# their mean spacing from below (packets / (breaks + 1))
MIN_BREAKS = 20
# "certain regularity": interoccurrences within half their median of each
# other (IQR / median); breaks at random, an exponential spacing, give 1.58
REGULAR = 0.5
# two modes are "close": within two bins, the least difference 50 ns bins show
MODE_CLOSE_NS = 2 * BIN_NS
# "significant differences" between means: 10 % or more
MEANS_DIFFER = 0.10
# "greater", "increased": by 5 % or more; less is not called a rise
RISE = 0.05
# the minimum transit "is not" d_p: off by more than two bins or a tenth of it
MIN_TRANSIT_OFF = (2 * BIN_NS, 0.10)
# "a mutual interference": at least 1 % of a sender's packets wait behind the other's
INTERFERE = 0.01
# a working router: the paper's conditions were lossless...
LOSS_WORKING = 0.001
# ...and their queues short: a queue whose p99 reached a tenth of its 1000 is overloaded
QUEUE_OVERLOAD = 100
# "good concurrence" of repetitions: their means within 10 % (coefficient of variation)
CONCUR = 0.10
# the paper's queue estimate (eqs. 7-8) tells the queue's size within half a packet on average
ESTIMATE_CLOSE = 0.5


# ---- which conditions a comparison may read ----

def not_working(c):
    """Why condition c is not a working router (lossy or overloaded in a
    repetition), or None."""
    why = []
    lost = [r.lost_share for r in c.runs]
    if any(x > LOSS_WORKING for x in lost):
        why.append(f"lost {spread_text([100 * x for x in lost], '{:.2g}')} % of the packets sent")
    for q in QUEUES:
        p = [r.queue_quantile(q, QUEUE_QUANTILE) for r in c.runs]
        if any(x >= QUEUE_OVERLOAD for x in p):
            why.append(f"{q} queue p{QUEUE_QUANTILE * 100:g} {spread_text(p)} packets")
    return "; ".join(why) or None


def working(conditions):
    """(the working conditions, [(name, why)] of the others)"""
    why = {c.name: not_working(c) for c in conditions}
    return ([c for c in conditions if not why[c.name]],
            [(c.name, why[c.name]) for c in conditions if why[c.name]])


def _with_reference(conditions, sets, reference, missing, each):
    """each(condition, reference(working conditions, its sender1), the
    working conditions) -> items, for every working condition of the sets;
    an item saying `missing` where there is no reference. (items, excluded)"""
    ok, excluded = working(conditions)
    items = []
    for c in of_set(ok, *sets):
        ref = reference(ok, c.senders[0])
        if ref is None:
            items.append(Item(c.name, missing, UNKNOWN))
        else:
            items += each(c, ref, ok)
    return items, excluded


def enough(*conditions):
    return all(len(c.runs) >= MIN_REPETITIONS for c in conditions)


def values(c, f):
    return [f(r) for r in c.runs]


def _ratio(a, b):
    """a / b; NaN where b is not above 0 (a constant delay's spread)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.asarray(b) > 0, np.asarray(a) / np.asarray(b), np.nan)


def _stages(c):
    """The delays the runs of c have: d_iq from t1 beside d_iq when t0 was recorded."""
    return DELAYS + ((D_IQ_T1,) if c.runs and all(r.arrival == "t0" for r in c.runs) else ())


def _mode_note(*conds, group=ALL, stage):
    """Beside modes: each one's share of the delays in its bin and beyond
    the histogram's range, medians over repetitions."""
    def part(c, g):
        f = [r.delay(g, stage) for r in c.runs]
        return (f"mode {spread_text([x.mode_ns for x in f])} ns, "
                f"{spread_text([100 * x.modal_share for x in f], '{:.0f}')} % in its bin, "
                f"{spread_text([100 * x.beyond_share for x in f], '{:.2g}')} % beyond range")
    return " / ".join(part(c, g) for c, g in zip(conds, (group, ALL)))


# ---- Sec. IV-C, IV-D ----

def lossless(conditions):
    items = []
    for c in of_set(conditions, *ALL_SETS):
        lost = values(c, lambda r: r.lost_share)
        sent = values(c, lambda r: r.sent)
        if any(s is None for s in sent):
            items.append(Item(c.name, "the campaign kept no generator counts", UNKNOWN))
            continue
        items.append(item(c.name, [lost], one, (-np.inf, 0), "{:.3%}", "lost",
                          f"{sum(r.sent - r.received for r in c.runs)} of {sum(sent)} packets"))
    return every(items, "conditions")


def _each_type1(conditions, judge):
    """About every Type1 condition: judge(condition) -> its Item."""
    return every([judge(c) for c in of_set(conditions, "Type1")], "Type1 conditions")


def d_p_not_constant(conditions):
    def judge(c):
        spread = values(c, lambda r: r.delay(ALL, "d_p").spread)
        noise = values(c, lambda r: r.d_p_noise_ns)
        return item(c.name, [np.divide(spread, np.fmax(noise, BIN_NS))], one,
                    (NOT_CONSTANT, np.inf), "×{:.2f}", "of the probes' own spread",
                    f"p90 - p10 {spread_text(spread)} ns; probes {spread_text(noise)} ns")
    return _each_type1(conditions, judge)


def d_p_not_min_transit(conditions):
    def judge(c):
        med = values(c, lambda r: r.delay(ALL, "d_p").p50)
        least = values(c, lambda r: r.delay(ALL, "transit").least)
        tol = max(MIN_TRANSIT_OFF[0], MIN_TRANSIT_OFF[1] * float(np.nanmedian(med)))
        return item(c.name, [np.abs(np.subtract(least, med))], one, (tol, np.inf), "{:.0f}",
                    "ns apart", f"minimum transit {spread_text(least)} ns, median d_p "
                    f"{spread_text(med)} ns; at least {tol:.0f} ns apart")
    return _each_type1(conditions, judge)


def d_p_peaks(conditions):
    return _each_type1(conditions, lambda c: item(
        c.name, [values(c, lambda r: len(peaks(r.delay(ALL, "d_p").freq, PEAK_MIN_FREQ,
                                               PEAK_PROMINENCE)))],
        one, (SEVERAL_PEAKS, np.inf), "{:.3g}", "peaks"))


def _queues_limited(conditions, sets):
    items = []
    for c in of_set(conditions, *sets):
        for q in QUEUES:
            p = values(c, lambda r: r.queue_quantile(q, QUEUE_QUANTILE, busy=True))
            busy = spread_text(values(c, lambda r: 100 * r.busy_share(q)), "{:.2g}")
            it = item(f"{c.name} {q} queue", [p], one, (-np.inf, QUEUE_LIMITED), "{:.3g}",
                      "packets", f"busy {busy} % of the time")
            if all(np.isnan(p)):
                it.value, it.verdict = "never held a packet", HOLDS
            items.append(it)
    return items


def queues_limited_solo(conditions):
    return every(_queues_limited(conditions, ("Type1",)), "Type1 conditions")


def queues_limited_competitive(conditions):
    return every(_queues_limited(conditions, COMPETITIVE_SETS), "Table I-III conditions")


def _by_threshold(conditions, judge_run, passes, fmt, unit):
    """Coffee-break items of each Type1 condition at each threshold: a
    run's value is judge_run(interoccurrences, packets) -> (value, bound):
    value NaN with under MIN_BREAKS breaks, bound the spacing's least mean
    then. The claim holds at a threshold where every condition holds;
    overall where it holds at every threshold, fails where it fails at each."""
    by = {}
    for c in of_set(conditions, "Type1"):
        at = {}
        for r in c.runs:
            for name, least, gaps in r.coffee:
                at.setdefault(name, []).append((least, judge_run(gaps, r.packets_t2)))
        for name, found in at.items():
            v = [x for _, (x, _) in found]
            bound = [b for _, (_, b) in found]
            shortest = spread_text([x / 1000 for x, _ in found], "{:.3g}")
            where = f"{c.name} ≥ {name} {shortest} µs"
            if np.isnan(v).any():
                few = int(np.isnan(v).sum())
                lo = min(bound)
                fails = lo > passes[1] and len(found) >= MIN_REPETITIONS
                by.setdefault(name, []).append(Item(
                    where, f"under {MIN_BREAKS} breaks in {few} of {len(found)} runs: "
                    f"at least {lo:.0f} packets apart on average",
                    FAILS if fails else UNKNOWN, np.nan))
                continue
            by.setdefault(name, []).append(item(where, [v], one, passes, fmt, unit))
    items = [i for found in by.values() for i in found]
    if not items:
        return Outcome(UNKNOWN, "no Type1 conditions in the campaigns", "", [])
    verdicts = {name: every(found, "").verdict for name, found in by.items()}
    v = set(verdicts.values())
    verdict = HOLDS if v == {HOLDS} else FAILS if v == {FAILS} else UNKNOWN
    return Outcome(verdict, "; ".join(f"≥ {n}: {x}" for n, x in verdicts.items()) + " ("
                   + tally([i.verdict for i in items]) + ")", "", items)


def _lower_bound(gaps, packets):
    return packets / (len(gaps) + 2)  # breaks = interoccurrences + 1


def coffee_every_390(conditions):
    def run(gaps, packets):
        st = interoccurrence_stats(gaps)
        return (st["mode"] if st["count"] >= MIN_BREAKS else np.nan,
                _lower_bound(gaps, packets))
    return _by_threshold(conditions, run, COFFEE_RANGE, "{:.0f}", "packets")


def coffee_regular(conditions):
    def run(gaps, packets):
        if len(gaps) < MIN_BREAKS:
            return np.nan, 0.0
        q1, q2, q3 = np.percentile(gaps, [25, 50, 75])
        return (q3 - q1) / q2 if q2 > 0 else np.nan, 0.0
    return _by_threshold(conditions, run, (0, REGULAR), "{:.2f}", "IQR / median")


def _size_matters(conditions, stage, generator):
    """Whether the Type1 modes of a stage differ across sizes (a pair's
    difference wholly beyond MODE_CLOSE_NS), among the Type1 conditions of
    one generator (another generator's runs at a size are no size effect),
    and the modes as text."""
    t1 = sorted((c for c in of_set(conditions, "Type1") if c.senders[0].generator == generator),
                key=lambda c: c.senders[0].mean_size)
    modes = {c.name: values(c, lambda r: r.delay(ALL, stage).mode_ns) for c in t1}
    differ = any(
        judge_interval(*bootstrap([modes[a.name], modes[b.name]], lambda x, y: np.abs(y - x))[1:],
                       (MODE_CLOSE_NS, np.inf)) == HOLDS
        for i, a in enumerate(t1) for b in t1[i + 1:] if enough(a, b))
    return differ, ", ".join(f"{c.name} {spread_text(modes[c.name])}" for c in t1)


def _against_type1(conditions, each):
    """each(condition, its Type1 reference, the working conditions) ->
    items, for every working Type2/Type3 condition; (items, excluded)."""
    return _with_reference(conditions, ("Type2", "Type3"), type1_nearest_size,
                           "no working Type1 condition to compare with", each)


def modes_follow_mean_size(conditions):
    untestable = []

    def each(c, ref, ok):
        out = []
        for stage in _stages(c):
            differ, modes = _size_matters(ok, stage, ref.senders[0].generator)
            where = f"{c.name} vs {ref.name} {stage}"
            if not differ:
                untestable.append(Item(where, f"Type1 modes do not differ across sizes ({modes} "
                                       "ns): size has no effect to follow", UNKNOWN))
                continue
            out.append(item(where, [values(ref, lambda r: r.delay(ALL, stage).mode_ns),
                                    values(c, lambda r: r.delay(ALL, stage).mode_ns)],
                            lambda a, b: b - a, (-MODE_CLOSE_NS, MODE_CLOSE_NS), "{:+.0f}",
                            "ns", _mode_note(c, ref, stage=stage)))
        return out
    items, excluded = _against_type1(conditions, each)
    # judged where size moves the Type1 modes; the rest said, not counted
    o = every(items, "delay whose Type1 modes differ across sizes, beside a working "
              "Type2/Type3 condition", excluded)
    o.items += untestable
    if untestable:
        o.measured += f"; {len(untestable)} items without a size effect to follow"
    return o


def means_differ(conditions):
    items, excluded = _against_type1(conditions, lambda c, ref, ok: [
        item(f"{c.name} vs {ref.name} {stage}", [values(ref, lambda r: r.delay(ALL, stage).mean),
                                                 values(c, lambda r: r.delay(ALL, stage).mean)],
             lambda a, b: np.abs(_ratio(b, a) - 1), (MEANS_DIFFER, np.inf), "{:.0%}", "apart")
        for stage in DELAYS])
    return most(items, "working Type2/Type3 conditions beside a Type1 one", excluded)


# ---- Sec. IV-E ----

def _solo_pairs(conditions, each):
    """each(condition, its sender1's solo condition, the working conditions)
    -> items, for every working competitive condition; (items, excluded)."""
    return _with_reference(conditions, COMPETITIVE_SETS, solo_like,
                           "no working solo run of sender1's traffic", each)


def competition_raises_delay(conditions):
    items, excluded = _solo_pairs(conditions, lambda c, ref, ok: [item(
        f"{c.name} vs {ref.name}", [values(ref, lambda r: r.delay(ALL, "transit").mean),
                                    values(c, lambda r: r.delay(ALL, "transit").mean)],
        lambda a, b: _ratio(b, a), (1 + RISE, np.inf), "×{:.2f}")])
    return most(items, "working Table I-III conditions", excluded)


def senders_interfere(conditions):
    """Each sender of each working competitive condition: the share of its
    packets that waited behind the other sender's in a queue."""
    ok, excluded = working(conditions)
    items = [item(f"{c.name} sender{k}", [values(c, lambda r: r.behind_other.get(s.tos, np.nan))],
                  one, (INTERFERE, 1), "{:.1%}", "behind the other sender's")
             for c in of_set(ok, *COMPETITIVE_SETS) for k, s in enumerate(c.senders, 1)]
    return most(items, "working Table I-III conditions", excluded)


def more_breaks_with_two_senders(conditions):
    """Coffee breaks a second, at the solo run's shortest idle-floor
    threshold (the least one judged), against sender1's traffic alone."""
    def each(c, ref, ok):
        least = [min(floors) for r in ref.runs
                 if (floors := [x for name, x, _ in r.coffee if name.startswith("idle floor")])]
        if not least:
            return [Item(f"{c.name} vs {ref.name}", "no idle floor in the solo runs", UNKNOWN)]
        t = float(np.median(least))
        alone, both = (values(x, lambda r: r.breaks_per_s(t)) for x in (ref, c))
        return [item(f"{c.name} vs {ref.name}", [alone, both], lambda a, b: _ratio(b, a),
                     (1 + RISE, np.inf), "×{:.2f}", "",
                     f"breaks ≥ {t / 1000:.3g} µs: {spread_text(both)} /s against "
                     f"{spread_text(alone)} /s")]
    items, excluded = _solo_pairs(conditions, each)
    return most(items, "working Table I-III conditions", excluded)


def _per_sender(conditions, each):
    """each(condition, k, sender Traffic, its solo condition) -> items, for
    every sender of every working competitive condition."""
    ok, excluded = working(conditions)
    items = []
    for c in of_set(ok, *COMPETITIVE_SETS):
        for k, s in enumerate(c.senders, 1):
            ref = solo_like(ok, s)
            if ref is None:
                items.append(Item(f"{c.name} sender{k}", f"no working solo run of {s.describe()}",
                                  UNKNOWN))
            else:
                items += each(c, k, s, ref)
    return items, excluded


def modes_stay_solo(conditions):
    def each(c, k, s, ref):
        return [item(f"{c.name} sender{k} {stage} vs {ref.name}",
                     [values(ref, lambda r: r.delay(ALL, stage).mode_ns),
                      values(c, lambda r: r.delay(s.tos, stage).mode_ns)],
                     lambda a, b: b - a, (-MODE_CLOSE_NS, MODE_CLOSE_NS), "{:+.0f}", "ns",
                     _mode_note(c, ref, group=s.tos, stage=stage))
                for stage in _stages(c)]
    items, excluded = _per_sender(conditions, each)
    return every(items, "working Table I-III conditions", excluded)


def _d_p_growth(c, k, s, ref):
    """(mean ratio item, spread ratio item) of sender k's d_p against its solo run."""
    return [item(f"{c.name} sender{k} d_p {what} vs {ref.name}",
                 [values(ref, lambda r: getattr(r.delay(ALL, "d_p"), what)),
                  values(c, lambda r: getattr(r.delay(s.tos, "d_p"), what))],
                 lambda a, b: _ratio(b, a), (1 + RISE, np.inf), "×{:.2f}")
            for what in ("mean", "spread")]


def _d_p_growth_by_sender(conditions):
    """(items, excluded, [(mean item, spread item)] of each sender with a solo run)"""
    pairs = []

    def each(c, k, s, ref):
        pairs.append(_d_p_growth(c, k, s, ref))
        return pairs[-1]
    return (*_per_sender(conditions, each), pairs)


def d_p_grows(conditions):
    items, excluded, pairs = _d_p_growth_by_sender(conditions)
    out = every(items, "working Table I-III conditions", excluded)
    # the paper speaks of both at once: how many senders show both
    both = sum(all(i.verdict == HOLDS for i in p) for p in pairs)
    out.measured += f"; both rise for {both} of {len(pairs)} senders"
    return out


def d_p_grows_most_in_table3(conditions):
    """Table III's median ratio (mean, spread) against the larger of the
    other two sets', its interval from resampling each set's items."""
    ratios = {}
    for name in COMPETITIVE_SETS:
        pairs = _d_p_growth_by_sender(of_set(conditions, name, *SOLO_SETS))[2]
        for j, what in enumerate(("mean", "spread")):
            ratios[name, what] = [p[j].median for p in pairs if np.isfinite(p[j].median)]
    items, verdicts = [], {}
    for what in ("mean", "spread"):
        sets = [ratios[n, what] for n in COMPETITIVE_SETS]
        if not all(sets):
            verdicts[what] = UNKNOWN
            continue
        point, low, high = bootstrap(sets, lambda a, b, c: c - np.maximum(a, b), np.median)
        verdicts[what] = judge_interval(low, high, (0, np.inf))
        items += [Item(f"{n} d_p {what}", f"×{np.median(r):.2f} (median of {len(r)} senders)",
                       "", float(np.median(r))) for n, r in zip(COMPETITIVE_SETS, sets)]
        items.append(Item(f"Table III above the larger other, d_p {what}",
                          interval_text(point, low, high, "{:+.2f}"), verdicts[what], point,
                          low, high))
    missing = [n for n in COMPETITIVE_SETS if not ratios[n, "mean"]]
    if missing:
        return Outcome(UNKNOWN, f"no {', '.join(missing)} beside its solo runs", "", items)
    both = set(verdicts.values())
    return Outcome(both.pop() if len(both) == 1 else UNKNOWN,
                   ", ".join(f"{w}: {v}" for w, v in verdicts.items()), "", items)


# ---- Sec. III and V ----

def estimate_tells_queue(conditions):
    items = []
    for c in of_set(conditions, *ALL_SETS):
        for q in QUEUES:
            err = values(c, lambda r: r.estimate[q].mean_abs_error)
            n = values(c, lambda r: r.estimate[q].queued)
            if not all(n):
                items.append(Item(f"{c.name} {q} queue", "never held two packets" + (
                    f" in {n.count(0)} of {len(n)} runs" if any(n) else "") +
                    ": nothing to estimate there", UNKNOWN))
                continue
            items.append(item(f"{c.name} {q} queue", [err], one, (0, ESTIMATE_CLOSE), "{:.2f}",
                              "packets off", f"over {spread_text(n)} departures with a queue"))
    return most(items, "conditions")


def repetitions_concur(conditions):
    items = []
    for c in of_set(conditions, *ALL_SETS):
        for stage in DELAYS + ("transit",):
            cv, low, high = cv_interval(values(c, lambda r: r.delay(ALL, stage).mean))
            text = interval_text(cv, low, high, "{:.1%}")
            items.append(Item(f"{c.name} {stage}", f"{text} ({len(c.runs)} repetitions)",
                              judge_interval(low, high, (0, CONCUR)) if enough(c) else UNKNOWN,
                              cv, low, high))
    return most(items, "conditions")


# ---- the claims ----

@dataclass(frozen=True)
class Claim:
    id: str
    section: str
    text: str
    statistic: str
    tolerance: str      # fixed, and why
    sets: tuple         # the sets of conditions it reads
    uses_arrival: bool
    check: Callable     # conditions -> Outcome (arrival filled in by evaluate)


_MODE_TOL = (f"|Δ| ≤ {MODE_CLOSE_NS} ns, two {BIN_NS} ns bins, for the whole interval; "
             "absolute, since d_iq from t0 holds a CPU's wake-up")
_QUEUE_TOL = (f"≤ {QUEUE_LIMITED} packets: a few packets waiting, where each queue "
              "holds 1000 (netdev_max_backlog, the TBF's limit)")
_WORKING = (f"; conditions that lost over {LOSS_WORKING:.1%} of their packets or whose queue "
            f"p{QUEUE_QUANTILE * 100:g} reached {QUEUE_OVERLOAD} are left out, named")

CLAIMS = (
    Claim("C", "IV-C", "every condition ran at a lossless rate (the paper pursued its "
          "lossless throughput)",
          "share of the packets sent that the receiver did not get, each condition",
          "0 in every repetition: lossless as the paper defines it", ALL_SETS, False, lossless),
    Claim("D1a", "IV-D 1)", "d_p is not constant",
          "d_p's p90 - p10 over the probes' own spread of d_p (2.56 of their deviation; one "
          f"{BIN_NS} ns bin where the file has no probe samples), each Type1 condition",
          f"≥ {NOT_CONSTANT:g}: a constant d_p seen through the probes spreads no more than "
          "they do", ("Type1",), False, d_p_not_constant),
    Claim("D1b", "IV-D 1)", "d_p cannot be evaluated from the minimum router transit time",
          "|minimum transit (arrival..t4) - median d_p|, each Type1 condition",
          f"≥ {MIN_TRANSIT_OFF[0]} ns or {MIN_TRANSIT_OFF[1]:.0%} of the median d_p, whichever "
          "is larger: an estimate off by that is not d_p", ("Type1",), True, d_p_not_min_transit),
    Claim("D1c", "IV-D 1)", "d_p's histograms show several peaks (Figs. 4(b), 5(b), 6(b))",
          f"peaks of d_p's histogram at {BIN_NS} ns bins (≥ {PEAK_MIN_FREQ:.0%} of the "
          f"packets, prominence ≥ {PEAK_PROMINENCE:.0%} of the height), each Type1 condition",
          f"≥ {SEVERAL_PEAKS} peaks: 'several'; a lone peak is what a constant d_p plus "
          "noise gives", ("Type1",), False, d_p_peaks),
    Claim("D2", "IV-D 2)", "d_iq and d_oq show limited queuing (Fig. 7(a), (b))",
          f"p{QUEUE_QUANTILE * 100:g} of the time-weighted occupancy of the input "
          "(arrival..t2) and output (t3..t4) queues over the time each held a packet, each "
          "Type1 condition", _QUEUE_TOL, ("Type1",), True, queues_limited_solo),
    Claim("D3", "IV-D 3)", "a new coffee break is very likely after about 390 packets "
          "(Fig. 7(c))",
          "mode of the coffee-break interoccurrence (packets that reached t2 between two "
          f"breaks; from {MIN_BREAKS} breaks in a run), each Type1 condition, at every "
          "shortest break fixed before looking: one arrival gap, and the idle floor at p99, "
          "p99.9, p99.99 where the run has the idle packets for it (analysis/coffee.py)",
          f"{COFFEE_RANGE[0]:.0f}–{COFFEE_RANGE[1]:.0f} packets: within a factor of 2 of 390, "
          "since another kernel's scheduler sets its own rhythm; fewer breaks whose least "
          "mean spacing is above the range do not hold; where thresholds disagree, cannot tell",
          ("Type1",), True, coffee_every_390),
    Claim("D3b", "IV-D 3)", "coffee-break interoccurrence shows a certain regularity",
          "interquartile range of the interoccurrence over its median, at the thresholds of D3",
          f"≤ {REGULAR:g}: breaks at random (exponential spacing) give 1.58", ("Type1",), True,
          coffee_regular),
    Claim("D4", "IV-D 4)", "the most frequent delays depend only on the mean payload size, "
          "not on the distributions (Figs. 8, 9 against 5)",
          f"mode at {BIN_NS} ns bins of each delay of each Type2/Type3 condition minus that "
          "of the Type1 condition of the nearest mean size; only for a delay whose Type1 modes "
          "differ across sizes (otherwise there is no size effect to follow: cannot tell)",
          _MODE_TOL + _WORKING, SOLO_SETS, True, modes_follow_mean_size),
    Claim("D5", "IV-D 5)", "the mean delays differ significantly between configurations",
          "|mean of each Type2/Type3 condition's delay over that of the Type1 condition of "
          "the nearest mean size - 1|",
          f"≥ {MEANS_DIFFER:.0%} for the whole interval in more than half the comparisons: "
          "'significant', against the repetitions' spread" + _WORKING, SOLO_SETS, True,
          means_differ),
    Claim("E1", "IV-E 1)", "with competitive traffic the single-hop delay is on average "
          "greater than without",
          "mean transit (arrival..t4, all packets) of each Table I-III condition over that of "
          "sender1's traffic alone (Type1, same size)",
          f"≥ {1 + RISE:.2f} in more than half the conditions: 'on average', and a rise under "
          f"{RISE:.0%} is not called one" + _WORKING, ALL_SETS, True, competition_raises_delay),
    Claim("E1b", "IV-E 1)", "a mutual interference among the two senders' packets has "
          "taken place (the paper's reason for E1)",
          "share of each sender's packets that found a packet of the other sender in the "
          "input (arrival..t2) or output (t3..t4) queue when they entered it",
          f"≥ {INTERFERE:.0%} for the whole interval, for more than half the senders: waiting "
          "behind the other sender's packets is what interference means in a FIFO queue"
          + _WORKING, COMPETITIVE_SETS, True, senders_interfere),
    Claim("E2", "IV-E 2)", "each sender's most frequent delays stay close to those of its "
          "traffic alone",
          f"mode at {BIN_NS} ns bins of each delay of each sender (by TOS) minus that of the "
          "same traffic alone (same size and gaps)",
          _MODE_TOL + "; in every condition, as the paper says" + _WORKING, ALL_SETS, True,
          modes_stay_solo),
    Claim("E3", "IV-E 3)", "queuing stays limited with competitive traffic",
          f"p{QUEUE_QUANTILE * 100:g} of the time-weighted occupancy of the input and output "
          "queues over the time each held a packet, each Table I-III condition", _QUEUE_TOL,
          COMPETITIVE_SETS, True, queues_limited_competitive),
    Claim("E4", "IV-E 4)", "d_p's mean and dispersion increase against the traffic alone",
          "d_p mean and spread (p90 - p10) of each sender over those of its traffic alone",
          f"each ≥ {1 + RISE:.2f} for the whole interval: 'all histograms' show it, and a "
          f"rise under {RISE:.0%} is not called one" + _WORKING, ALL_SETS, False, d_p_grows),
    Claim("E4b", "IV-E 4)", "d_p's increase is largest in the third set (Table III)",
          "median over senders and conditions of the ratios of claim E4, per set; Table "
          "III's minus the larger of the other two, its interval from resampling each "
          "set's senders",
          "above 0 for the whole interval, for the mean and the spread", ALL_SETS, False,
          d_p_grows_most_in_table3),
    Claim("E4c", "IV-E 4)", "with two sources there are more coffee breaks (the paper's "
          "second reason for d_p's rise)",
          "coffee breaks a second of each Table I-III condition over those of sender1's "
          "traffic alone, at the solo runs' shortest idle-floor threshold",
          f"≥ {1 + RISE:.2f} for the whole interval in more than half the conditions" + _WORKING,
          ALL_SETS, True, more_breaks_with_two_senders),
    Claim("III", "III eqs. 7-8", "the number of packets entering a queue per inter-departure "
          "interval (Δpr, Δo) gives the queue's size",
          "mean |estimate - exact occupancy| at each departure that left a queue behind "
          "(exact, the departing packet counted, ≥ 2), input and output queue, each condition",
          f"≤ {ESTIMATE_CLOSE:g} packet for the whole interval in more than half the queues",
          ALL_SETS, True, estimate_tells_queue),
    Claim("V", "V", "tests in similar traffic conditions concur (the method's reliability)",
          "coefficient of variation of the repetitions' mean d_iq, d_p, d_oq and transit, "
          "each condition, with its chi-square interval",
          f"≤ {CONCUR:.0%} for the whole interval in more than half the items",
          ALL_SETS, True, repetitions_concur),
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
