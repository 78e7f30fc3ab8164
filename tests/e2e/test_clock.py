"""Clock honesty end to end: the header's clock facts against what this
machine says, the warning on a doubtful clock (faked inside a private mount
namespace: the machine's own clocksource is never touched), and cross_cpu on
real traffic whose t1 and t4 ran on two CPUs. Namespaces "hst-ck-"."""
import os
import re
import subprocess
import time

import pytest

import hopscope
from testlib import HOPSCOPE, Recorder, namespaced_testbed, sh

PREFIX = "hst-ck-"
CS = "/sys/devices/system/clocksource/clocksource0/"
RX4 = "198.18.3.2"
# N UDP packets of 500 B with TOS T to the receiver, 50 at a time
SEND = """import socket, sys, time
n, tos = int(sys.argv[1]), int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
for i in range(n):
    s.sendto(b"x" * 500, (sys.argv[3], 9))
    if i % 50 == 49:
        time.sleep(0.001)
"""


@pytest.fixture
def bed():
    """The testbed; recorders a test starts go in its procs, killed first."""
    yield from namespaced_testbed(PREFIX)


def machine_facts():
    """The clock facts read here, apart from the recorder's code."""
    def read(name):
        with open(CS + name) as f:
            return f.read().split()
    flags = [line.split(":", 1)[1].split() for line in open("/proc/cpuinfo")
             if re.match(r"flags\s*:", line)]
    return {"clocksource": read("current_clocksource")[0],
            "available_clocksources": read("available_clocksource"),
            "constant_tsc": all("constant_tsc" in f for f in flags) if flags else None,
            "nonstop_tsc": all("nonstop_tsc" in f for f in flags) if flags else None,
            "resolution_ns": round(time.clock_getres(time.CLOCK_MONOTONIC) * 1e9)}


def header(path):
    return hopscope.load(path).attrs["header"]


def send(*senders, n=2000):
    """(namespace, cpu, tos) each sending n packets at once; waits for all."""
    procs = [subprocess.Popen(["ip", "netns", "exec", PREFIX + name, "taskset", "-c", str(cpu),
                               "python3", "-c", SEND, str(n), str(tos), RX4])
             for name, cpu, tos in senders]
    for p in procs:
        assert p.wait(timeout=60) == 0


def describe(path):
    r = sh(HOPSCOPE, "describe", path, check=False)
    assert r.returncode == 0, r.stderr
    return {line[:11].strip(): line[12:] for line in r.stdout.splitlines()}


def test_header_clock_facts_are_the_machines(bed, tmp_path):
    """rps mode: t1..t4 all on the router's CPU, so no record is cross_cpu."""
    bed.up(shield=False)
    rec = Recorder(tmp_path / "run.hsr", prefix=PREFIX)
    bed.procs.append(rec.p)
    send(("sender1", 0, 4))
    err = rec.stop()
    h = header(rec.out)
    c, want = h["clock"], machine_facts()
    for k, v in want.items():
        assert c[k] == v, k
    assert h["clocksource"] == want["clocksource"]
    assert c["stamp_clock"] == "CLOCK_MONOTONIC"
    assert c["stamp_read"] == {"ebpf": "bpf_ktime_get_ns", "kmod": "ktime_get_ns"}[h["backend"]]
    assert c["user_read_cost_reads"] == 10000
    assert type(c["user_read_cost_ns"]) is int and c["user_read_cost_ns"] > 0

    doubtful = (want["clocksource"] != "tsc" or want["constant_tsc"] is False
                or want["nonstop_tsc"] is False)
    assert ("WARNING: the clocksource" in err or "WARNING: the TSC" in err) == doubtful
    df = hopscope.load(rec.out)
    assert (df.status == "complete").sum() > 1000
    assert df.attrs["cross_cpu"] == 0 and not df.cross_cpu.any()
    d = describe(rec.out)
    assert f"clocksource {want['clocksource']} " in d["clock"]
    assert d["cross-cpu"].startswith("0 of ")
    assert (d["problems"] == "none") == (not doubtful)


def faked_recorder(out, binds):
    """The recorder in its own mount namespace, with each (file, path) of
    binds bind-mounted over path there: the machine's files stay as they are."""
    mounts = " && ".join(f'mount --bind "{f}" "{p}"' for f, p in binds)
    return Recorder(out, prefix=PREFIX, wrap=["unshare", "-m", "--propagation", "private",
                                              "sh", "-c", mounts + ' && exec "$@"', "sh"])


def test_faked_hpet_and_tsc_flags_warn(bed, tmp_path):
    bed.up(shield=False)
    before = open(CS + "current_clocksource").read()
    fake_cs = tmp_path / "clocksource"
    fake_cs.write_text("hpet\n")
    # every CPU's flags but the last CPU's without nonstop_tsc
    lines = open("/proc/cpuinfo").read().splitlines(keepends=True)
    last = max((i for i, line in enumerate(lines) if re.match(r"flags\s*:", line)), default=None)
    if last is None:
        pytest.skip("no flags in /proc/cpuinfo: not x86, no TSC to judge")
    lines[last] = re.sub(r" nonstop_tsc\b", "", lines[last])
    fake_cpuinfo = tmp_path / "cpuinfo"
    fake_cpuinfo.write_text("".join(lines))

    rec = faked_recorder(tmp_path / "run.hsr", [(fake_cs, CS + "current_clocksource"),
                                                (fake_cpuinfo, "/proc/cpuinfo")])
    bed.procs.append(rec.p)
    send(("sender1", 0, 4), n=200)
    err = rec.stop()
    for what in ("WARNING: the clocksource is hpet, not tsc",
                 "WARNING: the TSC is not non-stop"):
        assert err.count(what) == 2, (what, err)  # at the start and in the summary
    assert "not constant" not in err
    h = header(rec.out)
    assert h["clocksource"] == h["clock"]["clocksource"] == "hpet"
    assert h["clock"]["nonstop_tsc"] is False and h["clock"]["constant_tsc"] is True
    d = describe(rec.out)
    assert "clocksource hpet, not tsc" in d["problems"]
    assert "the TSC is not non-stop" in d["problems"]
    # the fake was seen by the recorder alone
    assert open(CS + "current_clocksource").read() == before
    assert str(tmp_path) not in open("/proc/self/mountinfo").read()


def test_cross_cpu_when_the_output_is_dequeued_on_another_cpu(bed, tmp_path):
    """inline mode: each sender's CPU forwards its own packets (t1 there), and
    a TBF on the output is dequeued by whichever CPU runs the qdisc at the
    time, its watchdog or the other sender's: t4 on the other CPU."""
    if os.cpu_count() < 2:
        pytest.skip("needs two CPUs")
    bed.up("--mode", "inline", "--shape", "tbf:20mbit", shield=False)
    rec = Recorder(tmp_path / "run.hsr", prefix=PREFIX)
    bed.procs.append(rec.p)
    send(("sender1", 0, 4), ("sender2", 1, 8), n=5000)
    rec.stop()
    df = hopscope.load(rec.out)
    c = df[df.status == "complete"]
    # t1 on the sending CPU, whatever became of the packet: which sender's
    # packets the TBF lets through (a tenth of them) is a race between the two
    sent = df[df.tos.isin((4, 8))]
    assert set(zip(sent.tos, sent.cpu_in)) == {(4, 0), (8, 1)}
    assert (df.cross_cpu == ((df.status == "complete") & (df.cpu_in != df.cpu_out))).all()
    assert df.attrs["cross_cpu"] == df.cross_cpu.sum() > 0
    assert (c.cpu_out != c.cpu_in).sum() == df.attrs["cross_cpu"]
    d = describe(rec.out)
    assert d["cross-cpu"].startswith(f"{df.attrs['cross_cpu']} of {len(c)} complete")


def test_odd_clock_files_keep_the_header_valid(bed, tmp_path):
    """A clocksource name that is not UTF-8 and holds JSON's quote and
    backslash, and an empty available_clocksource: valid JSON, the name's
    bytes in hex beside it, the empty one unknown."""
    bed.up(shield=False)
    odd = tmp_path / "clocksource"
    odd.write_bytes(b'caf\xe9"\\x\n')
    empty = tmp_path / "available"
    empty.write_bytes(b"")
    rec = faked_recorder(tmp_path / "run.hsr", [(odd, CS + "current_clocksource"),
                                               (empty, CS + "available_clocksource")])
    bed.procs.append(rec.p)
    err = rec.stop()
    assert "WARNING: the clocksource is caf\ufffd" in err  # its bytes as they are
    df = hopscope.load(rec.out)
    c = df.attrs["header"]["clock"]
    assert c["clocksource"] == 'caf\ufffd"\\x'
    assert bytes.fromhex(c["clocksource_hex"]) == b'caf\xe9"\\x'
    assert c["available_clocksources"] is None
    assert df.attrs["clock"]["available_clocksources"] == "unknown"
    assert "clocksource caf\ufffd" in describe(rec.out)["problems"]
