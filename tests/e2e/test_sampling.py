"""`record --sample`: one packet in N traced, drawn at random per packet at
t1, through the testbed's router. The estimate N x count is the packets
forwarded within the binomial error, the traced packets spread over the run
without following the stream's period, the packets left out raise no loss
counter, auto mode changes N under load and every output says so. Own
prefix (hst-sm-)."""
import math
import subprocess
import sys

import numpy as np
import pytest

import hopscope
import livebed
from testlib import HOPSCOPE, sh, wait_for
from hopscope.record.reader import RecordFile
from hopscope.traffic import packetkey as pk
from test_slots import QUIET_SOCKET  # a tap on r-s1 that holds a copy of every packet
from livebed import RX4, checked, delta, ipv4_only, links, ns, recorder, tb  # noqa: F401

N = 8
PACKETS = 8000
SD = 5  # the tolerance in binomial standard deviations: a false failure is ~1e-6


@pytest.fixture(autouse=True)
def prefix(monkeypatch):
    """livebed's helpers on this file's own namespaces"""
    monkeypatch.setattr(livebed, "P", "hst-sm-")


def within_binomial(traced, total, n=N):
    """traced ~ Binomial(total, 1/n): n x traced is total within SD sd"""
    sd = math.sqrt(total * (1 / n) * (1 - 1 / n))
    return abs(traced - total / n) <= SD * sd


def no_loss_from_unsampled(df, before, after):
    """the packets left out at t1 are marked, and no later stage counts them
    as lost: every traced packet is complete (or still in its slot at the
    stop, its t4 probe skipped by the kernel: docs/troubleshooting.md), and
    the only packets without metadata are those that came in on r-rx, which
    is not traced (the receiver's ICMP errors)"""
    c = df.attrs["trailer"]["counters"]
    skipped = df.attrs["trailer"]["userspace"]["inflight_at_stop"]
    sampled = c["xdp_pkts"] - c["unsampled"]
    assert c["pre_pkts"] - c["local"] == c["post_pkts"] == c["out_pkts"] + skipped, c
    assert c["out_pkts"] == c["complete"], c
    assert c["complete"] + skipped + c["local"] + c["xdp_nonip"] == sampled, c
    for k in ("stale", "evicted", "race", "xdp_meta_fail", "out_nometa", "dropped"):
        assert c[k] == 0, (k, c)
    assert c["pre_nometa"] == c["post_nometa"] <= delta(after, before, "r-rx", "rx"), c


def send(n, port, sport=40000, tclass=0, burst=100, seconds=1e9):
    """n datagrams of 64 B (or as many as `seconds` allow) from sender1 on
    its CPU (0), each payload its index repeated; a 1 ms pause after each
    `burst` keeps the router's input backlog (1000) from overflowing on a
    busy machine"""
    code = ("import socket,time\n"
            "s=socket.socket(socket.AF_INET,socket.SOCK_DGRAM)\n"
            f"s.setsockopt(0,1,{tclass})\n"  # IP_TOS
            f"s.bind(('',{sport}))\n"
            f"end=time.monotonic()+{seconds}\n"
            f"for i in range({n}):\n"
            f"    s.sendto((i%(1<<32)).to_bytes(4,'big')*16,('{RX4}',{port}))\n"
            f"    if i%{burst}=={burst - 1}:\n"
            "        time.sleep(0.001)\n"
            "        if time.monotonic()>end: break\n")
    ns("sender1", "taskset", "-c", "0", sys.executable, "-c", code, timeout=300)


def settled(before):
    """once r-rx has stopped sending (the packets the router took are all
    out): the router's interface counters, and the packets r-rx forwarded"""
    last = [None]

    def still():
        now = delta(links(), before, "r-rx", "tx")
        done, last[0] = now == last[0], now
        return done
    assert wait_for(still, timeout=60, step=0.5)
    after = links()
    return after, delta(after, before, "r-rx", "tx")


@pytest.mark.parametrize("mode", ["--aggregate", "--histograms"])
def test_sample_estimates_the_packets_forwarded(tb, recorder, mode):
    tb.up()
    ipv4_only()
    rec = recorder(mode, "--sample", str(N))
    before = links()
    send(PACKETS, port=5001, tclass=4)
    after, forwarded = settled(before)
    text = rec.stop()
    if mode == "--histograms":
        df = checked(rec.out)
    else:  # no records: checked()'s sums are of records
        assert sh(HOPSCOPE, "verify", rec.out, check=False).returncode == 0
        df = hopscope.load(rec.out, strict=True)
    c = df.attrs["trailer"]["counters"]
    s = df.attrs["sampling"]
    assert df.attrs["header"]["sampling"] == {"mode": "fixed", "n": N}
    assert s["mode"] == "fixed" and s["n"] == s["n_min"] == s["n_max"] == N and s["scale"] == N
    assert s["seen"] == c["xdp_pkts"] and s["unsampled"] == c["unsampled"] > 0, (s, c)
    assert s["sampled"] + s["unsampled"] == s["seen"] >= forwarded, s
    no_loss_from_unsampled(df, before, after)
    transit = [h for h in df.attrs["histograms"] if h["delay"] == "transit"]
    assert [h["count"] for h in transit] == [c["complete"]], transit
    # the histograms keep raw counts: N x count estimates every packet forwarded
    assert within_binomial(transit[0]["count"], forwarded), (transit[0]["count"], forwarded)
    if mode == "--histograms":  # the records are the traced packets, as many
        assert (df.status == "complete").sum() == c["complete"]
    else:
        assert len(df) == 0
    assert f"sampled: 1 packet in {N} (fixed)" in text, text
    d = sh(HOPSCOPE, "describe", rec.out).stdout
    assert f"sampling    1 packet in {N}, at random; {s['sampled']} of {s['seen']}" in d, d


def test_a_tap_loses_the_mark_and_still_no_packet(tb, recorder):
    """a tap holds a copy of each packet's head: forwarding copies the head
    and the kernel clears its metadata, so t3 and t4 find a packet left out
    through by_skb, as they find a traced one. The receiver's XDP sink
    sends no ICMP errors back: a packet of r-rx's without metadata would
    look its skb up in by_skb too, and count stale where an earlier
    packet's skb had its address"""
    tb.up("--sink")
    ipv4_only()
    tap = subprocess.Popen(["ip", "netns", "exec", livebed.P + "router", sys.executable, "-c",
                            QUIET_SOCKET], stdout=subprocess.PIPE, text=True)
    try:
        assert tap.stdout.readline() == "ready\n"
        rec = recorder("--sample", str(N))
        before = links()
        send(PACKETS // 4, port=5004)
        after, forwarded = settled(before)
        rec.stop()
    finally:
        tap.kill()
        tap.wait()
    df = checked(rec.out)
    c = df.attrs["trailer"]["counters"]
    no_loss_from_unsampled(df, before, after)
    assert c["unsampled"] > 0 and within_binomial(c["complete"], forwarded), c


def test_traced_packets_spread_over_the_run_off_its_period(tb, recorder):
    """a constant stream of same-size packets of one flow: each record's key
    gives its packet's place in the stream (its payload is its index), and
    the places traced are not every Nth: their gaps vary"""
    tb.up()
    ipv4_only()
    rec = recorder("--sample", str(N))
    before = links()
    send(PACKETS, port=5002)
    _, forwarded = settled(before)
    rec.stop()
    df = checked(rec.out)
    idx = np.arange(PACKETS)
    payload = np.repeat(pk.be32(idx)[:, None], 4, axis=1)
    keys = pk.key_hash(pk.udp4_words("198.18.1.2", RX4, 40000, 5002, np.full(PACKETS, 64),
                                     payload))
    place = dict(zip(keys.tolist(), idx.tolist()))
    done = df[df.status == "complete"]
    at = np.sort([place[k] for k in done.key.tolist() if k in place])
    assert len(at) == len(done) and within_binomial(len(at), forwarded), (len(at), forwarded)
    # over the whole run: none in a quarter of it has chance (7/8)^2000
    assert at[0] < PACKETS // 4 and at[-1] > 3 * PACKETS // 4, at
    gaps = np.diff(at)
    # a gap is geometric (mean N): N itself in ~5 % of them, every one for
    # a sampler in step with the stream
    assert len(set(gaps.tolist())) > 5 and (gaps == N).mean() < 0.5, np.bincount(gaps)


def test_auto_changes_n_under_load_and_says_so(tb, recorder):
    """a budget of 0.01 % of a CPU (100 us a second) is a few hundred traced
    packets a second: any load the testbed forwards asks for N > 1"""
    tb.up()
    ipv4_only()
    rec = recorder("--aggregate", "--sample", "auto", "--cpu-budget", "0.01")
    send(10**9, port=5003, burst=500, seconds=4)
    text = rec.stop()
    df = hopscope.load(rec.out, strict=True)
    assert df.attrs["header"]["sampling"] == {"mode": "auto", "n": 1, "cpu_budget_pct": 0.01}
    snaps = [c["sampling"]["n"] for c in RecordFile(rec.out).snapshots]
    s = df.attrs["sampling"]
    assert max(snaps) > 1 and s["n_max"] == max(snaps + [s["n"]]) and s["n_min"] == 1, (snaps, s)
    assert s["unsampled"] > 0 and s["sampled"] + s["unsampled"] == s["seen"], s
    assert s["scale"] == pytest.approx(s["seen"] / s["sampled"]), s
    assert "sampled: 1 packet in" in text and "(auto" in text, text
    d = sh(HOPSCOPE, "describe", rec.out).stdout
    assert "sampling    auto, within 0.01 % of a CPU: 1 packet in 1.." in d, d


def test_usage_errors(tmp_path):
    def rec(*a):
        return sh(HOPSCOPE, "record", "-i", "x", "-O", "y", "-o", str(tmp_path / "f.hsr"), *a,
                  check=False)
    for args, why in ((("--sample", "0"), "--sample takes auto or an integer"),
                      (("--sample", "-3"), "--sample takes auto or an integer"),
                      (("--sample", "8x"), "--sample takes auto or an integer"),
                      (("--sample", "99999999999"), "--sample takes auto or an integer"),
                      (("--sample", "auto"), "--sample auto and --cpu-budget PCT go together"),
                      (("--cpu-budget", "5"), "--sample auto and --cpu-budget PCT go together"),
                      (("--sample", "8", "--cpu-budget", "5"), "go together"),
                      (("--sample", "auto", "--cpu-budget", "0"), "--cpu-budget is a percentage"),
                      (("--sample", "auto", "--cpu-budget", "101"), "--cpu-budget is a percentage"),
                      (("--sample", "auto", "--cpu-budget", "nan"), "--cpu-budget is a percentage"),
                      (("--sample", "8", "--floor"), "--floor"),
                      (("--sample", "8", "--backend", "kmod"), "eBPF backend"),
                      (("--sample", "8", "--stages", "t0"), "--stages t0")):
        r = rec(*args)
        assert r.returncode == 2 and why in r.stderr, (args, r.stderr)
        assert "Traceback" not in r.stderr
