"""evaluation/overhead.md's tables, and README's table of them, are what
evaluation/bench/overhead_table.py makes of the committed
evaluation/results/overhead-*.json, one per CPU, each under its CPU's name:
no figure typed by hand or left stale."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TABLE = ROOT / "evaluation" / "bench" / "overhead_table.py"
JSONS = sorted((ROOT / "evaluation" / "results").glob("overhead-*.json"))
JSON = JSONS[0]
PAGE = ROOT / "evaluation" / "overhead.md"
README = ROOT / "README.md"


def table(*args):
    return subprocess.run([sys.executable, TABLE, *map(str, args)], capture_output=True,
                          text=True)


def copies(tmp_path):
    """The page and README copied, as the arguments that point the table at them."""
    page, readme = tmp_path / "overhead.md", tmp_path / "README.md"
    shutil.copy(PAGE, page)
    shutil.copy(README, readme)
    return page, readme, ("--page", page, "--readme", readme)


def test_the_tables_and_readme_are_the_committed_json():
    r = table("--check")
    assert r.returncode == 0, r.stderr


def test_each_cpu_is_named_in_the_page_and_readme():
    sys.path.insert(0, str(TABLE.parent))
    from overhead_table import cpu_label, cpu_slug
    readme = README.read_text()
    for path in JSONS:
        res = json.loads(path.read_text())
        label = cpu_label(res["cpu"])
        assert path.name == f"overhead-{cpu_slug(res['cpu'])}.json"
        assert f"### {label}\n" in PAGE.read_text()
        assert f"| {label}, {res['cpus']} CPUs | {res['date']}, kernel `{res['machine']}` |" \
            in readme


def test_a_cpu_label_and_its_file_name():
    sys.path.insert(0, str(TABLE.parent))
    from overhead_table import cpu_label, cpu_slug
    xeon = {"model_name": "Intel(R) Xeon(R) Processor", "vendor_id": "GenuineIntel",
            "family": 6, "model": 207}
    assert cpu_label(xeon) == "Intel Xeon (family 6, model 207)"
    assert cpu_slug(xeon) == "intel-xeon-6-207"
    epyc = {"model_name": "AMD EPYC 7B13 64-Core Processor", "family": 25, "model": 1}
    assert cpu_label(epyc) == "AMD EPYC 7B13 64-Core (family 25, model 1)"
    assert cpu_slug({"model_name": "AMD EPYC", "family": None}) == "amd-epyc"


def test_a_changed_measurement_makes_the_check_fail(tmp_path):
    res = json.loads(JSON.read_text())
    res["rounds"][0]["64"]["traced"]["pps"] *= 0.9  # one round slower: the spread moves
    changed = tmp_path / "overhead.json"
    changed.write_text(json.dumps(res))
    r = table("--json", changed, *JSONS[1:], "--check")
    assert r.returncode == 1 and "run evaluation/bench/overhead_table.py" in r.stderr
    # and writing makes both match it
    page, readme, where = copies(tmp_path)
    assert table("--json", changed, *JSONS[1:], *where).returncode == 0
    assert table("--json", changed, *JSONS[1:], *where, "--check").returncode == 0
    assert page.read_text() != PAGE.read_text()


def test_readme_says_the_medians_the_cpu_and_where_the_rest_is(tmp_path):
    res = json.loads(JSON.read_text())
    for p in res["rounds"][0]:
        for r in res["rounds"]:
            r[p]["traced"]["pps"] = r[p]["untraced"]["pps"] * 0.5
    changed = tmp_path / "overhead.json"
    changed.write_text(json.dumps(res))
    _, readme, where = copies(tmp_path)
    assert table("--json", changed, *where).returncode == 0
    text = readme.read_text()
    sys.path.insert(0, str(TABLE.parent))
    from overhead_table import cpu_label
    name = f"| {cpu_label(res['cpu'])}, {res['cpus']} CPUs |"
    row = next(line for line in text.splitlines() if line.startswith(name))
    assert row.split(" | ")[3] == "0.50", row  # recording every packet
    assert "[evaluation/overhead.md](evaluation/overhead.md)" in text


def test_the_table_holds_the_machine_rounds_and_spread():
    text = PAGE.read_text()
    for path in JSONS:
        res = json.loads(path.read_text())
        assert f"`{res['machine']}`: {len(res['rounds'])} rounds × {res['seconds']:g} s" in text
        # every round's traced/untraced lies within the spread printed for it
        for p in res["summary"]:
            ratios = [r[p]["traced"]["pps"] / r[p]["untraced"]["pps"] for r in res["rounds"]]
            assert f"({min(ratios):.3f}–{max(ratios):.3f})" in text


def test_the_floor_goal_and_the_windows_measured_again_are_said(tmp_path):
    res = json.loads(JSON.read_text())
    for pps, repeated, verdict in ((0.5, 0, "NOT met"), (1.0, 2, "met")):
        for r in res["rounds"]:  # traced as fast as the floor, or half of it
            for p in r:
                r[p]["traced"]["pps"] = r[p]["floor"]["pps"] * pps
                r[p]["traced"]["repeated"] = repeated
        for p in res["summary"]:
            res["summary"][p]["repeated"] = repeated * len(res["rounds"])
        changed = tmp_path / "overhead.json"
        changed.write_text(json.dumps(res))
        page, _, where = copies(tmp_path)
        assert table("--json", changed, *where).returncode == 0
        text = page.read_text()
        assert f"traced/floor ≥ 0.93 is {verdict}; the lowest median is {pps:.3f}" in text
        n = repeated * len(res["rounds"]) * len(res["summary"])
        assert (f"{n} windows were measured again" in text) == bool(repeated)


def test_the_goals_are_the_ones_the_bench_wrote(tmp_path):
    """The table judges by the goals in the JSON (evaluation/bench/overhead.py's), the
    programs' ns per run against the empty ones' included."""
    res = json.loads(JSON.read_text())
    res["goals"]["traced_over_floor"] = 0.5
    res["goals"]["ns_per_run_over_floor"] = 100
    changed = tmp_path / "overhead.json"
    changed.write_text(json.dumps(res))
    page, _, where = copies(tmp_path)
    assert table("--json", changed, *where).returncode == 0
    text = page.read_text()
    assert "traced/floor ≥ 0.5 is met" in text
    assert "Each stage's program within 100× the empty program's ns per run: met" in text
    for ns in res["ns_per_run"].values():
        ns["traced"]["hs_prerouting"] = ns["floor"]["hs_prerouting"] * 200
    changed.write_text(json.dumps(res))
    assert table("--json", changed, *where).returncode == 0
    assert "within 100× the empty program's ns per run: NOT met by `hs_prerouting`" in \
        page.read_text()


def test_user_errors_are_said_without_a_traceback(tmp_path):
    no_markers = tmp_path / "README.md"
    no_markers.write_text("# a README without the line's markers\n")
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]")
    for args, message in ((["--readme", no_markers], "no markers"),
                          (["--page", no_markers], "no markers"),
                          (["--json", tmp_path / "missing.json"], "No such file"),
                          (["--json", bad], "is not evaluation/bench/overhead.py's JSON")):
        r = table(*args, "--check")
        assert r.returncode == 1 and message in r.stderr and "Traceback" not in r.stderr
