"""What the tests that run real recordings share: commands in the testbed's
namespaces, the recorder in the background, the checks that a test left no
namespace or BPF program behind. The testbed itself is the package's
(hopscope.traffic.testbed.Testbed); the fixtures are in tests/e2e/conftest.py."""
import json
import os
import select
import signal
import subprocess
import sys
import time

import numpy as np

from hopscope.traffic.testbed import TESTBED, Testbed  # noqa: F401 (TESTBED: for the tests)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOPSCOPE = os.path.join(ROOT, "build", "hopscope")
PREFIX = "hst-e2e-"


T4_UNSEEN = 0x80  # hs_record.flags (docs/record-format.md)


def left_router(d):
    """Which of these records are of packets that left the router: complete,
    or, where the kernel skipped the t4 probe (a platform that runs no BPF
    tracepoint program in some task's context: docs/troubleshooting.md),
    recorded with t1..t3 as inflight or (its slot taken a lap later) evicted,
    and flagged t4_unseen by the recorder (it left: a later packet of its
    flow did). A test that counts forwarded packets counts exactly these."""
    unseen = (((d["flags"].to_numpy() & T4_UNSEEN) != 0)
              & d.status.isin(["inflight", "evicted"]).to_numpy())
    # past routing (t3), or on a fast path, which has no t2 or t3
    past = (d.t3.to_numpy() > 0) | (d.t2.to_numpy() == 0)
    return (d.status == "complete").to_numpy() | (unseen & past)


def ditg_logged_but_a_tail(t):
    """Whether a D-ITG sender's packets (a truth table's rows, one sender)
    were all in ITGRecv's log but, at most, its last ones: ITGRecv ends a
    flow when the sender signals its end and leaves what its socket still
    holds unread, which a busy receiver CPU makes a few packets (the
    receiver's kernel got them: its interface counted them; UDP's
    InDatagrams counts reads only)."""
    got = t.sort_values("seq").received.to_numpy()
    return not got.any() or got[:np.flatnonzero(got)[-1] + 1].all()


def sh(*cmd, check=True, **kw):
    return subprocess.run(cmd, check=check, capture_output=True, text=True, **kw)


def ns(name, *cmd, prefix=PREFIX, **kw):
    """Run cmd in the testbed namespace name (sender1, router, ...)."""
    return sh("ip", "netns", "exec", prefix + name, *cmd, **kw)


def _descends_from_us(pid):
    """pid is this test process or one it started (directly or not)."""
    while pid > 1:
        if pid == os.getpid():
            return True
        try:
            with open(f"/proc/{pid}/stat") as f:
                pid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            return False
    return False


def _prog_holders():
    """{BPF program id: pids whose open program or link fds hold it}, from
    /proc/*/fdinfo (bpftool here names no holders)."""
    held = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            fds = os.listdir(f"/proc/{pid}/fdinfo")
        except OSError:
            continue
        for fd in fds:
            try:
                with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                    for line in f:
                        if line.startswith("prog_id:"):
                            held.setdefault(int(line.split()[1]), set()).add(int(pid))
            except (OSError, ValueError):
                pass
    return held


def hs_programs(since=0):
    """hopscope's BPF programs loaded after program id `since` that are this
    test's: held by a process it started, or by none (left attached). Other
    recorders on the machine (another session's) are not ours to judge."""
    progs = json.loads(sh("bpftool", "-j", "prog", "show", check=False).stdout or "[]")
    held = _prog_holders()
    return [p["id"] for p in progs
            if p.get("name", "").startswith("hs_") and p["id"] > since
            and not any(not _descends_from_us(pid) for pid in held.get(p["id"], ()))]


def last_prog_id():
    progs = json.loads(sh("bpftool", "-j", "prog", "show", check=False).stdout or "[]")
    return max((p["id"] for p in progs), default=0)


def namespaces(prefix):
    """The network namespaces whose names start with prefix."""
    return [line.split()[0] for line in sh("ip", "netns", "list").stdout.splitlines()
            if line.startswith(prefix)]


def run_bench(name, *args, prefix, timeout=900):
    """evaluation/bench/NAME.py run with args on a testbed prefix of its own
    (the bench brings its testbed up and down): its completed process, once
    it exited 0 and left no namespace of prefix behind."""
    bench = os.path.join(ROOT, "evaluation", "bench", f"{name}.py")
    r = subprocess.run([sys.executable, bench, *map(str, args)], capture_output=True, text=True,
                       env=dict(os.environ, HS_PREFIX=prefix), timeout=timeout)
    try:
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    finally:
        left = namespaces(prefix)
        assert not left, left
    return r


def namespaced_testbed(prefix):
    """A fixture's body: a Testbed on prefix, taken down before (whatever an
    interrupted run left) and after; then no namespace of it and no BPF
    program of this test may be left."""
    tb = Testbed(prefix)
    tb.down()
    tb.since = last_prog_id()
    yield tb
    tb.down()
    left = sh("ip", "netns", "list").stdout
    assert prefix not in left, "namespaces left behind: " + left
    assert not hs_programs(tb.since), "BPF programs left loaded"


def start_recorder(argv, timeout=60, **kw):
    """Popen(argv + --ready-fd), returned once the recorder says it is
    attached: the line `ready` on the pipe; end of file means it failed."""
    r, w = os.pipe()
    try:
        p = subprocess.Popen([*argv, "--ready-fd", str(w)], pass_fds=(w,), **kw)
    finally:
        os.close(w)
    with os.fdopen(r, "rb") as ready:
        line = ready.readline() if select.select([ready], [], [], timeout)[0] else b""
    if line != b"ready\n":
        p.kill()
        _, err = p.communicate()
        raise AssertionError(f"recorder did not start ({line!r}): {err}")
    return p


class Recorder:
    """`hopscope record` in the background; stop() sends SIGINT like Ctrl-C."""

    def __init__(self, out, *extra, ins="r-s1,r-s2", outs="r-rx", prefix=PREFIX, wrap=()):
        """wrap: a command that runs the recorder (its argv follows)"""
        self.out = str(out)
        self.p = start_recorder([*wrap, HOPSCOPE, "record", "--netns", prefix + "router",
                                 "--in", ins, "--out", outs, "-o", self.out, *extra],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                errors="replace")

    def stop(self, timeout=30):
        if self.p.poll() is None:
            self.p.send_signal(signal.SIGINT)
        try:
            _, err = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise
        assert self.p.returncode == 0, err
        self.summary = err
        return self.summary

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def wait_for(pred, timeout=10, step=0.1):
    end = time.time() + timeout
    while time.time() < end:
        if pred():
            return True
        time.sleep(step)
    return False
