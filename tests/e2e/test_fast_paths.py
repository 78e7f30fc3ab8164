"""Fast paths on the host's kernel: packets a tc ingress program sends by
bpf_redirect_neigh straight to the output (Cilium's host routing) pass
neither PRE_ROUTING nor POST_ROUTING. Each is one complete record of path
tc_redirect with t1 and t4 and no t2 or t3, never mixed into the stack's
delays; the packets the program passes on take the stack as before. The
flowtable, which this kernel lacks, is tested in the QEMU guest
(tests/routers)."""
import os
import subprocess
import sys

import numpy as np
import pytest

from testlib import HOPSCOPE, left_router, sh
from livebed import ipv4_only, links, ns, recorder, send_udp, stopped, tb, wait_out  # noqa: F401

N = 400
FAST, SLOW = 7001, 7002
SRC = os.path.join(os.path.dirname(__file__), "redirect_neigh.bpf.c")


@pytest.fixture
def redirect(tb, tmp_path):
    """bpf_redirect_neigh of UDP to FAST from r-s1 to r-rx, as a tc filter;
    removed before the testbed's checks that hopscope left nothing behind"""
    tb.up()
    _attach(tmp_path)
    yield
    ns("router", "tc", "qdisc", "del", "dev", "r-s1", "clsact", check=False)


def _attach(tmp_path):
    out = ns("router", "cat", "/sys/class/net/r-rx/ifindex").stdout.strip()
    obj = tmp_path / "redirect_neigh.o"
    subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu",
                    f"-DOUT_IFINDEX={out}", f"-DPORT={FAST}", "-c", SRC, "-o", str(obj)],
                   check=True)
    ns("router", "tc", "qdisc", "add", "dev", "r-s1", "clsact")
    ns("router", "tc", "filter", "add", "dev", "r-s1", "ingress", "bpf", "da", "obj", str(obj),
       "sec", "tc")


def test_tc_redirect_neigh_is_its_own_path(recorder, redirect):
    rec = recorder()
    before = links()
    send_udp(N, port=FAST, sport=41001)
    send_udp(N, port=SLOW, sport=41002)
    wait_out(before, 2 * N)
    df, c = stopped(rec)
    fast, slow = (df[(df.proto == 17) & (df.dport == p)] for p in (FAST, SLOW))
    assert len(fast) == len(slow) == N, df.status.value_counts()
    assert left_router(fast).all() and left_router(slow).all(), df.status.value_counts()
    done = fast[fast.status == "complete"]
    # the redirected: their own path, t1 and t4 only, no stack delay
    assert (done.path == "tc_redirect").all(), done.path.value_counts()
    assert ((done.t2 == 0) & (done.t3 == 0) & (done.t1 > 0)).all()
    assert (done.t4 > done.t1).all() and done.d_iq.isna().all() and done.d_p.isna().all()
    assert (done.transit > 0).all() and set(done.out_if.astype(str)) == {"r-rx"}
    # the others took the stack, whole
    ok = slow[slow.status == "complete"]
    assert (ok.path == "stack").all() and (ok[["t1", "t2", "t3", "t4"]] > 0).all().all()
    assert c["fast_path"] == len(done) and c["partial"] == 0, c
    end = df.attrs["trailer"]["userspace"]["complete_by_path"]
    assert end["tc_redirect"] == len(done) and end["stack"] == (df.status == "complete").sum() \
        - len(done), end
    # describe gives each path's delays apart, with their counts
    text = sh(HOPSCOPE, "describe", str(rec.out)).stdout
    assert f"tc_redirect {len(done)}" in text, text
    assert f"transit [tc_redirect]" in text and "d_iq [tc_redirect]" not in text, text
    stack_iq = [l for l in text.splitlines() if l.startswith("d_iq ")]
    assert stack_iq and f"of {int(ok.d_iq.notna().sum())} packets" in stack_iq[0], stack_iq
    assert np.isfinite(ok.d_iq).all()


XDP_PASS_SRC = """
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
SEC("xdp") int xdp_theirs(struct xdp_md *ctx) { return XDP_PASS; }
char LICENSE[] SEC("license") = "GPL";
"""


def test_an_input_with_an_xdp_program_of_its_own_is_refused_by_name(tb, tmp_path):
    """XDP forwarding holds the input's one XDP hook: hopscope says whose
    program it is and what to do, exits 1 and leaves nothing attached"""
    tb.up()
    src, obj = tmp_path / "theirs.c", tmp_path / "theirs.o"
    src.write_text(XDP_PASS_SRC)
    subprocess.run(["clang", "-O2", "-target", "bpf", "-I/usr/include/x86_64-linux-gnu", "-c",
                    str(src), "-o", str(obj)], check=True)
    ns("router", "ip", "link", "set", "dev", "r-s1", "xdpgeneric", "obj", str(obj), "sec", "xdp")
    out = tmp_path / "refused.hsr"
    r = sh(HOPSCOPE, "record", "--netns", tb.prefix + "router", "--in", "r-s1,r-s2", "--out",
           "r-rx", "-d", "1", "-o", str(out), check=False)
    assert r.returncode == 1, (r.returncode, r.stderr)
    assert "r-s1 already has an XDP program" in r.stderr and "name xdp_theirs" in r.stderr, \
        r.stderr
    assert "Traceback" not in r.stderr and not out.exists()
    # theirs stays; none of hopscope's programs is left on the router
    show = ns("router", "ip", "-j", "-d", "link", "show").stdout
    assert "xdp_theirs" in show and "hs_input" not in show


# M raw frames on r-rx from a packet socket that bypasses the qdisc
# (__dev_direct_xmit): transmitted with no net_dev_start_xmit, as a packet of
# a fast path with no stage on the CPU would be
BYPASS = r"""
import socket, sys
m = int(sys.argv[1])
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.setsockopt(263, 20, 1)  # SOL_PACKET, PACKET_QDISC_BYPASS
s.bind(("r-rx", 0))
frame = b"\xff" * 6 + b"\x02\x00\x00\x00\x00\x01" + b"\x88\xb5" + bytes(46)  # local experimental
for _ in range(m):
    assert s.send(frame) == len(frame)
"""


def test_what_leaves_an_output_unseen_is_counted(tb, recorder):
    """END's outputs_tx: every transmit on the traced outputs is seen at t4
    or counted unseen, exactly when the outputs are quiet at start and stop"""
    tb.up()
    ipv4_only()
    rec = recorder(ins="r-s1", outs="r-rx")
    before = links()
    send_udp(N, port=SLOW, sport=41003)
    wait_out(before, N)
    m = 37
    r = ns("router", sys.executable, "-c", BYPASS, str(m), check=False)
    assert r.returncode == 0, r.stderr
    df, c = stopped(rec)
    tx = df.attrs["trailer"]["outputs_tx"]
    # and the flow's packets whose t4 probe the kernel skipped (left_router):
    # they left too, past no probe
    skipped = int((df.status.isin(["inflight", "evicted"]) & (df.t3 > 0)).sum())
    assert tx["unseen"] == m + skipped, (tx, skipped, c)
    assert tx["tx_packets"] + tx["tx_dropped"] == tx["seen_at_t4"] + m, tx
    assert tx["seen_at_t4"] == c["complete"] + c["partial"] + c["out_nometa"] + c["out_segs"]
    assert f"hopscope: {m + skipped} packets left the traced outputs without passing t4" \
        in rec.summary
    text = sh(HOPSCOPE, "describe", str(rec.out)).stdout
    assert f"{m + skipped} packets left the traced outputs without passing t4" in text, text
