"""What the live end-to-end tests (test_stages_live, test_ipv6, test_losses,
test_fresh_file) share: their own testbed prefix, recorders killed at
teardown, traffic from a sender namespace, the router's interface counters,
and the checks every fresh recording must pass."""
import json
import re
import sys

import pytest

import hopscope
from hopscope.record.reader import RecordFile

from testlib import HOPSCOPE, Recorder, sh, namespaced_testbed, wait_for

P = "hst-lv-"
RX4, RX6 = "198.18.3.2", "2001:2:0:3::2"
S1_6 = "2001:2:0:1::2"
# the statuses the kernel counts as it emits them (include/hopscope.h)
EMITTED = ("complete", "dropped", "evicted", "other_out", "partial")


@pytest.fixture
def tb():
    yield from namespaced_testbed(P)


@pytest.fixture
def recorder(tmp_path):
    """start(*args, **kw) -> Recorder on this prefix's router; killed at teardown"""
    started = []

    def start(*extra, ins="r-s1,r-s2", outs="r-rx"):
        r = Recorder(tmp_path / f"lv{len(started)}.hsr", "-q", *extra, ins=ins, outs=outs,
                     prefix=P)
        started.append(r)
        return r

    yield start
    for r in started:
        r.kill()
    # a link dies with its process: nothing of theirs may stay on the router
    assert wait_for(lambda: not any(net_show().get(k) for k in ("xdp", "tc")), timeout=10), \
        net_show()


def ns(name, *cmd, **kw):
    return sh("ip", "netns", "exec", P + name, *cmd, **kw)


def net_show():
    """bpftool's view of the router's namespace (its netfilter part lists the
    whole machine's links); {} when the namespace is gone"""
    r = ns("router", "bpftool", "-j", "net", "show", check=False)
    return json.loads(r.stdout)[0] if r.returncode == 0 else {}


def ipv4_only():
    """IPv6 off in every namespace of the testbed: the hosts then send no
    router solicitations or MLD reports, which reach the router at any time
    (counted `local`), so the counters count the test's packets alone"""
    for role in ("sender1", "sender2", "router", "receiver"):
        ns(role, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1")


# The sender's loop (argv: n dst port size sport tclass chunk room df; df 0:
# IPv4 datagrams the router may fragment, DF clear). Before
# each chunk it waits until no CPU's input backlog (/proc/net/softnet_stat's
# 12th column, input and process queue) holds more than room, the chunk's
# room under netdev_max_backlog: the backlog then never refuses one of its
# packets (counted as the sender's tx dropped, before any hook), however
# long the router's CPU is held up. chunk 0: as fast as Python sends.
SENDER = r"""
import socket, sys, time
n, dst, port, size, sport, tclass, chunk, room, df = sys.argv[1:]
n, port, size, sport, tclass, chunk, room = map(int, (n, port, size, sport, tclass, chunk, room))
six = ":" in dst
s = socket.socket(socket.AF_INET6 if six else socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 24)
s.setsockopt(*((41, 67) if six else (0, 1)), tclass)  # IPV6_TCLASS / IP_TOS
if df == "0":
    s.setsockopt(0, 10, 0)  # IP_MTU_DISCOVER: IP_PMTUDISC_DONT
s.bind(("", sport))

def backlog():
    with open("/proc/net/softnet_stat") as f:
        return max(int(line.split()[11], 16) for line in f)

for i in range(n):
    if chunk and i % chunk == 0:
        end = time.monotonic() + 60
        while backlog() > room:
            if time.monotonic() > end:
                sys.exit(f"the input backlog held over {room} packets for 60 s")
            time.sleep(0.0005)
    s.sendto(i.to_bytes(4, "big") * (size // 4), (dst, port))
"""
CHUNK = 500  # half the default netdev_max_backlog (1000)


def backlog_room(chunk):
    """what the input backlog may hold before a chunk is sent: the machine's
    netdev_max_backlog (not seen from inside a namespace) less the chunk"""
    with open("/proc/sys/net/core/netdev_max_backlog") as f:
        room = int(f.read()) - chunk
    assert room >= 0, f"netdev_max_backlog is below {chunk}: raise it to send in chunks"
    return room


def send_udp(n, dst=RX4, port=9, size=64, sport=40000, tclass=0, role="sender1", flood=False,
             df=True):
    """n datagrams from role (a sender) on its CPU (0), each payload starting
    with its index (so no two share a packet key); returns once all are sent.
    None is refused by the router's input backlog, however busy the machine
    (SENDER); flood: as fast as Python sends, and the backlog may refuse some;
    df False: IPv4 with DF clear, which a router fragments"""
    r = ns(role, "taskset", "-c", "0", sys.executable, "-c", SENDER, str(n), dst, str(port),
           str(size), str(sport), str(tclass), str(0 if flood else CHUNK),
           str(0 if flood else backlog_room(CHUNK)), str(int(df)), timeout=120,
           check=False)
    assert r.returncode == 0, r.stderr


def links(role="router"):
    """{ifname: stats64} of a namespace's interfaces, read by ip, not by hopscope"""
    out = json.loads(ns(role, "ip", "-s", "-j", "link", "show").stdout)
    return {l["ifname"]: l["stats64"] for l in out}


def delta(after, before, ifname, way, key="packets"):
    return after[ifname][way][key] - before[ifname][way][key]


def wait_out(before, n, timeout=60):
    """until r-rx has transmitted (or dropped) n more packets than in before:
    every one of them has passed t4, so its record is in the ring"""
    def done():
        a = links()
        return delta(a, before, "r-rx", "tx") + delta(a, before, "r-rx", "tx", "dropped") >= n
    # on a miss, what the senders' links refused too (the router's input
    # backlog full: before any hook, so no record either)
    assert wait_for(done, timeout=timeout), (
        links()["r-rx"], before["r-rx"],
        {r: links(r)[i]["tx"]["dropped"] for r, i in (("sender1", "s1-eth0"),
                                                       ("sender2", "s2-eth0"))})


def summary(text):
    """(records by status, counters) as the recorder's last lines print them"""
    rec = text.split("  records   ", 1)[1].split("\n", 1)[0]
    # the counters' lines, up to the warnings after them
    cnt = text.split("  counters  ", 1)[1].split("\nhopscope:", 1)[0]
    pairs = lambda s: {k: int(v) for k, v in re.findall(r"([a-z_0-9]+) (\d+)", s)}
    return pairs(rec), pairs(cnt)


def checked(path):
    """A fresh recording, read as a user would: `hopscope verify` passes, it
    loads with every checksum checked and nothing found wrong, and its END
    chunk's counts add up (docs/record-format.md, "COUNTERS and END JSON")."""
    v = sh(HOPSCOPE, "verify", str(path), check=False)
    assert v.returncode == 0 and ": OK: " in v.stdout, v.stdout + v.stderr
    df = hopscope.load(str(path), verify=True, strict=True)
    assert not df.attrs["problems"] and not df.attrs["truncated"], df.attrs["problems"]
    assert df.attrs["dropped_records"] == 0
    end = df.attrs["trailer"]
    assert end is not None and end["stop_reason"] == "signal", end
    u, c = end["userspace"], end["counters"]
    # every record received is in the file (no disk trouble here)
    assert u["records_not_stored"] == 0 and u["records_written"] == len(df), u
    by = df.status.astype(str).value_counts()
    assert u["records_by_status"] == {s: int(by.get(s, 0)) for s in u["records_by_status"]}, \
        (u, by)
    # each packet the kernel emitted is a record of that status, or lost in
    # the ring; inflight ones are handed over at the stop, outside the ring
    emitted = sum(c[k] for k in EMITTED)
    stored = sum(u["records_by_status"][k] for k in EMITTED)
    assert emitted == stored + c["rb_fail"], (c, u)
    assert c["complete"] == u["records_by_status"]["complete"] + c["rb_fail_complete"], (c, u)
    assert u["t4_unseen"] == int(((df["flags"] & 0x80) > 0).sum())
    assert sum(u["records_by_status"].values()) == u["records_written"] + u["records_not_stored"]
    # the COUNTERS snapshots count up to the END: counters never go back,
    # and each snapshot's records were written before it (the reader checks
    # where they are)
    rf = RecordFile(str(path))
    for a, b in zip(rf.snapshots, rf.snapshots[1:] + [end]):
        assert all(b["counters"][k] >= v for k, v in a["counters"].items()), (a, b)
        assert b["userspace"]["records_written"] >= a["userspace"]["records_written"]
    return df


def stopped(rec):
    """stop the recorder (SIGINT, exit 0), check its file, and check that its
    summary says what the file's END says; returns (df, counters)"""
    text = rec.stop()
    df = checked(rec.out)
    end = df.attrs["trailer"]
    by, cnt = summary(text)
    assert by == end["userspace"]["records_by_status"], (text, end)
    assert cnt == end["counters"], (text, end)
    assert f": {len(df)} records in" in text, text
    return df, end["counters"]
