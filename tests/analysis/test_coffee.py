"""Coffee breaks: planted ones found with their durations and interoccurrence,
the conservative rules for what is not known, and a brute-force cross-check."""
import numpy as np
import pytest

from frames import BIG, frame
from hopscope.analysis import analyse
from hopscope.analysis.coffee import DEFAULT_MIN_NS, coffee_breaks, idle_floor_ns, interoccurrence


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
    assert list(coffee_breaks(df)["duration_ns"]) == [4500 - 3000]
    assert list(coffee_breaks(df, arrival="t0")["duration_ns"]) == [4500 - 1000]
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
    # 1000 packets 100 µs apart (each finds the router idle), d_iq = 1000 + i ns
    n = 1000
    t1 = [i * 100_000 for i in range(n)]
    t2 = [t + 1000 + i for i, t in enumerate(t1)]
    df = frame(t1, t2, [t + 300 for t in t2], [t + 600 for t in t2])
    # the first packet has no predecessor: 999 idle arrivals, d_iq 1001..1999
    assert idle_floor_ns(df, 0.5) == 1500
    assert idle_floor_ns(df) == int(np.quantile(np.arange(1001, 2000), 0.999))
    assert analyse(df).min_break_ns == idle_floor_ns(df)


def test_idle_floor_unknown_when_the_router_is_never_idle():
    n = 500  # 1 µs apart: always busy
    t1 = [i * 1000 for i in range(n)]
    df = frame(t1, [t + 800 for t in t1], [t + 900 for t in t1], [t + 950 for t in t1])
    assert idle_floor_ns(df) is None
    assert analyse(df).min_break_ns == DEFAULT_MIN_NS
