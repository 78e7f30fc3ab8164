"""`hopscope path FILE... -o OUT`: the record files of the routers along a
path (one per router, in path order) joined packet by packet: each hop's
delays, the links between them, the end-to-end transit, where packets were
lost, and each clock's offset with its uncertainty.

OUT/ gets packets.parquet (one row per packet), hops.parquet (one per packet
and hop), path.json (offsets, loss table, collisions, tail, problems) and
path.pdf; a summary goes to stdout.
"""
import json
import os
import re
import sys

import numpy as np
import pandas as pd

from ..analysis.path import STAGES, WINDOW_NS, PathError, load_path
from ..files import atomic, write_json

_OFFSET = re.compile(r"^([^=]+)=(-?\d+):(\d+)$")


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="FILE",
                   help="record files (.hsr), one per router, in the order packets cross them")
    p.add_argument("-o", "--out", required=True, metavar="DIR",
                   help="folder to write packets.parquet, hops.parquet, path.json, path.pdf")
    p.add_argument("--window-ms", type=float, default=WINDOW_NS / 1e6, metavar="MS",
                   help="the longest time a packet may take from one router's hand-over to "
                        "the next router's input (default %(default)g)")
    p.add_argument("--offset", action="append", default=[], metavar="HOP=NS:ERR",
                   help="hop HOP's clock offset against the hop before it, in ns, and its "
                        "uncertainty (from PTP or chrony), instead of estimating it; HOP is "
                        "its number (2, 3, ...) or its router id; repeatable")
    p.add_argument("--min-link-ns", type=int, default=0, metavar="NS",
                   help="the least link time assumed where only one-way traffic gives an "
                        "offset (default 0: the offset is then an upper bound)")
    p.add_argument("--no-pdf", action="store_true", help="write no path.pdf")
    p.epilog = ("examples:\n"
                "  hopscope path r1.hsr r2.hsr -o path/\n"
                "  hopscope path a.hsr b.hsr --offset b=-1250000:2000 -o path/\n"
                "docs/path.md says how packets are joined and clocks aligned.")


def _offsets(specs, parser):
    out = {}
    for s in specs:
        m = _OFFSET.match(s)
        if not m:
            parser.error(f"--offset {s!r}: expected HOP=OFFSET_NS:UNCERTAINTY_NS, "
                         "e.g. 2=-1250000:2000")
        hop = int(m[1]) if m[1].isdigit() else m[1]
        if isinstance(hop, int) and hop < 2:
            parser.error(f"--offset {s!r}: hop 1 is the reference; hops are 2, 3, ...")
        out[hop] = (int(m[2]), int(m[3]))
    return out


def run(args, parser):
    if args.window_ms <= 0:
        parser.error("--window-ms must be positive")
    given = _offsets(args.offset, parser)
    for hop in given:
        if isinstance(hop, int) and hop > len(args.files):
            parser.error(f"--offset {hop}=...: the path has {len(args.files)} hops")
    try:
        p = load_path(args.files, window_ns=int(args.window_ms * 1e6), offsets=given,
                      min_link_ns=args.min_link_ns)
    except PathError as e:
        print(f"hopscope path: {e}", file=sys.stderr)
        return 1
    alone = [r.link for r in p.links.itertuples() if r.up_if is None]
    if alone:
        print(f"hopscope path: no packet crossed link {', '.join(alone)}: the files are not "
              "of one path in this order, or a NAT between changes every key", file=sys.stderr)
        return 1
    write(p, args.out, pdf=not args.no_pdf)
    for label, text in summary(p):
        print(f"{label:<11} {text}")
    return 0


def write(p, out, pdf=True):
    """A path's files in the folder out (made if missing): see the module text."""
    os.makedirs(out, exist_ok=True)
    _parquet(p.packets, os.path.join(out, "packets.parquet"))
    _parquet(p.hop_rows, os.path.join(out, "hops.parquet"))
    write_json(os.path.join(out, "path.json"), as_json(p))
    if pdf:
        from . import path_pages
        with atomic(os.path.join(out, "path.pdf")) as tmp:
            path_pages.write(p, tmp, f"Path of {len(p.hops)} routers")


def _parquet(df, path):
    out = df.copy()
    for c in out.columns:
        if out[c].dtype == object or str(out[c].dtype) == "category":
            out[c] = out[c].astype("string")
    with atomic(path) as tmp:
        out.to_parquet(tmp, index=False)


def as_json(p):
    """The path's result without its packets: what path.json holds."""
    def clean(records):
        return json.loads(json.dumps(records, default=_plain))
    return {"format": "hopscope-path/1",
            "hops": [{"hop": h.n, "router": h.router, "file": h.file, "window": list(h.window),
                      "stages": [s for s in STAGES if s in h.df.columns]} for h in p.hops],
            "links": clean(p.links.to_dict("records")),
            "exits": sorted(p.hops[-1].lead),
            "offsets": clean(p.offsets.replace({np.nan: None}).to_dict("records")),
            "loss": clean(p.loss.to_dict("records")),
            "collisions": clean(p.collisions.to_dict("records")),
            "reverse": {str(k): v for k, v in p.reverse.items()},
            "tail_p99": clean(p.tail(0.99).to_dict("records")),
            "stages": clean(stage_table(p).to_dict("records")),
            "problems": list(p.problems), "notes": list(p.notes)}


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(type(v).__name__)


def stage_table(p):
    """Per hop and stage (and per link): packets, min, p50, p99, max in ns."""
    rows = []
    k_hops = len(p.hops)
    for k in range(1, k_hops + 1):
        for d in ("d_iq", "d_p", "d_oq", "transit"):
            rows.append((f"hop {k}", p.hops[k - 1].router, d, p.packets[f"h{k}_{d}"]))
        if k < k_hops:
            rows.append((f"link {k}", "", "link", p.packets[f"link{k}"]))
    rows.append(("path", "", "transit", p.packets["transit"]))
    out = []
    for where, router, what, v in rows:
        v = v.dropna().to_numpy()
        q = np.quantile(v, [0, 0.5, 0.99, 1]) if len(v) else [np.nan] * 4
        out.append(dict(where=where, router=router, delay=what, packets=len(v),
                        min_ns=q[0], p50_ns=q[1], p99_ns=q[2], max_ns=q[3]))
    return pd.DataFrame(out)


def summary(p):
    """(label, text) lines for stdout."""
    out = [("path", " -> ".join(f"{h.router} ({h.file})" for h in p.hops))]
    for _, o in p.offsets.iloc[1:].iterrows():
        out.append(("clock", f"hop {o['hop']} {o['router']} against hop {o['hop'] - 1}: "
                             f"{offset_text(o)}"))
    for entered, t in p.loss.groupby("entered"):
        parts = ", ".join(f"{r.fate} {r.packets}" + (f" at hop {r.hop}" if r.fate != "delivered"
                                                       else "")
                          + (f" ({r.stage} {r.reason})" if r.stage else "")
                          for r in t.itertuples())
        out.append(("packets", f"{int(t['packets'].sum())} entered at hop {entered}: {parts}"))
    for r in stage_table(p).itertuples():
        if r.packets:
            out.append((r.where, f"{r.delay:<7} min {r.min_ns / 1e3:.2f}  p50 {r.p50_ns / 1e3:.2f}"
                                 f"  p99 {r.p99_ns / 1e3:.2f}  max {r.max_ns / 1e3:.2f} us of "
                                 f"{r.packets} packets"))
    t = p.tail(0.99)
    if len(t):
        top = t.sort_values("share", ascending=False).head(3)
        out.append(("tail", f"transit >= p99 ({int(t['packets'].iloc[0])} packets): "
                            + ", ".join(f"{r.part} {r.share:.0%}" for r in top.itertuples())))
    out.append(("collisions", ", ".join(f"link {r.link}: {r.downstream_records}"
                                        for r in p.collisions.itertuples()) or "none"))
    back = sum(p.reverse.values())
    if back:
        out.append(("reverse", f"{back} records went back along the path (left out): "
                               + ", ".join(f"hop {k} {v}" for k, v in p.reverse.items())))
    out.append(("problems", "none" if not p.problems else p.problems[0]))
    out += [("", s) for s in p.problems[1:]]
    out += [("note", s) for s in p.notes]
    return out


def offset_text(o):
    """One offset row as text: method, offset, drift, uncertainty."""
    if o["method"] == "none":
        return "not found: no packet paired between these hops (give --offset)"
    err = o["uncertainty_ns"]
    bound = ("an upper bound (one-way traffic: the least link time is not known)"
             if err is None or (isinstance(err, float) and np.isnan(err))
             else f"± {err / 1e3:.3f} us")
    drift = f", drift {o['drift_ppm']:+.3f} ppm" if o["drift_ppm"] else ""
    return f"{o['method']}, offset {o['offset_ns'] / 1e3:+.3f} us{drift}, {bound}"
