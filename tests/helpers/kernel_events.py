"""The kernel's own tracepoints as a reference for t1, t2 and t3, which no
packet tap can see: perf (perf_event, not BPF, not hopscope's code) records,
on CLOCK_MONOTONIC like hopscope, three events each forwarded packet meets in
a known order (evaluation/accuracy.md, section "The kernel's own events"):

    netif_receive_skb (r-s1)  <=  t1 (generic XDP runs right after it)
    t2 (PRE_ROUTING)  <=  fib_table_lookup (the input route)  <=  t3 (POST_ROUTING)
    t3  <=  net_dev_queue (r-rx: dev_queue_xmit)  <=  t4 (xmit to the driver)

The receive and queue events name the skb, which forwarding keeps: one
packet's pair is the same skb on the same CPU, and its route lookup the
one that CPU made between them (a CPU forwards one packet at a time). The
events are filtered in the kernel by the datagrams' length, so other traffic
(other testbeds use the same names) mostly stays out; each record is paired
with the receive event nearest its t1 within WINDOW_NS (the datagrams are
sent further apart). A sender that fell behind sends a burst, and a record
whose own receive perf lost would take a neighbour's: so each receive pairs
with one record only, the closest pairs first (pair()).

On a VM perf may miss most events of a CPU that was halted (idle) when the
packet came; hopscope's BPF programs do not (evaluation/accuracy.md). So a
SCHED_IDLE spinner keeps the router's CPU out of idle while perf records.
"""
import os
import re
import signal
import subprocess
import sys
import time

import numpy as np

PAYLOAD = 333                  # UDP payload bytes of the datagrams compared
IP_LEN = PAYLOAD + 28
FRAME = IP_LEN + 14            # what net_dev_queue counts: with the MAC header
WINDOW_NS = 50_000
TRACEFS = "/sys/kernel/tracing"
EVENTS = (("net:netif_receive_skb", f"len == {IP_LEN}"),
          # input routes only: an output route lookup has iif 1 (loopback)
          ("fib:fib_table_lookup", "iif != 1"),
          ("net:net_dev_queue", f"len == {FRAME}"))
SPIN = "while True: pass"
LINE = re.compile(r"\s*\[(?P<cpu>\d+)\]\s+(?P<s>\d+)\.(?P<ns>\d{9}):\s+\w+:(?P<name>\w+):\s(?P<text>.*)")


def _tracefs_mounted():
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == TRACEFS for line in f)


class KernelEvents:
    """perf record of EVENTS on every CPU into path; stop() ends it, parses
    them, and unmounts tracefs if perf mounted it."""

    def __init__(self, path, busy_cpu):
        self.path = path
        self.mounted_before = _tracefs_mounted()
        self.spin = subprocess.Popen(["chrt", "-i", "0", "taskset", "-c", str(busy_cpu),
                                      sys.executable, "-c", SPIN])
        argv = ["perf", "record", "-q", "-a", "-k", "CLOCK_MONOTONIC", "-o", path]
        for event, flt in EVENTS:
            argv += ["-e", event, "--filter", flt]
        self.p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                  text=True)
        # perf has no ready signal: its output file gets its header once the
        # events are open
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.p.poll() is None:
            if os.path.exists(path) and os.path.getsize(path) > 0:
                time.sleep(0.5)
                return
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"perf record did not start: {self.p.stderr.read()[-300:]}")

    def stop(self):
        """[(time_ns, cpu, event name, text)] in time order, and the lines
        perf said about lost events."""
        self.p.send_signal(signal.SIGINT)
        err = self.p.communicate(timeout=60)[1]
        self._spun()
        out = subprocess.run(["perf", "script", "-i", self.path, "-F", "time,cpu,event,trace",
                              "--ns"], capture_output=True, text=True, check=True).stdout
        self._unmount()
        events = []
        for line in out.splitlines():
            m = LINE.match(line)
            if m:
                events.append((int(m["s"]) * 10**9 + int(m["ns"]), int(m["cpu"]), m["name"],
                               m["text"]))
        events.sort()
        return events, [x for x in err.splitlines() if "lost" in x.lower()]

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()
        self._spun()
        self._unmount()

    def _spun(self):
        if self.spin.poll() is None:
            self.spin.kill()
        self.spin.wait()

    def _unmount(self):
        if not self.mounted_before and _tracefs_mounted():
            subprocess.run(["umount", TRACEFS], check=False)


def packets(events, in_if, out_if):
    """Per forwarded datagram (a receive on in_if whose skb, on the same CPU,
    is next queued on out_if): (receive, route lookup or -1, queue) times."""
    out, pending = [], {}  # cpu -> (receive time, skb, lookups seen since)
    for t, cpu, name, text in events:
        if name == "netif_receive_skb" and text.startswith(f"dev={in_if} "):
            pending[cpu] = (t, _skb(text), [])
        elif name == "fib_table_lookup" and cpu in pending:
            pending[cpu][2].append(t)
        elif name == "net_dev_queue" and text.startswith(f"dev={out_if} ") and cpu in pending:
            rx, skb, fib = pending.pop(cpu)
            if skb == _skb(text):
                # more than one lookup between: not one packet's alone
                out.append((rx, fib[0] if len(fib) == 1 else -1, t))
    return np.array(out, np.int64).reshape(-1, 3)


def _skb(text):
    m = re.search(r"skbaddr=(\S+)", text)
    return m[1] if m else None


def event_order(records, pk, t1="t1", t2="t2", t3="t3", t4="t4"):
    """Each complete record of the datagrams (UDP to port 9, IP_LEN long)
    against its packet's events (packets()): the records paired with one
    (its receive within WINDOW_NS of t1), and how many lie out of the
    kernel's order at each event; the median gap from each event to the
    stage it must precede or follow. t1..t4 name the columns taken as those
    stages (a wrong one must show as out of order)."""
    c = records[(records.status == "complete") & (records.proto == 17) &
                (records.dport == 9) & (records.ip_len == IP_LEN)]
    a, b, d, e = (c[x].to_numpy(np.int64) for x in (t1, t2, t3, t4))
    i = pair(pk[:, 0], a)
    ok = i >= 0
    p = pk[i[ok]]
    a, b, d, e = a[ok], b[ok], d[ok], e[ok]
    has_fib = p[:, 1] >= 0
    return {"records": len(c), "paired": int(ok.sum()), "with_lookup": int(has_fib.sum()),
            "receive_after_t1": int((p[:, 0] > a).sum()),
            "lookup_outside_t2_t3": int(((p[:, 1] < b) | (p[:, 1] > d))[has_fib].sum()),
            "queue_outside_t3_t4": int(((p[:, 2] < d) | (p[:, 2] > e)).sum()),
            "median_ns": {"t1 - receive": _median(a - p[:, 0]),
                          "lookup - t2": _median((p[:, 1] - b)[has_fib]),
                          "t3 - lookup": _median((d - p[:, 1])[has_fib]),
                          "queue - t3": _median(p[:, 2] - d),
                          "t4 - queue": _median(e - p[:, 2])}}


def pair(times, at):
    """One to one: for each of at, the index of its time within WINDOW_NS
    (-1: none), each time used once, the closest pairs taken first."""
    order = np.argsort(times, kind="stable")
    t = times[order]
    cand = []
    for k, x in enumerate(at):
        j = np.searchsorted(t, x)
        cand += [(abs(int(t[m]) - int(x)), k, m) for m in (j - 1, j)
                 if 0 <= m < len(t) and abs(int(t[m]) - int(x)) <= WINDOW_NS]
    out, used = np.full(len(at), -1), set()
    for _, k, m in sorted(cand):
        if out[k] < 0 and m not in used:
            out[k] = order[m]
            used.add(m)
    return out


def _median(x):
    return float(np.median(x)) if len(x) else None
