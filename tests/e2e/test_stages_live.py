"""The optional stages (t0, tcin, fwd, tceg) recorded live through the
testbed's router, and --floor attaching the same hooks while recording
nothing. Real BPF, real forwarding, the real recorder; own prefix (hst-lv-)."""
import json

import numpy as np
import pytest

from testlib import left_router, sh, wait_for
from hopscope.record.format import STAGE_NAMES
from livebed import (ipv4_only, links, net_show, recorder, send_udp, stopped,  # noqa: F401
                     tb, wait_out)

N = 400
OPTIONAL = ["t0", "t_tcin", "t_fwd", "t_tceg"]
# the order a forwarded packet meets the hooks (README, Stages): netif_rx
# enqueues to the backlog, whose processing runs generic XDP, then tc
# ingress, then ip_rcv's PRE_ROUTING; FORWARD after the route lookup;
# POST_ROUTING, then __dev_queue_xmit's tc egress, the qdisc, and the
# driver's start_xmit. Each step causes the next, t0 on the sender's CPU,
# the rest on the router's: bpf_ktime_get_ns is one clock on every CPU.
ORDER = ["t0", "t1", "t_tcin", "t2", "t_fwd", "t3", "t_tceg", "t4"]


@pytest.mark.parametrize("stages", ["t0,tcin,fwd,tceg", "all"])
def test_optional_stages_on_every_forwarded_packet(tb, recorder, stages):
    tb.up()  # rps: the router's input on its own CPU, a real backlog between t0 and t1
    ipv4_only()
    rec = recorder("--stages", stages)
    hooks, _ = my_hooks()
    assert hooks == ALL_HOOKS, hooks ^ ALL_HOOKS
    before = links()
    send_udp(N, port=5001)
    wait_out(before, N)
    df, c = stopped(rec)
    assert df.attrs["header"]["stages"] == ["t0", "t1", "t_tcin", "t2", "t_fwd", "t3",
                                            "t_tceg", "t4"], df.attrs["header"]["stages"]
    d = df[(df.proto == 17) & (df.dport == 5001)]
    assert len(d) == N and d.seq.is_unique and d.key.is_unique, d.status.value_counts()
    assert left_router(d).all(), d.status.value_counts()
    d = d[d.status == "complete"]
    t = d[ORDER].to_numpy(np.int64)
    assert (t > 0).all(), d[ORDER][(t == 0).any(axis=1)]
    assert (np.diff(t, axis=1) >= 0).all(), d[ORDER][(np.diff(t, axis=1) < 0).any(axis=1)]
    # the split delays are the instants' differences, and add up
    assert (d.d_rxq == d.t1 - d.t0).all() and (d.d_opath + d.d_qdisc == d.d_oq).all()
    # counters agree with the records: every stamp an optional stage made
    # landed in a record (nothing else crossed the router)
    stamps = int(sum((df[s] > 0).sum() for s in ("t_tcin", "t_fwd", "t_tceg")))
    assert c["opt_pkts"] == stamps == 3 * N and c["local"] == 0, (stamps, c)
    assert c["t0_pkts"] == c["xdp_pkts"] - c["xdp_nonip"], c
    for k in ("t0_miss", "t0_collision", "t0_map_full", "stale", "evicted", "race",
              "rb_fail", "prog_misses"):
        assert c[k] == 0, (k, c)
    # every packet XDP saw has its one record
    assert c["xdp_pkts"] == c["pre_pkts"] == c["post_pkts"] == len(df) == N, (len(df), c)
    assert c["complete"] == c["out_pkts"] == (df.status == "complete").sum()


def my_hooks():
    """(hooks, programs) of the recorder on this testbed's router: the hooks
    as (kind, where, program name), the programs {id: bpftool's view}. XDP
    and tcx are listed in the router's namespace; netfilter links and
    tracepoints are listed for the whole machine (other tests' recorders
    too), so only those of programs sharing the XDP program's maps count"""
    net = net_show()
    if not net["xdp"]:
        return {(x["kind"], x["devname"], x["name"]) for x in net["tc"]}, {}
    progs = json.loads(sh("bpftool", "-j", "prog", "show").stdout)
    xdp = next(p for p in progs if p["id"] == net["xdp"][0]["id"])
    mine = {p["id"]: p for p in progs if set(p.get("map_ids", ())) & set(xdp["map_ids"])}
    name = lambda i: mine[i]["name"]
    hooks = {("xdp", x["devname"], name(x["id"])) for x in net["xdp"]}
    hooks |= {(x["kind"], x["devname"], x["name"]) for x in net["tc"]}
    hooks |= {("netfilter", (x["pf"], x["hook"], x["prio"]), name(x["id"]))
              for x in net["netfilter"] if x["id"] in mine}
    for link in json.loads(sh("bpftool", "-j", "link", "show").stdout):
        if link["type"] == "raw_tracepoint" and link["prog_id"] in mine:
            hooks.add(("tp_btf", link["tp_name"], name(link["prog_id"])))
    return hooks, mine


def gone(progs):
    """none of these programs is loaded or linked, nothing is on the router's
    interfaces (a link lives until the last file that holds it is closed:
    another test's bpftool may hold it a moment after the recorder exits)"""
    def check():
        hooks, _ = my_hooks()
        loaded = {p["id"] for p in json.loads(sh("bpftool", "-j", "prog", "show").stdout)}
        return not hooks and not loaded & set(progs)
    return wait_for(check, timeout=10)


# what a recording with every stage attaches, as bpftool shows it: IPv4 (2)
# and IPv6 (10) netfilter hooks PRE_ROUTING (0), LOCAL_IN (1), FORWARD (2),
# POST_ROUTING (4) at the priorities of README's table
FIRST, LAST = -2**31 + 1, 2**31 - 2
ALL_HOOKS = {("xdp", "r-s1", "hs_input"), ("xdp", "r-s2", "hs_input"),
             ("tcx/ingress", "r-s1", "hs_tc_ingress"), ("tcx/ingress", "r-s2", "hs_tc_ingress"),
             ("tcx/egress", "r-rx", "hs_tc_egress"),
             ("tp_btf", "netif_rx", "hs_arrival"), ("tp_btf", "net_dev_start_xmit", "hs_output"),
             ("tp_btf", "kfree_skb", "hs_drop"), ("tp_btf", "net_dev_queue", "hs_queue"),
             ("tp_btf", "consume_skb", "hs_consume")}
ALL_HOOKS |= {("netfilter", (pf, hook, prio), prog) for pf in (2, 10)
              for hook, prio, prog in ((0, FIRST, "hs_prerouting"), (1, LAST, "hs_localin"),
                                       (2, FIRST, "hs_forward"), (4, LAST, "hs_postrouting"))}


def test_floor_attaches_the_same_hooks_and_records_nothing(tb, recorder):
    tb.up()
    traced = recorder("--stages", "all")
    hooks, full = my_hooks()
    assert hooks == ALL_HOOKS, hooks ^ ALL_HOOKS
    stopped(traced)
    assert gone(full), my_hooks()

    floor = recorder("--stages", "all", "--floor")
    during, progs = my_hooks()
    assert during == ALL_HOOKS, during ^ ALL_HOOKS
    # ...with the programs emptied: the verifier dropped all but the return
    size = lambda ps: {p["name"]: p["bytes_xlated"] for p in ps.values()}
    assert all(size(progs)[n] < size(full)[n] / 4 for n in size(full)), (size(progs), size(full))
    before = links()
    send_udp(N, port=5002)
    wait_out(before, N)
    df, c = stopped(floor)
    assert df.attrs["header"]["floor"] is True
    assert len(df) == 0 and not any(c.values()), c
    # the packets went through: forwarded while the empty programs were on
    assert links()["r-s1"]["rx"]["packets"] - before["r-s1"]["rx"]["packets"] >= N
    assert gone(progs), my_hooks()


def test_clock_floor_reads_the_clock_at_each_stage_and_records_nothing(tb, recorder):
    """--floor=clock: evaluation/bench/overhead.py's second floor, the least a tracer that
    stamps every stage costs. Same hooks; each program keeps one clock read
    (its per-CPU word moves), nothing else."""
    tb.up()
    full = recorder("--stages", "all")
    _, progs_full = my_hooks()
    stopped(full)
    clock = recorder("--stages", "all", "--floor=clock")
    hooks, progs = my_hooks()
    assert hooks == ALL_HOOKS, hooks ^ ALL_HOOKS
    size = lambda ps: {p["name"]: p["bytes_xlated"] for p in ps.values()}  # noqa: E731
    assert all(size(progs)[n] < size(progs_full)[n] / 2 for n in size(progs)), \
        (size(progs), size(progs_full))
    before = links()
    send_udp(N, port=5002)
    wait_out(before, N)
    maps = {m["id"]: m for m in json.loads(sh("bpftool", "-j", "map", "show").stdout)}
    ids = {i for p in progs.values() for i in p.get("map_ids", ())}
    (fc,) = [i for i in ids if maps[i].get("name") == "floor_clock"]
    stamped = {number(e["key"]): max(number(v["value"]) for v in e["values"])
               for e in json.loads(sh("bpftool", "-j", "map", "dump", "id", str(fc)).stdout)}
    df, c = stopped(clock)
    assert df.attrs["header"]["floor"] is True and df.attrs["header"]["floor_clock"] is True
    assert len(df) == 0 and not any(c.values()), c
    # the four stages of every forwarded packet read the clock (t0 too: --stages all)
    for stage in ("t0", "t1", "t2", "t3", "t4"):
        assert stamped[STAGE_NAMES.index(stage)] > 0, (stage, stamped)


def number(x):
    """bpftool's JSON number: an int, or (without BTF) its bytes in hex, little-endian."""
    return x if isinstance(x, int) else int.from_bytes(bytes(int(b, 16) for b in x), "little")
