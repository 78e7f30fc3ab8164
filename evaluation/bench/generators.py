#!/usr/bin/env python3
"""What the generators reach on the development machine: every condition of the given
scenario files (default: traffic/paper/*.toml) run once for --seconds without
the recorder, and for each sender the packets asked, sent (the generator's log)
and received, with sent/asked. The paper files quote these numbers in their
comments (what was scaled and why).

    evaluation/bench/generators.py [--seconds 3] [--prefix hsgen-] [FILE ...]
Writes evaluation/results/generators.json and prints a table. Needs root and `make`.
"""
import glob
import os
import sys

import benchlib
from benchlib import ROOT
from hopscope.traffic.result import RunError
from hopscope.traffic.run import run_condition
from hopscope.traffic.scenario.load import ScenarioError, load_scenario


def main():
    p = benchlib.parser("generators", __doc__)
    p.add_argument("files", nargs="*", metavar="FILE")
    p.add_argument("--seconds", type=float, default=3.0)
    p.add_argument("--prefix", default="hsgen-")
    args = p.parse_args()
    benchlib.preflight("generators", ("iperf3", "ITGSend", "ITGRecv"))
    files = args.files or sorted(glob.glob(os.path.join(ROOT, "traffic", "paper", "*.toml")))
    rows, failed = [], 0
    for path in files:
        try:
            conds = load_scenario(path).conditions()
        except ScenarioError as e:
            sys.exit(str(e))
        for cond in conds:
            c = cond.with_duration(args.seconds)
            folder = os.path.join(os.path.splitext(args.output)[0], os.path.basename(path)[:-5],
                                  c.name)
            try:
                r = run_condition(c, folder, prefix=args.prefix, record=False)
            except RunError as e:
                print(f"{path} {c.name}: FAILED: {e}", file=sys.stderr)
                failed += 1
                continue
            for s in c.senders:
                asked = s.packets()
                rows.append({"file": os.path.basename(path), "condition": c.name,
                             "sender": s.name, "generator": s.generator, "rate_pps": s.rate,
                             "asked": asked, "sent": r.sent[s.name],
                             "received": r.received[s.name],
                             "sent_ratio": round(r.sent[s.name] / asked, 4)})
                print("{file:12} {condition:26} {sender:8} {rate_pps:8.0f} pps asked {asked:7d} "
                      "sent {sent:7d} ({sent_ratio:.3f}) received {received:7d}".format(**rows[-1]),
                      flush=True)
    benchlib.finish({"machine": benchlib.machine(), "seconds": args.seconds, "rows": rows},
                    args.output, lambda res: None)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
