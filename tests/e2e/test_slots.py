"""The eBPF stages' bookkeeping under stress, end to end: packet copies freed
on the router (tcpdump, a packet socket) are not the packet's drop, eviction
under a long output queue records each packet once, and t0's arrivals map
survives packets dropped before XDP. Own namespace prefix, so these run beside
the other end-to-end tests."""
import json
import re
import signal
import subprocess
import sys
import time

import pytest

import hopscope

from testlib import HOPSCOPE, TESTBED, Recorder, sh, namespaced_testbed, wait_for

P = "hst-sl-"
RX4 = "198.18.3.2"


@pytest.fixture
def tb():
    yield from namespaced_testbed(P)


def summary(text):
    """{name: count} of the summary's records and counters lines"""
    out = {}
    for m in re.finditer(r"([a-z_0-9]+) (\d+)", text.split("records in", 1)[-1]):
        out.setdefault(m.group(1), int(m.group(2)))
    return out


def udp(path, port):
    """the test's own datagrams (the router also drops multicast it is not
    listening to, e.g. MLD reports: real drops, not the test's)"""
    df = hopscope.load(str(path))
    return df[(df.proto == 17) & (df.dport == port)], df.attrs["counters"]["counters"]


def drained(dev="r-rx"):
    """the router's output qdisc holds nothing: every packet it took has been
    handed to the driver (t4), however slowly a loaded machine let it go"""
    out = json.loads(sh("ip", "netns", "exec", P + "router", "tc", "-s", "-j", "qdisc",
                        "show", "dev", dev).stdout)
    return all(q.get("qlen", 0) == 0 and q.get("backlog", 0) == 0 for q in out)


def send_udp(n, size, dst=RX4, port=9, gap=0.0):
    code = ("import socket,time,sys\n"
            "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
            "s.setsockopt(socket.SOL_SOCKET,socket.SO_SNDBUF,1<<24)\n"
            f"for i in range({n}):\n"
            f"    s.sendto(i.to_bytes(4,'big')*({size}//4),('{dst}',{port}))\n"
            f"    {'time.sleep(%r)' % gap if gap else 'pass'}\n")
    return subprocess.Popen(["ip", "netns", "exec", P + "sender1", sys.executable, "-c", code])


# a packet socket on the router's input that never reads: its queue holds a
# clone of every packet (sharing the packet's head, so its metadata); when the
# socket closes the clones are freed with kfree_skb
QUIET_SOCKET = """
import socket, sys, time
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 24)
s.bind(("r-s1", 0))
print("ready", flush=True)
time.sleep(600)
"""


def test_copies_freed_on_the_router_are_not_drops(tb, tmp_path):
    # 300 packets of 1000 B wait up to 1.3 s in a 2 Mbit/s TBF on the output
    tb.up("--mode", "inline", "--shape", "tbf:2mbit:600kb")
    tb.spawn("router", "tcpdump", "-i", "r-s1", "-n", "-w", "/dev/null")
    sock = subprocess.Popen(["ip", "netns", "exec", P + "router", sys.executable, "-c",
                             QUIET_SOCKET], stdout=subprocess.PIPE, text=True)
    tb.procs.append(sock)
    assert sock.stdout.readline() == "ready\n"
    rec = Recorder(tmp_path / "clones.hsr", "-q", ins="r-s1", outs="r-rx", prefix=P)
    snd = send_udp(300, 1000)
    assert snd.wait(timeout=60) == 0
    time.sleep(0.2)
    # the originals are still queued: their clones go now
    sock.send_signal(signal.SIGKILL)
    sock.wait()
    assert wait_for(drained, timeout=60)
    print(rec.stop())
    d, c = udp(rec.out, 9)
    # every packet forwarded, once, complete: no copy's free taken for its drop
    assert len(d) == 300 and d.seq.is_unique, d.status.value_counts()
    st = d.status.value_counts()
    assert st["dropped"] == 0, st
    # complete, but for a packet whose t4 found neither its metadata nor its
    # by_skb entry (0-2 of 300 in most runs on a busy machine: a by_skb
    # corner when the tap closes mid-queue, cause not found). Such a packet
    # is in flight at the stop, its t4 counted in out_nometa (or in stale,
    # when an older packet's by_skb entry holds the same skb address: 1 of
    # 300 in a CI run, stale 15; or uncounted, where the kernel skipped the
    # t4 probe: docs/troubleshooting.md), and flagged t4_unseen unless no later
    # packet of its flow left to tell
    assert st["complete"] >= 297, st
    rest = d[d.status != "complete"]
    unseen = (rest["flags"].to_numpy() & 0x80) != 0     # t4_unseen; df.flags is pandas'
    last = rest.t1.to_numpy() >= d[d.status == "complete"].t1.max()
    assert (rest.status == "inflight").all() and (unseen | last).all(), rest
    assert c["race"] == 0 and c["evicted"] == 0, c


def test_eviction_mid_flight_records_each_packet_once(tb, tmp_path):
    # 64 slots per CPU, 300 packets queued behind a slow TBF: most are
    # evicted while they wait, then reach t4 (stale) -- each must be recorded
    # exactly once, as evicted or complete, and the counters must agree
    tb.up("--mode", "inline", "--shape", "tbf:2mbit:600kb")
    rec = Recorder(tmp_path / "evict.hsr", "-q", "--slots", "64", ins="r-s1", outs="r-rx",
                   prefix=P)
    snd = send_udp(300, 1000)
    assert snd.wait(timeout=60) == 0
    assert wait_for(drained, timeout=60)
    print(rec.stop())
    d, c = udp(rec.out, 9)
    st = d.status.value_counts()
    # one record per packet: never both evicted and complete
    assert len(d) == 300 and d.seq.is_unique, st
    # inflight only where the kernel skipped the t4 probe (docs/troubleshooting.md):
    # flagged t4_unseen, a packet or two (1 of 300 once, under other load)
    left = d[d.status == "inflight"]
    assert len(left) <= 3 and ((left["flags"].to_numpy() & 0x80) != 0).all(), st
    assert set(st[st > 0].index) <= {"complete", "evicted", "inflight"}, st
    assert st["evicted"] >= 100, st
    # the counters count what the records say, the test's and any other
    # packet's (an MLD report, multicast the router keeps, also waits in a slot)
    every = hopscope.load(str(rec.out)).status.value_counts()
    assert c["evicted"] == every["evicted"] and c["complete"] == every["complete"], (c, every)
    # an evicted packet's own t4 found its slot taken: stale, not a second record
    # (measured: 0-1 of ~236 evicted packets' t4 not counted stale, 3 runs of 6
    # shielded, cause not found; the record count above is exact regardless)
    assert c["stale"] >= st["evicted"] - 5, c
    # a complete record has all four instants, in order
    ok = d[d.status == "complete"]
    assert ((ok.t1 <= ok.t2) & (ok.t2 <= ok.t3) & (ok.t3 <= ok.t4)).all()


def test_t0_arrivals_cannot_fill_up(tb, tmp_path):
    """t0 waits under the packet key until XDP takes it; a packet dropped
    between netif_rx and XDP (a full input backlog) never does. In a plain
    hash those leftovers filled the map after 65536 such drops, and every
    later t0 was lost (t0_map_full); an LRU hash lets them go. The backlog
    could not be made to overflow here (softnet's drop column stayed 0 under
    every flood the testbed could send), so this checks the map's kind, and that
    t0 works through it."""
    tb.up("--mode", "rps")
    rec = Recorder(tmp_path / "t0.hsr", "-q", "--stages", "t0", ins="r-s1", outs="r-rx",
                   prefix=P)
    maps = json.loads(sh("bpftool", "-j", "map", "show").stdout)
    kinds = {m["type"] for m in maps if m.get("name") == "arrivals"}
    assert kinds == {"lru_hash"}, kinds
    assert send_udp(500, 100, port=7, gap=0.001).wait(timeout=60) == 0
    time.sleep(0.5)
    print(rec.stop())
    d, c = udp(rec.out, 7)
    assert c["t0_map_full"] == 0, c
    # 1 ms apart, no two in the backlog at once: every one has its t0
    assert len(d) == 500 and (d.t0 > 0).all(), (d.t0 > 0).mean()


def test_full_disk_the_end_chunk_counts_what_was_not_stored(tb, tmp_path):
    """the recorder's file fills its disk: exit 1, the file whole up to its
    last chunk and closed with an END chunk whose counts add up: records in
    the file + records not stored = records received (the summary's)"""
    tb.up("--mode", "inline")
    disk = tmp_path / "disk"
    disk.mkdir()
    sh("mount", "-t", "tmpfs", "-o", "size=1m", "hst-sl-disk", str(disk))
    try:
        rec = Recorder(disk / "full.hsr", "-q", ins="r-s1", outs="r-rx", prefix=P)
        # 5000 records a second, until the disk is full and the recorder
        # stops at the error: how many fit depends on how well the COLUMNS
        # chunks pack them (10001 once, all of 15000 another time)
        for _ in range(10):
            assert send_udp(5000, 16, port=11).wait(timeout=120) == 0
            time.sleep(1.2)
            if rec.p.poll() is not None:
                break
        else:
            rec.p.send_signal(signal.SIGINT)
        _, err = rec.p.communicate(timeout=60)
        print(err)
        assert rec.p.returncode == 1, err
        assert "No space left on device" in err, err
        received = sum(summary(err.split("records   ", 1)[1].split("\n", 1)[0]).values())
        df = hopscope.load(str(disk / "full.hsr"))
        u = df.attrs["trailer"]["userspace"]
        assert u["records_not_stored"] > 0, u
        assert u["records_written"] == len(df), (u, len(df))
        assert len(df) >= 5000, (u, len(df))
        assert len(df) + u["records_not_stored"] == received >= 10000, (u, len(df), received)
    finally:
        sh("umount", str(disk), check=False)
