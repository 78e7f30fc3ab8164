"""`hopscope record` refuses bad values before it touches anything (exit 2,
a message naming the option), and text from the machine never reaches a
shell: an interface name full of shell syntax is only ever an argument. A
recording's header names its router (--router-id or the default) and carries
the clock facts that align two hosts."""
import ctypes
import json
import os
import socket
import subprocess

import pytest

import signal
import time

import hopscope
from testlib import HOPSCOPE, sh, start_recorder

NS = "hst-rt-inj"


def record(*args, **kw):
    return subprocess.run([HOPSCOPE, "record", *args], capture_output=True, text=True,
                          timeout=60, **kw)


BASE = ["--in", "a", "--out", "b", "-o", "/nonexistent/never.hsr"]


@pytest.mark.parametrize("args, option", [
    (["--duration=nan"], "--duration"),
    (["--duration=inf"], "--duration"),
    (["--duration=-inf"], "--duration"),
    (["--duration=1e999"], "--duration"),
    (["--duration=0"], "--duration"),
    (["--count=-1"], "--count"),
    (["--count=0"], "--count"),
    (["--count= 5"], "--count"),
    (["--count=18446744073709551616"], "--count"),
    (["--stages="], "--stages"),
    (["--stages=t0,,fwd"], "--stages"),
    (["--stages=t0,"], "--stages"),
    (["--in", ",,,"], "--in"),
    (["--in", ""], "--in"),
    (["--out", ",,,"], "--out"),
    (["--out", "r-rx,"], "--out"),
    (["--xdp-mode=bogus"], "--xdp-mode"),
    (["--xdp-mode="], "--xdp-mode"),
    (["--floor=bogus"], "--floor"),
    (["--gro=on"], "--gro"),
    (["--gro="], "--gro"),
    (["--floor=clock", "--backend", "kmod"], "--floor=clock needs the eBPF backend"),
    (["--realtime=-1"], "--realtime"),
    (["--realtime="], "--realtime"),
    (["--realtime=100"], "--realtime"),
    (["--realtime=fifo"], "--realtime"),
    (["--router-id="], "--router-id"),
    (["--router-id", "r 1"], "--router-id"),
    (["--router-id", "r\t1"], "--router-id"),
    (["--router-id", "r\n1"], "--router-id"),
    (["--router-id", "r\u00e91"], "--router-id"),
    (["--router-id", "r" * 65], "--router-id"),
])
def test_bad_values_are_refused_with_exit_2(args, option):
    # the bad value last: it overrides BASE's good one
    r = record(*BASE, *args)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert option in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_bad_router_id_is_one_line():
    """the value is not echoed: it may hold the newline that makes two lines"""
    r = record(*BASE, "--router-id", "r\n1")
    assert r.returncode == 2 and len(r.stderr.splitlines()) == 1, r.stderr


def test_good_values_still_pass_parsing():
    # parsing passes; what stops it is the missing interface (runtime: exit 1)
    r = record("--in", "hst-no-such-if", "--out", "hst-no-such-if", "-o", "/tmp/never.hsr",
               "--duration=0.5", "--count=7", "--stages=t0,fwd", "--xdp-mode=generic",
               "--router-id", "r" * 64)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "no interface 'hst-no-such-if'" in r.stderr, r.stderr


@pytest.fixture
def hostile_netns():
    sh("ip", "netns", "del", NS, check=False)
    sh("ip", "netns", "add", NS)
    yield NS
    sh("ip", "netns", "del", NS, check=False)


HOSTILE = ["a;id>x", "$(touch${IFS}y)", "`id`>z|w&"]


def test_hostile_interface_names_reach_no_shell(hostile_netns, tmp_path):
    for k, name in enumerate(HOSTILE):
        sh("ip", "-n", hostile_netns, "link", "add", "name", name, "type", "veth", "peer",
           "name", f"p{k}")
        sh("ip", "-n", hostile_netns, "link", "set", name, "up")
        sh("ip", "-n", hostile_netns, "link", "set", f"p{k}", "up")
    out = tmp_path / "run.hsr"
    work = tmp_path / "cwd"
    work.mkdir()
    r = record("--netns", hostile_netns, "--in", ",".join(HOSTILE[:2]), "--out", HOSTILE[2],
               "-d", "0.3", "-q", "-o", str(out), cwd=work)
    assert r.returncode == 0, r.stderr
    # a shell would have left x (id's output), y or z in the working directory
    assert sorted(os.listdir(work)) == [], os.listdir(work)
    # and the name did reach tc, whole, as one argument: its qdisc was read
    ifaces = header_json(out.read_bytes())["interfaces"]
    assert [i["name"] for i in ifaces] == HOSTILE, ifaces
    for i in ifaces:
        assert i["qdisc"] is not None, i



def header_json(data):
    """the file's JSON header, found by itself (this test is about the recorder,
    not about the reader)"""
    dec = json.JSONDecoder()
    pos = data.find(b"{")
    while pos >= 0:
        try:
            obj, _ = dec.raw_decode(data[pos:pos + (1 << 20)].decode("utf-8", "replace"))
            if isinstance(obj, dict) and "interfaces" in obj:
                return obj
        except ValueError:
            pass
        pos = data.find(b"{", pos + 1)
    raise AssertionError("no JSON header with interfaces in the file")


def test_counters_that_cannot_be_read_are_an_error(hostile_netns, tmp_path):
    """a failed read of the counters map is said, and the run exits 1 (it was
    ignored: the trailer then held zeros, or the last values, as the run's)"""
    shim = tmp_path / "fail_lookup.so"
    sh("gcc", "-shared", "-fPIC", "-O2", "-o", str(shim),
       os.path.join(os.path.dirname(__file__), "fail_lookup.c"), "-ldl")
    sh("ip", "-n", hostile_netns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
    sh("ip", "-n", hostile_netns, "link", "set", "v0", "up")
    sh("ip", "-n", hostile_netns, "link", "set", "v1", "up")
    trigger = tmp_path / "fail-now"
    env = dict(os.environ, LD_PRELOAD=str(shim), HS_FAIL_LOOKUP=str(trigger))
    p = start_recorder([HOPSCOPE, "record", "--netns", hostile_netns, "--in", "v0",
                        "--out", "v1", "-q", "-o", str(tmp_path / "run.hsr")],
                       env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    trigger.touch()
    time.sleep(1.5)
    p.send_signal(signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert p.returncode == 1, err
    assert "cannot read the tracer's counters" in err, err


@pytest.mark.parametrize("args, policy", [
    ((), (1, 1)),                     # the default: SCHED_FIFO (1) at priority 1
    (("--realtime", "3"), (3, 1)),
    (("--realtime", "0"), (0, 0)),    # the normal scheduler (SCHED_OTHER)
])
def test_realtime_drains_at_sched_fifo(hostile_netns, tmp_path, args, policy):
    """--realtime PRIO: the drain (and the writing thread it starts) at
    SCHED_FIFO PRIO, so that other work on its CPU cannot hold it up; the
    run records and ends as any other"""
    sh("ip", "-n", hostile_netns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
    sh("ip", "-n", hostile_netns, "link", "set", "v0", "up")
    sh("ip", "-n", hostile_netns, "link", "set", "v1", "up")
    p = start_recorder([HOPSCOPE, "record", "--netns", hostile_netns, "--in", "v0",
                        "--out", "v1", "-q", *args, "-o", str(tmp_path / "run.hsr")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        policies = {}
        for tid in os.listdir(f"/proc/{p.pid}/task"):
            with open(f"/proc/{p.pid}/task/{tid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()  # after the comm
            policies[tid] = (int(fields[37]), int(fields[38]))  # rt_priority, policy
    finally:
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    # the drain and the writing thread alike
    assert len(policies) >= 2 and set(policies.values()) == {policy}, policies


class Timex(ctypes.Structure):
    """struct timex of <sys/timex.h> (glibc), up to tai and its padding"""
    _fields_ = [("modes", ctypes.c_uint), ("offset", ctypes.c_long), ("freq", ctypes.c_long),
                ("maxerror", ctypes.c_long), ("esterror", ctypes.c_long),
                ("status", ctypes.c_int), ("constant", ctypes.c_long),
                ("precision", ctypes.c_long), ("tolerance", ctypes.c_long),
                ("time", ctypes.c_long * 2), ("tick", ctypes.c_long),
                ("ppsfreq", ctypes.c_long), ("jitter", ctypes.c_long), ("shift", ctypes.c_int),
                ("stabil", ctypes.c_long), ("jitcnt", ctypes.c_long),
                ("calcnt", ctypes.c_long), ("errcnt", ctypes.c_long),
                ("stbcnt", ctypes.c_long), ("tai", ctypes.c_int),
                ("pad", ctypes.c_int * 11)]


def adjtimex():
    """the kernel's NTP state, read as the recorder reads it (modes 0 sets nothing)"""
    tx = Timex()
    assert ctypes.CDLL(None, use_errno=True).adjtimex(ctypes.byref(tx)) >= 0
    return tx


STA_UNSYNC = 0x40


@pytest.mark.parametrize("how, want", [
    (["--router-id", "edge-1.r/2"], lambda ns: ("edge-1.r/2", True)),
    ([], lambda ns: (f"{socket.gethostname()}/{ns}", False)),
    # run inside the namespace, without --netns: the hostname alone
    (["inside"], lambda ns: (socket.gethostname(), False)),
])
def test_router_id_and_clock_facts_of_a_recording(hostile_netns, tmp_path, how, want):
    sh("ip", "-n", hostile_netns, "link", "add", "v0", "type", "veth", "peer", "name", "v1")
    sh("ip", "-n", hostile_netns, "link", "set", "v0", "up")
    sh("ip", "-n", hostile_netns, "link", "set", "v1", "up")
    out = tmp_path / "run.hsr"
    argv = [HOPSCOPE, "record", "--in", "v0", "--out", "v1", "-d", "0.3", "-q", "-o", str(out)]
    if how == ["inside"]:
        argv = ["ip", "netns", "exec", hostile_netns, *argv]
    else:
        argv += ["--netns", hostile_netns, *how]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    h = header_json(out.read_bytes())
    assert (h["router_id"], h["router_id_given"]) == want(hostile_netns)

    clock = h["clock"]
    with open("/proc/sys/kernel/random/boot_id") as f:
        assert clock["boot_id"] == f.read().strip()
    sync, tx = clock["realtime_sync"], adjtimex()
    assert set(sync) == {"synced", "maxerror_ns", "esterror_ns", "status", "tai_offset_s"}
    assert type(sync["synced"]) is bool
    assert all(type(sync[k]) is int for k in sync if k != "synced"), sync
    # the kernel's microseconds, in ns; synced is STA_UNSYNC clear
    assert sync["maxerror_ns"] % 1000 == 0 and sync["esterror_ns"] % 1000 == 0, sync
    assert sync["synced"] is not bool(sync["status"] & STA_UNSYNC)
    assert (sync["synced"], sync["tai_offset_s"]) == \
        (not tx.status & STA_UNSYNC, tx.tai), (sync, tx.status, tx.tai)
    err = clock["mono_to_realtime_err_ns"]
    assert type(err) is int and err >= 0
    # the loader gives the same id
    assert hopscope.load(str(out)).attrs["router_id"] == h["router_id"]
