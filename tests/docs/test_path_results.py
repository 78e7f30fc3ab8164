"""evaluation/path/README.md's tables are those of the committed
results.json, as evaluation/path/results.py writes them: no number typed
by hand or left stale; and every file the README cites is committed."""
import json
import re
from pathlib import Path

from generated_pages import cited, planted_round_trip, run

ROOT = Path(__file__).resolve().parents[2]
PATH = ROOT / "evaluation" / "path"
SCRIPT = PATH / "results.py"


def test_the_readme_tables_are_the_committed_json():
    r = run(SCRIPT, "--check")
    assert r.returncode == 0, r.stderr


def test_a_changed_number_is_caught_and_rewritten(tmp_path):
    res = json.loads((PATH / "results.json").read_text())
    high = [r for r in res["runs"] if r["condition"] == "high"]
    planted = 123_456_789  # ns: every run's end-to-end p99
    for r in high:
        r["stages"]["path transit"][1] = planted
    planted_round_trip(SCRIPT, res, PATH / "README.md", tmp_path,
                       "| high | " + ", ".join(["123,457"] * len(high)) + " |")


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
    assert {"results.json", "results.py", "stages-high.png", "tail-low.png"} <= \
        cited(PATH, ("md", "json", "py", "png", "toml"))
