"""A view (view.py) as lines of plain ASCII text, at most `width` columns:
what the curses screen draws and `hopscope top --once` prints. ASCII only,
so a terminal over ssh in any locale shows it; "<=" because a histogram
bucket bounds a delay from above."""
import math

from ..record import hist
from .view import OUTCOMES

KEYS = "keys: s next sender, d next delay, w next window, q quit"  # the screen's last line


def lines(v, width=80):
    r = v["run"]
    out = [_header(v, r), _choice(v)]
    if r["state"] != "live":
        out.append(_state(r))
    # the stages, then what became of their packets: two lines fit 80 columns with t0
    rates = [f"{s['stage']} {_rate(s['per_s'])}" for s in v["stages"]]
    out.append("pkts/s  " + "  ".join(rates[:-len(OUTCOMES)]))
    out.append("        " + "  ".join(rates[-len(OUTCOMES):]))
    out.append("")
    out.append(f"{'delay':<12}{'count':>10}{'pkts/s':>9}{'p50<=':>10}{'p99<=':>10}"
               f"{'max<=':>10}{'mean':>10}")
    who = "all senders" if v["sender"] is None else f"tos {v['sender']}"
    for d in v["delays"]:
        out.append(_row(d["delay"] + (" *" if d["delay"] == v["delay"] else ""), d))
    if not v["delays"]:
        out.append("  no stage histograms: record with --aggregate or --histograms")
    out.append(f"{v['delay']} by sender (tos, output); shown above: {who}")
    for s in v["by_sender"]:
        path = "" if s["path"] == "stack" else f" {s['path']}"
        out.append(_row(f"tos {s['tos']} {s['out_if']}{path}", s))
    out.append("")
    out.append("drops   " + (", ".join(f"{d['packets']} {d['stage']} {d['name']}"
                                       for d in v["drops"]) or "none"))
    lost = {k: n for k, n in v["losses"].items() if n}
    out.append("tracer  lost " + (", ".join(f"{k} {n}" for k, n in lost.items()) or "none")
               + "; untraced " + (", ".join(f"{k} {n}" for k, n in v["untraced"].items() if n)
                                  or "none"))
    out.append(_cost(v["cost"]))
    return [x[:width] for x in out]


def _header(v, r):
    age = "" if r["age_s"] is None else f"  run {_duration(r['age_s'])}"
    snap = "" if r["snapshot_age_s"] is None else f"  snap {r['snapshot_age_s']:.0f}s"
    sampled, s = "", v["sampling"]
    if s and s["mode"] != "off":  # record --sample: counts are the traced packets'
        sampled = (f"  sampled 1 in {s['n']}" if s["mode"] == "fixed" else
                   f"  sampled auto, x{s['scale']:.1f}" if s["scale"] else "  sampled auto")
    return (f"{r['netns'] or '-'}  in {','.join(r['inputs']) or '-'}"
            f"  out {','.join(r['outputs']) or '-'}  {r['backend']}/{r['histograms']}"
            f"{sampled}{age}{snap}")


def _choice(v):
    w = v["window"]
    asked = "since start" if w["asked_s"] is None else f"{w['asked_s']} s"
    got = "" if w["seconds"] is None else f" ({w['seconds']:.1f} s)"
    who = "all" if v["sender"] is None else f"tos {v['sender']}"
    return f"window {asked}{got}  sender {who}  delay {v['delay']}"


def _state(r):
    if r["state"] == "ended":
        return f"** run ended ({r['stop_reason'] or 'stopped'}): the recorder's last counts **"
    return (f"** stale: the snapshot was last rewritten {r['snapshot_age_s']:.0f} s ago; "
            "is the recorder still running? **")


def _row(name, s):
    return (f"{name[:12]:<12}{s['count']:>10}{_rate(s['per_s']):>9}{_ns(s['p50_ns']):>10}"
            f"{_ns(s['p99_ns']):>10}{_ns(s['max_ns']):>10}{_ns(s['mean_ns']):>10}")


def _cost(c):
    if not c["stages"]:
        return "cost    no probe samples in this window"
    parts = "  ".join(f"{st} {x['mean_ns']:.0f}" for st, x in c["stages"].items())
    share = "" if c["cpu_share"] is None else f", {100 * c['cpu_share']:.1f} % of a CPU"
    return f"cost    ns/run {parts} = {c['ns_per_packet']:.0f} ns/pkt{share}"


def _ns(v):
    if v is None:
        return "-"
    if math.isinf(v):
        return ">" + _ns(hist.upper(hist.NBUCKETS - 1))  # the overflow
    for unit, div in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if v >= div:
            return f"{v / div:.3g}{unit}"
    return f"{v:.0f}ns"


def _rate(v):
    if v is None:
        return "-"
    return f"{v / 1e6:.2f}M" if v >= 1e6 else f"{v / 1e3:.1f}k" if v >= 1e4 else f"{v:.0f}"


def _duration(s):
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"
