"""A live snapshot as metrics: what `hopscope serve` answers a scrape with,
in the OpenMetrics text format or Prometheus' older text format 0.0.4
(docs/metrics.md lists every metric; FAMILIES below is the one list).

The stage histograms become classic histograms: the kernel's buckets are
native-histogram buckets of schema 3 (bucket i ends at 2^(i/8) ns), and
every CLASSIC_STEP-th bound from 2^(CLASSIC_FIRST/8) ns on is a classic `le`,
so each `le` count is an exact sum of the kernel's buckets, never an
estimate. Delays of 0 ns (and negative ones, none on a sound clock) count in
the lowest bucket, those past the last bound (~17 s) in +Inf alone.
"""
import math

from ..record import hist, sampling

CLASSIC_STEP = 4    # 2^(1/2) between two bounds: le = 2^(k/2) ns
CLASSIC_FIRST = 48  # 2^6 = 64 ns, below every probe's own cost
CLASSIC = tuple(range(CLASSIC_FIRST, hist.NBUCKETS, CLASSIC_STEP))  # native indices, 64 ns..2^34 ns

# The run's metadata as the info metric's labels (_run_labels reads them
# from the header). `sampling` is the place for packet sampling: the
# header's sampling mode, "off" (every packet counts) while it has none.
RUN_LABELS = ("netns", "inputs", "outputs", "backend", "hostname", "version", "kernel",
              "histograms", "sampling")

# family name -> (type, unit, help, labels). The sample names follow from the
# type (sample_names()); the docs, the Grafana dashboard and the tests are
# checked against this list.
FAMILIES = {
    "hopscope_delay_seconds": (
        "histogram", "seconds", "Stage delays of the complete packets, by delay, TOS byte, "
        "output interface and forwarding path (classic buckets at 2^(k/2) ns)",
        ("delay", "tos", "out_if", "path")),
    "hopscope_kernel_events": (
        "counter", "", "The recorder's kernel counters (include/hopscope.h's list), "
        "summed over CPUs", ("counter",)),
    "hopscope_drops": (
        "counter", "", "Packets the router dropped, by the last stage that saw them "
        "and the kernel's drop reason", ("stage", "reason")),
    "hopscope_unhistogrammed_packets": (
        "counter", "", "Packets in no series: kind=complete, of a (TOS, output) past the "
        "kernel's 64 series; kind=dropped, of a (stage, reason) past its 256 pairs",
        ("kind",)),
    "hopscope_probe_cost_seconds": (
        "summary", "seconds", "Time each stage's probe spends inside the delay it starts, "
        "on the sampled packets", ("stage",)),
    "hopscope_run": (
        "info", "", "The recording run: router namespace, interfaces, backend, host, "
        "hopscope version, kernel, histogram mode, sampling", RUN_LABELS),
    "hopscope_run_start_time_seconds": (
        "gauge", "seconds", "When the run started, Unix time", ()),
    "hopscope_snapshot_age_seconds": (
        "gauge", "seconds", "How old the snapshot served is (written every second)", ()),
    "hopscope_sampling_factor": (
        "gauge", "", "What a count of traced packets is multiplied by to estimate all "
        "(record --sample: N, or seen/traced under auto; 1 without sampling)", ()),
    "hopscope_snapshot_final": (
        "gauge", "", "1: the recorder stopped and these are its final counts", ()),
}

_SUFFIXES = {"histogram": ("_bucket", "_sum", "_count"), "summary": ("_sum", "_count"),
             "counter": ("_total",), "info": ("_info",), "gauge": ("",)}


def sample_names():
    """Every sample name an exposition may hold (what PromQL can query)."""
    return {f + s for f, (t, *_) in FAMILIES.items() for s in _SUFFIXES[t]}


def samples(snap, now_ns):
    """{family: [(suffix, labels, value)]} of snapshot snap at realtime now_ns."""
    h, c = snap.header, snap.counters
    out = {f: [] for f in FAMILIES}
    for s in snap.series:
        out["hopscope_delay_seconds"] += _histogram(s)
    for name, v in sorted((c.get("counters") or {}).items()):
        out["hopscope_kernel_events"].append(("_total", {"counter": name}, v))
    reasons = h.get("drop_reasons") or {}
    for d in snap.drops:
        reason = reasons.get(str(d["reason"]), str(d["reason"]))
        out["hopscope_drops"].append(("_total", {"stage": d["stage"], "reason": reason},
                                      d["count"]))
    hg = c.get("histograms")
    if hg is not None:
        for kind, key in (("complete", "nokey"), ("dropped", "drops_nokey")):
            out["hopscope_unhistogrammed_packets"].append(("_total", {"kind": kind},
                                                           hg.get(key, 0)))
    for stage, p in sorted(((c.get("probe_cost") or {}).get("stages") or {}).items()):
        out["hopscope_probe_cost_seconds"] += [("_sum", {"stage": stage}, p["sum_ns"] / 1e9),
                                               ("_count", {"stage": stage}, p["n"])]
    out["hopscope_run"].append(("_info", _run_labels(h), 1))
    if "start_realtime_ns" in h:
        out["hopscope_run_start_time_seconds"].append(("", {}, h["start_realtime_ns"] / 1e9))
    out["hopscope_snapshot_age_seconds"].append(("", {}, max(0, now_ns - snap.realtime_ns) / 1e9))
    scale = (sampling.summary(h, c) or {}).get("scale")
    out["hopscope_sampling_factor"].append(("", {}, scale if scale else 1))
    out["hopscope_snapshot_final"].append(("", {}, int(snap.final)))
    return out


def _histogram(s):
    """One series as classic buckets, sum and count"""
    labels = {"delay": s["delay"], "tos": str(s["tos"]), "out_if": s["out_if"],
              "path": s.get("path", "stack")}
    native = sorted((int(k), v) for k, v in s["buckets"].items())
    rows, seen, n = [], s["zero"] + s["negative"], 0
    for i in CLASSIC:
        while n < len(native) and native[n][0] <= i:
            seen += native[n][1]
            n += 1
        rows.append(("_bucket", dict(labels, le=_value(hist.upper(i) / 1e9)), seen))
    rows.append(("_bucket", dict(labels, le="+Inf"), s["count"]))
    rows += [("_sum", labels, s["sum_ns"] / 1e9), ("_count", labels, s["count"])]
    return rows


def _run_labels(h):
    """as strings, whatever a header of another version holds there"""
    ifs = h.get("interfaces") or []
    names = lambda role: ",".join(str(i.get("name", "")) for i in ifs if i.get("role") == role)
    part = lambda key, sub, default: (h.get(key) if isinstance(h.get(key), dict) else {}).get(
        sub, default)
    labels = {"netns": part("netns", "name", ""), "inputs": names("in"),
              "outputs": names("out"), "backend": h.get("backend", ""),
              "hostname": h.get("hostname", ""), "version": h.get("tracer_version", ""),
              "kernel": part("kernel", "release", ""), "histograms": h.get("histograms", "off"),
              "sampling": part("sampling", "mode", "off")}
    return {k: "" if v is None else str(v) for k, v in labels.items()}


OPENMETRICS = "application/openmetrics-text; version=1.0.0; charset=utf-8"
PROMETHEUS = "text/plain; version=0.0.4; charset=utf-8"


def text(snap, now_ns, openmetrics=True):
    """The exposition of snap, OpenMetrics (ends with `# EOF`) or Prometheus
    0.0.4, which has no info or unit: an info metric is a gauge there, and a
    counter's TYPE line names its `_total` sample."""
    lines = []
    for family, rows in samples(snap, now_ns).items():
        kind, unit, help_, _ = FAMILIES[family]
        meta = family
        if not openmetrics and kind in ("counter", "info"):
            meta = family + _SUFFIXES[kind][0]
            kind = "gauge" if kind == "info" else kind
        lines.append(f"# TYPE {meta} {kind}")
        if unit and openmetrics:
            lines.append(f"# UNIT {meta} {unit}")
        lines.append(f"# HELP {meta} {_escape(help_)}")
        for suffix, labels, value in rows:
            inner = ",".join(f'{k}="{_escape(v, True)}"' for k, v in labels.items())
            lines.append(f"{family}{suffix}{'{' + inner + '}' if inner else ''} {_value(value)}")
    if openmetrics:
        lines.append("# EOF")
    return "\n".join(lines) + "\n"


def _escape(s, quote=False):
    s = str(s).replace("\\", "\\\\").replace("\n", "\\n")
    return s.replace('"', '\\"') if quote else s


def _value(v):
    if isinstance(v, int):
        return str(v)
    return "+Inf" if v == math.inf else repr(float(v))
