#!/usr/bin/env python3
"""The probes' own cost taken apart: the clock, the packet key at t1, the
record's hand-over at t4, and the rest (the parse, the slot, finding the
packet again), per stage and against the router's forwarding rate.

In each round, order rotated, the router forwards one iperf3 UDP stream as
in evaluation/bench/overhead.py (its testbed, sender and windows measured
again when other work used the router's CPU): untraced; the empty programs
(`--floor`); programs that only read the clock (`--floor=clock`); hopscope
as built; builds of its own that leave one part out (make BPF_BENCH=...,
the HS_BENCH_* switches of ebpf/hopscope.bpf.h, into build/probe-cost/);
and the levers given as record options. Then, in more rounds of short
windows (a shared machine's speed drifts over minutes), each configuration's
ns per program run (kernel.bpf_stats_enabled, which adds its own ~35 ns a
run alike to all); each part's cost is the difference to hopscope as built
within a round, then the median over the rounds. After them, t1 alone by
BPF_PROG_TEST_RUN (build/prog_run --time) in each build, without traffic
or bpf_stats, the builds alternating. Rates are taken against the floor's
within a round, then the median over the rounds.

    evaluation/bench/probe_cost.py [--rounds 6] [--stats-rounds 12] [--seconds 2] [--payload 64]
Writes evaluation/results/probe_cost-CPU.json (CPU as overhead.py names
it). Needs root, make and iperf3.
"""
import json
import os
import statistics
import struct
import subprocess
import tempfile
import time

import benchlib
from benchlib import ROOT
from overhead import PREFIX, TESTBED, Recorder, blast, ns, prog_ids, sysctl

# the builds that leave a part out: name -> make's BPF_BENCH
BUILDS = {"no_key": "-DHS_BENCH_NO_KEY=1", "no_handover": "-DHS_BENCH_NO_HANDOVER=1"}
# configuration -> (its build, None for the tree's own; hopscope record's options)
# (levers as options: the slots a packet's stages meet in, 2.4 MB per CPU by
# default, in a CPU's L2; the record rings t4 writes into, 32 MiB in all)
CONFIGS = {"untraced": None, "floor": (None, ["--floor"]), "clock": (None, ["--floor=clock"]),
           "traced": (None, []), "no_key": ("no_key", []), "no_handover": ("no_handover", []),
           "slots_2048": (None, ["--slots", "2048"]), "ring_8": (None, ["--ring", "8"])}
PROGRAMS = ("hs_input", "hs_prerouting", "hs_postrouting", "hs_output")
PROG_RUN_RUNS = 100000
# t1's test runs: configuration -> (build, prog_run's --floor)
PROG_RUN = {"floor": (None, ["--floor", "empty"]), "clock": (None, ["--floor", "clock"]),
            "traced": (None, []), "no_key": ("no_key", [])}


def out_dir(build):
    return os.path.join(ROOT, "build") if build is None else \
        os.path.join(ROOT, "build", "probe-cost", build)


def make(build):
    """build/probe-cost/BUILD's recorder and prog_run, from the tree's sources."""
    out = os.path.relpath(out_dir(build), ROOT)
    subprocess.run(["make", "-s", "-j2", f"OUT={out}", f"BPF_BENCH={BUILDS[build]}",
                    f"{out}/hopscope", f"{out}/prog_run"], cwd=ROOT, check=True,
                   stdout=subprocess.DEVNULL)


def recorder(config, path):
    build, args = CONFIGS[config]
    Recorder.binary, Recorder.extra = os.path.join(out_dir(build), "hopscope"), args
    return Recorder("traced", path)


def rate(config, payload, seconds, tmp):
    """Forwarded packets/s with the configuration attached, and how many
    windows were measured again."""
    rec = recorder(config, os.path.join(tmp, f"{config}.hsr")) if CONFIGS[config] else None
    try:
        pps, again = blast(payload, seconds)
    finally:
        if rec:
            rec.stop()
    return {"pps": pps, "repeated": again}


def ns_per_run(config, payload, tmp):
    """Each program's ns per run under the stream (bpf_stats on)."""
    rec = recorder(config, os.path.join(tmp, f"stats-{config}.hsr"))
    try:
        blast(payload, 1.0, warmup=0.5)
        ids = prog_ids(rec.proc.pid)
        progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], check=True,
                                          capture_output=True, text=True).stdout)
    finally:
        rec.stop()
    return {p["name"]: round(p["run_time_ns"] / p["run_cnt"], 1) for p in progs
            if p["id"] in ids and p.get("run_cnt") and p["name"] in PROGRAMS}


def frame(payload):
    """An Ethernet frame of one UDP datagram from sender1 to the receiver."""
    udp = struct.pack("!HHHH", 40000, 5201, 8 + payload, 0) + b"x" * payload
    ip = bytearray(struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0,
                               bytes([198, 18, 1, 2]), bytes([198, 18, 3, 2])))
    words = sum(struct.unpack("!10H", ip))
    while words >> 16:
        words = (words & 0xffff) + (words >> 16)
    ip[10:12] = struct.pack("!H", ~words & 0xffff)
    return b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00" + bytes(ip) + udp


def t1_test_run(config, payload):
    """t1's ns per run by BPF_PROG_TEST_RUN on CPU 1 (prog_run --time)."""
    build, args = PROG_RUN[config]
    r = subprocess.run(["taskset", "-c", "1", os.path.join(out_dir(build), "prog_run"), "--time",
                        str(PROG_RUN_RUNS), *args], input=frame(payload).hex() + "\n",
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["ns_per_run"]


def spread(values):
    return {"median": statistics.median(values), "least": min(values), "most": max(values)}


def summarise(res):
    """Each configuration's rate against the floor's and the clock floor's
    (per round, then median and spread), its ns per run and their difference
    to hopscope as built's (per round, then median and spread), and t1's
    test runs."""
    rounds, stats = res["rounds"], res["stats_rounds"]
    out = {}
    for c in CONFIGS:
        s = out[c] = {"kpps": spread([r[c]["pps"] / 1e3 for r in rounds])}
        for base in ("floor", "clock", "untraced"):
            s[f"of_{base}"] = spread([r[c]["pps"] / r[base]["pps"] for r in rounds])
        if c == "untraced":
            continue
        progs = [p for p in PROGRAMS if all(p in r[c] and p in r["traced"] for r in stats)]
        s["ns_per_run"] = {p: spread([r[c][p] for r in stats]) for p in progs}
        s["ns_over_traced"] = {p: spread([r[c][p] - r["traced"][p] for r in stats])
                               for p in progs}
    for c in PROG_RUN:
        runs = res["t1_test_runs"]
        out[c]["t1_test_run_ns"] = spread([r[c]["middle_mean"] for r in runs])
        out[c]["t1_test_run_over_traced"] = spread([r[c]["middle_mean"] -
                                                    r["traced"]["middle_mean"] for r in runs])
    return out


def report(res):
    s = res["summary"]
    print(f"\n{len(res['rounds'])} rounds, {res['payload']} B; median (least-most) over the rounds")
    print(f"{'config':<12} {'kpps':>5} {'of floor':>20} {'of clock':>20}   ns per run, "
          "against as built: " + ", ".join(PROGRAMS) + "   t1 test run, against as built")
    for c, v in s.items():
        ratio = lambda k: f"{v[k]['median']:.3f} ({v[k]['least']:.3f}-{v[k]['most']:.3f})"  # noqa: E731
        runs = ", ".join(f"{v['ns_per_run'][p]['median']:.0f} ({x['median']:+.0f})"
                         for p, x in v.get("ns_over_traced", {}).items())
        t1, d = v.get("t1_test_run_ns"), v.get("t1_test_run_over_traced")
        print(f"{c:<12} {v['kpps']['median']:5.0f} {ratio('of_floor'):>20} {ratio('of_clock'):>20}"
              f"   {runs:<34}" + (f"   {t1['median']:.1f} ({d['median']:+.1f}, "
                                  f"{d['least']:+.1f} to {d['most']:+.1f})" if t1 else ""))
    repeated = sum(r[c]["repeated"] for r in res["rounds"] for c in CONFIGS)
    if repeated:
        print(f"{repeated} windows measured again: another task used the router's CPU")


def measure(res, a):
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.rounds):
            rnd = {c: rate(c, a.payload, a.seconds, tmp)
                   for c in benchlib.rotated(list(CONFIGS), i)}
            res["rounds"].append(rnd)
            print(f"round {i + 1}/{a.rounds}: " + "  ".join(
                f"{c} {rnd[c]['pps'] / 1e3:.0f}" for c in CONFIGS) + " kpps", flush=True)
        traced = [c for c in CONFIGS if CONFIGS[c]]
        sysctl("kernel.bpf_stats_enabled", 1)
        for i in range(a.stats_rounds):
            res["stats_rounds"].append({c: ns_per_run(c, a.payload, tmp)
                                        for c in benchlib.rotated(traced, i)})
            print(f"ns per run, round {i + 1}/{a.stats_rounds}: " + "  ".join(
                f"{c} {res['stats_rounds'][-1][c].get('hs_input', 0):.0f}" for c in traced)
                + " (hs_input)", flush=True)


def main():
    ap = benchlib.parser("probe_cost", __doc__, rounds=6, per_cpu=True)
    cpu = benchlib.cpu()
    ap.add_argument("--stats-rounds", type=int, default=12,
                    help="rounds of ns per program run, 1 s windows")
    ap.add_argument("--seconds", type=float, default=2.0, help="measurement window per run")
    ap.add_argument("--payload", type=int, default=64, help="UDP payload, bytes")
    a = ap.parse_args()
    benchlib.preflight("probe_cost", ("iperf3", "make", "bpftool"))
    for build in BUILDS:
        make(build)
    res = {"machine": benchlib.machine(), "cpu": cpu, "payload": a.payload,
           "seconds": a.seconds, "builds": BUILDS,
           "configs": {c: v and {"build": v[0], "record_args": v[1]} for c, v in CONFIGS.items()},
           "rounds": [], "stats_rounds": [], "t1_test_runs": []}
    env = dict(os.environ, HS_PREFIX=PREFIX)
    stats_was = sysctl("kernel.bpf_stats_enabled")
    server = None

    def body():
        nonlocal server
        subprocess.run([TESTBED, "up", "--mode", "inline", "--sink", "--shield", "router"],
                       check=True, env=env, stdout=subprocess.DEVNULL)
        server = subprocess.Popen(ns("receiver") + ["taskset", "-c", "1", "iperf3", "-s"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(0.5)
        measure(res, a)
        # t1 without traffic (the testbed idle), the builds alternating; the
        # stats as they were: a test run times itself
        sysctl("kernel.bpf_stats_enabled", stats_was)
        for i in range(a.stats_rounds):
            res["t1_test_runs"].append({c: t1_test_run(c, a.payload)
                                        for c in benchlib.rotated(list(PROG_RUN), i)})

    def cleanup():
        sysctl("kernel.bpf_stats_enabled", stats_was)
        if server:
            server.terminate()
            server.wait()
        subprocess.run([TESTBED, "down"], env=env, stdout=subprocess.DEVNULL)

    benchlib.measure("probe_cost", body, cleanup)
    res["summary"] = summarise(res)
    benchlib.finish(res, a.output, report)


if __name__ == "__main__":
    main()
