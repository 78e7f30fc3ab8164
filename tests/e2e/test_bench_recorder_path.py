"""evaluation/bench/recorder_path.py end to end, as a smoke run: its rates are
evaluation/bench/'s and README's, never a test's. Every record the producer
put in the ring is in the file, on tmpfs and on disk, and the report says
the goals either way."""
import json
import os
import subprocess
import sys

import hopscope

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "evaluation", "bench", "recorder_path.py")
N = 300_000  # several laps of the 65536-record ring, and a few chunks


def test_a_short_run_keeps_every_record(tmp_path):
    out = tmp_path / "rp.json"
    r = subprocess.run([sys.executable, BENCH, "--records", str(N), "--rounds", "1",
                        "--dd-mib", "16", "-o", str(out)], capture_output=True, text=True,
                       timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    res = json.loads(out.read_text())
    rnd, = res["rounds"]
    for where in ("tmpfs", "disk"):
        run = rnd[where]
        # exact accounting: made, drained, written, none lost or left out
        assert run["records"] == run["written"] == N and run["not_stored"] == 0, run
        # as columns, each record keeps at least its t1 and seq (16 bytes)
        assert N * 16 <= run["file_bytes"] < N * res["record_bytes"], run
        assert run["seconds"] > 0 and run["io_cpu_s"] > 0, run
        assert 0 < run["ring_peak_waiting"] <= run["ring_records"] == res["ring_records"], run
        assert run["seconds"] > 0 and run["drain_cpu_s"] > 0, run
    assert rnd["memcpy_bytes_per_s"] > 0 and rnd["disk_sequential_bytes_per_s"] > 0, rnd
    assert "goal 5 M records/s to tmpfs: " in r.stdout, r.stdout
    assert "goal the disk file within 2x the disk's sequential rate: " in r.stdout, r.stdout
    # no file left behind in the tree
    assert not [p for p in os.listdir(os.path.join(ROOT, "evaluation")) if p.startswith("tmp")]


def test_bad_options_exit_2():
    for args in (["--records", "0"], ["--dd-mib", "0"], ["--rounds", "0"]):
        r = subprocess.run([sys.executable, BENCH, *args], capture_output=True, text=True)
        assert r.returncode == 2 and "must be at least 1" in r.stderr, (args, r.stderr)


def test_the_file_reads_back_whole(tmp_path):
    """what the bench's program writes is a record file hopscope reads, every
    record in it"""
    f = tmp_path / "path.hsr"
    r = subprocess.run([os.path.join(ROOT, "build", "recorder_path"), "path", str(f), "100000",
                        "12", "0", "1"], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["written"] == 100000
    rf = hopscope.RecordFile(str(f))
    assert rf.n_records == 100000 and not rf.problems, rf.problems
