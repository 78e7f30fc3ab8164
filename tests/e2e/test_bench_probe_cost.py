"""evaluation/bench/probe_cost.py end to end, as a smoke run of seconds: its
builds are made from the tree's sources with the bench-only switches, every
configuration forwards and gets its ns per run, and t1's test runs time each
build. Its figures are evaluation/'s, never a test's. Own prefix (hst-pc-);
the bench takes its testbed down itself."""
import json
import os

from testlib import ROOT, run_bench

PREFIX = "hst-pc-"
STAGES = {"hs_input", "hs_prerouting", "hs_postrouting", "hs_output"}


def test_a_short_run_takes_every_part_apart(tmp_path):
    out = tmp_path / "probe_cost.json"
    run_bench("probe_cost", "--rounds", "1", "--stats-rounds", "1", "--seconds", "0.5",
              "-o", out, prefix=PREFIX)
    res = json.loads(out.read_text())
    configs = set(res["configs"])
    assert {"untraced", "floor", "clock", "traced", "no_key", "no_handover"} <= configs
    assert all(res["rounds"][0][c]["pps"] > 0 for c in configs), res["rounds"]
    stats = res["stats_rounds"][0]
    assert set(stats) == configs - {"untraced"}
    assert all(set(stats[c]) == STAGES for c in stats), stats
    # the builds that leave a part out are the bench's own, beside the tree's
    for build in res["builds"]:
        assert os.path.exists(os.path.join(ROOT, "build", "probe-cost", build, "hopscope"))
    t1 = res["t1_test_runs"][0]
    assert set(t1) == {"floor", "clock", "traced", "no_key"}
    assert all(0 < t1[c]["middle_mean"] for c in t1), t1
    assert res["cpu"]["model_name"] and res["summary"]["traced"]["ns_per_run"]
