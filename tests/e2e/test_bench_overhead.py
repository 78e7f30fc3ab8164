"""evaluation/bench/overhead.py end to end, as a smoke run of seconds: its timings are
evaluation/bench/'s and README's, never a test's. Every configuration forwards in the
same round, recording keeps the packets it forwarded, every traced
configuration gets its ns per run, and evaluation/bench/overhead_table.py renders the
JSON. Own prefix (hst-bo-); the bench takes its testbed down itself."""
import json
import os
import shutil
import subprocess
import sys

from testlib import run_bench

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "evaluation", "bench", "overhead_table.py")
PREFIX = "hst-bo-"
CONFIGS = {"untraced", "floor", "clock", "traced", "tcpdump", "aggregate", "sampled"}


def test_a_short_run_measures_every_configuration(tmp_path):
    out = tmp_path / "overhead.json"
    # beside forks: the bench's own other work, started and stopped by it
    r = run_bench("overhead", "--payloads", "64", "--rounds", "1", "--seconds", "0.5",
                  "--beside", "fork", "-o", out, prefix=PREFIX)
    res = json.loads(out.read_text())
    rnd = res["rounds"][0]["64"]
    assert set(rnd) == CONFIGS and all(rnd[c]["pps"] > 0 for c in CONFIGS), rnd
    # windows another task voided are measured again, at most 3 times, and said
    assert all(0 <= rnd[c]["repeated"] <= 3 for c in CONFIGS), rnd
    assert res["summary"]["64"]["repeated"] == sum(rnd[c]["repeated"] for c in CONFIGS)
    # exact accounting, whatever the machine's speed or load: every IP packet
    # seen at t1 is a record or lost in the ring (counted), every complete
    # packet the kernel counted a complete record or lost in the ring, and
    # nothing forwarded in the window is missing from both
    t = rnd["traced"]
    assert t["seen"] == t["records"] + t["ring_lost"], t
    assert t["complete_counted"] == t["complete"] + t["ring_lost_complete"], t
    assert t["forwarded"] <= t["records"] + t["ring_lost"], t
    # the recorder's own work, from its END chunk: what it spent and saw
    rec = t["recorder"]
    assert rec["cpu_ns"] > 0 and rec["write_ns"] > 0, rec
    assert rec["ring_records"] & (rec["ring_records"] - 1) == 0, rec  # a power of 2
    assert 0 < rec["ring_peak_waiting"] <= rec["ring_records"], rec
    assert 0 < rec["write_max_ns"] <= rec["write_ns"], rec
    assert rec["drain_max_gap_ns"] > 0, rec
    s = res["summary"]["64"]
    assert res["beside"] == "fork"
    # the CPU it ran on, by name and number (README's table is per CPU)
    assert res["cpu"]["model_name"] and res["cpu"]["vendor_id"], res["cpu"]
    assert s["ring_lost_per_s"] == t["ring_lost"] / t["seconds"], s
    assert s["recorder_ns_per_record"] == rec["cpu_ns"] / (t["records"] + t["ring_lost"]), s
    assert s["ring_peak_fill"] == rec["ring_peak_waiting"] / rec["ring_records"], s
    assert s["drain_cpu_wait_share"] == rec["drain_cpu_wait_ns"] / 1e9 / t["seconds"], s
    assert "the recorder (fork beside)" in r.stdout
    assert set(res["ns_per_run"]["64"]) == CONFIGS - {"untraced", "tcpdump"}
    page, readme = tmp_path / "overhead.md", tmp_path / "README.md"
    shutil.copy(os.path.join(ROOT, "evaluation", "overhead.md"), page)
    shutil.copy(os.path.join(ROOT, "README.md"), readme)
    t = subprocess.run([sys.executable, TABLE, "--json", str(out), "--page", str(page),
                        "--readme", str(readme)], capture_output=True, text=True)
    assert t.returncode == 0, t.stderr
    assert "| 64 B | " in page.read_text() and "clock floor/floor" in page.read_text()
