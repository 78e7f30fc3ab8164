"""`hopscope report RUN.hsr [RUN2.hsr ...] -o report.pdf`: one PDF with the
run's metadata, summary tables and the paper's kinds of figures (per-stage
histograms, queue sizes, coffee breaks, per-sender panels), time series of
the delays, busy periods, minimum transit by size and the loss table. Several
runs are tabulated side by side and their histograms overlaid."""
import argparse
import math
import os

import numpy as np
import pandas as pd

from ..analysis import budget
from ..analysis.coffee import recorded_arrivals
from ..analysis.run import analyse
from ..analysis.stats import STAGES, path_stats, stage_stats
from ..record.hooks import hooks
from ..record.paths import path_counts, stack_complete
from ..record.load import load
from . import coffee, forked, layout, margins
from . import figures as fig
from .page import PAGE, plt

LOG_QUEUE = 10  # packets: a queue this long gets a log axis for its histogram
MAX_US = 1e9  # a µs option beyond 1000 s of delay is a typing error
STAT_COLUMNS = ("count", "min", "p50", "p90", "p99", "p99_9", "max", "mean", "std")


def _microseconds(least):
    """argparse type: a finite number of µs, at least `least` (a whole ns)."""
    def parse(text):
        try:
            v = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number of µs")
        if not math.isfinite(v) or v < least or v > MAX_US:
            raise argparse.ArgumentTypeError(f"{text!r}: give a number of µs from {least:g} "
                                             f"to {MAX_US:g}")
        return v
    return parse


def add_arguments(p):
    p.add_argument("files", nargs="+", metavar="RUN.hsr", help="record files")
    p.add_argument("-o", "--output", required=True, help="PDF to write")
    p.add_argument("--labels", help="comma-separated names of the runs (default: file names)")
    p.add_argument("--resolution-us", type=_microseconds(0.001), default=1.0,
                   help="histogram bin width in µs, at least 0.001 (1 ns, the clock's unit; "
                        "default 1, as the paper)")
    p.add_argument("--min-break-us", type=_microseconds(0), default=None,
                   help="shortest coffee break counted, µs (default: one arrival gap, at least 1)")
    p.epilog = ("examples:\n"
                "  hopscope report run.hsr -o run.pdf\n"
                "  hopscope report 20B.hsr 550B.hsr 1400B.hsr --labels 20B,550B,1400B -o sizes.pdf")


def run(args, parser):
    labels = args.labels.split(",") if args.labels else [os.path.basename(f) for f in args.files]
    if len(labels) != len(args.files):
        parser.error(f"--labels names {len(labels)} runs, {len(args.files)} files given")
    min_break = None if args.min_break_us is None else int(args.min_break_us * 1000)
    runs = []
    for path, label in zip(args.files, labels):
        df = load(path)  # RecordFileError: cli says which file and why, exit 1
        runs.append((label, df, analyse(df, int(args.resolution_us * 1000), min_break)))
    pages = write(args.output, runs)
    print(f"{args.output}: {pages} pages, {len(runs)} run(s)")
    return 0


def write(path, runs):
    """runs: [(label, df, Analysis)]; returns the page count."""
    return forked.write(path, jobs(runs))


def jobs(runs):
    """The report's pages as forked.write's jobs, in page order."""
    out = []

    def page(what, draw, *args):
        out.append((what, figure_page, (draw, *args)))
    if len(runs) > 1:
        out.append(("the comparison", _comparison, (runs,)))
        page("the overlay", _overlay, runs)
    for label, df, a in runs:
        # text and tables: as many pages as they take
        out.append((f"{label}'s summary", _summary, (label, df, a)))
        out.append((f"{label}'s error budget", _budget, (label, df, a)))
        if not a.complete:
            continue
        page(f"{label}'s histograms", _histograms, label, a, False)
        page(f"{label}'s log histograms", _histograms, label, a, True)
        if len(a.histograms_by_tos) > 1:
            page(f"{label}'s senders", _senders, label, a, False)
            page(f"{label}'s senders, log", _senders, label, a, True)
        page(f"{label}'s queues", _queues, label, df, a)
        # one job of two pages: the breaks and the sweep both show are found
        # in the worker that draws them, beside the other pages
        out.append((f"{label}'s coffee breaks", _coffee, (label, df, a)))
        page(f"{label}'s series", _series, label, df)
        page(f"{label}'s output side", _output_side, label, a)
    return out


def figure_page(pdf, draw, *args):
    f = plt.figure(figsize=PAGE)
    draw(f, *args)
    margins.apply(f)
    pdf.savefig(f)
    plt.close(f)
    return 1


def _coffee(pdf, label, df, a):
    found, table = coffee.found(df, a)
    figure_page(pdf, coffee.arrivals, label, df, a, found, table)
    figure_page(pdf, coffee.sweep, label, table)
    return 2


def us_text(v):
    return f"{v / 1000:.2f}" if v == v else "—"


def _stat_rows(stats, key_columns=()):
    rows = []
    for _, r in stats.iterrows():
        keys = [fig.tos_label(r[k]) if k == "tos" else str(r[k]) for k in key_columns]
        rows.append(keys + [r["stage"], f"{int(r['count'])}"] +
                    [us_text(r[c]) for c in STAT_COLUMNS[1:]] +
                    [f"{int(r['negative'])}/{int(r['missing'])}"])
    return rows


STAT_HEADER = (["stage", "count"] + [c.replace("_", ".") for c in STAT_COLUMNS[1:]]
               + ["neg/miss"])


def _summary(pdf, label, df, a):
    h = df.attrs.get("header") or {}
    k = h.get("kernel") or {}
    ifs = ", ".join(f"{i['name']} ({i['role']}, {i.get('driver')}, xdp {i.get('xdp_mode')})"
                    for i in h.get("interfaces") or ())
    status = df["status"].value_counts()
    lines = [
        f"kernel {k.get('release', '?')}   clocksource {h.get('clocksource', '?')}   "
        f"CPU {(h.get('cpu') or {}).get('model', '?')} × {(h.get('cpu') or {}).get('count', '?')}",
        f"backend {h.get('backend', '?')}   stages {', '.join(h.get('stages') or ())}   "
        f"host {h.get('hostname', '?')}",
        f"interfaces: {ifs}",
        "hooks: " + ("; ".join(map(str, hooks(h))) or "not recorded"),
        f"records {a.packets}: " + ", ".join(f"{s} {int(n)}" for s, n in status.items() if n),
    ]
    paths = path_counts(df)
    if list(paths) not in ([], ["stack"]):
        lines.append("complete by path: " + ", ".join(f"{p} {n}" for p, n in paths.items())
                     + "; the delays below are the stack paths' (a fast path has no t2, t3)")
    if df.attrs.get("problems"):
        lines.append("file problems: " + "; ".join(map(str, df.attrs["problems"])))
    out = layout.Pages(pdf, f"hopscope report — {label}")
    for line in lines:
        out.add(layout.Text(line, gap=1))
    out.space(10)
    if not a.complete:
        out.add(layout.Text("No complete packets in this run: no delays to show.", 12, gap=0))
        return out.close()
    whose = "all packets" if list(paths) in ([], ["stack"]) else "the stack paths' packets"
    out.add(layout.Table(_stat_rows(a.stats), STAT_HEADER,
                         f"{whose}: the delays of the complete ones, µs (p50 = RFC 8219 "
                         "typical, p99.9 = worst case; neg/miss: negative or missing delays, "
                         "errors)", size=9))
    out.add(layout.Table(layout.once(_stat_rows(a.stats_by_tos, ("tos",))),
                         ["sender"] + STAT_HEADER,
                         "per sender (µs)", size=9))
    if list(paths) not in ([], ["stack"]):
        out.add(layout.Table(layout.once(_stat_rows(path_stats(df), ("path",))),
                             ["path"] + STAT_HEADER,
                             "per forwarding path (µs): a fast path has transit (and "
                             "d_qdisc), no d_iq, d_p, d_oq", size=9))
    return out.close()


def _opt_us(v):
    return "—" if v is None else f"{v / 1000:.3f}"


def _budget(pdf, label, df, a):
    """Each delay beside its probe floor and uncertainty; each instant's hook,
    clock, and the probe time spent on the packet before it."""
    rows = []
    delays = budget.delays(df)
    # the summary's percentiles where it has them: not computed twice
    known = a.stats.set_index("stage")
    more = stage_stats(df, stages=[r["delay"] for r in delays if r["delay"] not in known.index])
    q = pd.concat([known, more.set_index("stage")])
    for r in delays:
        p50, p99 = (us_text(q.loc[r["delay"], c]) for c in ("p50", "p99"))
        rows.append([r["delay"], r["span"], r["probes"] or "none", p50, p99,
                     _opt_us(r["floor_ns"]), _opt_us(r["mean_ns"]), _opt_us(r["spread_ns"]),
                     _opt_us(r["p99_floor_ns"]), _opt_us(r["uncertainty_ns"]),
                     _opt_us(r["calibrated_ns"]), str(r["cross_cpu"]),
                     _opt_us(r["idle"]["p50_ns"]) if r["idle"] else "—"])
    out = layout.Pages(pdf, f"error budget — {label}")
    out.add(layout.Table(rows, ["delay", "span", "probes inside", "p50", "p99", "probe floor",
                                "probe mean", "spread (sd)", "p99 floor ≤", "uncertainty ±",
                                "calibrated", "cross-CPU", "idle p50"],
                         "every delay with the probes' share of it (µs)"))
    irows = [[r["instant"], r["hook"], r["clock"], _opt_us(r["baseline_ns"]),
              _opt_us(r["uncertainty_ns"])] for r in budget.instants(df)]
    out.add(layout.Table(irows, ["instant", "hook (stamped as the probe starts)", "clock",
                                 "probe time before it (µs)", "uncertainty ± (µs)"],
                         "where each instant is taken"))
    pc = df.attrs.get("probe_cost")
    out.add(layout.Text(
        "No probe cost samples in this file (--floor, a kernel module older than ABI 2, "
        "or a file written before them): the floor is unknown here." if not pc else
        f"Probe floor: the probes' time inside the delay that all but 1 % of "
        f"{max(c['samples'] for c in pc.values())} sampled packets of this run exceed, "
        "so the delays may fall below it no more often; probe mean: what they add on "
        "average; spread: its standard deviation. Not in them: the hooks' calls into the "
        "probes. "
        "Uncertainty: the spread with the clock's resolution at both ends. Records "
        "whose ends ran on two CPUs also hold the TSC offset between them. Idle p50: "
        "the delay of the packets that found the router idle (probes and kernel). "
        "Method and ground truth: docs/accuracy.md."
        + "".join(f" BROKEN: {b}." for b in map(budget.floor_broken, delays) if b)))
    return out.close()


def _histograms(f, label, a, log_x):
    scale = "log-spaced bins" if log_x else f"{a.resolution_ns / 1000:g} µs bins"
    fig.stage_grid(f, [a.log_histograms if log_x else a.histograms],
                   f"{label}: relative frequency of each stage's delay ({scale})", log_x=log_x)


def _senders(f, label, a, log_x):
    by_tos = a.log_histograms_by_tos if log_x else a.histograms_by_tos
    toses = sorted(by_tos)
    scale = "log-spaced bins" if log_x else f"{a.resolution_ns / 1000:g} µs bins"
    fig.stage_grid(f, [by_tos[t] for t in toses],
                   f"{label}: competitive traffic, per sender ({scale})", log_x=log_x,
                   labels=[fig.tos_label(t) for t in toses])


def _queues(f, label, df, a):
    axes = f.subplots(2, 2)
    t0 = fig.first_instant(df)
    for col, (name, q, (vals, w), est) in enumerate((
            ("input queue (t1 ≤ t < t2)", a.input_queue, a.input_queue_hist, a.input_queue_paper),
            ("output queue (t3 ≤ t < t4)", a.output_queue, a.output_queue_hist,
             a.output_queue_paper))):
        ax = axes[0, col]
        fig.queue_hist(ax, vals, w, "exact: fraction of time")
        fig.counts_hist(ax, est, "paper's estimate: arrivals per inter-arrival")
        ax.set_title(name + (f" — {q.open} open, a lower bound" if q.open else ""))
        if len(vals) and vals.max() >= LOG_QUEUE:
            fig.log_scale(ax)  # the time it was long, beside the time it was empty
        ax.legend(fontsize=8)
        fig.occupancy_series(axes[1, col], q, t0, name)
        axes[1, col].set_title(f"{name} over time")
    f.suptitle(f"{label}: queue sizes" + (" (the input backlog, from t0: the coffee-break page)"
                                          if "t0" in recorded_arrivals(df) else ""))


def _series(f, label, df):
    axes = f.subplots(3, 1, sharex=True)
    complete = stack_complete(df)
    rows, bounds, mid = fig.time_bins(df["t1"].to_numpy(), complete, fig.first_instant(df))
    del complete
    us = np.empty(len(rows))  # one buffer for the three delays: fresh memory is slow
    for ax, stage in zip(axes, STAGES[:3]):
        np.take(df[stage].to_numpy(np.float64), rows, out=us)
        us *= fig.US
        fig.delay_series(ax, mid, us, bounds, stage)
        ax.set_title(fig.STAGE_LABEL[stage])
        ax.legend(fontsize=8, loc="upper right")
        ax.label_outer()  # the time axis labelled once, under the last
    f.suptitle(f"{label}: delays over time (per time bin: median and 99th percentile)")


def _output_side(f, label, a):
    loss = a.loss[a.loss["packets"].fillna(0) > 0]
    rows = [[r.source, "" if pd.isna(r.stage) else str(r.stage), r.what,
             "" if pd.isna(r.drop_reason) else f"{r.reason} ({r.drop_reason})", str(r.packets)]
            for r in loss.itertuples()]
    table = layout.Table(rows, ["source", "stage", "what", "drop reason", "packets"],
                         "losses (router drops apart from the tracer's own)")
    plots, ax_l = layout.strip(f, table.height() + 2 * layout.PAD)
    table.draw(ax_l, layout.MARGIN)
    ax_b, ax_m = plots.subplots(1, 2)
    bp = a.busy_periods
    if len(bp):
        d = bp["duration_ns"].to_numpy() / 1000
        # from a packet's service time to a queue's seconds: log-spaced bins
        fig.relative_hist(ax_b, d, np.geomspace(max(d.min(), 0.01), d.max() * 1.001, 50),
                          log=True)
        fig.log_scale(ax_b, "x")
    ax_b.set_xlabel("busy period (µs)")
    ax_b.set_ylabel("relative frequency")
    ax_b.set_title(f"output busy periods ({len(bp)})")
    m = a.min_transit
    ax_m.plot(m["ip_len"], m["min_transit_ns"] / 1000, "o-")
    ax_m.set_xlabel("IP length (bytes)")
    ax_m.set_ylabel("minimum transit (µs)")
    ax_m.set_title("minimum transit vs size (service time)")
    f.suptitle(f"{label}: output side and losses")


def _overlay(f, runs):
    fig.stage_grid(f, [a.histograms for _, _, a in runs], "the runs' delays overlaid",
                   labels=[label for label, _, _ in runs])


def _comparison(pdf, runs):
    rows = []
    for label, _, a in runs:
        for _, r in a.stats.iterrows():
            rows.append([label, r["stage"], f"{int(r['count'])}"] +
                        [us_text(r[c]) for c in ("p50", "p90", "p99", "p99_9", "max")])
    out = layout.Pages(pdf, "hopscope report: " + ", ".join(label for label, _, _ in runs))
    out.add(layout.Table(layout.once(rows), ["run", "stage", "count", "p50", "p90", "p99", "p99.9", "max"],
                         "runs side by side (µs)"))
    return out.close()
