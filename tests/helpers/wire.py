"""D-ITG streams through the testbed's router, each packet joined to its
record, and what evaluation/bench/generator_jitter.py, evaluation/bench/additivity.py and
tests/e2e/test_wire.py measure with them: a constant-rate stream's
inter-arrivals at the probes against the configured gap and against the
sender's own inter-departures; whether a record's stages are in order and
its delays add up; and D-ITG's one-way delay against the router's transit.

D-ITG's logs stamp with gettimeofday: microseconds, truncated. Its send
time is read before the send call (the payload carries it), its receive
time after the receive call, so on one clock, for every packet,

    tx ≤ t0 ≤ t1 ≤ ... ≤ t4 ≤ rx

(the namespaces share the host's clocks; the recording's header gives
CLOCK_MONOTONIC → REALTIME). evaluation/accuracy.md says what the numbers mean.
"""
import os
import subprocess
import time

import numpy as np
import pandas as pd

from hopscope.record.format import DELAYS, STAGE_NAMES
from hopscope.traffic import truth
from hopscope.traffic.generators import ditg

RECEIVER = "198.18.3.2"
SENDER = "198.18.1.2"
DPORT = 9999
RES_NS = 1000  # D-ITG's log resolution: one microsecond
# the stages in kernel order; a record's enabled ones must be too
ORDER = STAGE_NAMES
# derived column: (later stage, earlier stage) it must equal exactly
DERIVED = {col: (later, earlier) for col, later, earlier in DELAYS}
# parent: its parts, which must add up to it exactly
PARTS = {"transit": ("d_iq", "d_p", "d_oq"), "d_oq": ("d_opath", "d_qdisc")}


def ditg_stream(tb, tmp, name, gaps, count, size=200, send_cpu=0, recv_cpu=1, nice=None,
                timeout=120):
    """One D-ITG UDP stream of `count` packets of `size` payload bytes from
    sender1 to the receiver; gaps: ITGSend's gap options (["-C", pps] for
    constant gaps). Returns its packet table (ditg.packet_table: tx_ns, rx_ns
    CLOCK_REALTIME). tb: a hopscope.traffic.testbed.Testbed that is up; ITGRecv runs under it
    and is stopped here. nice: ITGSend's weight against the other tasks on
    its CPU, its session's autogroup nice (with autogroups, a task's own nice
    weighs only inside its session); None: as it comes."""
    send_log, recv_log = (os.path.join(tmp, f"{name}.{s}.log") for s in ("send", "recv"))
    for p in (send_log, recv_log):
        if os.path.exists(p):
            os.remove(p)
    env = dict(os.environ, **ditg.ENV)
    port = ditg.SIGNAL_PORT
    recv = tb.spawn("receiver", "taskset", "-c", str(recv_cpu),
                    *ditg.receiver_command(port, recv_log), env=env)
    try:
        _wait_listening(tb.prefix + "receiver", port, recv)
        start = time.time_ns()
        # -poll: busy-waited gaps (ditg.py: without it constant rates fall short)
        send = subprocess.Popen(["ip", "netns", "exec", tb.prefix + "sender1", "taskset", "-c",
                                 str(send_cpu), "ITGSend", "-Sdp", str(port),
                                 "-a", RECEIVER, "-rp", str(DPORT), "-T", "UDP", "-c", str(size),
                                 *gaps, "-z", str(count), "-poll", "-l", send_log],
                                env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, start_new_session=nice is not None)
        try:
            if nice is not None:  # before its first packet: it signals ITGRecv first
                with open(f"/proc/{send.pid}/autogroup", "w") as f:
                    f.write(str(nice))
            out, err = send.communicate(timeout=timeout)
        finally:
            if send.poll() is None:
                send.kill()
                send.wait()
        if send.returncode:
            raise RuntimeError(f"ITGSend failed ({send.returncode}): {out[-300:]} {err[-300:]}")
        ditg.wait_logs_closed([recv_log])
    finally:
        recv.terminate()
        recv.wait(timeout=10)
    return ditg.packet_table(send_log, recv_log, start)


def _wait_listening(netns, port, proc, timeout=10):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        ss = subprocess.run(["ip", "netns", "exec", netns, "ss", "-Hltn", f"sport = :{port}"],
                            capture_output=True, text=True)
        if ss.stdout.strip():
            return
        if proc.poll() is not None:
            raise RuntimeError(f"ITGRecv exited ({proc.returncode}) before listening")
        time.sleep(0.05)
    raise RuntimeError(f"ITGRecv did not listen on port {port} within {timeout} s")


def join(df, table, tmp):
    """One row per packet the stream sent (hopscope.traffic.truth.join_truth):
    seq, tx_ns, rx_ns (CLOCK_MONOTONIC, µs resolution), owd_ns, status and the
    record's stages (missing where the stage was not stamped)."""
    path = os.path.join(tmp, "stream.packets.parquet")
    table.to_parquet(path)
    sport = int(table["sport"].iloc[0]) if len(table) else 0
    meta = {"addresses": {"receiver": RECEIVER},
            "senders": {"s": {"address": SENDER, "sport": sport,
                              "files": {"packets": os.path.basename(path)}}},
            "condition": {"senders": {"s": {"protocol": "udp", "generator": "ditg",
                                            "port": DPORT}}}}
    return truth.join_truth(df, tmp, meta)


def counts(t):
    """sent (D-ITG's log), recorded, complete, received (ITGRecv's log), lost:
    sent but without a complete record, and not_received: complete but not
    in ITGRecv's log (it closes the log when the sender says the flow ended,
    before a queue behind the router has drained)."""
    complete = t["status"] == "complete"
    return {"sent": len(t), "recorded": int(t["recorded"].sum()), "complete": int(complete.sum()),
            "received": int(t["received"].sum()), "lost": int((~complete).sum()),
            "not_received": int((complete & ~t["received"]).sum())}


def gaps(t, col):
    """Gaps (ns) between packets of consecutive seq where both have col, as a
    Series indexed by the later packet's seq."""
    s = t.sort_values("seq").set_index("seq")[col].astype("Int64")  # exact ns
    consecutive = pd.Series(s.index, index=s.index).diff() == 1
    return s.diff()[consecutive].dropna().astype(float)


def spread(x):
    """Summary of errors in ns, in µs: n, mean, median, sd (plain: every
    sample), the robust sd (1.4826·MAD, the core without the tails), p99 and
    max of |x|."""
    x = np.asarray(x, dtype=float)
    if not len(x):
        return {"n": 0, "mean_us": None, "median_us": None, "sd_us": None,
                "robust_sd_us": None, "p99_abs_us": None, "max_abs_us": None}
    mad = np.median(np.abs(x - np.median(x)))
    return {"n": len(x), "mean_us": x.mean() / 1e3, "median_us": float(np.median(x)) / 1e3,
            "sd_us": x.std(ddof=1) / 1e3 if len(x) > 1 else None,
            "robust_sd_us": 1.4826 * mad / 1e3,
            "p99_abs_us": float(np.quantile(np.abs(x), 0.99)) / 1e3,
            "max_abs_us": float(np.abs(x).max()) / 1e3}


def jitter(t, gap_ns, stages=("t0", "t1")):
    """A constant-gap stream against its configured gap_ns. `sender`: D-ITG's
    inter-departures (tx_ns: µs stamps, read before each send) minus the
    gap; per stage: its inter-arrivals minus the gap; `path`: each
    inter-arrival minus the same pair's inter-departure, what the sender's
    stack and the probes add to the generator's own jitter; `from_first`:
    minus the same pair's inter-arrival at the first stage, what the path
    between the two probes adds."""
    dep = gaps(t, "tx_ns")
    done = t[t["status"] == "complete"]
    first = gaps(done, stages[0])
    out = {"sender": spread(dep - gap_ns)}
    for s in stages:
        arr = gaps(done, s)
        both, both0 = arr.index.intersection(dep.index), arr.index.intersection(first.index)
        out[s] = {**spread(arr - gap_ns), "path": spread(arr[both] - dep[both])}
        if s != stages[0]:
            out[s]["from_first"] = spread(arr[both0] - first[both0])
    return out


def additivity(df):
    """Every complete record against the kernel's order and its own sums.
    missing: enabled stages not stamped; order: for each pair of enabled
    stages next to each other, records where the later is earlier; derived:
    load()'s delay columns that differ from their stages' difference; sums:
    parents that differ from the sum of their parts. `violations`: records
    with any of order, derived or sums (missing stages are counted apart)."""
    c = df[df["status"] == "complete"]
    enabled = [s for s in ORDER if s in c.columns
               and (s in ("t1", "t2", "t3", "t4") or s in df.attrs["header"]["stages"])]
    out = {"records": len(c),
           "missing": {s: int((c[s] == 0).sum()) for s in enabled},
           "order": {}, "derived": {}, "sums": {}}
    bad = pd.Series(False, index=c.index)

    def count(kind, name, wrong):
        nonlocal bad
        out[kind][name] = int(wrong.sum())
        bad |= wrong

    for a, b in zip(enabled, enabled[1:]):
        count("order", f"{a}<={b}", (c[a] > 0) & (c[b] > 0) & (c[a] > c[b]))
    for col, (hi, lo) in DERIVED.items():
        if col in c.columns and hi in enabled and lo in enabled:
            count("derived", col, (c[hi] > 0) & (c[lo] > 0) & (c[col] != c[hi] - c[lo]))
    for parent, parts in PARTS.items():
        if all(p in c.columns for p in (parent, *parts)):
            have = c[[parent, *parts]].notna().all(axis=1)
            count("sums", parent, have & (sum(c[p] for p in parts) != c[parent]))
    out["violations"] = int(bad.sum())
    return out


def wire(t, first="t0", last="t4"):
    """D-ITG's one-way delay (rx − tx) against the router's transit (last −
    first), over packets received with a complete record. outside: owd −
    transit, the sender's stack, the veths and the receiver's stack; sender:
    first − tx; receiver: rx − last. Impossible beyond the logs' resolution:
    `transit_longer` (transit > owd + 1 µs), `before_send` (first < tx −
    1 µs), `after_receive` (last > rx + 1 µs); `impossible`: packets with any."""
    j = t[(t["status"] == "complete") & t["received"] & t[first].notna()]
    tx, rx = j["tx_ns"].astype(float), j["rx_ns"].astype(float)
    a, b = j[first].astype(float), j[last].astype(float)
    owd = j["owd_ns"].astype(float)
    out = {"packets": len(j)}
    for name, x in (("outside", owd - (b - a)), ("sender", a - tx), ("receiver", rx - b)):
        out[name] = quantiles(x)
    broken = {"transit_longer": b - a > owd + RES_NS, "before_send": a < tx - RES_NS,
              "after_receive": b > rx + RES_NS}
    out.update({k: int(v.sum()) for k, v in broken.items()})
    out["impossible"] = int((broken["transit_longer"] | broken["before_send"]
                             | broken["after_receive"]).sum())  # packets, each once
    return out


def swapped(df, a="t2", b="t3"):
    """The records with two stages' instants exchanged (wrong input)"""
    w = df.copy()
    w[a], w[b] = df[b], df[a]
    return w


def misjoined(t):
    """Each record with the next packet's log line (wrong input)"""
    w = t.sort_values("seq").reset_index(drop=True)
    for c in ("tx_ns", "rx_ns", "owd_ns", "received"):
        w[c] = w[c].shift(-1)
    w = w.iloc[:-1].copy()
    w["received"] = w["received"].astype(bool)
    return w


def quantiles(x):
    """min, median, p99 in µs"""
    if not len(x):
        return {"min_us": None, "median_us": None, "p99_us": None}
    return {"min_us": float(x.min()) / 1e3, "median_us": float(x.median()) / 1e3,
            "p99_us": float(x.quantile(0.99)) / 1e3}


def summarise(runs, counts, all_counts=False):
    """Rounds of one condition: the median over rounds of each number, the
    sum of each count (a key in counts; a dict under such a key is all
    counts), nested dicts the same way."""
    out = {}
    for k, v in runs[0].items():
        vals = [r[k] for r in runs]
        if isinstance(v, dict):
            out[k] = summarise(vals, counts, all_counts or k in counts)
        elif all_counts or k in counts:
            out[k] = sum(vals)
        else:
            vals = [x for x in vals if x is not None]
            out[k] = float(np.median(vals)) if vals else None
    return out

