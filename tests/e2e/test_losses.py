"""The eBPF backend's loss paths triggered for real: a ring buffer that fills
while the recorder cannot drain it, and two identical frames waiting in the
input backlog together (one packet key twice between netif_rx and XDP).
Every packet must still be accounted for, checked against the router's
interface counters as ip reads them."""
import os
import signal
import sys

from testlib import left_router
from hopscope.record.header import RING_SLACK
from livebed import (ipv4_only, delta, links, ns, recorder, send_udp, stopped,  # noqa: F401
                     tb, wait_out)

RING = 1 << 20          # --ring 1: shared by the CPUs' rings
RECORD = 160
SLACK = RING_SLACK      # places a ring keeps free (include/hopscope.h)


def phase(n, sport):
    """n datagrams to port 7001 from sport, as fast as Python sends (the
    backlog may refuse some), once the router has passed every one the
    input took (r-s1) to r-rx; returns how many it took"""
    before = links()
    send_udp(n, port=7001, sport=sport, flood=True)
    # the sender is done: every frame r-s1 took is in the backlog
    took = delta(links(), before, "r-s1", "rx")
    wait_out(before, took)
    return took


def test_ring_full_every_packet_accounted(tb, recorder):
    tb.up()
    ipv4_only()
    rec = recorder("--ring", "1")
    before, sent_before = links(), links("sender1")
    took = {41001: phase(2000, 41001)}
    # the recorder cannot drain: the 1 MiB shared by the CPUs' rings fills
    # (Python sends faster than the router's CPU takes: the backlog refuses
    # part, so send until the router took twice what the rings hold)
    os.kill(rec.p.pid, signal.SIGSTOP)
    sent, took[41002] = 4000, 0
    try:
        while took[41002] < 2 * RING // RECORD:
            took[41002] += phase(5000, 41002)
            sent += 5000
    finally:
        os.kill(rec.p.pid, signal.SIGCONT)
    took[41003] = phase(2000, 41003)
    df, c = stopped(rec)
    after, sent_after = links(), links("sender1")
    print(c, took)
    assert c["rb_fail"] > 0 and c["rb_fail_complete"] == c["rb_fail"], c
    # the ring held what it could while nobody read it, the rest is counted;
    # before and after, every packet is recorded
    n = df.groupby("sport").size()
    assert n[41001] == took[41001] and n[41003] == took[41003], (n, took)
    info = df.attrs["header"]["backend_info"]
    ncpu, records = info["possible_cpus"], info["ring_records"]
    # per CPU the greatest power of 2 records in its share of the 1 MiB
    per_cpu = records // ncpu
    assert per_cpu * RECORD <= RING // ncpu < 2 * per_cpu * RECORD, info
    # no CPU's ring held more than all but its slack; the forwarding CPU's
    # held that, less what of 41001 was still unread when the recorder stopped
    assert per_cpu - SLACK - took[41001] <= n[41002] <= ncpu * (per_cpu - SLACK), (n, c)
    assert n[41002] + c["rb_fail"] == took[41002], (n, c, took)
    assert (df.dport == 7001).all() and df.seq.is_unique

    # what ip counts, against what the tracer counts: XDP saw every frame the
    # inputs took (nothing but the test's packets crossed the router)
    rx = delta(after, before, "r-s1", "rx") + delta(after, before, "r-s2", "rx")
    assert rx == sum(took.values()), (rx, took)
    # the sender's other frames found the router's input backlog full
    # (netdev_max_backlog): refused by netif_rx, before any hook
    refused = delta(sent_after, sent_before, "s1-eth0", "tx", "dropped")
    assert rx + refused == sent, (rx, refused, sent)
    assert c["xdp_pkts"] == rx and c["xdp_nonip"] == 0 and c["local"] == 0, (rx, c)
    # each of them: a record in the file (complete, dropped, evicted or still
    # inside at the stop) or lost in the full ring
    assert len(df) + c["rb_fail"] == rx, (len(df), rx, c)
    # what r-rx transmitted (or its peer refused) is what reached t4
    out = delta(after, before, "r-rx", "tx") + delta(after, before, "r-rx", "tx", "dropped")
    assert c["out_pkts"] + c["out_nometa"] == out, (out, c)
    assert (df.status == "complete").sum() + c["rb_fail_complete"] == c["out_pkts"], c
    st = df.status.value_counts()
    assert st["complete"] + st["dropped"] + st["inflight"] + c["rb_fail"] == rx, (st, c)


# AF_PACKET from sender1: the same frame twice, back to back (one transmit
# each, on the sender's CPU); the router's RPS takes both to its own CPU's
# backlog, where both can wait at once
def test_default_rings_give_every_cpu_its_own_records(tb, recorder):
    """Without --ring each possible CPU gets 65536 records, however many
    there are (32 MiB at least, 1 GiB at most): a router with more CPUs
    gets rings that last as long, not a fixed total cut thinner."""
    tb.up()
    rec = recorder()
    df, _ = stopped(rec)
    header = df.attrs["header"]
    info = header["backend_info"]
    ncpu = info["possible_cpus"]
    want = min(max(ncpu * 65536 * RECORD, 32 << 20), 1 << 30)
    assert header["ringbuf_bytes"] == want, header
    per_cpu = info["ring_records"] // ncpu
    assert per_cpu & (per_cpu - 1) == 0 and per_cpu * RECORD <= want // ncpu < 2 * per_cpu * RECORD
    if ncpu <= (1 << 30) // (65536 * RECORD):
        assert per_cpu == 65536, info


TWINS = r"""
import socket, struct, sys
n, port = int(sys.argv[1]), int(sys.argv[2])
def csum(b):
    s = sum(struct.unpack("!10H", b))
    s = (s & 0xffff) + (s >> 16)
    return ~((s & 0xffff) + (s >> 16)) & 0xffff
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(("s1-eth0", 0))
eth = bytes.fromhex("0200c6120101" "0200c6120102" "0800")
for i in range(n):
    payload = i.to_bytes(4, "big") * 8
    udp = struct.pack("!HHHH", 40000, port, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i, 0, 64, 17, 0,
                     socket.inet_aton("198.18.1.2"), socket.inet_aton("198.18.3.2"))
    ip = ip[:10] + struct.pack("!H", csum(ip)) + ip[12:]
    frame = eth + ip + udp
    s.send(frame)
    s.send(frame)
"""


def test_twins_in_the_backlog_get_no_t0(tb, recorder):
    tb.up()
    ipv4_only()
    rec = recorder("--stages", "t0")
    before = links()
    pairs = 300
    ns("sender1", "taskset", "-c", "0", sys.executable, "-c", TWINS, str(pairs), "7002")
    wait_out(before, 2 * pairs)
    df, c = stopped(rec)
    d = df[(df.proto == 17) & (df.dport == 7002)]
    print(c, d.groupby("key").size().value_counts())
    # both frames of every pair forwarded and recorded, once each
    assert len(d) == 2 * pairs and d.seq.is_unique and left_router(d).all()
    assert (d.groupby("key").size() == 2).all()
    flagged = (d["flags"] & 0x20) > 0
    assert c["t0_collision"] > 0 and flagged.any(), c
    # a t0 is the packet's own or none: a flagged record has none, and no
    # two twins share one
    assert (d.t0[flagged] == 0).all()
    assert ((d.t0 == 0) | (d.t0 <= d.t1)).all()
    both = d[d.t0 > 0].groupby("key").t0
    assert (both.nunique() == both.size()).all()
    # a pair that collided: neither twin has a t0, both are flagged
    hit = d[flagged].key.unique()
    twins = d[d.key.isin(hit)]
    assert (twins.t0 == 0).all() and ((twins["flags"] & 0x20) > 0).all(), twins
    # the counter counts the packets without a t0 that way (the loss table's row)
    assert c["t0_collision"] == flagged.sum() == 2 * len(hit), (c, flagged.sum())
