#!/usr/bin/env python3
"""What the flight recorder adds to t4's probe: the same UDP packets
through the inline testbed under `record --aggregate`, with and without
`--flight N` (a trigger that never fires), rounds alternating. Each run's
own probe cost sample of t4 (stamp to return: the copy into the ring and
the trigger check happen there) is read from its END chunk; printed are
the medians over the rounds and their ratio, measured in this one run.
Own testbed prefix (hsb-fl-).

    evaluation/bench/flight_cost.py [--rounds 4] [--packets 60000] [--flight 4096]
Writes evaluation/results/flight_cost.json. Needs root and `make`.
"""
import os
import statistics
import subprocess
import sys
import tempfile

import benchlib
import hopscope
from hopscope.traffic.testbed import Testbed
from testlib import Recorder

PREFIX = "hsb-fl-"


def blast(n):
    code = ("import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"for i in range({n}):\n    s.sendto(i.to_bytes(4, 'big') * 16, ('198.18.3.2', 9))\n")
    subprocess.run(["ip", "netns", "exec", PREFIX + "sender1", "taskset", "-c", "0",
                    sys.executable, "-c", code], check=True)


def t4_ns(path, extra, n):
    rec = Recorder(path, "-q", "--aggregate", *extra, ins="r-s1", prefix=PREFIX)
    try:
        blast(n)
        rec.stop()
    finally:
        rec.kill()
    s = hopscope.load(path, strict=True).attrs["trailer"]["probe_cost"]["stages"]["t4"]
    return s["sum_ns"] / s["n"]


def report(res):
    off, on = (statistics.median(res["t4_ns"][m]) for m in ("off", "on"))
    print(f"t4 probe, median over {res['rounds']} rounds: without --flight {off:.1f} ns, with "
          f"--flight {res['flight']} {on:.1f} ns: {on / off:.2f} x (+{on - off:.1f} ns)")


def main():
    ap = benchlib.parser("flight_cost", __doc__, rounds=4)
    ap.add_argument("--packets", type=int, default=60000)
    ap.add_argument("--flight", type=int, default=4096)
    a = ap.parse_args()
    benchlib.preflight("flight_cost")
    res = {"machine": benchlib.machine(), "rounds": a.rounds, "packets": a.packets,
           "flight": a.flight, "testbed": "inline", "t4_ns": {"off": [], "on": []}}
    tb = Testbed(PREFIX)

    def rounds():
        tb.down()
        tb.up("--mode", "inline")
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(a.rounds):
                for mode, extra in (("off", ()), ("on", ("--flight", str(a.flight),
                                                         "--flight-trigger", "d_oq>1s"))):
                    got = res["t4_ns"][mode]
                    got.append(t4_ns(os.path.join(tmp, f"{mode}{r}.hsr"), extra, a.packets))
                    print(f"round {r} {mode:3}: t4 probe {got[-1]:.1f} ns", flush=True)

    benchlib.measure("flight_cost", rounds, tb.down)
    benchlib.finish(res, a.output, report)


if __name__ == "__main__":
    main()
