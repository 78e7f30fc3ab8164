"""hopscope beside a firewall on the router, loaded before it starts or while
it runs: a stateful `table inet` with NAT, a ruleset shaped like OpenWrt's
fw4 (without its flowtable: this kernel has none), and base chains at the
very priorities hopscope prefers. The kernel refuses a BPF netfilter program
at a priority another hook holds (IPv6 conntrack's confirm hook sits at
LOCAL_IN, INT_MAX-1): hopscope steps inward and the header says where.
Every forwarded packet is counted three ways: sent, received (an nftables
counter per flow at the receiver) and recorded complete. Also: one
recorder per router (a second is refused, naming the first)."""
import json
import os
import re
import signal

import pytest

from hopscope.record.reader import RecordFile
from testlib import HOPSCOPE, left_router, sh, wait_for
from livebed import P, RX4, RX6, ns, recorder, send_udp, stopped, tb  # noqa: F401

N = 300
FIRST, LAST = -2**31 + 1, 2**31 - 2  # hopscope's preferred priorities
TRIES = 16  # how far inward it looks (userspace/backend_ebpf.c, HS_PRI_TRIES)

# (name, sender, destination, destination port, source port): the source
# port names the flow at the receiver and in the records
FLOWS = [("ipv4", "sender1", RX4, 9, 46101), ("ipv6", "sender2", RX6, 9, 46102)]
# fw4's port forward: to the router's own address, DNAT to the receiver
DNAT = ("dnat", "sender1", "198.18.1.1", 7777, 46103)

STATEFUL = """
table inet fw {
  chain input { type filter hook input priority filter; policy accept;
    ct state established,related accept; }
  chain forward { type filter hook forward priority filter; policy accept;
    ct state established,related accept; ct state new accept; }
}
table inet nat {
  chain postrouting { type nat hook postrouting priority srcnat; policy accept;
    oifname "r-rx" masquerade; }
}
"""
# the chain layout of OpenWrt's fw4 (its flowtable left out)
FW4 = """
table inet fw4 {
  chain input { type filter hook input priority filter; policy drop;
    iifname "lo" accept; ct state established,related accept; ct state invalid drop;
    meta l4proto { icmp, ipv6-icmp } accept; }
  chain forward { type filter hook forward priority filter; policy drop;
    ct state established,related accept; ct state invalid drop; ct status dnat accept;
    iifname { "r-s1", "r-s2" } oifname "r-rx" accept; }
  chain output { type filter hook output priority filter; policy accept;
    ct state established,related accept; }
  chain prerouting { type filter hook prerouting priority filter; policy accept; }
  chain dstnat { type nat hook prerouting priority dstnat; policy accept;
    iifname "r-s1" udp dport 7777 dnat ip to 198.18.3.2:9; }
  chain srcnat { type nat hook postrouting priority srcnat; policy accept;
    oifname "r-rx" masquerade; }
  chain mangle_forward { type filter hook forward priority mangle; policy accept; }
}
"""
# base chains where hopscope's probes would go first
AT_OUR_PLACES = f"""
table inet squat {{
  chain pre {{ type filter hook prerouting priority {FIRST}; policy accept; }}
  chain post {{ type filter hook postrouting priority {LAST}; policy accept; }}
}}
"""


def nft(role, ruleset):
    r = ns(role, "nft", "-f", "-", input=ruleset, check=False)
    assert r.returncode == 0, r.stderr


def count_at_receiver(flows):
    """an nftables counter per flow (by source port) in the receiver's namespace"""
    counters = "".join(f"  counter f{f[4]} {{}}\n" for f in flows)
    rules = "".join(f"    udp sport {f[4]} counter name \"f{f[4]}\"\n" for f in flows)
    nft("receiver", f"table inet count {{\n{counters}  chain pre {{\n"
                    f"    type filter hook prerouting priority -500; policy accept;\n{rules}"
                    "  }\n}\n")


def received():
    out = json.loads(ns("receiver", "nft", "-j", "list", "counters", "table", "inet",
                        "count").stdout)
    return {int(c["counter"]["name"][1:]): c["counter"]["packets"]
            for c in out["nftables"] if "counter" in c}


def send(flows):
    for _, role, dst, port, sport in flows:
        send_udp(N, dst=dst, port=port, sport=sport, role=role)
    # every packet past t4: the receiver has it (nothing here drops one)
    assert wait_for(lambda: all(v == N for v in received().values()), timeout=60), received()


def hooks(path):
    return {h["stage"]: h["priority"] for h in RecordFile(path).header["hooks"]}


def all_recorded(rec, flows):
    """the recorder stopped; each flow's N packets sent, N received, N
    recorded complete (one record each); returns the recorder's stderr"""
    df, _ = stopped(rec)
    for name, *_, sport in flows:
        d = df[(df.proto == 17) & (df.sport == sport)]
        assert len(d) == N and d.seq.is_unique, (name, d.status.value_counts())
        assert left_router(d).all(), (name, d.status.value_counts())
    assert received() == {f[4]: N for f in flows}
    return rec.summary


@pytest.mark.parametrize("ruleset", [STATEFUL, FW4], ids=["stateful", "fw4"])
@pytest.mark.parametrize("order", ["before", "after"])
def test_firewall_before_or_after_every_packet_recorded(tb, recorder, ruleset, order):
    tb.up()
    flows = FLOWS + ([DNAT] if ruleset is FW4 else [])
    count_at_receiver(flows)
    if order == "before":
        nft("router", ruleset)
    rec = recorder("--stages", "fwd")
    if order == "after":
        nft("router", ruleset)
    send(flows)
    text = all_recorded(rec, flows)
    got = hooks(rec.out)
    # before: IPv6 conntrack's confirm hook holds LOCAL_IN at INT_MAX-1, a
    # kernel hook, stepped aside from without a word
    assert got == {"t1": None, "t2": FIRST, "t_fwd": FIRST, "t3": LAST, "t4": None,
                   "local_in": LAST - (order == "before"), "drop": None, "pieces": None}, got
    assert "held by another hook" not in text, text


def test_chains_at_hopscope_places_it_steps_aside(tb, recorder):
    tb.up()
    count_at_receiver(FLOWS)
    nft("router", AT_OUR_PLACES)
    rec = recorder()
    send(FLOWS)
    text = all_recorded(rec, FLOWS)
    got = hooks(rec.out)
    assert (got["t2"], got["t3"], got["local_in"]) == (FIRST + 1, LAST - 1, LAST), got
    for stage, hook, prio in (("t2", "PRE_ROUTING", FIRST), ("t3", "POST_ROUTING", LAST)):
        assert f"hopscope: {stage}: priority {prio} at netfilter {hook} is held by another " \
               f"hook" in text, text


def test_every_priority_held_is_an_error_naming_the_range(tb, tmp_path):
    tb.up()
    chains = "".join(f"chain c{i} {{ type filter hook prerouting priority {FIRST + i}; }}\n"
                     for i in range(TRIES))
    nft("router", f"table ip squat {{ {chains} }}")
    out = tmp_path / "none.hsr"
    r = sh(HOPSCOPE, "record", "-q", "--netns", P + "router", "--in", "r-s1", "--out", "r-rx",
           "-o", str(out), check=False, timeout=60)
    assert r.returncode == 1, r.stderr
    assert ("hopscope: cannot attach netfilter t2: a netfilter hook (an nftables chain or the "
            f"kernel's own) holds every priority from {FIRST} to {FIRST + TRIES - 1} at "
            "PRE_ROUTING (IPv4): move the chains that hold them (`nft list ruleset` shows each "
            "chain's priority)\n") in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and not out.exists()


def lock_file():
    return f"/run/hopscope/recorder-{os.stat('/run/netns/' + P + 'router').st_ino}.lock"


def test_second_recorder_refused_naming_the_first(tb, recorder, tmp_path):
    tb.up()
    count_at_receiver(FLOWS[:1])
    # a lock file no process holds (a crashed recorder's): taken over
    os.makedirs("/run/hopscope", exist_ok=True)
    with open(lock_file(), "w") as f:
        f.write("pid 1, router ns 'gone', --in x --out y, since 2000-01-01 00:00:00\n")
    first = recorder(ins="r-s1")
    with open(lock_file()) as f:
        assert f.read().startswith(f"pid {first.p.pid}, router ns '{P}router', --in r-s1 "
                                   "--out r-rx, since ")
    for extra in ((), ("--aggregate",)):
        out = tmp_path / "second.hsr"
        r = sh(HOPSCOPE, "record", "-q", "--netns", P + "router", "--in", "r-s2", "--out",
               "r-rx", "-o", str(out), *extra, check=False, timeout=60)
        assert r.returncode == 1, (extra, r.stderr)
        # after the line --backend auto says which backend it took
        assert re.fullmatch(
            r"hopscope: this kernel has the BPF netfilter link: using the eBPF backend\n"
            rf"hopscope: another hopscope \(pid {first.p.pid}, router ns '{P}router', --in r-s1 "
            r"--out r-rx, since \d{4}-\d\d-\d\d \d\d:\d\d:\d\d\) is recording this router: "
            r"its probes hold the router's hooks; stop it first \(one recorder per router "
            r"records any number of inputs: name them all in --in\)\n", r.stderr), \
            (extra, r.stderr)
        assert not out.exists()
    send(FLOWS[:1])
    all_recorded(first, FLOWS[:1])
    # its end, even by SIGKILL, frees the router
    killed = recorder(ins="r-s1")
    killed.p.send_signal(signal.SIGKILL)
    killed.p.wait()
    again = recorder(ins="r-s1")
    again.stop()
