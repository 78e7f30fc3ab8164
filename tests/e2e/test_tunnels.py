"""Packets that change shape on the way, on the host's kernel: VXLAN out
(named as the tunnel or as its underlay) and in (by its underlay), and a tun
device (no MAC header) as the input and as the output. Each run sends N
datagrams from sender1; the receiver's count (or the tun reader's) is the
truth, and the records by status, the router's counters and the tunnel
counters must add up to it exactly. GRE, IPIP and WireGuard are in
tests/routers (QEMU). Real namespaces, real BPF; own prefix (hst-tn-)."""
import ipaddress
import re
import struct
import subprocess
import sys

import pytest

import livebed
from testlib import left_router, sh, wait_for
from livebed import ipv4_only, links, ns, recorder, send_udp, stopped, tb, wait_out  # noqa: F401

N = 300
P = "hst-tn-"
VX_RX_MAC = "02:00:00:05:00:02"   # the receiver's vx0
VX_R_MAC = "02:00:00:06:00:01"    # the router's vx1


@pytest.fixture(autouse=True)
def prefix(monkeypatch):
    monkeypatch.setattr(livebed, "P", P)


def run(role, *cmds):
    for c in cmds:
        ns(role, *c.split())


def quiet():
    """only the test's packets cross the router (test_iface_stack.quiet)"""
    ipv4_only()
    run("router", "sysctl -qw net.ipv6.conf.default.disable_ipv6=1",
        "sysctl -qw net.ipv4.igmp_link_local_mcast_reports=0")


def ifindex(name, role="router"):
    return int(ns(role, "cat", f"/sys/class/net/{name}/ifindex").stdout)


def udp_in(role="receiver"):
    """the UDP datagrams role's kernel took in (to a port open or not; a
    tunnel's outer ones too)"""
    lines = [l.split() for l in ns(role, "cat", "/proc/net/snmp").stdout.splitlines()
             if l.startswith("Udp:")]
    udp = dict(zip(lines[0][1:], map(int, lines[1][1:])))
    return udp["InDatagrams"] + udp["NoPorts"] + udp["InErrors"]


def vxlan_out():
    """10.5.0.0/24 behind vx0, a VXLAN from the router to the receiver over r-rx"""
    run("router", "ip link add vx0 type vxlan id 5 remote 198.18.3.2 dstport 4789 dev r-rx",
        "ip addr add 10.5.0.1/24 dev vx0", "ip link set vx0 up",
        f"ip neigh replace 10.5.0.2 lladdr {VX_RX_MAC} dev vx0 nud permanent")
    run("receiver", f"ip link add vx0 address {VX_RX_MAC} type vxlan id 5 remote 198.18.3.1 "
        "dstport 4789 dev rx-eth0", "ip addr add 10.5.0.2/24 dev vx0", "ip link set vx0 up")


def vxlan_in(vni=6):
    """sender1 reaches the receiver through vx1, a VXLAN to the router over
    r-s1; the sender's end of it on vni (the router's is 6)"""
    run("router", f"ip link add vx1 address {VX_R_MAC} type vxlan id 6 remote 198.18.1.2 "
        "dstport 4789 dev r-s1", "ip addr add 10.6.0.1/24 dev vx1", "ip link set vx1 up")
    run("sender1", f"ip link add vx1 type vxlan id {vni} remote 198.18.1.1 dstport 4789 "
        "dev s1-eth0",
        "ip addr add 10.6.0.2/24 dev vx1", "ip link set vx1 up",
        f"ip neigh replace 10.6.0.1 lladdr {VX_R_MAC} dev vx1 nud permanent",
        "ip route add 198.18.3.2/32 via 10.6.0.1 dev vx1")
    run("router", "ip neigh replace 10.6.0.2 lladdr "
        + ns("sender1", "cat", "/sys/class/net/vx1/address").stdout.strip()
        + " dev vx1 nud permanent")


def exact(df, c, got, out_if):
    """every datagram that arrived has its one complete record, out of
    out_if; no record but theirs, no loss counted"""
    done = df[df.status == "complete"]
    assert got == N and int(left_router(df).sum()) == N, (got, {k: v for k, v in c.items() if v})
    assert len(df) == N and c["complete"] == len(done), (df.status.value_counts(), c)
    assert (done.out_ifindex == ifindex(out_if)).all(), done.out_ifindex.value_counts()
    assert c["evicted"] == c["stale"] == c["rb_fail"] == c["out_nometa"] == 0, c
    assert c["in_nometa"] == 0, c
    return done


def vxlan_sent(rec):
    """N datagrams through vx0; (records, counters, what the receiver's vx0
    took in: its UDP count holds the outer datagrams too)"""
    before, rx = links(), links("receiver")["vx0"]["rx"]["packets"]
    send_udp(N, dst="10.5.0.2", port=5001)
    wait_out(before, N)
    df, c = stopped(rec)
    return df, c, links("receiver")["vx0"]["rx"]["packets"] - rx


# both named: the record names the underlay, where t4 is taken
@pytest.mark.parametrize("named,out_if", [("vx0", "vx0"), ("r-rx", "r-rx"),
                                          ("vx0,r-rx", "r-rx")])
def test_vxlan_out(tb, recorder, named, out_if):
    tb.up()
    quiet()
    vxlan_out()
    rec = recorder(ins="r-s1", outs=named)
    df, c, got = vxlan_sent(rec)
    done = exact(df, c, got, out_if)
    # t4 at r-rx's hand-over after the encapsulation; tun_out at vx0's
    assert (done.path == "tunnel").all(), done.path.value_counts()
    assert (done.tun_out_ns > 0).all() and (done.tun_out_ns < done.t4 - done.t1).all()
    assert (done.t3 - done.t1 < done.tun_out_ns).all()
    assert c["tun_out"] == c["tun_outer"] == N, c
    assert "followed through the encapsulation" in rec.summary, rec.summary


def test_vxlan_in_by_its_underlay(tb, recorder):
    tb.up()
    quiet()
    vxlan_in()
    rec = recorder(ins="r-s1", outs="r-rx")
    before, rx = links(), udp_in()
    send_udp(N, port=5001)
    wait_out(before, N)
    df, c = stopped(rec)
    done = exact(df, c, udp_in() - rx, "r-rx")
    # t1 at the outer packet's arrival on r-s1, tun_in at the inner's on
    # vx1; the record holds the inner packet's addresses
    assert (done.path == "tunnel").all(), done.path.value_counts()
    assert (done.in_ifindex == ifindex("r-s1")).all()
    assert (done.tun_in_ns > 0).all() and (done.t2 - done.t1 > done.tun_in_ns).all()
    assert (done.src.astype(str) == "10.6.0.2").all(), done.src.value_counts()
    assert c["tun_follow"] == c["tun_in"] == N and c["local"] == 0, c
    hooks = {h["stage"]: h["hook"] for h in df.attrs["header"]["hooks"]}
    assert hooks["tun_in"] == "tp_btf/netif_receive_skb", hooks
    d = sh(sys.executable, "-m", "hopscope", "describe", rec.out).stdout
    assert re.search(r"^problems +none$", d, re.M), d


def test_vxlan_in_dropped_by_the_tunnel(tb, recorder):
    tb.up()
    quiet()
    vxlan_in(vni=66)
    rec = recorder(ins="r-s1", outs="r-rx")
    rx, outer = links("receiver")["rx-eth0"]["rx"]["packets"], udp_in("router")
    send_udp(N, port=5001)
    # every outer packet reached VXLAN's socket, where its receive ends
    assert wait_for(lambda: udp_in("router") - outer >= N), udp_in("router") - outer
    rx = links("receiver")["rx-eth0"]["rx"]["packets"] - rx
    df, c = stopped(rec)
    # VXLAN drops each outer packet of a VNI it has no device for: the drop
    # stage finds the packet LOCAL_IN followed, by its skb
    assert rx == 0 and len(df) == N and (df.status == "dropped").all(), df.status.value_counts()
    assert c["tun_follow"] == c["dropped"] == N and c["tun_in"] == c["local"] == 0, c
    assert (df.tun_in_ns == 0).all() and (df.src.astype(str) == "198.18.1.2").all()


# A tun device's other end: writes N UDP datagrams (src 10.7.0.2 -> dst) to
# it, or reads what the router sends to it until N arrived or 30 s passed
# and prints their number. argv: name write|read n [dst]
TUN = r"""
import fcntl, os, select, struct, sys, time
name, how, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
fd = os.open("/dev/net/tun", os.O_RDWR)
fcntl.ioctl(fd, 0x400454ca, struct.pack("16sH", name.encode(), 0x0001 | 0x1000))
if how == "read":
    got, end = 0, time.monotonic() + 30
    while got < n and select.select([fd], [], [], max(0, end - time.monotonic()))[0]:
        p = os.read(fd, 2048)
        got += p[0] >> 4 == 4 and p[9] == 17
    print(got)
    sys.exit()
def csum(b):
    s = sum(struct.unpack(f"!{len(b) // 2}H", b))
    s = (s & 0xffff) + (s >> 16)
    return ~((s & 0xffff) + (s >> 16)) & 0xffff
src, dst = bytes([10, 7, 0, 2]), bytes(map(int, sys.argv[4].split(".")))
for i in range(n):
    udp = struct.pack("!HHHH", 40000, 5001, 8 + 16, 0) + i.to_bytes(4, "big") * 4
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), i & 0xffff, 0, 64, 17, 0, src, dst)
    os.write(fd, ip[:10] + struct.pack("!H", csum(ip)) + ip[12:] + udp)
    time.sleep(0.0005)
"""


def tun(name, how, n, dst=""):
    return subprocess.Popen(["ip", "netns", "exec", P + "router", sys.executable, "-c", TUN,
                             name, how, str(n), dst], stdout=subprocess.PIPE, text=True)


def test_tun_in(tb, recorder):
    tb.up()
    quiet()
    run("router", "ip tuntap add dev tun0 mode tun", "ip addr add 10.7.0.1/24 dev tun0",
        "ip link set tun0 up")
    rec = recorder(ins="tun0", outs="r-rx")
    before, rx = links(), udp_in()
    w = tun("tun0", "write", N, "198.18.3.2")
    assert w.wait(timeout=60) == 0
    wait_out(before, N)
    df, c = stopped(rec)
    done = exact(df, c, udp_in() - rx, "r-rx")
    # XDP read each frame from its IP header (no MAC header on tun0)
    assert c["xdp_l3"] == c["xdp_pkts"] and c["xdp_nonip"] == 0, c
    assert (done.path == "stack").all() and (done.src.astype(str) == "10.7.0.2").all()
    assert (done.sport == 40000).all() and (done.dport == 5001).all()


def test_tun_out(tb, recorder):
    tb.up()
    quiet()
    run("router", "ip tuntap add dev tun1 mode tun", "ip link set tun1 up",
        "ip route add 10.8.0.0/24 dev tun1")
    r = tun("tun1", "read", N)
    try:
        rec = recorder(ins="r-s1", outs="tun1")
        send_udp(N, dst="10.8.0.2", port=5001)
        got = int(r.communicate(timeout=30)[0])
    finally:
        r.kill()
    df, c = stopped(rec)
    done = exact(df, c, got, "tun1")
    assert (done.path == "stack").all(), done.path.value_counts()
    assert ipaddress.ip_address("10.8.0.2") in set(map(ipaddress.ip_address,
                                                       done.dst.astype(str)))
