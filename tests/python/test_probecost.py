"""The probe floor from a file's probe cost samples: each stage's statistics
against numpy on the samples they were made from, each delay's floor (a lower
bound) and mean from the stages inside it, the run's delays checked against
the floor, and files whose probe_cost is malformed refused."""
import math

import numpy as np
import pandas as pd
import pytest

import hopscope
from hopscope.analysis import budget
from hopscope.record import header as h
from hopscope.record.load import probe_cost as load_probe_cost
from hopscope.record.probecost import (FLOOR_QUANTILE, bucket_edges, check, delay_floors,
                                       delay_stages, floor_check, stage_costs, upper_share)
from hopscope.record.reader import RecordFileError
from hopscope.record.synth import probe_cost, write_synthetic

BUCKET = h.COST_BUCKET_NS


RNG = np.random.default_rng(7)
T1 = RNG.normal(200, 20, 5000).round().clip(1)
T2 = RNG.normal(150, 10, 5000).round().clip(1)
T3 = RNG.normal(120, 5, 5000).round().clip(1)
T4 = RNG.normal(300, 30, 5000).round().clip(1)
TCIN = RNG.normal(100, 8, 5000).round().clip(1)


def test_stage_statistics_are_the_samples():
    pc = probe_cost(t1=np.r_[T1, 20000])  # one interrupted probe, beyond the histogram
    c = stage_costs(pc)["t1"]
    s = np.r_[T1, 20000]
    assert c["samples"] == len(s) and c["over"] == 1 and c["max_ns"] == 20000
    assert c["mean_ns"] == pytest.approx(s.mean())
    assert c["sd_ns"] == pytest.approx(s.std())
    # quantiles: the upper edge of the bucket that holds them
    for q, key in ((0.5, "p50_ns"), (0.99, "p99_ns")):
        exact = np.quantile(s, q)
        assert exact <= c[key] < exact + BUCKET + 1


def test_a_capped_sample_is_said():
    c = stage_costs(probe_cost(t2=[100, 200, h.COST_SQ_CAP + 10]))["t2"]
    assert c["capped"] and c["mean_ns"] == pytest.approx((300 + h.COST_SQ_CAP + 10) / 3)


def test_each_delay_holds_the_probes_that_run_inside_it():
    pc = stage_costs(probe_cost(t1=T1, t2=T2, t3=T3, t4=T4))
    f = delay_floors({"stages": ["t1", "t2", "t3", "t4"]}, pc)
    assert set(f) == {"d_iq", "d_p", "d_oq", "transit"}
    assert f["d_iq"]["mean_ns"] == pytest.approx(T1.mean())
    assert f["d_p"]["mean_ns"] == pytest.approx(T2.mean())
    # t4's probe runs after t4: in no delay
    assert f["d_oq"]["mean_ns"] == pytest.approx(T3.mean())
    assert f["transit"]["mean_ns"] == pytest.approx(T1.mean() + T2.mean() + T3.mean())
    assert f["transit"]["spread_ns"] == pytest.approx(
        math.sqrt(T1.var() + T2.var() + T3.var()))
    assert f["d_p"]["p99_ns"] >= np.quantile(T2, 0.99)


def test_an_optional_stage_adds_its_probe_to_the_delay_it_splits():
    pc = stage_costs(probe_cost(t1=T1, t_tcin=TCIN, t2=T2, t3=T3))
    f = delay_floors({"stages": ["t1", "t_tcin", "t2", "t3", "t4"]}, pc)
    assert f["d_iq"]["stages"] == ["t1", "t_tcin"]
    assert f["d_iq"]["mean_ns"] == pytest.approx(T1.mean() + TCIN.mean())
    # however the two probes' times pair up on the packets, the floor lies
    # under all but FLOOR_QUANTILE of their sums
    for seed in range(5):
        paired = T1 + np.random.default_rng(seed).permutation(TCIN)
        assert f["d_iq"]["floor_ns"] <= np.quantile(paired, FLOOR_QUANTILE)
    assert delay_stages("t4", "t3", {"t3", "t_tceg", "t4"}) == ["t3", "t_tceg"]


def test_a_delay_with_an_unsampled_probe_has_no_floor():
    f = delay_floors({"stages": []}, stage_costs(probe_cost(t1=T1, t3=T3)))
    assert "d_p" not in f and "transit" not in f and "d_iq" in f


def test_files_without_probe_cost_say_so():
    assert load_probe_cost({"counters": {}}) is None
    assert load_probe_cost(None) is None
    assert delay_floors({}, None) is None


@pytest.mark.parametrize("bad, why", [
    (lambda pc: pc["stages"]["t1"].update(n=pc["stages"]["t1"]["n"] + 1), "does not count"),
    (lambda pc: pc["stages"].update(t9={}), "not a stage"),
    (lambda pc: pc.update(bucket_ns=0), "bucket_ns"),
    (lambda pc: pc["stages"]["t1"].update(hist=[1, -1]), "hist"),
    (lambda pc: pc["stages"]["t1"].pop("sum_sq"), "integers"),
])
def test_malformed_probe_cost_is_named(bad, why):
    pc = probe_cost(t1=T1)
    assert check(pc) is None
    bad(pc)
    assert why in check(pc)


def test_a_file_carries_its_floor_to_load_and_budget(tmp_path):
    p = tmp_path / "f.hsr"
    write_synthetic(p, 2000, probe_cost=probe_cost(t1=T1, t2=T2, t3=T3, t4=T4))
    df = hopscope.load(p)
    assert df.attrs["probe_floor"]["d_p"]["mean_ns"] == pytest.approx(T2.mean())
    assert df.attrs["probe_cost"]["t4"]["samples"] == len(T4)
    rows = {r["delay"]: r for r in budget.delays(df)}
    assert rows["d_oq"]["mean_ns"] == pytest.approx(T3.mean())
    low = rows["d_iq"]["floor_ns"]
    assert budget.floor_note(rows["d_iq"]).startswith(
        f"probe floor {low / 1e3:.2f} µs, mean {T1.mean() / 1e3:.2f} µs")
    inst = {r["instant"]: r for r in budget.instants(df)}
    assert inst["t1"]["baseline_ns"] == 0
    assert inst["t4"]["baseline_ns"] == pytest.approx(T1.mean() + T2.mean() + T3.mean())


def test_less_probe_columns_take_each_floor_off_its_delay(tmp_path):
    p = tmp_path / "f.hsr"
    write_synthetic(p, 500, probe_cost=probe_cost(t1=T1, t2=T2, t3=T3))
    plain, less = hopscope.load(p), hopscope.load(p, less_probe=True)
    assert "d_p_less_probe" not in plain.columns
    for col in ("d_iq", "d_p", "d_oq", "transit"):
        floor = less.attrs["probe_floor"][col]["mean_ns"]
        pd.testing.assert_series_equal(less[f"{col}_less_probe"], plain[col] - floor,
                                       check_names=False)
    # without probe cost samples: no such column, nothing invented
    q = tmp_path / "old.hsr"
    write_synthetic(q, 100)
    assert not [c for c in hopscope.load(q, less_probe=True).columns if "less_probe" in c]


def test_a_file_with_malformed_probe_cost_is_refused(tmp_path):
    pc = probe_cost(t1=T1)
    pc["stages"]["t1"]["hist"][0] += 1
    p = tmp_path / "bad.hsr"
    write_synthetic(p, 100, probe_cost=pc)
    with pytest.raises(RecordFileError, match="histogram"):
        hopscope.load(p, strict=True)


def test_a_file_without_probe_cost_has_no_floor(tmp_path):
    p = tmp_path / "old.hsr"
    write_synthetic(p, 100)
    df = hopscope.load(p)
    assert df.attrs["probe_floor"] is None and df.attrs["probe_cost"] is None
    assert all(r["floor_ns"] is None for r in budget.delays(df))
    assert budget.floor_note(budget.delays(df)[0]) == "probe floor not sampled in this file"


def test_the_floor_is_a_low_quantile_of_the_probes_time():
    # a probe with a cold tail beyond the fine buckets, and one interrupted
    s = np.r_[T1, RNG.normal(2500, 600, 500).round().clip(1), 20000]
    c = stage_costs(probe_cost(t1=s))["t1"]
    assert c["over"] == 1
    assert c["low_ns"] <= np.quantile(s, FLOOR_QUANTILE) < c["low_ns"] + BUCKET
    assert c["below_low"] == (s < c["low_ns"]).sum() <= FLOOR_QUANTILE * len(s)
    assert c["min_ns"] <= s.min() < c["min_ns"] + BUCKET
    # quantiles in the wide buckets: within one of them
    exact = np.quantile(s, 0.99)
    assert exact <= c["p99_ns"] < exact + h.COST_WIDE_NS + 1


def test_the_bucket_layout_follows_the_file():
    fine = bucket_edges({"bucket_ns": 16, "fine_buckets": 64, "wide_ns": 128}, 66)
    assert fine[:3] == [0, 16, 32] and fine[64:] == [1024, 1152, 1280]
    # files written before the wide buckets: one width throughout
    assert bucket_edges({"bucket_ns": 16}, 66)[64:] == [1024, 1040, 1056]


def test_upper_share_bounds_what_the_samples_allow():
    # none of n under the floor: about 6.9 / n at 1e-3
    assert upper_share(0, 1000) == pytest.approx(1 - 1e-3 ** (1 / 1000), rel=1e-6)
    assert upper_share(0, 47) > upper_share(0, 1000)
    assert upper_share(10, 1000) > 0.01


def test_the_floor_check_passes_delays_above_and_fails_delays_below():
    f = delay_floors({"stages": []}, stage_costs(probe_cost(t1=T1)))["d_iq"]
    above = T1 + RNG.exponential(300, len(T1))
    ok = floor_check(above, f)
    assert ok["ok"] and ok["share"] <= ok["allowed"] and ok["packets"] == len(T1)
    below = np.r_[above, np.full(len(T1) // 5, f["floor_ns"] - 50)]
    bad = floor_check(below, f)
    assert not bad["ok"] and bad["below"] >= len(T1) // 5


def test_describe_and_the_budget_say_a_broken_floor(tmp_path):
    # probes said to take ~5 us: a synthetic run's delays lie far below
    p = tmp_path / "broken.hsr"
    slow = RNG.normal(5000, 50, 300).round()
    write_synthetic(p, 2000, probe_cost=probe_cost(t1=slow, t2=slow, t3=slow, t4=T4))
    df = hopscope.load(p)
    rows = {r["delay"]: r for r in budget.delays(df)}
    assert not rows["d_iq"]["check"]["ok"]
    assert "BROKEN" in budget.floor_note(rows["d_iq"])
    assert budget.floor_broken(rows["d_iq"]).startswith("d_iq: ")
    from hopscope.report.describe import describe
    problems = dict(describe(df))["problems"]
    assert "d_iq:" in problems and "below its probe floor" in problems
    # and a sound run says nothing of it
    q = tmp_path / "sound.hsr"
    write_synthetic(q, 2000, probe_cost=probe_cost(t1=T1 // 10, t2=T2 // 10, t3=T3 // 10))
    assert "probe floor" not in dict(describe(hopscope.load(q)))["problems"]
