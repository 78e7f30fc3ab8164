"""Small hand-made runs: DataFrames with the columns and dtypes hopscope.load gives.

test_frames_match_load checks the dtypes against a loaded file, so a test on
a frame made here tests what the library will see.
"""
import numpy as np
import pandas as pd

from hopscope.record import format as fmt
from hopscope.record.format import DELAYS

BIG = 10**15  # a monotonic clock of a machine up ~12 days: far beyond float64's ns precision


def frame(t1, t2, t3, t4, status=None, *, t0=None, tos=None, ip_len=None, drop_stage=None,
          drop_reason=None, flow=None, flags=None, counters=None, base=BIG):
    """A run from per-packet stage times in ns after base (None = not seen).

    status defaults to complete for packets seen at all four stages, else
    inflight. drop_stage: stage names (or None) per packet. flow: flow ids
    (default: all one flow). flags: hs_record.flags per packet (default 0).
    """
    times = {"t1": t1, "t2": t2, "t3": t3, "t4": t4}
    if t0 is not None:
        times = {"t0": t0, **times}
    n = len(t1)
    cols = {}
    for name, rel in times.items():
        cols[name] = np.array([0 if x is None else base + int(x) for x in rel], np.int64)
    for name, later, earlier in DELAYS:
        if later in cols and earlier in cols:
            d = (cols[later] - cols[earlier]).astype(np.float64)  # int64 first, as load does
            d[(cols[later] == 0) | (cols[earlier] == 0)] = np.nan
            cols[name] = d
    if status is None:
        status = ["complete" if all(cols[t][i] for t in fmt.CORE_STAGES) else "inflight"
                  for i in range(n)]
    cols["status"] = pd.Categorical(status, categories=fmt.STATUS_NAMES)
    cols["drop_reason"] = np.array(drop_reason or [0] * n, np.uint32)
    cols["drop_stage"] = pd.Categorical(drop_stage or [None] * n, categories=fmt.STAGE_NAMES)
    cols["tos"] = np.array(tos or [0] * n, np.uint8)
    cols["dscp"] = cols["tos"] >> 2
    cols["ip_len"] = np.array(ip_len or [100] * n, np.uint16)
    cols["flow"] = np.array(flow or [0] * n, np.uint32)
    cols["flags"] = np.array(flags or [0] * n, np.uint8)
    df = pd.DataFrame(cols)
    df.attrs.update(header={}, trailer=None, problems=[], truncated=False,
                    counters=None if counters is None else {"counters": counters})
    return df
