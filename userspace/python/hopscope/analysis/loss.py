"""Where packets were lost, with the router's own drops kept apart from the
tracer's losses, and the packets that were neither (unfinished, untraced).

Records give drops per stage and kernel drop reason, and the tracer losses
that still left a record (evicted, collision). Losses that left no record at
all exist only as counters in the file's trailer (or its last snapshot).
"""
import numpy as np
import pandas as pd

from ..record import format as fmt

COLUMNS = ("source", "stage", "what", "drop_reason", "reason", "packets")

# record status: (source, what); stage = the last stage the packet was seen at
_STATUS_ROWS = {
    "evicted": ("tracer", "evicted: its slot was reused before it completed"),
    "collision": ("tracer", "collision: its key was in flight twice"),
    "inflight": ("other", "still in the router when the recording stopped"),
    "other_out": ("other", "forwarded out of an interface that is not traced"),
}
# counter: (source, stage, what)
COUNTER_ROWS = (
    ("rb_fail", "tracer", None, "record lost: ring buffer full (any status)"),
    ("race", "tracer", None, "record discarded: slot reused while being copied"),
    ("prog_misses", "tracer", None, "probe runs the kernel skipped"),
    ("xdp_meta_fail", "tracer", "t1", "not traced: XDP metadata refused"),
    ("stale", "tracer", None, "stage hit whose slot was reused or already emitted"),
    ("t0_map_full", "tracer", "t0", "t0 lost: map full"),
    ("t0_collision", "tracer", "t0", "t0 unknown: key in flight twice"),
    ("t0_miss", "tracer", "t0", "t0 not found for the packet at t1"),
    ("in_nometa", "tracer", "t3", "forwarded from a traced input without a record: a way "
                                  "in not followed (IPsec, an unknown tunnel)"),
    ("pre_nometa", "other", "t2", "seen without metadata: local, untraced input, or lost"),
    ("post_nometa", "other", "t3", "seen without metadata: local, untraced input, or lost"),
    ("out_nometa", "other", "t4", "seen without metadata: the router's own, untraced input, "
                                  "or a merged packet's segment not followed"),
    ("local", "other", None, "delivered to the router itself: not forwarded"),
    ("unsampled", "other", "t1", "left out by --sample: not traced, on purpose"),
)


def loss_table(df):
    """DataFrame(source, stage, what, drop_reason, reason, packets).

    source: "router" (kernel drops, one row per last stage seen and drop
    reason), "tracer" (the tracer lost the packet or its record) or "other".
    reason: the drop reason's name in the kernel that recorded the run (the
    header's table, from that kernel's BTF: the numbers change between
    kernels), or "reason N" when the file has no table.
    Counter rows are always there, 0 included, so a clean run shows it;
    packets is <NA> when the file holds no counters.
    """
    rows = []
    names = (df.attrs.get("header") or {}).get("drop_reasons") or {}
    status = df["status"]
    dropped = df.loc[(status == "dropped").to_numpy(), ["drop_stage", "drop_reason"]]
    counts = dropped.value_counts(dropna=False, sort=False).sort_index()
    for (stage, reason), n in counts[counts > 0].items():  # categories never seen give 0
        rows.append(("router", _name(stage), "dropped by the kernel", int(reason),
                     names.get(str(int(reason)), f"reason {int(reason)}"), int(n)))
    stuck = _t4_unseen(df)
    judged = status.isin(["inflight", "evicted"]).to_numpy()
    rows += _status_rows(df, judged & stuck,
                         "tracer", "t4 not seen: a later packet of its flow left")
    for name, (source, what) in _STATUS_ROWS.items():
        sel = (status == name).to_numpy()
        rows += _status_rows(df, sel & ~stuck if name in ("inflight", "evicted") else sel,
                             source, what)
    counters = ((df.attrs.get("counters") or {}).get("counters"))
    for key, source, stage, what in COUNTER_ROWS:
        n = None if counters is None else int(counters.get(key, 0))
        rows.append((source, stage, what, None, None, n))
    out = pd.DataFrame(rows, columns=COLUMNS)
    out["drop_reason"] = out["drop_reason"].astype("Int64")
    out["packets"] = out["packets"].astype("Int64")
    return out


def _t4_unseen(df):
    """Rows the recorder judged lost by the tracer: still "inside" at the stop,
    or evicted from their slot, although a later packet of their flow had
    left (docs/record-format.md, HS_F_T4_UNSEEN). Files older than that
    verdict never set the bit: their inflight records read as still inside."""
    if "flags" not in df.columns:
        return np.zeros(len(df), bool)
    return (df["flags"].to_numpy() & fmt.FLAGS["t4_unseen"]) != 0


def _status_rows(df, sel, source, what):
    if not sel.any():
        return []
    stages, counts = np.unique(last_stage(df, sel), return_counts=True)
    return [(source, s, what, None, None, int(n)) for s, n in zip(stages, counts)]


def last_stage(df, sel):
    """Name of the last stage each selected row was seen at ("none" if none)."""
    names = [s for s in fmt.STAGE_NAMES if s in df.columns]
    seen = np.column_stack([df[s].to_numpy()[sel] != 0 for s in names])
    idx = len(names) - 1 - np.argmax(seen[:, ::-1], axis=1)
    return np.where(seen.any(axis=1), np.array(names)[idx], "none")


def _name(stage):
    return "unknown" if pd.isna(stage) else str(stage)
