"""evaluation/paper/README.md's verdicts are those of the committed
paper.json, as evaluation/paper/verdicts.py writes them: no figure typed
by hand or left stale; and every report the README cites is committed."""
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAPER = ROOT / "evaluation" / "paper"
SCRIPT = PAPER / "verdicts.py"


def verdicts(*args):
    return subprocess.run([sys.executable, SCRIPT, *map(str, args)], capture_output=True,
                          text=True)


def test_the_readme_verdicts_are_the_committed_json():
    r = verdicts("--check")
    assert r.returncode == 0, r.stderr


def test_a_changed_verdict_is_caught_and_rewritten(tmp_path):
    report = json.loads((PAPER / "paper.json").read_text())
    report["claims"][0]["verdict"] = "planted"
    js, readme = tmp_path / "paper.json", tmp_path / "README.md"
    js.write_text(json.dumps(report))
    readme.write_text((PAPER / "README.md").read_text())
    r = verdicts("--check", "--json", js, "--readme", readme)
    assert r.returncode == 1 and "are not those of" in r.stderr
    assert verdicts("--json", js, "--readme", readme).returncode == 0
    assert f"| **planted** |" in readme.read_text()
    assert verdicts("--check", "--json", js, "--readme", readme).returncode == 0
    readme.write_text("no markers")
    r = verdicts("--json", js, "--readme", readme)
    assert r.returncode == 1 and "no markers" in r.stderr


def test_every_report_the_readme_cites_is_committed():
    text = (PAPER / "README.md").read_text()
    cited = set(re.findall(r"\]\(([^)#]+\.(?:md|json|pdf|png))\)", text))
    assert "paper.md" in cited
    for path in cited:
        assert (PAPER / path).resolve().exists(), path
