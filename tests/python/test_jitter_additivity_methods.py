"""The methods of evaluation/bench/generator_jitter.py and evaluation/bench/additivity.py
(tests/helpers/wire.py) on synthetic streams whose answers are known, and on
wrong input they must catch: a wrong configured gap, records joined to the
wrong packets, swapped stages, a delay column that disagrees."""

import numpy as np
import pandas as pd
import pytest

import wire

GAP = 524_000  # ns
N = 20000


def stream(seed=1, n=N, stall_every=97, stall=40_000, sd0=100, sd1=300):
    """A constant-gap stream as joined by wire.join: D-ITG's departures with
    a stall now and then (the schedule slips: later packets keep it), t0 3 µs
    and t1 a further 20 µs later, each with its own normal noise (ns)."""
    rng = np.random.default_rng(seed)
    slips = np.cumsum(np.where(np.arange(n) % stall_every == stall_every - 1, stall, 0))
    tx = 10**12 + np.arange(n) * GAP + slips
    tx = tx - tx % 1000  # D-ITG's µs stamps
    t0 = tx + 3000 + rng.normal(0, sd0, n).round().astype(np.int64)
    t1 = t0 + 20000 + rng.normal(0, sd1, n).round().astype(np.int64)
    t4 = t1 + 5000
    rx = t4 + 10_000
    rx = rx - rx % 1000
    return pd.DataFrame({"seq": np.arange(1, n + 1), "tx_ns": tx, "rx_ns": rx,
                         "owd_ns": rx - tx, "received": True, "status": "complete",
                         "t0": pd.array(t0, dtype="Int64"), "t1": pd.array(t1, dtype="Int64"),
                         "t4": pd.array(t4, dtype="Int64")})


def test_jitter_finds_the_noise_each_part_adds():
    j = wire.jitter(stream(), GAP)
    # the generator's stalls are the sender's jitter, and are in t0 and t1 too
    assert j["sender"]["sd_us"] > 3
    assert j["t1"]["sd_us"] == pytest.approx(j["sender"]["sd_us"], rel=0.05)
    # taken out per pair: what the noise at each stage adds, sqrt(2)·σ
    assert j["t0"]["path"]["sd_us"] == pytest.approx(np.sqrt(2) * 0.1, rel=0.05)
    assert j["t1"]["path"]["sd_us"] == pytest.approx(np.sqrt(2 * (0.1**2 + 0.3**2)), rel=0.05)
    assert j["t1"]["from_first"]["sd_us"] == pytest.approx(np.sqrt(2) * 0.3, rel=0.05)
    assert abs(j["t1"]["path"]["mean_us"]) < 0.02
    assert j["t1"]["mean_us"] == pytest.approx(40 / 97, rel=0.05)  # the stalls, spread out


def test_jitter_against_the_wrong_gap_is_caught():
    t = stream(stall_every=10**9)
    assert abs(wire.jitter(t, GAP)["t1"]["mean_us"]) < 0.05
    assert wire.jitter(t, 500_000)["t1"]["mean_us"] == pytest.approx(24, abs=0.05)


def test_jitter_skips_pairs_across_a_lost_packet():
    t = stream(stall_every=10**9)
    t.loc[t["seq"] % 50 == 0, "status"] = "dropped"
    j = wire.jitter(t, GAP)
    # a gap over a lost packet would be two gaps long: +524 µs, a huge σ
    assert j["t1"]["n"] == N - 1 - 2 * (N // 50) + (N % 50 == 0)
    assert j["t1"]["max_abs_us"] < 5


def test_records_joined_to_the_wrong_packets_break_the_path():
    t = stream()
    shifted = t.copy()
    for c in ("t0", "t1", "t4"):  # each record on the previous packet's log line
        shifted[c] = t[c].shift(-1)
    shifted = shifted.iloc[:-1]
    right = wire.jitter(t, GAP)["t1"]["path"]["sd_us"]
    assert wire.jitter(shifted, GAP)["t1"]["path"]["sd_us"] > 10 * right


def records(n=1000, seed=2):
    """Complete records with every stage, and the delay columns as
    hopscope.load computes them."""
    rng = np.random.default_rng(seed)
    steps = rng.integers(100, 5000, size=(n, len(wire.ORDER)))
    t = 10**12 + np.cumsum(steps, axis=1)
    df = pd.DataFrame(t, columns=list(wire.ORDER))
    df["status"] = "complete"
    derive(df)
    df.attrs["header"] = {"stages": list(wire.ORDER)}
    return df


def derive(df):
    for col, (hi, lo) in wire.DERIVED.items():
        ok = (df[hi] > 0) & (df[lo] > 0)
        df[col] = (df[hi] - df[lo]).astype(float).where(ok)


def test_additivity_of_consistent_records():
    df = records()
    df.loc[3, "t_tcin"] = 0  # not stamped: missing, not a violation
    derive(df)
    a = wire.additivity(df)
    assert a["records"] == 1000 and a["violations"] == 0
    assert a["missing"]["t_tcin"] == 1 and sum(a["missing"].values()) == 1
    assert set(a["order"]) == {f"{x}<={y}" for x, y in zip(wire.ORDER, wire.ORDER[1:])}
    assert set(a["sums"]) == {"transit", "d_oq"}


def test_additivity_catches_swapped_stages():
    df = wire.swapped(records())
    derive(df)  # consistent columns: only the order can tell
    a = wire.additivity(df)
    assert a["order"]["t2<=t_fwd"] == 1000 and a["order"]["t_fwd<=t3"] == 1000
    assert a["violations"] == 1000


def test_additivity_catches_a_column_that_disagrees():
    df = records()
    df.loc[7, "d_iq"] += 1
    df.loc[9, "d_qdisc"] -= 1
    a = wire.additivity(df)
    assert a["derived"]["d_iq"] == 1 and a["sums"]["transit"] == 1
    assert a["derived"]["d_qdisc"] == 1 and a["sums"]["d_oq"] == 1
    assert a["violations"] == 2


def test_additivity_checks_only_the_enabled_stages():
    df = records()
    df.attrs["header"] = {"stages": ["t1", "t2", "t3", "t4"]}
    df["t_tcin"] = 0  # not enabled: neither missing nor out of order
    a = wire.additivity(df)
    assert set(a["missing"]) == {"t1", "t2", "t3", "t4"} and a["violations"] == 0
    assert set(a["order"]) == {"t1<=t2", "t2<=t3", "t3<=t4"}


def test_wire_splits_the_one_way_delay():
    t = stream(n=2000)
    w = wire.wire(t)
    outside = t["owd_ns"] - (t["t4"] - t["t0"]).astype(float)
    assert w["packets"] == 2000 and w["impossible"] == 0
    assert w["outside"]["median_us"] == pytest.approx(outside.median() / 1e3)
    assert w["outside"]["min_us"] == pytest.approx(outside.min() / 1e3)
    # t1's span is shorter: the outside part longer by t1 − t0
    assert wire.wire(t, "t1")["outside"]["median_us"] > w["outside"]["median_us"] + 19


def test_wire_catches_impossible_orders_beyond_the_resolution():
    t = stream(n=2000)
    t["t0"] = t["tx_ns"] - 900  # within 1 µs: the logs cannot tell
    assert wire.wire(t)["before_send"] == 0
    t.loc[:9, "t0"] = t["tx_ns"][:10] - 1100
    t.loc[10:14, "t4"] = t["rx_ns"][10:15] + 1100
    w = wire.wire(t)
    assert (w["before_send"], w["after_receive"]) == (10, 5)
    # those 5 (t0 0.9 µs early, t4 1.1 µs late) have a transit 2 µs too long as
    # well: each packet counts once
    assert w["transit_longer"] == 5 and w["impossible"] == 15


def test_wire_catches_records_joined_to_the_next_packet():
    w = wire.wire(wire.misjoined(stream(n=2000)))
    assert w["packets"] == 1999 and w["before_send"] == 1999 and w["impossible"] == 1999


def test_gaps_only_between_consecutive_packets():
    t = pd.DataFrame({"seq": [5, 1, 2, 4, 3, 7],
                      "x": pd.array([50, 10, 20, None, 30, 70], dtype="Int64")})
    g = wire.gaps(t, "x")
    # 4 has no x: neither 3→4 nor 4→5, and 5→7 skips 6
    assert g.to_dict() == {2: 10.0, 3: 10.0}


def test_summarise_sums_counts_and_takes_medians():
    runs = [{"sent": 10, "sd_us": 1.0, "wrong": {"a": 1}, "w": {"n": 2, "p": 5.0}},
            {"sent": 20, "sd_us": 3.0, "wrong": {"a": 2}, "w": {"n": 3, "p": 1.0}},
            {"sent": 30, "sd_us": 2.0, "wrong": {"a": 0}, "w": {"n": 4, "p": None}}]
    s = wire.summarise(runs, {"sent", "n", "wrong"})
    assert s == {"sent": 60, "sd_us": 2.0, "wrong": {"a": 3}, "w": {"n": 9, "p": 3.0}}
