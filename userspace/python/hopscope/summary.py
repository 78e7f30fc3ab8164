"""A campaign's summary: each stage's statistics per run, and their mean and
spread across each condition's repetitions, as CSV, Parquet and a PDF.

    OUT/runs.csv, runs.parquet        one row per run and stage
    OUT/summary.csv, summary.parquet  one row per condition and stage:
                                      STAT_mean and STAT_std over its runs
    OUT/summary.pdf                   the same, drawn and tabulated

Statistics are hopscope.stats.stage_stats' (complete packets only). Delays are
in nanoseconds in the tables, microseconds in the PDF. Spread is the
sample standard deviation across repetitions (empty with one repetition).
"""
import os

import numpy as np
import pandas as pd

from .stats import stage_stats

SUMMARY_STATS = ("count", "mean", "p50", "p99", "p99_9", "max")
# what a run counted besides its records (RunResult), carried into runs.csv
RUN_COUNTS = ("sent", "received", "forwarded", "complete")


def run_stats(df):
    """{stage: {stat: value}} of one loaded run, for its metadata.json."""
    table = stage_stats(df).set_index("stage")
    return {stage: {k: _plain(v) for k, v in table.loc[stage].items()} for stage in table.index}


def _plain(v):
    """JSON-ready: numpy scalars to Python, NaN to None."""
    v = v.item() if hasattr(v, "item") else v
    return None if isinstance(v, float) and np.isnan(v) else v


def runs_table(runs):
    """One row per run and stage, in the order given. runs: dicts with
    condition, repetition, stats ({stage: {stat: value}}), counts ({name: value})."""
    rows = []
    for r in runs:
        for stage, stats in r["stats"].items():
            row = {"condition": r["condition"], "repetition": r["repetition"], "stage": stage}
            row.update(stats)
            row.update({k: (r.get("counts") or {}).get(k) for k in RUN_COUNTS})
            rows.append(row)
    return pd.DataFrame(rows, columns=None if rows else ["condition", "repetition", "stage"])


def summary_table(runs):
    """One row per condition and stage: runs, STAT_mean, STAT_std."""
    if runs.empty:
        return pd.DataFrame(columns=["condition", "stage", "runs"])
    g = runs.groupby(["condition", "stage"], sort=False)
    out = g.size().rename("runs").to_frame()
    for stat in SUMMARY_STATS:
        out[f"{stat}_mean"] = g[stat].mean()
        out[f"{stat}_std"] = g[stat].std()  # ddof=1: NaN for a single run
    return out.reset_index()


def write(runs, outdir, title):
    """Write the tables and the PDF; returns the paths written."""
    runs_df = runs_table(runs)
    summary = summary_table(runs_df)
    paths = []
    for name, table in (("runs", runs_df), ("summary", summary)):
        for ext, write_one in (("csv", lambda t, p: t.to_csv(p, index=False)),
                               ("parquet", lambda t, p: t.to_parquet(p, index=False))):
            path = os.path.join(outdir, f"{name}.{ext}")
            write_one(table, path + ".tmp")
            os.replace(path + ".tmp", path)
            paths.append(path)
    pdf = os.path.join(outdir, "summary.pdf")
    from .summary_pdf import draw
    draw(summary, runs_df, pdf + ".tmp", title)
    os.replace(pdf + ".tmp", pdf)
    paths.append(pdf)
    return paths
