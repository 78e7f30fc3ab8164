"""hopscope.load_path on planted paths: the join, the loss table, the clocks."""
import numpy as np
import pandas as pd
import pytest

from hopscope.analysis.path import PathError, load_path
from path_frames import chain, cut

N_FWD, DROP_EVERY = 4000, 50


def _hop_sum(p, hops):
    total = sum(p.packets[f"h{k}_transit"] for k in range(1, hops + 1))
    return total + sum(p.packets[f"link{k}"] for k in range(1, hops))


@pytest.mark.parametrize("hops", [2, 3])
def test_same_clock_every_packet_accounted(hops):
    frames, truth = chain(hops=hops)
    p = load_path(frames)
    assert p.offsets["method"].tolist() == ["reference"] + ["same clock"] * (hops - 1)
    fwd = p.packets
    assert len(fwd) == N_FWD                       # the reverse packets are left out
    assert p.reverse == {k: 1500 for k in range(1, hops + 1)}
    assert p.loss["packets"].sum() == N_FWD
    assert set(p.loss["entered"]) == {1}
    dropped = p.loss[p.loss["fate"] == "dropped"]
    assert dropped[["hop", "stage", "reason", "packets"]].values.tolist() == \
        [[hops, "t3", "QDISC_DROP", N_FWD // DROP_EVERY]]
    delivered = fwd[fwd["fate"] == "delivered"]
    assert len(delivered) == N_FWD - N_FWD // DROP_EVERY
    for k in range(1, hops):
        assert (delivered[f"h{k}_t4"] <= delivered[f"h{k + 1}_t1"]).all()
    # exact: integers on one clock, hop transits and links telescope
    assert (_hop_sum(p, hops)[delivered.index] == delivered["transit"]).all()
    assert (delivered["transit"] == delivered[f"h{hops}_t4"] - delivered["h1_t1"]).all()
    assert p.problems == []
    assert p.collisions[["upstream_records", "downstream_records"]].to_numpy().sum() == 0


def test_hop_rows_long_form():
    frames, _ = chain(hops=2)
    p = load_path(frames)
    h = p.hop_rows
    assert len(h) == 2 * N_FWD - N_FWD // DROP_EVERY * 0 - 0  # every packet at both hops
    assert set(h["router"]) == {"r1", "r2"}
    two = h[h["hop"] == 2].set_index("packet")
    assert (two["link_in"] == p.packets.loc[two.index, "link1"]).all()
    assert (two["d_oq"].dropna() == p.packets.loc[two["d_oq"].dropna().index, "h2_d_oq"]).all()


@pytest.mark.parametrize("drift_ppm", [0.0, 35.0])
def test_two_way_offset_recovered(drift_ppm):
    theta = 7_345_678
    frames, _ = chain(theta=[0, theta], drift_ppm=drift_ppm, boots=["a", "b"])
    p = load_path(frames)
    off = p.offsets.iloc[1]
    assert off["method"] == "two-way"
    assert off["pairs_forward"] == N_FWD and off["pairs_reverse"] == 1500
    t = np.linspace(1.0e9, 1.08e9, 9)
    true = theta + drift_ppm * 1e-6 * (t - 1.0e9)
    est = off["offset_ns"] + off["drift_ppm"] * 1e-6 * (t - off["t_ref_ns"])
    assert np.all(np.abs(est - true) <= off["uncertainty_ns"])
    # the causal bound is about the least link times (3 us here), not more
    assert off["uncertainty_ns"] < 10_000
    assert len(p.packets) == N_FWD and p.problems == []
    links = p.packets["link1"].dropna()
    assert (links >= -off["uncertainty_ns"]).all()


def test_one_way_offset_is_an_upper_bound():
    theta = -2_000_000
    frames, _ = chain(n_rev=0, theta=[0, theta], boots=["a", "b"], link_ns=(3000, 900))
    p = load_path(frames)
    off = p.offsets.iloc[1]
    assert off["method"] == "one-way" and pd.isna(off["uncertainty_ns"])
    # theta <= the least link; the estimate takes the least link as 0
    assert theta <= off["offset_ns"] <= theta + 3000 + 100
    assert len(p.packets) == N_FWD


def test_given_offset_wins_and_wrong_one_is_reported():
    theta = 1_000_000
    frames, _ = chain(theta=[0, theta], boots=["a", "b"])
    p = load_path(frames, offsets={"r2": (theta, 10)})
    assert p.offsets.iloc[1]["method"] == "given"
    assert p.problems == []
    frames, _ = chain(theta=[0, theta], boots=["a", "b"])
    p = load_path(frames, offsets={2: (theta + 50_000, 10)}, window_ns=10_000_000)
    assert any("less than no time" in s for s in p.problems)


def test_realtime_offset_when_both_hosts_synced():
    theta = 4_000_000
    frames, _ = chain(n_rev=0, theta=[0, theta], boots=["a", "b"])
    for df, m2r in zip(frames, (10**15, 10**15 - theta)):
        df.attrs["header"]["mono_to_realtime_ns"] = m2r
        df.attrs["clock"]["realtime_sync"] = {"synced": True, "maxerror_ns": 800,
                                              "esterror_ns": 100}
    p = load_path(frames)
    off = p.offsets.iloc[1]
    assert off["method"] == "realtime"
    assert abs(off["offset_ns"] - theta) <= off["uncertainty_ns"] <= 2 * (800 + 50)


def test_collisions_counted_never_merged():
    frames, _ = chain(n_rev=0, drop_every=10**9)
    up, down = frames
    # two upstream packets with one key 1 us apart: the downstream one has two candidates
    twin = up.iloc[[10]].copy()
    for c in ("t1", "t2", "t3", "t4"):
        twin[c] += 1000
    twin["seq"] = np.uint64(99)
    frames[0] = pd.concat([up, twin], ignore_index=True)
    frames[0].attrs = up.attrs
    p = load_path(frames)
    assert p.collisions.iloc[0]["downstream_records"] == 1
    assert (p.packets["fate"] == "collision at the next hop").sum() >= 1
    # the downstream record of the collision starts a path of its own, never merged
    assert p.loss.groupby("entered")["packets"].sum().to_dict() == {1: N_FWD + 1, 2: 1}


def test_nat_changes_key_counted():
    frames, _ = chain(n_rev=0, drop_every=10**9)
    up, down = frames
    nat = np.zeros(len(up), bool)
    nat[:100] = True
    up["nat_src"] = pd.Categorical(np.where(nat, "192.0.2.1", None))
    up["nat_dst"] = pd.Categorical([None] * len(up))
    frames[1] = down.iloc[100:].reset_index(drop=True)
    frames[1].attrs = down.attrs
    p = load_path(frames)
    assert (p.packets["fate"] == "NAT changed its key").sum() == 100
    assert any("NAT" in s for s in p.problems)


def test_entering_mid_path_and_tail():
    frames, _ = chain(n_rev=0, hops=3, queue_hop=2, drop_every=10**9)
    extra = frames[1].iloc[:5].copy()
    extra["key"] = np.arange(1, 6, dtype=np.uint32)
    extra["in_if"] = pd.Categorical(["side"] * 5)
    frames[1] = pd.concat([frames[1], extra], ignore_index=True)
    frames[1].attrs = extra.attrs
    p = load_path(frames)
    assert p.loss.groupby("entered")["packets"].sum().to_dict() == {1: N_FWD, 2: 5}
    t = p.tail(0.99).set_index("part")
    assert t["share"].idxmax() == "hop 2 d_oq"
    assert abs(t["share"].sum() - 1) < 1e-9


def test_one_file_and_no_files():
    frames, _ = chain(n_rev=0, hops=1)
    p = load_path(frames)
    assert (p.packets["fate"] == "delivered").sum() == N_FWD - N_FWD // DROP_EVERY
    with pytest.raises(PathError):
        load_path([])


def test_missed_hand_over_still_followed():
    """A packet whose t4 the tracer missed (t4_unseen) at a hop is followed to
    the next by its t3; at the last hop it is the tracer's loss, not a drop."""
    frames, _ = chain(n_rev=300, hops=3, unseen_every=100, drop_every=10**9)
    p = load_path(frames)
    fates = p.packets["fate"].astype(str).value_counts().to_dict()
    # (drop_every: packet 0 alone is dropped)
    assert fates == {"delivered": N_FWD - N_FWD // 100 - 1, "dropped": 1,
                     "not followed by the tracer": N_FWD // 100}
    assert (p.packets["first_hop"] == 1).all()
    missed = p.packets[p.packets["fate"] == "not followed by the tracer"]
    assert (missed["h3_seq"] > 0).all() and missed["link1"].isna().all()


def test_recordings_edges():
    """Hop 2's recording starts late and hop 1's stops early: packets handed
    over before hop 2 recorded are not blamed on the link, and those seen
    only at hop 2 after hop 1 stopped are noted."""
    frames, _ = chain(n_rev=0, drop_every=10**9)
    up, down = frames
    start, stop = cut(frames)
    p = load_path(frames)
    # the packets hop 2 did not record, handed over by hop 1 before it started
    assert (p.packets["fate"] == "next hop not recording").sum() == (down["t1"] < start).sum()
    assert (p.packets["fate"] == "not seen at the next hop").sum() == 0
    # those hop 1 did not record, after it stopped, entered at hop 2
    assert (p.packets["first_hop"] == 2).sum() == (up["t1"] > stop).sum()
    assert any("while hop 1 (r1) was not recording" in s for s in p.notes)


def test_dropped_yet_seen_next_is_followed_and_reported():
    """A record of a drop after routing at hop 1 whose packet hop 2 saw: the
    drop was not the packet's; it is followed on, and said."""
    frames, _ = chain(n_rev=200, drop_every=10**9)
    up = frames[0]
    wrong = (up.index % 500 == 7) & (up["in_if"] == "in")
    up.loc[wrong, "t4"] = 0
    up.loc[wrong, "status"] = "dropped"
    up.loc[wrong, "drop_stage"] = "t3"
    up.loc[wrong, "out_if"] = None
    p = load_path(frames)
    assert (p.packets["fate"] == "delivered").sum() == N_FWD - 1
    assert (p.packets["first_hop"] == 1).all()
    assert any(f"{int(wrong.sum())} packets recorded as dropped found at hop 2" in s
               for s in p.problems), p.problems


def test_link_to_t0_is_the_wire_alone():
    frames, _ = chain(n_rev=100, hops=3, backlog_ns=700)
    p = load_path(frames)
    for k in (1, 2):
        d = p.packets.dropna(subset=[f"link{k}"])
        assert len(d) and (d[f"link{k}_t0"] == d[f"link{k}"] - 700).all()
