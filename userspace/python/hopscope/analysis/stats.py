"""Per-stage delay statistics, overall or per group (sender TOS, flow, ...).

Only complete packets enter the delays. A delay that is missing (a stage not
seen) or negative (a clock or matching error) is not a delay: it is left out
of the distribution and counted in `missing` / `negative`, so for every row
count + negative + missing = the group's complete packets.
"""
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..record.paths import stack_complete

STAGES = ("d_iq", "d_p", "d_oq", "transit")
# (column, quantile): RFC 8219 calls p50 "typical" and p99.9 "worst case"
QUANTILES = (("p50", 0.5), ("p90", 0.9), ("p99", 0.99), ("p99_9", 0.999))
COLUMNS = ("count", "min", "mean", "std", "p50", "p90", "p99", "p99_9", "max",
           "typical", "worst_case", "negative", "missing")


@dataclass
class Delays:
    """One group's delays at one stage."""
    key: tuple            # the group's values of the `by` columns; () for all packets
    stage: str
    values: np.ndarray    # the valid delays (float64 ns), sorted
    negative: int
    missing: int


def stage_stats(df, by=None, stages=STAGES):
    """One row per (group..., stage); see the module doc. Times in ns.

    by: None, a column name or a list of them. Groups are those of all
    packets, sorted, a missing key (NaN) being a group of its own: a group
    with no complete packet gets count 0. std is the sample std (NaN for one
    value); quantiles interpolate linearly, as numpy and pandas do by default.
    """
    return stats_table(df, by, grouped_delays(df, by, stages))


def stats_table(df, by, delays):
    """stage_stats' table from grouped_delays(df, by, ...)."""
    return table(df, by, [d.key + (d.stage,) + describe(d) for d in delays])


def table(df, by, rows):
    """stage_stats' table of rows (group key..., stage, *describe(Delays))."""
    by = _columns(by)
    out = pd.DataFrame(rows, columns=by + ["stage", *COLUMNS])
    for name, dtype in zip(by, df[by].dtypes):
        out[name] = out[name].astype(dtype)  # keep category / uint8 group keys as loaded
    return out


def path_stats(df, stages=STAGES + ("d_qdisc",)):
    """stage_stats of the complete records of each path present, a path
    apart from every other (a fast path has transit and d_qdisc, not d_iq,
    d_p, d_oq: only the stages with a delay are rows)."""
    complete = (df["status"] == "complete").to_numpy()
    rows = []
    for path in df["path"].cat.categories:
        on = complete & (df["path"] == path).to_numpy()
        if not on.any():
            continue
        for stage in stages:
            if stage not in df.columns:
                continue
            v = np.sort(df[stage].to_numpy(np.float64)[on])
            negative = int(np.searchsorted(v, 0, side="left"))
            valid_end = int(np.searchsorted(v, np.inf, side="right"))
            if valid_end > negative:
                d = Delays((path,), stage, v[negative:valid_end], negative, len(v) - valid_end)
                rows.append(d.key + (stage,) + describe(d))
    return table(df, ["path"], rows)


def grouped_delays(df, by=None, stages=STAGES):
    """Delays per stage and group (list, stage-major), each group's values
    sorted once for the statistics and any histogram of them."""
    return [d for groups in delays_by_stage(df, by, stages) for d in groups]


def delays_by_stage(df, by=None, stages=STAGES):
    """grouped_delays a stage at a time: yields each stage's [Delays per
    group], that stage's values gathered only when the caller asks for it
    (let the last stage's go first: fresh memory is slow on a VM)."""
    by = _columns(by)
    complete = stack_complete(df)
    if by:
        # complete packets' rows grouped (stable: file order within a group),
        # so every group is one slice of each stage's values
        codes, keys = _group_codes(df, by)
        rows = np.flatnonzero(complete)
        rows = rows[np.argsort(codes[rows], kind="stable")]
        sizes = np.bincount(codes[rows], minlength=len(keys))
    else:
        rows, keys, sizes = complete, [()], [np.count_nonzero(complete)]
    bounds = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    for stage in stages:
        yield _stage_delays(df, stage, rows, keys, bounds)


def _stage_delays(df, stage, rows, keys, bounds):
    """One stage's [Delays per group] of delays_by_stage."""
    if stage in df.columns:
        values = df[stage].to_numpy(np.float64)[rows]
    else:  # stage not recorded in this run: every complete packet misses it
        values = np.full(bounds[-1], np.nan)
    out = []
    for g, key in enumerate(keys):
        # values is our own copy: sorted in place, negatives come first and
        # NaN last, so the valid delays are a slice, not another copy
        v = values[bounds[g]:bounds[g + 1]]
        v.sort()
        negative = int(np.searchsorted(v, 0, side="left"))
        valid_end = int(np.searchsorted(v, np.inf, side="right"))
        out.append(Delays(key, stage, v[negative:valid_end], negative, len(v) - valid_end))
    return out


def merged(stage, groups):
    """One Delays of every group's together (the groups of stage, as
    grouped_delays gives them): the groups' sorted values merged (a stable
    sort of sorted runs only merges them), counts added."""
    values = np.concatenate([g.values for g in groups]) if groups else np.zeros(0)
    if len(groups) > 1:
        values.sort(kind="stable")
    return Delays((), stage, values,
                  sum(g.negative for g in groups), sum(g.missing for g in groups))


def describe(d):
    """The COLUMNS values of one Delays."""
    v, n = d.values, len(d.values)
    if n == 0:
        return (0,) + (np.nan,) * 10 + (d.negative, d.missing)
    q = {name: quantile_sorted(v, p) for name, p in QUANTILES}
    mean = float(np.mean(v))
    std = sample_std(v, mean) if n > 1 else np.nan
    return (n, float(v[0]), mean, std, q["p50"], q["p90"], q["p99"],
            q["p99_9"], float(v[-1]), q["p50"], q["p99_9"], d.negative, d.missing)


def sample_std(v, mean, chunk=1 << 16):
    """np.std(v, ddof=1) of len(v) > 1 given its mean: the deviations a
    slice at a time, in a buffer that stays in the CPU's cache, instead of
    a temporary array as large as v."""
    buf = np.empty(min(chunk, len(v)))
    squares = 0.0
    for i in range(0, len(v), chunk):
        d = np.subtract(v[i:i + chunk], mean, out=buf[:len(v[i:i + chunk])])
        d *= d  # not np.dot: BLAS wakes its threads per call, seconds on a busy machine
        squares += float(d.sum())
    return (squares / (len(v) - 1)) ** 0.5


def quantile_sorted(v, p):
    """Quantile p of sorted non-empty v, linear interpolation between order
    statistics (numpy's default method); sorting once beats np.percentile's
    repeated partitions for the four quantiles."""
    h = (len(v) - 1) * p
    lo = int(np.floor(h))
    hi = min(lo + 1, len(v) - 1)
    return float(v[lo] + (h - lo) * (v[hi] - v[lo]))


def _columns(by):
    return [] if by is None else [by] if isinstance(by, str) else list(by)


def _group_codes(df, by):
    """(group code per row of df, group key tuples in code order)."""
    g = df.groupby(by, observed=True, dropna=False, sort=True)
    keys = [k if isinstance(k, tuple) else (k,) for k in g.size().index]
    codes = g.ngroup().to_numpy()
    # narrow codes sort by radix: several times faster than int64
    narrow = np.int8 if len(keys) < 128 else np.int16 if len(keys) < 32768 else np.int64
    return codes.astype(narrow), keys
