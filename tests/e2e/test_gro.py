"""--gro keep: GRO merges the input's TCP segments as it does untraced.
Native XDP on the router's input (a veth, whose NAPI then runs GRO, turned
on here) batches the segments of a flow that arrive back to back under one
slot and one seq, so their metadata is the same and GRO merges them; a
merged packet has one record whose segs counts its wire packets, a batch
GRO merged in parts has one record per part (gro_split), each with its own
first packet's t1. Every wire packet is in exactly one record, against the
XDP count and the router's interface counters. The output has TSO off, so
a merged packet leaves as GSO segments cut in software: its record says how
many (out_segs), and every segment is in a record or in out_segs. --gro off
keeps one record per wire packet, as before, and the router handles every
wire packet as its own skb."""
import subprocess
import time

import numpy as np
import pytest

from testlib import left_router, wait_for
from livebed import P, RX4, ipv4_only, links, ns, recorder, stopped, tb  # noqa: F401

BYTES = "2M"


@pytest.fixture
def gro_in(tb):
    tb.up()
    ipv4_only()
    ns("router", "ethtool", "-K", "r-s1", "gro", "on")
    # software GSO on the way out: a merged packet is cut into its segments
    ns("router", "ethtool", "-K", "r-rx", "tso", "off")


def forwarded_skbs():
    """the router's ForwDatagrams: skbs it forwarded either way, a merged one once"""
    lines = ns("router", "cat", "/proc/net/snmp").stdout.splitlines()
    ip = [l.split() for l in lines if l.startswith("Ip:")]
    return int(ip[1][ip[0].index("ForwDatagrams")])


def closed(name):
    """no TCP connection of name's is open or closing: the last packet of
    each has crossed the router (TIME-WAIT comes after it)"""
    return not ns(name, "ss", "-Htn", "state", "connected", "exclude", "time-wait").stdout.strip()


def transfer(recorder, gro):
    """a TCP transfer from sender1 through the router, recorded with --gro;
    returns (df, counters, wire packets in at r-s1, out at r-rx, skbs forwarded)"""
    rec = recorder("--xdp-mode", "native", "--gro", gro, ins="r-s1")
    before, fwd = links(), forwarded_skbs()
    server = subprocess.Popen(["ip", "netns", "exec", P + "receiver", "iperf3", "-s", "-1"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)
        r = ns("sender1", "iperf3", "-c", RX4, "-n", BYTES, "-M", "1400", check=False)
        assert r.returncode == 0, r.stdout + r.stderr
        server.wait(timeout=30)
        # the last ACKs may still be on their way: count once they are out
        assert wait_for(lambda: closed("sender1") and closed("receiver"), timeout=30)
    finally:
        server.kill()
    after = links()
    wire_in = after["r-s1"]["rx"]["packets"] - before["r-s1"]["rx"]["packets"]
    wire_out = after["r-rx"]["tx"]["packets"] - before["r-rx"]["tx"]["packets"]
    # less the receiver's ACKs, forwarded the other way one skb each (r-rx
    # has no GRO)
    skbs = forwarded_skbs() - fwd - (after["r-rx"]["rx"]["packets"] - before["r-rx"]["rx"]["packets"])
    df, c = stopped(rec)
    iface = next(i for i in df.attrs["header"]["interfaces"] if i["name"] == "r-s1")
    assert iface["gro"] == gro, iface
    return df, c, wire_in, wire_out, skbs


def test_gro_keep_merges_and_every_segment_is_in_one_record(recorder, gro_in):
    df, c, wire_in, wire_out, skbs = transfer(recorder, "keep")
    assert left_router(df).all(), df.status.value_counts()
    # GRO merged: fewer records (and skbs) than wire packets, each wire
    # packet in exactly one record's segs
    assert (df.segs > 1).any() and len(df) < wire_in, (len(df), wire_in)
    assert int(df.segs.sum()) == c["xdp_pkts"] == wire_in, (df.segs.sum(), c, wire_in)
    assert c["gro_joined"] == wire_in - len(df) + c["gro_split"], c
    assert c["gro_lost"] == 0, c
    assert skbs == len(df), (skbs, len(df), c, df.segs.value_counts().to_dict())
    # each record's t1 is its own first packet's: before its t2, never 0
    done = df[df.status == "complete"]
    assert (done.t1 > 0).all() and (done.t2 > done.t1).all() and (done.t4 > done.t3).all()
    # what left r-rx: each segment in a record (its first) or in out_segs;
    # a transmit t4 did not see (a packet inside, or one the kernel skipped
    # the probe for) is counted by the recorder as unseen, never lost
    seen = c["out_pkts"] + c["out_segs"] + c["out_nometa"]
    tx = df.attrs["trailer"]["outputs_tx"]
    # the driver sent or dropped what it was handed (a busy receiver's
    # backlog full: veth drops after t4, and TCP sends the packet again)
    handed = tx["tx_packets"] + tx["tx_dropped"]
    assert wire_out == tx["tx_packets"] and wire_in == handed, (wire_out, wire_in, tx)
    assert tx["seen_at_t4"] == seen and seen + tx["unseen"] == handed, (seen, tx, c)
    assert c["out_nometa"] == 0, c
    cut = df[(df.status == "complete") & (df.out_segs > 1)]
    assert len(cut) and c["left_in_pieces"] == len(cut), (len(cut), c)
    assert (cut.out_segs == cut.segs).all(), cut[["segs", "out_segs"]]
    # the records' later segments, less those t4 did not see, plus those of
    # packets still inside
    inside = int(df.segs[df.status != "complete"].sum())
    done_segs = int((cut.out_segs - 1).sum())
    assert done_segs - tx["unseen"] <= c["out_segs"] <= done_segs + inside, \
        (done_segs, inside, tx, c)


def test_gro_off_is_one_record_per_wire_packet(recorder, gro_in):
    df, c, wire_in, wire_out, skbs = transfer(recorder, "off")
    assert left_router(df).all(), df.status.value_counts()
    assert (df.segs == 1).all() and len(df) == wire_in == c["xdp_pkts"], (len(df), wire_in)
    assert c["gro_joined"] == c["gro_split"] == 0, c
    # the router saw every wire packet as its own skb
    assert skbs == wire_in and wire_out == wire_in, (skbs, wire_in, wire_out)


def test_gro_keep_needs_native_xdp(recorder, gro_in):
    """generic XDP runs after GRO: --gro keep changes nothing there, and the
    header says why"""
    rec = recorder("--xdp-mode", "generic", "--gro", "keep", ins="r-s1")
    df, _ = stopped(rec)
    iface = next(i for i in df.attrs["header"]["interfaces"] if i["name"] == "r-s1")
    assert iface["gro"] == "off" and "generic XDP runs after GRO" in iface["gro_why"], iface
