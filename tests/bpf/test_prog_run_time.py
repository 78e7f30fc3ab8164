"""build/prog_run --time: the XDP stage's cost without traffic (each test
run on a fresh frame, its slots freed as traffic would free them). Its
numbers are bench material (evaluation/measurements.md); here only that every run
is a whole t1 (no metadata room refused, no slot taken from another packet)
and that its usage errors are usage errors."""
import json
import os
import subprocess

import pytest
from scapy.all import IP, UDP, Ether, Raw

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROG_RUN = os.path.join(ROOT, "build", "prog_run")
FRAME = bytes(Ether() / IP(src="198.18.1.2", dst="198.18.3.2", tos=4) /
              UDP(sport=40000, dport=5201) / Raw(b"x" * 22)).hex() + "\n"


def timed(*args):
    r = subprocess.run([PROG_RUN, "--time", *args], input=FRAME, capture_output=True,
                       text=True, check=True)
    return json.loads(r.stdout)


def test_every_run_is_a_whole_t1():
    # more runs than slots per CPU (16384): freed between laps, none evicted
    out = timed("20000")
    assert out["counters"] == {"xdp_pkts": 20000}
    ns = out["ns_per_run"]
    assert 0 < ns["least"] <= ns["median"] <= ns["most"]
    assert ns["least"] <= ns["middle_mean"] <= ns["most"]


@pytest.mark.parametrize("floor", ["empty", "clock"])
def test_a_floor_runs_nothing_of_t1(floor):
    out = timed("1000", "--floor", floor)
    assert out["counters"] == {} and out["ns_per_run"]["least"] > 0


@pytest.mark.parametrize("args", [["0"], ["x"], [], ["10", "--floor"], ["10", "--floor", "warm"],
                                  ["10", "--slots", "5"]])
def test_usage_errors(args):
    r = subprocess.run([PROG_RUN, "--time", *args], input=FRAME, capture_output=True, text=True)
    assert r.returncode == 2 and "usage: prog_run" in r.stderr and not r.stdout
