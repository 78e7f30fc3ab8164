"""The generators' own per-packet truth joined to the router's records.

    df = hopscope.load("run/run.hsr")
    truth = join_truth(df, "run/")          # one row per packet a sender sent
    truth_counts(truth)                     # per sender: sent = forwarded + dropped + untraced + not_recorded

A packet is found by its key (include/hopscope.h), recomputed from what the
generator put in the payload: D-ITG's flow, sequence number and send time
(from its log), iperf3's send time and counter (searched, iperf.py).
traffic/README.md says more.
"""
import json
import os

import numpy as np
import pandas as pd

from ..record import format as fmt
from ..record import header as hs_header
from .generators import iperf
from . import packetkey as pk
from .generators.ditg import DAY_NS

STAGE_COLUMNS = ("t0", "t1", "t_tcin", "t2", "t_fwd", "t3", "t_tceg", "t4",
                 "d_rxq", "d_iq", "d_p", "d_oq", "d_opath", "d_qdisc", "transit")
UNTRACED = ("evicted", "collision", "inflight", "other_out")
STATUSES = list(fmt.STATUS_NAMES) + ["not_recorded"]


def join_truth(df, run_dir, meta=None):
    """One row per packet sent, every sender of the run: sender, generator, seq,
    size, tx_ns (CLOCK_MONOTONIC), rx_ns and owd_ns (D-ITG), recorded, status,
    the record's stage times and delays, forwarded, dropped, received.
    attrs["truth"] holds, per sender, the records that could not be tied to a
    packet sent (records_unmatched). meta: the run's metadata.json, read from
    run_dir when not given."""
    if meta is None:
        with open(os.path.join(run_dir, "metadata.json")) as f:
            meta = json.load(f)
    offset = df.attrs["header"]["mono_to_realtime_ns"]
    made = df.attrs["header"].get("key_hash", 1)  # absent: before the field, 1
    if made != hs_header.KEY_HASH:
        raise ValueError(f"the records' keys were made by key hash {made}, this hopscope "
                         f"recomputes the generators' with {hs_header.KEY_HASH}: no packet "
                         "would be found (docs/record-format.md, key_hash)")
    dst = meta["addresses"]["receiver"]
    parts, extra = [], {}
    for name, s in meta["senders"].items():
        cfg = meta["condition"]["senders"][name]
        if cfg["protocol"] != "udp":
            extra[name] = {"note": "TCP: segments are not the generator's writes; no per-packet truth"}
            continue
        flow = df[(df["proto"] == 17) & (df["src"] == s["address"]) & (df["dst"] == dst)
                  & (df["sport"] == s["sport"]) & (df["dport"] == cfg["port"])]
        if cfg["generator"] == "ditg":
            table = pd.read_parquet(os.path.join(run_dir, s["files"]["packets"]))
            t, unmatched = _ditg(flow, table, s["address"], dst, offset)
        else:
            t, unmatched = _iperf3(flow, cfg, s, dst)
        t.insert(0, "sender", name)
        t.insert(1, "generator", cfg["generator"])
        parts.append(t)
        extra[name] = {"records_unmatched": unmatched}
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()
    if len(out):
        out["sender"] = out["sender"].astype("category")
        out["generator"] = out["generator"].astype("category")
    out.attrs["truth"] = extra
    return out


def truth_counts(truth):
    """Per sender: sent, recorded, forwarded, dropped, untraced, not_recorded,
    received (None when the generator does not say per packet), and
    records_unmatched. sent = forwarded + dropped + untraced + not_recorded."""
    out = {}
    for name, t in truth.groupby("sender", observed=True):
        status = t["status"].astype(str)
        c = {"sent": len(t), "recorded": int(t["recorded"].sum()),
             "forwarded": int((status == "complete").sum()),
             "dropped": int((status == "dropped").sum()),
             "untraced": int(status.isin(UNTRACED).sum()),
             "not_recorded": int((~t["recorded"]).sum())}
        rec = t["received"]
        c["received"] = None if rec.isna().any() else int(rec.sum())
        if c["received"] is not None:
            # left the router (or its fate unseen) but never reached the receiver
            c["lost_after_router"] = int((t["recorded"] & ~t["dropped"] & ~rec.astype(bool)).sum())
        out[name] = c
    for name, extra in truth.attrs.get("truth", {}).items():
        out.setdefault(name, {}).update(extra)
    return out


def _records(flow):
    """The flow's records in arrival order, with each key's rank among equal keys."""
    rec = flow.sort_values("t1", kind="stable").reset_index(drop=True)
    cols = ["key", "status"] + [c for c in STAGE_COLUMNS if c in rec.columns]
    rec = rec[cols].copy()
    rec["status"] = rec["status"].astype(str)
    for c in cols[2:]:
        if c in fmt.STAGE_NAMES:  # times stay exact ns through the join's missing rows
            rec[c] = rec[c].astype("Int64").where(rec[c] != 0)
    return rec


def _finish(t):
    """Flags from the joined record columns."""
    status = t["status"]
    t["recorded"] = status.notna().to_numpy()
    t["forwarded"] = (status == "complete").to_numpy()
    t["dropped"] = (status == "dropped").to_numpy()
    t["status"] = pd.Categorical(status.fillna("not_recorded"), categories=STATUSES)
    return t


def _ditg(flow, table, src, dst, offset):
    """Every packet of ITGSend's log with its record, by recomputed key."""
    tx = table["tx_ns"].to_numpy(np.int64)
    tod = tx % DAY_NS
    words = np.stack([pk.be32(table["flow"]), pk.be32(table["seq"]),
                      pk.be32(tod // 10**9), pk.be32(tod % 10**9 // 1000)], axis=1)
    size = table["size"].to_numpy()
    keys = pk.key_hash(pk.udp4_words(src, dst, table["sport"].to_numpy(),
                                     table["dport"].to_numpy(), size,
                                     pk.clip_payload(words, size)))
    gen = pd.DataFrame({"key": keys, "seq": table["seq"].to_numpy(), "size": size,
                        "tx_ns": tx - offset})
    rx = table["rx_ns"]
    gen["rx_ns"] = (rx - offset).astype("Int64")
    gen["owd_ns"] = (rx - table["tx_ns"]).astype("Int64")
    gen["received"] = rx.notna().to_numpy()
    gen = gen.sort_values("tx_ns", kind="stable")
    gen["rank"] = gen.groupby("key").cumcount()
    rec = _records(flow)
    rec["rank"] = rec.groupby("key").cumcount()
    t = gen.merge(rec, on=["key", "rank"], how="left", validate="one_to_one")
    unmatched = len(rec) - int(t["status"].notna().sum())
    t = t.drop(columns=["key", "rank"]).sort_values("seq", kind="stable").reset_index(drop=True)
    return _finish(t), unmatched


def _iperf3(flow, cfg, s, dst):
    """iperf3's packets 1..sent, each with its record where the search found it."""
    size = cfg["size"]["value"]
    data = flow[flow["ip_len"] == 28 + size]  # not the 4-byte UDP handshake
    rec = _records(data)
    counter, tx_us = iperf.find_counters(rec["key"].to_numpy(), rec["t1"].to_numpy(), size,
                                         s["address"], dst, s["sport"], cfg["port"], s["sent"])
    found = counter >= 0
    rec = rec.drop(columns="key")
    rec["seq"] = pd.array(np.where(found, counter, 0), dtype="Int64")
    rec.loc[~found, "seq"] = pd.NA
    rec["tx_ns"] = pd.array(np.where(found, tx_us * 1000, 0), dtype="Int64")
    rec.loc[~found, "tx_ns"] = pd.NA
    unmatched = int((~found).sum())
    # packets with no record: the counters no record carries; which ones is
    # known only when every record was tied to its counter
    missing = np.setdiff1d(np.arange(1, s["sent"] + 1), counter[found])
    n_missing = s["sent"] - len(rec)
    if n_missing < 0:
        raise RuntimeError(f"{s['address']}: {len(rec)} records but iperf3 sent {s['sent']}")
    lost = pd.DataFrame({"seq": pd.array(missing[:n_missing] if not unmatched
                                         else np.zeros(n_missing, dtype=np.int64), dtype="Int64")})
    if unmatched:
        lost["seq"] = pd.NA
    t = pd.concat([rec, lost], ignore_index=True)
    t["size"] = size
    t["received"] = pd.array([pd.NA] * len(t), dtype="boolean")
    t = t.sort_values("seq", kind="stable", na_position="last").reset_index(drop=True)
    front = ["seq", "size", "tx_ns"]
    t = t[front + [c for c in t.columns if c not in front]]
    return _finish(t), unmatched
