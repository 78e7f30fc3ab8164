#!/usr/bin/env python3
"""Additivity and the wire: every record's stages in the kernel's order and
its delays adding up; D-ITG's one-way delay against the router's transit.

(i) With every optional stage (--stages t0,tcin,fwd,tceg), each complete
record's instants must be in order, t0 ≤ t1 ≤ t_tcin ≤ t2 ≤ t_fwd ≤ t3 ≤
t_tceg ≤ t4, each delay column hopscope.load gives must equal its stages'
difference, and the parts must add up to their parent exactly: d_iq + d_p
+ d_oq = transit = t4 − t1, d_opath + d_qdisc = d_oq. Violations must be 0.
(ii) D-ITG logs each packet's send and receive time (µs, one host clock:
the namespaces share it), so its one-way delay minus the router's transit
(t4 − t0, t4 − t1) is the part outside the router: the sender's stack, the
veths, the receiver's stack. Its distribution, and the packets whose order
is impossible beyond the logs' resolution (transit longer than the one-way
delay, t0 before the send, t4 after the receive). Conditions: constant
rates, a Poisson stream, and a TBF on the router's output that queues.
Beside them, the same on wrong input (t2 and t3 swapped; each record
joined to the next packet's log line), to show what they catch.
tests/helpers/wire.py holds the methods; evaluation/accuracy.md ("4. Additivity and
the wire") says what they mean. Rounds repeat every condition; numbers
are medians over rounds, counts sums.

    evaluation/bench/additivity.py [--rounds 3] [--nice -20]
Writes evaluation/results/additivity.json and prints tables. Needs root, `make`
and D-ITG (ITGSend, ITGRecv, ITGDec).
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
STAGES = "t0,tcin,fwd,tceg"
# name: ITGSend gap options, packets, testbed shaping (tbf at 20 Mbit/s passes
# 10330 pps of 200 B: 12000 pps keeps its queue full)
CONDITIONS = {"2k": (["-C", "2000"], 4000, None), "20k": (["-C", "20000"], 20000, None),
              "poisson": (["-E", "10000"], 10000, None),
              "tbf": (["-C", "12000"], 12000, "tbf:20mbit:30kb")}
COUNTS = {"sent", "recorded", "complete", "received", "lost", "not_received", "records",
          "missing", "order", "derived", "sums", "violations", "packets", "transit_longer",
          "before_send", "after_receive", "impossible", "wrong"}


def one(tb, name, nice, tmp):
    gaps, count, _ = CONDITIONS[name]
    rec = Recorder(os.path.join(tmp, "additivity.hsr"), "-q", "--stages", STAGES, prefix=PREFIX)
    try:
        load = benchlib.loadavg()[0]
        table = wire.ditg_stream(tb, tmp, "additivity", gaps, count, SIZE, nice=nice)
        rec.stop()
    finally:
        rec.kill()
    df = hopscope.load(rec.out)
    t = wire.join(df, table, tmp)
    return {"loadavg1": load, **wire.counts(t), "additivity": wire.additivity(df),
            "wire_t0": wire.wire(t, "t0"), "wire_t1": wire.wire(t, "t1"),
            "wrong": {"t2_t3_swapped": wire.additivity(wire.swapped(df))["violations"],
                      "misjoined": {k: v for k, v in wire.wire(wire.misjoined(t)).items()
                                    if k in ("packets", "impossible")}}}


def report(res):
    print("\n(i) complete records: stages out of order, delay columns ≠ their stages' "
          "difference, parts ≠ parent")
    print(f"{'cond.':>8} {'records':>8} {'missing':>8} {'order':>6} {'derived':>8} {'sums':>5} "
          f"{'violations':>10} {'t2↔t3 swapped':>14}")
    for name, s in res["summary"].items():
        a = s["additivity"]
        print(f"{name:>8} {a['records']:8d} {sum(a['missing'].values()):8d} "
              f"{sum(a['order'].values()):6d} {sum(a['derived'].values()):8d} "
              f"{sum(a['sums'].values()):5d} {a['violations']:10d} "
              f"{s['wrong']['t2_t3_swapped']:14d}")
    print("\n(ii) D-ITG's one-way delay minus the router's transit (µs: min, median, p99); "
          "sender: t0 (t1) − tx, receiver: rx − t4 (median, p99);\nlost: no complete record; "
          "not rx: complete, not in ITGRecv's log; impossible beyond 1 µs: transit longer / t0 "
          "before send / t4 after receive")
    print(f"{'cond.':>8} {'span':>6} {'packets':>8} {'lost':>5} {'not rx':>6} {'min':>7} "
          f"{'median':>7} {'p99':>8} {'sender':>7} {'p99':>6} {'receiver':>8} {'p99':>7} "
          f"{'longer':>6} {'before':>6} {'after':>6} {'misjoined':>13}")
    for name, s in res["summary"].items():
        mis = "{impossible} of {packets}".format(**s["wrong"]["misjoined"])
        for span in ("t0", "t1"):
            w = s[f"wire_{span}"]
            o = w["outside"]
            print(f"{name:>8} {'t4−' + span:>6} {w['packets']:8d} {s['lost']:5d} "
                  f"{s['not_received']:6d} {fmt(o['min_us'], '7.2f')} "
                  f"{fmt(o['median_us'], '7.2f')} {fmt(o['p99_us'], '8.2f')} "
                  f"{fmt(w['sender']['median_us'], '7.2f')} {fmt(w['sender']['p99_us'], '6.2f')} "
                  f"{fmt(w['receiver']['median_us'], '8.2f')} "
                  f"{fmt(w['receiver']['p99_us'], '7.2f')} {w['transit_longer']:6d} "
                  f"{w['before_send']:6d} {w['after_receive']:6d} "
                  f"{mis if span == 't0' else '':>13}")


def main():
    ap = benchlib.parser("additivity", __doc__, rounds=3)
    ap.add_argument("--conditions", default=",".join(CONDITIONS),
                    help=f"comma-separated, of {', '.join(CONDITIONS)}")
    benchlib.add_nice(ap)
    a = ap.parse_args()
    names = a.conditions.split(",")
    if a.rounds < 1 or not set(names) <= set(CONDITIONS):
        ap.error(f"--rounds ≥ 1; --conditions of {', '.join(CONDITIONS)}")
    nice = benchlib.nice(ap, a.nice)
    benchlib.preflight("additivity", ("ITGSend", "ITGRecv", "ITGDec"))
    res = {"machine": benchlib.machine(), "rounds": a.rounds, "size": SIZE, "stages": STAGES,
           "nice": nice, "testbed": "rps, --shield router",
           "conditions": {n: CONDITIONS[n] for n in names}, "resolution_ns": wire.RES_NS,
           "runs": {n: [] for n in names}}
    tb = Testbed(PREFIX)

    def rounds():
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(a.rounds):
                shaped = None
                for name in benchlib.rotated(names, i):
                    shape = CONDITIONS[name][2]
                    if shaped != (shape or ""):
                        tb.down()
                        tb.up(*(["--shape", shape] if shape else []))
                        shaped = shape or ""
                    r = one(tb, name, nice, tmp)
                    res["runs"][name].append(r)
                    print(f"round {i + 1} {name}: {r['sent']} sent, {r['complete']} complete, "
                          f"violations {r['additivity']['violations']}, impossible "
                          f"{r['wire_t0']['impossible']}, outside median "
                          f"{fmt(r['wire_t0']['outside']['median_us'], '.2f')} µs, load "
                          f"{r['loadavg1']}", flush=True)

    benchlib.measure("additivity", rounds, tb.down)
    res["machine"]["loadavg_end"] = benchlib.loadavg()
    res["summary"] = {k: wire.summarise(v, COUNTS) for k, v in res["runs"].items()}
    benchlib.finish(res, a.output, report)


if __name__ == "__main__":
    main()
