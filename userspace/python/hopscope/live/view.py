"""What `hopscope top` shows, computed from the snapshots of a run alone (no
terminal, no clock but the one passed in), so it is testable and the same for
the screen, `--once` and `--once --json` (docs/top.md lists the keys).

History keeps the last KEEP_S seconds of snapshots; view() takes the window
between the newest and the one about `window` seconds before it
(snapshot.window), and gives packets/s per stage from the kernel counters,
count/p50/p99/max per delay and per sender (TOS byte, output) from the stage
histograms, drops by stage and reason name, the tracer's own losses and the
probes' cost. Quantiles and max are bucket upper bounds: a delay is at most
that (schema 3 buckets are 9 % wide).
"""
import math

from ..analysis.loss import COUNTER_ROWS
from ..record import hist, sampling
from ..record.format import CORE_STAGES
from .snapshot import SnapshotError, window as between

WINDOWS = (1, 10, 60, None)  # seconds; None: since the run's start (key w)
KEEP_S = 300
STALE_S = 3.0  # a live recorder rewrites its snapshot every second
# stage -> the kernel counter of the packets it stamped (include/hopscope.h)
STAGE_COUNTERS = (("t0", "t0_pkts"), ("t1", "xdp_pkts"), ("t2", "pre_pkts"),
                  ("t3", "post_pkts"), ("t4", "out_pkts"))
# unsampled: left out at t1 by record --sample, why t2 sees fewer than t1
OUTCOMES = ("complete", "dropped", "local", "unsampled")
# the tracer's losses: the loss table's "tracer" counters, and the evictions
# (which an aggregate run counts and never writes)
LOSSES = ("evicted",) + tuple(k for k, source, _, _ in COUNTER_ROWS if source == "tracer")
# seen without the tracer's metadata: untraced inputs, the router's own, or lost
UNTRACED = tuple(k for k, source, _, _ in COUNTER_ROWS if source == "other" and k != "local")
TOLERANCE_NS = 250_000_000  # snapshots come about a second apart, not exactly


class History:
    """The snapshots of one run, oldest first, the last KEEP_S seconds (and
    the newest always). A snapshot of another run starts it again."""

    def __init__(self):
        self.snaps = []

    def add(self, snap):
        """Keep snap; False when it is the one already newest (not rewritten)."""
        if self.snaps:
            last = self.snaps[-1]
            if snap.sequence == last.sequence and snap.final == last.final:
                return False
            try:
                between(snap, last)
            except SnapshotError:
                self.snaps = []
        self.snaps.append(snap)
        keep = (snap.monotonic_ns or 0) - KEEP_S * 10**9
        self.snaps = [s for s in self.snaps[:-1] if (s.monotonic_ns or 0) >= keep] + [snap]
        return True

    def before(self, seconds):
        """The snapshot that starts a window of `seconds` ending at the newest:
        the latest at least that old, else the oldest kept; None (the run's
        start) for seconds None or with one snapshot."""
        new = self.snaps[-1]
        if seconds is None or len(self.snaps) < 2:
            return None
        want = new.monotonic_ns - seconds * 10**9 + TOLERANCE_NS
        old = [s for s in self.snaps[:-1] if s.monotonic_ns <= want]
        return old[-1] if old else self.snaps[0]


def view(history, window=1, sender=None, delay="transit", now_ns=None):
    """The view of history's newest snapshot over `window` seconds (WINDOWS),
    for sender (a TOS byte; None: all) and delay (the one shown per sender).
    now_ns: the wall clock (time.time_ns()) to judge the snapshot's age by."""
    new = history.snaps[-1]
    old = history.before(window)
    w = between(new, old)
    secs = w["seconds"]
    c = w["counters"]
    series = [s for s in w["series"] if sender is None or s["tos"] == sender]
    return {
        "run": _run(new, now_ns),
        "sampling": sampling.summary(new.header, new.counters),
        "window": {"asked_s": window, "seconds": secs},
        "sender": sender,
        "senders": senders(new),
        "delay": delay,
        "stages": _stages(c, new.header, secs),
        # the paper's delays are the IP stack's: a fast path's packets apart
        "delays": [dict(delay=d, **_stats(merge([s for s in series if s["delay"] == d and
                                                 s.get("path", "stack") == "stack"]), secs))
                   for d in delays(new)],
        "by_sender": [dict(tos=s["tos"], out_if=s["out_if"], path=s.get("path", "stack"),
                           **_stats(s, secs))
                      for s in sorted(w["series"],
                                      key=lambda s: (s["tos"], s["out_if"], s.get("path", "")))
                      if s["delay"] == delay],
        "drops": _drops(w["drops"], new.header.get("drop_reasons") or {}, secs),
        "losses": dict({k: c.get(k, 0) for k in LOSSES},
                       nokey=_grew(new, old, "nokey"), drops_nokey=_grew(new, old, "drops_nokey")),
        "untraced": {k: c.get(k, 0) for k in UNTRACED},
        "cost": _cost(new, old, _rate(c.get("xdp_pkts", 0), secs)["per_s"]),
    }


def senders(snap):
    """the TOS bytes of snap's series"""
    return sorted({s["tos"] for s in snap.series})


def delays(snap):
    """the delays snap's series have, in the header's order"""
    return sorted({s["delay"] for s in snap.series}, key=hist.DELAY_NAMES.index)


def merge(series):
    """One series of several (all senders' d_p, say): counts and buckets added."""
    out = {f: sum(s[f] for s in series) for f in ("count", "sum_ns", "zero", "negative",
                                                   "overflow")}
    b = {}
    for s in series:
        for k, v in s["buckets"].items():
            b[k] = b.get(k, 0) + v
    out["buckets"] = b
    return out


def top_bound(s):
    """The upper bound (ns) of the highest non-empty bucket: the largest delay
    is at most this; inf with overflow, None without delays."""
    if not s["count"]:
        return None
    if s["overflow"]:
        return math.inf
    return hist.upper(max(map(int, s["buckets"]))) if s["buckets"] else 0.0


def _stats(s, secs):
    n = s["count"]
    return {"count": n, "per_s": _rate(n, secs)["per_s"],
            "p50_ns": hist.quantile(s, 0.5), "p99_ns": hist.quantile(s, 0.99),
            "max_ns": top_bound(s), "mean_ns": s["sum_ns"] / n if n else None,
            "overflow": s["overflow"]}


def _stages(c, header, secs):
    """packets and packets/s at each enabled stage, then what became of them"""
    on = set(header.get("stages") or ()) | set(CORE_STAGES)
    rows = [(st, k) for st, k in STAGE_COUNTERS if st in on] + [(k, k) for k in OUTCOMES]
    return [dict(stage=st, counter=k, **_rate(c.get(k, 0), secs)) for st, k in rows]


def _rate(n, secs):
    return {"packets": n, "per_s": n / secs if secs else None}


def _run(new, now_ns):
    h = new.header
    start = h.get("start_monotonic_ns")
    age = (now_ns - new.realtime_ns) / 1e9 if now_ns is not None else None
    state = "ended" if new.final else "stale" if age is not None and age > STALE_S else "live"
    ifs = h.get("interfaces") or []
    return {"netns": (h.get("netns") or {}).get("name"),
            "inputs": [i["name"] for i in ifs if i.get("role") in ("in", "both")],
            "outputs": [i["name"] for i in ifs if i.get("role") in ("out", "both")],
            "backend": h.get("backend"), "histograms": h.get("histograms"),
            "age_s": (new.monotonic_ns - start) / 1e9 if start and new.monotonic_ns else None,
            "snapshot_age_s": age, "sequence": new.sequence, "state": state,
            "stop_reason": new.counters.get("stop_reason")}


def _drops(drops, names, secs):
    out = [{"stage": d["stage"], "reason": d["reason"],
            "name": names.get(str(d["reason"]), f"reason {d['reason']}"),
            **_rate(d["count"], secs)} for d in drops]
    return sorted(out, key=lambda d: -d["packets"])


def _grew(new, old, key):
    """a cumulative count of the histograms object, over the window"""
    def at(s):
        return ((s.counters.get("histograms") or {}).get(key) or 0) if s else 0
    return at(new) - at(old)


def _cost(new, old, pkts_per_s):
    """Mean ns per stage program run over the window (its samples, 1 in
    2^sample_shift packets), their sum per packet, and the share of one CPU
    that is at the input's packets/s."""
    def stages(s):
        return ((s.counters.get("probe_cost") or {}).get("stages") or {}) if s else {}
    now, then = stages(new), stages(old)
    out = {}
    for st, c in now.items():
        n = c["n"] - then.get(st, {}).get("n", 0)
        if n > 0:
            out[st] = {"samples": n, "mean_ns": (c["sum_ns"] - then.get(st, {}).get("sum_ns", 0)) / n}
    per_pkt = sum(x["mean_ns"] for x in out.values()) if out else None
    return {"stages": out, "ns_per_packet": per_pkt,
            "cpu_share": per_pkt * pkts_per_s / 1e9 if per_pkt is not None and pkts_per_s
            else None}


def turn(key, window, sender, delay, newest):
    """The choice after key (s: next sender, d: next delay, w: next window)
    on the run whose newest snapshot is newest: (window, sender, delay)."""
    def after(x, options):
        options = list(options)
        return options[(options.index(x) + 1) % len(options)] if x in options else options[0]
    if key == "w":
        window = after(window, WINDOWS)
    elif key == "s":
        sender = after(sender, [None] + senders(newest))
    elif key == "d":
        delay = after(delay, delays(newest) or hist.DELAY_NAMES)
    return window, sender, delay
