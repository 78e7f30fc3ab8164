"""Ground truth for hopscope's delays, independent of its probes: tcpdump on
the router's interfaces, UDP datagrams that carry their own counter, and the
physics of a token bucket. Shared by tests/e2e/test_ground_truth.py and
evaluation/bench/ground_truth.py, which say what is compared and why."""
import json
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import pandas as pd

from hopscope.traffic import packetkey as pk

ETH = 14  # Ethernet header: tcpdump's frames and the bytes a qdisc counts
PORT = 9  # send_udp's destination port (discard): the sink drops them


def send_udp(netns, dst, n, size, pps=0, cpu=0):
    """n datagrams of `size` payload bytes from netns, each starting with its
    8-byte index, at pps (busy-waited gaps; 0: as fast as the socket takes
    them). A blocking socket with a large buffer, so none is lost at the
    sender. Returns once all are sent."""
    code = ("import socket,struct,time\n"
            "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
            "s.setsockopt(socket.SOL_SOCKET,socket.SO_SNDBUF,1<<24)\n"
            f"b=bytearray({size});a=('{dst}',{PORT});g={1 / pps if pps else 0}\n"
            "t=time.perf_counter()\n"
            f"for i in range({n}):\n"
            "    struct.pack_into('>Q',b,0,i);s.sendto(b,a)\n"
            "    if g:\n"
            "        t+=g\n"
            "        while time.perf_counter()<t:pass\n")
    subprocess.run(["ip", "netns", "exec", netns, "taskset", "-c", str(cpu), sys.executable,
                    "-c", code], check=True, timeout=300)


class Capture:
    """tcpdump on one interface of netns, one direction, UDP to `port` only,
    nanosecond stamps. stop() waits for the last batch (its 1 s buffer
    timeout would lose it silently) and reads the kernel's drop count."""

    def __init__(self, netns, iface, direction, path, cpu=0, port=PORT):
        self.path = path
        self.p = subprocess.Popen(
            ["ip", "netns", "exec", netns, "taskset", "-c", str(cpu), "tcpdump", "-i", iface,
             "-Q", direction, "-n", "-s", "96", "-B", "16384", "--time-stamp-precision", "nano",
             "-w", path, f"udp dst port {port}"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        # it prints "listening on" once the socket is bound
        line = self.p.stderr.readline()
        if "listening" not in line:
            self.kill()
            raise RuntimeError(f"tcpdump did not start: {line}")

    def stop(self):
        time.sleep(1.5)
        self.p.send_signal(signal.SIGINT)
        err = self.p.communicate(timeout=30)[1]
        stats = {}
        for line in err.splitlines():
            words = line.split()
            if len(words) > 2 and words[0].isdigit():
                stats[" ".join(words[1:])] = int(words[0])
        return stats.get("packets dropped by kernel", -1)

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def read_pcap(path):
    """UDP/IPv4 packets of an Ethernet pcap (nanosecond or microsecond stamps):
    DataFrame with ts (ns, CLOCK_REALTIME), counter and counter2 (the
    payload's first 8 bytes and the 4 after: send_udp's index; iperf3's send
    time and packet count), ip_len, ip_id and key (hopscope's packet key recomputed from the
    bytes as captured: include/hopscope.h, hs_key_hash)."""
    with open(path, "rb") as f:
        data = f.read()
    magic = struct.unpack_from("<I", data)[0]
    frac = {0xA1B23C4D: 1, 0xA1B2C3D4: 1000}[magic]
    ts, counter, counter2, ip_len, ip_id, words = [], [], [], [], [], []
    off = 24
    while off + 16 <= len(data):
        sec, sub, caplen, _ = struct.unpack_from("<IIII", data, off)
        frame = data[off + 16:off + 16 + caplen]
        off += 16 + caplen
        ip = frame[ETH:]
        if frame[12:14] != b"\x08\x00" or ip[9] != 17:
            continue
        hl = (ip[0] & 15) * 4
        length, ident = struct.unpack_from(">HH", ip, 2)
        udp = ip[hl:hl + 8]
        payload = ip[hl + 8:length][:16].ljust(16, b"\0")
        w = np.zeros(pk.WORDS, dtype=np.uint32)
        w[0] = struct.unpack_from("<I", ip, 12)[0]
        w[4] = struct.unpack_from("<I", ip, 16)[0]
        w[8:10] = struct.unpack("<II", udp)
        w[12:16] = struct.unpack("<IIII", payload)
        w[16] = 17 << 16 | length
        ts.append(sec * 10**9 + sub * frac)
        counter.append(struct.unpack_from(">Q", payload)[0])
        counter2.append(struct.unpack_from(">I", payload, 8)[0])
        ip_len.append(length)
        ip_id.append(ident)
        words.append(w)
    keys = pk.key_hash(np.array(words)) if words else np.zeros(0, np.uint32)
    return pd.DataFrame({"ts": np.array(ts, dtype=np.int64), "counter": counter,
                         "counter2": counter2,
                         "ip_len": ip_len, "ip_id": ip_id, "key": keys})


def join_taps(tap_in, tap_out, records):
    """The packets seen by both taps (by counters; the IP id must agree too),
    each with its hopscope record (by key, keys seen once on each side only).
    Returns (joined, lost): lost counts each side's packets absent from the
    others."""
    ids = ["counter", "counter2"]
    both = tap_in.merge(tap_out[ids + ["ts", "ip_id"]], on=ids, how="outer",
                        suffixes=("_in", "_out"), indicator=True)
    side = both.pop("_merge")
    both = both[(side == "both") & (both.ip_id_in == both.ip_id_out)]
    rec = records[records.proto == 17]
    once = ~rec.key.duplicated(keep=False)
    unique = ~both.key.duplicated(keep=False) & both.key.isin(set(rec.key[once]))
    joined = both[unique].merge(rec[once][["key", "status", "t0", "t1", "t2", "t3", "t4"]],
                                on="key")
    recorded = both.key.isin(set(rec.key))
    lost = {"in_tap_not_out_tap": int((side == "left_only").sum()),
            "out_tap_not_in_tap": int((side == "right_only").sum()),
            "taps_not_recorded": int((~recorded).sum()),
            "recorded_not_in_taps": int((~rec.key.isin(set(tap_in.key) | set(tap_out.key))).sum()),
            # 32-bit keys: two packets of a long run may share one
            "key_shared": int((recorded & ~unique).sum())}
    return joined, lost


def tap_agreement(joined, mono_to_real, first="t0", last="t4"):
    """Over complete records with both stamps: Δ = (last − first) − (tap_out −
    tap_in), hopscope's span minus the taps' (ns). The input tap stamps at
    netif_rx just before t0, the output tap in xmit_one after the qdisc and
    just before t4, so for the right stages tap_in ≤ first and t3 ≤ tap_out
    ≤ last on the common clock (mono_to_real: the recording's
    CLOCK_MONOTONIC → REALTIME offset): any of these broken is `impossible`. `span_shorter` counts Δ < 0, which
    an interrupt between a tap's stamp and the probe's can make real."""
    j = joined[(joined.status == "complete") & (joined[first] > 0)]
    d = (j[last] - j[first]) - (j.ts_out - j.ts_in)
    broken = ((j[first] + mono_to_real < j.ts_in) | (j[last] + mono_to_real < j.ts_out)
              | (j.t3 + mono_to_real > j.ts_out))
    a = d.abs()
    return {"packets": len(d), "median_abs_us": _q(a, 0.5) / 1e3 if len(d) else None,
            "p99_abs_us": _q(a, 0.99) / 1e3 if len(d) else None,
            "impossible": int(broken.sum()), "span_shorter": int((d < 0).sum())}


def tbf_shaper(netns, dev):
    """the root TBF of dev in netns as the kernel holds it: (rate in bit/s,
    bucket in bytes)"""
    out = subprocess.run(["tc", "-n", netns, "-j", "qdisc", "show", "dev", dev], check=True,
                         capture_output=True, text=True).stdout
    opts = next(q["options"] for q in json.loads(out) if q["kind"] == "tbf" and q.get("root"))
    return opts["rate"] * 8, opts["burst"]


def tbf_physics(records, shaper, enq="t3", deq="t4"):
    """A TBF (shaper: rate in bit/s and bucket in bytes, as tbf_shaper gives
    them), offered more than it passes. Departure gaps: deq of
    consecutive packets where the later one was queued before the earlier
    left (backlogged: a sender that falls behind empties the queue), against
    the later one's frame (IP length + Ethernet header, as the qdisc counts
    it) / rate. Queue wait: each packet's deq − enq against when the
    bucket lets it go: the last departure before its enq, plus the bytes ahead
    of it (enq earlier, deq later) and its own, over the rate; `simple` is
    the bytes ahead alone over the rate. enq/deq name the stages taken as
    the qdisc's enqueue and departure (t3, t4). A packet that left with its
    t4 probe skipped (flagged t4_unseen: docs/troubleshooting.md) took its tokens
    too: its departure is put just before the next one's, as a backlogged
    bucket sends them, and no gap is judged across it. The gaps' total is
    judged net of the tokens a full bucket threw away: a qdisc serviced later
    than the bucket lasts (a busy CPU) loses that time for good, and only
    that time (`overflow_ms`); a late t4 stamp followed by an early one
    keeps its error in the total."""
    rate_bps, burst = shaper
    left = (records.status == "complete") | ((records["flags"].to_numpy() & 0x80) != 0)
    c = records[left & (records.proto == 17) & (records[enq] > 0)].sort_values(enq)
    a, d = c[enq].to_numpy(), c[deq].to_numpy().astype(float)
    cost = (c.ip_len.to_numpy() + ETH) * 8e9 / rate_bps  # ns of tokens per packet
    seen = d > 0
    for k in np.flatnonzero(~seen)[::-1]:      # FIFO: departures in enqueue order
        d[k] = d[k + 1] - cost[k + 1] if k + 1 < len(d) else np.nan
    keep = ~np.isnan(d)
    a, d, cost, seen = a[keep], d[keep], cost[keep], seen[keep]
    order = np.argsort(d, kind="stable")
    a, d, cost, seen = a[order], d[order], cost[order], seen[order]
    back = (a[1:] < d[:-1]) & seen[1:] & seen[:-1]
    gap_err = (np.diff(d) / cost[1:] - 1)[back]
    overflow = _bucket_overflow(np.diff(d), cost[1:], back, burst * 8e9 / rate_bps)
    # token-ns ahead of each enq: arrived before it minus departed by it
    order = np.argsort(a, kind="stable")
    cum_arr = np.concatenate([[0], np.cumsum(cost[order])])
    cum_dep = np.concatenate([[0], np.cumsum(cost)])
    departed = np.searchsorted(d, a, side="right")
    ahead = cum_arr[np.searchsorted(a[order], a, side="left")] - cum_dep[departed]
    queued = (ahead > 0) & (departed > 0)
    want = d[np.maximum(departed - 1, 0)] + ahead + cost - a
    wait = d - a
    with np.errstate(divide="ignore", invalid="ignore"):
        wait_err = (wait / want - 1)[queued]
        simple_err = (wait / ahead - 1)[queued]
    return {"gaps": len(gap_err), "wait_packets": int(queued.sum()),
            "gap_rel_err_median": _q(gap_err, 0.5), "gap_rel_err_p99_abs": _q(np.abs(gap_err), 0.99),
            # the bucket's own claim: over backlogged gaps, time = bytes / rate
            "gap_sum_ratio": float((np.diff(d)[back].sum() - overflow) / cost[1:][back].sum())
            if back.any() else None,
            "overflow_ms": overflow / 1e6,
            "wait_rel_err_median": _q(wait_err, 0.5),
            "wait_rel_err_p99_abs": _q(np.abs(wait_err), 0.99),
            "wait_simple_rel_err_median": _q(simple_err, 0.5),
            "wait_simple_rel_err_p99_abs": _q(np.abs(simple_err), 0.99)}


def _bucket_overflow(gaps, cost, back, bucket):
    """ns of tokens a bucket of `bucket` ns threw away in backlogged gaps:
    it starts full, fills over each gap up to `bucket`, and each departure
    takes its cost"""
    tokens, lost = bucket, 0.0
    for gap, c, b in zip(gaps.tolist(), cost.tolist(), back.tolist()):
        tokens += gap
        if tokens > bucket:
            lost += (tokens - bucket) if b else 0.0
            tokens = bucket
        tokens -= c
    return lost


def _q(x, q):
    return float(np.quantile(x, q)) if len(x) else None
