#!/usr/bin/env python3
"""What the kernel module costs the router per packet, in a QEMU guest: the
module cannot load on the development machine, so testbed/qemu/run.sh boots Debian's
kernel with testbed/qemu/bench-guest.sh as /init. In one boot, rounds of:
untraced; `hopscope record --backend kmod --floor` (the same hooks, every
probe returning at once: what the hooks alone cost); the module recording.

The guest runs under TCG, so its absolute times mean little: what counts are
ratios within one boot. Per run, the router's forwarded packets/s (a UDP
flood forwarded inline on the sender's CPU0, as evaluation/bench/overhead.py's) and CPU0's
busy time per forwarded packet (/proc/stat; the recorder is on CPU1, which
TCG runs in turn with CPU0, so the rate pays for it and CPU0's time does
not); for the recording, the probes' own time per stage as the module
samples it (the file's END trailer, probe_cost). Ratios are taken within a
round, then the median and the spread (min-max) over the rounds.

    evaluation/bench/kmod_overhead.py [--series 6.1] [--rounds 10] [--seconds 2] [--size 64]
    evaluation/bench/kmod_overhead.py --from evaluation/results/kmod_overhead.json
Writes evaluation/results/kmod_overhead.json and prints the figures
evaluation/overhead.md quotes. Needs QEMU, the series' headers (make deps) and
build/hopscope (make). Exit 77: QEMU or the headers missing.
"""
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import benchlib
from benchlib import ROOT

RUN = os.path.join(ROOT, "testbed", "qemu", "run.sh")
GUEST = os.path.join(ROOT, "testbed", "qemu", "bench-guest.sh")
CONFIGS = ("untraced", "floor", "traced")
STAGES = ("t1", "t2", "t3", "t4")  # the stages a default recording stamps
USER_HZ = 100  # /proc/stat's unit
SKIP = 77


def snapshot(text):
    """uptime (s), r-rx tx_packets, and CPU0's, CPU1's busy ticks."""
    f = text.split()
    cpu0, cpu1 = f.index("cpu0"), f.index("cpu1")
    busy = lambda i: sum(map(int, f[i + 1:i + 11])) - int(f[i + 4]) - int(f[i + 5])  # noqa: E731
    return float(f[0]), int(f[2]), busy(cpu0), busy(cpu1)


def parse_run(line):
    """One BENCH line of the guest: its measured figures."""
    head, a, b, cost = line.split("|")
    _, rnd, config, rc, records = head.split()
    (u0, p0, c00, c10), (u1, p1, c01, c11) = snapshot(a), snapshot(b)
    pkts, secs = p1 - p0, u1 - u0
    run = {"round": int(rnd), "config": config, "rc": int(rc), "records": int(records),
           "seconds": secs, "forwarded": pkts, "pps": pkts / secs,
           "cpu0_ns_per_pkt": (c01 - c00) * 1e9 / USER_HZ / pkts,
           "cpu1_busy": (c11 - c10) / USER_HZ / secs}
    kv = dict(re.findall(r"(\w+)=(\d+)", cost))
    if config == "traced":
        run["probe_ns"] = {s: int(kv[f"{s}_mean_ns"]) for s in STAGES if f"{s}_mean_ns" in kv}
        run["probe_samples"] = {s: int(kv.get(f"{s}_n", 0)) for s in STAGES}
    return run


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values)}


def summarise(runs):
    by = {}
    for r in runs:
        by.setdefault(r["round"], {})[r["config"]] = r
    rounds = [by[k] for k in sorted(by)]
    per = lambda f: spread([f(r) for r in rounds])  # noqa: E731
    ns = lambda r, c: r[c]["cpu0_ns_per_pkt"]  # noqa: E731
    out = {c: {"kpps": per(lambda r: r[c]["pps"] / 1e3),
               "cpu0_ns_per_pkt": per(lambda r: ns(r, c))} for c in CONFIGS}
    out["rate"] = {f"{a}/{b}": per(lambda r: r[a]["pps"] / r[b]["pps"])
                   for a, b in (("floor", "untraced"), ("traced", "untraced"), ("traced", "floor"))}
    # CPU0's time per packet against untraced: what a forwarded packet costs more
    out["cpu0_cost"] = {f"{a}/untraced": per(lambda r: ns(r, a) / ns(r, "untraced"))
                        for a in ("floor", "traced")}
    out["cpu0_cost"]["traced/floor"] = per(lambda r: ns(r, "traced") / ns(r, "floor"))
    out["cpu0_added_ns"] = {"floor": per(lambda r: ns(r, "floor") - ns(r, "untraced")),
                            "traced": per(lambda r: ns(r, "traced") - ns(r, "untraced"))}
    out["probe_ns"] = {s: per(lambda r: r["traced"]["probe_ns"][s]) for s in STAGES}
    out["probe_ns_sum"] = per(lambda r: sum(r["traced"]["probe_ns"][s] for s in STAGES))
    # the probes' time against what the untraced router spends on a packet
    out["probe_share"] = {s: per(lambda r: r["traced"]["probe_ns"][s] / ns(r, "untraced"))
                          for s in STAGES}
    out["probe_share"]["sum"] = per(lambda r: sum(r["traced"]["probe_ns"][s] for s in STAGES)
                                    / ns(r, "untraced"))
    out["recorder_cpu1_busy"] = per(lambda r: r["traced"]["cpu1_busy"])
    return out


def fmt(s, digits=3):
    return f"{s['median']:.{digits}f} ({s['min']:.{digits}f}–{s['max']:.{digits}f})"


def report(res):
    s = res["summary"]
    print(f"\nkernel module in QEMU (guest {res['guest_kernel']}, {res['qemu']}), "
          f"{len(set(r['round'] for r in res['runs']))} rounds x {res['seconds']} s, "
          f"{res['size']} B UDP: median (min–max) over the rounds")
    print(f"{'':10} {'kpps':>22} {'CPU0 ns/packet':>26}")
    for c in CONFIGS:
        print(f"{c:10} {fmt(s[c]['kpps'], 1):>22} {fmt(s[c]['cpu0_ns_per_pkt'], 0):>26}")
    for k, v in s["rate"].items():
        print(f"rate {k:<17} {fmt(v)}")
    for k, v in s["cpu0_cost"].items():
        print(f"CPU0 time {k:<12} {fmt(v)}")
    print(f"CPU0 ns/packet added: floor {fmt(s['cpu0_added_ns']['floor'], 0)}, "
          f"traced {fmt(s['cpu0_added_ns']['traced'], 0)}")
    print("probe's own ns per run, traced (the floor's probes return at once): " +
          ", ".join(f"{st} {fmt(s['probe_ns'][st], 0)}" for st in STAGES) +
          f"; t1-t4 together {fmt(s['probe_ns_sum'], 0)}")
    print("the same against the untraced CPU0 time per packet: " +
          ", ".join(f"{st} {fmt(s['probe_share'][st])}" for st in (*STAGES, "sum")))
    print(f"recorder's CPU1 busy share, traced: {fmt(s['recorder_cpu1_busy'])}")


def main():
    ap = benchlib.parser("kmod_overhead", __doc__, rounds=10)
    ap.add_argument("--series", default="6.1", help="Debian kernel series of the guest "
                    "(6.1: no BPF netfilter link, the module's kernel; or 6.12)")
    ap.add_argument("--seconds", type=int, default=2, help="measurement window per run")
    ap.add_argument("--size", type=int, default=64, help="UDP payload, bytes")
    ap.add_argument("--from", dest="source", metavar="JSON",
                    help="no guest: summarise the runs of an earlier output again")
    a = ap.parse_args()
    if a.source:
        try:
            with open(a.source) as f:
                res = json.load(f)
        except (OSError, ValueError) as e:
            sys.exit(f"evaluation/bench/kmod_overhead.py: {a.source}: {e}")
        save(res, a.output)
        return
    if a.rounds < 1 or a.seconds < 1 or not 8 <= a.size <= 1472:
        ap.error("--rounds and --seconds at least 1, --size 8 to 1472")
    if not os.access(os.path.join(ROOT, "build", "hopscope"), os.X_OK):
        sys.exit("evaluation/bench/kmod_overhead.py: no build/hopscope (make): the guest runs it")
    env = dict(os.environ, HS_QEMU_GUEST=GUEST,
               HS_QEMU_APPEND=f"{os.environ.get('HS_QEMU_APPEND', '')} hs.rounds={a.rounds} "
                              f"hs.seconds={a.seconds} hs.size={a.size}",
               # per run: warm-up, window, the recorder's start and stop under TCG
               HS_QEMU_TIMEOUT=str(120 + a.rounds * len(CONFIGS) * (a.seconds + 15)))
    # the guest's clock is this host's: its other jobs slow some runs more than others
    load = [os.getloadavg()[0]]
    p = subprocess.run([RUN, a.series], cwd=ROOT, env=env, capture_output=True, text=True)
    load.append(os.getloadavg()[0])
    out = p.stdout + p.stderr
    print(out.rstrip())
    if p.returncode == SKIP:
        sys.exit(SKIP)
    m = re.search(r"^kmod-qemu: (\S+): RESULT kernel=(\S+)", out, re.M)
    if p.returncode or not m:
        sys.exit("evaluation/bench/kmod_overhead.py: the guest failed (above)")
    work = os.environ.get("HS_QEMU_DIR", os.path.join(ROOT, "build", "qemu"))
    console = os.path.join(work, m.group(1), "bench-guest", "console.txt")
    with open(console) as f:
        runs = [parse_run(line) for line in f if line.startswith("BENCH ")]
    res = {"date": time.strftime("%Y-%m-%d", time.gmtime()), "host": platform.release(),
           "host_cpu": benchlib.cpu()["model_name"], "host_cpus": len(os.sched_getaffinity(0)), "host_load": load,
           "guest_kernel": m.group(2),
           "qemu": "TCG thread=single, 2 vCPUs", "seconds": a.seconds, "size": a.size,
           "runs": runs}
    save(res, a.output)


def save(res, path):
    res["summary"] = summarise(res["runs"])
    benchlib.finish(res, path, report)


if __name__ == "__main__":
    main()
