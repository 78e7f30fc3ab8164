"""Statistics across runs: each stage's statistics per run, and their mean
and spread across each condition's repetitions (hopscope.report.campaign
writes them). Statistics are stats.stage_stats' (complete packets only), in
nanoseconds. Spread is the sample standard deviation across repetitions
(empty with one repetition).
"""

import numpy as np
import pandas as pd

from .stats import stage_stats

SUMMARY_STATS = ("count", "mean", "std", "p50", "p99", "p99_9", "max", "probe_floor")
# what a run counted besides its records (RunResult), carried into runs.csv
RUN_COUNTS = ("sent", "received", "forwarded", "complete")


def run_stats(df):
    """{stage: {stat: value}} of one loaded run, for its metadata.json; with
    probe_floor, the delay's probe floor (None where the file has none)."""
    table = stage_stats(df).set_index("stage")
    floors = df.attrs.get("probe_floor") or {}
    return {stage: {**{k: _plain(v) for k, v in table.loc[stage].items()},
                    "probe_floor": (floors.get(stage) or {}).get("floor_ns")}
            for stage in table.index}


def sender_stats(df):
    """{tos: {stage: {stat: value}}} of one loaded run, for its metadata.json:
    each sender told apart by its TOS byte, as the paper did (4 and 5; their
    DSCP, tos >> 2, is 1 for both)."""
    table = stage_stats(df, by="tos")
    return {str(int(tos)): {r["stage"]: {k: _plain(v) for k, v in r.items()
                                         if k not in ("tos", "stage")}
                            for _, r in rows.iterrows()}
            for tos, rows in table.groupby("tos", sort=True)}


def senders_table(runs):
    """One row per run, TOS and stage, in the order given. runs: dicts with
    condition, repetition, senders ({tos: {stage: {stat: value}}})."""
    rows = [{"condition": r["condition"], "repetition": r["repetition"], "tos": int(tos),
             "stage": stage, **stats}
            for r in runs for tos, stages in (r.get("senders") or {}).items()
            for stage, stats in stages.items()]
    return pd.DataFrame(rows, columns=None if rows else ["condition", "repetition", "tos",
                                                           "stage"])


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


def summary_table(runs, keys=("condition", "stage")):
    """One row per keys (condition and stage): runs, STAT_mean, STAT_std."""
    if runs.empty:
        return pd.DataFrame(columns=[*keys, "runs"])
    g = runs.groupby(list(keys), sort=False)
    out = g.size().rename("runs").to_frame()
    for stat in (s for s in SUMMARY_STATS if s in runs):  # per sender: no probe floor
        out[f"{stat}_mean"] = g[stat].mean()
        out[f"{stat}_std"] = g[stat].std()  # ddof=1: NaN for a single run
    return out.reset_index()

