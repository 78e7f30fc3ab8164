"""`hopscope paper`: each claim of the paper judged on small synthetic
campaigns with planted outcomes (a claim that must hold, one that must not,
and what it cannot tell), then the command end to end on campaign folders:
Markdown, JSON and PDF written, and the errors a user can make.

The runs are real record files (record.synth) whose instants are replaced by
planted ones: FIFO traffic at constant gaps, so each delay is what the test
says, nothing queues unless planted, and no packet finds the router idle
(the idle floor stays at its least, 1 µs)."""
import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from hopscope.analysis import paper_claims as pc
from hopscope.analysis import paper_facts as pf
from hopscope.analysis import paper_verdict as pv
from hopscope.record import format as fmt
from hopscope.record import synth
from hopscope.record.load import load
from hopscope.traffic.scenario.load import parse_scenario

pytestmark = pytest.mark.slow  # whole campaigns judged, figures drawn

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
N = 4000          # packets per run, unless planted longer
GAP_NS = 40_000   # between arrivals: below coffee.IDLE_GAP_NS, so none finds the router idle


def plant(path, d_p, d_iq=None, d_oq=None, tos=None, d_rxq=None, seed=1, gap_ns=GAP_NS):
    """A record file of len(d_p) complete packets gap_ns apart with these
    delays (ns arrays); tos per packet (default all 4); d_rxq plants t0 as well."""
    n = len(d_p)
    rng = np.random.default_rng(seed)
    stages = ("t0",) if d_rxq is not None else ()
    # a rate below one per gap_ns: the file's END comes after the times planted below
    syn = synth.write_synthetic(path, n, seed, stages=stages, drop_fraction=0, inflight=0,
                                rate_pps=0.9e9 / gap_ns)
    (off,) = [o for o, t in zip(syn.chunk_offsets, syn.chunk_types) if t == fmt.CHUNK_RECORDS]
    with open(path, "r+b") as f:
        f.seek(off + fmt.CHUNK_HEADER_SIZE)
        r = np.frombuffer(bytearray(f.read(n * fmt.RECORD_DTYPE.itemsize)), fmt.RECORD_DTYPE)
        t1 = int(r["t1"][0]) + gap_ns * np.arange(n, dtype=np.int64)
        d_iq = rng.integers(300, 600, n) if d_iq is None else d_iq
        d_oq = rng.integers(400, 700, n) if d_oq is None else d_oq
        r["t1"] = t1
        r["t2"] = t1 + d_iq
        r["t3"] = r["t2"] + d_p
        r["t4"] = r["t3"] + d_oq
        if d_rxq is not None:
            r["t0"] = t1 - d_rxq
        r["tos"] = 4 if tos is None else tos
        f.seek(off + fmt.CHUNK_HEADER_SIZE)
        f.write(r.tobytes())
    synth.recompute_checksums(path)
    return path


def peaked(rng, modes, weights=None, sd=20, n=N):
    """n delays around the given modes (ns)."""
    which = rng.choice(len(modes), n, p=weights)
    return (np.asarray(modes)[which] + rng.normal(0, sd, n)).astype(np.int64)


def traffic(size=550, gaps="constant", rate=14000, tos=4, cpu="sender"):
    size = {"dist": "constant", "value": size} if isinstance(size, int) else size
    return pf.Traffic.of({"tos": tos, "size": size, "gaps": {"dist": gaps}, "rate": rate,
                          "cpu": cpu})


def test_a_control_with_a_generator_on_the_router_cpu_is_in_no_set():
    """The paper files' controls carry their twin's traffic with sender2 on
    the router's CPU: not the paper's set-up, so no claim reads them."""
    twin = pf.Condition("s1-550B_s2-550B", [traffic(), traffic(tos=5)])
    control = pf.Condition("control", [traffic(), traffic(tos=5, cpu="router")])
    assert twin.set == "Table I" and control.set is None
    assert pf.of_set([twin, control], "Table I") == [twin]


GAUSSIAN = {"dist": "normal", "mean": 600, "std": 200}


@pytest.fixture
def runs(tmp_path):
    """runs(name, [Traffic], [kwargs of plant per repetition], [counts per
    repetition]) -> Condition."""
    def make(name, senders, reps, counts=None):
        c = pf.Condition(name, senders)
        for k, kw in enumerate(reps, 1):
            df = load(plant(tmp_path / f"{name}-{k}.hsr", seed=k, **kw))
            c.runs.append(pf.run_facts(df, counts[k - 1] if counts else None))
        return c
    return make


def outcome(claim_id, conditions):
    (o,) = [o for c, o in pc.evaluate(conditions) if c.id == claim_id]
    return o


def reps(n, make):
    return [make(np.random.default_rng(100 + k)) for k in range(n)]


def peaks(freq):
    return pf.peaks(freq, pc.PEAK_MIN_FREQ, pc.PEAK_PROMINENCE)


# ---- the verdicts ----

def test_an_interval_decides_and_more_repetitions_sharpen_it():
    # two repetitions: the interval spans both, so they must agree
    point, low, high = pv.bootstrap([[1.0, 3.0]], pv.one)
    assert (point, low, high) == (2.0, 1.0, 3.0)
    assert pv.judge_interval(low, high, (2.5, np.inf)) == pv.UNKNOWN
    assert pv.judge_interval(low, high, (0.5, np.inf)) == pv.HOLDS
    assert pv.judge_interval(low, high, (3.5, np.inf)) == pv.FAILS
    # ten repetitions around the same mean: narrower, and the verdict comes
    rng = np.random.default_rng(1)
    many = 2 + rng.normal(0, 1, 10)
    _, low10, high10 = pv.bootstrap([many], pv.one)
    assert high10 - low10 < high - low
    # a comparison resamples each condition on its own
    point, low, high = pv.bootstrap([[1.0, 1.0], [2.0, 2.0]], lambda a, b: b / a)
    assert (point, low, high) == (2.0, 2.0, 2.0)
    # a value missing in a repetition: no interval, no verdict
    assert np.isnan(pv.bootstrap([[1.0, np.nan]], pv.one)[0])
    it = pv.item("x", [[5.0]], pv.one, (0, 10), "{:.0f}")
    assert it.verdict == pv.UNKNOWN and it.value == "5 (1 repetition)"


def test_the_deviation_interval_is_the_chi_square_one():
    # chi-square quantiles of the tables: 1 and 9 degrees of freedom
    assert pv.chi2_quantile(0.975, 1) == pytest.approx(5.0239, abs=1e-3)
    assert pv.chi2_quantile(0.025, 9) == pytest.approx(2.7004, abs=1e-3)
    cv, low, high = pv.cv_interval([9.0, 10.0, 11.0])
    assert cv == pytest.approx(0.1)
    assert low < cv < high and high / low == pytest.approx(
        np.sqrt(pv.chi2_quantile(0.975, 2) / pv.chi2_quantile(0.025, 2)), rel=1e-9)


def test_peaks_are_separate_modes_not_noise_or_shoulders():
    rng = np.random.default_rng(3)
    f = np.bincount(peaked(rng, [800, 1500]) // pf.BIN_NS) / N
    assert len(peaks(f)) == 2
    f = np.bincount(peaked(rng, [800], sd=80) // pf.BIN_NS) / N
    assert len(peaks(f)) == 1
    # a shoulder: a second bump that never comes down to half its height
    shoulder = np.array([0, .1, .3, .2, .18, .19, .03, 0])
    assert peaks(shoulder) == [2]
    # a flat top is one peak
    assert peaks(np.array([0, .3, .3, .1])) == [1]


# ---- Sec. IV-C, IV-D ----

def test_lossless_from_the_generators_and_receivers_counts(runs):
    def cond(received):
        return runs("550B", [traffic()], reps(len(received), one_peak),
                    [{"sent": 1000, "received": r} for r in received])
    assert outcome("C", [cond([1000, 1000])]).verdict == pv.HOLDS
    o = outcome("C", [cond([990, 995])])
    assert o.verdict == pv.FAILS and o.items[0].value.endswith("lost (15 of 2000 packets)")
    assert outcome("C", [cond([1000, 990])]).verdict == pv.UNKNOWN
    o = outcome("C", [runs("550B", [traffic()], reps(2, one_peak))])
    assert o.verdict == pv.UNKNOWN and o.items[0].value == "the campaign kept no generator counts"


def two_peaks(rng):
    return dict(d_p=peaked(rng, [800, 1500], [0.6, 0.4]))


def one_peak(rng):
    return dict(d_p=peaked(rng, [800]), d_iq=peaked(rng, [500]), d_oq=peaked(rng, [500]))


def test_d_p_with_two_peaks_holds_constant_does_not(runs):
    two, one = (runs("550B", [traffic()], reps(2, f)) for f in (two_peaks, one_peak))
    assert outcome("D1c", [two]).verdict == pv.HOLDS
    o = outcome("D1c", [one])
    assert o.verdict == pv.FAILS and o.items[0].value == "1 peaks"
    assert o.arrival == "not used (t2, t3, t4)"
    # not constant: 700 ns apart against one 50 ns bin (no probe samples in
    # these files); sd 20 ns spreads p90 - p10 over 51 ns: one bin
    assert np.isnan(two.runs[0].d_p_noise_ns)
    assert outcome("D1a", [two]).verdict == pv.HOLDS
    o = outcome("D1a", [one])
    assert o.verdict == pv.FAILS and o.items[0].high < pc.NOT_CONSTANT


def test_d_p_cannot_tell_when_repetitions_disagree_or_are_too_few(runs):
    mixed = runs("550B", [traffic()], [two_peaks(np.random.default_rng(1)),
                                       one_peak(np.random.default_rng(2))])
    o = outcome("D1c", [mixed])
    assert o.verdict == pv.UNKNOWN and o.items[0].value == "1.5 [1, 2] peaks"
    single = runs("20B", [traffic(20)], reps(1, two_peaks))
    o = outcome("D1c", [single])
    assert o.verdict == pv.UNKNOWN and o.items[0].value == "2 peaks (1 repetition)"
    o = outcome("D1c", [runs("solo2", [traffic(GAUSSIAN)], reps(2, two_peaks))])
    assert o.verdict == pv.UNKNOWN and o.measured == "no Type1 conditions in the campaigns"


def tight(rng):
    """d_p around 800 ns and almost nothing queued: the minimum transit is
    within a bin of d_p"""
    return dict(d_p=peaked(rng, [800]), d_iq=np.full(N, 1), d_oq=np.full(N, 1))


def test_minimum_transit_against_d_p(runs):
    # 300-600 ns in and 400-700 ns out besides d_p: the least transit is ~1.5 µs
    o = outcome("D1b", [runs("550B", [traffic()], reps(2, two_peaks))])
    assert o.verdict == pv.HOLDS and o.items[0].low > 600
    o = outcome("D1b", [runs("550B", [traffic()], reps(2, tight))])
    assert o.verdict == pv.FAILS and o.items[0].high < pc.MIN_TRANSIT_OFF[0]
    o = outcome("D1b", [runs("550B", [traffic()], [tight(np.random.default_rng(1)),
                                                    two_peaks(np.random.default_rng(2))])])
    assert o.verdict == pv.UNKNOWN


IDLE_GAP = 100_000  # between arrivals: above coffee.IDLE_GAP_NS, every packet finds it idle
LONG = 16_000       # packets of a run that shows coffee breaks: dozens of them


def coffee_every(k, short_every=None, n=LONG, at=None):
    """n packets IDLE_GAP apart, and a break of 120 µs (longer than the gap:
    a packet waits while nothing else is inside) every k packets, or at the
    positions `at`; short_every: also one of 5 µs (above the idle floor,
    under the gap) every that many. The packet arriving during a long break
    waits until it is over."""
    def make(rng):
        d_iq = rng.integers(300, 600, n)
        if short_every:
            d_iq[short_every // 2::short_every] = 5_000
        where = np.arange(k, n - 1, k) if at is None else at
        d_iq[where] = 120_000
        d_iq[where + 1] = 21_700  # 100 µs after, behind the long break's packet
        return dict(d_p=peaked(rng, [800], n=n), d_iq=d_iq, d_oq=rng.integers(400, 700, n),
                    gap_ns=IDLE_GAP)
    return make


def random_breaks(rng):
    """Breaks at random, 390 packets apart on average: no rhythm."""
    at = np.cumsum(rng.geometric(1 / 390, LONG // 300))
    return coffee_every(0, at=at[at < LONG - 2])(rng)


def test_coffee_breaks_judged_at_every_threshold_fixed_before_looking(runs):
    # 16000 idle packets support the idle floor at p99 and p99.9 (16 waits
    # above it), not p99.99: judged at one arrival gap (100 µs) and those
    # floors (p99 the least, 1 µs; p99.9 among the 0.25 % of long breaks)
    o = outcome("D3", [runs("550B", [traffic()], reps(2, coffee_every(390)))])
    assert o.verdict == pv.HOLDS
    assert [(i.where, i.value) for i in o.items] == [
        ("550B ≥ arrival gap 100 µs", "390 packets"), ("550B ≥ idle floor p99 1 µs", "390 packets"),
        ("550B ≥ idle floor p99.9 120 µs", "390 packets")]
    assert outcome("D3b", [runs("550B", [traffic()], reps(2, coffee_every(390)))]).verdict \
        == pv.HOLDS
    o = outcome("D3", [runs("550B", [traffic()], reps(2, coffee_every(60)))])
    assert o.verdict == pv.FAILS and o.items[0].median == 60
    # breaks of 5 µs every 150 packets besides: above the idle floor, they
    # make the break a frequent one there, not at one arrival gap
    o = outcome("D3", [runs("550B", [traffic()], reps(2, coffee_every(390, 150)))])
    assert o.verdict == pv.UNKNOWN
    assert o.items[0].verdict == pv.HOLDS and o.items[1].verdict == pv.FAILS
    assert o.measured.startswith("≥ arrival gap: holds; ≥ idle floor p99: does not hold")


def test_breaks_at_random_are_not_regular(runs):
    o = outcome("D3b", [runs("550B", [traffic()], reps(2, random_breaks))])
    assert o.verdict == pv.FAILS and o.items[0].low > pc.REGULAR


def test_few_breaks_fail_only_when_they_are_too_far_apart(runs):
    # 40 µs apart no packet finds the router idle: no idle floor; breaks of
    # 10 µs are under the gap, none counted: at least 2000 packets apart
    def short(rng):
        d_iq = rng.integers(300, 600, N)
        d_iq[390::390] = 10_000
        return dict(d_p=peaked(rng, [800]), d_iq=d_iq)
    o = outcome("D3", [runs("550B", [traffic()], reps(2, short))])
    assert o.verdict == pv.FAILS
    assert o.items[0].value == ("under 20 breaks in 2 of 2 runs: at least 2000 packets "
                                "apart on average")
    # 4000 packets with a break every 390: ten breaks, too few for a mode,
    # and their spacing may still be the paper's
    o = outcome("D3", [runs("550B", [traffic()], reps(2, coffee_every(390, n=N)))])
    assert o.verdict == pv.UNKNOWN
    assert o.items[0].value.startswith("under 20 breaks in 2 of 2 runs")


def test_queues_limited_unless_packets_pile_up(runs):
    o = outcome("D2", [runs("550B", [traffic()], reps(2, one_peak))])
    assert o.verdict == pv.HOLDS
    # the queue is empty 98.75 % of the time: judged over the time it is not
    assert o.items[0].value == "1 packets (busy 1.2 % of the time)"
    # each packet waits 1 ms at the input, 25 arrivals: 25 packets in the queue
    slow = runs("550B", [traffic()], reps(2, lambda rng: dict(d_p=peaked(rng, [800]),
                                                              d_iq=np.full(N, 1_000_000))))
    o = outcome("D2", [slow])
    assert o.verdict == pv.FAILS
    assert [(i.where, i.verdict) for i in o.items] == [("550B input queue", pv.FAILS),
                                                      ("550B output queue", pv.HOLDS)]


def with_tail(share, extra_ns, stages=("d_p",), d_p=800):
    """One mode (d_p ns d_p, 500 ns d_iq and d_oq); `share` of the packets
    `extra_ns` later at the stages given: the modes stay, the means move."""
    def make(rng):
        d = {"d_p": peaked(rng, [d_p]), "d_iq": peaked(rng, [500]), "d_oq": peaked(rng, [500])}
        for stage in stages:
            d[stage][rng.random(N) < share] += extra_ns
        return d
    return make


def test_modes_follow_mean_size_where_size_moves_them(runs):
    # Type1's d_p mode moves with size (800 ns at 20 B, 1600 at 550 B); its
    # d_iq and d_oq do not, so for them there is no size effect to follow
    small = runs("20B", [traffic(20)], reps(2, with_tail(0, 0)))
    type1 = runs("550B", [traffic()], reps(2, with_tail(0, 0, d_p=1600)))
    near = runs("gaussian", [traffic(GAUSSIAN, rate=16000)], reps(2, with_tail(0, 0, d_p=1600)))
    o = outcome("D4", [small, type1, near])
    assert o.verdict == pv.HOLDS
    assert [(i.where, i.verdict) for i in o.items] == [
        ("gaussian vs 550B d_p", pv.HOLDS), ("gaussian vs 550B d_iq", pv.UNKNOWN),
        ("gaussian vs 550B d_oq", pv.UNKNOWN)]
    assert o.items[0].value == ("+0 ns (mode 1625 ns, 50 % in its bin, 0 % beyond range / "
                                "mode 1625 ns, 50 % in its bin, 0 % beyond range)")
    assert o.items[1].value.startswith("Type1 modes do not differ across sizes (20B 525, 550B")
    assert o.measured.endswith("; 2 items without a size effect to follow")
    far = runs("gaussian", [traffic(GAUSSIAN, rate=16000)], reps(2, with_tail(0, 0)))
    o = outcome("D4", [small, type1, far])
    assert o.verdict == pv.FAILS and o.items[0].verdict == pv.FAILS
    # one Type1 size: nothing says what size does
    o = outcome("D4", [type1, near])
    assert o.verdict == pv.UNKNOWN and not o.measured.startswith("1 hold")


def test_means_differ_against_the_repetitions_spread(runs):
    type1 = runs("550B", [traffic()], reps(2, with_tail(0, 0)))
    tailed = runs("gaussian", [traffic(GAUSSIAN, rate=16000)],
                  reps(2, with_tail(0.3, 3000, ("d_p", "d_oq"))))
    o = outcome("D5", [type1, tailed])  # the means of d_p and d_oq moved, d_iq's did not
    assert [i.verdict for i in o.items] == [pv.FAILS, pv.HOLDS, pv.HOLDS]
    assert o.verdict == pv.HOLDS
    # one of three means moved: most did not
    d_p_only = runs("gaussian", [traffic(GAUSSIAN, rate=16000)], reps(2, with_tail(0.3, 3000)))
    assert outcome("D5", [type1, d_p_only]).verdict == pv.FAILS


def test_an_overloaded_or_lossy_condition_is_left_out_by_name(runs):
    type1 = runs("550B", [traffic()], reps(2, with_tail(0, 0)))
    # 10 ms at the input, 40 µs apart: 250 packets queued
    piled = runs("gaussian", [traffic(GAUSSIAN, rate=16000)],
                 reps(2, lambda rng: dict(with_tail(0, 0)(rng), d_iq=np.full(N, 10_000_000))))
    o = outcome("D5", [type1, piled])
    assert o.verdict == pv.UNKNOWN and not o.items
    assert o.excluded == [("gaussian", "input queue p99 250 packets")]
    lossy = runs("gaussian", [traffic(GAUSSIAN, rate=16000)], reps(2, with_tail(0.3, 3000)),
                 [{"sent": 1000, "received": 900}] * 2)
    o = outcome("D5", [type1, lossy])
    assert o.excluded == [("gaussian", "lost 10 % of the packets sent")]
    # the queue claims read it all the same: there it fails
    piled1 = runs("550B", [traffic()], reps(
        2, lambda rng: dict(one_peak(rng), d_iq=np.full(N, 10_000_000))))
    assert outcome("D2", [piled1]).verdict == pv.FAILS


def test_a_type2_run_is_compared_with_the_type1_size_nearest_its_mean(runs):
    small, mid = (runs(n, [traffic(s)], reps(2, one_peak)) for n, s in (("20B", 20), ("550B", 550)))
    gauss = runs("gaussian", [traffic(GAUSSIAN)], reps(2, one_peak))
    assert pf.type1_nearest_size([small, mid, gauss], gauss.senders[0]) is mid
    pareto = traffic({"dist": "pareto", "shape": 12, "scale": 550})
    assert pareto.mean_size == 600 and pareto.type == "Type2"


def test_t0_is_the_arrival_when_recorded(runs):
    c = runs("550B", [traffic()], reps(2, lambda rng: dict(d_p=peaked(rng, [800]),
                                                           d_iq=np.full(N, 500),
                                                           d_rxq=np.full(N, 2000))))
    assert [r.arrival for r in c.runs] == ["t0", "t0"]
    # the input queue starts at t0: 2000 + 500 ns; without the wake-up, from t1
    assert c.runs[0].delay(pf.ALL, "d_iq").mode_ns == 2525
    assert c.runs[0].delay(pf.ALL, pf.D_IQ_T1).mode_ns == 525
    assert outcome("D2", [c]).arrival == "t0"
    plain = runs("1400B", [traffic(1400)], reps(2, one_peak))
    assert pf.arrivals([c, plain]) == "t0 (2 runs), t1 (2 runs)"
    # each claim names the arrival of the runs it read
    t1 = runs(*table("s1-550B_s2-550B", "Table I", reps(2, competing())))
    assert outcome("D2", [c, t1]).arrival == "t0"
    assert outcome("E3", [c, t1]).arrival == "t1"
    assert outcome("E1", [c, t1]).arrival == "t0 (2 runs), t1 (2 runs)"


# ---- Sec. III and V ----

def pairs_queued(rng):
    """Every other packet waits 45 µs at the input, the next one 6 µs: two
    in the queue at each even departure, and both arrived since the last."""
    d_iq = np.where(np.arange(N) % 2, 6_000, 45_000)
    return dict(d_p=peaked(rng, [800]), d_iq=d_iq)


def triples_queued(rng):
    """Every third packet waits 85 µs, the next two 46 and 7 µs: at the
    second departure of a triple two wait, none arrived since the first."""
    d_iq = np.choose(np.arange(N) % 3, [85_000, 46_000, 7_000])
    return dict(d_p=peaked(rng, [800]), d_iq=d_iq)


def test_the_papers_queue_estimate_against_the_exact_occupancy(runs):
    o = outcome("III", [runs("550B", [traffic()], reps(2, pairs_queued))])
    inq = o.items[0]
    assert inq.where == "550B input queue" and inq.verdict == pv.HOLDS and inq.median == 0
    assert o.items[1].value == "never held two packets: nothing to estimate there"
    o = outcome("III", [runs("550B", [traffic()], [pairs_queued(np.random.default_rng(1)),
                                                    one_peak(np.random.default_rng(2))])])
    assert o.items[0].value == "never held two packets in 1 of 2 runs: nothing to estimate there"
    o = outcome("III", [runs("550B", [traffic()], reps(2, triples_queued))])
    # departures with a queue: the first of a triple (3 waiting, 3 arrived:
    # right) and the second (2 waiting, none arrived: off by 2)
    assert o.items[0].verdict == pv.FAILS and o.items[0].median == pytest.approx(1, abs=0.01)


def test_repetitions_concur_unless_their_means_move(runs):
    same = runs("550B", [traffic()], reps(3, one_peak))
    o = outcome("V", [same])
    assert o.verdict == pv.HOLDS and len(o.items) == 4
    moved = runs("550B", [traffic()], [with_tail(0, 0, d_p=p)(np.random.default_rng(p))
                                       for p in (800, 1600, 2400)])
    o = outcome("V", [moved])
    assert [i.verdict for i in o.items if i.where.endswith(" d_p")] == [pv.FAILS]
    two = runs("550B", [traffic()], [with_tail(0, 0, d_p=p)(np.random.default_rng(p))
                                     for p in (800, 840)])
    o = outcome("V", [two])
    assert [i.verdict for i in o.items if i.where.endswith(" d_p")] == [pv.UNKNOWN]


# ---- Sec. IV-E ----

def competing(extra_ns=0, share=0.0, breaks_every=None):
    """sender1 and sender2 alternate, 800 ns d_p each; `share` of the
    packets get extra_ns more d_p (and so more transit); breaks_every: a
    run of LONG idle packets with coffee breaks that often."""
    def make(rng):
        d = coffee_every(breaks_every)(rng) if breaks_every else with_tail(share, extra_ns)(rng)
        return dict(d, tos=np.where(np.arange(len(d["d_p"])) % 2, 5, 4))
    return make


def table(name, set_name, reps_):
    s2 = {"Table I": traffic(550, rate=6000, tos=5),
          "Table II": traffic(GAUSSIAN, rate=9000, tos=5),
          "Table III": traffic(550, "pareto", 6000, tos=5)}[set_name]
    return name, [traffic(550, rate=9800), s2], reps_


@pytest.fixture
def solo(runs):
    """Each sender's traffic alone: Type1 550 B, Type2 Gaussian, Type3 Pareto gaps."""
    return [runs("550B", [traffic()], reps(2, one_peak)),
            runs("gaussian", [traffic(GAUSSIAN, rate=16000)], reps(2, one_peak)),
            runs("pareto-550B", [traffic(550, "pareto", 11000)], reps(2, one_peak))]


def test_competition_raises_delay_keeps_modes_and_spreads_d_p(runs, solo):
    t1 = runs(*table("s1-550B_s2-550B", "Table I", reps(2, competing(2000, 0.3))))
    assert t1.set == "Table I"
    for claim in ("E1", "E2", "E3", "E4"):
        assert outcome(claim, solo + [t1]).verdict == pv.HOLDS, claim
    o = outcome("E2", solo + [t1])
    assert len(o.items) == 6  # 2 senders x 3 stages
    assert o.items[0].where == "s1-550B_s2-550B sender1 d_iq vs 550B"
    assert outcome("E4", solo + [t1]).measured.endswith("both rise for 2 of 2 senders")


def test_without_a_change_competition_claims_do_not_hold(runs, solo):
    t1 = runs(*table("s1-550B_s2-550B", "Table I", reps(2, competing())))
    for claim in ("E1", "E4"):
        assert outcome(claim, solo + [t1]).verdict == pv.FAILS, claim
    moved = runs(*table("s1-550B_s2-550B", "Table I",
                        reps(2, lambda rng: dict(competing()(rng),
                                                 d_p=peaked(rng, [1600]),
                                                 d_iq=np.full(N, 400)))))
    assert outcome("E2", solo + [moved]).verdict == pv.FAILS


def test_more_coffee_breaks_with_two_senders(runs):
    alone = runs("550B", [traffic()], reps(2, coffee_every(390)))
    more = runs(*table("s1-550B_s2-550B", "Table I", reps(2, competing(breaks_every=100))))
    o = outcome("E4c", [alone, more])
    assert o.verdict == pv.HOLDS and o.items[0].median == pytest.approx(3.9, rel=0.05)
    same = runs(*table("s1-550B_s2-550B", "Table I", reps(2, competing(breaks_every=390))))
    assert outcome("E4c", [alone, same]).verdict == pv.FAILS


def test_competition_cannot_tell_without_the_solo_runs(runs, solo):
    t2 = runs(*table("s1-550B_s2-gaussian", "Table II", reps(2, competing(2000, 0.3))))
    o = outcome("E2", [solo[0], t2])  # no Gaussian sender alone
    assert o.verdict == pv.UNKNOWN
    assert any("no working solo run of normal size" in i.value for i in o.items)
    assert outcome("E1", [t2]).verdict == pv.UNKNOWN


def test_d_p_grows_most_in_table3_needs_a_margin(runs, solo):
    def sets(growth):
        return [runs(*table(f"{name}-x", name, reps(2, competing(g, 0.3))))
                for name, g in zip(pf.COMPETITIVE_SETS, growth)]
    assert outcome("E4b", solo + sets([1000, 2000, 4000])).verdict == pv.HOLDS
    assert outcome("E4b", solo + sets([4000, 2000, 1000])).verdict == pv.FAILS
    o = outcome("E4b", solo + sets([1000, 2000, 4000])[::2])
    assert o.verdict == pv.UNKNOWN and o.measured == "no Table II beside its solo runs"


# ---- `hopscope paper` end to end ----

SCENARIO = """
[testbed]
mode = "rps"
[senders.sender1]
generator = "ditg"
tos = 4
size = 550
rate = 14000
count = 4000
"""
SENDER2 = """
[senders.sender2]
generator = "ditg"
tos = 5
size = 550
rate = 6000
count = 4000
cpu = "receiver"
"""
GAUSSIAN_TOML = '{ dist = "normal", mean = 600, std = 200 }'
PARETO_GAPS = '{ dist = "pareto", shape = 1.5 }'


SENT = 3960  # of each run, the generators' count: 99 % of one sender's 4000 asked


def campaign(root, name, conditions, sender2=False):
    """A campaign folder as `hopscope campaign` leaves it. conditions: (name,
    its senders' TOML, plants: one finished run each)."""
    text = SCENARIO + (SENDER2 if sender2 else "") + "".join(
        f'\n[[conditions]]\nname = "{n}"\n{senders}\n' for n, senders, _ in conditions)
    parsed = {c.name: c for c in parse_scenario(text, "x.toml").conditions()}
    d = root / name
    d.mkdir()
    (d / "campaign.json").write_text(json.dumps({"format": "hopscope-campaign/1"}))
    for cond, _, plants in conditions:
        for k, kw in enumerate(plants, 1):
            run = d / "runs" / cond / f"rep{k}"
            run.mkdir(parents=True)
            plant(run / "run.hsr", seed=k, **kw)
            (run / "metadata.json").write_text(json.dumps({"campaign": {
                "finished": True, "condition_name": cond, "repetition": k,
                "condition": parsed[cond].to_dict(),
                "counts": {"sent": SENT, "received": SENT}}}))
    return d


def paper(*args):
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"))
    return subprocess.run([sys.executable, "-m", "hopscope", "paper", *map(str, args)],
                          capture_output=True, text=True, env=env)


def breaks_and_peaks(rng):
    return dict(coffee_every(390)(rng), d_p=peaked(rng, [800, 1500], [0.6, 0.4], n=LONG))


@pytest.fixture(scope="module")
def campaigns(tmp_path_factory):
    """The six campaigns of traffic/paper/, a condition or three each: every
    figure has its condition."""
    root = tmp_path_factory.mktemp("campaigns")
    tail = competing(4000, 0.3)  # above the solo runs' transit, their breaks' 0.4 µs included
    return (
        campaign(root, "type1", [(f"{size}B", f"senders.sender1 = {{ size = {size}, "
                                  f"rate = {rate} }}", reps(2, breaks_and_peaks))
                                 for size, rate in ((20, 16000), (550, 14000), (1400, 8500))]),
        campaign(root, "type2", [("gaussian", f"senders.sender1 = {{ size = {GAUSSIAN_TOML} }}",
                                   reps(2, one_peak))]),
        campaign(root, "type3", [("pareto-550B", f"senders.sender1 = {{ gaps = {PARETO_GAPS} }}",
                                  reps(2, one_peak))]),
        campaign(root, "table1", [("s1-550B_s2-550B", "senders.sender1 = { rate = 9800 }",
                                   reps(2, tail))], sender2=True),
        campaign(root, "table2", [("s1-550B_s2-gaussian", "senders.sender1 = { rate = 7000 }\n"
                                   f"senders.sender2 = {{ size = {GAUSSIAN_TOML}, rate = 9000 }}",
                                   reps(2, tail))], sender2=True),
        campaign(root, "table3", [("s1-550B_s2-pareto", "senders.sender1 = { rate = 9800 }\n"
                                   f"senders.sender2 = {{ gaps = {PARETO_GAPS} }}",
                                   reps(2, tail))], sender2=True))


def test_paper_writes_markdown_pdf_and_figures(campaigns, tmp_path):
    out = tmp_path / "report"
    r = paper(*campaigns, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    md = (out / "paper.md").read_text()
    for claim in pc.CLAIMS:
        assert f"**{claim.id}**" in md and claim.tolerance.replace("|", "\\|") in md
    # which set each condition is comes from its senders, not the folder's name
    # sent: 3960 of 4000 asked alone, of 8000 with two senders
    for line in ("| Type1 | 550B | 550 B, constant gaps, 14000 pps | 2 | t1 | 99.0% | — / 0.45 |",
                 "| Type2 | gaussian | normal size, constant gaps, 14000 pps | 2 | t1 | 99.0% "
                 "| — / 0.50 |",
                 "| Table III | s1-550B_s2-pareto | 550 B, constant gaps, 9800 pps; "
                 "550 B, pareto gaps, 6000 pps | 2 | t1 | 49.5% | — / 0.50 |"):
        assert line in md
    # the verdicts the plants decide, as printed and in the Markdown's table
    assert re.search(r"^D1c\s+holds ", r.stdout, re.M)
    assert re.search(r"^D3\s+holds ", r.stdout, re.M)
    assert re.search(r"^E1\s+holds ", r.stdout, re.M)
    assert re.search(r"^\| \*\*D1c\*\* .* \| \*\*holds\*\* \|$", md, re.M)
    # the JSON holds what the Markdown says, as numbers
    js = json.loads((out / "paper.json").read_text())
    assert [c["id"] for c in js["claims"]] == [c.id for c in pc.CLAIMS]
    for c in js["claims"]:
        assert f"| **{c['id']}** " in md and f"| **{c['verdict']}** |" in md
        for i in c["items"]:
            cells = (i["where"], i["value"], i["verdict"])
            assert "| " + " | ".join(x.replace("|", "\\|") for x in cells) + " |" in md
    (lossless,) = [c for c in js["claims"] if c["id"] == "C"]
    assert lossless["verdict"] == "holds" and lossless["items"][0]["statistic"] == 0
    (table3,) = [c for c in js["conditions"] if c["name"] == "s1-550B_s2-pareto"]
    assert table3["sent_of_asked"] == [0.495, 0.495] and table3["not_working"] is None
    for number in range(4, 13):
        assert (out / f"fig{number:02d}.png").exists()
        assert f"![Fig. {number}: " in md
    info = subprocess.run(["pdfinfo", out / "paper.pdf"], capture_output=True, text=True,
                          check=True).stdout
    pages = int(re.search(r"^Pages:\s+(\d+)", info, re.M).group(1))
    text = subprocess.run(["pdftotext", out / "paper.pdf", "-"], capture_output=True,
                          text=True, check=True).stdout
    assert "D3 (IV-D 3))" in text and "tolerance:" in text
    assert re.findall(r"Fig\. (\d+) redrawn", text) == [str(n) for n in range(4, 13)]
    assert pages == text.count("hopscope paper — the claims") + 9
    # no page of the claims is its title alone
    assert all(len(page.strip().splitlines()) > 1 for page in text.split("\f")
               if page.startswith("hopscope paper — the claims"))


def test_a_figure_without_its_condition_says_so(campaigns, tmp_path):
    r = paper(campaigns[1], "-o", tmp_path)  # Type2 alone: Fig. 8 only
    assert r.returncode == 0, r.stderr
    md = (tmp_path / "paper.md").read_text()
    assert "![Fig. 8: " in md
    assert "Fig. 5 (Type1, 550 B payload): no such condition in the campaigns." in md
    assert sorted(p.name for p in tmp_path.glob("fig*.png")) == ["fig08.png"]


def test_usage_errors_exit_2(campaigns, tmp_path):
    r = paper(campaigns[0])
    assert r.returncode == 2 and "-o/--output" in r.stderr
    r = paper("-o", tmp_path / "x")
    assert r.returncode == 2 and "CAMPAIGN_DIR" in r.stderr
    (tmp_path / "file").write_text("")
    r = paper(campaigns[0], "-o", tmp_path / "file")
    assert r.returncode == 2 and "is not a folder" in r.stderr


@pytest.mark.parametrize("damage", ["missing", "not a campaign", "garbled metadata",
                                    "garbled record", "no runs"])
def test_unusable_campaign_exits_1_with_a_message(campaigns, tmp_path, damage):
    d = tmp_path / "c"
    if damage != "missing":
        subprocess.run(["cp", "-a", campaigns[0], d], check=True)
    meta = d / "runs" / "550B" / "rep1" / "metadata.json"
    if damage == "not a campaign":
        (d / "campaign.json").unlink()
    elif damage == "garbled metadata":
        meta.write_text('{"campaign": {"finished": tr')
    elif damage == "garbled record":
        (meta.parent / "run.hsr").write_bytes(b"not a record file")
    elif damage == "no runs":
        subprocess.run(["rm", "-r", d / "runs"], check=True)
    r = paper(d, "-o", tmp_path / "out")
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr
    want = {"missing": "no such folder", "not a campaign": "not a campaign folder",
            "garbled metadata": "metadata.json: not readable",
            "garbled record": "run.hsr", "no runs": "no finished run"}[damage]
    assert want in r.stderr, r.stderr


def test_a_solo_d_p_without_spread_gives_no_ratio_not_a_crash(runs):
    flat = runs("550B", [traffic()], reps(2, lambda rng: dict(one_peak(rng),
                                                              d_p=np.full(N, 800))))
    t1 = runs(*table("s1-550B_s2-550B", "Table I", reps(2, competing(2000, 0.3))))
    o = outcome("E4", [flat, t1])
    spreads = [i for i in o.items if " d_p spread " in i.where]
    assert spreads and all(i.value == "no value" and i.verdict == pv.UNKNOWN for i in spreads)


def test_a_sender_is_compared_with_runs_of_its_own_generator(runs):
    """Type1 runs of iperf3 and of D-ITG: a D-ITG Gaussian run is judged
    against D-ITG's 550 B, and its size effect among D-ITG's sizes."""
    def by(generator, size=550, **kw):
        return pf.Traffic(**{**vars(traffic(size, **kw)), "generator": generator})
    small = runs("20B", [by("iperf3", 20)], reps(2, with_tail(0, 0)))
    iperf = runs("550B", [by("iperf3")], reps(2, with_tail(0, 0, d_p=1600)))
    ditg = runs("550B-ditg", [by("ditg")], reps(2, with_tail(0, 0)))
    gauss = runs("gaussian", [by("ditg", GAUSSIAN, rate=16000)], reps(2, with_tail(0, 0)))
    assert pf.type1_nearest_size([small, iperf, ditg, gauss], gauss.senders[0]) is ditg
    assert pf.solo_like([iperf, ditg], by("ditg", rate=6000, tos=5)) is ditg
    assert pf.solo_like([iperf, ditg], by("iperf3", rate=9800)) is iperf
    # D-ITG made one Type1 size: no size effect to follow, though iperf3's sizes differ
    o = outcome("D4", [small, iperf, ditg, gauss])
    assert o.verdict == pv.UNKNOWN and not o.measured.startswith("1 hold")
    assert all(i.where.startswith("gaussian vs 550B-ditg ") for i in o.items)


def test_mutual_interference_is_waiting_behind_the_other_sender(runs):
    # alternating senders 40 µs apart: each packet waits 0.5 µs, never
    # behind another; then every packet waits 50 µs, behind the one before
    # it, always the other sender's
    apart = runs(*table("s1-550B_s2-550B", "Table I", reps(2, competing())))
    o = outcome("E1b", [apart])
    assert o.verdict == pv.FAILS and [i.value for i in o.items] == [
        "0.0% behind the other sender's"] * 2
    queued = runs(*table("s1-550B_s2-550B", "Table I", reps(
        2, lambda rng: dict(competing()(rng), d_iq=np.full(N, 50_000)))))
    o = outcome("E1b", [queued])
    assert o.verdict == pv.HOLDS and all(i.median > 0.99 for i in o.items)
    # a sender2 packet waiting 50 µs, then two of sender1: the first of
    # them finds it still there, the second does not; sender2's own find
    # nothing ahead
    pairs = runs(*table("s1-550B_s2-550B", "Table I", reps(2, lambda rng: dict(
        competing()(rng), tos=np.where(np.arange(N) % 3 == 0, 5, 4),
        d_iq=np.where(np.arange(N) % 3 == 0, 50_000, 300)))))
    (o1, o2) = outcome("E1b", [pairs]).items
    assert o1.median == pytest.approx(0.5, abs=0.01) and o2.median == 0
