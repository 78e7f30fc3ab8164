#!/usr/bin/env python3
"""hopscope over a long run: --seconds (default 600) of the load matrix's
constant-rate iperf3 stream (200 B, sender1, testbed rps, --sink, --shield
router) at the lossless rate, recorded in one file, since capture tools are
known to start losing packets only after 180-300 s.

Every --interval seconds (default 10) it samples the recorder's memory
(/proc/PID/status: VmRSS, RssAnon, VmHWM), its BPF maps' memlock
(/proc/PID/fdinfo of its map fds) and what the sink received. Afterwards,
from the file: completeness per window (complete records by t1 against
the packets the tracer counted in, edges at its own COUNTERS snapshots),
each loss counter's moves per window, and the totals against the packets
sent and received. Judged: no window under 100 % or with a loss, memory
bounded (evaluation/bench/loadlib.py: growth). The file (rate x seconds x 144 B) is
deleted afterwards.

--aggregate: the always-on mode instead (record --aggregate --snapshot,
COUNTERS every --interval): no records, so completeness per window is the
kernel's complete + dropped against the packets it took in, the total the
histograms' transit count against the packets sent and received; memory,
maps, and the file's and snapshot's sizes sampled the same way.

    evaluation/bench/soak.py [--seconds 600] [--rate PPS] [--interval 10] [--aggregate]
--rate defaults to the lossless rate in evaluation/results/load_matrix.json.
Writes evaluation/results/soak.json (soak_aggregate.json) and prints a summary.
Needs root and `make`.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np

import benchlib
import loadlib
from hopscope.record import format as fmt
from hopscope.record import hist
from hopscope.record.reader import RecordFile

PREFIX = os.environ.get("HS_PREFIX", "hst-sk-")
MATRIX = os.path.join(benchlib.RESULTS, "load_matrix.json")
MARGIN = 2 << 30  # disk left free beside the record file


def memory(pid):
    """The recorder's VmRSS, RssAnon, RssFile and VmHWM in bytes."""
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            key, _, val = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                out[key] = int(val.split()[0]) * 1024
    return out


def bpf_maps(pid):
    """{map id: {type, max_entries, memlock}} of the maps pid holds open."""
    maps = {}
    fdinfo = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                kv = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
        except OSError:
            continue  # closed meanwhile
        if "map_id" in kv:
            maps[int(kv["map_id"])] = {"type": int(kv["map_type"]),
                                       "max_entries": int(kv["max_entries"]),
                                       "memlock": int(kv["memlock"])}
    return maps


def busy_share(two):
    """The share of the time between two samples the router's CPU ran tasks."""
    if len(two) < 2:
        return 0.0
    a, b = two
    seconds = (b["mono_ns"] - a["mono_ns"]) / 1e9
    return (b["router_cpu_task_ticks"] - a["router_cpu_task_ticks"]) / os.sysconf(
        "SC_CLK_TCK") / seconds if seconds > 0 else 0.0


def size(path):
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def sample(bed, pid, t0, path):
    """One sample; its time is the middle of the sink's read."""
    before = time.monotonic_ns()
    received = int(bed.tb.run("sink").split()[1])  # "packets N bytes M"
    mid = (before + time.monotonic_ns()) // 2
    maps = bpf_maps(pid)
    return {"t_s": (mid - t0) / 1e9, "mono_ns": mid, "received": received, **memory(pid),
            "bpf_maps": len(maps), "bpf_memlock": sum(m["memlock"] for m in maps.values()),
            "file_bytes": size(path), "snapshot_bytes": size(path + ".json"),
            # how busy the router's CPU was with tasks (ours or others')
            "router_cpu_task_ticks": benchlib.cpu_task_ticks(int(bed.cpu("router"))),
            "loadavg": benchlib.loadavg()[0]}


def soak(bed, rate, seconds, interval, path, log, aggregate):
    """Record the stream for seconds, sampling; returns (samples, sent, the
    seconds iperf3 took to send them)."""
    bed.start_server(seconds)
    rec = bed.recorder(path, *(("--aggregate", "--snapshot", path + ".json",
                                "--counters-every", str(interval)) if aggregate else ()))
    try:
        t0 = time.monotonic_ns()
        samples = [sample(bed, rec.p.pid, t0, path)]
        client = bed.client(rate, seconds, timed=True)
        deadline = time.monotonic() + seconds + 60
        while True:
            if time.monotonic() > deadline:
                client.kill()
                raise loadlib.BenchError("iperf3 client ran a minute past its time")
            next_at = t0 / 1e9 + interval * len(samples)
            try:
                client.wait(timeout=max(0.0, next_at - time.monotonic()))
                break
            except subprocess.TimeoutExpired:
                samples.append(sample(bed, rec.p.pid, t0, path))
            s = samples[-1]
            log(f"{s['t_s']:6.0f} s: received {s['received'] - samples[0]['received']}, "
                f"RSS {s['VmRSS'] >> 10} KiB, BPF maps {s['bpf_memlock'] >> 10} KiB, "
                f"router's CPU running tasks {busy_share(samples[-2:]):.0%} of the last "
                f"interval, load {s['loadavg']}")
        sent, took = loadlib.client_sent(client, 30)
        time.sleep(loadlib.SETTLE_S)
        samples.append(sample(bed, rec.p.pid, t0, path))
        rec.stop()
    finally:
        rec.kill()
    return samples, sent, took


def analyse(path, samples, sent, interval):
    """Windows from the records and counters, totals, and the judgement."""
    rf = RecordFile(path)
    edges = loadlib.counter_edges(rf.header["start_monotonic_ns"], rf.snapshots, rf.trailer,
                                  interval)
    bounds = [e for e, _ in edges]
    sbounds = [s["mono_ns"] for s in samples]
    done = np.zeros(len(bounds) - 1, dtype=np.int64)
    sdone = np.zeros(len(sbounds) - 1, dtype=np.int64)
    complete_stream = 0
    whole = [fmt.STATUS["complete"], fmt.STATUS["dropped"]]
    for arr in rf.records:
        ok = arr["status"] == fmt.STATUS["complete"]
        mine = ok & (arr["proto"] == 17) & (arr["dport"] == loadlib.PORT) \
            & (arr["ip_len"] == loadlib.IP_LEN)
        done += loadlib.window_counts(bounds, arr["t1"], np.isin(arr["status"], whole))
        sdone += loadlib.window_counts(sbounds, arr["t1"], mine)
        complete_stream += int(mine.sum())
    entered = [0] + [loadlib.traced(e) for _, e in edges[1:]]
    wins = loadlib.windows(bounds, entered, done)
    losses = loadlib.edge_losses(edges)
    dropped = [0] + [e["counters"].get("dropped", 0) for _, e in edges[1:]]
    for w, lost, a, b in zip(wins, losses, dropped, dropped[1:]):
        w.update(t_s=(w["start_ns"] - bounds[0]) / 1e9, losses=lost, router_dropped=b - a)
    received = [s["received"] for s in samples]
    sampled = [{"t_s": a["t_s"], "received": b - r0, "complete": int(c),
                "completeness": loadlib.complete_share(int(c), b - r0)}
               for a, b, r0, c in zip(samples, received[1:], received, sdone)]
    t = [s["t_s"] for s in samples]
    total_received = received[-1] - received[0]
    return {
        "windows": wins, "sampled_windows": sampled,
        "totals": {"sent": sent, "received": total_received, "complete": complete_stream,
                   "complete_of_sent": loadlib.complete_share(complete_stream, sent),
                   "complete_of_received": loadlib.complete_share(complete_stream,
                                                                  total_received),
                   "records": rf.n_records, "file_problems": rf.problems,
                   "trailer": rf.trailer},
        "memory": {k: loadlib.growth(t, [s[k] for s in samples])
                   for k in ("VmRSS", "RssAnon", "bpf_memlock")},
        "late_loss_windows": loadlib.late_loss(wins, losses),
    }


def analyse_aggregate(path, samples, sent, interval):
    """Windows and totals from the kernel's own counts: the counters at each
    edge, the END chunk's histograms."""
    rf = RecordFile(path)
    edges = loadlib.counter_edges(rf.header["start_monotonic_ns"], rf.snapshots, rf.trailer,
                                  interval)
    whole = [0] + [e["counters"]["complete"] + e["counters"]["dropped"] for _, e in edges[1:]]
    entered = [0] + [loadlib.traced(e) for _, e in edges[1:]]
    wins = loadlib.windows([e for e, _ in edges], entered, np.diff(whole))
    losses = loadlib.edge_losses(edges)
    for w, lost in zip(wins, losses):
        w.update(t_s=(w["start_ns"] - edges[0][0]) / 1e9, losses=lost, router_dropped=0)
    complete = sum(s["count"] for s in hist.series(rf.trailer) or ()
                   if s["delay"] == "transit")
    received = samples[-1]["received"] - samples[0]["received"]
    t = [s["t_s"] for s in samples]
    return {
        "windows": wins,
        "totals": {"sent": sent, "received": received, "complete": complete,
                   "complete_of_sent": loadlib.complete_share(complete, sent),
                   "complete_of_received": loadlib.complete_share(complete, received),
                   "records": rf.n_records, "file_problems": rf.problems,
                   "counters_chunks": len(rf.snapshots), "trailer": rf.trailer},
        "memory": {k: loadlib.growth(t, [s[k] for s in samples])
                   for k in ("VmRSS", "RssAnon", "bpf_memlock")},
        "late_loss_windows": loadlib.late_loss(wins, losses),
    }


def report(res):
    print(f"\nsoak: {res['seconds']} s at {res['rate_pps']:.0f} pps asked, "
          f"{res['offered_pps']:.0f} pps offered over {res['send_seconds']:.0f} s; per window "
          "(whole records by t1 vs the tracer's count in; loss counters' moves; packets "
          "the router dropped, recorded)")
    print(f"{'t (s)':>6} {'entered':>9} {'whole':>9} {'completeness':>12} {'losses':>7} "
          f"{'router drops':>12}")
    for w in res["windows"]:
        print(f"{w['t_s']:6.0f} {w['entered']:9d} {w['whole']:9d} "
              f"{loadlib.fmt_share(w['completeness']):>12} {sum(w['losses'].values()):7d} "
              f"{w['router_dropped']:12d}")
    tot = res["totals"]
    print(f"\ntotal: sent {tot['sent']}, received {tot['received']}, complete {tot['complete']}: "
          f"{loadlib.fmt_share(tot['complete_of_received'])} of received, "
          f"{loadlib.fmt_share(tot['complete_of_sent'])} of sent")
    print(f"\n{'resource':>12} {'first':>12} {'max':>12} {'last':>12} {'slope B/s':>11} "
          f"{'2nd half':>9} {'bounded':>8}")
    for k, g in res["memory"].items():
        print(f"{k:>12} {g['first']:12.0f} {g['max']:12.0f} {g['last']:12.0f} "
              f"{g['slope_per_s'] or 0:11.1f} {g['late_slope_per_s'] or 0:9.1f} "
              f"{'yes' if g['bounded'] else 'NO':>8}")
    last = res["samples"][-1]
    print(f"\nfile {last['file_bytes']} bytes after {last['t_s']:.0f} s"
          + (f", snapshot {last['snapshot_bytes']} bytes" if res["aggregate"] else ""))
    bad = res["late_loss_windows"]
    print(f"\nlate loss: {'none' if not bad else 'in windows ' + ', '.join(map(str, bad))}; "
          f"load average (1 min) {res['loadavg_1min']['min']}-{res['loadavg_1min']['max']}")


def lossless_rate(path):
    try:
        with open(path) as f:
            return float(json.load(f)["lossless_pps"])
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemExit(f"evaluation/bench/soak.py: no lossless rate in {path} ({e}): run evaluation/bench/load_matrix.py "
                         "first, or give --rate")


def main():
    ap = benchlib.parser("soak", __doc__, epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--rate", type=float, metavar="PPS", help="default: load_matrix.json's")
    ap.add_argument("--interval", type=float, default=10, metavar="S")
    ap.add_argument("--aggregate", action="store_true",
                    help="the always-on mode: record --aggregate --snapshot (default output "
                         "soak_aggregate.json)")
    a = ap.parse_args()
    if a.aggregate and a.output == ap.get_default("output"):
        a.output = os.path.join(benchlib.RESULTS, "soak_aggregate.json")
    if a.seconds <= 0 or a.interval < 1 or (a.rate is not None and a.rate <= 0):
        ap.error("--seconds and --rate must be above 0, --interval at least 1")
    benchlib.preflight("soak", ("iperf3",))
    rate = a.rate if a.rate is not None else lossless_rate(MATRIX)
    res = {"machine": benchlib.machine(), "rate_pps": rate, "seconds": a.seconds,
           "interval_s": a.interval, "size": loadlib.SIZE,
           "generator": f"iperf3 -u -b RATE -l 200 --pacing-timer {loadlib.PACING_US}",
           "testbed": "rps, --sink, --shield router", "aggregate": a.aggregate}
    beds = []

    def run():
        with tempfile.TemporaryDirectory() as tmp:
            need = (0 if a.aggregate else rate * a.seconds * fmt.RECORD_SIZE * 1.1) + MARGIN
            if shutil.disk_usage(tmp).free < need:
                raise loadlib.BenchError(f"{tmp} has less than the {need / 2**30:.1f} GiB free "
                                         "the record file needs")
            path = os.path.join(tmp, "soak.hsr")
            beds.append(loadlib.Bed(PREFIX))
            samples, sent, took = soak(beds[0], rate, a.seconds, a.interval, path,
                                       lambda m: print(m, flush=True), a.aggregate)
            beds.pop().down()  # before the analysis: the testbed's CPUs for others
            res.update(offered_pps=sent / took, send_seconds=took,
                       file_bytes=os.path.getsize(path))
            res.update((analyse_aggregate if a.aggregate else analyse)(
                path, samples, sent, a.interval), samples=samples)

    benchlib.measure("soak", run, lambda: [b.down() for b in beds])
    res["loadavg_1min"] = loadlib.spread([s["loadavg"] for s in res["samples"]])
    benchlib.finish(res, a.output, report)


if __name__ == "__main__":
    main()
