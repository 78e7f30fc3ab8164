"""Packets that leave in pieces: the router's output MTU (1000) is smaller
than the datagrams (1400 B, DF clear), so the kernel forwards each as two IP
fragments, new skbs without the metadata t4 finds a packet by. Each such
packet is one complete record with out_segs 2, t4 at its first fragment's
hand-over and t4_span_ns to its last; small datagrams sent between them
stay whole (out_segs 1). The output's own transmit counter is the truth:
every fragment is in a record (the first) or in out_segs (the others), none
is out_nometa, and no packet that left is reported inside or lost.
Software GSO at the output needs a merged packet, which the eBPF backend's
inputs never make (GRO off): the kernel module follows those (tests/kmod)."""
import pytest

from testlib import HOPSCOPE, left_router, sh
from livebed import ipv4_only, links, ns, recorder, send_udp, stopped, tb, wait_out  # noqa: F401

N = 300
BIG, SMALL = 1400, 64
MTU = 1000


@pytest.fixture
def small_out(tb):
    tb.up()
    ipv4_only()
    ns("router", "ip", "link", "set", "r-rx", "mtu", str(MTU))
    yield
    ns("router", "ip", "link", "set", "r-rx", "mtu", "1500", check=False)


def test_fragments_are_one_record_each(recorder, small_out):
    rec = recorder()
    before = links()
    # the small datagrams pass t3 on CPUs whose last packet left in pieces,
    # and must never be tied to it
    # in rounds of 100: each is 200 fragments into the receiver's backlog,
    # which the sender's wait for room (send_udp) does not see coming
    for i in range(N // 100):
        send_udp(100, port=7101, size=BIG, sport=41001 + i, df=False)
    send_udp(N, port=7102, size=SMALL, sport=41100, role="sender2")
    wait_out(before, 3 * N)
    after = links()
    df, c = stopped(rec)
    big, small = (df[(df.proto == 17) & (df.dport == p)] for p in (7101, 7102))
    assert len(big) == len(small) == N, df.status.value_counts()
    # every packet left: complete, or (a t4 the kernel skipped) counted as such
    assert left_router(big).all() and left_router(small).all(), \
        (big.status.value_counts(), small.status.value_counts())
    done = big[big.status == "complete"]
    assert (done.out_segs == 2).all(), done.out_segs.value_counts()
    assert (done.path == "stack").all() and (done[["t1", "t2", "t3", "t4"]] > 0).all().all()
    assert (done.t4 > done.t3).all()
    # the second fragment is handed over at or after the first
    assert (done.t4_span_ns >= 0).all() and (done.t4_span_ns < 10**9).all()
    assert (small.out_segs == 1).all() and (small.t4_span_ns == 0).all()
    assert c["left_in_pieces"] == len(done), c
    # the output's transmits: one per small datagram, two per big one; each
    # in a record or in out_segs, none without its packet
    sent = after["r-rx"]["tx"]["packets"] - before["r-rx"]["tx"]["packets"]
    assert sent == 3 * N, sent
    assert c["out_nometa"] == 0, c
    big_unseen, small_unseen = N - len(done), N - int((small.status == "complete").sum())
    assert c["out_pkts"] == 2 * N - big_unseen - small_unseen, c
    assert c["out_segs"] == len(done), c
    # what t4 did not see: only what the kernel skipped its probe for (a
    # packet in pieces that lost one such t4 stays inside, unseen)
    tx = df.attrs["trailer"]["outputs_tx"]
    assert tx["tx_packets"] == sent and tx["seen_at_t4"] + tx["unseen"] == sent, tx
    assert small_unseen + big_unseen <= tx["unseen"] <= small_unseen + 2 * big_unseen, tx
    # describe says how many left in pieces
    text = sh(HOPSCOPE, "describe", str(rec.out)).stdout
    assert f"{len(done)} left in pieces" in text, text
