"""A calibration (record/calibration.py) made from a recording at a low
constant rate with every optional stage on: each probe's cost, the floors of
the core delays, and each delay of the packets that found the router idle."""
import datetime

import numpy as np

from ..record import calibration as cal
from ..record.probecost import delay_floors
from .coffee import idle_rows


def idle_delays(df):
    """Each delay over the complete packets that found the router idle:
    probes and kernel together, the least a packet alone there takes."""
    rows = idle_rows(df, "t1")  # the delays of those rows only: a copy is slow on a VM
    out = {}
    for col in (x for x in df.columns if x.startswith("d_") or x == "transit"):
        v = df[col].to_numpy()[rows]
        v = v[v == v]
        if len(v):
            out[col] = {"packets": int(len(v)), "min_ns": int(v.min()),
                        "p50_ns": float(np.quantile(v, 0.5)),
                        "p99_ns": float(np.quantile(v, 0.99))}
    return out


def make(df, traffic):
    """The calibration of a loaded recording; ValueError when it has no
    probe cost samples."""
    a, h = df.attrs, df.attrs["header"]
    costs = a.get("probe_cost")
    if not costs:
        raise ValueError("the recording has no probe cost samples (a kernel module older "
                         "than ABI 2 does not sample them)")
    return {
        "format": cal.FORMAT, "version": cal.VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hostname": h.get("hostname"), "kernel": (h.get("kernel") or {}).get("release"),
        "backend": h.get("backend"), "clock": a["clock"], "traffic": traffic,
        "records": int((df["status"] == "complete").sum()),
        "stages": {s: {"floor_ns": c["low_ns"], "mean_ns": c["mean_ns"], "spread_ns": c["sd_ns"],
                       "p50_ns": c["p50_ns"],
                       "p99_ns": c["p99_ns"], "max_ns": c["max_ns"], "samples": c["samples"]}
                   for s, c in costs.items()},
        "delays": delay_floors({"stages": []}, costs),
        "idle": idle_delays(df),
    }
