#!/usr/bin/env python3
"""Generator jitter: D-ITG constant-rate UDP streams through the router,
each packet's inter-arrival at t0 and t1 against the configured gap.

The test of the classic capture-accuracy paper: a constant-rate stream
(ITGSend -C, 200 B payload, from sender1) at gaps from 25 µs to 5 ms, the
gaps seen by the probe against the configured one: mean error, standard
deviation, loss (D-ITG's log against the records). D-ITG logs each
packet's send time, so the generator's own jitter is measured too (its
inter-departures) and taken out: `path` is each inter-arrival minus the
same pair's inter-departure, what the sender's stack and the probes add.
ITGSend busy-waits its gaps on the senders' CPU, which every other task
shares under the shield: it runs in its own session at autogroup nice -20
(--nice), else it gets the CPU in turns with them.
Beside them the paper's figures for its best probe, and the goal of issue
13: σ ≤ 1 µs at gaps ≥ 500 µs. tests/helpers/wire.py holds the methods;
evaluation/accuracy.md ("3. Generator jitter") says what they mean.
Rounds repeat every gap (order rotated); a gap's numbers are the median
over rounds, its counts the sums.

    evaluation/bench/generator_jitter.py [--rounds 3] [--gaps 24.96,50,100,250,524,1024,5024]
                           [--seconds 2] [--min-packets 1000] [--max-packets 20000]
                           [--nice -20] [--mode rps]
Writes evaluation/results/generator_jitter.json and prints a table. Needs root,
`make` and D-ITG (ITGSend, ITGRecv, ITGDec).
"""
import os
import tempfile

import benchlib
import hopscope
from benchlib import fmt
import wire
from hopscope.traffic.testbed import Testbed
from testlib import Recorder

PREFIX = os.environ.get("HS_PREFIX", "hst-jt-")
SIZE = 200
GOAL_US, GOAL_FROM_US = 1.0, 500  # the goal: σ ≤ 1 µs at gaps ≥ 500 µs (evaluation/accuracy.md)
# the paper's best probe: σ of the inter-arrivals, µs
PAPER = {24.96: "17.46", 524: "0.87–1.02", 1024: "0.87–1.02", 5024: "0.87–1.02"}
COUNTS = {"sent", "recorded", "complete", "received", "lost", "not_received", "n"}


def one_gap(tb, gap_us, count, nice, tmp):
    rate = 1e6 / gap_us
    rec = Recorder(os.path.join(tmp, "jitter.hsr"), "-q", "--stages", "t0", prefix=PREFIX)
    try:
        load = benchlib.loadavg()[0]
        table = wire.ditg_stream(tb, tmp, "jitter", ["-C", f"{rate:.10g}"], count, SIZE,
                                 nice=nice)
        rec.stop()
    finally:
        rec.kill()
    t = wire.join(hopscope.load(rec.out), table, tmp)
    done = t[t["status"] == "complete"]
    # the wait between t0 and t1: in rps mode, the router CPU's wake-up
    d_rxq = wire.quantiles((done["t1"] - done["t0"]).dropna().astype(float))
    return {"gap_us": gap_us, "rate_pps": rate, "loadavg1": load, **wire.counts(t),
            **wire.jitter(t, gap_us * 1e3), "d_rxq": d_rxq}


def packets(gap_us, a):
    return int(min(a.max_packets, max(a.min_packets, a.seconds * 1e6 / gap_us)))


def report(res):
    print("\ninter-arrival minus configured gap (µs): mean and σ; tx: D-ITG's "
          "inter-departures;\nt0−tx, t1−tx: inter-arrival minus the same pair's "
          "inter-departure (σ, robust σ = 1.4826·MAD,\np99 |·|); t1−t0: minus the same pair's "
          "inter-arrival at t0")
    print(f"{'gap':>7} {'sent':>6} {'lost':>4} {'mean t0':>8} {'mean t1':>8} {'σ tx':>7} "
          f"{'σ t0':>7} {'σ t1':>7} {'σ t0−tx':>8} {'σ t1−tx':>8} {'rσ t1−tx':>8} "
          f"{'σ t1−t0':>8} {'p99 t1−tx':>9} {'d_rxq med':>9} {'paper σ':>9}")
    for key, s in res["summary"].items():
        g = float(key)
        print(f"{g:7.2f} {s['sent']:6d} {s['lost']:4d} {fmt(s['t0']['mean_us'], '8.3f')} "
              f"{fmt(s['t1']['mean_us'], '8.3f')} {fmt(s['sender']['sd_us'], '7.2f')} "
              f"{fmt(s['t0']['sd_us'], '7.2f')} {fmt(s['t1']['sd_us'], '7.2f')} "
              f"{fmt(s['t0']['path']['sd_us'], '8.2f')} {fmt(s['t1']['path']['sd_us'], '8.2f')} "
              f"{fmt(s['t1']['path']['robust_sd_us'], '8.2f')} "
              f"{fmt(s['t1']['from_first']['sd_us'], '8.2f')} "
              f"{fmt(s['t1']['path']['p99_abs_us'], '9.2f')} "
              f"{fmt(s['d_rxq']['median_us'], '9.2f')} {PAPER.get(g, '-'):>9}")
    for what, path in (("t1 σ", ("t1", "sd_us")), ("t1−tx σ", ("t1", "path", "sd_us"))):
        vals = [pick(s, path) for key, s in res["summary"].items() if float(key) >= GOAL_FROM_US]
        vals = [x for x in vals if x is not None]
        if vals:
            print(f"goal σ ≤ {GOAL_US} µs at gaps ≥ {GOAL_FROM_US} µs, {what}: worst "
                  f"{max(vals):.2f} µs: {'met' if max(vals) <= GOAL_US else 'NOT met'}")


def pick(d, path):
    for k in path:
        d = d[k]
    return d


def main():
    ap = benchlib.parser("generator_jitter", __doc__, rounds=3)
    ap.add_argument("--gaps", default="24.96,50,100,250,524,1024,5024", help="µs, comma-separated")
    ap.add_argument("--seconds", type=float, default=2.0, help="each stream's length ...")
    ap.add_argument("--min-packets", type=int, default=1000, help="... but at least these")
    ap.add_argument("--max-packets", type=int, default=20000, help="... and at most these")
    benchlib.add_nice(ap)
    ap.add_argument("--mode", default="rps", choices=("rps", "inline", "napi"),
                    help="the testbed's (testbed.sh up --mode; default rps)")
    a = ap.parse_args()
    try:
        gaps = [float(x) for x in a.gaps.split(",")]
    except ValueError:
        ap.error(f"--gaps {a.gaps!r}: expected µs, comma-separated (25,524)")
    if a.rounds < 1 or min(gaps) <= 0 or a.min_packets < 2 or a.max_packets < a.min_packets:
        ap.error("--rounds ≥ 1, gaps > 0, 2 ≤ --min-packets ≤ --max-packets")
    nice = benchlib.nice(ap, a.nice)
    benchlib.preflight("generator_jitter", ("ITGSend", "ITGRecv", "ITGDec"))
    res = {"machine": benchlib.machine(), "rounds": a.rounds, "size": SIZE,
           "testbed": f"{a.mode}, --shield router", "stages": "t0", "nice": nice,
           "paper_sd_us": PAPER,
           "goal": {"sd_us": GOAL_US, "from_gap_us": GOAL_FROM_US},
           "runs": {str(g): [] for g in gaps}}
    tb = Testbed(PREFIX)

    def rounds():
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(a.rounds):
                tb.down()
                tb.up("--mode", a.mode)
                for g in benchlib.rotated(gaps, i):
                    r = one_gap(tb, g, packets(g, a), nice, tmp)
                    res["runs"][str(g)].append(r)
                    print(f"round {i + 1} gap {g} µs: {r['sent']} sent, {r['lost']} lost, σ tx "
                          f"{fmt(r['sender']['sd_us'], '.2f')} t1 {fmt(r['t1']['sd_us'], '.2f')} "
                          f"t1−tx {fmt(r['t1']['path']['sd_us'], '.2f')} µs, load "
                          f"{r['loadavg1']}", flush=True)

    benchlib.measure("generator_jitter", rounds, tb.down)
    res["machine"]["loadavg_end"] = benchlib.loadavg()
    res["summary"] = {k: wire.summarise(v, COUNTS) for k, v in res["runs"].items()}
    benchlib.finish(res, a.output, report)


if __name__ == "__main__":
    main()
