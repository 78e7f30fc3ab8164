"""Planted paths for the join's tests: the frames hopscope.load gives, per
router, of packets that cross a chain of routers both ways, with what
became of each known."""
import numpy as np
import pandas as pd

from hopscope.record import format as fmt

STATUS = list(fmt.STATUS_NAMES)


def _frame(rows, router, boot, mono_to_real=0, sync=None):
    df = pd.DataFrame(rows)
    for c in ("t0", "t1", "t2", "t3", "t4"):
        df[c] = df[c].astype(np.int64)
    for d, a, b in (("d_iq", "t2", "t1"), ("d_p", "t3", "t2"), ("d_oq", "t4", "t3"),
                    ("transit", "t4", "t1")):
        ok = (df[a] > 0) & (df[b] > 0)
        df[d] = np.where(ok, df[a] - df[b], np.nan)
    df["nat_src"] = pd.Categorical([None] * len(df), ["192.0.2.1"])
    df["nat_dst"] = pd.Categorical([None] * len(df), ["192.0.2.1"])
    df["status"] = pd.Categorical(df["status"], STATUS)
    df["drop_stage"] = pd.Categorical(df["drop_stage"], fmt.STAGE_NAMES)
    for c in ("in_if", "out_if", "src", "dst"):
        df[c] = df[c].astype("category")
    for c, t in (("key", np.uint32), ("ip_len", np.uint16), ("proto", np.uint8),
                 ("tos", np.uint8), ("sport", np.uint16), ("dport", np.uint16),
                 ("drop_reason", np.uint32), ("seq", np.uint64), ("flags", np.uint8)):
        df[c] = df[c].astype(t)
    clock = {"boot_id": boot, "realtime_sync": sync, "mono_to_realtime_err_ns": 50}
    df.attrs.update(header={"router_id": router, "mono_to_realtime_ns": mono_to_real,
                            "drop_reasons": {"7": "QDISC_DROP"}},
                    clock=clock, path=f"{router}.hsr", problems=[])
    return df


def chain(n_fwd=4000, n_rev=1500, hops=2, seed=3, drop_every=50, theta=None, drift_ppm=0.0,
          boots=None, link_ns=(3000, 900), queue_hop=None, unseen_every=None, backlog_ns=0):
    """Frames per hop and the truth. Forward packets enter at hop 1 (in_if
    "in") and leave the last hop by "out"; reverse ones go back. Hop k joins
    hop k+1 by "up" (hop k+1's side) and "down" (hop k's side). theta: per
    hop, its clock's offset from hop 1's at t=0 (ns); drift_ppm the same
    rate for each hop after the first. Every drop_every-th forward packet is
    dropped at the last hop's output (QDISC_DROP, reason 7). Every
    unseen_every-th forward packet's t4 is missed by the tracer at each hop
    (t4_unseen: inflight, no out_if). backlog_ns: each packet's wait between
    t0 and t1 at every router (t0 recorded), else no t0."""
    rng = np.random.default_rng(seed)
    theta = theta or [0] * hops
    boots = boots or ["boot-a"] * hops
    t0 = 1_000_000_000
    pkts = []
    for i in range(n_fwd):
        pkts.append(("f", t0 + i * 20_000 + int(rng.integers(0, 5000)), i))
    for i in range(n_rev):
        pkts.append(("r", t0 + i * 53_000 + int(rng.integers(0, 5000)), n_fwd + i))
    rows = [[] for _ in range(hops)]
    truth = []
    for way, start, i in pkts:
        key = int(rng.integers(1, 2**32 - 1))
        order = range(hops) if way == "f" else range(hops - 1, -1, -1)
        t = start
        fate = "delivered"
        for step, k in enumerate(order):
            last = step == hops - 1
            d_iq, d_p = int(rng.integers(500, 3000)), int(rng.integers(400, 900))
            d_oq = int(rng.integers(300, 900))
            if queue_hop == k + 1 and way == "f":
                d_oq += int(rng.integers(0, 200_000))
            t1 = t
            t2, t3, t4 = t1 + d_iq, t1 + d_iq + d_p, t1 + d_iq + d_p + d_oq
            drop = way == "f" and last and i % drop_every == 0
            if way == "f":
                in_if = "in" if k == 0 else "up"
                out_if = "out" if k == hops - 1 else "down"
            else:
                in_if = "out" if k == hops - 1 else "down"
                out_if = "in" if k == 0 else "up"
            shift = theta[k] + (drift_ppm * 1e-6 * (t1 - t0) if k else 0)
            s = int(round(shift))
            row = dict(t0=t1 - backlog_ns + s if backlog_ns else 0, t1=t1 + s, t2=t2 + s, t3=t3 + s, t4=0 if drop else t4 + s,
                       status="dropped" if drop else "complete",
                       drop_stage="t3" if drop else None, drop_reason=7 if drop else 0,
                       in_if=in_if, out_if=out_if, key=key, ip_len=100 + i % 1300,
                       proto=17, tos=4 if i % 2 else 5, sport=1000 + i % 7, dport=9000,
                       src="198.18.1.2" if way == "f" else "198.18.3.2",
                       dst="198.18.3.2" if way == "f" else "198.18.1.2")
            row["seq"] = (k + 1) << 48 | (len(rows[k]) + 1)
            row["flags"] = 0
            if unseen_every and way == "f" and not drop and i % unseen_every == 1:
                row.update(t4=0, status="inflight", out_if=None, flags=fmt.FLAGS["t4_unseen"])
            rows[k].append(row)
            if drop:
                fate = "dropped"
                break
            t = t4 + int(link_ns[0] + rng.integers(0, link_ns[1]))
        truth.append((way, i, fate))
    frames = [_frame(r, f"r{k + 1}", boots[k]) for k, r in enumerate(rows)]
    return frames, truth


def cut(frames):
    """Two hops' frames as recordings that did not start and stop together:
    hop 2 starts late (at its 10 % packet), hop 1 stops early (at its 90 %).
    Returns (start, stop) and changes frames in place; the original frames
    are the caller's."""
    up, down = frames
    start, stop = int(down["t1"].quantile(0.1)), int(up["t1"].quantile(0.9))
    frames[1] = down[down["t1"] >= start].reset_index(drop=True)
    frames[1].attrs = dict(down.attrs, header=dict(down.attrs["header"],
                                                   start_monotonic_ns=start))
    frames[0] = up[up["t1"] <= stop].reset_index(drop=True)
    frames[0].attrs = dict(up.attrs, trailer={"monotonic_ns": stop})
    return start, stop


def to_parquet(frames, folder):
    """Each frame with the types a campaign's packets dataset has (DuckDB's
    and Spark's): folder/hopK.parquet."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from hopscope.record.dataset import portable
    out = []
    for k, df in enumerate(frames, 1):
        path = f"{folder}/hop{k}.parquet"
        pq.write_table(portable(pa.Table.from_pandas(df, preserve_index=False)), path)
        out.append(path)
    return out


def same_table(p, got, nhops):
    """load_path's packets and the query's, row for row, column for column."""
    seqs = [f"h{k}_seq" for k in range(1, nhops + 1)]
    want = p.packets.copy()
    got = got.copy()
    for c in seqs:
        got[c] = got[c].fillna(0).astype(np.uint64)
    want = want.sort_values(seqs, ignore_index=True)
    got = got.sort_values(seqs, ignore_index=True)
    assert len(got) == len(want)
    for c in got.columns:
        a, b = want[c], got[c]
        if c == "fate":
            assert (a.astype(str) == b.astype(str)).all(), c
        else:
            a = pd.to_numeric(a).astype("float64").to_numpy()
            b = pd.to_numeric(b).astype("float64").to_numpy()
            assert np.array_equal(a, b, equal_nan=True), c
