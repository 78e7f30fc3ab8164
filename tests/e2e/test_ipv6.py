"""IPv6 through the eBPF backend end to end: UDP over IPv6 from sender1
through the testbed's router (its IPv6 addresses: 2001:2:0:N::1/2), every
packet one complete record with the ipv6 flag, its addresses, ports, traffic
class and length as the loader shows them, and its delays."""
import numpy as np

from testlib import T4_UNSEEN, left_router
from livebed import S1_6, RX6, links, recorder, send_udp, stopped, tb, wait_out  # noqa: F401

N = 300
SIZE = 200


def test_ipv6_udp_every_packet_one_complete_record(tb, recorder):
    tb.up()
    rec = recorder("--stages", "tceg")
    before = links()
    send_udp(N, dst=RX6, port=6001, size=SIZE, sport=46001, tclass=0x28)
    wait_out(before, N)
    df, c = stopped(rec)
    d = df[(df.proto == 17) & (df.dport == 6001)]
    assert len(d) == N and d.seq.is_unique and d.key.is_unique, d.status.value_counts()
    assert left_router(d).all(), d.status.value_counts()
    # ipv6, nothing else (but t4_unseen where the kernel skipped t4's probe)
    assert (d["flags"].to_numpy() & (0xff ^ T4_UNSEEN) == 0x01).all(), d["flags"].value_counts()
    assert (d.family == 6).all()
    assert set(d.src.astype(str)) == {S1_6} and set(d.dst.astype(str)) == {RX6}
    assert (d.sport == 46001).all()
    assert (d.tos == 0x28).all() and (d.dscp == 0x28 >> 2).all()
    assert (d.ip_len == 40 + 8 + SIZE).all()  # payload length + the fixed header
    assert set(d.in_if.astype(str)) == {"r-s1"} and set(d.out_if.astype(str)) == {"r-rx"}
    t = d[["t1", "t2", "t3", "t_tceg", "t4"]].to_numpy(np.int64)
    assert (t > 0).all() and (np.diff(t, axis=1) >= 0).all()
    assert ((d.d_iq + d.d_p + d.d_oq) == d.transit).all() and (d.transit > 0).all()
    assert (d.d_opath + d.d_qdisc == d.d_oq).all()
    # the hosts' own IPv6 (router solicitations, MLD with its hop-by-hop
    # header) may be there too: the router's, retired at LOCAL_IN; all else
    # XDP saw is a record
    assert c["xdp_pkts"] - c["xdp_nonip"] == len(df) + c["local"], (len(df), c)
    for k in ("xdp_truncated", "stale", "evicted", "race", "rb_fail"):
        assert c[k] == 0, (k, c)
