"""A run's error budget: for every instant where and on what clock it was
taken, and what the probes add before it; for every delay its probe floor (a
lower bound, checked against the run's delays), the probes' mean (systematic),
its spread (random) and what else it may hold. In the manner of
the classic budgets of capture points (baseline, uncertainty), but from the
run's own samples (record/probecost.py) and clock facts; the method and the
references it was checked against are in evaluation/accuracy.md.
"""
import math

import numpy as np

from ..record.format import DELAYS, STAGE_NAMES
from ..record.hooks import hooks
from ..record.paths import stack_complete
from ..record.calibration import calibrated_floor
from ..record.probecost import delay_stages, sampled
from .calibration import idle_delays

# below this many sampled packets a floor is said to rest on few
FEW_SAMPLES = 30
# a sampled packet's own delays hold its probes' exit reads: how much longer
# they are is said from this many sampled packets on
EXCESS_SAMPLES = 10
# delays whose two ends may be stamped on two CPUs (t1's and t4's, cross_cpu)
_CROSS = {"d_oq", "transit", "d_qdisc"}


def _resolution(clock):
    res = clock.get("resolution_ns")
    return res if isinstance(res, int) else None


def instants(df):
    """One row per enabled instant: stage, hook, clock, baseline_ns (the mean
    probe time spent on the packet before this stamp, since its first),
    uncertainty_ns (that time's spread with the clock's resolution); the last
    two None without probe cost samples."""
    a, h = df.attrs, df.attrs["header"]
    enabled = [s for s in STAGE_NAMES if s in df.columns]
    where = {k.stage: k.hook for k in hooks(h)}
    clock = a["clock"]
    res = _resolution(clock)
    costs = a.get("probe_cost") or {}
    rows = []
    for i, s in enumerate(enabled):
        before = enabled[:i]
        known = costs and all(p in costs for p in before)
        base = sum(costs[p]["mean_ns"] for p in before) if known else None
        unc = None
        if known and res is not None:
            unc = math.sqrt(sum(costs[p]["sd_ns"] ** 2 for p in before) + res ** 2)
        rows.append({"instant": s, "hook": where.get(s, "?"),
                     "clock": f"{clock['stamp_clock']} ({clock['clocksource']}, "
                              f"resolution {res if res is not None else '?'} ns)",
                     "baseline_ns": base, "uncertainty_ns": unc})
    return rows


def delays(df):
    """One row per delay column: delay, span ("t1 -> t2"), floor_ns (a lower
    bound), mean_ns (what the probes add on average), spread_ns, p99_floor_ns
    (bound), samples, check (probecost.floor_check of the complete packets'
    delays against the floor, None without one), sampled_excess_ns (the
    median delay of the sampled packets less that of the others: what the
    sampling itself adds to a sampled packet; None with too few of them),
    uncertainty_ns (spread with both ends' resolution),
    calibrated_ns (the --calibration file's floor, when carried), cross_cpu
    (records whose two ends were on two CPUs, for the delays that can be),
    idle (p50_ns and packets of the delay over the packets that found the
    router idle: probes and kernel together; None when none did)."""
    a = df.attrs
    idle = idle_delays(df)
    floors = a.get("probe_floor") or {}
    res = _resolution(a["clock"])
    cal = a.get("calibration")
    enabled = set(df.columns)
    complete = stack_complete(df)
    picked = sampled(df["seq"].to_numpy())
    rows = []
    for col, later, earlier in DELAYS:
        if col not in df.columns:
            continue
        f = floors.get(col)
        unc = None
        if f and res is not None:
            unc = math.sqrt(f["spread_ns"] ** 2 + 2 * res ** 2)
        rows.append({"delay": col, "span": f"{earlier} -> {later}",
                     "probes": " + ".join(delay_stages(later, earlier, enabled)),
                     "floor_ns": f["floor_ns"] if f else None,
                     "mean_ns": f["mean_ns"] if f else None,
                     "spread_ns": f["spread_ns"] if f else None,
                     "check": f and f.get("check"),
                     "sampled_excess_ns": f and _excess(df[col].to_numpy(), complete, picked),
                     "p99_floor_ns": f["p99_ns"] if f else None,
                     "samples": f["samples"] if f else 0,
                     "uncertainty_ns": unc,
                     "calibrated_ns": cal and calibrated_floor(cal, later, earlier, enabled),
                     "cross_cpu": a["cross_cpu"] if col in _CROSS else 0,
                     "idle": idle.get(col)})
    return rows


def _present(v):
    return v[~np.isnan(v)]


def _excess(v, complete, picked):
    s, u = _present(v[complete & picked]), _present(v[complete & ~picked])
    if len(s) < EXCESS_SAMPLES or not len(u):
        return None
    return float(np.median(s) - np.median(u))


def floor_broken(row):
    """"d_iq: 12.0 % of 3000 delays below its probe floor 0.98 µs, where its
    probes' samples allow 6.9 %" when a delays() row's check failed (load
    lists it among the file's problems too), else None."""
    c = row["check"]
    if not c or c["ok"]:
        return None
    return (f"{row['delay']}: {100 * c['share']:.1f} % of {c['packets']} delays below its probe "
            f"floor {row['floor_ns'] / 1e3:.2f} µs, where its probes' own samples allow "
            f"{100 * c['allowed']:.1f} % (docs/accuracy.md, the floor check)")


def floor_note(row, unit="µs"):
    """"probe floor 0.12 µs, mean 0.17 µs, spread ±0.05 µs" for a delays()
    row, or why not; then the calibrated floor, when the file carries one."""
    if row["floor_ns"] is None:
        text = "probe floor not sampled in this file"
    else:
        text = (f"probe floor {row['floor_ns'] / 1e3:.2f} {unit}, mean "
                f"{row['mean_ns'] / 1e3:.2f} {unit}, spread ±{row['spread_ns'] / 1e3:.2f} {unit}")
        c = row["check"]
        if c and c["packets"]:
            text += (f", {100 * c['share']:.1f} % below it"
                     + ("" if c["ok"] else f" (BROKEN: at most {100 * c['allowed']:.1f} %)"))
        if row["sampled_excess_ns"] is not None:
            text += (f"; sampled packets {row['sampled_excess_ns'] / 1e3:+.2f} {unit} "
                     "against the others")
        if row["samples"] < FEW_SAMPLES:
            text += f", from only {row['samples']} sampled packets"
    if row["calibrated_ns"] is not None:
        text += f"; calibrated {row['calibrated_ns'] / 1e3:.2f} {unit}"
    return text
