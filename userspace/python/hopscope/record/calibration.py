"""A `hopscope calibrate` result (made by analysis/calibration.py): each probe's cost measured apart from any
experiment (at a low constant rate), as a JSON file that `hopscope record
--calibration FILE` copies into a recording's header (docs/accuracy.md).

    {"format": "hopscope-calibration", "version": 2, "created": "...",
     "hostname": ..., "kernel": ..., "backend": "ebpf", "clock": {...},
     "traffic": {...}, "records": N,
     "stages": {"t1": {"floor_ns", "mean_ns", "spread_ns", "p50_ns", "p99_ns", "max_ns",
                       "samples"}},
     "delays": {"d_iq": {"floor_ns", "mean_ns", "spread_ns", "p99_ns", "samples", "stages"}},
     "idle": {"d_iq": {"packets", "min_ns", "p50_ns", "p99_ns"}}}

stages: the probes' cost by stage (every optional stage on): floor_ns the
lower bound of record/probecost.py, mean_ns the mean; delays: their floors
with the core four stages only; idle: each delay over the packets that
found the router idle, probes and kernel together.
"""
import math

from . import header as h
from .format import STAGE_NAMES
from .probecost import delay_stages

FORMAT = h.CALIBRATION_FORMAT
VERSION = 2     # 1: floor_ns was the mean, now mean_ns


def _num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def check(cal):
    """Why cal is not a calibration this reader can use, or None."""
    if not isinstance(cal, dict) or cal.get("format") != FORMAT:
        return f"not a {FORMAT} object"
    if cal.get("version") != VERSION:
        old = " (its floor was a mean: run hopscope calibrate again)" if cal.get("version") == 1 else ""
        return f"calibration version {cal.get('version')!r}, this reader knows {VERSION}{old}"
    stages = cal.get("stages")
    if not isinstance(stages, dict) or not stages:
        return "its 'stages' is not an object of stages"
    for name, s in stages.items():
        if name not in STAGE_NAMES or not isinstance(s, dict):
            return f"stages has {name!r}, not a stage's object"
        for k in ("floor_ns", "mean_ns", "spread_ns"):
            if not _num(s.get(k)) or s[k] < 0:
                return f"stages.{name}.{k} is not a number of ns"
    return None


def calibrated_floor(cal, later, earlier, enabled):
    """The calibrated floor of the delay earlier -> later in a run whose
    enabled stages are `enabled`: the sum over the probes inside it; None
    when the calibration lacks one of them."""
    inside = delay_stages(later, earlier, enabled)
    if not all(s in cal["stages"] for s in inside):
        return None
    return sum(cal["stages"][s]["floor_ns"] for s in inside)
