"""What evaluation/bench/load_matrix.py and evaluation/bench/soak.py share: one constant-rate iperf3 UDP
stream of 200 B through the testbed's router while `hopscope record` runs,
what each run counted (sent, received at the sink, complete records, the
delays' percentiles and probe floor), the lossless-rate search, and the pure
metrics the two report (tests/python/test_load_methods.py checks those).

The generator is iperf3 (`-u -b RATE -l 200`, paced:
hopscope.traffic.generators.iperf.client_command with a 1 µs pacing timer):
about 226 kpps of 200 B on one vCPU here, where ITGSend tops out at about
131 kpps (evaluation/measurements.md), and it reports the packets it sent.
"""
import os
import subprocess
import time

import numpy as np

import benchlib
import hopscope
from testlib import Recorder
from hopscope.traffic import throughput
from hopscope.traffic.counters import Counters
from hopscope.traffic.generators import iperf
from hopscope.traffic.scenario.load import Sender
from hopscope.traffic.testbed import Testbed, layout

SIZE = 200                  # UDP payload, bytes
IP_LEN = SIZE + 28          # the stream's IP length: the iperf3 handshake is not it
PORT = 5201
STAGES = ("d_iq", "d_p", "d_oq")
PACING_US = 1
SETTLE_S = 0.3              # after the sender: the last packets reach the sink


class BenchError(RuntimeError):
    """A run could not be made (a tool failed); the message says which
    (one of benchlib.FAILURES)."""




def sender(rate, seconds):
    """sender1's iperf3 stream at rate pps for seconds, as a scenario would give it."""
    return Sender(name="sender1", namespace="sender1", generator="iperf3", protocol="udp",
                  tos=0, size={"dist": "constant", "value": SIZE}, rate=rate,
                  gaps={"dist": "constant"}, count=None, duration=seconds, start=0.0,
                  port=PORT, cpu="sender", send_buffer=None, seed=None)


class Bed:
    """The testbed (rps, --sink, the router's CPU shielded) on prefix, its
    layout and counters; down() removes it (also what a failed run left)."""

    def __init__(self, prefix):
        self.tb = Testbed(prefix)
        self.prefix = prefix
        self.tb.down()
        try:
            self.tb.up("--mode", "rps", "--sink")
            self.lay = layout(prefix, live=True)
        except BaseException:
            self.tb.down()
            raise
        self.counters = Counters(self.lay, self.tb.run)
        self.receiver = self.lay["interfaces"]["receiver"][0]["ipv4"]

    def cpu(self, role):
        return str(self.lay["cpus"][role])

    def down(self):
        self.tb.down()

    def snapshot(self):
        """What the kernel counted so far: sent by sender1, received at the sink."""
        s = self.counters.snapshot()
        return {"sent": s["sender1"]["s1-eth0"]["tx_packets"],
                "router_in": s["router"]["r-s1"]["rx_packets"],
                "forwarded": s["router"]["r-rx"]["tx_packets"],
                "received": s["sink"]["packets"]}

    def start_server(self, seconds):
        """iperf3's server in the receiver, for one test of seconds (killed at down())."""
        for p in self.tb.procs:
            p.poll()  # reaps the servers of earlier tests, which exited after theirs
        # the sink drops the data before the server could see it, and iperf3
        # ends a test after --rcv-timeout (default 120 s) without data
        self.tb.spawn("receiver", *iperf.server_command(sender(1, 1)),
                      "--rcv-timeout", str(round((seconds + 60) * 1000)))
        time.sleep(0.3)

    def client(self, rate, seconds, timed=False):
        """iperf3's client in sender1 on the senders' CPU: Popen, JSON on stdout.
        It sends rate x seconds packets, or with timed for seconds (a generator
        held back by the shared machine then sends fewer, not for longer)."""
        cmd = iperf.client_command(sender(rate, seconds), self.receiver)
        if timed:
            k = cmd.index("-k")
            cmd[k:k + 2] = ["-t", str(max(1, round(seconds)))]  # whole seconds
        # iperf3 sends about one datagram per pacing tick: at client_command's
        # 10 µs it reached 155 kpps here, at 1 µs 226 kpps (unpaced, -b 0: 298)
        cmd[cmd.index("--pacing-timer") + 1] = str(PACING_US)
        # no per-second reports: a long run's JSON would outgrow the pipe
        # before a caller that waits (evaluation/bench/soak.py) reads it
        cmd += ["-i", "0"]
        return subprocess.Popen(["ip", "netns", "exec", self.prefix + "sender1", "taskset", "-c",
                                 self.cpu("sender"), *cmd], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)

    def recorder(self, path, *extra):
        return Recorder(path, "-q", *extra, ins="r-s1", prefix=self.prefix)


def client_sent(proc, timeout):
    """(packets, seconds) iperf3's client says it sent, and in what time;
    BenchError with its own error."""
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise BenchError("iperf3 client did not finish in time")
    try:
        doc = iperf.parse_json(out, "iperf3 client")
    except RuntimeError as e:
        raise BenchError(f"{e}{'; ' + err.strip() if err.strip() else ''}")
    return int(doc["end"]["sum"]["packets"]), float(doc["end"]["sum"]["seconds"])


def offer(bed, rate, seconds, path):
    """One recorded run: rate pps for seconds. Returns its numbers (run_metrics)."""
    bed.start_server(seconds)
    rec = bed.recorder(path)
    try:
        before = bed.snapshot()
        sent, took = client_sent(bed.client(rate, seconds), 3 * seconds + 30)
        time.sleep(SETTLE_S)
        after = bed.snapshot()
        rec.stop()
    finally:
        rec.kill()
    df = hopscope.load(path)
    kernel = {k: after[k] - before[k] for k in after}
    return run_metrics(df, rate, took, sent, kernel)


def stream(df):
    """The records of the iperf3 stream (its handshake and control excluded)."""
    return df[(df.proto == 17) & (df.dport == PORT) & (df.ip_len == IP_LEN)]


def run_metrics(df, rate, seconds, sent, kernel):
    """A run's numbers: counts, completeness, per-stage p50/p99 (ns), probe floor."""
    s = stream(df)
    complete = s[s.status == "complete"]
    received = kernel["received"]
    out = {"rate_pps": rate, "seconds": seconds, "sent": sent, "offered_pps": sent / seconds,
           "sent_kernel": kernel["sent"], "router_in": kernel["router_in"],
           "forwarded": kernel["forwarded"], "received": received,
           "records": len(s), "complete": len(complete),
           "by_status": {k: int(v) for k, v in s.status.value_counts().items() if v},
           "complete_of_received": complete_share(len(complete), received),
           "complete_of_sent": complete_share(len(complete), sent),
           "loadavg": benchlib.loadavg(),
           "counters": (df.attrs["counters"] or {}).get("counters"),
           "probe_floor": floor_of(df)}
    for col in STAGES:
        q = complete[col].quantile([0.5, 0.99]) if len(complete) else None
        out[col] = {"p50_ns": float(q.iloc[0]), "p99_ns": float(q.iloc[1])} if q is not None \
            else {"p50_ns": None, "p99_ns": None}
    return out


def floor_of(df):
    """The recording's per-stage probe floor ({stage: floor_ns, spread_ns,
    samples}), or None when the file has none (never made up)."""
    pf = df.attrs.get("probe_floor")
    if not pf:
        return None
    return {c: {k: pf[c].get(k) for k in ("floor_ns", "spread_ns", "samples")}
            for c in STAGES if c in pf}


def complete_share(complete, of):
    return complete / of if of else None


def fmt_share(x):
    return f"{x:.4%}" if x is not None else "-"


def lossless(run):
    """Every packet sent reached the sink and has a complete record."""
    return run["sent"] > 0 and run["received"] >= run["sent"] and run["complete"] >= run["sent"]


def search_lossless(bed, lo, hi, resolution, seconds, tmp, log):
    """hopscope.traffic.throughput.search over recorded runs: a rate is lossless
    when every packet sent got to the sink and has a complete record (a lossy
    run is repeated, a generator short of the rate ends the search, as there).
    Returns (pps or None, limited_by, runs)."""
    runs = []

    def run_trial(cond, rate, index):
        r = offer(bed, rate, seconds, os.path.join(tmp, "search.hsr"))
        runs.append(r)
        log(f"search {rate:.0f} pps: sent {r['sent']}, received {r['received']}, complete "
            f"{r['complete']}, offered {r['offered_pps']:.0f} pps: "
            f"{'lossless' if lossless(r) else 'LOSS'}")
        # the search's Trial: 'received' is what arrived and was recorded whole
        return throughput.Trial(rate, r["sent"], min(r["received"], r["complete"]),
                                r["offered_pps"], seconds)

    pps, limited_by, _ = throughput.search(None, lo, hi, resolution, run_trial)
    return pps, limited_by, runs


# ---- pure metrics (tests/python/test_load_methods.py) ----

def spread(values):
    """mean, min and max of values (None left out); all None if none is left."""
    v = [x for x in values if x is not None]
    if not v:
        return {"mean": None, "min": None, "max": None, "n": 0}
    return {"mean": float(np.mean(v)), "min": float(min(v)), "max": float(max(v)), "n": len(v)}


def level_summary(runs):
    """Over a level's repetitions: mean and range of each stage's p50 and p99,
    of its probe floor, of completeness and of the rate offered."""
    out = {}
    for col in STAGES:
        out[col] = {q: spread([r[col][q] for r in runs]) for q in ("p50_ns", "p99_ns")}
        out[col]["floor_ns"] = spread([(r["probe_floor"] or {}).get(col, {}).get("floor_ns")
                                       for r in runs])
    for k in ("complete_of_received", "complete_of_sent", "offered_pps"):
        out[k] = spread([r[k] for r in runs])
    out["sent"] = sum(r["sent"] for r in runs)
    out["received"] = sum(r["received"] for r in runs)
    out["complete"] = sum(r["complete"] for r in runs)
    return out


def window_counts(bounds_ns, t1_ns, whole):
    """Records per window (bounds[i], bounds[i+1]], by their t1, of those
    marked whole; sums over a file's chunks."""
    bounds = np.asarray(bounds_ns, dtype=np.int64)
    n = len(bounds) - 1
    idx = np.searchsorted(bounds, np.asarray(t1_ns, dtype=np.int64), side="left") - 1
    ok = (idx >= 0) & (idx < n) & np.asarray(whole, dtype=bool)
    return np.bincount(idx[ok], minlength=max(n, 0))[:n]


def windows(bounds_ns, entered, done):
    """Completeness per window from the records and the counters: done[i]
    whole records (window_counts: complete, or dropped by the router with
    every stage up to the drop) against the packets the tracer saw enter
    meanwhile; entered: its cumulative count at each edge."""
    came = np.diff(np.asarray(entered, dtype=np.int64))
    return [{"start_ns": int(bounds_ns[i]), "entered": int(came[i]), "whole": int(done[i]),
             "completeness": complete_share(int(done[i]), int(came[i]))}
            for i in range(len(came))]


# counters of packets that entered the tracer but got no whole record (a
# packet the router dropped has one: its status says so, with the reason)
LOSS = ("evicted", "other_out", "race", "rb_fail", "xdp_meta_fail", "prog_misses")


def traced(counters):
    """Packets the tracer took in at t1 so far: IP frames not addressed to the router."""
    c = counters["counters"]
    return c["xdp_pkts"] - c["xdp_nonip"] - c["local"]


def counter_edges(start_ns, snapshots, trailer, interval_s):
    """Window edges from a recording's own counters: its start (all counts 0),
    then the first COUNTERS snapshot at least interval_s (less half a second:
    they come about every second) after the previous edge, and the END
    trailer. Returns [(monotonic_ns, counters JSON or None at the start)]."""
    step = int((interval_s - 0.5) * 1e9)
    edges = [(start_ns, None)]
    for snap in snapshots:
        if snap["monotonic_ns"] - edges[-1][0] >= step:
            edges.append((snap["monotonic_ns"], snap))
    if trailer is not None:
        if len(edges) > 1 and trailer["monotonic_ns"] - edges[-1][0] < step // 2:
            edges.pop()  # a short last window: its counts join the one before
        edges.append((trailer["monotonic_ns"], trailer))
    return edges


def edge_losses(edges):
    """Per window between edges, how far each loss counter (and the
    recorder's records_not_stored) moved."""
    def loss(e):
        if e is None:
            return dict.fromkeys(LOSS + ("records_not_stored",), 0)
        out = {k: e["counters"].get(k, 0) for k in LOSS}
        out["records_not_stored"] = e["userspace"].get("records_not_stored", 0)
        return out
    vals = [loss(e) for _, e in edges]
    return [{k: b[k] - a[k] for k in a} for a, b in zip(vals, vals[1:])]


def late_loss(wins, losses):
    """Windows where the tracer lost packets: completeness under 100 %, or a
    loss counter (evicted, ring buffer full, ...) that moved in it. losses:
    per window, {counter: delta}. Returns the bad windows' indexes."""
    bad = []
    for i, (w, lost) in enumerate(zip(wins, losses)):
        c = w["completeness"]
        if (c is not None and c < 1) or any(v > 0 for v in lost.values()):
            bad.append(i)
    return bad


def slope(t, y):
    """Least-squares slope of y over t (units of y per unit of t); None under 2 points."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    if len(t) < 2 or np.ptp(t) == 0:
        return None
    return float(np.polyfit(t, y, 1)[0])


def growth(t, y, rel=0.05, floor=1 << 20):
    """first, max, last and slope of a resource sampled at times t, and whether
    it stayed bounded: after a warm-up (the first half), its fitted growth
    over the whole run stays under rel of its median or floor, whichever is
    larger (a leak grows on; a cache that fills once does not)."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    half = len(t) // 2
    late = slope(t[half:], y[half:]) if len(t) - half >= 2 else None
    span = float(np.ptp(t)) if len(t) else 0.0
    limit = max(rel * float(np.median(y)), floor) if len(y) else floor
    grew = (late or 0.0) * span
    return {"first": float(y[0]) if len(y) else None, "max": float(y.max()) if len(y) else None,
            "last": float(y[-1]) if len(y) else None, "slope_per_s": slope(t, y),
            "late_slope_per_s": late, "bounded": len(y) >= 4 and grew <= limit}

