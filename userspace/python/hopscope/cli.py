"""`python3 -m hopscope SUBCOMMAND ...`: the Python half of the hopscope CLI.

build/hopscope runs `record` and `top` itself and hands every other
subcommand to this module. Exit status: 0 done, 1 the file could not be used
(or verify found problems), 2 usage error.
"""
import argparse
import importlib
import json
import sys
import time
import warnings
from typing import Callable, NamedTuple

import numpy as np

from . import __version__
from .record import format as fmt
from .record.load import load, to_dataframe
from .record.reader import RecordFile, RecordFileError

# name -> (target, one-line summary). target is "module" or "module:attr" naming
# an object with add_arguments(parser) and run(args, parser) -> exit status. It
# is imported only when its subcommand runs, so one subcommand's dependencies
# never slow down another. Add new subcommands here.
SUBCOMMANDS = {
    "export": ("hopscope.record.export", "write a record file as Parquet or CSV"),
    "verify": ("hopscope.cli:VERIFY", "check a record file: structure, CRC32 of every chunk"),
    "describe": ("hopscope.cli:DESCRIBE",
                 "summarise a record file: run, interfaces, counts, delays"),
    "report": ("hopscope.report.pdf", "a PDF report of one or more runs: tables and the paper's figures"),
    "campaign": ("hopscope.traffic.campaign",
                 "run every condition of a scenario x its repetitions, resumable; summary"),
    "throughput": ("hopscope.traffic.throughput",
                   "lossless throughput of each condition of a scenario (binary search)"),
    "scenario": ("hopscope.traffic.scenario.cli",
                 "check a scenario file (traffic/README.md), or run each condition once"),
}


class Subcommand(NamedTuple):
    add_arguments: Callable
    run: Callable


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    if argv[0] == "--version":
        print(f"hopscope (python) {__version__}")
        return 0
    name = argv[0]
    if name not in SUBCOMMANDS:
        print(f"hopscope: unknown subcommand {name!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    target, summary = SUBCOMMANDS[name]
    module, _, attr = target.partition(":")
    cmd = importlib.import_module(module)
    cmd = getattr(cmd, attr) if attr else cmd
    parser = argparse.ArgumentParser(prog=f"hopscope {name}", description=summary,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    cmd.add_arguments(parser)
    args = parser.parse_args(argv[1:])  # exits 2 on a usage error
    with warnings.catch_warnings():
        warnings.showwarning = _show_warning
        try:
            return cmd.run(args, parser)
        except RecordFileError as e:
            print(f"hopscope {name}: {e}", file=sys.stderr)
        except OSError as e:
            where = f"{e.filename}: {e.strerror}" if e.filename else str(e)
            print(f"hopscope {name}: {where}", file=sys.stderr)
        except KeyboardInterrupt:
            return 130
    return 1


def _usage():
    width = max(map(len, SUBCOMMANDS))
    lines = [f"  {n:<{width}}  {s}" for n, (_, s) in SUBCOMMANDS.items()]
    return ("usage: hopscope SUBCOMMAND [options]   (hopscope SUBCOMMAND --help for its options)\n"
            "\nsubcommands:\n" + "\n".join(lines) +
            "\n\n`hopscope record` and `hopscope top` are part of the C program build/hopscope.")


def _show_warning(message, category, filename, lineno, file=None, line=None):
    print(f"hopscope: warning: {message}", file=sys.stderr)


# ---- verify ----

def _verify_arguments(p):
    p.add_argument("files", nargs="+", metavar="FILE", help="record files (.hsr)")
    p.epilog = ("Reads every chunk, checks its CRC32 and every record's status and flow.\n"
                "Exit status 0 when every file is whole and intact, 1 otherwise.\n\n"
                "example:\n  hopscope verify run.hsr")


def _verify_run(args, parser):
    bad = 0
    for path in args.files:
        try:
            rf = RecordFile(path, verify=True)
            to_dataframe(rf)  # adds what is wrong with the records to rf.problems
        except RecordFileError as e:
            print(e, file=sys.stderr)
            bad += 1
            continue
        kinds = [c.type for c in rf.chunks]
        end = rf.trailer.get("stop_reason", "?") if rf.trailer else None
        summary = (f"{rf.n_records} records in {kinds.count(fmt.CHUNK_RECORDS)} chunks, "
                   f"{len(rf.flows)} flows, {kinds.count(fmt.CHUNK_COUNTERS)} counter snapshots, "
                   + (f"END (stopped: {end})" if rf.trailer else "no END") +
                   f"; CRC32 checked on {len(rf.chunks)} chunks")
        if rf.problems:
            bad += 1
            print(f"{path}: PROBLEMS: {summary}", file=sys.stderr)
            for p in rf.problems:
                print(f"  - {p}", file=sys.stderr)
            print(f"  whole up to byte {rf.whole_bytes} of {rf.size}", file=sys.stderr)
        else:
            print(f"{path}: OK: {summary}")
    return 1 if bad else 0


VERIFY = Subcommand(_verify_arguments, _verify_run)


# ---- describe ----

def _describe_arguments(p):
    p.add_argument("file", metavar="FILE", help="record file (.hsr)")
    p.add_argument("--json", action="store_true",
                   help="print the header, trailer and last counters as JSON instead")
    p.add_argument("--verify", action="store_true", help="check every chunk's CRC32 too")
    p.epilog = "example:\n  hopscope describe run.hsr"


def _describe_run(args, parser):
    df = load(args.file, verify=args.verify)
    a = df.attrs
    if args.json:
        print(json.dumps({k: a[k] for k in ("header", "trailer", "counters", "truncated",
                                            "problems")}, indent=2))
        return 0
    for label, text in _describe(df):
        print(f"{label:<11} {text}")
    return 0


def _describe(df):
    """(label, text) lines summarising a loaded record file."""
    a, h = df.attrs, df.attrs["header"]
    out = [("file", f"{a['path']}: {len(df)} records"
            + (" (NOT WHOLE: see the warning above)" if a["truncated"] else ""))]
    start = h.get("start_realtime_ns")
    when = (time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(start / 1e9))
            if isinstance(start, int) else "?")
    kernel, cpu = h.get("kernel") or {}, h.get("cpu") or {}
    out.append(("run", f"{when} on {h.get('hostname', '?')}, backend {h.get('backend', '?')}, "
                       f"tracer {h.get('tracer_version', '?')}"))
    out.append(("command", str(h.get("command", "?"))))
    out.append(("system", f"kernel {kernel.get('release', '?')} {kernel.get('machine', '')}, "
                          f"clocksource {h.get('clocksource', '?')}, "
                          f"{cpu.get('count', '?')} x {cpu.get('model', '?')}"))
    for i in h.get("interfaces") or ():
        keys = ("ifindex", "driver", "xdp_mode", "rps_cpus", "mtu")
        detail = [f"{k} {i[k]}" for k in keys if i.get(k) not in (None, "")]
        qdisc = i.get("qdisc")  # `tc -j qdisc show` objects
        if isinstance(qdisc, list):
            detail.append("qdisc " + " ".join(str(q.get("kind", "?")) for q in qdisc
                                              if isinstance(q, dict)))
        detail = ", ".join(detail)
        out.append(("interface", f"{i.get('name', '?')} ({i.get('role', '?')}): {detail}"))
    out.append(("stages", " ".join(h.get("stages") or ())))
    if len(df):
        t1 = df["t1"][df["t1"] > 0]
        span = (t1.max() - t1.min()) / 1e9 if len(t1) else 0
        rate = f", {len(df) / span / 1e3:.1f} kpps" if span > 0 else ""
        out.append(("span", f"{span:.3f} s of t1{rate}"))
    counts = df["status"].value_counts(sort=False)
    out.append(("status", ", ".join(f"{k} {v}" for k, v in counts.items() if v)))
    tos = df["tos"].value_counts().sort_index()
    out.append(("tos", ", ".join(f"{k}: {v}" for k, v in tos.items())))
    complete = df["status"] == "complete"
    for col in [c for c in df.columns if c.startswith("d_") or c == "transit"]:
        v = df[col][complete].dropna().to_numpy()
        if len(v):
            q = [x / 1e3 for x in (v.min(), *np.percentile(v, [50, 99]), v.max())]
            out.append((col, "min {:.2f}  p50 {:.2f}  p99 {:.2f}  max {:.2f} us".format(*q)))
    tr = a["trailer"]
    if tr:
        us = tr.get("userspace") or {}
        keys = ("records_written", "flows", "flow_overflow", "inflight_at_stop")
        detail = ", ".join(f"{k} {us[k]}" for k in keys if k in us)
        out.append(("stopped", f"{tr.get('stop_reason', '?')}; {detail}"))
    counters = (a["counters"] or {}).get("counters") or {}
    nonzero = ", ".join(f"{k} {v}" for k, v in counters.items() if v)
    out.append(("counters", nonzero or "none"))
    out.append(("problems", "; ".join(a["problems"]) or "none"))
    return out


DESCRIBE = Subcommand(_describe_arguments, _describe_run)
