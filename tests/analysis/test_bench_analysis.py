"""evaluation/bench/analysis.py on a small file: every step runs, DuckDB's percentiles
agree with hopscope's, and the JSON holds each round's times and ratios and
each goal's median and range (the times themselves are not judged here:
they belong to the 10 M run)."""
import json
import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow  # the bench end to end

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BENCH = os.path.join(ROOT, "evaluation", "bench", "analysis.py")


def test_small_run_writes_times_and_ratios(tmp_path):
    out = tmp_path / "analysis.json"
    r = subprocess.run([sys.executable, BENCH, "--records", "20000", "--rounds", "2",
                        "--json", out], capture_output=True, text=True, timeout=300)
    assert r.returncode in (0, 1), r.stderr  # 1: a goal not met, which is timing
    res = json.loads(out.read_text())
    assert res["records"] == 20000 and res["duckdb_agrees"] and len(res["rounds"]) == 2
    assert res["cpu"]["model_name"] and res["machine"]["cpus"] == os.cpu_count()
    for rnd in res["rounds"]:
        assert set(rnd["seconds"]) == {"load", "analyse", "report", "export_parquet",
                                       "read_parquet", "stage_stats_tos", "duckdb_quantiles"}
        assert rnd["records"] == 20000 and rnd["fresh_gb_seconds"] > 0
    assert {k: (v["goal"], v["kind"]) for k, v in res["ratios"].items()} == {
        "report / duckdb_quantiles": (3.0, "max"), "analyse / duckdb_quantiles": (1.5, "max"),
        "read_parquet / load": (5.0, "min")}
    for name, v in res["ratios"].items():
        each = [rnd["ratios"][name] for rnd in res["rounds"]]
        assert v["min"] == min(each) and v["max"] == max(each) and v["min"] <= v["median"] <= v["max"]
        assert v["met"] == (v["median"] <= v["goal"] if v["kind"] == "max" else v["median"] >= v["goal"])
    assert res["met"] == all(v["met"] for v in res["ratios"].values())
    assert "goal <= 3" in r.stdout and ("goals met" in r.stdout) == res["met"]


@pytest.mark.parametrize("args", [["--records", "10"], ["--rounds", "0"]])
def test_too_few_is_a_usage_error(args):
    r = subprocess.run([sys.executable, BENCH, *args, "--json", ""], capture_output=True, text=True)
    assert r.returncode == 2 and "at least 1" in r.stderr and "Traceback" not in r.stderr
