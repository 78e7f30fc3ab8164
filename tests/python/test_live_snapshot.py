"""hopscope.live.snapshot: reading `record --snapshot` files and the windows
between two of them, on constructed snapshots."""
import json

import pytest

from hopscope.live import snapshot


def series(tos, delay, buckets, zero=0):
    return {"tos": tos, "out_if": "r-rx", "delay": delay, "zero": zero, "negative": 0,
            "overflow": 0, "count": sum(buckets.values()) + zero,
            "sum_ns": int(sum(2 ** (int(k) / 8) * v for k, v in buckets.items())),
            "buckets": buckets}


def snap(seq, mono, complete, ser, start=1000, final=False):
    return {"format": "hopscope-snapshot", "version": 1, "sequence": seq,
            "realtime_ns": 5 + seq, "final": final,
            "header": {"format": "hopscope-record", "start_monotonic_ns": start},
            "counters": {"monotonic_ns": mono, "counters": {"complete": complete},
                         "histograms": {"schema": 3, "max_pow2": 34, "nokey": 0,
                                        "series": ser, "drops_nokey": 0,
                                        "drops": [{"stage": "t3", "reason": 5,
                                                   "count": complete // 10}]}}}


def write(tmp_path, obj, name="s.json"):
    p = tmp_path / name
    p.write_text(json.dumps(obj) if not isinstance(obj, str) else obj)
    return p


def test_window_is_the_difference_of_two_snapshots(tmp_path):
    old = snapshot.read(write(tmp_path, snap(3, 1_000_001_000, 10,
                                             [series(4, "d_p", {"80": 6, "81": 4})]), "a"))
    new = snapshot.read(write(tmp_path, snap(5, 3_000_001_000, 30,
                                             [series(4, "d_p", {"80": 6, "81": 9, "90": 5}),
                                              series(8, "d_p", {"70": 2}, zero=1)]), "b"))
    w = snapshot.window(new, old)
    assert w["seconds"] == 2.0 and w["counters"] == {"complete": 20}
    got = {s["tos"]: s for s in w["series"]}
    assert got[4]["buckets"] == {"81": 5, "90": 5} and got[4]["count"] == 10
    assert got[8]["count"] == 3 and got[8]["zero"] == 1  # new since old: all of it
    assert w["drops"] == [{"stage": "t3", "reason": 5, "count": 2}]
    since_start = snapshot.window(new, None)
    assert since_start["seconds"] == 3.0 and since_start["counters"] == {"complete": 30}


def test_window_refuses_two_runs(tmp_path):
    a = snapshot.read(write(tmp_path, snap(9, 10, 10, []), "a"))
    b = snapshot.read(write(tmp_path, snap(2, 20, 20, [], start=7), "b"))
    with pytest.raises(snapshot.SnapshotError, match="another run"):
        snapshot.window(b, a)
    two = snapshot.read(write(tmp_path, snap(10, 20, 20, [series(4, "d_p", {"80": 2})]), "c"))
    one = snapshot.read(write(tmp_path, snap(11, 30, 20, [series(4, "d_p", {"80": 1})]), "d"))
    with pytest.raises(snapshot.SnapshotError, match="shrank"):
        snapshot.window(one, two)


@pytest.mark.parametrize("content, why", [
    (None, "no such snapshot"),
    ("{", "not JSON"),
    ([], "not a JSON object"),
    ({"format": "hopscope-record"}, "format is"),
    (dict(snap(1, 1, 1, []), version=2), "version 2"),
    (dict(snap(1, 1, 1, []), final="no"), "'final'"),
    (dict(snap(1, 1, 1, []), header={"backend": 3}), "'backend'"),
])
def test_unusable_snapshots_say_why(tmp_path, content, why):
    p = tmp_path / "s.json" if content is None else write(tmp_path, content)
    with pytest.raises(snapshot.SnapshotError, match=why):
        snapshot.read(p)
