#!/usr/bin/env python3
"""What NAT's check at t3 costs: the POST_ROUTING program's ns per run
(kernel.bpf_stats_enabled) without the check (a recorder built from a tree
before it, --before), with it on traffic NAT leaves alone (a few loads and
compares), and with it on masqueraded traffic (each packet's translation
looked up in the map and counted).

The three are interleaved round by round, each with a fresh recorder (its
programs' stats start at 0) and one iperf3 UDP stream of 64 B datagrams at
a fixed rate through the testbed; the stats' own cost (~35-40 ns a run) is
in every number alike.

    evaluation/bench/nat_cost.py --before OLD/build/hopscope [--rounds 5] [--seconds 3]
Writes evaluation/results/nat_cost.json. Needs root and iperf3.
"""
import json
import os
import statistics
import subprocess
import tempfile
import time

import benchlib
from overhead import HOPSCOPE, PREFIX, RECEIVER, TESTBED, Recorder, ns, prog_ids, sysctl

CONFIGS = ("before", "no_nat", "masquerade")
MASQUERADE = """table ip hsnat {
  chain post { type nat hook postrouting priority srcnat; policy accept;
    oifname "r-rx" masquerade; }
}
"""


def nat_rules(on):
    subprocess.run(ns("router") + ["nft", "delete", "table", "ip", "hsnat"],
                   stderr=subprocess.DEVNULL)
    if on:
        subprocess.run(ns("router") + ["nft", "-f", "-"], input=MASQUERADE, text=True,
                       check=True)


def one(config, before, seconds, rate, path):
    """ns per run of each of one recorder's programs under the stream"""
    nat_rules(config == "masquerade")
    Recorder.binary = before if config == "before" else HOPSCOPE
    rec = Recorder("traced", path)
    try:
        subprocess.run(ns("sender1") + ["iperf3", "-c", RECEIVER, "-u", "-l", "64", "-b",
                                        rate, "-t", str(seconds)],
                       check=True, stdout=subprocess.DEVNULL)
        ids = prog_ids(rec.proc.pid)
        progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], check=True,
                                          capture_output=True, text=True).stdout)
    finally:
        rec.stop()
    return {p["name"]: p["run_time_ns"] / p["run_cnt"] for p in progs
            if p["id"] in ids and p.get("run_cnt")}


def main():
    ap = benchlib.parser("nat_cost", __doc__, rounds=5)
    ap.add_argument("--before", required=True, help="hopscope built without the check")
    ap.add_argument("--seconds", type=float, default=3.0)
    ap.add_argument("--rate", default="20M", help="iperf3 -b: the stream's bit rate")
    a = ap.parse_args()
    benchlib.preflight("nat_cost", ("iperf3",))
    env = dict(os.environ, HS_PREFIX=PREFIX)
    subprocess.run([TESTBED, "up"], check=True, env=env, stdout=subprocess.DEVNULL)
    stats_was = sysctl("kernel.bpf_stats_enabled")
    server = subprocess.Popen(ns("receiver") + ["iperf3", "-s"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    res = {"machine": benchlib.machine(), "rounds": [], "seconds": a.seconds, "rate": a.rate}
    try:
        time.sleep(0.5)
        sysctl("kernel.bpf_stats_enabled", 1)
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(a.rounds):
                res["rounds"].append({c: one(c, a.before, a.seconds, a.rate,
                                             os.path.join(tmp, f"{c}.hsr"))
                                      for c in benchlib.rotated(CONFIGS, i)})
    finally:
        sysctl("kernel.bpf_stats_enabled", stats_was)
        server.terminate()
        server.wait()
        subprocess.run([TESTBED, "down"], env=env, stdout=subprocess.DEVNULL)
    # the programs that ran in every round (LOCAL_IN sees only the odd packet)
    res["median_ns"] = {c: {p: statistics.median(r[c][p] for r in res["rounds"])
                            for p in set.intersection(*(set(r[c]) for r in res["rounds"]))}
                        for c in CONFIGS}
    benchlib.finish(res, a.output, report)


def report(res):
    m = res["median_ns"]
    print(f"ns per run, median of {len(res['rounds'])} rounds: " + "  ".join(CONFIGS))
    for p in sorted(m["no_nat"]):
        print(f"  {p:<16} " + "  ".join(f"{m[c].get(p, float('nan')):8.1f}" for c in CONFIGS))


if __name__ == "__main__":
    main()
