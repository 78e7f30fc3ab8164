"""tests/data: the checked-in recordings are whole and are what
tests/data/make_recording.sh says it makes (tests/data/recording.toml), and
the bench overhead JSON beside them is complete."""
import json
import os
import re

import numpy as np
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DATA = os.path.join(ROOT, "tests", "data")
import hopscope
from hopscope.analysis.queues import occupancy
from hopscope.traffic.scenario.load import load_scenario

CONDITIONS = {c.name: c for c in load_scenario(os.path.join(DATA, "recording.toml")).conditions()}
MAX_BYTES = 3_000_000  # all of tests/data: a small checkout
UDP_IP_HEADERS = 28
RATE_UNITS = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}


def shape_of(cond):
    """(kind, bytes/s, limit in packets) of a condition's testbed.shape."""
    kind, rate, *limit = cond.testbed["shape"].split(":")
    m = re.fullmatch(r"(\d+)(kbit|mbit|gbit)", rate)
    assert m, f"this test reads rates in kbit/mbit/gbit, not {rate!r}"
    assert not limit or limit[0].endswith("p"), "this test reads limits in packets"
    return kind, int(m.group(1)) * RATE_UNITS[m.group(2)] / 8, int(limit[0][:-1]) if limit else None


@pytest.fixture(scope="module", params=sorted(CONDITIONS))
def run(request):
    name = request.param
    return CONDITIONS[name], hopscope.load(os.path.join(DATA, f"{name}.hsr"), verify=True,
                                           strict=True)


def test_both_recordings_exist():
    assert sorted(CONDITIONS) == ["competitive", "single"]
    for name in CONDITIONS:
        assert os.path.isfile(os.path.join(DATA, f"{name}.hsr")), "run tests/data/make_recording.sh"


def test_data_is_small():
    total = sum(os.path.getsize(os.path.join(DATA, f)) for f in os.listdir(DATA))
    assert total < MAX_BYTES, f"tests/data holds {total} bytes"


def test_whole_and_clean(run):
    cond, df = run
    assert not df.attrs["truncated"] and not df.attrs["problems"]
    counters = df.attrs["counters"]["counters"]
    for lost in ("rb_fail", "evicted", "race", "prog_misses"):  # the tracer lost nothing
        assert counters[lost] == 0, lost


def test_tracer_settings(run):
    cond, df = run
    header = df.attrs["header"]
    assert set(cond.tracer["stages"]) <= set(header["stages"])
    assert header["floor"] is False


def test_output_qdisc_is_the_shaper(run):
    cond, df = run
    kind, rate, limit = shape_of(cond)
    out = [i for i in df.attrs["header"]["interfaces"] if i["role"] == "out"]
    assert [i["name"] for i in out] == ["r-rx"]
    qdiscs = {q["kind"]: q for q in out[0]["qdisc"]}
    assert qdiscs[kind]["options"]["rate"] == rate
    if limit:
        assert qdiscs["pfifo"]["options"]["limit"] == limit


def test_every_sender_recorded(run):
    cond, df = run
    for s in cond.senders:
        mine = df[df["tos"] == s.tos]
        complete = mine[mine["status"] == "complete"]
        # every packet sent is one record, complete, or dropped by the shaper's
        # queue (test_competitive_both_senders_and_drops): 6000 of 6000
        # complete alone, 6987 + 13 and 4992 + 8 beside each other
        assert len(mine) == s.count, (s.name, len(mine))
        assert set(mine["status"].astype(str)) <= {"complete", "dropped"}, s.name
        assert set(complete["ip_len"]) == {s.size["value"] + UDP_IP_HEADERS}
    # nothing but the senders and the generators' control traffic (TOS 0)
    assert set(df["tos"].unique()) == {0} | {s.tos for s in cond.senders}


def test_complete_records_are_whole(run):
    _, df = run
    c = df[df["status"] == "complete"]
    t = c[["t1", "t2", "t3", "t4"]].to_numpy()
    assert len(t) and (t > 0).all()
    assert (np.diff(t, axis=1) >= 0).all()  # t1 <= t2 <= t3 <= t4


def test_competitive_both_senders_and_drops():
    cond = CONDITIONS["competitive"]
    df = hopscope.load(os.path.join(DATA, "competitive.hsr"))
    assert {s.tos for s in cond.senders} == {4, 5}  # the paper's senders
    reasons = df.attrs["header"]["drop_reasons"]
    dropped = df[(df["status"] == "dropped") & df["tos"].isin([4, 5])]
    qdisc = dropped[(dropped["drop_stage"] == "t3")
                    & (dropped["drop_reason"].map(lambda r: reasons[str(r)]) == "QDISC_DROP")]
    assert len(qdisc) > 0 and len(qdisc) == len(dropped)
    _, _, limit = shape_of(cond)
    assert occupancy(df, "output").n.max() == limit  # the drops came from a full queue


def test_overhead_json():
    with open(os.path.join(DATA, "overhead.json")) as f:
        bench = json.load(f)
    assert bench["rounds"]
    for payload, s in bench["summary"].items():
        for c in ("untraced", "floor", "traced"):
            assert s[f"{c}_kpps"] > 0, (payload, c)
            assert all(r[payload][c]["pps"] > 0 for r in bench["rounds"])
        assert s["completeness"] > 0.99
