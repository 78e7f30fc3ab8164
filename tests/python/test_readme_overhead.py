"""README's overhead table is what bench/overhead_table makes of the committed
results/bench/overhead.json: no figure in it typed by hand or left stale."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "bench", "overhead_table")
JSON = os.path.join(ROOT, "results", "bench", "overhead.json")
README = os.path.join(ROOT, "README.md")


def table(*args):
    return subprocess.run([sys.executable, TABLE, *map(str, args)], capture_output=True,
                          text=True)


def test_readme_table_is_the_committed_json():
    r = table("--check")
    assert r.returncode == 0, r.stderr


def test_a_changed_measurement_makes_the_check_fail(tmp_path):
    res = json.load(open(JSON))
    res["rounds"][0]["64"]["traced"]["pps"] *= 0.9  # one round slower: the spread moves
    changed = tmp_path / "overhead.json"
    changed.write_text(json.dumps(res))
    r = table("--json", changed, "--check")
    assert r.returncode == 1 and "run bench/overhead_table" in r.stderr
    # and writing makes README match it
    readme = tmp_path / "README.md"
    readme.write_text(open(README).read())
    assert table("--json", changed, "--readme", readme).returncode == 0
    assert table("--json", changed, "--readme", readme, "--check").returncode == 0
    assert readme.read_text() != open(README).read()


def test_the_table_holds_the_machine_rounds_and_spread(tmp_path):
    res = json.load(open(JSON))
    text = open(README).read()
    assert f"`{res['machine']}`" in text
    assert f"{len(res['rounds'])} rounds × {res['seconds']:g} s" in text
    # every round's traced/untraced lies within the spread printed for it
    for p in res["summary"]:
        ratios = [r[p]["traced"]["pps"] / r[p]["untraced"]["pps"] for r in res["rounds"]]
        assert f"({min(ratios):.3f}–{max(ratios):.3f})" in text


def test_the_floor_goal_and_the_windows_measured_again_are_said(tmp_path):
    res = json.load(open(JSON))
    readme = tmp_path / "README.md"
    for pps, repeated, verdict in ((0.5, 0, "NOT met"), (1.0, 2, "met")):
        for r in res["rounds"]:  # traced as fast as the floor, or half of it
            for p in r:
                r[p]["traced"]["pps"] = r[p]["floor"]["pps"] * pps
                r[p]["traced"]["repeated"] = repeated
        for p in res["summary"]:
            res["summary"][p]["repeated"] = repeated * len(res["rounds"])
        changed = tmp_path / "overhead.json"
        changed.write_text(json.dumps(res))
        readme.write_text(open(README).read())
        assert table("--json", changed, "--readme", readme).returncode == 0
        text = readme.read_text()
        assert f"traced/floor ≥ 0.93 is {verdict}; the lowest median is {pps:.3f}" in text
        n = repeated * len(res["rounds"]) * len(res["summary"])
        assert (f"{n} windows were measured again" in text) == bool(repeated)


def test_the_goals_are_the_ones_the_bench_wrote(tmp_path):
    """The table judges by the goals in the JSON (bench/overhead's), the
    programs' ns per run against the empty ones' included."""
    res = json.load(open(JSON))
    res["goals"]["traced_over_floor"] = 0.5
    res["goals"]["ns_per_run_over_floor"] = 100
    changed, readme = tmp_path / "overhead.json", tmp_path / "README.md"
    changed.write_text(json.dumps(res))
    readme.write_text(open(README).read())
    assert table("--json", changed, "--readme", readme).returncode == 0
    text = readme.read_text()
    assert "traced/floor ≥ 0.5 is met" in text
    assert "Each stage's program within 100× the empty program's ns per run: met" in text
    for ns in res["ns_per_run"].values():
        ns["traced"]["hs_prerouting"] = ns["floor"]["hs_prerouting"] * 200
    changed.write_text(json.dumps(res))
    assert table("--json", changed, "--readme", readme).returncode == 0
    assert "within 100× the empty program's ns per run: NOT met by `hs_prerouting`" in \
        readme.read_text()


def test_user_errors_are_said_without_a_traceback(tmp_path):
    no_markers = tmp_path / "README.md"
    no_markers.write_text("# a README without the table's markers\n")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    for args, message in ((["--readme", no_markers], "no overhead table markers"),
                          (["--json", tmp_path / "missing.json"], "No such file"),
                          (["--json", bad], "is not bench/overhead's JSON")):
        r = table(*args, "--check")
        assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr
