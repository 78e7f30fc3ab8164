"""A chain of routers (testbed.sh up --routers N): senders -> r1 -> ... -> rN
-> receiver, each router in its own namespace, on real namespaces.

Every testbed here uses HS_PREFIX=hst-tb- (as test_testbed.py) and is taken
down by a fixture finalizer, whatever the test did.
"""
import json
import os
import re

import pytest

from test_testbed import (PREFIX, STATE_DIR, TESTBED, bed_up, in_ns, interfaces_as_ip_shows_them,
                          last_cpu_mask, mask, our_namespaces, root_qdiscs, run, state,
                          sys_read, tb, unplanned)

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="network namespaces need root")

SENDERS = {"sender1": ("198.18.1.2", "2001:2:0:1::2"), "sender2": ("198.18.2.2", "2001:2:0:2::2")}
RECEIVER = ("198.18.3.2", "2001:2:0:3::2")


def routers(n):
    return [f"r{k}" for k in range(1, n + 1)]


def ping_ttls(role, addr, count=2):
    """The TTL (hop limit) of each reply role's ping to addr got."""
    out = in_ns(role, "ping", "-c", str(count), "-i", "0.2", "-W", "1", addr)
    assert f"{count} received" in out, out
    return re.findall(r"(?:ttl|hlim)=(\d+)", out)


@pytest.fixture(scope="class", params=[2, 3, 4])
def chain(request):
    """A chain of n routers in rps mode, router 2's output shaped."""
    n = request.param
    for st in bed_up("--routers", str(n), "--shape", "r2=tbf:10mbit:100p"):
        yield n, st


class TestChain:
    def test_up_healthy_and_its_routers_listed(self, chain):
        n, st = chain
        doc = json.loads(tb("status", "--json"))
        assert doc["up"] and doc["healthy"] and doc["problems"] == []
        assert doc["nrouters"] == n and doc["router"] is None and doc["router_netns_inode"] is None
        names = routers(n)
        assert doc["namespaces"] == {r: PREFIX + r for r in ["sender1", "sender2", *names, "receiver"]}
        assert [r["role"] for r in doc["routers"]] == names
        for k, r in enumerate(doc["routers"], 1):
            assert r["netns"] == PREFIX + f"r{k}"
            assert r["netns_inode"] == os.stat(f"/run/netns/{PREFIX}r{k}").st_ino
            assert r["in"] == (["r-s1", "r-s2"] if k == 1 else [f"r{k}-r{k - 1}"])
            assert r["out"] == ("r-rx" if k == n else f"r{k}-r{k + 1}")
            assert r["next"] == ("receiver" if k == n else f"r{k + 1}")
            assert r["prev"] == (["sender1", "sender2"] if k == 1 else [f"r{k - 1}"])
            assert r["shape"] == ("tbf:10mbit:100p" if k == 2 else "none")
            # a router's interfaces: its inputs, then its output
            assert [i["name"] for i in doc["interfaces"][r["role"]]] == [*r["in"], r["out"]]
        assert doc["shape"] == doc["routers"][-1]["shape"]
        assert st["HS_TB_NROUTERS"] == str(n) and st["HS_TB_NS_ROUTER"] == ""
        assert st["HS_TB_ROUTER_SHAPES"].split() == [r["shape"] for r in doc["routers"]]
        assert st["HS_TB_ROUTER_NETNS_INODES"].split() == [str(r["netns_inode"]) for r in doc["routers"]]
        planned = json.loads(tb("layout", "--json", "--routers", str(n), "--shape", "r2=tbf:10mbit:100p"))
        assert unplanned(planned) == unplanned(doc)

    def test_every_interface_as_ip_shows_it_and_facing_its_peer(self, chain):
        doc = json.loads(tb("status", "--json"))
        for role in doc["namespaces"]:
            interfaces_as_ip_shows_them(doc, role)
            for i in doc["interfaces"][role]:
                back = [p for p in doc["interfaces"][i["peer_role"]] if p["name"] == i["peer"]]
                assert [(p["peer"], p["peer_role"]) for p in back] == [(i["name"], role)], i

    @pytest.mark.parametrize("sender", sorted(SENDERS))
    @pytest.mark.parametrize("family", [4, 6])
    def test_ping_crosses_exactly_n_routers(self, chain, sender, family):
        n, _ = chain
        addr = RECEIVER[family == 6]
        # the reply's TTL: lowered once by each router on the way back
        assert ping_ttls(sender, addr) == [str(64 - n)] * 2
        # the way there: a router forwards only what arrives with a TTL above
        # 1, so n + 1 reaches the receiver and n expires at the last router,
        # which says so from its address on its input
        assert "1 received" in in_ns(sender, "ping", "-c", "1", "-W", "1", "-t", str(n + 1), addr)
        r = run(["nsenter", f"--net=/run/netns/{PREFIX}{sender}", "--",
                 "ping", "-c", "1", "-W", "1", "-t", str(n), addr])
        last_in = f"198.18.{10 + n - 1}.2" if family == 4 else f"2001:2:0:{10 + n - 1}::2"
        assert r.returncode == 1 and f"From {last_in} " in r.stdout \
            and "exceeded" in r.stdout, r.stdout

    @pytest.mark.parametrize("family", [4, 6])
    def test_the_receiver_reaches_a_sender_back_through_the_chain(self, chain, family):
        n, _ = chain
        assert ping_ttls("receiver", SENDERS["sender1"][family == 6]) == [str(64 - n)] * 2

    def test_the_shaper_is_on_router_2s_output_only(self, chain):
        n, _ = chain
        doc = json.loads(tb("status", "--json"))
        for r in doc["routers"]:
            root, leaf = root_qdiscs(r["role"], r["out"])
            if r["role"] == "r2":
                assert root["kind"] == "tbf" and root["options"]["rate"] == 10_000_000 // 8, root
                assert [(q["kind"], q["options"]["limit"]) for q in leaf] == [("pfifo", 100)]
            else:
                assert root["kind"] == "noqueue", (r["role"], root)
            for ifc in r["in"]:
                assert root_qdiscs(r["role"], ifc)[0]["kind"] == "noqueue"
        assert doc["routers"][1]["out"] == ("r-rx" if n == 2 else "r2-r3")

    def test_rps_on_every_routers_inputs(self, chain):
        doc = json.loads(tb("status", "--json"))
        for r in doc["routers"]:
            for ifc in r["in"]:
                assert mask(sys_read(r["role"], f"/sys/class/net/{ifc}/queues/rx-0/rps_cpus")) \
                    == last_cpu_mask(), (r["role"], ifc)
                link = run(["ip", "-n", r["netns"], "-d", "link", "show", "dev", ifc]).stdout
                # a router's output reaches the next router's input on NAPI, unmerged
                assert ("gro_max_size 0 " in link) == (r["prev"] != ["sender1", "sender2"]), link
        assert "generic-receive-offload: on" in in_ns("receiver", "ethtool", "-k", "rx-eth0")

    def test_status_names_a_router_whose_forwarding_is_off(self, chain):
        n, _ = chain
        last = f"r{n}"
        in_ns(last, "sysctl", "-qw", "net.ipv4.ip_forward=0")
        try:
            r = run([str(TESTBED), "status", "--json"])
            doc = json.loads(r.stdout)
            assert r.returncode == 1 and not doc["healthy"]
            assert f"IPv4 forwarding off in {PREFIX}{last}" in doc["problems"]
            assert "IPv4 ping sender1 -> receiver fails" in doc["problems"]
        finally:
            in_ns(last, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        assert json.loads(tb("status", "--json"))["healthy"]

    def test_relink_remakes_the_receivers_link_on_the_last_router(self, chain):
        n, _ = chain
        before = json.loads(run(["ip", "-j", "-n", f"{PREFIX}r{n}", "link", "show", "r-rx"]).stdout)
        tb("relink", "receiver")
        after = json.loads(run(["ip", "-j", "-n", f"{PREFIX}r{n}", "link", "show", "r-rx"]).stdout)
        assert after[0]["ifindex"] != before[0]["ifindex"]
        if n == 2:      # r2's output is r-rx: its shaper made again
            assert root_qdiscs("r2", "r-rx")[0]["kind"] == "tbf"
        assert json.loads(tb("status", "--json"))["healthy"]


def test_napi_threads_for_every_routers_inputs():
    for st in bed_up("--routers", "3", "--mode", "napi"):
        pids = st["HS_TB_NAPI_PIDS"].split()
        names = sorted(open(f"/proc/{pid}/comm").read().rsplit("-", 1)[0] for pid in pids)
        assert names == ["napi/r-s1", "napi/r-s2", "napi/r2-r1", "napi/r3-r2"]
        for pid in pids:
            assert os.sched_getaffinity(int(pid)) == {int(st["HS_TB_CPU_ROUTER"])}
        assert ping_ttls("sender2", RECEIVER[1]) == ["61", "61"]
        assert json.loads(tb("status", "--json"))["healthy"]


def test_down_removes_every_namespace_and_status_names_a_missing_router():
    run([str(TESTBED), "down"])
    try:
        tb("up", "--routers", "4", "--mode", "inline")
        want = {PREFIX + r for r in ["sender1", "sender2", *routers(4), "receiver"]}
        assert our_namespaces() == want
        run(["ip", "netns", "del", f"{PREFIX}r3"])
        r = run([str(TESTBED), "status", "--json"])
        assert r.returncode == 1 and json.loads(r.stdout)["problems"] == [f"namespace {PREFIX}r3 missing"]
        assert "removed 6 namespaces" in tb("down")
        assert our_namespaces() == set()
        assert not (STATE_DIR / f"testbed-{PREFIX}.env").exists()
        r = run([str(TESTBED), "status", "--json"])
        assert r.returncode == 1 and json.loads(r.stdout) == {
            "format": "hopscope-testbed/1", "prefix": PREFIX, "up": False, "left_over": []}
    finally:
        run([str(TESTBED), "down"])


def test_a_failed_chain_up_undoes_itself(tmp_path):
    run([str(TESTBED), "down"])
    bad = tmp_path / "sink.bpf.o"
    bad.write_bytes(b"not an ELF object")
    try:
        r = run([str(TESTBED), "up", "--routers", "3", "--sink"],
                env={**os.environ, "HS_PREFIX": PREFIX, "HS_SINK_OBJ": str(bad)})
        assert r.returncode == 1 and "could not attach" in r.stderr
        assert our_namespaces() == set()
        assert not (STATE_DIR / f"testbed-{PREFIX}.env").exists()
    finally:
        run([str(TESTBED), "down"])


@pytest.mark.parametrize("args, message", [
    (["--routers"], "--routers needs a value"),
    (["--routers", "0"], "--routers '0': expected a number of routers from 1 to 4"),
    (["--routers", "5"], "--routers '5'"),
    (["--routers", "two"], "--routers 'two'"),
    (["--routers", "02"], "--routers '02'"),
    (["--shape", "r2=tbf:10mbit"], "no router 2 in a chain of 1"),
    (["--routers", "2", "--shape", "r3=tbf:10mbit"], "no router 3 in a chain of 2"),
    (["--shape", "r0=tbf:10mbit", "--routers", "2"], "no router 0"),
    (["--routers", "3", "--shape", "tbf:10mbit", "--shape", "r3=tbf:20mbit"],
     "--shape r3= and a bare --shape both name the last router's output"),
    (["--shape", "r1=tbf:10mbit", "--shape", "tbf:10mbit"], "--shape r1= and a bare --shape"),
    (["--routers", "2", "--shape", "r1=none", "--shape", "r1=none"], "--shape r1= given twice"),
    (["--routers", "2", "--shape", "r1=tbf:fast"], "rate 'fast' is not a tc rate"),
    (["--routers", "2", "--shape", "r1="], "expected none, tbf"),
    (["--routers", "2", "--shape", "rx=tbf:1mbit"], "expected none, tbf"),
])
def test_bad_chain_option_is_refused_before_anything_is_made(args, message):
    for cmd in ("up", "layout"):
        r = run([str(TESTBED), cmd, *args])
        assert r.returncode == 2, (cmd, r.stderr)
        assert message in r.stderr and len(r.stderr.splitlines()) == 1 and not r.stdout, r.stderr
    assert our_namespaces() == set()


def test_one_router_layout_is_the_old_layout_and_routers():
    """--routers 1 (the default) changes nothing but adding routers and
    nrouters: the layout as it was before chains, typed out here."""
    n = os.cpu_count()

    def iface(name, peer, peer_role, subnet, end):
        return {"name": name, "peer": peer, "peer_role": peer_role,
                "ipv4": f"198.18.{subnet}.{end}", "prefix4": 24,
                "ipv6": f"2001:2:0:{subnet}::{end}", "prefix6": 64,
                "mac": f"02:00:c6:12:0{subnet}:0{end}"}
    old = {
        "format": "hopscope-testbed/1", "prefix": PREFIX, "up": False,
        "options": "--mode rps --shape tbf:10mbit:1000p", "mode": "rps",
        "shape": "tbf:10mbit:1000p", "shape_in": "none", "sink": False,
        "shield": False, "shield_for": None, "shield_cpus": [],
        "namespaces": {r: PREFIX + r for r in ("sender1", "sender2", "router", "receiver")},
        "senders": ["sender1", "sender2"],
        "interfaces": {
            "sender1": [iface("s1-eth0", "r-s1", "router", 1, 2)],
            "sender2": [iface("s2-eth0", "r-s2", "router", 2, 2)],
            "receiver": [iface("rx-eth0", "r-rx", "router", 3, 2)],
            "router": [iface("r-s1", "s1-eth0", "sender1", 1, 1),
                       iface("r-s2", "s2-eth0", "sender2", 2, 1),
                       iface("r-rx", "rx-eth0", "receiver", 3, 1)]},
        "router": {"in": ["r-s1", "r-s2"], "out": "r-rx"},
        "cpus": {"sender": 0, "router": n - 1, "receiver": 1 if n >= 3 else n - 1},
        "ncpu": n, "router_netns_inode": None, "napi_pids": [],
        "state_file": str(STATE_DIR / f"testbed-{PREFIX}.env")}
    for args in (["--shape", "tbf:10mbit"], ["--routers", "1", "--shape", "tbf:10mbit"],
                 ["--shape", "r1=tbf:10mbit"]):
        doc = json.loads(tb("layout", "--json", *args))
        new = {k: doc.pop(k) for k in ("routers", "nrouters")}
        assert doc == old, args
        assert new == {"nrouters": 1, "routers": [
            {"role": "router", "netns": PREFIX + "router", "in": ["r-s1", "r-s2"], "out": "r-rx",
             "shape": "tbf:10mbit:1000p", "netns_inode": None, "next": "receiver",
             "prev": ["sender1", "sender2"]}]}
    assert our_namespaces() == set()
