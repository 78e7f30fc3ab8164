#!/usr/bin/env python3
"""The paper's six campaigns, cut to fit a session, and `hopscope paper` on them.

Each file of traffic/paper/ is copied with its repetitions set and its
packets scaled (count, and the Tables' durations, times --fraction), run
as a campaign, and the six campaigns judged:

    evaluation/paper/run.py DATA [--repetitions 2] [--fraction 0.1] [-o evaluation/paper]

DATA keeps the cut scenario files and the campaigns (raw records: not for
the repository); a campaign already finished there is kept, so an
interrupted run resumes. -o gets paper.md, paper.json, paper.pdf and the
figures. Needs root, D-ITG and iperf3, as `hopscope campaign` does.
"""
import argparse
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HOPSCOPE = os.path.join(ROOT, "build", "hopscope")
FILES = ("type1", "type2", "type3", "table1", "table2", "table3")


def cut(text, repetitions, fraction):
    """The scenario text with `repetitions` and every count and duration scaled."""
    text, n = re.subn(r"(?m)^repetitions = \d+$", f"repetitions = {repetitions}", text)
    if n != 1:
        raise ValueError("no top-level 'repetitions = N' line")
    text = re.sub(r"(?m)^(\s*count = )(\d+)", lambda m: f"{m[1]}{round(int(m[2]) * fraction)}",
                  text)
    return re.sub(r"(?m)^(\s*duration = )([\d.]+)",
                  lambda m: f"{m[1]}{round(float(m[2]) * fraction, 3)}", text)


def main():
    ap = argparse.ArgumentParser(prog="evaluation/paper/run.py",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("data", metavar="DATA", help="folder for the cut files and the campaigns")
    ap.add_argument("--repetitions", type=int, default=2)
    ap.add_argument("--fraction", type=float, default=0.1,
                    help="of each file's packets (count, duration)")
    ap.add_argument("-o", "--output", default=HERE, help="folder for the report")
    a = ap.parse_args()
    if a.repetitions < 1 or not 0 < a.fraction <= 1:
        ap.error("--repetitions must be at least 1 and --fraction in (0, 1]")
    os.makedirs(os.path.join(a.data, "scenarios"), exist_ok=True)
    campaigns = []
    for name in FILES:
        with open(os.path.join(ROOT, "traffic", "paper", f"{name}.toml")) as f:
            text = cut(f.read(), a.repetitions, a.fraction)
        path = os.path.join(a.data, "scenarios", f"{name}.toml")
        with open(path, "w") as f:
            f.write(text)
        campaigns.append(os.path.join(a.data, name))
        r = subprocess.run([HOPSCOPE, "campaign", path, "-o", campaigns[-1], "--keep-going"])
        if r.returncode:
            sys.exit(f"evaluation/paper/run.py: the {name} campaign failed (exit {r.returncode})")
    sys.exit(subprocess.run([HOPSCOPE, "paper", *campaigns, "-o", a.output]).returncode)


if __name__ == "__main__":
    main()
