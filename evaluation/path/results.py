#!/usr/bin/env python3
"""README.md's tables of the path experiment, made from its campaign.

    evaluation/path/results.py --campaign DIR   # DIR: the campaign of traffic/examples/path.toml
    evaluation/path/results.py [--check] [--readme FILE] [--json FILE]

--campaign reads every finished run of the campaign (its metadata.json,
its path/path.json, r1.hsr's header for the machine) into results.json
and renders figures from one run's path.pdf (pdftoppm); then, as without
it, the README's block between its two markers is rewritten from
results.json. --check changes nothing and exits 1 when the README
differs (what the test suite runs), so no number there is typed by hand
or left stale.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
from markers import MarkerError, rewrite  # noqa: E402
BEGIN = "<!-- results: made from results.json by evaluation/path/results.py -->"
END = "<!-- end of results -->"
# the figures: (PNG, condition, repetition, page of its path.pdf)
FIGURES = (("stages-high.png", "high", 1, 2), ("tail-low.png", "low", 1, 3))
# the table's columns: (heading, where, delay) as path.json's stage table names them
COLUMNS = (("r1 d_iq", "hop 1", "d_iq"), ("r1 d_p", "hop 1", "d_p"), ("r1 d_oq", "hop 1", "d_oq"),
           ("link r1→r2", "link 1", "link"), ("r2 d_iq", "hop 2", "d_iq"),
           ("r2 d_p", "hop 2", "d_p"), ("r2 d_oq", "hop 2", "d_oq"),
           ("end to end", "path", "transit"))


class ResultsError(Exception):
    pass


def _json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise ResultsError(f"{path}: {e}")


def collect(campaign):
    """results.json's content from the campaign folder."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "userspace",
                                    "python"))
    # the tree's own package, at --campaign only
    from hopscope.record.load import load  # noqa: E402
    from hopscope.traffic.scenario.load import ScenarioError, load_scenario  # noqa: E402
    marker = _json(os.path.join(campaign, "campaign.json"))
    try:  # the conditions in the scenario's order
        conds = load_scenario(os.path.join(campaign, "scenario.toml")).conditions()
    except ScenarioError as e:
        raise ResultsError(str(e))
    runs, header = [], None
    for c in conds:
        for rep in range(1, c.repetitions + 1):
            d = os.path.join(campaign, "runs", c.name, f"rep{rep}")
            meta = _json(os.path.join(d, "metadata.json")) if os.path.isdir(d) else {}
            if not (meta.get("campaign") or {}).get("finished"):
                continue
            path = _json(os.path.join(d, "path", "path.json"))
            if header is None:
                header = load(os.path.join(d, "r1.hsr")).attrs["header"]
            runs.append({
                "condition": c.name, "repetition": rep,
                "sent": meta["campaign"]["counts"]["sent"],
                "received": meta["campaign"]["counts"]["received"],
                "qdisc_dropped": {r: q["dropped"] for r, q in
                                  meta["interfaces"]["router_out_queues"].items()},
                "stages": {f"{s['where']} {s['delay']}": [s["p50_ns"], s["p99_ns"]]
                           for s in path["stages"]},
                "loss": [[x["hop"], x["fate"], x["packets"]] for x in path["loss"]],
                "tail": max(([t["part"], t["share"]] for t in path["tail_p99"]),
                            key=lambda t: t[1]),
                "offset": [[o["method"], o["uncertainty_ns"]] for o in path["offsets"][1:]],
                "problems": path["problems"]})
    if not runs:
        raise ResultsError(f"{campaign}: no finished run")
    created = datetime.datetime.fromtimestamp(marker["created"], datetime.timezone.utc)
    return {"format": "hopscope-path-results/1",
            "scenario": os.path.relpath(marker["scenario"], os.path.dirname(os.path.dirname(HERE)))
            if os.path.isabs(marker["scenario"]) else marker["scenario"],
            "date": created.strftime("%Y-%m-%d"),
            "machine": {"cpu": header["cpu"]["model"], "cpus": header["cpu"]["count"],
                        "kernel": header["kernel"]["release"]},
            "runs": runs}


def figures(campaign):
    for png, cond, rep, page in FIGURES:
        pdf = os.path.join(campaign, "runs", cond, f"rep{rep}", "path", "path.pdf")
        if not os.path.exists(pdf):
            raise ResultsError(f"{pdf}: missing (run the campaign without --no-path-pdf)")
        stem = os.path.join(HERE, png[:-len(".png")])
        subprocess.run(["pdftoppm", "-f", str(page), "-l", str(page), "-r", "80", "-png",
                        "-singlefile", pdf, stem], check=True)


def us(ns):
    return f"{ns / 1e3:.3g}" if ns < 1e6 else f"{ns / 1e3:,.0f}"


def mean(values):
    return sum(values) / len(values)


def block(res):
    """The README's generated block."""
    conds = list(dict.fromkeys(r["condition"] for r in res["runs"]))
    by = {c: [r for r in res["runs"] if r["condition"] == c] for c in conds}
    m = res["machine"]
    reps = sorted({len(v) for v in by.values()})
    out = [f"{len(res['runs'])} runs ({', '.join(conds)}; "
           f"{'/'.join(map(str, reps))} repetitions each) of `{res['scenario']}`, "
           f"{res['date']}, on {m['cpu']} ({m['cpus']} vCPUs), kernel {m['kernel']}.", "",
           "Delays per hop and stage, and the link between the routers: p50 / p99 in µs, "
           "the mean over the repetitions of each run's value (every packet of the path, "
           "both senders' and the generators' control packets):", "",
           "| condition | " + " | ".join(h for h, _, _ in COLUMNS) + " |",
           "|---|" + "---|" * len(COLUMNS)]
    for c in conds:
        cells = []
        for _, where, delay in COLUMNS:
            v = [r["stages"][f"{where} {delay}"] for r in by[c]]
            cells.append(f"{us(mean([x[0] for x in v]))} / {us(mean([x[1] for x in v]))}")
        out.append(f"| {c} | " + " | ".join(cells) + " |")
    out += ["", "Each run's end-to-end p99 (µs), and where its tail comes from: the part "
            "with the largest share of the transit of the packets at or above the p99 "
            "(mean over the repetitions):", "",
            "| condition | end-to-end p99 per run | largest share of the tail |", "|---|---|---|"]
    for c in conds:
        p99 = ", ".join(us(r["stages"]["path transit"][1]) for r in by[c])
        parts = {r["tail"][0] for r in by[c]}
        share = mean([r["tail"][1] for r in by[c]])
        out.append(f"| {c} | {p99} | {', '.join(sorted(parts))}: {share:.1%} |")
    out += ["", "Every packet that entered the path at r1, by fate and the hop it ended at, "
            "summed over the repetitions; sent and received are the generators' data packets "
            "(received counted in the receiver's kernel), r2's qdisc drops its output queue's "
            "own counter (every packet it dropped, the generators' control packets too):", "",
            "| condition | sent | received | entered | delivered | dropped at r1 | "
            "dropped at r2 | t4 not seen by the tracer | other | r2's qdisc drops (kernel) |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for c in conds:
        loss = [x for r in by[c] for x in r["loss"]]

        def n(fate, hop=None):
            return sum(x[2] for x in loss if x[1] == fate and (hop is None or x[0] == hop))
        known = n("delivered") + n("dropped") + n("not followed by the tracer")
        total = sum(x[2] for x in loss)
        out.append(f"| {c} | {sum(r['sent'] for r in by[c])} | "
                   f"{sum(r['received'] for r in by[c])} | {total} | {n('delivered')} | "
                   f"{n('dropped', 1)} | {n('dropped', 2)} | {n('not followed by the tracer')} "
                   f"| {total - known} | {sum(r['qdisc_dropped']['r2'] for r in by[c])} |")
    methods = {(o[0], o[1]) for r in res["runs"] for o in r["offset"]}
    problems = sorted({p for r in res["runs"] for p in r["problems"]})
    out += ["", "Clocks: r2 against r1 "
            + "; ".join(f"{meth} (± {unc:g} ns)" for meth, unc in sorted(methods))
            + " in every run. The join's problems: "
            + ("none" if not problems else "; ".join(problems)) + "."]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(prog="evaluation/path/results.py",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--campaign", metavar="DIR",
                    help="read the campaign into --json and render the figures first")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--readme", default=os.path.join(HERE, "README.md"))
    ap.add_argument("--json", default=os.path.join(HERE, "results.json"))
    a = ap.parse_args()
    if a.campaign and a.check:
        ap.error("--check compares the README with --json: not with --campaign")
    try:
        if a.campaign:
            res = collect(a.campaign)
            figures(a.campaign)
            with open(a.json, "w") as f:
                json.dump(res, f, indent=1)
                f.write("\n")
        same = rewrite(a.readme, block(_json(a.json)), BEGIN, END, check=a.check)
    except (OSError, ResultsError, KeyError, subprocess.CalledProcessError) as e:
        sys.exit(f"evaluation/path/results.py: {e}")
    except MarkerError as e:
        sys.exit(f"evaluation/path/results.py: {a.readme}: {e}")
    if not same:
        sys.exit(f"evaluation/path/results.py: {a.readme}'s tables are not those of "
                 f"{a.json}: run evaluation/path/results.py")

if __name__ == "__main__":
    main()
