"""evaluation/paper/README.md's verdicts are those of the committed
paper.json, as evaluation/paper/verdicts.py writes them: no figure typed
by hand or left stale; and every report the README cites is committed."""
import json
from pathlib import Path

from generated_pages import cited, planted_round_trip, run

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "evaluation" / "paper"
SCRIPT = PAPER / "verdicts.py"


def test_the_readme_verdicts_are_the_committed_json():
    r = run(SCRIPT, "--check")
    assert r.returncode == 0, r.stderr


def test_a_changed_verdict_is_caught_and_rewritten(tmp_path):
    report = json.loads((PAPER / "paper.json").read_text())
    report["claims"][0]["verdict"] = "planted"
    planted_round_trip(SCRIPT, report, PAPER / "README.md", tmp_path, "| **planted** |")


def test_every_report_the_readme_cites_is_committed():
    assert "paper.md" in cited(PAPER, ("md", "json", "pdf", "png"))
