#!/usr/bin/env python3
"""The overhead tables of evaluation/overhead.md, and README's table of
them, from evaluation/bench/overhead.py's JSON, one file per CPU, never
typed by hand.

Writes, between the page's markers, for each CPU (oldest run first) the
CPU, machine and rounds its JSON says, one row per payload with each rate
and ratio as the median over the rounds and its spread (min–max), the ns
per program run, and whether the target is met; between README's markers,
one row per CPU of the medians and a link to the page. Each ratio is taken
within a round, then over the rounds (as evaluation/bench/overhead.py does).

    evaluation/bench/overhead_table.py [--json JSON...] [--page MD] [--readme MD] [--check]
--json: default every evaluation/results/overhead-*.json. --check changes
nothing: exit 1 if a table or README's is not what the JSON gives.
"""
import argparse
import glob
import json
import os
import re
import statistics
import sys

from markers import MarkerError, replace

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "evaluation", "results", "overhead-*.json")
BEGIN = ("<!-- overhead tables: evaluation/bench/overhead_table.py writes them from "
         "evaluation/results/overhead-*.json -->")
END = "<!-- end of the overhead tables -->"
SUMMARY_BEGIN = "<!-- overhead table: evaluation/bench/overhead_table.py writes it -->"
SUMMARY_END = "<!-- end of the overhead table -->"
# (column, numerator, denominator): rates in kpps without a denominator
FIGURES = (("untraced", "untraced", None), ("floor", "floor", None),
           ("traced", "traced", None), ("two tcpdumps", "tcpdump", None),
           ("floor/untraced", "floor", "untraced"), ("traced/untraced", "traced", "untraced"),
           ("traced/floor", "traced", "floor"), ("tcpdumps/untraced", "tcpdump", "untraced"))
PROGRAMS = ("hs_input", "hs_prerouting", "hs_postrouting", "hs_output", "hs_drop")
STAGE_PROGRAMS = PROGRAMS[:4]  # one per stage: the ns-per-run goal's
# the aggregate table: `--aggregate` and `--aggregate --sample 64`
AGGREGATE = (("aggregate", "aggregate", None), ("1 in 64", "sampled", None),
             ("aggregate/untraced", "aggregate", "untraced"),
             ("1 in 64/untraced", "sampled", "untraced"),
             ("aggregate/floor", "aggregate", "floor"), ("1 in 64/floor", "sampled", "floor"))
# programs that only read the clock once (`--floor=clock`): what stamping costs
CLOCK = (("clock floor", "clock", None), ("clock floor/floor", "clock", "floor"),
         ("traced/clock floor", "traced", "clock"))
BOLD = ("traced/untraced", "aggregate/untraced", "1 in 64/untraced")


def cpu_label(cpu):
    """A CPU's name in the tables: the model name without trademarks and
    filler, then family and model where the JSON has them."""
    name = re.sub(r"\((R|TM)\)|\bCPU\b|\bProcessor\b|@.*$", "", cpu["model_name"], flags=re.I)
    name = " ".join(name.split())
    if cpu.get("family") is not None:
        name += f" (family {cpu['family']}, model {cpu['model']})"
    return name


def cpu_slug(cpu):
    """The CPU in a result file's name: evaluation/results/overhead-SLUG.json."""
    label = re.sub(r"\b(family|model)\b", "", cpu_label(cpu).lower())
    return re.sub(r"[^a-z0-9]+", "-", label).strip("-")


def spread(res, payload, num, den):
    """(median, min, max) over the rounds of a rate (kpps) or a ratio."""
    rounds = [r[payload] for r in res["rounds"]]
    if den is None:
        values = [r[num]["pps"] / 1e3 for r in rounds]
    else:
        values = [r[num]["pps"] / r[den]["pps"] for r in rounds]
    return statistics.median(values), min(values), max(values)


def _share(x):
    return "100 %" if x == 1 else f"{x * 100:.3f} %"


def _cell(column, m, lo, hi):
    if "/" not in column:
        return f"{m:.0f} kpps ({lo:.0f}–{hi:.0f})"
    text = f"{m:.3f} ({lo:.3f}–{hi:.3f})"
    return f"**{text}**" if column in BOLD else text


def tables(results):
    """The Markdown evaluation/overhead.md holds between its markers: each
    CPU's tables under its name."""
    return "\n\n".join(f"### {cpu_label(res['cpu'])}\n\n{table(res)}" for res in results)


def table(res):
    """One CPU's tables."""
    payloads = list(res["summary"])
    rounds = len(res["rounds"])
    when = f" on {res['date']}" if res.get("date") else ""
    lines = [f"Measured{when} on {cpu_label(res['cpu'])}, {res['cpus']} CPUs, kernel "
             f"`{res['machine']}`: {rounds} rounds × "
             f"{res['seconds']:g} s, each figure the median over the rounds and, in "
             "brackets, its spread (min–max):", "",
             "| payload | " + " | ".join(c for c, _, _ in FIGURES) +
             " | recorded | ring lost | pcaps (in, out) |",
             "|---" * (len(FIGURES) + 4) + "|"]
    worst = {}
    for p in payloads:
        s = res["summary"][p]
        figures = {c: spread(res, p, n, d) for c, n, d in FIGURES}
        worst[p] = figures["traced/untraced"][0]
        lines.append(f"| {p} B | " + " | ".join(_cell(c, *figures[c]) for c, _, _ in FIGURES) +
                     f" | {_share(s['completeness'])} | {s['ring_lost']} | "
                     f"{_share(s['pcap_in_completeness'])}, {_share(s['pcap_out_completeness'])} |")
    lines.append("")
    for p in payloads:
        ns = res["ns_per_run"][p]
        lines.append(f"ns per run, traced (floor), {p} B: " + ", ".join(
            f"`{name}` {ns['traced'][name]:.0f} ({ns['floor'][name]:.0f})"
            for name in PROGRAMS if name in ns["traced"] and name in ns["floor"]) + ".")
    p_worst = min(worst, key=worst.get)
    rounds_low = min(spread(res, p, "traced", "untraced")[1] for p in payloads)
    tcpdump = [spread(res, p, "tcpdump", "untraced")[0] for p in payloads]
    lost = sum(res["summary"][p]["ring_lost"] for p in payloads)
    complete = min(res["summary"][p]["completeness"] for p in payloads)
    goals = res["goals"]  # as evaluation/bench/overhead.py judged them
    target = goals["traced_over_untraced"]
    verdict = ("NOT met" if worst[p_worst] < target else "met" if rounds_low >= target else
               f"met by the medians, not by every round (lowest {rounds_low:.3f})")
    lines += ["", f"The target, traced/untraced ≥ {target}, is {verdict}; the lowest median is "
              f"{worst[p_worst]:.3f}, at {p_worst} B. {_share(complete)} of the forwarded "
              f"packets were recorded, {lost} records lost in the record rings. Two tcpdump "
              f"captures left the router {min(tcpdump):.3f}–{max(tcpdump):.3f} of its untraced "
              f"rate, hopscope {min(worst.values()):.3f}–{max(worst.values()):.3f}."]
    of_floor = {p: spread(res, p, "traced", "floor")[0] for p in payloads}
    p_low = min(of_floor, key=of_floor.get)
    goal = goals["traced_over_floor"]
    lines[-1] += (f" Against the empty programs, traced/floor ≥ {goal} is "
                  f"{'met' if of_floor[p_low] >= goal else 'NOT met'}; the lowest median is "
                  f"{of_floor[p_low]:.3f}, at {p_low} B.")
    lines[-1] += " " + program_goal(res, payloads, goals["ns_per_run_over_floor"])
    repeated = sum(res["summary"][p].get("repeated", 0) for p in payloads)
    if repeated:
        lines[-1] += (f" {repeated} windows were measured again: another task had used the "
                      "router's CPU.")
    if "clock" in res["rounds"][0][payloads[0]]:
        lines += clock_table(res, payloads)
    if "aggregate" in res["rounds"][0][payloads[0]]:
        lines += aggregate_table(res, payloads)
    return "\n".join(lines)


def ns_over_floor(ns):
    """{stage program: its ns per run traced over the empty program's at its
    hook}, from one payload's ns_per_run (evaluation/bench/overhead.py judges by it too)"""
    return {name: ns["traced"][name] / ns["floor"][name] for name in STAGE_PROGRAMS
            if name in ns["traced"] and name in ns["floor"]}


def program_goal(res, payloads, goal):
    """The sentence on each stage's program against the empty one at its hook."""
    over = {}
    for p in payloads:
        for name, r in ns_over_floor(res["ns_per_run"][p]).items():
            lo, hi = over.get(name, (r, r))
            over[name] = (min(lo, r), max(hi, r))
    above = [name for name, (_, hi) in over.items() if hi > goal]
    ratios = ", ".join(f"`{name}` {lo:.2f}×" + (f"–{hi:.2f}×" if hi != lo else "")
                       for name, (lo, hi) in over.items())
    return (f"Each stage's program within {goal:g}× the empty program's ns per run: "
            + (f"NOT met by {', '.join(f'`{n}`' for n in above)}" if above else "met")
            + f" ({ratios}).")


def clock_table(res, payloads):
    """The clock floor's lines: programs that read the clock once at each
    hook, the least any tracer that stamps every stage adds."""
    lines = ["", "The clock floor in the same rounds: programs that only read the clock "
             "once at each hook and store it (`--floor=clock`), the least any tracer that "
             "stamps every stage costs:", "",
             "| payload | " + " | ".join(c for c, _, _ in CLOCK) + " |",
             "|---" * (len(CLOCK) + 1) + "|"]
    for p in payloads:
        lines.append(f"| {p} B | " + " | ".join(_cell(c, *spread(res, p, n, d))
                                                for c, n, d in CLOCK) + " |")
    lines.append("")
    for p in payloads:
        ns = res["ns_per_run"][p]
        lines.append(f"ns per run, clock floor, {p} B: " + ", ".join(
            f"`{name}` {ns['clock'][name]:.0f}" for name in PROGRAMS
            if name in ns["clock"] and name != "hs_drop") + ".")
    return lines


def aggregate_table(res, payloads):
    """The aggregate mode's lines: rates and ratios, ns per run, the goals."""
    lines = ["", "Aggregate mode in the same rounds: `--aggregate` (histograms only) and "
             "`--aggregate --sample 64` (one packet in 64 traced):", "",
             "| payload | " + " | ".join(c for c, _, _ in AGGREGATE) +
             " | complete (aggregate) | 64 × complete (1 in 64) |",
             "|---" * (len(AGGREGATE) + 3) + "|"]
    for p in payloads:
        s = res["summary"][p]
        lines.append(f"| {p} B | " + " | ".join(_cell(c, *spread(res, p, n, d))
                                                for c, n, d in AGGREGATE) +
                     f" | {_share(s['aggregate_completeness'])} | "
                     f"{_share(s['sampled_estimate'])} |")
    lines.append("")
    for p in payloads:
        ns = res["ns_per_run"][p]
        lines.append(f"ns per run, aggregate (1 in 64), {p} B: " + ", ".join(
            f"`{name}` {ns['aggregate'][name]:.0f} ({ns['sampled'][name]:.0f})"
            for name in PROGRAMS if name in ns["aggregate"] and name in ns["sampled"]) + ".")
    said = []
    for config in ("aggregate", "sampled"):
        target = res["goals"][f"{config}_over_untraced"]
        medians = {p: spread(res, p, config, "untraced")[0] for p in payloads}
        low = min(medians, key=medians.get)
        name = "aggregate" if config == "aggregate" else "1 in 64"
        said.append(f"{name}/untraced ≥ {target:.2f}: {'met' if medians[low] >= target else 'NOT met'}"
                    f" (lowest median {medians[low]:.3f}, at {low} B)")
    lines += ["", "Goals: " + "; ".join(said) + "."]
    return lines


def summary(results):
    """README's table: per CPU, the medians over the payloads of
    traced/untraced and of the sampled aggregate mode, the untraced rate,
    the share recorded, and where the rest is."""
    lines = ["The router's forwarding rate while recording, against the same router "
             "untraced (UDP; per payload the median over the rounds; the details and "
             "every round: [evaluation/overhead.md](evaluation/overhead.md)):", "",
             "| CPU | measured | untraced | recording every packet | "
             "`--aggregate --sample 64` | recorded |", "|---" * 6 + "|"]
    for res in results:
        payloads = list(res["summary"])

        def medians(config):
            m = [f"{spread(res, p, config, 'untraced')[0]:.2f}" for p in payloads]
            return m[0] if min(m) == max(m) else f"{min(m)}–{max(m)}"
        untraced = ", ".join(f"{spread(res, p, 'untraced', None)[0]:.0f} kpps at {p} B"
                             for p in payloads)
        sampled = medians("sampled") if "sampled" in res["rounds"][0][payloads[0]] else "–"
        complete = min(res["summary"][p]["completeness"] for p in payloads)
        lines.append(f"| {cpu_label(res['cpu'])}, {res['cpus']} CPUs | {res.get('date', '–')}, "
                     f"kernel `{res['machine']}` | {untraced} | {medians('traced')} | {sampled} "
                     f"| {_share(complete)} |")
    return "\n".join(lines)


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", nargs="+", default=sorted(glob.glob(RESULTS)),
                   help="the bench's results, one file per CPU (default: every "
                        "evaluation/results/overhead-*.json)")
    p.add_argument("--page", default=os.path.join(ROOT, "evaluation", "overhead.md"))
    p.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    p.add_argument("--check", action="store_true",
                   help="change nothing; exit 1 if a table or README's differs")
    a = p.parse_args()
    try:
        keyed = []
        for path in a.json:
            with open(path) as f:
                res = json.load(f)
            # the oldest run first; two of one day by CPU
            keyed.append(((res.get("date", ""), cpu_label(res["cpu"])), res))
        results = [res for _, res in sorted(keyed, key=lambda k: k[0])]
        texts = {}
        for path, block, begin, end in ((a.page, tables(results), BEGIN, END),
                                        (a.readme, summary(results), SUMMARY_BEGIN, SUMMARY_END)):
            with open(path) as f:
                old = f.read()
            try:
                texts[path] = (old, replace(old, block, begin, end))
            except MarkerError as e:
                raise MarkerError(f"{path}: {e}") from None
    except (OSError, ValueError, MarkerError) as e:
        print(f"evaluation/bench/overhead_table.py: {e}", file=sys.stderr)
        return 1
    except (KeyError, TypeError, AttributeError) as e:
        print(f"evaluation/bench/overhead_table.py: {path} is not evaluation/bench/overhead.py's "
              f"JSON ({e!r})", file=sys.stderr)
        return 1
    stale = [path for path, (old, new) in texts.items() if new != old]
    if a.check:
        if stale:
            print(f"evaluation/bench/overhead_table.py: {', '.join(stale)} not what "
                  f"{', '.join(a.json)} give: run evaluation/bench/overhead_table.py",
                  file=sys.stderr)
            return 1
        return 0
    for path in stale:
        with open(path, "w") as f:
            f.write(texts[path][1])
        print(f"{path}: written from {', '.join(a.json)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
