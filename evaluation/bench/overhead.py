#!/usr/bin/env python3
"""What recording costs the router: its maximum forwarding rate untraced, with
empty programs at the same hooks (`hopscope record --floor`: the floor no
tracer at these hooks can beat), with programs that only read the clock once
(`--floor=clock`: the floor no tracer that stamps all four stages can beat),
with hopscope recording, with its aggregate
mode (`--aggregate`: histograms only), the same tracing one packet in 64
(`--aggregate --sample 64`), and with what a user would run instead: two
tcpdump captures, on the router's input and output (each pcap's
completeness against the packets forwarded).

The seven are interleaved round by round (order rotated) so drift in the
machine's load hits them alike; a window in which other work used the
router's CPU is measured again (the shield keeps only the bench's own
processes off it); ratios are taken within a round, then the
median over rounds. The router forwards inline on the sender's CPU (as in the
floor measurements of evaluation/measurements.md), the receiver drops the data with
an XDP sink, the recorder runs on the other CPU. A second pass with
kernel.bpf_stats_enabled gives ns per program run per stage (the stats cost
~35-40 ns per run themselves, so they stay off while rates are measured).

With --beside KIND the bench starts other work of its own after the testbed
is up, so the shield does not move it (beside.py: busy loops, forks, a
writer that syncs, memory churn), and keeps it running through every round:
the recorder then shares the machine as a production router's does. Each
traced run reports the recorder's own work from its END chunk: CPU time per
record, the longest gap between drains, the fullest a ring was at a drain,
the longest write(), and records lost in the rings per second.

    evaluation/bench/overhead.py [--payloads 64,1400] [--rounds 3] [--seconds 4] [--beside KIND]
Writes evaluation/results/overhead-CPU.json, one file per CPU (CPU: the
model, family and model number, e.g. intel-xeon-6-207), and prints a table
(evaluation/bench/overhead_table.py puts each CPU's in evaluation/overhead.md
and README). Needs root and `make`.
"""
import json
import os
import signal
import statistics
import subprocess
import tempfile
import time

import benchlib
import hopscope
from beside import BESIDE, Beside
from benchlib import ROOT
from captures import Capture
from overhead_table import ns_over_floor

PREFIX = os.environ.get("HS_PREFIX", "hsbench-")
HOPSCOPE = os.path.join(ROOT, "build", "hopscope")
TESTBED = os.path.join(ROOT, "testbed", "testbed.sh")
RECEIVER = "198.18.3.2"
CONFIGS = ("untraced", "floor", "clock", "traced", "tcpdump", "aggregate", "sampled")
SAMPLE_N = 64  # `sampled`: one packet in this many traced
# what hopscope record adds for each traced configuration
RECORD_ARGS = {"floor": ["--floor"], "clock": ["--floor=clock"], "traced": [],
               "aggregate": ["--aggregate"],
               "sampled": ["--aggregate", "--sample", str(SAMPLE_N)]}
IPERF_PORT = 5201
ROUTER_CPU = 0  # the inline testbed forwards on the senders' CPU
# another task's share of the router's CPU that voids a window, and how often
# one is measured again
FOREIGN, REPEATS = 0.02, 3
# The goals, written into the JSON for evaluation/bench/overhead_table.py: each summary
# ratio's least median (traced/floor is the one hopscope's own cost is judged
# by; aggregate/untraced and 1-in-64 sampling: evaluation/measurements.md), and
# each program's most ns per run against the empty program at its hook
GOALS = {"traced_over_untraced": 0.75, "traced_over_floor": 0.93,
         "aggregate_over_untraced": 0.80, "sampled_over_untraced": 0.85,
         "ns_per_run_over_floor": 2.0}


def ns(name):
    return ["ip", "netns", "exec", PREFIX + name]


def tx_packets():
    out = subprocess.run(ns("router") + ["cat", "/sys/class/net/r-rx/statistics/tx_packets"],
                         check=True, capture_output=True, text=True).stdout
    return int(out)


class Recorder:
    """hopscope record (RECORD_ARGS[config]) on CPU1, attached until stopped."""

    extra = []  # --record-args
    binary = HOPSCOPE  # another build's, to compare with (nat_cost.py)

    def __init__(self, config, path):
        cmd = ["taskset", "-c", "1", self.binary, "record", "-n", PREFIX + "router",
               "-i", "r-s1,r-s2", "-O", "r-rx", "-o", path, "--backend", "ebpf"] + self.extra
        cmd += RECORD_ARGS[config]
        # `ready` on the pipe once every link is in place; end of file: it failed
        r, w = os.pipe()
        try:
            self.proc = subprocess.Popen(cmd + ["--ready-fd", str(w)], pass_fds=(w,),
                                         stderr=subprocess.PIPE, text=True)
        finally:
            os.close(w)
        with os.fdopen(r, "rb") as ready:
            line = ready.readline()
        if line != b"ready\n":
            self.proc.wait()
            raise SystemExit(f"evaluation/bench/overhead.py: hopscope record did not start: "
                             f"{self.proc.stderr.read()}")

    def stop(self):
        self.proc.send_signal(signal.SIGINT)
        err = self.proc.stderr.read()
        if self.proc.wait():
            raise SystemExit(f"evaluation/bench/overhead.py: hopscope record failed:\n{err}")


def reshield():
    """This bench's own process kept off the router's CPU again (testbed.sh
    shield places its caller: what it started meanwhile may have widened)."""
    subprocess.run([TESTBED, "shield"], check=True, env=dict(os.environ, HS_PREFIX=PREFIX),
                   stdout=subprocess.DEVNULL)


def own_ticks(pid):
    """User and system ticks of a process this bench started (the sender)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()  # after the comm
    return int(fields[11]) + int(fields[12])


def foreign_share(before, after, seconds):
    """Share of the router's CPU that went to tasks other than the sender
    between two (benchlib.cpu_task_ticks, own_ticks of the sender) readings: other
    work, or the kernel's own threads (ksoftirqd forwarding deferred work
    counts too, so a window may be measured again for the router itself)."""
    ticks = (after[0] - before[0]) - (after[1] - before[1])
    return max(ticks, 0) / os.sysconf("SC_CLK_TCK") / seconds


def blast(payload, seconds, warmup=1.0):
    """Forwarded packets/s through r-rx while one iperf3 UDP stream sends as fast
    as it can; measured over `seconds` after a warm-up. Measured again (at most
    REPEATS times) while other work took more than FOREIGN of the router's CPU
    (foreign_share: the shield keeps only this bench's own processes off it).
    Returns the rate and how many windows were measured again."""
    for again in range(REPEATS + 1):
        reshield()
        client = subprocess.Popen(
            ns("sender1") + ["taskset", "-c", str(ROUTER_CPU), "iperf3", "-c", RECEIVER,
                             "-u", "-b", "0", "-l", str(payload),
                             "-t", str(seconds + warmup + 1), "-S", "4"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # the sender's own: ip netns exec and taskset exec iperf3, same pid
        try:
            time.sleep(warmup)
            n0, t0 = tx_packets(), time.monotonic()
            f0 = benchlib.cpu_task_ticks(ROUTER_CPU), own_ticks(client.pid)
            time.sleep(seconds)
            n1, t1 = tx_packets(), time.monotonic()
            f1 = benchlib.cpu_task_ticks(ROUTER_CPU), own_ticks(client.pid)
        finally:
            err = client.communicate()[1]
        if client.returncode:
            raise SystemExit(f"evaluation/bench/overhead.py: iperf3 failed: {err.strip()}")
        if foreign_share(f0, f1, t1 - t0) <= FOREIGN:
            break
    return (n1 - n0) / (t1 - t0), again


# END's userspace counts of the recorder's own work
RECORDER_KEYS = ("cpu_ns", "drain_cpu_wait_ns", "drain_max_gap_ns", "ring_records",
                 "ring_peak_waiting", "write_ns", "write_max_ns")


def measure(config, payload, seconds, tmp):
    """One rate measurement; for `traced` also how complete the recording was,
    for `aggregate` and `sampled` the packets completed (and left out), for
    `tcpdump` how complete each pcap was."""
    path = os.path.join(tmp, f"{config}-{payload}.hsr")
    rec = Recorder(config, path) if config in RECORD_ARGS else None
    taps = [Capture(PREFIX + "router", iface, way, os.path.join(tmp, f"{iface}-{payload}.pcap"),
                    cpu=1, port=IPERF_PORT)
            for iface, way in (("r-s1", "in"), ("r-rx", "out"))] if config == "tcpdump" else []
    before, started = tx_packets(), time.monotonic()
    try:
        rate, again = blast(payload, seconds)
    finally:
        time.sleep(0.1)
        after = tx_packets()
        if rec:
            rec.stop()
        dropped = [t.stop() for t in taps]
        lasted = time.monotonic() - started
    out = {"pps": rate, "repeated": again}
    if taps:
        # each pcap against the packets forwarded in the run (which include
        # iperf3's few TCP control packets: the taps' filter takes UDP only)
        out.update(forwarded=after - before, pcap_in=pcap_count(taps[0].path),
                   pcap_out=pcap_count(taps[1].path), tcpdump_dropped=sum(dropped))
    if config == "traced":
        df = hopscope.load(path)
        # the tracer's counters are the trailer's "counters" object
        c = (df.attrs["counters"] or {}).get("counters") or {}
        u = df.attrs["trailer"]["userspace"]
        out.update(forwarded=after - before, complete=int((df.status == "complete").sum()),
                   ring_lost=c.get("rb_fail", 0), evicted=c.get("evicted", 0),
                   # the accounting: every IP packet seen at t1 is a record, or
                   # lost in the ring, or for the router itself
                   seen=c["xdp_pkts"] - c["xdp_nonip"] - c["xdp_truncated"] - c["local"],
                   records=len(df), t4_unseen=u["t4_unseen"],
                   complete_counted=c["complete"], ring_lost_complete=c["rb_fail_complete"],
                   # the recorder's own work (docs/record-format.md), over the run
                   seconds=lasted, recorder={k: u[k] for k in RECORDER_KEYS})
    if config in ("aggregate", "sampled"):
        # no records: the packets the kernel completed, and those left out
        c = hopscope.load(path).attrs["trailer"]["counters"]
        out.update(forwarded=after - before, complete=c["complete"],
                   unsampled=c["unsampled"], seen=c["xdp_pkts"], evicted=c["evicted"])
    return out


def pcap_count(path):
    """Packets in a pcap file (its record headers)."""
    n = 0
    with open(path, "rb") as f:
        f.seek(24)
        while True:
            head = f.read(16)
            if len(head) < 16:
                return n
            caplen = int.from_bytes(head[8:12], "little")
            f.seek(caplen, 1)
            n += 1


def stats_pass(payload, seconds, tmp):
    """ns per program run per stage and traced configuration, with bpf_stats on."""
    out = {}
    for config in RECORD_ARGS:
        rec = Recorder(config, os.path.join(tmp, f"stats-{config}.hsr"))
        try:
            blast(payload, seconds, warmup=0.5)
            ids = prog_ids(rec.proc.pid)
            progs = json.loads(subprocess.run(["bpftool", "-j", "prog", "show"], check=True,
                                              capture_output=True, text=True).stdout)
        finally:
            rec.stop()
        # only this recorder's programs: other hopscope runs may share the machine
        mine = [p for p in progs if p["id"] in ids and p.get("run_cnt")]
        out[config] = {p["name"]: round(p["run_time_ns"] / p["run_cnt"], 1) for p in mine}
    return out


def prog_ids(pid):
    """The BPF programs a process holds, through its program and link fds
    (fdinfo's prog_id): bpftool's own pid lookup needs a bpftool built with
    skeletons, which Debian's is not."""
    ids = set()
    fdinfo = f"/proc/{pid}/fdinfo"
    for fd in os.listdir(fdinfo):
        try:
            with open(os.path.join(fdinfo, fd)) as f:
                ids |= {int(line.split()[1]) for line in f if line.startswith("prog_id:")}
        except OSError:
            continue  # closed meanwhile
    return ids


def sysctl(name, value=None):
    path = "/proc/sys/" + name.replace(".", "/")
    if value is None:
        with open(path) as f:
            return f.read().strip()
    with open(path, "w") as f:
        f.write(str(value))


def report(res, payloads):
    print(f"\nrouter forwarding rate, kpps (median of {len(res['rounds'])} interleaved rounds; "
          "ratios per round, then median)")
    print(f"{'payload':>8} {'untraced':>9} {'floor':>7} {'traced':>7} {'tcpdump':>8} "
          f"{'floor/un':>9} {'traced/un':>10} {'traced/floor':>13} {'tcpdump/un':>11} "
          f"{'complete':>9} {'ring lost':>10} {'pcap in':>8} {'pcap out':>9}")
    for p in payloads:
        s = res["summary"][str(p)]
        print(f"{p:>6} B {s['untraced_kpps']:9.0f} {s['floor_kpps']:7.0f} {s['traced_kpps']:7.0f} "
              f"{s['tcpdump_kpps']:8.0f} {s['floor_over_untraced']:9.3f} "
              f"{s['traced_over_untraced']:10.3f} {s['traced_over_floor']:13.3f} "
              f"{s['tcpdump_over_untraced']:11.3f} {s['completeness']:9.4%} {s['ring_lost']:10d} "
              f"{s['pcap_in_completeness']:8.2%} {s['pcap_out_completeness']:9.2%}")
    print(recorder_table(res, payloads))
    print(f"\nthe clock floor (one clock read per stage), kpps: {'payload':>8} {'clock':>6} "
          f"{'clock/floor':>12} {'traced/clock':>13}")
    for p in payloads:
        s = res["summary"][str(p)]
        print(f"{'':>49}{p:>6} B {s['clock_kpps']:6.0f} {s['clock_over_floor']:12.3f} "
              f"{s['traced_over_clock']:13.3f}")
    print(f"\naggregate mode, kpps: {'payload':>8} {'aggregate':>10} {'1 in 64':>8} "
          f"{'aggregate/un':>13} {'1in64/un':>9} {'aggregate/floor':>16} {'1in64/floor':>12}")
    for p in payloads:
        s = res["summary"][str(p)]
        print(f"{'':>22}{p:>6} B {s['aggregate_kpps']:10.0f} {s['sampled_kpps']:8.0f} "
              f"{s['aggregate_over_untraced']:13.3f} {s['sampled_over_untraced']:9.3f} "
              f"{s['aggregate_over_floor']:16.3f} {s['sampled_over_floor']:12.3f}")
    for p in payloads:
        ns_ = res["ns_per_run"][str(p)]
        names = sorted(set().union(*map(set, ns_.values())))
        print(f"\nns per program run, {p} B payload (bpf_stats on):")
        for n in names:
            print(f"  {n:<16} " + "   ".join(f"{c} {ns_[c].get(n, float('nan')):6.0f}"
                                             for c in RECORD_ARGS))
    repeated = sum(res["summary"][str(p)]["repeated"] for p in payloads)
    if repeated:
        print(f"\n{repeated} windows measured again: another task took more than "
              f"{FOREIGN:.0%} of the router's CPU")
    for key, goal in GOALS.items():
        if key == "ns_per_run_over_floor":
            worst = max(r for p in payloads
                        for r in ns_over_floor(res["ns_per_run"][str(p)]).values())
            print(f"goal traced ns per run <= {goal}x the empty program's: "
                  f"{'met' if worst <= goal else 'NOT met'} (worst {worst:.2f}x)")
            continue
        worst = min(res["summary"][str(p)][key] for p in payloads)
        print(f"goal {key.replace('_over_', '/')} >= {goal}: "
              f"{'met' if worst >= goal else 'NOT met'} (worst {worst:.3f})")


def _share(rs, config, n):
    fwd = sum(r[config]["forwarded"] for r in rs)
    return n * sum(r[config]["complete"] for r in rs) / fwd if fwd else 0.0


def summarise(rounds, payloads):
    summary = {}
    for p in payloads:
        rs = [r[str(p)] for r in rounds]
        med = lambda f: statistics.median(f(r) for r in rs)  # noqa: E731
        fwd = sum(r["traced"]["forwarded"] for r in rs)
        tfwd = sum(r["tcpdump"]["forwarded"] for r in rs)
        summary[str(p)] = {
            "untraced_kpps": med(lambda r: r["untraced"]["pps"]) / 1e3,
            "floor_kpps": med(lambda r: r["floor"]["pps"]) / 1e3,
            "traced_kpps": med(lambda r: r["traced"]["pps"]) / 1e3,
            "floor_over_untraced": med(lambda r: r["floor"]["pps"] / r["untraced"]["pps"]),
            "traced_over_untraced": med(lambda r: r["traced"]["pps"] / r["untraced"]["pps"]),
            "traced_over_floor": med(lambda r: r["traced"]["pps"] / r["floor"]["pps"]),
            "clock_kpps": med(lambda r: r["clock"]["pps"]) / 1e3,
            "clock_over_floor": med(lambda r: r["clock"]["pps"] / r["floor"]["pps"]),
            "traced_over_clock": med(lambda r: r["traced"]["pps"] / r["clock"]["pps"]),
            "tcpdump_kpps": med(lambda r: r["tcpdump"]["pps"]) / 1e3,
            "aggregate_kpps": med(lambda r: r["aggregate"]["pps"]) / 1e3,
            "sampled_kpps": med(lambda r: r["sampled"]["pps"]) / 1e3,
            "aggregate_over_untraced": med(lambda r: r["aggregate"]["pps"] / r["untraced"]["pps"]),
            "sampled_over_untraced": med(lambda r: r["sampled"]["pps"] / r["untraced"]["pps"]),
            "aggregate_over_floor": med(lambda r: r["aggregate"]["pps"] / r["floor"]["pps"]),
            "sampled_over_floor": med(lambda r: r["sampled"]["pps"] / r["floor"]["pps"]),
            "tcpdump_over_untraced": med(lambda r: r["tcpdump"]["pps"] / r["untraced"]["pps"]),
            # a pcap of the forwarded packets: the input tap may hold a few more
            # (sent before the window closed, forwarded after)
            "pcap_in_completeness": sum(r["tcpdump"]["pcap_in"] for r in rs) / tfwd if tfwd else 0.0,
            "pcap_out_completeness": sum(r["tcpdump"]["pcap_out"] for r in rs) / tfwd if tfwd else 0.0,
            "tcpdump_dropped": sum(r["tcpdump"]["tcpdump_dropped"] for r in rs),
            "completeness": sum(r["traced"]["complete"] for r in rs) / fwd if fwd else 0.0,
            # the packets completed in aggregate mode, and N x those of 1 in N,
            # against the packets forwarded
            "aggregate_completeness": _share(rs, "aggregate", 1),
            "sampled_estimate": _share(rs, "sampled", SAMPLE_N),
            # windows measured again: another task on the router's CPU
            "repeated": sum(r[c].get("repeated", 0) for r in rs for c in CONFIGS),
            "ring_lost": sum(r["traced"]["ring_lost"] for r in rs),
            "evicted": sum(r["traced"]["evicted"] for r in rs),
            **recorder_summary([r["traced"] for r in rs]),
        }
    return summary


def recorder_table(res, payloads):
    """The recorder's own work per payload, as report() prints it."""
    rows = [f"\nthe recorder ({res['beside']} beside): {'payload':>8} {'lost/s':>8} "
            f"{'ns/record':>10} {'CPU wait':>9} {'drain gap':>10} {'ring peak':>10} "
            f"{'write max':>10}"]
    rows += [f"{'':>22}{p:>6} B {s['ring_lost_per_s']:8.0f} {s['recorder_ns_per_record']:10.0f} "
             f"{s['drain_cpu_wait_share']:9.1%} {s['drain_max_gap_ms']:8.1f}ms "
             f"{s['ring_peak_fill']:10.1%} {s['write_max_ms']:8.1f}ms"
             for p in payloads for s in [res["summary"][str(p)]]]
    return "\n".join(rows)


def recorder_summary(runs):
    """The recorder's work over the traced runs: records lost in the rings per
    second, CPU time per record (ns = ms per million records), and the
    worst drain gap, ring fill and write()."""
    rec = [r["recorder"] for r in runs]
    records = sum(r["records"] + r["ring_lost"] for r in runs)
    return {"ring_lost_per_s": sum(r["ring_lost"] for r in runs) / sum(r["seconds"] for r in runs),
            "recorder_ns_per_record": sum(x["cpu_ns"] for x in rec) / records if records else 0.0,
            "drain_max_gap_ms": max(x["drain_max_gap_ns"] for x in rec) / 1e6,
            # the draining thread's time ready but without a CPU, per second
            "drain_cpu_wait_share": sum(x["drain_cpu_wait_ns"] for x in rec) / 1e9
            / sum(r["seconds"] for r in runs),
            "ring_peak_fill": max(x["ring_peak_waiting"] / x["ring_records"] for x in rec),
            "write_max_ms": max(x["write_max_ns"] for x in rec) / 1e6}


def main():
    ap = benchlib.parser("overhead", __doc__, rounds=3, per_cpu=True)
    cpu = benchlib.cpu()
    ap.add_argument("--payloads", default="64,1400", help="UDP payload sizes, bytes")
    ap.add_argument("--seconds", type=float, default=4.0, help="measurement window per run")
    ap.add_argument("--record-args", default="", help="more options for hopscope record, "
                    "e.g. '--slots 2048' (both floor and traced get them)")
    ap.add_argument("--beside", default="none", choices=BESIDE,
                    help="other work running through the rounds (beside.py; default none)")
    a = ap.parse_args()
    Recorder.extra = a.record_args.split()
    benchlib.preflight("overhead", ("iperf3", "tcpdump"))
    payloads = [int(x) for x in a.payloads.split(",")]
    env = dict(os.environ, HS_PREFIX=PREFIX)
    # the router's CPU kept for the measured path alone, as evaluation/measurements.md says
    subprocess.run([TESTBED, "up", "--mode", "inline", "--sink", "--shield", "router"],
                   check=True, env=env,
                   stdout=subprocess.DEVNULL)
    stats_was = sysctl("kernel.bpf_stats_enabled")
    server = subprocess.Popen(ns("receiver") + ["taskset", "-c", "1", "iperf3", "-s"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    res = {"date": time.strftime("%Y-%m-%d", time.gmtime()),  # README's table says it
           "rounds": [], "ns_per_run": {}, "machine": os.uname().release,
           "cpu": cpu, "cpus": os.cpu_count(), "seconds": a.seconds,
           "record_args": Recorder.extra, "beside": a.beside, "goals": GOALS}
    try:
        time.sleep(0.5)
        with tempfile.TemporaryDirectory() as tmp, Beside(a.beside, tmp):
            for i in range(a.rounds):
                order = benchlib.rotated(CONFIGS, i)
                rnd = {}
                for p in payloads:
                    rnd[str(p)] = {c: measure(c, p, a.seconds, tmp) for c in order}
                    print(f"round {i + 1}/{a.rounds} {p} B: " + "  ".join(
                        f"{c} {rnd[str(p)][c]['pps'] / 1e3:.0f} kpps" for c in CONFIGS), flush=True)
                res["rounds"].append(rnd)
        with tempfile.TemporaryDirectory() as tmp:
            sysctl("kernel.bpf_stats_enabled", 1)
            for p in payloads:
                res["ns_per_run"][str(p)] = stats_pass(p, min(a.seconds, 2.0), tmp)
    finally:
        sysctl("kernel.bpf_stats_enabled", stats_was)
        server.terminate()
        server.wait()
        subprocess.run([TESTBED, "down"], env=env, stdout=subprocess.DEVNULL)
    res["summary"] = summarise(res["rounds"], payloads)
    benchlib.finish(res, a.output, lambda res: report(res, payloads))


if __name__ == "__main__":
    main()
