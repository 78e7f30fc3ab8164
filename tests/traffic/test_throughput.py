"""Lossless-throughput search on a router shaped by TBF at a known rate, with
real traffic: the rate found must be just below the shaper's, in packets per
second of the frames TBF counts."""
import json
import os

import pytest

from hopscope.traffic.scenario.load import load_scenario
from hopscope.traffic.throughput_file import read_results
from test_campaign_env import PREFIX, hopscope, our_namespaces, stop_group, take_testbed_down

PAYLOAD = 458          # UDP payload bytes
FRAME = PAYLOAD + 42   # + UDP 8, IPv4 20, Ethernet 14: what TBF counts on veth
RATE_BIT = 8_000_000   # the shaper: tbf:8mbit
SHAPER_PPS = RATE_BIT / 8 / FRAME  # 2000
# searched between these: D-ITG's constant rate is exact only above 1000 pps,
# where it busy-waits its gaps (asked 750, it sent 593 pps)
LOW, HIGH = 0.75 * SHAPER_PPS, 1.25 * SHAPER_PPS
LIMIT, BURST_FRAMES = 10, 3028 // FRAME  # the testbed's queue and 2-frame burst
TRIAL_S = 2.0

# One condition: sender1 D-ITG at a constant rate through the shaped router.
SCENARIO = f"""
# test_throughput.py: TBF at {RATE_BIT} bit/s, {FRAME} B frames = {SHAPER_PPS:g} pps
name = "tbf"
duration = {TRIAL_S}

[testbed]
shape = "tbf:{RATE_BIT // 1_000_000}mbit:{LIMIT}p"

[senders.sender1]
generator = "ditg"
size = {PAYLOAD}
rate = {SHAPER_PPS:g}
"""


@pytest.fixture
def search(tmp_path):
    scenario = tmp_path / "tbf.toml"
    scenario.write_text(SCENARIO)
    out = tmp_path / "tp"
    take_testbed_down()
    p = hopscope("throughput", scenario, "-o", out, "--prefix", PREFIX, "--min", LOW, "--max", HIGH,
                 "--resolution", 20, "--trial-seconds", TRIAL_S)
    try:
        _, err = p.communicate(timeout=150)
    finally:
        if p.poll() is None:
            stop_group(p)
        take_testbed_down()
    assert p.returncode == 0, err
    assert not our_namespaces()
    with open(out / "throughput.json") as f:
        return json.load(f), err, out


def test_lossless_rate_is_just_below_the_shapers(search):
    doc, err, out = search
    (name, result), = doc["conditions"].items()
    assert result["limited_by"] == "loss", err
    # every trial above the shaper by more than its queue and burst can hold lost packets
    slack = (LIMIT + BURST_FRAMES) / TRIAL_S
    offered = result["lossless_offered_pps"]
    assert 0.97 * SHAPER_PPS <= offered <= SHAPER_PPS + slack, (offered, err)
    assert 0.95 * SHAPER_PPS <= result["lossless_pps"] <= 1.05 * SHAPER_PPS, err
    trials = result["trials"]
    lossless = [t["rate_pps"] for t in trials if t["lossless"]]
    lossy = [t["rate_pps"] for t in trials if not t["lossless"]]
    assert lossy and max(lossless) < min(lossy)  # a consistent bracket
    assert max(lossless) == result["lossless_pps"]
    assert min(lossy) - max(lossless) <= 20  # the resolution
    for t in trials:  # what got through a lossy trial is the shaper's rate plus its queue
        if not t["lossless"]:
            assert abs(t["received"] - SHAPER_PPS * TRIAL_S) <= LIMIT + BURST_FRAMES + 5, t
    assert read_results(out / "throughput.json") == {name: result["lossless_pps"]}
    assert f"lossless throughput {result['lossless_pps']:g} pps" in err
    assert len(os.listdir(out / "trials" / name)) == len(trials)

    # a scenario reuses it: rate = "lossless*F" is F x the rate found
    reuse = out.parent / "reuse.toml"
    reuse.write_text(SCENARIO.replace('name = "tbf"', 'name = "tbf"\nthroughput = "tp/throughput.json"')
                     .replace(f"rate = {SHAPER_PPS:g}", 'rate = "lossless*0.9"'))
    cond, = load_scenario(reuse).conditions()
    assert cond.name == name
    assert cond.senders[0].rate == pytest.approx(0.9 * result["lossless_pps"])


def test_bad_options_are_refused(tmp_path):
    for args, msg in ((["--max", "100", "--min", "200"], "must be at least 0 and below"),
                      (["--max", "100", "--resolution", "0.5"], "at least 1 pps"),
                      (["--max", "100", "--trial-seconds", "0"], "above 0"),
                      ([], "--max")):
        p = hopscope("throughput", tmp_path / "x.toml", "-o", tmp_path / "o", *args)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 2 and msg in err, (args, err)
