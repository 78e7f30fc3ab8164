"""evaluation/bench/drain_threads.py end to end, as a smoke run of seconds: its
rates are evaluation/bench/'s, never a test's. With the router's receive work
on every CPU, one drain thread and one per CPU each record every packet the
router forwarded, exactly accounted. Own prefix (hst-dt-); the bench takes
its testbed down itself."""
import json
import os
import subprocess
import sys

import pytest

from testlib import namespaces

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "evaluation", "bench", "drain_threads.py")
PREFIX = "hst-dt-"


@pytest.mark.skipif(os.cpu_count() < 2, reason="needs two CPUs")
def test_a_short_run_accounts_for_every_packet(tmp_path):
    out = tmp_path / "dt.json"
    r = subprocess.run([sys.executable, BENCH, "--rounds", "1", "--seconds", "0.5",
                        "-o", str(out)], capture_output=True, text=True,
                       env=dict(os.environ, HS_PREFIX=PREFIX), timeout=600)
    try:
        assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    finally:
        assert not namespaces(PREFIX)
    res = json.loads(out.read_text())
    rnd, = res["rounds"]
    cpus = os.cpu_count()
    assert set(rnd) == {"untraced", "threads_1", f"threads_{cpus}"}
    for threads in (1, cpus):
        t = rnd[f"threads_{threads}"]
        assert t["recorder"]["drain_threads"] == threads, t
        # every IP packet seen at t1 is a record or lost in a ring; every
        # complete one the kernel counted is a complete record or lost
        assert t["seen"] == t["records"] + t["ring_lost"], t
        assert t["complete_counted"] == t["complete"] + t["ring_lost_complete"], t
        assert t["forwarded"] <= t["records"] + t["ring_lost"], t
        assert sum(t["complete_by_cpu"].values()) == t["complete"], t
    assert "drain threads" in r.stdout and "lost/s" in r.stdout
