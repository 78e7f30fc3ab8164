"""`hopscope top` on a live router: `--once --json` against the kernel's own
counts, the recorder top runs for itself started and stopped with it (no
BPF link left, also on SIGTERM), the full screen under a pseudo-terminal,
and the errors a user can make. Own prefix (hst-tp-)."""
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time

import pytest

import livebed
from testlib import HOPSCOPE, hs_programs, sh, wait_for
from hopscope.live import snapshot
from hopscope.record import hist
from livebed import ipv4_only, links, net_show, recorder, send_udp, tb, wait_out  # noqa: F401

N = 300
P = "hst-tp-"


@pytest.fixture(autouse=True)
def prefix(monkeypatch):
    """livebed's helpers on this file's own namespaces"""
    monkeypatch.setattr(livebed, "P", P)


def two_senders():
    """N datagrams of TOS 4, then N of TOS 8, through to r-rx"""
    before = links()
    send_udp(N, port=5001, tclass=4)
    send_udp(N, port=5002, sport=40001, tclass=8)
    wait_out(before, 2 * N)


def top(*args, timeout=120):
    return sh(HOPSCOPE, "top", *args, check=False, timeout=timeout, stdin=subprocess.DEVNULL)


def own(*extra):
    """the arguments after -- for a recorder of top's own on this router"""
    return ("--", "-n", P + "router", "-i", "r-s1,r-s2", "-O", "r-rx", *extra)


def test_once_json_is_the_kernels_count(tb, recorder, tmp_path):
    tb.up()
    ipv4_only()
    path = tmp_path / "live.json"
    rec = recorder("--aggregate", "--snapshot", str(path))
    assert wait_for(path.exists, timeout=30)
    two_senders()
    assert wait_for(lambda: sum(s["count"] for s in snapshot.read(path).series
                                if s["delay"] == "transit") == 2 * N, timeout=60)
    r = top("--snapshot", str(path), "--once", "--json", "--window", "start")
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    snap = snapshot.read(path)  # no traffic since: the snapshot top read, counted again
    assert v["format"] == "hopscope-top" and v["run"]["state"] == "live"
    assert v["run"]["netns"] == P + "router" and v["run"]["outputs"] == ["r-rx"]
    stages = {s["stage"]: s for s in v["stages"]}
    assert stages["complete"]["packets"] == snap.counter("complete") == 2 * N
    assert stages["t1"]["packets"] == snap.counter("xdp_pkts") >= 2 * N
    assert stages["t4"]["packets"] == snap.counter("out_pkts") == 2 * N
    for s in v["stages"]:  # a rate is its packets over the window
        assert s["per_s"] == pytest.approx(s["packets"] / v["window"]["seconds"])
    assert v["senders"] == [4, 8]
    series = {(s["tos"], s["delay"]): s for s in snap.series}
    for row in v["by_sender"]:  # transit per sender: the kernel's histogram's buckets
        s = series[(row["tos"], "transit")]
        assert row["count"] == s["count"] == N
        assert row["p50_ns"] == hist.quantile(s, 0.5) and row["p99_ns"] == hist.quantile(s, 0.99)
    assert {d["delay"]: d["count"] for d in v["delays"]} == {
        d: 2 * N for d in ("d_iq", "d_p", "d_oq", "transit")}
    assert v["losses"]["rb_fail"] == 0 and v["drops"] == []
    # one second, now: no traffic in it, and the same view as plain text
    r = top("--snapshot", str(path), "--once", "--json", "--sender", "4")
    assert r.returncode == 0, r.stderr
    one = json.loads(r.stdout)
    assert one["sender"] == 4 and 0 < one["window"]["seconds"] < 30
    assert all(d["count"] == 0 for d in one["delays"])
    text = top("--snapshot", str(path), "--once", "--window", "start")
    assert text.returncode == 0 and f"{P}router  in r-s1,r-s2  out r-rx" in text.stdout
    rec.stop()
    ended = top("--snapshot", str(path), "--once", "--json")  # the last snapshot: at once
    assert ended.returncode == 0 and json.loads(ended.stdout)["run"]["state"] == "ended"


def test_own_recorder_comes_and_goes_with_top(tb, tmp_path):
    tb.up()
    ipv4_only()
    keep = tmp_path / "keep.hsr"
    r = top("--once", "--json", *own("-o", str(keep)))
    assert r.returncode == 0, r.stderr
    v = json.loads(r.stdout)
    assert v["run"]["netns"] == P + "router" and v["run"]["histograms"] == "aggregate"
    assert v["run"]["inputs"] == ["r-s1", "r-s2"]
    # stopped as Ctrl-C stops it: its file is whole, its links gone
    assert sh(HOPSCOPE, "verify", str(keep), check=False).returncode == 0
    assert not hs_programs(tb.since) and not net_show().get("xdp"), net_show()
    # the recorder's own usage error is top's, with its words
    bad = top("--once", "--", "-n", P + "router", "-i", "r-s1")
    assert bad.returncode == 2 and "--in, --out and --output are required" in bad.stderr, \
        bad.stderr


class Pty:
    """a command on a pseudo-terminal of 80x24 columns, TERM as given"""

    def __init__(self, argv, term="xterm"):
        self.master, slave = pty.openpty()
        self.resize(24, 80)
        # its own session, the terminal its controlling one: Ctrl-C is a SIGINT
        self.p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                  env=dict(os.environ, TERM=term), start_new_session=True,
                                  preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
        os.close(slave)
        self.seen = b""

    def wait_for(self, text, timeout=90, since=0):
        """until text is on the screen (in what the program wrote after the
        first `since` bytes)"""
        end = time.monotonic() + timeout
        while text.encode() not in self.seen[since:] and time.monotonic() < end:
            self.read(0.2)
        return text.encode() in self.seen[since:]

    def read(self, wait):
        if select.select([self.master], [], [], wait)[0]:
            try:
                self.seen += os.read(self.master, 65536)
            except OSError:  # the program has gone: no more to read
                time.sleep(wait)

    def resize(self, rows, cols):
        """as a terminal window resized: the program gets SIGWINCH"""
        fcntl.ioctl(self.master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))

    def send(self, keys):
        os.write(self.master, keys.encode())

    def end(self, timeout=60):
        """its exit status, once it has exited (killed if it has not)"""
        end = time.monotonic() + timeout
        while self.p.poll() is None and time.monotonic() < end:
            self.read(0.2)
        if self.p.poll() is None:
            self.p.kill()
        code = self.p.wait()
        os.close(self.master)
        return code


def test_screen_under_a_pty(tb):
    tb.up()
    ipv4_only()
    t = Pty([HOPSCOPE, "top", *own()])
    try:
        assert t.wait_for(f"{P}router  in r-s1,r-s2  out r-rx"), t.seen[-2000:]
        assert t.wait_for("keys: s next sender"), t.seen[-2000:]
        two_senders()
        assert t.wait_for("tos 8 r-rx"), t.seen[-2000:]
        for key in "swsdw":
            t.send(key)
            t.read(0.5)
        mark = len(t.seen)
        t.resize(12, 40)  # smaller than the view: drawn again, cut, not an error
        assert t.wait_for("keys: s next sender", timeout=30, since=mark), t.seen[mark:]
        mark = len(t.seen)
        t.resize(24, 80)
        assert t.wait_for("keys: s next sender", timeout=30, since=mark), t.seen[mark:]
        t.send("q")
    finally:
        code = t.end()
    assert code == 0, t.seen[-2000:]
    assert b"Traceback" not in t.seen
    assert wait_for(lambda: not hs_programs(tb.since), timeout=30)
    assert not net_show().get("xdp"), net_show()


@pytest.mark.parametrize("how, status", [("SIGTERM", 128 + signal.SIGTERM), ("Ctrl-C", 130)])
def test_a_kill_or_ctrl_c_stops_its_recorder(tb, how, status):
    tb.up()
    t = Pty([HOPSCOPE, "top", *own()])
    try:
        assert t.wait_for(f"{P}router  in r-s1,r-s2"), t.seen[-2000:]
        if how == "SIGTERM":
            os.kill(t.p.pid, signal.SIGTERM)
        else:
            t.send("\x03")  # the terminal sends top SIGINT, its recorder (own session) not
    finally:
        code = t.end()
    assert code == status, t.seen[-2000:]
    assert b"Traceback" not in t.seen
    assert wait_for(lambda: not hs_programs(tb.since), timeout=30)
    assert not net_show().get("xdp"), net_show()


def test_usage_errors(tmp_path):
    for args, why in ((("--once",), "--snapshot FILE, or"),
                      (("--snapshot", "x", "--json"), "--json goes with --once"),
                      (("--snapshot", "x", "--once", *own()), "--snapshot FILE, or"),
                      (("--snapshot", "x", "--once", "--sender", "256"), "0..255"),
                      (("--snapshot", "x", "--once", "--window", "5"), "invalid choice"),
                      (("--snapshot", "x"), "not a terminal: use --once")):
        r = top(*args)
        assert r.returncode == 2 and why in r.stderr and "Traceback" not in r.stderr, \
            (args, r.stderr)
    missing = top("--snapshot", str(tmp_path / "none.json"), "--once")
    assert missing.returncode == 1 and "no such snapshot" in missing.stderr, missing.stderr
    # a terminal curses does not know: said, with the way out
    t = Pty([HOPSCOPE, "top", "--snapshot", str(tmp_path / "none.json")], term="no-such-term")
    code = t.end()
    assert code == 2 and b"--once" in t.seen and b"Traceback" not in t.seen, t.seen
