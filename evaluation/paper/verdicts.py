#!/usr/bin/env python3
"""README.md's table of verdicts, made from the committed paper.json.

    evaluation/paper/verdicts.py [--check] [--readme FILE] [--json FILE]

Rewrites the table between the README's two markers with each claim's
verdict and measured value as `hopscope paper` wrote them, and the line
above it with the report's conditions and runs; --check changes nothing
and exits 1 when the README differs (what the test suite runs), so no
figure there is typed by hand or left stale.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
from markers import MarkerError, rewrite  # noqa: E402
BEGIN = "<!-- verdicts: made from paper.json by evaluation/paper/verdicts.py -->"
END = "<!-- end of verdicts -->"


def cell(text):
    return str(text).replace("|", "\\|")


def table(report):
    runs = sum(c["repetitions"] for c in report["conditions"])
    lines = [f"{len(report['conditions'])} conditions, {runs} runs "
             f"([paper.md](paper.md), [paper.json](paper.json)).", "",
             "| claim | paper | verdict | measured |", "|---|---|---|---|"]
    for c in report["claims"]:
        lines.append("| " + " | ".join(cell(x) for x in (
            f"{c['id']} {c['text']}", c["section"], f"**{c['verdict']}**", c["measured"])) + " |")
    return lines


def main():
    ap = argparse.ArgumentParser(prog="evaluation/paper/verdicts.py",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--readme", default=os.path.join(HERE, "README.md"))
    ap.add_argument("--json", default=os.path.join(HERE, "paper.json"))
    a = ap.parse_args()
    try:
        with open(a.json) as f:
            report = json.load(f)
        same = rewrite(a.readme, "\n".join(table(report)), BEGIN, END, check=a.check)
    except (OSError, ValueError) as e:
        sys.exit(f"evaluation/paper/verdicts.py: {e}")
    except MarkerError as e:
        sys.exit(f"evaluation/paper/verdicts.py: {a.readme}: {e}")
    if not same:
        sys.exit(f"evaluation/paper/verdicts.py: {a.readme}'s verdicts are not those of "
                 f"{a.json}: run evaluation/paper/verdicts.py")

if __name__ == "__main__":
    main()
