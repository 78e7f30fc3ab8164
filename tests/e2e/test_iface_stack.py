"""--in and --out checked against the router's interface stack, and what an
input has that takes packets off the IP stack path (the header's
fast_paths): a device named with the bridge above it refused, an output
named below or above a bridge stamped where the start line says, an ifb's
transmit passed by, bridge netfilter, a foreign tc program and nftables
flowtables detected. Real namespaces, real BPF; own prefix (hst-is-)."""
import json
import subprocess

import pytest

import hopscope
import livebed
from testlib import HOPSCOPE, Recorder, left_router, sh
from livebed import ipv4_only, links, ns, recorder, send_udp, stopped, tb, wait_out  # noqa: F401

N = 300
P = "hst-is-"
RX_MAC = "02:00:c6:12:03:02"  # the receiver's rx-eth0 (testbed.sh mac 3 2)
S1_MAC = "02:00:c6:12:01:02"  # sender1's s1-eth0


@pytest.fixture(autouse=True)
def prefix(monkeypatch):
    monkeypatch.setattr(livebed, "P", P)


def router(*cmds):
    for c in cmds:
        ns("router", *c.split())


def quiet():
    """IPv6 off in the testbed and on the devices made after, and no IGMP
    reports of link-local groups (a bridge with an address sends them): only
    the test's packets cross the router"""
    ipv4_only()
    router("sysctl -qw net.ipv6.conf.default.disable_ipv6=1",
           "sysctl -qw net.ipv4.igmp_link_local_mcast_reports=0")


def bridge_output():
    """the router's output to the receiver becomes bridge br-out with r-rx its
    one port; the route to the receiver goes to br-out"""
    router("ip link add br-out type bridge", "ip link set r-rx master br-out",
           "ip addr flush dev r-rx", "ip addr add 198.18.3.1/24 dev br-out",
           "ip link set br-out up",
           f"ip neigh replace 198.18.3.2 lladdr {RX_MAC} dev br-out nud permanent")


def bridge_input():
    """sender1's link into the router becomes a port of bridge br-in, which
    calls iptables for the IPv4 packets it hands up (br_netfilter), and not
    ip6tables"""
    router("ip link add br-in type bridge", "ip link set r-s1 master br-in",
           "ip addr flush dev r-s1", "ip addr add 198.18.1.1/24 dev br-in",
           "ip link set br-in up",
           f"ip neigh replace 198.18.1.2 lladdr {S1_MAC} dev br-in nud permanent",
           "sysctl -qw net.bridge.bridge-nf-call-iptables=1",
           "sysctl -qw net.bridge.bridge-nf-call-ip6tables=0")


def ifindex(name, role="router"):
    return json.loads(ns(role, "ip", "-j", "link", "show", "dev", name).stdout)[0]["ifindex"]


def iface(df, name):
    return next(i for i in df.attrs["header"]["interfaces"] if i["name"] == name)


def refused(tmp_path, ins, outs):
    out = tmp_path / "refused.hsr"
    r = sh(HOPSCOPE, "record", "--netns", P + "router", "--in", ins, "--out", outs,
           "-d", "1", "-o", str(out), check=False)
    assert r.returncode == 2 and "Traceback" not in r.stderr, (r.returncode, r.stderr)
    assert not out.exists()
    return r.stderr


def udp_in():
    """the UDP datagrams the receiver's kernel took in (to a port open or not)"""
    lines = [l.split() for l in ns("receiver", "cat", "/proc/net/snmp").stdout.splitlines()
             if l.startswith("Udp:")]
    udp = dict(zip(lines[0][1:], map(int, lines[1][1:])))
    return udp["InDatagrams"] + udp["NoPorts"] + udp["InErrors"]


def forwarded(rec, out_if):
    """N datagrams from sender1, stopped: (records, counters); the receiver
    got them all, and each has its complete record, out by out_if"""
    before, rx = links(), udp_in()
    send_udp(N, port=5001)
    wait_out(before, N)
    df, c = stopped(rec)
    got = udp_in() - rx
    done = df[df.status == "complete"]
    # left_router: where the kernel skipped t4's probe, flagged, not complete
    assert got == int(left_router(df).sum()) == N, (got, df.status.value_counts(), c)
    assert c["complete"] == len(done), (len(done), c)
    assert (done.out_ifindex == ifindex(out_if)).all(), done.out_ifindex.value_counts()
    return df, c


def test_a_device_and_its_upper_refused(tb, tmp_path):
    tb.up()
    router("ip link add br-in type bridge", "ip link set r-s1 master br-in",
           "ip link add br-out type bridge", "ip link set r-rx master br-out")
    err = refused(tmp_path, "r-s1,br-in", "r-rx")
    assert "--in names r-s1 and br-in, and r-s1 is a port of bridge br-in: each packet " \
        "would be stamped twice" in err, err
    err = refused(tmp_path, "br-in,r-s2,r-s1", "r-rx")  # either order
    assert "--in names r-s1 and br-in, and r-s1 is a port of bridge br-in" in err, err
    err = refused(tmp_path, "r-s1", "br-out,r-rx")
    assert "--out names r-rx and br-out, and r-rx is a port of bridge br-out: each packet " \
        "routed to br-out would be stamped twice" in err, err
    # stacked by its parent (IFLA_LINK), and two levels up
    router("ip link add link r-s2 name mv0 type macvlan",
           "ip link add link br-in name mv1 type macvlan")
    err = refused(tmp_path, "mv0,r-s2", "r-rx")
    assert "--in names r-s2 and mv0, and r-s2 is the parent of macvlan mv0" in err, err
    err = refused(tmp_path, "r-s1,mv1", "r-rx")
    assert "--in names r-s1 and mv1, and r-s1 is a port of bridge br-in, which is the " \
        "parent of macvlan mv1" in err, err


def test_output_a_bridge_port(tb, recorder):
    tb.up()
    quiet()
    bridge_output()
    rec = recorder(ins="r-s1", outs="r-rx")
    df, c = forwarded(rec, "r-rx")
    assert len(df) == N, df.status.value_counts()
    # br-out's start_xmit passed by, once per packet; t4 at r-rx's
    assert c["out_pass"] == N and c["other_out"] == 0, c
    h = df.attrs["header"]
    assert h["pass_ifaces"] == ["br-out"], h["pass_ifaces"]
    rx = iface(df, "r-rx")
    assert rx["master"] == "br-out" and rx["upper"] == ["br-out"] and rx["lower"] == [], rx
    assert iface(df, "r-s1")["fast_paths"] == [], iface(df, "r-s1")
    assert "r-rx is a port of bridge br-out: packets routed to br-out are stamped at " \
        "r-rx's hand-over (after br-out and r-rx's qdisc)" in rec.summary, rec.summary


def test_output_the_bridge(tb, recorder):
    tb.up()
    quiet()
    bridge_output()
    rec = recorder(ins="r-s1", outs="br-out")
    df, c = forwarded(rec, "br-out")
    assert len(df) == N, df.status.value_counts()
    # r-rx's start_xmit is another output's: the packet's record is gone by then
    assert c["out_pass"] == 0 and c["other_out"] == 0, c
    assert df.attrs["header"]["pass_ifaces"] == []
    br = iface(df, "br-out")
    assert br["master"] is None and br["lower"] == ["r-rx"] and br["upper"] == [], br
    assert "br-out is a bridge over r-rx: t4 is the hand-over to br-out, before the qdisc " \
        "of r-rx; name r-rx in --out instead to stamp after it" in rec.summary, rec.summary


def test_tunnel_and_its_underlay(tb, recorder):
    tb.up()
    # no dev: its underlay is where the route to its remote goes, r-rx
    router("ip link add vx0 type vxlan id 5 remote 198.18.3.2 dstport 4789",
           "ip link set vx0 up")
    rec = recorder(ins="r-s1", outs="r-rx")
    df, _ = stopped(rec)
    assert iface(df, "r-rx")["upper"] == ["vx0"], iface(df, "r-rx")
    assert df.attrs["header"]["pass_ifaces"] == []  # a tunnel is no L2 step: not passed by
    text = rec.summary
    assert "r-rx is the underlay of vxlan tunnel vx0: packets routed to vx0 are followed " \
        "through the encapsulation to their hand-over to r-rx (t4), tun_out at vx0's " \
        "start_xmit" in text, text
    rec = recorder(ins="r-s1", outs="vx0")
    text = rec.stop()
    assert "vx0 is a vxlan tunnel: its packets are followed through the encapsulation to the " \
        "hand-over to its underlay r-rx (t4), tun_out at vx0's start_xmit" in text, text
    assert "underlay of" not in text, text


def test_input_a_port_of_a_bridge_that_calls_iptables(tb, recorder):
    tb.up()
    quiet()
    bridge_input()
    df, c = forwarded(recorder(ins="r-s1,r-s2", outs="r-rx"), "r-rx")
    assert len(df) == N and (df.path == "bridge_netfilter").all(), df.path.value_counts()
    assert iface(df, "r-s1")["fast_paths"] == ["bridge_nf_call_iptables"], iface(df, "r-s1")
    assert iface(df, "r-s1")["master"] == "br-in", iface(df, "r-s1")
    assert iface(df, "r-s2")["fast_paths"] == [], iface(df, "r-s2")


def test_input_a_bridge_that_calls_iptables(tb, recorder):
    tb.up()
    quiet()
    bridge_input()
    # PRE_ROUTING ran inside the bridge, before br-in's XDP: never complete
    rec = recorder(ins="br-in,r-s2", outs="r-rx")
    before = links()
    send_udp(N, port=5001)
    wait_out(before, N)
    df, c = stopped(rec)
    assert len(df) == N and (df.status == "partial").all(), df.status.value_counts()
    assert "hopscope: warning: br-in is a bridge that calls iptables " \
        "(bridge-nf-call-iptables=1): PRE_ROUTING runs inside the bridge before br-in's " \
        "XDP" in rec.summary, rec.summary


def test_ifb_on_the_input(tb, recorder):
    tb.up()
    quiet()
    # ifb0's queue room for a whole chunk of the sender's (livebed.CHUNK)
    router("ip link add ifb0 type ifb", "ip link set ifb0 up txqueuelen 1000",
           "tc qdisc add dev r-s1 ingress",
           "tc filter add dev r-s1 parent ffff: protocol ip u32 match u32 0 0 "
           "action mirred egress redirect dev ifb0")
    rec = recorder(ins="r-s1", outs="r-rx")
    df, c = forwarded(rec, "r-rx")
    # each packet's transmit on ifb0 passed by, back into the stack
    assert c["out_pass"] == N and c["other_out"] == 0, c
    assert df.attrs["header"]["pass_ifaces"] == ["ifb0"]
    assert iface(df, "r-s1")["fast_paths"] == ["ifb"], iface(df, "r-s1")
    done = df[df.status == "complete"]
    assert (done.path == "ifb").all(), done.path.value_counts()
    assert "r-s1's tc ingress redirects to ifb0" in rec.summary, rec.summary
    # ifb0 hands each packet back to r-s1's receive, where generic XDP runs
    # again: the packet keeps its slot and its first t1, so d_iq holds the
    # ifb's queue (ebpf/stage_input.bpf.c, hs_again)
    assert len(df) == N and c["xdp_again"] == N, (len(df), c)
    assert c["xdp_pkts"] - c["xdp_nonip"] == 2 * N + c["local"], c


# a tc classifier that is not hopscope's: passes every packet on
FOREIGN = """
struct __sk_buff;
__attribute__((section("tc"), used)) int foreign(struct __sk_buff *skb) { return 0; }
char _license[] __attribute__((section("license"), used)) = "GPL";
"""


def test_foreign_tc_program(tb, recorder, tmp_path):
    tb.up()
    src, obj = tmp_path / "foreign.c", tmp_path / "foreign.o"
    src.write_text(FOREIGN)
    sh("clang", "-O2", "-target", "bpf", "-c", str(src), "-o", str(obj))
    router("tc qdisc add dev r-s2 clsact",
           f"tc filter add dev r-s2 ingress bpf da obj {obj} sec tc")
    try:
        df, _ = stopped(recorder(ins="r-s1,r-s2", outs="r-rx"))
    finally:
        # the recorder fixture finds no BPF left on the router's devices
        router("tc qdisc del dev r-s2 clsact")
    assert iface(df, "r-s2")["fast_paths"] == ["tc_foreign"], iface(df, "r-s2")
    assert iface(df, "r-s1")["fast_paths"] == [], iface(df, "r-s1")


# `nft -j list flowtables` as nft 1.0 writes it: one device as a string,
# several as a list (this kernel has no flowtables to list)
NFT = r"""#!/bin/sh
[ "$*" = "-j list flowtables" ] || exit 1
exec /bin/cat <<'EOF'
{"nftables": [{"metainfo": {"version": "1.0.6", "json_schema_version": 1}},
 {"flowtable": {"family": "inet", "name": "f", "table": "fw4", "handle": 2,
  "hook": "ingress", "prio": 0, "dev": ["r-s\u0031x", "r-s1"]}},
 {"flowtable": {"family": "ip", "name": "g", "table": "t", "handle": 3,
  "hook": "ingress", "prio": 0, "dev": "r-rx"}}]}
EOF
"""


def test_flowtable_devices(tb, tmp_path):
    tb.up()
    fake, bare = tmp_path / "fake", tmp_path / "bare"
    fake.mkdir()
    bare.mkdir()
    (fake / "nft").write_text(NFT)
    (fake / "nft").chmod(0o755)
    tc = subprocess.run(["which", "tc"], capture_output=True, text=True).stdout.strip()
    for d in (fake, bare):
        (d / "tc").symlink_to(tc)
    recs = []
    try:
        for i, d in enumerate((fake, bare)):
            recs.append(Recorder(tmp_path / f"ft{i}.hsr", "-q", ins="r-s1,r-s2", outs="r-rx",
                                 prefix=P, wrap=("env", f"PATH={d}")))
            recs[-1].stop()
    finally:
        for r in recs:
            r.kill()
    with_nft, without = (hopscope.load(r.out) for r in recs)
    assert with_nft.attrs["header"]["flowtables_known"] is True
    assert iface(with_nft, "r-s1")["fast_paths"] == ["flowtable"]
    assert iface(with_nft, "r-s2")["fast_paths"] == []
    assert iface(with_nft, "r-rx")["fast_paths"] == []  # an output: not its input's path
    assert without.attrs["header"]["flowtables_known"] is False
    assert all(i["fast_paths"] == [] for i in without.attrs["header"]["interfaces"])
