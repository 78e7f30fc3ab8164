"""D-ITG driver: one ITGRecv per sender in the receiver (each on its own
signalling port: one ITGRecv asked by two senders at once for two logs
(ITGSend -x) once wrote both flows into one of them), one ITGSend per sender,
and their binary logs decoded with ITGDec into one table per sender.

D-ITG writes times of day (no date) in the local time zone: every D-ITG
program runs with TZ=UTC so the runner can put the date back. ITGSend's -sp
fails here ("Address family not supported"), so the kernel picks the source
port and the logs say which.
"""
import os
import re
import subprocess
import time

import numpy as np
import pandas as pd

SIGNAL_PORT = 9000  # ITGRecv's TCP signalling port; the k-th D-ITG sender's is 9000 + k
ENV = {"TZ": "UTC"}
LINE = re.compile(rb"Flow>\s*(\d+) Seq>\s*(\d+) Src>\s*\S+/(\d+) Dest>\s*\S+/(\d+) "
                  rb"txTime>(\d+):(\d+):(\d+)\.(\d{6}) rxTime>(\d+):(\d+):(\d+)\.(\d{6}) "
                  rb"Size>\s*(\d+)")
DAY_NS = 86_400 * 10**9


def signal_ports(senders):
    """sender name -> its ITGRecv's signalling port, for the D-ITG senders."""
    ditg = [s.name for s in senders if s.generator == "ditg"]
    return {name: SIGNAL_PORT + k for k, name in enumerate(ditg)}


def receiver_command(signal_port, recv_log):
    return ["ITGRecv", "-Sp", str(signal_port), "-l", recv_log]


def sender_command(s, dest, signal_port, send_log):
    """ITGSend's arguments for a scenario.Sender (log: an absolute path)."""
    cmd = ["ITGSend", "-Sdp", str(signal_port), "-a", dest, "-rp", str(s.port),
           "-T", s.protocol.upper(), "-b", str(s.tos)]
    cmd += size_options(s.size) + gap_options(s)
    if s.count:
        cmd += ["-z", str(s.count)]
    else:
        cmd += ["-t", str(max(1, round(s.duration * 1000)))]
    if s.seed is not None:
        cmd += ["-s", repr(s.seed)]
    # -poll: busy-wait gaps under 1 ms, without it constant rates are off
    # (measured: 5637 pps sent for 11200 asked)
    return cmd + ["-poll", "-l", send_log]


def size_options(size):
    d = size["dist"]
    if d == "constant":
        return ["-c", str(size["value"])]
    if d == "normal":
        return ["-n", _num(size["mean"]), _num(size["std"])]
    if d == "pareto":
        return ["-v", _num(size["shape"]), _num(size["scale"])]
    return ["-u", _num(size["min"]), _num(size["max"])]


def gap_options(s):
    d = s.gaps["dist"]
    if d == "constant":
        return ["-C", _num(s.rate)]
    if d == "exponential":
        return ["-E", _num(s.rate)]  # a Poisson process (-O draws Poisson-distributed gaps)
    return ["-V", _num(s.gaps["shape"]), _num(s.pareto_scale_ms())]


def _num(x):
    return f"{x:.10g}"


def decode(log, txt):
    """ITGDec LOG -l TXT; returns the text's bytes. An empty log decodes to nothing."""
    if os.path.getsize(log) == 0:
        return b""
    env = dict(os.environ, **ENV)
    # stdout is a progress spinner; errors go there too, so keep it for the message
    r = subprocess.run(["ITGDec", log, "-l", txt], env=env, capture_output=True)
    if r.returncode != 0 or not os.path.exists(txt):
        raise RuntimeError(f"ITGDec {log} failed: {r.stdout[-300:]!r} {r.stderr[-300:]!r}")
    with open(txt, "rb") as f:
        return f.read()


def parse(text, day_start_ns):
    """Decoded log lines -> DataFrame: flow, seq, sport, dport, size, tx_ns, rx_ns
    (CLOCK_REALTIME ns). day_start_ns: UTC midnight of the day the run started;
    times of day before the run's first one belong to the next day."""
    rows = np.array(LINE.findall(text), dtype=np.int64).reshape(-1, 13)
    n_lines = text.count(b"\n")
    if len(rows) != n_lines:
        raise RuntimeError(f"ITGDec wrote {n_lines} lines, {len(rows)} of them packets: "
                           "the log format is not the one this parser knows")

    def tod(c):
        h, m, s, us = (rows[:, c + i] for i in range(4))
        return ((h * 60 + m) * 60 + s) * 10**9 + us * 1000

    tx, rx = tod(4), tod(8)
    first = tx.min() if len(tx) else 0
    tx = day_start_ns + tx + np.where(tx < first - DAY_NS // 2, DAY_NS, 0)
    rx = day_start_ns + rx + np.where(rx < first - DAY_NS // 2, DAY_NS, 0)
    return pd.DataFrame({"flow": rows[:, 0], "seq": rows[:, 1], "sport": rows[:, 2],
                         "dport": rows[:, 3], "size": rows[:, 12], "tx_ns": tx, "rx_ns": rx})


def packet_table(send_log, recv_log, run_start_ns):
    """One row per packet ITGSend sent: flow, seq, sport, dport, size, tx_ns and
    rx_ns (from ITGRecv's log; missing when the receiver did not log it)."""
    day = run_start_ns - run_start_ns % DAY_NS
    sent = parse(decode(send_log, send_log + ".txt"), day)
    got = parse(decode(recv_log, recv_log + ".txt"), day)
    for p in (send_log, recv_log):
        if os.path.exists(p + ".txt"):
            os.remove(p + ".txt")  # the Parquet table holds the same
    if got.duplicated(["flow", "seq"]).any() or not set(got["sport"]) <= set(sent["sport"]):
        raise RuntimeError(f"{recv_log}: holds packets of another flow, or one packet twice")
    got = got[["flow", "seq", "rx_ns"]]
    table = sent.drop(columns="rx_ns").merge(got, on=["flow", "seq"], how="left",
                                             validate="one_to_one", indicator=True)
    extra = len(got) - int((table.pop("_merge") == "both").sum())
    if extra:
        raise RuntimeError(f"{recv_log}: {extra} packets received that {send_log} never sent")
    table["rx_ns"] = table["rx_ns"].astype("Int64")
    return table


def wait_logs_closed(paths, timeout=5.0):
    """ITGRecv writes a flow's log as the flow ends: wait until the files stop growing."""
    end = time.monotonic() + timeout
    last = None
    while time.monotonic() < end:
        now = [os.path.getsize(p) if os.path.exists(p) else -1 for p in paths]
        if now == last:
            return
        last = now
        time.sleep(0.3)
