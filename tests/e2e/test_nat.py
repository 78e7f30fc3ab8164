"""NAT on the router: masquerade (SNAT) on the way out, for IPv4 and IPv6,
and a port forward (DNAT) to the router's own address, as nftables does
them. Every record of a translated flow that reached t3 carries the tuple
the receiver saw (its source for SNAT, its destination for DNAT); records
of untranslated flows carry none. Each flow is counted four ways: sent, received (by the
receiver's socket and an nftables counter there), sent out by the router
with the translated tuple (an nftables counter after NAT) and recorded,
and the recorder's nat counters agree with the records."""
import glob
import json
import signal
import subprocess
import sys

import pytest

import hopscope
from testlib import HOPSCOPE, left_router, sh, wait_for
from livebed import P, RX4, RX6, ipv4_only, ns, recorder, send_udp, stopped, tb  # noqa: F401

N = 300
ROUTER_S1, ROUTER_RX, S1, S2 = "198.18.1.1", "198.18.3.1", "198.18.1.2", "198.18.2.2"
# (name, sender, destination, destination port, source port)
SNAT = ("snat", "sender2", RX4, 9, 46201)
DNAT = ("dnat", "sender1", ROUTER_S1, 7777, 46202)
PLAIN = ("plain", "sender1", RX4, 9, 46203)
TCP_PORT, TCP_SPORT, TCP_TO = 7778, 46301, 5001
SEGMENTS = 50

RULES = f"""
table ip nat {{
  chain dstnat {{ type nat hook prerouting priority dstnat; policy accept;
    iifname "r-s1" ip daddr {ROUTER_S1} udp dport 7777 dnat to {RX4}:9
    iifname "r-s1" ip daddr {ROUTER_S1} tcp dport {TCP_PORT} dnat to {RX4}:{TCP_TO}; }}
  chain srcnat {{ type nat hook postrouting priority srcnat; policy accept;
    oifname "r-rx" ip saddr 198.18.2.0/24 masquerade; }}
}}
"""

# the receiver: one TCP connection read to its end, then the UDP datagrams,
# each counted by the tuple its headers had (IP_PKTINFO: the destination)
RECEIVER = r"""
import json, socket, struct, sys
n, tcp_port = int(sys.argv[1]), int(sys.argv[2])
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.setsockopt(socket.SOL_SOCKET, 33, 1 << 24)  # SO_RCVBUFFORCE: every datagram kept
u.setsockopt(socket.IPPROTO_IP, 8, 1)  # IP_PKTINFO
u.bind(("0.0.0.0", 9))
t = socket.socket()
t.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
t.bind(("0.0.0.0", tcp_port))
t.listen(1)
print("ready", flush=True)
t.settimeout(60)
c, peer = t.accept()
local = c.getsockname()
got = 0
while True:
    b = c.recv(65536)
    if not b:
        break
    got += len(b)
c.close()
seen = {}
u.settimeout(60)
for _ in range(n):
    data, anc, _, (src, sport) = u.recvmsg(2048, socket.CMSG_SPACE(12))
    dst = socket.inet_ntoa(anc[0][2][8:12])
    key = f"{src} {sport} {dst} 9"
    seen[key] = seen.get(key, 0) + 1
print(json.dumps({"udp": seen, "tcp": [peer[0], peer[1], local[0], local[1], got]}))
"""

CLIENT = r"""
import socket, sys, time
dst, port, sport, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
s = socket.socket()
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
s.bind(("", sport))
s.connect((dst, port))
for i in range(n):
    s.sendall(bytes([i % 256]) * 100)
    time.sleep(0.002)
s.shutdown(socket.SHUT_WR)
s.recv(1)  # the receiver's FIN: the connection is done
s.close()
"""


def nft(role, ruleset):
    r = ns(role, "nft", "-f", "-", input=ruleset, check=False)
    assert r.returncode == 0, r.stderr


def counters(role, table, family="ip"):
    out = json.loads(ns(role, "nft", "-j", "list", "counters", "table", family, table).stdout)
    return {c["counter"]["name"][2:]: c["counter"]["packets"]
            for c in out["nftables"] if "counter" in c}


def count_chain(role, table, hook, priority, matches, family="ip"):
    """an nftables counter per (name, match) in role's namespace, at hook
    (named c_NAME: a name may be a keyword of nft's)"""
    names = "".join(f"  counter c_{name} {{}}\n" for name, _ in matches)
    rules = "".join(f"    {m} counter name \"c_{name}\"\n" for name, m in matches)
    nft(role, f"table {family} {table} {{\n{names}  chain c {{\n    type filter hook {hook} "
              f"priority {priority}; policy accept;\n{rules}  }}\n}}\n")


def start_receiver():
    p = subprocess.Popen(["ip", "netns", "exec", P + "receiver", sys.executable, "-c", RECEIVER,
                          str(3 * N), str(TCP_TO)], stdout=subprocess.PIPE, text=True)
    assert p.stdout.readline() == "ready\n"
    return p


def tcp_client():
    r = ns("sender1", sys.executable, "-c", CLIENT, ROUTER_S1, str(TCP_PORT), str(TCP_SPORT),
           str(SEGMENTS), timeout=120, check=False)
    assert r.returncode == 0, r.stderr


def nat_tuple(d):
    return list(zip(d.nat_src.astype(str), d.nat_sport, d.nat_dst.astype(str), d.nat_dport))


@pytest.fixture
def receiver():
    p = []
    yield p
    for proc in p:
        proc.kill()
        proc.wait()


def test_snat_and_dnat_translations_match_the_receiver(tb, recorder, receiver):
    tb.up()
    ipv4_only()
    nft("router", RULES)
    # the router's own count of what it sent with each translated tuple
    # (after srcnat), and the receiver's of what arrived
    count_chain("router", "out", "postrouting", 200, [
        ("snat", f"ip saddr {ROUTER_RX} udp sport {SNAT[4]}"),
        ("dnat", f"ip daddr {RX4} udp sport {DNAT[4]} udp dport 9"),
        ("plain", f"ip saddr {S1} udp sport {PLAIN[4]}"),
        ("tcp", f"ip daddr {RX4} tcp sport {TCP_SPORT} tcp dport {TCP_TO}")])
    count_chain("receiver", "in", "prerouting", -500, [
        ("tcp", f"ip saddr {S1} tcp sport {TCP_SPORT}")])
    receiver.append(start_receiver())
    rec = recorder(ins="r-s1,r-s2")
    tcp_client()
    for _, role, dst, port, sport in (SNAT, DNAT, PLAIN):
        send_udp(N, dst=dst, port=port, sport=sport, role=role)
    out, _ = receiver[0].communicate(timeout=120)
    seen = json.loads(out)
    # the last of the TCP exchange has reached the receiver: nothing is inside
    assert wait_for(lambda: counters("router", "out")["tcp"] == counters("receiver", "in")["tcp"],
                    timeout=10)
    df, c = stopped(rec)
    routed = counters("router", "out")

    # UDP: what each flow's receiver saw, one tuple per flow, N packets
    want = {}
    for name, _, dst, port, sport in (SNAT, DNAT, PLAIN):
        d = df[(df.proto == 17) & (df.sport == sport)]
        at = [k for k in seen["udp"] if k.split()[1] == str(sport) or
              (name == "snat" and k.startswith(ROUTER_RX + " "))]
        assert len(at) == 1 and seen["udp"][at[0]] == N, (name, seen)
        assert int(left_router(d).sum()) == N == routed[name], (name, d.status.value_counts())
        src, sp, dst_seen, dp = at[0].split()
        want[name] = (src, int(sp), dst_seen, int(dp))
        reached = d[d.t3 > 0]
        if name == "plain":
            assert d.nat_src.isna().all() and d.nat_sport.isna().all()
            continue
        assert nat_tuple(reached) == [want[name]] * len(reached), name
        assert d[d.t3 == 0].nat_src.isna().all()
    assert want["snat"][0] == ROUTER_RX and want["dnat"][2:] == (RX4, 9)

    # TCP through the port forward: every segment recorded, translated as
    # the receiver's socket saw the connection
    d = df[(df.proto == 6) & (df.sport == TCP_SPORT)]
    peer_ip, peer_port, local_ip, local_port, got = seen["tcp"]
    assert got == 100 * SEGMENTS and (peer_ip, peer_port) == (S1, TCP_SPORT)
    received = counters("receiver", "in")["tcp"]
    assert int(d.segs[left_router(d)].sum()) == received == routed["tcp"], \
        (d.status.value_counts(), received)
    reached = d[d.t3 > 0]
    assert nat_tuple(reached) == [(S1, TCP_SPORT, local_ip, local_port)] * len(reached)

    # the kernel's nat counters: one new translation per translated flow,
    # each packet of theirs past t3 once, none changed
    translated = df[df.nat_src.notna()]
    assert c["nat_new"] == 3 and c["nat_changed"] == 0 and c["nat_full"] == 0, c
    assert c["rb_fail"] or c["nat"] == len(translated), (c, len(translated))
    nat = df.attrs["nat"]
    assert nat["recorded"] is True and len(nat["flows"]) == 3
    assert not any(f["changed"] or f["mixed"] for f in nat["flows"]), nat
    assert rec.summary.count("\n  nat        3 flows translated,") == 1, rec.summary

    # describe: one line per translated flow, original -> translated
    text = sh(HOPSCOPE, "describe", rec.out).stdout
    s2 = f"{S2}:{SNAT[4]} > {RX4}:9 -> {want['snat'][0]}:{want['snat'][1]} > {RX4}:9: "
    s1 = f"{S1}:{DNAT[4]} > {ROUTER_S1}:7777 -> {S1}:{DNAT[4]} > {RX4}:9: "
    for line in (s2, s1):
        assert f"\nnat         {line}" in text, text
    assert "problems    none" in text, text


def conntrack_has(sport):
    text = ns("router", "cat", "/proc/net/nf_conntrack").stdout
    return f"sport={sport} " in text


def test_a_translation_changed_during_the_run_is_said_never_attached(tb, recorder):
    tb.up()
    ipv4_only()
    sport = 46210
    # a forgotten UDP flow ends in a second: its next packet meets the new rule
    ns("router", "sysctl", "-qw", "net.netfilter.nf_conntrack_udp_timeout=1")
    nft("router", RULES)
    count_chain("receiver", "in", "prerouting", -500, [
        (f"to{port}", f"ip saddr {S1} udp sport {sport} udp dport {port}") for port in (9, 10)])
    rec = recorder(ins="r-s1,r-s2")
    send_udp(N, dst=ROUTER_S1, port=7777, sport=sport)
    assert wait_for(lambda: counters("receiver", "in")["to9"] == N, timeout=30)
    assert wait_for(lambda: not conntrack_has(sport), timeout=30)
    ns("router", "nft", "flush", "chain", "ip", "nat", "dstnat")
    ns("router", "nft", "add", "rule", "ip", "nat", "dstnat", "udp", "dport", "7777", "dnat",
       "to", f"{RX4}:10")
    send_udp(N, dst=ROUTER_S1, port=7777, sport=sport)
    assert wait_for(lambda: counters("receiver", "in")["to10"] == N, timeout=30)
    df, c = stopped(rec)
    d = df[(df.proto == 17) & (df.sport == sport)]
    assert int(left_router(d).sum()) == 2 * N, d.status.value_counts()
    # the first packet after the change found the other tuple filed
    assert (c["nat_new"], c["nat_changed"]) == (1, 1), c
    assert c["rb_fail"] or c["nat"] == int((d.t3 > 0).sum()), c
    assert df.attrs["trailer"]["userspace"]["nat_changed"] == 1
    assert d[["nat_src", "nat_sport", "nat_dst", "nat_dport"]].isna().all().all()
    assert "hopscope: WARNING: NAT changed the translation of 1 flows during the run: their " \
           "records carry no translated tuple" in rec.summary, rec.summary
    text = sh(HOPSCOPE, "describe", rec.out).stdout
    assert (f"\nnat         {S1}:{sport} > {ROUTER_S1}:7777 -> {S1}:{sport} > {RX4}:10: "
            f"{2 * N} packets; CHANGED during the run") in text, text


def test_ipv6_masquerade_gives_the_router_address_as_source(tb, recorder):
    tb.up()
    sport, router_rx6 = 46220, "2001:2:0:3::1"
    nft("router", "table ip6 nat {\n  chain srcnat { type nat hook postrouting priority "
                  "srcnat; policy accept;\n    oifname \"r-rx\" ip6 saddr 2001:2:0:2::/64 "
                  "masquerade; }\n}\n")
    count_chain("router", "out", "postrouting", 200, [
        ("snat", f"ip6 saddr {router_rx6} udp sport {sport} udp dport 9")], family="ip6")
    count_chain("receiver", "in", "prerouting", -500, [
        ("snat", f"ip6 saddr {router_rx6} udp sport {sport} udp dport 9")], family="ip6")
    rec = recorder()
    send_udp(N, dst=RX6, sport=sport, role="sender2")
    assert wait_for(lambda: counters("receiver", "in", "ip6")["snat"] == N, timeout=30)
    df, c = stopped(rec)
    d = df[(df.proto == 17) & (df.sport == sport)]
    assert (d.family == 6).all()
    assert int(left_router(d).sum()) == N == counters("router", "out", "ip6")["snat"], \
        d.status.value_counts()
    reached = d[d.t3 > 0]
    assert nat_tuple(reached) == [(router_rx6, sport, RX6, 9)] * len(reached)
    assert c["nat_new"] == 1 and c["nat_changed"] == c["nat_full"] == 0, c
    assert c["rb_fail"] or c["nat"] == len(reached), c


def test_a_flight_dump_carries_its_flows_translations(tb, recorder, tmp_path):
    tb.up()
    ipv4_only()
    nft("router", RULES)
    count_chain("receiver", "in", "prerouting", -500, [
        ("dnat", f"ip saddr {S1} udp sport {DNAT[4]}"), ("plain", f"ip saddr {S1} udp sport "
                                                                  f"{PLAIN[4]}")])
    rec = recorder("--aggregate", "--flight", "128", "--flight-dir", str(tmp_path))
    n = 40  # each flow's packets: all of them in the dump
    for _, role, dst, port, sport in (DNAT, PLAIN):
        send_udp(n, dst=dst, port=port, sport=sport, role=role)
    assert wait_for(lambda: counters("receiver", "in") == {"dnat": n, "plain": n}, timeout=30)
    rec.p.send_signal(signal.SIGUSR1)
    assert wait_for(lambda: glob.glob(str(tmp_path / "flight-*.hsr")), timeout=30)
    rec.stop()
    [path] = glob.glob(str(tmp_path / "flight-*.hsr"))
    v = sh(HOPSCOPE, "verify", path, check=False)
    assert v.returncode == 0 and ": OK: " in v.stdout, v.stdout + v.stderr
    df = hopscope.load(path, strict=True)
    dnat, plain = (df[(df.proto == 17) & (df.sport == f[4])] for f in (DNAT, PLAIN))
    assert len(dnat) == len(plain) == n and (dnat.t3 > 0).all(), df.status.value_counts()
    assert nat_tuple(dnat) == [(S1, DNAT[4], RX4, 9)] * n
    assert plain[["nat_src", "nat_sport"]].isna().all().all()
    # the dump holds its own records' flows and their translations alone
    assert [f["from"] for f in df.attrs["nat"]["flows"]] == [(S1, DNAT[4], ROUTER_S1, 7777)]
    # the run's own file: no records, the translation in its flow table
    run = hopscope.load(rec.out, strict=True)
    assert len(run) == 0 and len(run.attrs["nat"]["flows"]) == 1, run.attrs["nat"]


def test_a_flow_nat_translated_only_in_part_carries_none(tb, recorder):
    tb.up()
    ipv4_only()
    sport = 46230
    ns("router", "sysctl", "-qw", "net.netfilter.nf_conntrack_udp_timeout=1")
    nft("router", "table ip nat {\n  chain srcnat { type nat hook postrouting priority srcnat; "
                  "policy accept; }\n}\n")
    count_chain("receiver", "in", "prerouting", -500, [
        ("plain", f"ip saddr {S2} udp sport {sport}"),
        ("snat", f"ip saddr {ROUTER_RX} udp sport {sport}")])
    rec = recorder(ins="r-s1,r-s2")
    send_udp(N, dst=RX4, sport=sport, role="sender2")
    assert wait_for(lambda: counters("receiver", "in")["plain"] == N, timeout=30)
    # masquerade from now on: the flow's next conntrack entry, once this one ended
    assert wait_for(lambda: not conntrack_has(sport), timeout=30)
    ns("router", "nft", "add", "rule", "ip", "nat", "srcnat", "oifname", "r-rx", "masquerade")
    send_udp(N, dst=RX4, sport=sport, role="sender2")
    assert wait_for(lambda: counters("receiver", "in")["snat"] == N, timeout=30)
    df, c = stopped(rec)  # a file with nothing wrong in it
    d = df[(df.proto == 17) & (df.sport == sport)]
    assert int(left_router(d).sum()) == 2 * N, d.status.value_counts()
    assert (c["nat_new"], c["nat_changed"], c["nat"]) == (1, 0, N), c
    # which records were translated is not in the file: none says it was
    assert d[["nat_src", "nat_sport", "nat_dst", "nat_dport"]].isna().all().all()
    [f] = df.attrs["nat"]["flows"]
    assert f["mixed"] and f["packets"] == N and f["records"] == int((d.t3 > 0).sum())
    text = sh(HOPSCOPE, "describe", rec.out).stdout
    assert (f"\nnat         {S2}:{sport} > {RX4}:9 -> {ROUTER_RX}:{sport} > {RX4}:9: {N} "
            f"packets; {f['records']} records reached t3, more than NAT changed") in text, text
