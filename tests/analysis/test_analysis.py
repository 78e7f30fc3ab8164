"""analyse() on a real-shaped synthetic record file, and on the edge cases."""
import numpy as np
import pandas as pd
import pytest

import hopscope
from frames import frame
from hopscope.record import format as fmt
from hopscope.analysis import analyse
from hopscope.analysis.coffee import coffee_breaks
from hopscope.analysis.queues import occupancy
from hopscope.analysis.stats import stage_stats
from hopscope.record.synth import write_synthetic


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    path = tmp_path_factory.mktemp("analysis") / "run.hsr"
    write_synthetic(path, 30_000, seed=11, drop_fraction=0.01, inflight=5)
    df = hopscope.load(path)
    return df, analyse(df)


def test_frames_match_load(run):
    df, _ = run
    made = frame([0], [1], [2], [3], tos=[4])
    for col in made.columns:
        assert made[col].dtype == df[col].dtype, col
    assert list(made["status"].cat.categories) == list(df["status"].cat.categories)


def test_stats_are_the_complete_packets_percentiles(run):
    df, a = run
    complete = df[df["status"] == "complete"]
    assert a.complete == len(complete) and a.packets == len(df)
    for stage in ("d_iq", "d_p", "d_oq", "transit"):
        v = complete[stage].to_numpy()
        row = a.stats.set_index("stage").loc[stage]
        assert row["count"] == len(v) and row["missing"] == row["negative"] == 0
        assert row["p99_9"] == pytest.approx(np.percentile(v, 99.9))
        assert a.histograms[stage].count == len(v)
        assert a.histograms[stage].freq.sum() == pytest.approx(1)
        assert a.log_histograms[stage].count == len(v)
    assert set(a.histograms_by_tos) == {4, 5}
    by_tos = a.stats_by_tos.query("stage == 'd_iq'").set_index("tos")["count"]
    assert by_tos.sum() == len(complete)
    assert a.histograms_by_tos[4]["d_iq"].count == by_tos[4]


def test_queues_obey_littles_law(run):
    df, a = run
    for q, enter, leave in ((a.input_queue, "t1", "t2"), (a.output_queue, "t3", "t4")):
        both = (df[enter] != 0) & (df[leave] != 0)
        waits = (df.loc[both, leave] - df.loc[both, enter]).sum()
        assert np.sum(q.n[:-1] * np.diff(q.t_ns)) == waits
        assert q.n.min() >= 0 and q.n[-1] == 0
    assert q.open == 5 + np.count_nonzero((df["status"] == "dropped") & (df["t3"] != 0))
    values, frac = a.input_queue_hist
    assert frac.sum() == pytest.approx(1) and values[0] == 0
    assert len(a.delta_pr) == np.count_nonzero(df["t2"]) - 1
    assert len(a.input_queue_paper) == len(a.delta_pr)
    assert (a.delta_pr >= 0).all() and (a.input_queue_paper >= 0).all()


def test_every_break_is_idle_with_work_waiting(run):
    df, a = run
    b = a.coffee_breaks
    assert (b["duration_ns"] >= a.min_break_ns).all()
    assert len(a.coffee_interoccurrence) == len(b) - 1
    b = coffee_breaks(df)  # the least minimum: many more to check
    assert len(b) > 10
    assert (b["start_ns"].to_numpy()[1:] > b["end_ns"].to_numpy()[:-1]).all()
    t1, t2, t4 = (df[s].to_numpy() for s in ("t1", "t2", "t4"))
    # a packet with no exit (dropped, in flight) is busy until the next t2
    later = np.sort(t2[t2 != 0])
    leave = np.where(t4 != 0, t4, later[np.minimum(np.searchsorted(later, t2, "right"),
                                                   len(later) - 1)])
    for start, end in zip(b["start_ns"], b["end_ns"]):
        mid = (start + end) // 2
        assert np.any((t1 <= mid) & (mid < t2))                   # a packet waits
        assert not np.any((t2 != 0) & (t2 <= mid) & (mid < leave))  # none downstream
    assert b["packets_since_previous"].sum() <= np.count_nonzero(t2)


def test_loss_and_busy_periods(run):
    df, a = run
    router = a.loss[a.loss["source"] == "router"]
    assert router["packets"].sum() == (df["status"] == "dropped").sum()
    bp = a.busy_periods
    assert bp["packets"].sum() == ((df["t3"] != 0) & (df["t4"] != 0)).sum()
    assert (bp["start_ns"].to_numpy()[1:] > bp["end_ns"].to_numpy()[:-1]).all()
    assert list(a.min_transit["ip_len"]) == [92, 1428]


def test_unsorted_records_give_the_same_analysis(run):
    df, a = run
    b = analyse(df.sample(frac=1, random_state=2))
    pd.testing.assert_frame_equal(a.stats, b.stats)
    pd.testing.assert_frame_equal(a.coffee_breaks, b.coffee_breaks)
    pd.testing.assert_frame_equal(a.busy_periods, b.busy_periods)
    assert np.array_equal(a.input_queue.n, b.input_queue.n)
    assert np.array_equal(a.output_queue_paper, b.output_queue_paper)


@pytest.mark.parametrize("n", [0, 1])
def test_empty_and_one_packet_files(tmp_path, n):
    write_synthetic(tmp_path / "r.hsr", n, inflight=0)
    a = analyse(hopscope.load(tmp_path / "r.hsr"))
    assert a.packets == n and list(a.stats["count"]) == [n] * 4
    assert len(a.coffee_breaks) == 0 and len(a.delta_pr) == 0
    assert len(a.input_queue.n) == 2 * n


def test_all_dropped():
    df = frame([0, 5], [2, None], [None, None], [None, None], ["dropped"] * 2,
               drop_stage=["t2", "t1"], drop_reason=[6, 2])
    a = analyse(df, min_break_ns=0)
    assert a.complete == 0 and (a.stats["count"] == 0).all()
    assert a.histograms["d_iq"].count == 0 and a.histograms_by_tos[0]["d_iq"].count == 0
    assert a.coffee_breaks.attrs["missing_stages"] == ["t3", "t4"]
    assert a.loss.query("source == 'router'")["packets"].sum() == 2
    assert a.min_break_ns == 0 and len(a.busy_periods) == 0


def test_recording_without_t4():
    df = frame([0, 10, 20], [5, 15, 25], [7, 17, 27], [None, None, None])
    a = analyse(df)
    assert a.complete == 0 and len(a.output_queue.n) == 0 and a.output_queue.open == 3
    assert list(a.input_queue.n) == [1, 0, 1, 0, 1, 0]
    assert a.coffee_breaks.attrs["missing_stages"] == ["t4"]
    assert len(a.delta_o) == 0 and len(a.delta_pr) == 2


def test_optional_stages_add_queues(tmp_path):
    write_synthetic(tmp_path / "r.hsr", 2000, stages=fmt.STAGE_NAMES)
    df = hopscope.load(tmp_path / "r.hsr")
    backlog, qdisc = occupancy(df, "backlog"), occupancy(df, "qdisc")
    assert backlog.n.max() >= 1 and qdisc.n.max() >= 1 and backlog.n[-1] == qdisc.n[-1] == 0
    # the backlog can only add waiting time: every break grows or appears
    assert len(coffee_breaks(df, arrival="t1")) <= len(coffee_breaks(df, arrival="t0"))


def test_tables_are_stage_stats_overall_and_per_sender(run):
    """analyse merges the senders' sorted delays instead of sorting all
    again: the same tables as stage_stats computes on its own."""
    df, a = run
    pd.testing.assert_frame_equal(a.stats, stage_stats(df))
    pd.testing.assert_frame_equal(a.stats_by_tos, stage_stats(df, "tos"))


def test_merged_senders_count_negative_and_missing_delays():
    # TOS 4: a negative d_iq; TOS 5: no t4 on a complete packet (missing d_oq)
    df = frame([0, 10, 20, 30], [5, 8, 25, 33], [6, 9, 26, 34], [7, 11, 27, None],
               tos=[4, 4, 5, 5], status=["complete"] * 4)
    a = analyse(df, min_break_ns=1000)
    pd.testing.assert_frame_equal(a.stats, stage_stats(df))
    row = a.stats.set_index("stage")
    assert (row.loc["d_iq", "negative"], row.loc["d_oq", "missing"]) == (1, 1)
    assert row.loc["d_iq", "min"] == 3 and row.loc["d_iq", "count"] == 3
