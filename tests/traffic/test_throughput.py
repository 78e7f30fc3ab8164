"""Lossless-throughput search on a router shaped by TBF at a known rate, with
real traffic: the rate found must be just below the shaper's, in packets per
second of the frames TBF counts."""
import json
import os

import pytest

from hopscope.traffic.generators import REACHED
from hopscope.traffic.scenario.load import load_scenario
from hopscope.traffic.throughput import Trial, search as binary_search, trial_runner
from hopscope.traffic.throughput_file import read_results
from campaignkit import PREFIX, hopscope, our_namespaces, stop_group, take_testbed_down

PAYLOAD = 458          # UDP payload bytes
FRAME = PAYLOAD + 42   # + UDP 8, IPv4 20, Ethernet 14: what TBF counts on veth
RATE_BIT = 8_000_000   # the shaper: tbf:8mbit
SHAPER_PPS = RATE_BIT / 8 / FRAME  # 2000
# searched between these: D-ITG's constant rate is exact only above 1000 pps,
# where it busy-waits its gaps (asked 750, it sent 593 pps)
LOW, HIGH = 0.75 * SHAPER_PPS, 1.25 * SHAPER_PPS
# the shaper's queue holds 25 ms at its rate: a router CPU held up by a busy
# host for 10 ms overflowed a 10-packet queue below the rate (its tokens past
# the burst are lost meanwhile); the more it holds, the more a trial above the
# rate passes, LIMIT + BURST_FRAMES over TRIAL_S pps
LIMIT, BURST_FRAMES = 50, 3028 // FRAME  # the testbed's queue and 2-frame burst
TRIAL_S = 3.0

# One condition: sender1 D-ITG at a constant rate through the shaped router.
SCENARIO = f"""
# test_throughput.py: TBF at {RATE_BIT} bit/s, {FRAME} B frames = {SHAPER_PPS:g} pps
name = "tbf"
duration = {TRIAL_S}

[testbed]
shape = "tbf:{RATE_BIT // 1_000_000}mbit:{LIMIT}p"
# opt in: the trials then keep the generator's CPU (--shield senders), so a
# busy machine cannot make D-ITG send less than asked
shield = true

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
        _, err = p.communicate(timeout=400)
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
    # every trial above the shaper by more than its queue and burst can hold lost packets
    slack = (LIMIT + BURST_FRAMES) / TRIAL_S
    trials = result["trials"]
    for t in trials:
        for a in t.get("attempts", [t]):
            # never more through than the shaper passes, however busy
            assert a["received"] <= SHAPER_PPS * TRIAL_S + LIMIT + BURST_FRAMES + 5, a
            # the shaper's queue is where packets are lost (D-ITG's signalling
            # through it can be dropped there too), received counted in the
            # receiver's kernel
            assert 0 <= a["sent"] - a["received"] <= a["router_queue_dropped"], a
            assert a["router_steal_ms"] >= 0, a
    if result["limited_by"] == "generator":
        # a busy machine held the generator below what was asked: the search
        # says so and gives a lower bound, never a rate above the shaper's
        assert "a lower bound" in err and result["lossless_pps"] <= SHAPER_PPS + slack, err
        return
    assert result["limited_by"] == "loss", err
    offered = result["lossless_offered_pps"]
    assert 0.97 * SHAPER_PPS <= offered <= SHAPER_PPS + slack, (offered, err)
    assert 0.95 * SHAPER_PPS <= result["lossless_pps"] <= 1.05 * SHAPER_PPS, err
    lossless = [t["rate_pps"] for t in trials if t["lossless"]]
    lossy = [t["rate_pps"] for t in trials if not t["lossless"]]
    assert lossy and max(lossless) < min(lossy)  # a consistent bracket
    assert max(lossless) == result["lossless_pps"]
    assert min(lossy) - max(lossless) <= 20  # the resolution
    # what got through a lossy trial is at most the shaper's rate plus its queue
    # and burst; less when the generator paused on a busy machine (the shaper
    # idles meanwhile, and tokens past its burst are not kept: 28 fewer of
    # 4000 seen in a CI run), so the lower bound leaves 3 %
    for t in trials:
        if not t["lossless"]:
            assert 0.97 * SHAPER_PPS * TRIAL_S <= t["received"] <= \
                SHAPER_PPS * TRIAL_S + LIMIT + BURST_FRAMES + 5, t
    # loss is believed only when a lossy trial's repeat loses too (or carried no
    # more than got through the lossy run); the shaper drops above its rate
    # every time, so nothing above it (plus what its queue holds) passed as lossless
    assert doc["method"]["lossy_trials_repeated"] is True
    for t in trials:
        if t.get("repeated"):
            first, second = t["attempts"]
            assert not (first["lossless"] and first["offered_pps"] >= 0.95 * t["rate_pps"])
            assert first["rate_pps"] == second["rate_pps"] == t["rate_pps"]
            decided = {k: v for k, v in t.items() if k not in ("repeated", "attempts")}
            assert decided in (first, second)
            if t["lossless"] and not first["lossless"]:  # a loss cleared by a fuller repeat
                assert second["sent"] > first["received"]
        if not t["lossless"]:  # lost twice, or the repeat carried no more than got through
            assert t.get("repeated"), t
            got_through = t["attempts"][0]["received"]
            assert all(not a["lossless"] or a["sent"] <= got_through for a in t["attempts"]), t
        # what was offered, not asked: a loaded machine's generator sends up to
        # 5 % less (still "reached"), and a shaper passes what it can carry
        if t["offered_pps"] > SHAPER_PPS + slack:
            assert not t["lossless"], t
    assert read_results(out / "throughput.json") == {name: result["lossless_pps"]}
    assert f"lossless throughput {result['lossless_pps']:g} pps" in err
    runs = [a["folder"] for t in trials for a in t.get("attempts", [t])]
    assert sorted(os.listdir(out / "trials" / name)) == sorted(runs)  # one folder per run
    with open(out / "trials" / name / runs[0] / "metadata.json") as f:
        assert json.load(f)["testbed"]["shield_for"] == "senders"  # the generator's CPU kept

    # a scenario reuses it: rate = "lossless*F" is F x the rate found
    reuse = out.parent / "reuse.toml"
    reuse.write_text(SCENARIO.replace('name = "tbf"', 'name = "tbf"\nthroughput = "tp/throughput.json"')
                     .replace(f"rate = {SHAPER_PPS:g}", 'rate = "lossless*0.9"'))
    cond, = load_scenario(reuse).conditions()
    assert cond.name == name
    assert cond.senders[0].rate == pytest.approx(0.9 * result["lossless_pps"])


def test_a_sender_held_back_by_its_link_did_not_offer_the_rate(tmp_path):
    """iperf3 sends its count of packets however long that takes: behind a
    sender link slower than the rate (shape_in) it takes longer than the
    trial, and the trial counts what it offered over that time, not the
    trial's, so the rate is not taken as offered."""
    scenario = tmp_path / "held.toml"
    scenario.write_text(f"""
name = "held"
[testbed]
shape_in = "tbf:1mbit"
[senders.sender1]
generator = "iperf3"
size = {PAYLOAD}
rate = 1000
""")
    (cond,) = load_scenario(str(scenario)).conditions()
    take_testbed_down()
    try:
        # 1000 frames of 500 B asked in 1 s: four times what 1 Mbit/s carries
        t = trial_runner(str(tmp_path / "tp"), PREFIX, 1.0)(cond, 1000, 0)
    finally:
        take_testbed_down()
    assert t.sent == t.received == 1000 and not t.reached
    with open(tmp_path / "tp" / "trials" / "held" / t.folder / "metadata.json") as f:
        meta = json.load(f)
    assert meta["senders"]["sender1"]["send_seconds"] > 1 / REACHED  # asked: 1 s
    assert any("held back" in w for w in meta["warnings"]), meta["warnings"]
    assert not our_namespaces()


def test_bad_options_are_refused(tmp_path):
    for args, msg in ((["--max", "100", "--min", "200"], "must be at least 0 and below"),
                      (["--max", "100", "--resolution", "0.5"], "at least 1 pps"),
                      (["--max", "100", "--trial-seconds", "0"], "above 0"),
                      ([], "--max")):
        p = hopscope("throughput", tmp_path / "x.toml", "-o", tmp_path / "o", *args)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 2 and msg in err, (args, err)


# ---- the search itself, on a simulated router (no testbed) ----

SIM_S = 2.0  # a simulated trial's seconds

def simulated(drops_above, flukes=(), short=(), reaches=None):
    """run_trial for search(): a router that loses packets at every rate above
    drops_above, a busy machine that loses one packet in the runs whose index
    is in flukes and holds the sender back to half the rate in those in short,
    and a generator that sends at most reaches pps. Records every run."""
    runs = []

    def run_trial(cond, rate, index):
        offered = min(rate, reaches or rate) / (2 if index in short else 1)
        sent = round(offered * SIM_S)
        lost = max(0, sent - round(drops_above * SIM_S)) + (index in flukes)
        runs.append((index, rate, lost))
        return Trial(rate, sent, sent - lost, sent / SIM_S, 0.1, f"{index + 1:02d}-{rate:g}pps")
    return run_trial, runs


class Cond:
    name = "sim"


def test_one_lost_packet_is_run_again_and_does_not_end_the_search_low():
    # the failure seen on a busy machine: one packet lost in one trial below
    # the shaper's 2000 pps; the repeat is lossless and the search goes on
    run_trial, runs = simulated(2000, flukes={2})
    pps, limited_by, trials = binary_search(Cond, LOW, HIGH, 20, run_trial)
    assert limited_by == "loss" and 1980 <= pps <= 2000, (pps, runs)
    fluke, = [t for t in trials if t.repeated and t.lossless]
    first, again = fluke.attempts
    assert first.received == first.sent - 1 and fluke.rate_pps == runs[2][1] and fluke is not first
    d = fluke.to_dict()
    assert d["repeated"] and [a["lossless"] for a in d["attempts"]] == [False, True]
    assert [a["folder"] for a in d["attempts"]] == ["03-%gpps" % fluke.rate_pps,
                                                   "04-%gpps" % fluke.rate_pps]


def test_a_router_that_drops_is_never_reported_lossless_above_its_rate():
    # real loss is found whatever the flukes: every lossy verdict was lost twice
    for flukes in ((), {0}, {1, 3, 5}, set(range(0, 30, 2))):
        run_trial, runs = simulated(1900, flukes=flukes)
        pps, limited_by, trials = binary_search(Cond, LOW, HIGH, 20, run_trial)
        assert limited_by == "loss" and 1880 <= pps <= 1900, (flukes, pps, runs)
        for t in trials:
            if t.rate_pps > 1900:
                assert not t.lossless and not any(a.lossless for a in t.attempts), (flukes, t)


def test_loss_at_the_lowest_rate_is_confirmed_too():
    run_trial, runs = simulated(1000)  # drops below --min: no lossless rate
    pps, limited_by, trials = binary_search(Cond, LOW, HIGH, 20, run_trial)
    assert (pps, limited_by) == (None, "loss")
    assert [r[1] for r in runs] == [HIGH, HIGH, LOW, LOW]  # each lossy rate run twice


def test_a_sender_held_back_once_is_run_again_twice_is_a_generator_limit():
    run_trial, runs = simulated(2000, short={2})  # the machine busy in one run
    pps, limited_by, trials = binary_search(Cond, LOW, HIGH, 20, run_trial)
    assert limited_by == "loss" and 1980 <= pps <= 2000, (pps, runs)
    t, = [t for t in trials if t.repeated and t.lossless]
    assert t.attempts[0].offered_pps == t.offered_pps / 2 and t.reached
    # a generator that cannot reach the rate falls short in both runs
    run_trial, runs = simulated(2000, reaches=1700)
    pps, limited_by, trials = binary_search(Cond, LOW, HIGH, 20, run_trial)
    assert limited_by == "generator" and pps == 1700, (pps, runs)
    assert trials[-1].repeated and not trials[-1].attempts[0].reached


def test_a_repeat_held_back_does_not_clear_a_loss():
    """Seen on a shared machine: at 2016 pps (above the 2000 pps shaper) the
    first run lost 21 of 4020, the repeat's sender was held back and sent 3958,
    all through. That repeat proves nothing about 2016 pps: the loss stands."""
    runs = {0: (4020, 3999), 1: (3958, 3958)}

    def run_trial(cond, rate, index):
        sent, received = runs[index]
        return Trial(rate, sent, received, sent / SIM_S, 0.1, f"{index + 1:02d}")
    pps, limited_by, trials = binary_search(Cond, 0, 2016, 5000, run_trial)
    assert (pps, limited_by) == (None, "loss")
    t, = trials
    assert not t.lossless and t.repeated and t is not t.attempts[1]
    assert t.to_dict()["folder"] == "01" and [a["sent"] for a in t.to_dict()["attempts"]] == [4020, 3958]
    # a repeat that carried more than got through the lossy run does clear it
    runs[1] = (4000, 4000)
    pps, limited_by, trials = binary_search(Cond, 0, 2016, 5000, run_trial)
    assert (pps, limited_by) == (2016, "max") and trials[0].folder == "02"
