#!/usr/bin/env python3
"""The recorder with the router's receive work on every CPU: RPS on the
router's inputs spreads eight UDP streams over all CPUs, so every CPU's ring
fills; the router's forwarding rate untraced, and recording with one drain
thread and with one per CPU (`--drain-threads`), interleaved round by round
(order rotated). Each traced run reports how its records spread over the
CPUs, the records lost in the rings per second, the recorder's CPU time per
record, the most one drain thread waited for a CPU, and the longest gap
between a thread's drains.

    evaluation/bench/drain_threads.py [--payload 64] [--rounds 3] [--seconds 4] [--record-args ARGS]
Writes evaluation/results/drain_threads-CPU.json (one per CPU). Needs root, `make` and iperf3.
"""
import os
import signal
import statistics
import subprocess
import tempfile
import time

import benchlib
import hopscope
from benchlib import ROOT

PREFIX = os.environ.get("HS_PREFIX", "hsdrain-")
HOPSCOPE = os.path.join(ROOT, "build", "hopscope")
TESTBED = os.path.join(ROOT, "testbed", "testbed.sh")
RECEIVER = "198.18.3.2"
STREAMS = 8  # flows for RPS to spread: all on one of two CPUs 1 run in 128
CPUS = os.cpu_count()
CONFIGS = ("untraced", "threads_1", f"threads_{CPUS}")


def ns(name):
    return ["ip", "netns", "exec", PREFIX + name]


def tx_packets():
    return int(subprocess.run(ns("router") + ["cat", "/sys/class/net/r-rx/statistics/tx_packets"],
                              check=True, capture_output=True, text=True).stdout)


def spread_rps():
    """RPS on the router's inputs to every CPU (the testbed's rps mode sends
    it to the last one): each stream's packets go to the CPU its hash picks"""
    mask = format((1 << CPUS) - 1, "x")
    for ifc in ("r-s1", "r-s2"):
        subprocess.run(ns("router") + ["sh", "-c",
                                       f"echo {mask} > /sys/class/net/{ifc}/queues/rx-0/rps_cpus"],
                       check=True)


def record(path, threads, extra):
    """hopscope record with `threads` drain threads, unpinned, once attached"""
    r, w = os.pipe()
    try:
        proc = subprocess.Popen([HOPSCOPE, "record", "-n", PREFIX + "router", "-i", "r-s1,r-s2",
                                 "-O", "r-rx", "-o", path, "-q", "--backend", "ebpf",
                                 "--drain-threads", str(threads), "--ready-fd", str(w), *extra],
                                pass_fds=(w,), stderr=subprocess.PIPE, text=True)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as ready:
        if ready.readline() != b"ready\n":
            proc.wait()
            raise SystemExit(f"evaluation/bench/drain_threads.py: hopscope record did not "
                             f"start: {proc.stderr.read()}")
    return proc


def blast(payload, seconds, warmup=1.0):
    """packets/s through r-rx while STREAMS iperf3 UDP streams send as fast as
    they can, over `seconds` after a warm-up"""
    client = subprocess.Popen(ns("sender1") + ["taskset", "-c", "0", "iperf3", "-c", RECEIVER,
                                               "-u", "-b", "0", "-l", str(payload),
                                               "-P", str(STREAMS),
                                               "-t", str(seconds + warmup + 1)],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(warmup)
        n0, t0 = tx_packets(), time.monotonic()
        time.sleep(seconds)
        n1, t1 = tx_packets(), time.monotonic()
    finally:
        err = client.communicate()[1]
    if client.returncode:
        raise SystemExit(f"evaluation/bench/drain_threads.py: iperf3 failed: {err.strip()}")
    return (n1 - n0) / (t1 - t0)


def measure(config, payload, seconds, tmp, extra):
    path = os.path.join(tmp, f"{config}.hsr")
    proc = record(path, int(config.split("_")[1]), extra) if config != "untraced" else None
    before, started = tx_packets(), time.monotonic()
    try:
        rate = blast(payload, seconds)
    finally:
        time.sleep(0.1)
        after = tx_packets()
        if proc:
            proc.send_signal(signal.SIGINT)
            err = proc.stderr.read()
            if proc.wait():
                raise SystemExit(f"evaluation/bench/drain_threads.py: hopscope record "
                                 f"failed:\n{err}")
    out = {"pps": rate}
    if proc:
        df = hopscope.load(path)
        end = df.attrs["trailer"]
        c, u = end["counters"], end["userspace"]
        by_cpu = df.cpu_out[df.status == "complete"].value_counts()
        out.update(forwarded=after - before, records=len(df),
                   complete=int((df.status == "complete").sum()),
                   seen=c["xdp_pkts"] - c["xdp_nonip"] - c["xdp_truncated"] - c["local"],
                   ring_lost=c["rb_fail"], seconds=time.monotonic() - started,
                   complete_counted=c["complete"], ring_lost_complete=c["rb_fail_complete"],
                   complete_by_cpu={str(k): int(v) for k, v in by_cpu.items()},
                   recorder={k: u[k] for k in ("drain_threads", "cpu_ns", "drain_cpu_wait_ns",
                                               "drain_max_gap_ns", "ring_records",
                                               "ring_peak_waiting")})
    return out


def summarise(rounds):
    out = {"untraced_kpps": statistics.median(r["untraced"]["pps"] for r in rounds) / 1e3}
    for config in CONFIGS[1:]:
        runs = [r[config] for r in rounds]
        rec = [x["recorder"] for x in runs]
        secs = sum(x["seconds"] for x in runs)
        handled = sum(x["records"] + x["ring_lost"] for x in runs)
        out[config] = {
            "kpps": statistics.median(x["pps"] for x in runs) / 1e3,
            "over_untraced": statistics.median(r[config]["pps"] / r["untraced"]["pps"]
                                               for r in rounds),
            "ring_lost_per_s": sum(x["ring_lost"] for x in runs) / secs,
            "recorder_ns_per_record": sum(x["cpu_ns"] for x in rec) / handled if handled else 0,
            "drain_cpu_wait_share": max(x["drain_cpu_wait_ns"] / 1e9 / r["seconds"]
                                        for x, r in zip(rec, runs)),
            "drain_max_gap_ms": max(x["drain_max_gap_ns"] for x in rec) / 1e6,
            "ring_peak_fill": max(x["ring_peak_waiting"] / x["ring_records"] for x in rec),
            # the least-loaded CPU's share of the complete records
            "least_cpu_share": min(min(x["complete_by_cpu"].get(str(k), 0)
                                       for k in range(CPUS)) / max(x["complete"], 1)
                                   for x in runs),
        }
    return out


def report(res):
    s = res["summary"]
    print(f"\n{res['machine']['cpu_model']}, {res['cpus']} CPUs, {res['payload']} B, {STREAMS} streams spread by "
          f"RPS; untraced {s['untraced_kpps']:.0f} kpps")
    print(f"{'drain threads':>14} {'kpps':>6} {'/untraced':>9} {'lost/s':>8} {'ns/record':>9} "
          f"{'CPU wait':>8} {'drain gap':>9} {'ring peak':>9} {'least CPU':>9}")
    for config in CONFIGS[1:]:
        x = s[config]
        print(f"{config.split('_')[1]:>14} {x['kpps']:6.0f} {x['over_untraced']:9.3f} "
              f"{x['ring_lost_per_s']:8.0f} {x['recorder_ns_per_record']:9.0f} "
              f"{x['drain_cpu_wait_share']:8.1%} {x['drain_max_gap_ms']:7.1f}ms "
              f"{x['ring_peak_fill']:9.1%} {x['least_cpu_share']:9.1%}")


def main():
    ap = benchlib.parser("drain_threads", __doc__, rounds=3, per_cpu=True)
    ap.add_argument("--payload", type=int, default=64, help="UDP payload, bytes")
    ap.add_argument("--seconds", type=float, default=4.0, help="measurement window per run")
    ap.add_argument("--record-args", default="", help="more options for hopscope record, "
                    "e.g. '--realtime 0'")
    a = ap.parse_args()
    if a.rounds < 1 or a.seconds <= 0 or not 0 < a.payload <= 1472:
        ap.error("--rounds, --seconds and --payload (1 to 1472) must be positive")
    if CPUS < 2:
        raise SystemExit("evaluation/bench/drain_threads.py: needs two CPUs or more")
    benchlib.preflight("drain_threads", ("iperf3",))
    env = dict(os.environ, HS_PREFIX=PREFIX)
    res = {"machine": benchlib.machine(), "cpus": CPUS, "payload": a.payload, "seconds": a.seconds, "streams": STREAMS,
           "rounds": []}
    server = []

    def body():
        subprocess.run([TESTBED, "up", "--mode", "rps", "--sink"], check=True, env=env,
                       stdout=subprocess.DEVNULL)
        spread_rps()
        server.append(subprocess.Popen(ns("receiver") + ["iperf3", "-s"], stdout=subprocess.DEVNULL,
                                       stderr=subprocess.DEVNULL))
        time.sleep(0.5)
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(a.rounds):
                rnd = {c: measure(c, a.payload, a.seconds, tmp, a.record_args.split())
                       for c in benchlib.rotated(CONFIGS, i)}
                res["rounds"].append(rnd)
                print(f"round {i + 1}/{a.rounds}: " + "  ".join(
                    f"{c} {rnd[c]['pps'] / 1e3:.0f} kpps" for c in CONFIGS), flush=True)

    def cleanup():
        for p in server:
            p.terminate()
            p.wait()
        subprocess.run([TESTBED, "down"], env=env, stdout=subprocess.DEVNULL)

    benchlib.measure("drain_threads", body, cleanup)
    res["summary"] = summarise(res["rounds"])
    benchlib.finish(res, a.output, report)


if __name__ == "__main__":
    main()
