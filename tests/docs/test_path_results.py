"""evaluation/path/README.md's tables are those of the committed
results.json, as evaluation/path/results.py writes them: no number typed
by hand or left stale; and every file the README cites is committed."""
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "evaluation" / "path"
SCRIPT = PATH / "results.py"


def results(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True,
                          text=True)


def test_the_readme_tables_are_the_committed_json():
    r = results("--check")
    assert r.returncode == 0, r.stderr


def test_a_changed_number_is_caught_and_rewritten(tmp_path):
    res = json.loads((PATH / "results.json").read_text())
    high = [r for r in res["runs"] if r["condition"] == "high"]
    planted = 123_456_789  # ns: every run's end-to-end p99
    for r in high:
        r["stages"]["path transit"][1] = planted
    js, readme = tmp_path / "results.json", tmp_path / "README.md"
    js.write_text(json.dumps(res))
    readme.write_text((PATH / "README.md").read_text())
    r = results("--check", "--json", js, "--readme", readme)
    assert r.returncode == 1 and "are not those of" in r.stderr
    assert results("--json", js, "--readme", readme).returncode == 0
    text = readme.read_text()
    assert "| high | " + ", ".join(["123,457"] * len(high)) + " |" in text
    assert results("--check", "--json", js, "--readme", readme).returncode == 0
    readme.write_text("no markers")
    r = results("--json", js, "--readme", readme)
    assert r.returncode == 1 and "no markers" in r.stderr and "Traceback" not in r.stderr


def test_the_loss_table_adds_up_per_condition():
    """Each condition's row: entered = delivered + dropped + tracer's + other,
    as summed from the runs' loss tables in results.json."""
    res = json.loads((PATH / "results.json").read_text())
    text = (PATH / "README.md").read_text()
    for cond in dict.fromkeys(r["condition"] for r in res["runs"]):
        row = re.search(rf"^\| {cond} \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| (\d+) \| "
                        rf"(\d+) \| (\d+) \| (\d+) \|$", text, re.M)
        assert row, cond
        _, _, entered, delivered, r1, r2, unseen, other, _ = map(int, row.groups())
        assert entered == delivered + r1 + r2 + unseen + other
        assert entered == sum(x[2] for r in res["runs"] if r["condition"] == cond
                              for x in r["loss"])


def test_every_file_the_readme_cites_is_committed():
    text = (PATH / "README.md").read_text()
    cited = set(re.findall(r"\]\(([^)#]+\.(?:md|json|py|png|toml))\)", text))
    assert {"results.json", "results.py", "stages-high.png", "tail-low.png"} <= cited
    for path in cited:
        assert (PATH / path).resolve().exists(), path
