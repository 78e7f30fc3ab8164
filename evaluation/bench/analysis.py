#!/usr/bin/env python3
"""Analysis speed in one run, beside what a user would do instead.

A synthetic record file of --records records (default 10 M; in COLUMNS
chunks as the recorder writes them, or with --records-chunks in RECORDS
chunks, as files before format version 3), then, each timed:
what a hopscope user runs, hopscope.load, every statistic (analysis.analyse)
and the PDF report; then what a user would do instead: the DataFrame
exported to Parquet (hopscope.record.export), the per-sender (TOS)
percentiles computed by DuckDB on it, and the Parquet read back with
pandas.read_parquet; last hopscope's stage_stats of the same percentiles.

read_parquet comes after the steps the goals compare: its frame, from
Arrow's own allocator, most likely goes back to the kernel when freed, and
on the development machine the next step to take fresh pages pays for them (0.5-3 s per GB,
evaluation/measurements.md), whichever step that is.

Absolute times move with the machine and the day, so the goals are ratios
within a round:
  load >= 5x faster than read_parquet;
  analyse <= 1.5x DuckDB's quantile query;
  the report <= 3x DuckDB's quantile query.
Each of --rounds rounds runs in a new process, as a user's would; a goal is
met when the median round meets it, and the range is kept beside it.
Writes --json (default evaluation/results/analysis-CPU.json, CPU as in
overhead-CPU.json); exit 1 if a goal is not met or DuckDB's percentiles
disagree with hopscope's. Run it like
build/hopscope runs the Python commands (it sets the same GLIBC_TUNABLES,
userspace/glibc.tunables: see userspace/pycmd.c)."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if "GLIBC_TUNABLES" not in os.environ:  # must be set before the process starts
    with open(os.path.join(ROOT, "userspace", "glibc.tunables")) as f:
        os.environ["GLIBC_TUNABLES"] = f.read().strip()
    os.execv(sys.executable, [sys.executable] + sys.argv)
sys.path.insert(0, os.path.join(ROOT, "userspace", "python"))
import duckdb  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import hopscope  # noqa: E402
from hopscope.analysis import analyse  # noqa: E402
from hopscope.analysis.stats import QUANTILES, STAGES, stage_stats  # noqa: E402
from hopscope.record.export import to_parquet  # noqa: E402
from hopscope.report import pdf as report  # noqa: E402

import benchlib  # noqa: E402
from overhead_table import cpu_slug  # noqa: E402

# (name, numerator, denominator, goal, "max" | "min")
GOALS = (("report / duckdb_quantiles", "report", "duckdb_quantiles", 3.0, "max"),
         ("analyse / duckdb_quantiles", "analyse", "duckdb_quantiles", 1.5, "max"),
         ("read_parquet / load", "read_parquet", "load", 5.0, "min"))


def fresh_memory_seconds():
    """Seconds a new process takes to touch 1 GB it never used: on the development machine
    it varies from run to run (up to 3 s, evaluation/measurements.md), and so do
    the steps that take much fresh memory, analyse first."""
    code = "from load_speed import touch_seconds; print(touch_seconds(10**9))"
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"))
    out = subprocess.run([sys.executable, "-c", code], cwd=os.path.dirname(__file__), env=env,
                         capture_output=True, text=True, check=True)
    return float(out.stdout)


def synthesise(path, n, columns):
    """The record file, written by a child process: the memory writing it
    takes and frees must not be left in this process's heap, where the
    steps timed here would reuse it as a user's process could not."""
    code = ("from hopscope.record.synth import write_synthetic; "
            f"write_synthetic({path!r}, {n}, columns={columns})")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "userspace", "python"))
    subprocess.run([sys.executable, "-c", code], env=env, check=True)


def duckdb_quantiles(path):
    """stage_stats' count and percentiles per TOS, as a DuckDB user would
    write them: complete packets, each stage's valid (>= 0) delays."""
    qs = "[" + ", ".join(str(q) for _, q in QUANTILES) + "]"
    cols = ", ".join(f"count({s}) FILTER (WHERE {s} >= 0) AS {s}_n, "
                     f"quantile_cont({s}, {qs}) FILTER (WHERE {s} >= 0) AS {s}_q"
                     for s in STAGES)
    return duckdb.sql(f"SELECT tos, {cols} FROM read_parquet('{path}') "
                      "WHERE status = 'complete' GROUP BY tos ORDER BY tos").fetchall()


def disagreement(rows, stats):
    """What differs between DuckDB's rows and stage_stats(df, "tos"); "" if nothing."""
    mine = stats.set_index(["tos", "stage"])
    for row in rows:
        tos = row[0]
        for i, stage in enumerate(STAGES):
            n, q = row[1 + 2 * i], row[2 + 2 * i]
            r = mine.loc[(tos, stage)]
            want = [r[name] for name, _ in QUANTILES]
            if n != r["count"] or not np.allclose(q, want, rtol=1e-9):
                return f"TOS {tos} {stage}: duckdb {n} {q}, hopscope {r['count']} {want}"
    return ""


def timed_round(path):
    """One round on the record file, in this process: each step timed;
    (seconds, pages, records, what DuckDB and hopscope disagree on)."""
    seconds = {}

    def timed(name, f, *a):
        t = time.perf_counter()
        out = f(*a)
        seconds[name] = time.perf_counter() - t
        print(f"  {name:18} {seconds[name]:7.2f} s", flush=True)
        return out

    with tempfile.TemporaryDirectory(prefix="hopscope-bench-") as tmp:
        parquet = os.path.join(tmp, "bench.parquet")
        df = timed("load", hopscope.load, path)
        a = timed("analyse", analyse, df)
        pages = timed("report", report.write, os.path.join(tmp, "bench.pdf"), [("bench", df, a)])
        del a
        timed("export_parquet", to_parquet, df, parquet)
        rows = timed("duckdb_quantiles", duckdb_quantiles, parquet)
        timed("read_parquet", pd.read_parquet, parquet)  # freed before the next step
        stats = timed("stage_stats_tos", stage_stats, df, "tos")
    return seconds, pages, len(df), disagreement(rows, stats)


def child_round(path, out):
    """--round: one round, its result as JSON in out."""
    seconds, pages, records, wrong = timed_round(path)
    with open(out, "w") as f:
        json.dump({"seconds": seconds, "pages": pages, "records": records, "disagree": wrong}, f)
    return 0


def ratios_of(seconds):
    return {name: seconds[num] / seconds[den] for name, num, den, _, _ in GOALS}


def summary(rounds):
    """Each goal's ratio over the rounds, median and range; met by the median."""
    out = {}
    for name, _, _, goal, kind in GOALS:
        values = [r["ratios"][name] for r in rounds]
        med = statistics.median(values)
        out[name] = {"median": med, "min": min(values), "max": max(values), "goal": goal,
                     "kind": kind, "met": med <= goal if kind == "max" else med >= goal}
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=10_000_000)
    p.add_argument("--records-chunks", action="store_true",
                   help="the records in RECORDS chunks (160 bytes each), not COLUMNS")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds on the same file, each in a new process (default %(default)s)")
    p.add_argument("--json", default=os.path.join(
        benchlib.RESULTS, f"analysis-{cpu_slug(benchlib.cpu())}.json"),
        help="write the times and ratios here (default %(default)s; '' for none)")
    p.add_argument("--round", nargs=2, metavar=("FILE", "OUT"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.round:
        return child_round(*args.round)
    if args.records < 1000:
        p.error(f"--records {args.records}: give at least 1000")
    if args.rounds < 1:
        p.error(f"--rounds {args.rounds}: give at least 1")
    # analyse's threads, the report's workers and DuckDB's threads share these
    allowed = sorted(os.sched_getaffinity(0))
    print(f"  on CPUs {','.join(map(str, allowed))} of {os.cpu_count()}", flush=True)
    rounds, wrong = [], ""
    with tempfile.TemporaryDirectory(prefix="hopscope-bench-") as tmp:
        path, out = os.path.join(tmp, "bench.hsr"), os.path.join(tmp, "round.json")
        synthesise(path, args.records, not args.records_chunks)
        file_bytes = os.path.getsize(path)
        print(f"{args.records} synthetic records, {file_bytes / 1e9:.2f} GB", flush=True)
        for i in range(args.rounds):
            fresh = fresh_memory_seconds()
            print(f"round {i + 1}: touching 1 GB of fresh memory in a new process: "
                  f"{fresh:.2f} s", flush=True)
            subprocess.run([sys.executable, __file__, "--round", path, out], check=True)
            with open(out) as f:
                r = json.load(f)
            wrong = wrong or r.pop("disagree")
            r.update(fresh_gb_seconds=fresh, loadavg=benchlib.loadavg(),
                     ratios=ratios_of(r["seconds"]))
            rounds.append(r)
    if wrong:
        print(f"DuckDB and hopscope disagree: {wrong}")
    ratios = summary(rounds)
    met = not wrong and all(v["met"] for v in ratios.values())
    for name, v in ratios.items():
        print(f"{name:28} {v['median']:6.2f} ({v['min']:.2f}-{v['max']:.2f} over "
              f"{len(rounds)} rounds; goal {'<=' if v['kind'] == 'max' else '>='} {v['goal']:g}: "
              f"{'met' if v['met'] else 'NOT met'})")
    print(f"{rounds[0]['records']} records, {rounds[0]['pages']}-page report; goals "
          + ("met" if met else "NOT met") + " by the median round")
    if args.json:
        result = {"machine": benchlib.machine(), "cpu": benchlib.cpu(), "cpus_allowed": allowed,
                  "records": rounds[0]["records"], "file_bytes": file_bytes,
                  "chunks": "RECORDS" if args.records_chunks else "COLUMNS",
                  "rounds": rounds, "ratios": ratios, "duckdb_agrees": not wrong, "met": met,
                  "versions": {"duckdb": duckdb.__version__, "pandas": pd.__version__,
                               "numpy": np.__version__}}
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
            f.write("\n")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
