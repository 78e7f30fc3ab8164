"""hopscope.live.view and table: what `hopscope top` shows, computed from
constructed snapshots (no terminal, no recorder): rates, bucket quantiles,
windows, the sender and delay switches, stale and ended runs."""
import json
import math

from hopscope.live import table, view
from hopscope.live.snapshot import Snapshot
from hopscope.live.top import _finite
from hopscope.record import hist

S = 10**9


def series(tos, delay, buckets, overflow=0):
    return {"tos": tos, "out_if": "r-rx", "delay": delay, "zero": 0, "negative": 0,
            "overflow": overflow, "count": sum(buckets.values()) + overflow,
            "sum_ns": int(sum(hist.upper(int(k)) * v for k, v in buckets.items())),
            "buckets": {str(k): v for k, v in buckets.items()}}


def cost(n, sum_ns):
    return {"n": n, "sum_ns": sum_ns, "sum_sq": 0, "max_ns": 0, "over": 0, "hist": [n]}


def snap(seq, k, start=1, final=False, realtime=None, ser=None, mono=None):
    """the run's snapshot after k packets per TOS (4 and 8) since its start,
    taken at second seq: TOS 4's transit in bucket 80, TOS 8's in 88, one
    drop in ten"""
    ser = ser if ser is not None else [
        series(4, "transit", {80: k}), series(8, "transit", {88: k}),
        series(4, "d_p", {70: k}), series(8, "d_p", {72: k})]
    return Snapshot({
        "format": "hopscope-snapshot", "version": 1, "sequence": seq,
        "realtime_ns": realtime if realtime is not None else seq * S, "final": final,
        "header": {"format": "hopscope-record", "start_monotonic_ns": start,
                   "backend": "ebpf", "histograms": "aggregate", "stages": ["t1", "t2", "t3", "t4"],
                   "netns": {"name": "router"}, "drop_reasons": {"5": "QDISC_DROP"},
                   "interfaces": [{"name": "r-s1", "role": "in"},
                                  {"name": "r-rx", "role": "out"}]},
        "counters": {"monotonic_ns": start + (mono if mono is not None else seq * S),
                     "counters": {"xdp_pkts": 2 * k, "pre_pkts": 2 * k, "post_pkts": 2 * k,
                                  "out_pkts": 2 * k, "complete": 2 * k, "dropped": k // 10,
                                  "rb_fail": seq, "pre_nometa": 0},
                     "probe_cost": {"sample_shift": 6, "bucket_ns": 16, "sq_cap_ns": 65535,
                                    "stages": {"t1": cost(k, 200 * k), "t4": cost(k, 100 * k)}},
                     "histograms": {"schema": 3, "max_pow2": 34, "nokey": 0, "series": ser,
                                    "drops_nokey": 0,
                                    "drops": [{"stage": "t3", "reason": 5, "count": k // 10}]}}})


def run(*snaps):
    h = view.History()
    for s in snaps:
        h.add(s)
    return h


def row(v, stage):
    return next(s for s in v["stages"] if s["stage"] == stage)


def test_one_second_is_the_last_two_snapshots():
    h = run(snap(1, 100), snap(2, 300), snap(3, 600))
    v = view.view(h, window=1, now_ns=3 * S)
    assert v["window"] == {"asked_s": 1, "seconds": 1.0}
    assert row(v, "t1")["per_s"] == 600 and row(v, "t4")["packets"] == 600
    assert row(v, "complete")["per_s"] == 600 and row(v, "dropped")["packets"] == 30
    assert [s["stage"] for s in v["stages"]] == ["t1", "t2", "t3", "t4", "complete",
                                                 "dropped", "local", "unsampled"]
    transit = next(d for d in v["delays"] if d["delay"] == "transit")
    # all senders: half in bucket 80, half in 88
    assert transit["count"] == 600 and transit["per_s"] == 600
    assert transit["p50_ns"] == hist.upper(80) and transit["p99_ns"] == hist.upper(88)
    assert transit["max_ns"] == hist.upper(88) == 2 ** 11
    assert [(s["tos"], s["count"], s["p50_ns"]) for s in v["by_sender"]] == [
        (4, 300, hist.upper(80)), (8, 300, hist.upper(88))]
    assert v["drops"] == [{"stage": "t3", "reason": 5, "name": "QDISC_DROP",
                           "packets": 30, "per_s": 30.0}]
    assert v["losses"]["rb_fail"] == 1 and v["losses"]["evicted"] == 0
    # 300 probe samples at t1 (200 ns) and t4 (100 ns) in the window
    assert v["cost"]["stages"] == {"t1": {"samples": 300, "mean_ns": 200.0},
                                   "t4": {"samples": 300, "mean_ns": 100.0}}
    assert v["cost"]["ns_per_packet"] == 300 and math.isclose(v["cost"]["cpu_share"],
                                                              300 * 600 / 1e9)
    assert v["run"]["state"] == "live" and v["run"]["inputs"] == ["r-s1"]


def test_windows_take_what_history_has():
    snaps = [snap(i, 100 * i) for i in range(1, 16)]
    h = run(*snaps)
    ten = view.view(h, window=10)
    assert ten["window"]["seconds"] == 10.0 and row(ten, "t1")["packets"] == 2000
    sixty = view.view(h, window=60)  # only 14 s kept before the newest
    assert sixty["window"]["seconds"] == 14.0 and row(sixty, "t1")["packets"] == 2800
    start = view.view(h, window=None)
    assert start["window"]["seconds"] == 15.0 and row(start, "t1")["packets"] == 3000
    assert view.view(run(snaps[0]), window=1)["window"]["seconds"] == 1.0  # since start
    # a snapshot a little early (0.9 s) still ends a 1 s window
    early = snap(15, 1500, mono=14_900_000_000)
    assert view.view(run(snap(13, 1300), snap(14, 1400), early),
                     window=1)["window"]["seconds"] == 0.9


def test_history_keeps_five_minutes_and_one_run():
    h = run(*[snap(i, i) for i in range(50, 450, 50)])
    assert [s.sequence for s in h.snaps] == [100, 150, 200, 250, 300, 350, 400]
    assert not h.add(h.snaps[-1])  # the same snapshot read again
    h.add(snap(1, 5, start=7))  # a recorder started again: another run
    assert len(h.snaps) == 1 and h.snaps[0].header["start_monotonic_ns"] == 7


def test_sender_and_delay_switch():
    h = run(snap(1, 100), snap(2, 300))
    new = h.snaps[-1]
    choice = (1, None, "transit")
    seen = []
    for _ in range(3):
        choice = view.turn("s", *choice, new)
        seen.append(choice[1])
    assert seen == [4, 8, None]
    assert view.turn("d", 1, None, "transit", new)[2] == "d_p"
    assert view.turn("d", 1, None, "d_p", new)[2] == "transit"
    assert [view.turn("w", w, None, "d_p", new)[0] for w in view.WINDOWS] == [10, 60, None, 1]
    v = view.view(h, window=1, sender=8, delay="d_p")
    assert {d["delay"]: d["count"] for d in v["delays"]} == {"d_p": 200, "transit": 200}
    assert next(d for d in v["delays"] if d["delay"] == "d_p")["p50_ns"] == hist.upper(72)
    # per sender: every sender of the chosen delay, whoever is shown above
    assert [(s["tos"], s["p50_ns"]) for s in v["by_sender"]] == [
        (4, hist.upper(70)), (8, hist.upper(72))]


def test_stale_and_ended_runs():
    h = run(snap(1, 100), snap(2, 300))
    assert view.view(h, now_ns=2 * S + S // 2)["run"]["state"] == "live"
    stale = view.view(h, now_ns=2 * S + 10 * S)
    assert stale["run"]["state"] == "stale" and stale["run"]["snapshot_age_s"] == 10
    assert "stale" in "\n".join(table.lines(stale))
    h.add(snap(3, 300, final=True))
    ended = view.view(h, now_ns=60 * S)
    assert ended["run"]["state"] == "ended" and "run ended" in "\n".join(table.lines(ended))


def test_overflow_and_the_text_and_json_forms():
    ser = [series(4, "transit", {80: 3}, overflow=1)]
    h = run(snap(1, 0, ser=[]), snap(2, 4, ser=ser))
    v = view.view(h, now_ns=2 * S)
    t = v["delays"][0]
    assert t["max_ns"] == math.inf and t["overflow"] == 1 and t["p50_ns"] == hist.upper(80)
    text = table.lines(v, width=1000)
    assert all(len(x) <= 80 and x.isascii() for x in text), text
    assert any("p99<=" in x for x in text) and any(">17.2s" in x for x in text), text
    out = json.loads(json.dumps(_finite(v), allow_nan=False))
    assert out["delays"][0]["max_ns"] is None and out["delays"][0]["overflow"] == 1


def test_no_histograms_says_so():
    h = run(snap(1, 10, ser=[]))
    v = view.view(h)
    assert v["delays"] == [] and v["by_sender"] == []
    assert any("--aggregate" in x for x in table.lines(v))


def test_packet_sampling_is_shown_when_the_recorder_says():
    """record --sample's setting and counts (the header's and the counters'
    "sampling") are shown with the factor that scales the traced counts;
    packets left out at t1 are a row of their own"""
    s = snap(1, 10)
    s.header["sampling"] = {"mode": "fixed", "n": 8}
    s.counters["sampling"] = {"mode": "fixed", "n": 8, "seen": 80, "sampled": 10,
                              "unsampled": 70}
    s.counters["counters"]["unsampled"] = 70
    v = view.view(run(s))
    assert v["sampling"]["scale"] == 8.0 and "sampled 1 in 8" in table.lines(v)[0]
    assert next(r for r in v["stages"] if r["stage"] == "unsampled")["packets"] == 70
    assert view.view(run(snap(1, 10)))["sampling"] is None


def test_eighty_columns_hold_every_line_at_millions_of_packets():
    big = [snap(i, 10**7 * i) for i in (1, 2)]
    for s in big:
        s.header["stages"].append("t0")
        s.counters["counters"]["t0_pkts"] = s.counters["counters"]["xdp_pkts"]
    v = view.view(run(*big), now_ns=2 * S)
    assert [s["stage"] for s in v["stages"]][:2] == ["t0", "t1"]
    text = table.lines(v, width=1000)
    assert all(len(x) <= 80 for x in text), [x for x in text if len(x) > 80]
    assert "t0 20.00M" in text[2] and "complete 20.00M" in text[3], text
