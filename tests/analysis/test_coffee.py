"""Coffee breaks: planted ones found with their durations and interoccurrence,
the conservative rules for what is not known, and a brute-force cross-check."""
import numpy as np
import pandas as pd
import pytest

from frames import BIG, frame
from hopscope.analysis import analyse
from hopscope.analysis.coffee import (DEFAULT_MIN_NS, arrival_gap_ns, at_least, coffee_breaks,
                                     every_break, floor_of, idle_floor_ns, interoccurrence,
                                     interoccurrence_stats, sweep)
from hopscope.report.coffee import wait_quantiles


def pipeline(n, planted=(), dropped=(), ip_len=None, base=BIG):
    """A FIFO router that is never idle except where planted.

    Each packet is processed for 300 ns and leaves 200 ns later (t4 = t2 +
    500); the next one starts processing at that very instant, and arrived
    400 ns before, during its predecessor's service. planted: (index, idle
    ns, wait) = the router idles that long before packet index starts, the
    packet having arrived `wait` ns before its t2, or None = before the idle
    time began. dropped: indices freed while being processed (no t3, t4).
    """
    plan = {i: (idle, wait) for i, idle, wait in planted}
    t1, t2, t3, t4 = [], [], [], []
    now = 0
    for i in range(n):
        idle, wait = plan.get(i, (0, 400))
        start = now + idle
        t1.append(now - 100 if wait is None else start - wait)
        t2.append(start)
        t3.append(None if i in dropped else start + 300)
        t4.append(None if i in dropped else start + 500)
        now = start + 500
    status = ["dropped" if i in dropped else "complete" for i in range(n)]
    return frame(t1, t2, t3, t4, status, ip_len=ip_len, base=base), np.array(t2) + base


# breaks of 5 µs every 390 packets from packet 100; at 1000 the packet came in
# 3 µs before the router woke up; at 700 the router idled with nothing waiting;
# at 50 a pause below the default minimum
PLANTED = [(100, 5000, None), (490, 5000, None), (880, 5000, None), (1270, 5000, None),
           (1000, 8000, 3000), (700, 10_000, 0), (50, 500, None)]


def test_planted_breaks():
    df, t2 = pipeline(1500, PLANTED)
    b = coffee_breaks(df)
    assert list(b["end_ns"]) == [t2[i] for i in (100, 490, 880, 1000, 1270)]
    assert list(b["duration_ns"]) == [5000, 5000, 5000, 3000, 5000]
    assert list(b["start_ns"]) == list(b["end_ns"] - b["duration_ns"])
    assert list(b["packets_since_previous"]) == [100, 390, 390, 120, 270]
    assert list(interoccurrence(b)) == [390, 390, 120, 270]
    assert b.attrs["min_duration_ns"] == DEFAULT_MIN_NS == 1000
    assert b.attrs["arrival"] == "t1"  # no t0 in this run
    assert (b.attrs["shorter"], b.attrs["open"], b.attrs["negative"]) == (1, 0, 0)
    assert b.attrs["missing_stages"] == []


def test_regular_breaks_give_the_papers_interoccurrence():
    df, _ = pipeline(2000, [(i, 2000, None) for i in range(10, 2000, 390)])
    assert list(interoccurrence(coffee_breaks(df))) == [390] * 5  # 6 breaks


def test_minimum_duration_is_a_parameter():
    df, _ = pipeline(1500, PLANTED)
    assert list(coffee_breaks(df, 0)["duration_ns"]) == [500, 5000, 5000, 5000, 3000, 5000]
    assert list(coffee_breaks(df, 4000)["packets_since_previous"]) == [100, 390, 390, 390]
    with pytest.raises(ValueError):
        coffee_breaks(df, -1)


def test_a_packet_with_no_known_exit_hides_no_break_it_cannot_confirm():
    # packet 99 dropped while processed: the router may have been busy with it
    df, _ = pipeline(300, [(100, 5000, None), (200, 5000, None)], dropped={99})
    b = coffee_breaks(df)
    assert len(b) == 1 and b["packets_since_previous"].iloc[0] == 200
    assert b.attrs["open"] == 1


def test_nothing_before_the_first_packet_is_processed():
    df = frame([0, 10_000], [9000, 10_100], [9100, 10_200], [9200, 10_300])
    assert len(coffee_breaks(df)) == 0  # the 9 µs wait of packet 0 is not a break


def test_link_time_keeps_the_output_busy():
    df, _ = pipeline(300, [(100, 5000, None)], ip_len=[1462] * 300)
    assert len(coffee_breaks(df, link_bps=1e9)) == 0  # 12 µs on the wire covers it
    b = coffee_breaks(df, link_bps=10e9)              # 1.2 µs on the wire
    assert list(b["duration_ns"]) == [3800]
    with pytest.raises(ValueError):
        coffee_breaks(df, link_bps=0)


def test_backlog_as_part_of_the_input_queue():
    # packet 1 waits in the backlog from 1000, reaches XDP (t1) only at 3000
    df = frame([0, 3000], [100, 4500], [200, 4600], [300, 4700], t0=[0, 1000])
    assert list(coffee_breaks(df, arrival="t1")["duration_ns"]) == [4500 - 3000]
    b = coffee_breaks(df)  # t0 recorded: the paper's placement, before the backlog
    assert list(b["duration_ns"]) == [4500 - 1000] and b.attrs["arrival"] == "t0"
    with pytest.raises(ValueError, match="t0 was not recorded"):
        coffee_breaks(pipeline(3)[0], arrival="t0")


def test_edge_cases():
    assert len(coffee_breaks(frame([], [], [], []))) == 0
    assert len(coffee_breaks(pipeline(1)[0])) == 0
    assert len(interoccurrence(coffee_breaks(pipeline(1)[0]))) == 0
    dropped = frame([0, 1], [None, None], [None, None], [None, None], ["dropped"] * 2)
    b = coffee_breaks(dropped)
    assert len(b) == 0 and b.attrs["not_waiting"] == 2 and "t2" in b.attrs["missing_stages"]


def test_recording_without_t4_says_so():
    df, _ = pipeline(200, [(100, 5000, None)])
    df["t4"] = 0
    b = coffee_breaks(df)
    assert len(b) == 0 and b.attrs["missing_stages"] == ["t4"]


def test_stages_out_of_order_are_counted():
    df, _ = pipeline(300, [(100, 5000, None)])
    df.loc[5, "t3"] = df.loc[5, "t2"] - 1
    b = coffee_breaks(df)
    assert b.attrs["negative"] == 1 and len(b) == 1


def test_unsorted_records_and_big_clocks():
    df, _ = pipeline(1500, PLANTED, base=2**63 - 10**9)
    b = coffee_breaks(df.sample(frac=1, random_state=3))
    assert list(b["duration_ns"]) == [5000, 5000, 5000, 3000, 5000]
    assert list(b["packets_since_previous"]) == [100, 390, 390, 120, 270]


def brute_force(t1, t2, t4, min_ns):
    """Breaks by testing every elementary interval between two event instants."""
    times = np.unique(np.concatenate([t1, t2, t4]))
    runs = []
    for u, v in zip(times[:-1], times[1:]):
        if u < t2.min():
            continue
        waiting = np.any((t1 <= u) & (u < t2))
        busy = np.any((t2 <= u) & (u < t4))
        if waiting and not busy:
            if runs and runs[-1][1] == u:
                runs[-1][1] = v
            else:
                runs.append([u, v])
    runs = [r for r in runs if r[1] - r[0] >= min_ns]
    # packets that reached t2 from the previous break's end up to this one's
    ends = [r[1] for r in runs]
    since = [np.count_nonzero((t2 < end) & (t2 >= prev))
             for prev, end in zip([t2.min()] + ends[:-1], ends)]
    return runs, since


@pytest.mark.parametrize("seed", range(6))
def test_against_brute_force(seed):
    rng = np.random.default_rng(seed)
    n = 80
    t1 = 1 + np.cumsum(rng.integers(0, 400, n))  # 0 would mean "not seen"
    t2 = t1 + rng.integers(0, 300, n)
    t3 = t2 + rng.integers(0, 150, n)
    t4 = t3 + rng.integers(0, 150, n)
    df = frame(list(t1), list(t2), list(t3), list(t4), base=0)
    for min_ns in (0, 60):
        runs, since = brute_force(t1, t2, t4, min_ns)
        b = coffee_breaks(df, min_ns)
        assert [[s, e] for s, e in zip(b["start_ns"], b["end_ns"])] == runs
        assert list(b["packets_since_previous"]) == since


def test_idle_floor_is_the_idle_arrivals_wait_quantile():
    # 2001 packets 100 µs apart (each finds the router idle), d_iq = 1000 + i ns
    n = 2001
    t1 = [i * 100_000 for i in range(n)]
    t2 = [t + 1000 + i for i, t in enumerate(t1)]
    df = frame(t1, t2, [t + 300 for t in t2], [t + 600 for t in t2])
    # the first packet has no predecessor: 2000 idle arrivals, d_iq 1001..3000
    assert idle_floor_ns(df, 0.5) == 2000
    assert idle_floor_ns(df, 0.99) == int(np.quantile(np.arange(1001, 3001), 0.99))
    # p99.9 of 2000 waits would be the second longest of them: no floor
    assert idle_floor_ns(df) is None


def test_a_floor_needs_ten_waits_above_it():
    assert floor_of(np.arange(1000), 0.99) == int(np.quantile(np.arange(1000), 0.99))
    assert floor_of(np.arange(999), 0.99) is None
    assert floor_of(np.arange(10_000), 0.999) is not None
    assert floor_of(np.arange(99_999), 0.9999) is None
    assert floor_of(np.zeros(0), 0.5) is None


def test_the_default_minimum_is_one_arrival_gap():
    # 100 µs apart: the gap, whatever the waits
    t1 = [i * 100_000 for i in range(50)]
    df = frame(t1, [t + 800 for t in t1], [t + 900 for t in t1], [t + 950 for t in t1])
    assert arrival_gap_ns(df) == 100_000 == analyse(df).min_break_ns
    # 500 ns apart: the gap is under the least, the paper's 1 µs resolution
    t1 = [i * 500 for i in range(50)]
    df = frame(t1, [t + 100 for t in t1], [t + 200 for t in t1], [t + 300 for t in t1])
    assert arrival_gap_ns(df) == 500 and analyse(df).min_break_ns == DEFAULT_MIN_NS
    # from t0 when recorded: its own span
    df = frame([0, 10_000, 20_000], [100] * 3, [200] * 3, [300] * 3, t0=[0, 4000, 30_000])
    assert arrival_gap_ns(df) == 15_000 and arrival_gap_ns(df, "t1") == 10_000
    assert arrival_gap_ns(frame([5], [6], [7], [8])) is None
    # a stray packet a second after the traffic (a generator's signalling)
    t1 = [i * 100_000 for i in range(1000)] + [10**9]
    df = frame(t1, [t + 800 for t in t1], [t + 900 for t in t1], [t + 950 for t in t1])
    assert arrival_gap_ns(df) == 100_000


def test_idle_floor_unknown_when_the_router_is_never_idle():
    n = 500  # 1 µs apart: always busy
    t1 = [i * 1000 for i in range(n)]
    df = frame(t1, [t + 800 for t in t1], [t + 900 for t in t1], [t + 950 for t in t1])
    assert idle_floor_ns(df) is None


def test_a_higher_minimum_keeps_the_longer_breaks_and_recounts_between_them():
    df, _ = pipeline(1500, PLANTED)
    every = coffee_breaks(df, 0)
    for least in (0, 600, 3000, 4000, 5000, 6000):
        got, fresh = at_least(every, least), coffee_breaks(df, least)
        pd.testing.assert_frame_equal(got, fresh)
        assert got.attrs == fresh.attrs
    with pytest.raises(ValueError, match="cannot lower"):
        at_least(coffee_breaks(df, 4000), 1000)


def test_interoccurrence_stats_name_the_papers_mode():
    # 390 most often (the paper's "very likely after about 390"), the mean
    # pulled up by rare long gaps, the median between
    gaps = [390] * 4 + [392, 398, 399] + [120, 2000, 3000, 5000, 6000]
    st = interoccurrence_stats(gaps)
    assert st == {"count": 12, "mode": 390, "median": 395.0, "mean": sum(gaps) / 12}
    # the most populated 10-packet bin wins over a value repeated twice elsewhere
    assert interoccurrence_stats([50, 50, 391, 392, 393, 394])["mode"] == 391
    nothing = interoccurrence_stats([])
    assert nothing["count"] == 0 and np.isnan(nothing["mode"]) and np.isnan(nothing["mean"])


def idle_pipeline():
    """A planted trace for the sweep: 400 packets that find the router idle
    (200 µs apart), waiting 1000 + (i % 100) * 10 ns from t1 to t2 and 20 µs
    more from t0, then a busy stretch of 1500 packets with breaks of 800 ns
    every 100 packets and of 3 µs every 400 (one arrival waits each time)."""
    t0, t1, t2, t3, t4 = [], [], [], [], []
    now = 0
    for i in range(400):
        now += 200_000
        wait = 1000 + (i % 100) * 10
        t0.append(now - 20_000)
        t1.append(now)
        t2.append(now + wait)
        t3.append(now + wait + 300)
        t4.append(now + wait + 500)
    now = t4[-1] + 100_000
    for i in range(1, 1501):
        idle = 3000 if i % 400 == 0 else 800 if i % 100 == 0 else 0
        start = now + idle
        arrive = start - max(idle, 400)  # waits through the idle time
        t0.append(arrive - 100)
        t1.append(arrive)
        t2.append(start)
        t3.append(start + 300)
        t4.append(start + 500)
        now = start + 500
    return frame(t1, t2, t3, t4, t0=t0)


def test_sweep_on_a_planted_trace():
    df = idle_pipeline()
    sw = sweep(df, min_us=(0.5, 2, 25), quantiles=(0.5, 0.9, 0.99))
    assert list(sw["arrival"].unique()) == ["t0", "t1"]
    assert sw["packets"].eq(1900).all()
    t1 = sw[sw["arrival"] == "t1"].set_index(["rule", "min_ns"])
    # 0.5 µs: every idle packet's own wait is a "break" (399: the first has
    # no gap before it), then the 12 of 800 ns and the 3 of 3 µs; the mode,
    # 1 packet, says the router was mostly idle
    low = t1.loc[("fixed", 500)]
    assert (low["breaks"], low["mode"]) == (399 + 12 + 3, 1)
    # 2 µs: above every idle wait, only the 3 µs breaks: 400 packets apart
    # (shorter: also the first busy packet's 400 ns wait)
    mid = t1.loc[("fixed", 2000)]
    assert (mid["breaks"], mid["shorter"], mid["count"]) == (3, 399 + 12 + 1, 2)
    assert (mid["mode"], mid["median"], mid["mean"]) == (400, 400, 400)
    # the idle floor: a quantile of the idle waits, 1000..1990 ns and the first
    # busy packet's 400 (the first packet has no predecessor: not counted);
    # the waits at or above it are still counted, with the 3 µs breaks
    waits = np.r_[np.tile(1000 + np.arange(100) * 10, 4)[1:], 400]
    floor = sw[(sw["arrival"] == "t1") & (sw["rule"] == "idle floor")].set_index("quantile")
    # p99 of 400 waits would be their fifth longest: no floor, not judged
    assert np.isnan(floor.loc[0.99, "floor_ns"]) and floor.loc[0.99, "min_ns"] == DEFAULT_MIN_NS
    assert list(floor["judged"]) == [True, True, False]
    for q in (0.5, 0.9):
        least = int(np.quantile(waits, q))
        assert floor.loc[q, "floor_ns"] == least
        assert floor.loc[q, "min_ns"] == least == idle_floor_ns(df, q, "t1")
        assert floor.loc[q, "breaks"] == np.count_nonzero(waits[:-1] >= least) + 3
    # from t0 each idle packet waits 20 µs more, so its floor is 20 µs higher,
    # and the planted breaks start 100 ns earlier (the backlog)
    t0 = sw[sw["arrival"] == "t0"].set_index(["rule", "min_ns"])
    assert t0.loc[("fixed", 2000)]["breaks"] == 399 + 3
    assert t0.loc[("fixed", 25_000)]["breaks"] == 0
    f0 = sw[(sw["arrival"] == "t0") & (sw["rule"] == "idle floor")].set_index("quantile")
    from_t0 = waits + np.r_[[20_000] * 399, 100]
    assert f0.loc[0.9, "min_ns"] == int(np.quantile(from_t0, 0.9))
    assert f0.loc[0.9, "breaks"] == np.count_nonzero(from_t0 >= f0.loc[0.9, "min_ns"])
    # one arrival gap, judged from both arrivals: longer than every break here
    gap = sw[sw["rule"] == "arrival gap"].set_index("arrival")
    assert gap.loc["t1", "min_ns"] == arrival_gap_ns(df, "t1") > 25_000
    assert gap["judged"].all() and gap["breaks"].eq(0).all()
    # the same numbers as finding the breaks anew at each minimum
    for r in sw.itertuples():
        b = coffee_breaks(df, r.min_ns, r.arrival)
        assert r.breaks == len(b) and r.total_ns == b["duration_ns"].sum()
        assert r.count == len(interoccurrence(b))


def test_sweep_without_an_idle_router_has_no_floor():
    df, _ = pipeline(600, [(100, 5000, None), (490, 5000, None)])
    sw = sweep(df)
    assert list(sw["arrival"].unique()) == ["t1"]
    floor = sw[sw["rule"] == "idle floor"]
    assert floor["floor_ns"].isna().all() and (floor["min_ns"] == DEFAULT_MIN_NS).all()
    assert not floor["judged"].any() and not sw[sw["rule"] == "fixed"]["judged"].any()
    assert list(sw[sw["rule"] == "fixed"]["min_ns"]) == [500, 1000, 2000, 5000, 10000, 20000]
    assert list(sw[sw["rule"] == "fixed"]["breaks"]) == [2, 2, 2, 2, 0, 0]


def test_the_report_takes_each_arrivals_waits_as_delays():
    # packet 2's t0 comes after its t2 (no wait), 3 is dropped, 4 has no t0
    t2 = [150, 400, 350, 450, 900]
    df = frame([100, 200, 300, 400, 500], t2, [t + 100 for t in t2], [t + 200 for t in t2],
               ["complete", "complete", "complete", "dropped", "complete"],
               t0=[0, 100, 400, 300, None])
    a = analyse(df)
    complete = (df["status"] == "complete").to_numpy()
    assert list(wait_quantiles(df, "t0", complete, a)) == list(np.quantile([150, 300],
                                                                           [0.5, 0.99, 0.999]))
    # from t1 the summary's d_iq, the same figures
    assert list(wait_quantiles(df, "t1", complete, a)) == list(np.quantile([50, 200, 50, 400],
                                                                           [0.5, 0.99, 0.999]))


def test_the_analysis_keeps_every_break_for_the_pages():
    df = pipeline(2000, PLANTED)[0]
    a = analyse(df)
    every = coffee_breaks(df, 0)
    pd.testing.assert_frame_equal(a.coffee_every, every)
    assert a.coffee_every.attrs == every.attrs
    mine = coffee_breaks(df, a.min_break_ns)
    pd.testing.assert_frame_equal(a.coffee_breaks, mine)
    assert a.coffee_breaks.attrs == mine.attrs
    # the report's pages start from it: the same as finding them again
    reused = every_break(df, known={"t1": a.coffee_every})["t1"]
    fresh = every_break(df)["t1"]
    pd.testing.assert_frame_equal(reused[0], fresh[0])
    assert list(reused[1]) == list(fresh[1]) and reused[2] == fresh[2]
