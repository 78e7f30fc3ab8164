"""The metrics of bench/load_matrix and bench/soak (bench/loadlib.py) on
synthetic numbers, each with a case it must judge bad."""
import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "evaluation", "bench"))
import loadlib  # noqa: E402


def run(p50, p99, floor=None, complete=100, received=100, sent=100):
    r = {"complete_of_received": complete / received, "complete_of_sent": complete / sent,
         "offered_pps": 1000.0, "sent": sent, "received": received, "complete": complete,
         "probe_floor": None if floor is None else {c: {"floor_ns": floor} for c in loadlib.STAGES}}
    for c in loadlib.STAGES:
        r[c] = {"p50_ns": p50, "p99_ns": p99}
    return r


def test_level_summary_mean_and_range_over_reps():
    s = loadlib.level_summary([run(300, 900, 100), run(500, 1500, 140), run(400, 600)])
    assert s["d_iq"]["p50_ns"] == {"mean": 400.0, "min": 300.0, "max": 500.0, "n": 3}
    assert s["d_oq"]["p99_ns"] == {"mean": 1000.0, "min": 600.0, "max": 1500.0, "n": 3}
    # the rep without a floor is left out of it, not counted as 0
    assert s["d_p"]["floor_ns"] == {"mean": 120.0, "min": 100.0, "max": 140.0, "n": 2}
    assert (s["sent"], s["complete"]) == (300, 300)


def test_level_summary_says_when_no_floor_exists():
    s = loadlib.level_summary([run(300, 900), run(500, 1500)])
    assert s["d_iq"]["floor_ns"] == {"mean": None, "min": None, "max": None, "n": 0}


def test_completeness_range_shows_the_lossy_rep():
    s = loadlib.level_summary([run(1, 2), run(1, 2, complete=97, received=99)])
    assert s["complete_of_received"]["min"] == pytest.approx(97 / 99)
    assert s["complete_of_sent"]["min"] == pytest.approx(0.97)
    assert s["complete_of_sent"]["max"] == 1.0


def test_lossless_needs_every_packet_received_and_complete():
    ok = {"sent": 10, "received": 10, "complete": 10}
    assert loadlib.lossless(ok)
    assert not loadlib.lossless({**ok, "complete": 9})   # delivered, one record missing
    assert not loadlib.lossless({**ok, "received": 9})   # recorded, one lost after the router
    assert not loadlib.lossless({"sent": 0, "received": 0, "complete": 0})


def test_windows_count_whole_records_by_t1_right_closed():
    bounds = [1000, 2000, 3000]
    t1 = [999, 1000, 1001, 2000, 2001, 2500, 3001]  # before, on the edges, after
    done = loadlib.window_counts(bounds, t1, [True] * len(t1))
    assert list(done) == [2, 2]  # (1000, 2000]: 1001, 2000; (2000, 3000]: 2001, 2500
    assert list(loadlib.window_counts(bounds, t1, [False, False, True, False, True, True, True])
                ) == [1, 2]


def late_loss_case(per_window, lost=None):
    """windows of 100 packets in each, per_window complete records in each"""
    bounds = [0, 10, 20, 30]
    t1 = [w * 10 + 5 for w, n in enumerate(per_window) for _ in range(n)]
    wins = loadlib.windows(bounds, [0, 100, 200, 300],
                           loadlib.window_counts(bounds, t1, [True] * len(t1)))
    losses = lost or [{"rb_fail": 0, "evicted": 0}] * 3
    return wins, loadlib.late_loss(wins, losses)


def test_no_late_loss_when_every_window_is_complete():
    wins, bad = late_loss_case([100, 100, 100])
    assert bad == [] and [w["completeness"] for w in wins] == [1.0, 1.0, 1.0]


def test_late_loss_in_the_last_window_is_found():
    wins, bad = late_loss_case([100, 100, 99])
    assert bad == [2] and wins[2]["completeness"] == 0.99


def test_a_loss_counter_moving_is_late_loss_even_when_counts_agree():
    lost = [{"rb_fail": 0}, {"rb_fail": 3}, {"rb_fail": 0}]
    assert late_loss_case([100, 100, 100], lost)[1] == [1]


def snap(t_s, xdp, rb_fail=0):
    return {"monotonic_ns": int(t_s * 1e9),
            "counters": {"xdp_pkts": xdp, "xdp_nonip": 2, "local": 1, "rb_fail": rb_fail},
            "userspace": {"records_not_stored": 0}}


def test_counter_edges_every_interval_and_the_trailer():
    snaps = [snap(t, 1000 * t) for t in range(1, 36)]
    edges = loadlib.counter_edges(0, snaps, snap(35.6, 35600), 10)
    assert [e[0] / 1e9 for e in edges] == [0, 10, 20, 30, 35.6]
    assert loadlib.traced(edges[1][1]) == 10000 - 3
    # a trailer just after the last edge joins the window before it
    edges = loadlib.counter_edges(0, snaps[:31], snap(31.2, 31200), 10)
    assert [e[0] / 1e9 for e in edges] == [0, 10, 20, 31.2]


def test_edge_losses_are_the_counters_moves():
    edges = [(0, None), (10, snap(10, 1, rb_fail=0)), (20, snap(20, 2, rb_fail=5))]
    moves = loadlib.edge_losses(edges)
    assert [m["rb_fail"] for m in moves] == [0, 5]
    assert all(m["records_not_stored"] == 0 for m in moves)


def test_slope():
    assert loadlib.slope([0, 1, 2, 3], [1, 4, 7, 10]) == pytest.approx(3)
    assert loadlib.slope([5], [1]) is None


def test_memory_that_settles_after_warm_up_is_bounded():
    t = list(range(0, 610, 10))
    rss = [70e6 if x == 0 else 80e6 for x in t]  # grows once, as the writer's buffers fill
    g = loadlib.growth(t, rss)
    assert g["bounded"] and (g["first"], g["max"], g["last"]) == (70e6, 80e6, 80e6)


def test_memory_that_keeps_growing_is_not_bounded():
    t = list(range(0, 610, 10))
    leak = [80e6 + 20e3 * x for x in t]  # 20 kB/s: 12 MB over the run, 15 % of 80 MB
    g = loadlib.growth(t, leak)
    assert not g["bounded"] and g["slope_per_s"] == pytest.approx(20e3)


def test_too_few_samples_are_not_judged_bounded():
    assert not loadlib.growth([0, 10, 20], [1, 1, 1])["bounded"]


def test_a_drop_the_router_made_and_hopscope_recorded_is_not_tracer_loss():
    a, b = snap(10, 100), snap(20, 200)
    b["counters"]["dropped"] = 4  # the kernel dropped them; their records say where and why
    assert loadlib.edge_losses([(10, a), (20, b)]) == [
        {**dict.fromkeys(loadlib.LOSS, 0), "records_not_stored": 0}]
