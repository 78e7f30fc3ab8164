"""`hopscope calibrate` end to end: on a testbed of its own and on a router
named to it, its JSON well-formed and true to the machine, and carried into
a later recording by `record --calibration`. Namespaces "hst-cb-"."""
import json
import subprocess

import pytest

import hopscope
from captures import send_udp
from testlib import HOPSCOPE, Recorder, hs_programs, last_prog_id, namespaced_testbed, sh, \
    wait_for
from hopscope.record import calibration
from hopscope.record.format import STAGE_NAMES

PREFIX = "hst-cb-"
RX4 = "198.18.3.2"
CS = "/sys/devices/system/clocksource/clocksource0/current_clocksource"


@pytest.fixture
def bed():
    yield from namespaced_testbed(PREFIX)


def check_calibration(cal, least_samples):
    assert calibration.check(cal) is None
    assert set(cal["stages"]) == set(STAGE_NAMES)
    for s, c in cal["stages"].items():
        # t0 samples at random, 1 in 64 on average: half is 6 sd below at 3000
        assert c["samples"] >= (least_samples // 2 if s == "t0" else least_samples), s
        assert 0 <= c["floor_ns"] <= c["mean_ns"] <= c["max_ns"] and c["spread_ns"] >= 0, s
    assert cal["backend"] == "ebpf"
    with open(CS) as f:
        assert cal["clock"]["clocksource"] == f.read().strip()
    assert {d: cal["delays"][d]["stages"] for d in ("d_iq", "d_p", "d_oq")} == \
        {"d_iq": ["t1"], "d_p": ["t2"], "d_oq": ["t3"]}
    # a packet alone in the router spends at least its probes' time there
    for d in ("d_iq", "d_p", "d_oq"):
        assert cal["delays"][d]["floor_ns"] < cal["idle"][d]["p50_ns"], d


def test_calibrate_on_its_own_testbed(tmp_path):
    since = last_prog_id()
    out = tmp_path / "cal.json"
    r = sh(HOPSCOPE, "calibrate", "-o", str(out), "--seconds", "3", "--prefix", PREFIX,
           check=False)
    assert r.returncode == 0, r.stderr
    cal = json.loads(out.read_text())
    # 3 s at up to 1000 pps (fewer when the machine holds D-ITG back, as
    # many as it sent): each of them recorded, 1 in 64 sampled
    t = cal["traffic"]
    assert t["rate_pps"] == 1000 and 0 < t["sent"] <= 3000
    # every packet sent recorded; D-ITG's receiver reads them after the
    # router, and a busy machine may overflow its socket (not the router's)
    assert 0 < t["received"] <= t["sent"] and cal["records"] >= t["sent"]
    check_calibration(cal, t["sent"] // 64 - 5)
    # packets paced ms apart find the router idle, some at the least however
    # the machine holds the sender back
    assert cal["idle"]["d_p"]["packets"] > 0
    assert "t_tceg" in r.stdout and f"{out}: written" in r.stdout
    assert PREFIX not in sh("ip", "netns", "list").stdout
    assert not hs_programs(since)


def test_calibrate_a_named_router_and_carry_it_into_a_run(bed, tmp_path):
    bed.up()
    out = tmp_path / "cal.json"
    p = subprocess.Popen([HOPSCOPE, "calibrate", "-o", str(out), "--netns", PREFIX + "router",
                          "--in", "r-s1", "--out", "r-rx", "--seconds", "6"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    bed.procs.append(p)
    # send once its probes are on: XDP on the router's input says so
    assert wait_for(lambda: "xdp" in sh("ip", "-n", PREFIX + "router", "link", "show",
                                        "r-s1").stdout, timeout=30)
    send_udp(PREFIX + "sender1", RX4, 2000, 200, pps=1000)
    err = p.communicate(timeout=60)[1]
    assert p.returncode == 0, err
    cal = json.loads(out.read_text())
    assert cal["traffic"]["where"] == "named router" and cal["records"] >= 1900
    check_calibration(cal, 1900 // 64 - 5)

    rec = Recorder(tmp_path / "run.hsr", "--calibration", str(out), prefix=PREFIX)
    bed.procs.append(rec.p)
    send_udp(PREFIX + "sender1", RX4, 1000, 200, pps=2000)
    rec.stop()
    df = hopscope.load(rec.out)
    assert df.attrs["calibration"] == cal and not df.attrs["problems"]
    r = sh(HOPSCOPE, "describe", str(rec.out), check=False)
    assert r.returncode == 0, r.stderr
    d_iq = next(x for x in r.stdout.splitlines() if x.startswith("d_iq "))
    assert f"calibrated {cal['stages']['t1']['floor_ns'] / 1e3:.2f} us" in d_iq
