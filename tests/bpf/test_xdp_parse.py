"""The XDP stage on crafted frames (BPF_PROG_TEST_RUN, nothing attached):
header fields, flags, keys and counters for good and bad input."""
import json
import os
import socket
import subprocess

import pytest
from scapy.all import (ARP, IP, TCP, UDP, Dot1AD, Dot1Q, Ether, IPOption_RR,
                       IPv6, IPv6ExtHdrDestOpt, IPv6ExtHdrFragment,
                       IPv6ExtHdrHopByHop, Raw, fragment)

from keyhash import key_hash

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PROG_RUN = os.path.join(ROOT, "build", "prog_run")
F_IPV6, F_FRAG, F_OPTS, F_V6EXT, F_VLAN, F_TRUNC = 1, 2, 4, 8, 0x10, 0x40
S4, D4 = "198.18.1.2", "198.18.3.2"
S6, D6 = "2001:2:0:1::2", "2001:2:0:3::2"


def run(*frames):
    data = "".join(bytes(f).hex() + "\n" for f in frames)
    out = subprocess.run([PROG_RUN], input=data, capture_output=True, text=True, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def udp4(payload=b"x" * 32, tos=4, **ip):
    return Ether() / IP(src=S4, dst=D4, tos=tos, **ip) / UDP(sport=40000, dport=5201) / Raw(payload)


def test_ipv4_udp_fields_and_key():
    payload = bytes(range(40))
    (r,) = run(udp4(payload))
    rec = r["record"]
    assert r["verdict"] == 2  # XDP_PASS, always
    assert (rec["sport"], rec["dport"], rec["tos"], rec["proto"]) == (40000, 5201, 4, 17)
    assert rec["ip_len"] == 20 + 8 + 40 and rec["flags"] == 0
    assert rec["saddr"] == socket.inet_aton(S4).hex()
    udp = bytes(udp4(payload))[14 + 20:14 + 28]  # header with its checksum: invariant
    assert rec["key"] == key_hash(socket.inet_aton(S4), socket.inet_aton(D4),
                                  udp, payload[:16], 17, 68)
    assert r["counters"] == {"xdp_pkts": 1}


def test_key_ignores_ttl_checksum_id_and_tos_but_not_payload():
    a = run(udp4(b"A" * 20, ttl=64, id=1), udp4(b"A" * 20, ttl=3, id=999, tos=5),
            udp4(b"B" + b"A" * 19))
    assert a[0]["record"]["key"] == a[1]["record"]["key"]
    assert a[0]["record"]["key"] != a[2]["record"]["key"]


def test_ethernet_padding_beyond_ip_length_not_in_key():
    short = udp4(b"ab")
    padded = Ether(bytes(short) + b"\xff" * 20)
    a, b = run(short, padded)
    assert a["record"]["key"] == b["record"]["key"]
    assert a["record"]["ip_len"] == 30


def test_iperf3_like_counters_give_distinct_keys():
    base = bytearray(b"\0" * 64)
    frames = []
    for n in range(200):
        base[8:12] = n.to_bytes(4, "big")
        frames.append(udp4(bytes(base)))
    keys = {r["record"]["key"] for r in run(*frames)}
    assert len(keys) == 200


def test_ip_options_parsed_past():
    (r,) = run(Ether() / IP(src=S4, dst=D4, options=[IPOption_RR()]) / UDP(sport=7, dport=9) / Raw(b"z" * 10))
    assert r["record"]["flags"] & F_OPTS
    assert (r["record"]["sport"], r["record"]["dport"]) == (7, 9)
    assert r["counters"]["xdp_ip_options"] == 1


def test_fragments_flagged_without_ports():
    frags = fragment(IP(src=S4, dst=D4) / UDP(sport=1, dport=2) / Raw(b"q" * 300), fragsize=104)
    res = run(*(Ether() / f for f in frags))
    assert len(res) == len(frags) >= 3
    for r in res:
        assert r["record"]["flags"] & F_FRAG
        assert r["counters"]["xdp_fragment"] == 1
    # the first fragment's ports are not used either: fragments key on IP ID and offset
    assert all(r["record"]["sport"] == 0 for r in res)
    assert len({r["record"]["key"] for r in res}) == len(frags)


def test_ipv6_udp_and_extension_headers():
    plain, ext, frag = run(
        Ether() / IPv6(src=S6, dst=D6, tc=5) / UDP(sport=3, dport=4) / Raw(b"p" * 20),
        Ether() / IPv6(src=S6, dst=D6) / IPv6ExtHdrHopByHop() / IPv6ExtHdrDestOpt() / UDP(sport=3, dport=4) / Raw(b"p" * 20),
        Ether() / IPv6(src=S6, dst=D6) / IPv6ExtHdrFragment(offset=0, m=1, id=77) / UDP(sport=3, dport=4) / Raw(b"p" * 20),
    )
    assert plain["record"]["flags"] == F_IPV6 and plain["record"]["tos"] == 5
    assert plain["record"]["saddr"] == socket.inet_pton(socket.AF_INET6, S6).hex()
    assert plain["record"]["ip_len"] == 40 + 8 + 20
    assert ext["record"]["flags"] == F_IPV6 | F_V6EXT
    assert (ext["record"]["sport"], ext["record"]["dport"], ext["record"]["proto"]) == (3, 4, 17)
    assert frag["record"]["flags"] & F_FRAG and frag["record"]["proto"] == 17


def test_vlan_tags_counted():
    one, two = run(Ether() / Dot1Q(vlan=5) / IP(src=S4, dst=D4) / UDP() / Raw(b"v" * 8),
                   Ether() / Dot1AD(vlan=6) / Dot1Q(vlan=5) / IP(src=S4, dst=D4) / UDP() / Raw(b"v" * 8))
    for r in (one, two):
        assert r["record"]["flags"] & F_VLAN
        assert r["counters"]["xdp_vlan"] == 1


def test_truncated_and_non_ip_frames_make_no_record():
    full = bytes(udp4(b"t" * 40))
    res = run(Ether() / ARP(), Ether(full[:14 + 12]), Raw(full[:14]))
    for r in res:
        assert r["record"] is None and r["meta_len"] == 0
    assert res[0]["counters"] == {"xdp_pkts": 1, "xdp_nonip": 1}
    assert res[1]["counters"] == {"xdp_pkts": 1, "xdp_truncated": 1}
    assert res[2]["counters"] == {"xdp_pkts": 1, "xdp_truncated": 1}


def test_truncated_l4_flagged_but_traced():
    full = bytes(udp4(b"t" * 40))
    (r,) = run(Ether(full[:14 + 20 + 4]))  # IP header whole, UDP header cut
    assert r["record"]["flags"] & F_TRUNC
    assert r["counters"]["xdp_truncated"] == 1


def test_tcp_sequence_in_key():
    a, b = run(Ether() / IP(src=S4, dst=D4) / TCP(sport=5, dport=6, seq=1) / Raw(b"d" * 10),
               Ether() / IP(src=S4, dst=D4) / TCP(sport=5, dport=6, seq=2) / Raw(b"d" * 10))
    assert a["record"]["key"] != b["record"]["key"]
    assert (a["record"]["sport"], a["record"]["dport"]) == (5, 6)


def test_bogus_ip_header_lengths():
    bad_ihl = bytearray(bytes(udp4()))
    bad_ihl[14] = 0x43  # IHL 3 < 5
    short_total = bytearray(bytes(udp4()))
    short_total[16:18] = (8).to_bytes(2, "big")  # total length < header
    for r in run(Ether(bytes(bad_ihl)), Ether(bytes(short_total))):
        assert r["record"] is None
        assert r["counters"].get("xdp_truncated") == 1


@pytest.mark.parametrize("plen, ip_len", [(65495, 65535), (65496, 65535), (65535, 65535),
                                          (1000, 1040)])
def test_ipv6_ip_len_saturates_instead_of_wrapping(plen, ip_len):
    # payload_len + 40 above 65535 wrapped to a tiny ip_len (65500 + 40 -> 4)
    (r,) = run(Ether() / IPv6(src=S6, dst=D6, plen=plen) / UDP(sport=1, dport=2) / Raw(b"p" * 24))
    assert r["record"]["ip_len"] == ip_len
    assert (r["record"]["sport"], r["record"]["dport"]) == (1, 2)
