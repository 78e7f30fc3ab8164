#!/usr/bin/env python3
"""hopscope's delay values against ground truth it does not produce.

Two captures: tcpdump on the router's input (r-s1) and output (r-rx) while
hopscope records with t0, UDP datagrams from sender1 that each carry a
counter (and iperf3's at its maximum rate); each packet's taps' transit
against t4 - t0 (the input tap stamps at netif_rx, before the RPS backlog),
at a low and at a high rate, with what each method lost. TBF physics: the
router's output shaped at three rates, offered 1.5 times the rate at two
payload sizes; departure gaps against frame / rate, and each queue wait
against the bytes ahead of it / rate. Beside each metric, the same from a
wrong stage, to show what it would catch.
Rounds repeat every condition (order rotated); a condition's numbers are
the median over rounds, its counts the sums. tests/helpers/captures.py holds
the methods (shared with tests/e2e/test_ground_truth.py); evaluation/accuracy.md
says what they mean.

    evaluation/bench/ground_truth.py [--rounds 3] [--rates 10,20,50] [--sizes 200,1400]
Writes evaluation/results/ground_truth.json and prints tables. Needs root and
`make`.
"""
import json
import os
import subprocess
import tempfile
import time

import benchlib
import hopscope
from benchlib import fmt
from captures import (PORT, Capture, join_taps, read_pcap, send_udp, tap_agreement,
                      tbf_physics, tbf_shaper)
from hopscope.traffic.testbed import Testbed
from testlib import Recorder
from wire import summarise

PREFIX = os.environ.get("HS_PREFIX", "hst-gtb-")
RECEIVER = "198.18.3.2"
TAP_SIZE = 200
# sender, pps (0: as fast as it goes), packets (iperf3: seconds)
TAP_RATES = {"low": ("udp", 5000, 20000), "high": ("udp", 0, 200000), "iperf3": ("iperf3", 0, 2)}
IPERF3_PORT = 5201
TBF_SECONDS = 2.0
TBF_LIMIT = "30kb"
OFFERED = 1.5
WRONG = {"t1_for_t0": {"first": "t1"}, "t3_for_t4": {"last": "t3"}}


class Run:
    """What one measurement started, killed whatever happens."""

    def __init__(self):
        self.procs = []

    def __enter__(self):
        return self

    def add(self, p):
        self.procs.append(p)
        return p

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()


def iperf3(tb, seconds):
    """iperf3 UDP, TAP_SIZE payload, as fast as it goes; the packets it sent"""
    tb.spawn("receiver", "iperf3", "-s", "-1")
    time.sleep(0.3)
    r = subprocess.run(["ip", "netns", "exec", PREFIX + "sender1", "taskset", "-c", "0", "iperf3",
                        "-c", RECEIVER, "-u", "-b", "0", "-l", str(TAP_SIZE), "-t", str(seconds),
                        "-J"], check=True, capture_output=True, text=True, timeout=60)
    return json.loads(r.stdout)["end"]["sum"]["packets"]


def backlog_drops():
    """Packets the kernel dropped at full input backlogs, all CPUs
    (/proc/net/softnet_stat's second column; machine-wide)."""
    with open("/proc/net/softnet_stat") as f:
        return sum(int(line.split()[1], 16) for line in f)


def two_captures(tb, name, tmp):
    kind, pps, n = TAP_RATES[name]
    port = IPERF3_PORT if kind == "iperf3" else PORT
    with Run() as run:
        router = PREFIX + "router"
        taps = [run.add(Capture(router, "r-s1", "in", os.path.join(tmp, "in.pcap"), port=port)),
                run.add(Capture(router, "r-rx", "out", os.path.join(tmp, "out.pcap"), port=port))]
        rec = run.add(Recorder(os.path.join(tmp, "taps.hsr"), "-q", "--stages", "t0",
                               prefix=PREFIX))
        backlog = backlog_drops()
        if kind == "iperf3":
            n = iperf3(tb, n)
        else:
            send_udp(PREFIX + "sender1", RECEIVER, n, TAP_SIZE, pps)
        backlog = backlog_drops() - backlog
        drops = [t.stop() for t in taps]
        rec.stop()
    df = hopscope.load(rec.out)
    c = df.attrs["counters"]["counters"]
    tin, tout = read_pcap(taps[0].path), read_pcap(taps[1].path)
    joined, lost = join_taps(tin, tout, df)
    off = df.attrs["header"]["mono_to_realtime_ns"]
    span = (tin.ts.max() - tin.ts.min()) / 1e9
    out = {"sent": n, "offered_pps": pps, "achieved_pps": len(tin) / span if span else None,
           "records": int((df.proto == 17).sum()), "tap_in": len(tin), "tap_out": len(tout),
           "joined": len(joined), "tcpdump_dropped_in": drops[0], "tcpdump_dropped_out": drops[1],
           # packets dropped before either tap or XDP: seen at t0 (netif_rx) only
           "backlog_dropped": backlog, "t0_not_xdp": c["t0_pkts"] - c["xdp_pkts"],
           **lost, **tap_agreement(joined, off)}
    for wrong, kw in WRONG.items():
        out[wrong] = tap_agreement(joined, off, **kw)
    return out


def tbf(rate_mbit, size, tmp):
    rate = rate_mbit * 1e6
    pps = OFFERED * rate / 8 / (size + 42)  # 42: UDP, IP and Ethernet headers
    with Run() as run:
        rec = run.add(Recorder(os.path.join(tmp, "tbf.hsr"), "-q", prefix=PREFIX))
        send_udp(PREFIX + "sender1", RECEIVER, int(pps * TBF_SECONDS), size, pps)
        rec.stop()
    df = hopscope.load(rec.out)
    udp = df[df.proto == 17]
    shaper = tbf_shaper(PREFIX + "router", "r-rx")
    out = {"offered_pps": pps, "complete": int((udp.status == "complete").sum()),
           "dropped": int((udp.status == "dropped").sum()), "bucket_bytes": shaper[1],
           **tbf_physics(df, shaper)}
    out["t2_for_t3"] = tbf_physics(df, shaper, enq="t2")
    out["t3_for_t4"] = tbf_physics(df, shaper, enq="t2", deq="t3")
    return out


def testbed(tb, *args):
    """tb brought up afresh with the sink and args"""
    tb.down()
    tb.up("--sink", *args)


# what summarise() sums over the rounds; every other number is their median
COUNTS = {"sent", "records", "tap_in", "tap_out", "joined", "tcpdump_dropped_in",
          "backlog_dropped", "t0_not_xdp", "tcpdump_dropped_out", "in_tap_not_out_tap",
          "out_tap_not_in_tap", "taps_not_recorded", "recorded_not_in_taps", "key_shared",
          "packets", "impossible", "span_shorter", "complete", "dropped", "gaps",
          "wait_packets"}


def machine():
    """benchlib's, with whether the kernel stamps before RPS (the taps' stamps)."""
    with open("/proc/sys/net/core/netdev_tstamp_prequeue") as f:
        return {**benchlib.machine(), "netdev_tstamp_prequeue": f.read().strip()}


def report(res):
    print("\ntwo captures vs t4 - t0 (µs; |Δ| = |(t4 - t0) - (tap_out - tap_in)|)")
    print(f"{'rate':>6} {'kpps':>6} {'sent':>7} {'joined':>7} {'med |Δ|':>8} {'p99 |Δ|':>8} {'imposs.':>8} "
          f"{'shorter':>8} {'lost in→out':>11} {'not rec.':>8} {'tcpdump drop':>12} "
          f"{'backlog drop':>12} {'t0 only':>8} {'med |Δ| t1':>10} {'imposs. t3':>10}")
    for name, s in res["two_captures"]["summary"].items():
        print(f"{name:>6} {fmt(s['achieved_pps'] / 1e3, '6.1f')} {s['sent']:7d} {s['joined']:7d} "
              f"{fmt(s['median_abs_us'], '8.2f')} {fmt(s['p99_abs_us'], '8.2f')} "
              f"{s['impossible']:8d} {s['span_shorter']:8d} "
              f"{s['in_tap_not_out_tap'] + s['out_tap_not_in_tap']:11d} "
              f"{s['taps_not_recorded']:8d} "
              f"{s['tcpdump_dropped_in'] + s['tcpdump_dropped_out']:12d} "
              f"{s['backlog_dropped']:12d} {s['t0_not_xdp']:8d} "
              f"{fmt(s['t1_for_t0']['median_abs_us'], '10.2f')} {s['t3_for_t4']['impossible']:10d}")
    print("\nTBF: relative errors (median, p99 of |err|); backlogged gaps vs frame/rate (sum: "
          "their total, net of the tokens a full bucket threw away (overflow), over frames/rate), "
          "waits vs (last departure + bytes ahead + own) / rate, simple: bytes ahead / rate")
    print(f"{'Mbit/s':>6} {'size':>5} {'gaps':>6} {'gap med':>8} {'gap p99':>8} {'gap sum':>8} "
          f"{'overflow ms':>11} "
          f"{'wait med':>9} "
          f"{'wait p99':>9} {'simple med':>10} {'simple p99':>10} {'wait pkts t3':>12}")
    for key, s in res["tbf"]["summary"].items():
        rate, size = key.split("/")
        print(f"{rate:>6} {size:>5} {s['gaps']:6d} {fmt(s['gap_rel_err_median'], '8.4f')} "
              f"{fmt(s['gap_rel_err_p99_abs'], '8.3f')} {fmt(s['gap_sum_ratio'], '8.5f')} "
              f"{fmt(s['overflow_ms'], '11.3f')} {fmt(s['wait_rel_err_median'], '9.4f')} "
              f"{fmt(s['wait_rel_err_p99_abs'], '9.4f')} "
              f"{fmt(s['wait_simple_rel_err_median'], '10.4f')} "
              f"{fmt(s['wait_simple_rel_err_p99_abs'], '10.4f')} "
              f"{s['t3_for_t4']['wait_packets']:12d}")


def main():
    ap = benchlib.parser("ground_truth", __doc__, rounds=3)
    ap.add_argument("--rates", default="10,20,50", help="TBF rates, Mbit/s")
    ap.add_argument("--sizes", default="200,1400", help="UDP payload sizes for the TBF, bytes")
    a = ap.parse_args()
    rates = [int(x) for x in a.rates.split(",")]
    sizes = [int(x) for x in a.sizes.split(",")]
    benchlib.preflight("ground_truth", ("iperf3", "tcpdump"))
    res = {"machine": machine(), "rounds": a.rounds, "tap_size": TAP_SIZE,
           "tap_rates": TAP_RATES, "tbf_seconds": TBF_SECONDS, "tbf_limit": TBF_LIMIT,
           "offered": OFFERED, "testbed": "rps, --sink, --shield router",
           "two_captures": {"runs": {n: [] for n in TAP_RATES}},
           "tbf": {"runs": {f"{r}/{s}": [] for r in rates for s in sizes}}}
    tb = Testbed(PREFIX)

    def rounds():
        with tempfile.TemporaryDirectory() as tmp:
            for i in range(a.rounds):
                testbed(tb)
                for name in benchlib.rotated(list(TAP_RATES), i):
                    r = two_captures(tb, name, tmp)
                    res["two_captures"]["runs"][name].append(r)
                    print(f"round {i + 1} taps {name}: {r['joined']} joined, median |Δ| "
                          f"{fmt(r['median_abs_us'], '.2f')} µs, impossible {r['impossible']}",
                          flush=True)
                for rate in benchlib.rotated(rates, i):
                    testbed(tb, "--shape", f"tbf:{rate}mbit:{TBF_LIMIT}")
                    for size in sizes:
                        r = tbf(rate, size, tmp)
                        res["tbf"]["runs"][f"{rate}/{size}"].append(r)
                        print(f"round {i + 1} tbf {rate} Mbit/s {size} B: gap median "
                              f"{fmt(r['gap_rel_err_median'], '.4f')}, wait median "
                              f"{fmt(r['wait_rel_err_median'], '.4f')}", flush=True)

    benchlib.measure("ground_truth", rounds, tb.down)
    for part in ("two_captures", "tbf"):
        res[part]["summary"] = {k: summarise(v, COUNTS) for k, v in res[part]["runs"].items()}
    benchlib.finish(res, a.output, report)


if __name__ == "__main__":
    main()
