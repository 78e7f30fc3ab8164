"""A calibration file: what `hopscope record --calibration` accepts (the
recorder's own JSON check, before it needs a router), what a reader keeps of
the header's copy, and the calibrated floor of each delay of a run."""
import json
import os
import subprocess

import pytest

import hopscope
from hopscope.analysis import budget
from hopscope.record import calibration
from hopscope.record.synth import probe_cost, write_synthetic

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOPSCOPE = os.path.join(ROOT, "build", "hopscope")
SAMPLES = [100, 200, 300]

GOOD = {"format": "hopscope-calibration", "version": 2,
        "stages": {"t1": {"floor_ns": 200.0, "mean_ns": 230.0, "spread_ns": 20.0},
                   "t_tcin": {"floor_ns": 100.0, "mean_ns": 110.0, "spread_ns": 8.0},
                   "t2": {"floor_ns": 150.0, "mean_ns": 160.0, "spread_ns": 10.0},
                   "t3": {"floor_ns": 120.0, "mean_ns": 125.0, "spread_ns": 5.0}}}


def record_with(tmp_path, text):
    cal = tmp_path / "cal.json"
    cal.write_bytes(text if isinstance(text, bytes) else text.encode())
    return subprocess.run([HOPSCOPE, "record", "-n", "hst-no-such-netns", "-i", "a", "-O", "b",
                           "-o", str(tmp_path / "x.hsr"), "--calibration", str(cal)],
                          capture_output=True, text=True)


@pytest.mark.parametrize("text, why", [
    ('{"format": "hopscope-calibration", "a": [1, 2', "not valid JSON: expected ','"),
    ('{"format": "hopscope-calibration"} {}', "more after the object"),
    ('[{"format": "hopscope-calibration"}]', "not a JSON object"),
    ('{"format": "hopscope-calibration", "x": 01}', "not valid JSON"),
    ('{"format": "hopscope-calibration", "x": "\\q"}', "unknown escape"),
    ('{"format": "hopscope-calibration", "x": ' + "[" * 100 + "]" * 100 + "}", "nested too deeply"),
    (b'{"format": "hopscope-calibration", "x": "\xff"}', "not UTF-8"),
    ('{"format": "something-else"}', 'no "format": "hopscope-calibration"'),
    ('{"stages": {"format": "hopscope-calibration"}}', 'no "format"'),
])
def test_record_refuses_what_is_not_a_calibration(tmp_path, text, why):
    r = record_with(tmp_path, text)
    assert r.returncode == 2, r.stderr
    assert "--calibration" in r.stderr and why in r.stderr, r.stderr


def test_record_takes_a_calibration_and_goes_on(tmp_path):
    r = record_with(tmp_path, json.dumps(GOOD, indent=1) + "\n")
    # past the calibration: it fails only at the namespace that does not exist
    assert r.returncode == 1 and "calibration" not in r.stderr, r.stderr


def test_record_says_a_missing_calibration_file(tmp_path):
    r = subprocess.run([HOPSCOPE, "record", "-n", "x", "-i", "a", "-O", "b", "-o",
                        str(tmp_path / "x.hsr"), "--calibration", str(tmp_path / "none.json")],
                       capture_output=True, text=True)
    assert r.returncode == 2 and "No such file" in r.stderr


@pytest.mark.parametrize("change, why", [
    (lambda c: c.update(format="x"), "not a hopscope-calibration"),
    (lambda c: c.update(version=3), "version 3"),
    (lambda c: c.update(version=1), "its floor was a mean"),
    (lambda c: c["stages"]["t2"].pop("mean_ns"), "stages.t2.mean_ns"),
    (lambda c: c["stages"]["t1"].update(floor_ns=-1), "stages.t1.floor_ns"),
    (lambda c: c["stages"].update(t9={}), "'t9'"),
    (lambda c: c.update(stages={}), "'stages'"),
])
def test_a_misshapen_calibration_is_named(change, why):
    c = json.loads(json.dumps(GOOD))
    assert calibration.check(c) is None
    change(c)
    assert why in calibration.check(c)


def test_each_delay_gets_the_calibrated_floor_of_its_probes(tmp_path):
    p = tmp_path / "c.hsr"
    write_synthetic(p, 1000, stages=("t_tcin",), probe_cost=probe_cost(t1=SAMPLES, t2=SAMPLES, t3=SAMPLES))
    text = p.read_bytes()
    df = hopscope.load(p)
    assert df.attrs["calibration"] is None
    rows = {r["delay"]: r for r in budget.delays(df)}
    assert rows["d_iq"]["calibrated_ns"] is None
    # the same file with the calibration in its header
    df.attrs["calibration"] = GOOD
    rows = {r["delay"]: r for r in budget.delays(df)}
    assert rows["d_iq"]["calibrated_ns"] == 300.0  # t1 + t_tcin
    assert rows["d_p"]["calibrated_ns"] == 150.0
    assert rows["transit"]["calibrated_ns"] == 570.0
    assert "calibrated 0.30 µs" in budget.floor_note(rows["d_iq"])
    assert p.read_bytes() == text
