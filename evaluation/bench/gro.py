#!/usr/bin/env python3
"""What keeping GRO saves the router: a TCP transfer through it untraced,
recorded with --gro off, and recorded with --gro keep, on an input that has
GRO on and native XDP (a veth, whose NAPI then runs GRO). For each, the
router's own count of skbs it forwarded (ForwDatagrams, the receiver's ACKs
taken off) per wire packet in, and the transfer's rate as a ratio to the
untraced one of the same round; the three are interleaved round by round
(order rotated), the median over rounds kept.

    evaluation/bench/gro.py [--rounds 3] [--seconds 3]
Writes evaluation/results/gro.json and prints a table. Needs root and `make`.
"""
import json
import os
import statistics
import subprocess
import tempfile
import time

import benchlib
from benchlib import ROOT
from testlib import Recorder

PREFIX = os.environ.get("HS_PREFIX", "hsgro-")
TESTBED = os.path.join(ROOT, "testbed", "testbed.sh")
RECEIVER = "198.18.3.2"
CONFIGS = ("untraced", "gro_off", "gro_keep")
ARGS = {"gro_off": ["--gro", "off"], "gro_keep": ["--gro", "keep"]}


def ns(name):
    return ["ip", "netns", "exec", PREFIX + name]


def counters():
    """(wire packets in at r-s1, ACKs in at r-rx, skbs forwarded either way)"""
    out = subprocess.run(ns("router") + ["sh", "-c", "cat /sys/class/net/r-s1/statistics/"
                                         "rx_packets /sys/class/net/r-rx/statistics/rx_packets;"
                                         " cat /proc/net/snmp"],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    ip = [line.split() for line in out[2:] if line.startswith("Ip:")]
    return int(out[0]), int(out[1]), int(ip[1][ip[0].index("ForwDatagrams")])


def transfer(seconds):
    """one iperf3 TCP transfer from sender1: Gbit/s, and the router's counts"""
    before = counters()
    r = subprocess.run(ns("sender1") + ["iperf3", "-c", RECEIVER, "-t", str(seconds), "-J"],
                       check=True, capture_output=True, text=True)
    after = counters()
    wire, acks, fwd = (a - b for a, b in zip(after, before))
    gbps = json.loads(r.stdout)["end"]["sum_received"]["bits_per_second"] / 1e9
    return {"gbps": gbps, "wire_in": wire, "skbs": fwd - acks,
            "skbs_per_wire": (fwd - acks) / wire if wire else None}


def run(config, seconds, tmp):
    if config == "untraced":
        return transfer(seconds)
    rec = Recorder(os.path.join(tmp, f"{config}.hsr"), "-q", "--xdp-mode", "native",
                   *ARGS[config], ins="r-s1", prefix=PREFIX)
    try:
        return transfer(seconds)
    finally:
        rec.stop()


def report(res):
    print(f"\nTCP through the router, GRO on r-s1 ({res['machine']['cpu_model']}):")
    print(f"{'config':10} {'Gbit/s':>8} {'/untraced':>10} {'skbs/wire':>10}")
    for c in CONFIGS:
        s = res["summary"][c]
        print(f"{c:10} {s['gbps']:8.2f} {benchlib.fmt(s['rate_ratio'], '10.3f')} "
              f"{benchlib.fmt(s['skbs_per_wire'], '10.3f')}")


def main():
    ap = benchlib.parser("gro", __doc__, rounds=3)
    ap.add_argument("--seconds", type=float, default=3.0, help="transfer time per run")
    a = ap.parse_args()
    benchlib.preflight("gro", ("iperf3",))
    env = dict(os.environ, HS_PREFIX=PREFIX)
    res = {"machine": benchlib.machine(), "seconds": a.seconds, "rounds": []}
    server = []

    def body():
        subprocess.run([TESTBED, "up"], check=True, env=env, stdout=subprocess.DEVNULL)
        subprocess.run(ns("router") + ["ethtool", "-K", "r-s1", "gro", "on"], check=True)
        server.append(subprocess.Popen(ns("receiver") + ["iperf3", "-s"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(a.rounds):
                got = {c: run(c, a.seconds, tmp) for c in benchlib.rotated(list(CONFIGS), i)}
                for c in CONFIGS:
                    got[c]["rate_ratio"] = got[c]["gbps"] / got["untraced"]["gbps"]
                res["rounds"].append(got)
        res["summary"] = {c: {k: statistics.median(r[c][k] for r in res["rounds"])
                              for k in ("gbps", "rate_ratio", "skbs_per_wire")}
                          for c in CONFIGS}

    def cleanup():
        for s in server:
            s.kill()
            s.wait()
        subprocess.run([TESTBED, "down"], env=env, stdout=subprocess.DEVNULL)

    benchlib.measure("gro", body, cleanup)
    benchlib.finish(res, a.output, report)


if __name__ == "__main__":
    main()
