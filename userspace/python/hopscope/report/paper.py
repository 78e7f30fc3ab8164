"""`hopscope paper CAMPAIGN_DIR... -o DIR`: the paper's reproduction report.

Reads the finished runs of campaigns of traffic/paper/ (Type1-3, Tables
I-III; any campaign whose conditions have the same kinds of traffic), checks
each claim of the paper's Secs. III to V (analysis.paper_claims: the
statistic, its tolerance fixed in the code with a reason, the measured value and a
verdict) and redraws Figs. 4-12:

    DIR/paper.md      the claims, every item each was judged on, the figures
    DIR/paper.json    the same claims and items as numbers (statistic, interval)
    DIR/paper.pdf     the claims and the figures
    DIR/figNN.png     Figs. 4-12, for the Markdown

Which campaign holds which experiment is read from each run's condition
(metadata.json), not from folder names.
"""
import json
import os
import sys
import textwrap

import numpy as np
from matplotlib.backends.backend_pdf import PdfPages

from ..analysis import paper_claims as pc
from ..analysis import paper_facts as pf
from ..analysis.paper_verdict import spread_text
from ..analysis.hist import Histogram
from ..files import atomic
from ..record.load import load
from . import figures
from .page import PAGE, plt

CAMPAIGN_FORMAT = "hopscope-campaign/"
STAGE_TITLES = {"d_iq": "input queuing d_iq", "d_p": "processing d_p",
                "d_oq": "output queuing d_oq"}
LINES_PER_PAGE = 52


class PaperError(Exception):
    """A folder that is not a campaign this command can read."""


# ---- reading campaigns ----

def read_campaigns(dirs, log=None):
    """[paper_facts.Condition] of the finished runs in the campaign folders."""
    conditions = {}
    for d in dirs:
        runs = _campaign_runs(d)
        for name, rep, meta, hsr in runs:
            senders = _senders(meta, hsr)
            key = name if conditions.get(name, (d,))[0] == d else f"{os.path.basename(d)}/{name}"
            c = conditions.setdefault(key, (d, pf.Condition(key, senders)))[1]
            if c.senders != senders:
                raise PaperError(f"{hsr}: condition {name!r} has other senders than its "
                                 "other repetitions")
            c.runs.append(pf.run_facts(load(hsr), meta.get("counts")))
        if log:
            print(f"{d}: {len(runs)} finished runs", file=log)
    return [c for _, c in conditions.values()]


def _campaign_runs(d):
    """(condition, repetition, campaign metadata, record file) of each
    finished run of campaign folder d, by condition and repetition."""
    if not os.path.isdir(d):
        raise PaperError(f"{d}: no such folder")
    try:
        with open(os.path.join(d, "campaign.json")) as f:
            marker = json.load(f)
    except (OSError, ValueError) as e:
        raise PaperError(f"{d}: not a campaign folder (campaign.json: "
                         f"{getattr(e, 'strerror', None) or e})") from None
    if not isinstance(marker, dict) or not str(marker.get("format", "")).startswith(
            CAMPAIGN_FORMAT):
        raise PaperError(f"{d}: campaign.json is not a hopscope campaign's")
    found = []
    runs = os.path.join(d, "runs")
    for name in sorted(os.listdir(runs)) if os.path.isdir(runs) else ():
        for rep in sorted(os.listdir(os.path.join(runs, name))):
            run = os.path.join(runs, name, rep)
            try:
                with open(os.path.join(run, "metadata.json")) as f:
                    meta = json.load(f).get("campaign")
            except FileNotFoundError:
                continue  # a run not yet begun or removed: the campaign redoes it
            except (OSError, ValueError, AttributeError) as e:
                raise PaperError(f"{run}/metadata.json: not readable: {e}") from None
            if isinstance(meta, dict) and meta.get("finished") is True:
                found.append((meta.get("condition_name", name), meta.get("repetition"), meta,
                              os.path.join(run, "run.hsr")))
    return sorted(found, key=lambda r: (r[0], str(r[1]).zfill(6)))


def _senders(meta, where):
    try:
        senders = meta["condition"]["senders"]
        return [pf.Traffic.of(senders[k]) for k in sorted(senders)]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise PaperError(f"{where}: its run's metadata.json does not describe the "
                         f"senders ({type(e).__name__}: {e})") from None


# ---- the figures ----

# (figure, set, [(size: bytes or distribution, gaps, the paper's rate or None) per
# sender], what the paper drew); the condition nearest the paper's rates is drawn
FIGURES = (
    (4, "Type1", [(20, "constant", 16000)], "Type1, 20 B payload"),
    (5, "Type1", [(550, "constant", 14000)], "Type1, 550 B payload"),
    (6, "Type1", [(1400, "constant", 8500)], "Type1, 1400 B payload"),
    (7, "Type1", [(550, "constant", 14000)],
     "Type1, 550 B: (a) input and (b) output queue sizes, (c) coffee-break interoccurrence"),
    (8, "Type2", [("normal", "constant", 16000)], "Type2, Gaussian payload size"),
    (9, "Type3", [(550, "pareto", None)], "Type3, 550 B, Pareto inter-departure times"),
    (10, "Table I", [(550, "constant", 9800), (550, "constant", 6000)],
     "Table I: both 550 B, sender1 9800 pps, sender2 6000 pps"),
    (11, "Table II", [(550, "constant", 7000), ("normal", "constant", 9000)],
     "Table II: sender1 550 B 7000 pps, sender2 Gaussian size 9000 pps"),
    (12, "Table III", [(550, "constant", 9800), (550, "pareto", 6000)],
     "Table III: sender1 550 B 9800 pps, sender2 550 B Pareto gaps ~6000 pps"),
)


def figure_condition(conditions, set_name, wanted):
    """The condition of set_name whose senders match `wanted`, the nearest
    the paper's rates; None if none has runs."""
    def matches(c):
        return len(c.senders) == len(wanted) and c.runs and all(
            (dict(s.size).get("value") == size if isinstance(size, int)
             else s.size_dist == size) and s.gaps == gaps
            for s, (size, gaps, _) in zip(c.senders, wanted))

    def distance(c):
        return sum(abs(s.rate - rate) / rate for s, (_, _, rate) in zip(c.senders, wanted)
                   if rate)
    return min(filter(matches, pf.of_set(conditions, set_name)), key=distance, default=None)


def pooled_histogram(facts):
    """One Histogram of a stage over repetitions (DelayFacts), counts summed."""
    facts = [f for f in facts if len(f.counts)]
    if not facts:
        return Histogram(np.zeros(0), np.zeros(0), 0, 0)
    lo = min(f.first_bin for f in facts)
    counts = np.zeros(max(f.first_bin + len(f.counts) for f in facts) - lo, np.int64)
    for f in facts:
        counts[f.first_bin - lo:f.first_bin - lo + len(f.counts)] += f.counts
    edges = (lo + np.arange(len(counts) + 1)) * float(pf.BIN_NS)
    overflow = sum(f.overflow for f in facts)
    return Histogram(edges, counts / counts.sum(), int(counts.sum()) + overflow, overflow)


def _draw_delays(f, c):
    groups = [(pf.ALL, "")] if len(c.senders) == 1 else [
        (s.tos, figures.tos_label(s.tos)) for s in c.senders]
    axes = f.subplots(len(groups), 3, squeeze=False)
    letters = iter("abcdef")
    for row, (group, label) in zip(axes, groups):
        for ax, stage in zip(row, pf.DELAYS):
            figures.histogram(ax, pooled_histogram([r.delay(group, stage) for r in c.runs]))
            ax.set_title(f"({next(letters)}) {label} {STAGE_TITLES[stage]}".replace("  ", " "))


def _draw_queues_coffee(f, c):
    axes = f.subplots(1, 3)
    for ax, queue in zip(axes, pf.QUEUES):
        sizes = max((len(r.queues[queue][0]) for r in c.runs), default=0)
        mean = np.zeros(sizes)
        for r in c.runs:
            mean[:len(r.queues[queue][1])] += r.queues[queue][1] / len(c.runs)
        figures.queue_hist(ax, np.arange(sizes), mean, queue)
        ax.set_title(f"({'ab'[pf.QUEUES.index(queue)]}) {queue} queue size (time-weighted)")
    figures.counts_hist(axes[2], np.concatenate([r.interoccurrence for r in c.runs]),
                        "interoccurrence")
    axes[2].set_xlabel("packets between breaks (≥ one arrival gap)")
    axes[2].set_title("(c) coffee-break interoccurrence")


def draw_figures(conditions, outdir, pdf):
    """Each figure as DIR/figNN.png and a page of pdf; [(figure number,
    caption, PNG path or None, the condition drawn)]."""
    drawn = []
    for number, set_name, wanted, what in FIGURES:
        c = figure_condition(conditions, set_name, wanted)
        path = None
        if c is not None:
            path = os.path.join(outdir, f"fig{number:02d}.png")
            f = plt.figure(figsize=PAGE, layout="constrained")
            (_draw_queues_coffee if number == 7 else _draw_delays)(f, c)
            bins = "" if number == 7 else f", {pf.BIN_NS} ns bins"
            drawn_from = (f"{c.name} ({'; '.join(s.describe() for s in c.senders)}), "
                          f"{len(c.runs)} repetitions pooled{bins}")
            # a long condition name and two senders: wrapped to the page's width
            f.suptitle("\n".join([f"Fig. {number} redrawn — {what}",
                                  *textwrap.wrap(drawn_from, 110)]))
            with atomic(path) as tmp:
                f.savefig(tmp, format="png", dpi=100)
            pdf.savefig(f)
            plt.close(f)
        drawn.append((number, what, path, c))
    return drawn


# ---- the report ----

def markdown(conditions, outcomes, drawn, dirs):
    out = ["# Reproduction of Angrisani et al. (IEEE TIM 2006), Secs. III to V", "",
           "Written by `hopscope paper` from the campaigns " +
           ", ".join(f"`{d}`" for d in dirs) + ". Method, statistics and tolerances: "
           "evaluation/paper/README.md; the tolerances are fixed in "
           "hopscope/analysis/paper_claims.py.", "", "## Conditions", "",
           "Sent: the packets the generators sent over those asked, per repetition. "
           "d_iq: the median from t0, which holds the router CPU's wake-up on a veth "
           "testbed, and from t1, after the backlog.", "",
           "| set | condition | senders | repetitions | arrival | sent | d_iq p50 from t0 "
           "/ t1, µs |", "|---|---|---|---|---|---|---|"]
    for c in sorted(conditions, key=lambda c: (str(c.set), c.name)):
        out.append(_row(c.set or "not a paper set", c.name,
                        "; ".join(s.describe() for s in c.senders), len(c.runs),
                        pf.arrivals([c]), spread_text(pf.sent_of_asked(c), "{:.1%}"),
                        _d_iq_text(c)))
    out += ["", "## Claims", "", "| claim | paper | statistic | tolerance | arrival | measured "
            "| verdict |", "|---|---|---|---|---|---|---|"]
    for claim, o in outcomes:
        out.append(_row(f"**{claim.id}** {claim.text}", claim.section, claim.statistic,
                        claim.tolerance, o.arrival, o.measured, f"**{o.verdict}**"))
    for claim, o in outcomes:
        out += ["", f"### {claim.id}: {claim.text}", "", f"Verdict: **{o.verdict}** "
                f"({o.measured}).", ""]
        if o.excluded:
            out += ["Left out, not a working router: " + "; ".join(
                f"{name} ({why})" for name, why in o.excluded) + ".", ""]
        if o.items:
            out += ["| item | measured | verdict |", "|---|---|---|"]
            out += [_row(i.where, i.value, i.verdict) for i in o.items]
    out += ["", "## Figures", ""]
    for number, what, path, c in drawn:
        out.append(f"![Fig. {number}: {what}]({os.path.basename(path)})" if path else
                   f"Fig. {number} ({what}): no such condition in the campaigns.")
        out.append("")
    return "\n".join(out)


def _d_iq_text(c):
    """Median d_iq from the arrival, and from t1 where the arrival was t0."""
    def p50(stage):
        return spread_text([r.delay(pf.ALL, stage).p50 / 1000 for r in c.runs], "{:.2f}")
    if c.runs and all(r.arrival == "t0" for r in c.runs):
        return f"{p50('d_iq')} / {p50(pf.D_IQ_T1)}"
    return f"— / {p50('d_iq')}"


def _row(*cells):
    """A Markdown table row; a cell's own | (as in |Δ|) escaped."""
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def _text_lines(conditions, outcomes, dirs):
    lines = ["Campaigns: " + ", ".join(dirs),
             f"{len(conditions)} conditions, {sum(len(c.runs) for c in conditions)} runs; "
             "every item of every claim is in paper.md."]
    for claim, o in outcomes:
        # the blank line before a claim, not after: none ends the last page alone
        lines += ["", f"{claim.id} ({claim.section}) {claim.text}: {o.verdict.upper()}"]
        left_out = "; ".join(f"{name} ({why})" for name, why in o.excluded)
        for label, text in (("statistic", claim.statistic), ("tolerance", claim.tolerance),
                            ("arrival", o.arrival), ("measured", o.measured),
                            ("left out", left_out)):
            if not text:
                continue
            lines += textwrap.wrap(f"{label}: {text}", 130, initial_indent="    ",
                                   subsequent_indent="        ")
    return lines


def claim_pages(pdf, conditions, outcomes, dirs):
    lines = _text_lines(conditions, outcomes, dirs)
    title = "hopscope paper — the claims of Secs. III to V"
    for start in range(0, len(lines), LINES_PER_PAGE):
        f = plt.figure(figsize=PAGE)
        f.text(0.04, 0.96, title if not start else title + " (continued)", fontsize=13,
               va="top")
        f.text(0.04, 0.91, "\n".join(lines[start:start + LINES_PER_PAGE]), fontsize=7.5,
               va="top", family="monospace")
        pdf.savefig(f)
        plt.close(f)


def write(dirs, outdir, log=None):
    """Read the campaigns, check the claims, write the report; the outcomes
    and the paths written."""
    conditions = read_campaigns(dirs, log)
    if not any(c.runs for c in conditions):
        raise PaperError("no finished run in " + ", ".join(dirs))
    outcomes = pc.evaluate(conditions)
    os.makedirs(outdir, exist_ok=True)
    md, pdf_path = os.path.join(outdir, "paper.md"), os.path.join(outdir, "paper.pdf")
    with atomic(pdf_path) as tmp, PdfPages(tmp) as pdf:
        claim_pages(pdf, conditions, outcomes, dirs)
        drawn = draw_figures(conditions, outdir, pdf)
        pdf.infodict()["Title"] = "hopscope paper: reproduction of Angrisani et al. 2006"
    with atomic(md) as tmp, open(tmp, "w") as f:
        f.write(markdown(conditions, outcomes, drawn, dirs) + "\n")
    js = os.path.join(outdir, "paper.json")
    with atomic(js) as tmp, open(tmp, "w") as f:
        json.dump(as_json(conditions, outcomes, dirs), f, indent=1)
        f.write("\n")
    return outcomes, [md, pdf_path, js] + [p for _, _, p, _ in drawn if p]


def as_json(conditions, outcomes, dirs):
    """The report's claims and items as numbers: what a document citing it reads."""
    def num(x):
        return float(x) if x is not None and np.isfinite(x) else None
    return {
        "format": "hopscope-paper/1", "campaigns": list(dirs),
        "conditions": [{"name": c.name, "set": c.set, "repetitions": len(c.runs),
                        "senders": [s.describe() for s in c.senders],
                        "arrival": pf.arrivals([c]),
                        "sent_of_asked": [num(x) for x in pf.sent_of_asked(c)],
                        "not_working": pc.not_working(c)} for c in conditions],
        "claims": [{"id": claim.id, "section": claim.section, "text": claim.text,
                    "statistic": claim.statistic, "tolerance": claim.tolerance,
                    "verdict": o.verdict, "measured": o.measured, "arrival": o.arrival,
                    "excluded": [{"condition": n, "why": w} for n, w in o.excluded],
                    "items": [{"where": i.where, "value": i.value, "verdict": i.verdict,
                               "statistic": num(i.median), "low": num(i.low),
                               "high": num(i.high)} for i in o.items]}
                   for claim, o in outcomes]}


# ---- `hopscope paper` ----

def add_arguments(p):
    p.add_argument("campaigns", nargs="+", metavar="CAMPAIGN_DIR",
                   help="campaign folders (hopscope campaign -o) of traffic/paper/ scenarios")
    p.add_argument("-o", "--output", required=True, metavar="DIR",
                   help="folder for paper.md, paper.json, paper.pdf and the figures")
    p.epilog = ("Each claim of the paper's Secs. III to V gets its statistic, the\n"
                "tolerance fixed in the code, the measured value with its 95 %\n"
                "bootstrap interval over the repetitions, and a verdict: holds, does not\n"
                "hold, or cannot tell (conditions or repetitions missing, or the interval\n"
                "on both sides of the tolerance). Comparisons that assume a working\n"
                "router leave out lossy or overloaded conditions and name them.\n"
                "Figs. 4-12 are redrawn.\n\n"
                "example:\n"
                "  hopscope paper results/type1 results/type2 results/type3 results/table1 \\\n"
                "      results/table2 results/table3 -o results/paper")


def run(args, parser):
    if os.path.exists(args.output) and not os.path.isdir(args.output):
        parser.error(f"-o {args.output}: exists and is not a folder")
    try:
        outcomes, paths = write(args.campaigns, args.output, log=sys.stderr)
    except PaperError as e:
        print(f"hopscope paper: {e}", file=sys.stderr)
        return 1
    for claim, o in outcomes:
        print(f"{claim.id:4} {o.verdict:14} {claim.text}")
    print(f"{args.output}: {', '.join(os.path.basename(p) for p in paths[:3])} and "
          f"{len(paths) - 3} figures")
    return 0
