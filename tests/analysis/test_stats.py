"""stage_stats and valid_delays against hand-computed values."""
import numpy as np
import pandas as pd
import pytest

from frames import frame
from hopscope.analysis.stats import COLUMNS, STAGES, grouped_delays, stage_stats


def _run(d_iq, **kw):
    """Packets 1 ms apart with the given input-queue delays; d_p 100, d_oq 10."""
    t1 = [i * 1_000_000 for i in range(len(d_iq))]
    t2 = [a + d for a, d in zip(t1, d_iq)]
    return frame(t1, t2, [b + 100 for b in t2], [b + 110 for b in t2], **kw)


def _row(table, stage, **group):
    sel = table["stage"] == stage
    for k, v in group.items():
        sel &= table[k] == v
    assert sel.sum() == 1
    return table[sel].iloc[0]


def test_known_percentiles():
    s = stage_stats(_run(list(range(1, 1001))))
    r = _row(s, "d_iq")
    # 1..1000, linear interpolation: quantile q is at rank 999 q
    assert r["count"] == 1000 and r["min"] == 1 and r["max"] == 1000
    assert r["mean"] == pytest.approx(500.5)
    assert r["std"] == pytest.approx(np.sqrt(1000 * 1001 / 12))
    assert r["p50"] == pytest.approx(500.5)
    assert r["p90"] == pytest.approx(900.1)
    assert r["p99"] == pytest.approx(990.01)
    assert r["p99_9"] == pytest.approx(999.001)
    assert r["typical"] == r["p50"] and r["worst_case"] == r["p99_9"]
    assert r["negative"] == 0 and r["missing"] == 0
    transit = _row(s, "transit")
    assert transit["min"] == 111 and transit["max"] == 1110
    assert list(s.columns) == ["stage", *COLUMNS]
    assert list(s["stage"]) == list(STAGES)


def test_quantiles_match_numpy():
    rng = np.random.default_rng(3)
    d = rng.integers(1, 10**7, 777)
    r = _row(stage_stats(_run(list(d))), "d_iq")
    for col, q in (("p50", 50), ("p90", 90), ("p99", 99), ("p99_9", 99.9)):
        assert r[col] == pytest.approx(np.percentile(d, q), rel=1e-12)


def test_negative_and_missing_are_counted_not_hidden():
    df = frame([0, 0, 100, 200, 300], [50, 70, 90, None, 390], [60, 80, 95, None, 400],
               [70, 90, 99, 250, 500], status=["complete"] * 5)
    s = stage_stats(df)
    r = _row(s, "d_iq")
    assert (r["count"], r["negative"], r["missing"]) == (3, 1, 1)  # 90-100 < 0; no t2
    assert (r["min"], r["max"]) == (50, 90)
    assert _row(s, "transit")["count"] == 4  # transit needs only t1 and t4 (250-200)
    for _, row in s.iterrows():
        assert row["count"] + row["negative"] + row["missing"] == 5


def test_only_complete_packets_count():
    df = _run([10, 20, 10**9], status=["complete", "complete", "dropped"])
    r = _row(stage_stats(df), "d_iq")
    assert r["count"] == 2 and r["max"] == 20


def test_by_tos_with_an_all_dropped_sender():
    df = _run([10, 30, 20, 40, 99], tos=[4, 4, 5, 5, 6],
              status=["complete"] * 4 + ["dropped"])
    s = stage_stats(df, by="tos")
    assert list(s.columns) == ["tos", "stage", *COLUMNS]
    assert s["tos"].dtype == np.uint8
    assert _row(s, "d_iq", tos=4)["p50"] == 20
    assert _row(s, "d_iq", tos=5)["p50"] == 30
    six = _row(s, "d_iq", tos=6)
    assert six["count"] == 0 and np.isnan(six["p50"]) and six["missing"] == 0


def test_by_several_columns():
    df = _run([10, 30, 20, 40], tos=[4, 4, 5, 5], ip_len=[100, 200, 100, 100])
    s = stage_stats(df, by=["tos", "ip_len"])
    assert len(s) == 3 * len(STAGES)
    assert _row(s, "d_iq", tos=5, ip_len=100)["mean"] == 30
    assert _row(s, "d_iq", tos=4, ip_len=200)["count"] == 1


def test_empty_run():
    s = stage_stats(_run([]))
    assert list(s["count"]) == [0] * 4 and s["p50"].isna().all()
    assert len(stage_stats(_run([]), by="tos")) == 0


def test_one_packet():
    r = _row(stage_stats(_run([123])), "d_iq")
    assert r["count"] == 1 and r["p50"] == r["p99_9"] == r["min"] == r["max"] == 123
    assert np.isnan(r["std"])


def test_all_dropped():
    s = stage_stats(_run([1, 2, 3], status=["dropped"] * 3))
    assert (s["count"] == 0).all() and (s["missing"] == 0).all()


def test_stage_not_recorded():
    df = _run([5, 6])
    r = _row(stage_stats(df, stages=("d_iq", "d_rxq")), "d_rxq")
    assert r["count"] == 0 and r["missing"] == 2


def test_clock_near_int64_max_is_exact():
    base = 2**63 - 10**9  # float64 cannot tell these instants 1 ns apart
    s = stage_stats(_run([1, 2, 3], base=base))
    r = _row(s, "d_iq")
    assert (r["min"], r["p50"], r["max"]) == (1, 2, 3)


def test_unsorted_records_give_the_same_table():
    df = _run(list(np.random.default_rng(1).integers(1, 5000, 300)),
              tos=list(np.random.default_rng(2).integers(4, 6, 300)))
    shuffled = df.sample(frac=1, random_state=5)
    pd.testing.assert_frame_equal(stage_stats(df, by="tos"), stage_stats(shuffled, by="tos"))


def test_grouped_delays_are_sorted_valid_values():
    df = _run([30, 20, 10, -5, 7], tos=[4, 5, 4, 4, 4])
    df.loc[4, ["t2", "d_iq", "d_p"]] = [0, np.nan, np.nan]  # t2 not seen
    d = [x for x in grouped_delays(df, "tos", ("d_iq",)) if x.key == (4,)][0]
    assert list(d.values) == [10, 30] and (d.negative, d.missing) == (1, 1)
