"""The report's pages on the input queue's two ends and the coffee breaks.

Where a packet joins the input queue decides d_iq, the queue's size and the
breaks: at t0 (netif_rx, before the input backlog: where the paper's input
hook was, in its input card's driver) or at t1 (XDP, after the backlog).
The first page shows both side by side, with the breaks counted above each
arrival's own arrival gap (analysis/coffee.py says why); the second how the
breaks and their interoccurrence move with the shortest break counted (the
sweep), marking the thresholds fixed before looking. The
interoccurrence is given as the paper gives it, its mode ("a new coffee
break is very likely to occur after about 390 packets", Sec. IV-D), with
the median and the mean beside it.
"""
import numpy as np

from ..analysis import coffee
from ..analysis.queues import (QueueSeries, interval_mask, stage_interval, step_count,
                               time_weighted_hist)
from ..record.paths import stack_complete
from . import figures as fig, layout

PAPER_MODE = 390  # packets: Fig. 7c's peak
MAX_POINTS = 20000  # breaks drawn one by one at most: the rest thinned evenly


def found(df, a):
    """(every_break of each recorded arrival, its sweep): what both pages
    show; the default arrival's breaks the analysis found already."""
    every = coffee.every_break(df, known={a.coffee_every.attrs["arrival"]: a.coffee_every})
    return every, coffee.sweep(df, found=every)


def _us(ns):
    return "—" if ns != ns else f"{ns / 1000:.2f}"


def _n(v, digits=0):
    return "—" if v != v else f"{v:.{digits}f}"


def _default_rows(table):
    """Per arrival, the sweep's row analyse() would take: the arrival gap."""
    return table[table["rule"] == "arrival gap"].set_index("arrival")


def wait_quantiles(df, arrival, complete, a):
    """p50, p99 and p99.9 of the complete packets' waits from arrival to t2,
    as stage_stats takes a delay: both stamps seen, never negative. From t1
    that is d_iq, whose figures the analysis has."""
    if arrival == "t1":
        d_iq = a.stats.set_index("stage").loc["d_iq"]
        return [d_iq["p50"], d_iq["p99"], d_iq["p99_9"]]
    came, t2, ok, _, _ = interval_mask(df, arrival, "t2")
    ok &= complete  # our own mask
    wait = t2[ok]
    wait -= came[ok]  # in place: fresh memory is slow on a VM
    if not len(wait):
        return [np.nan] * 3
    return np.quantile(wait, [0.5, 0.99, 0.999], overwrite_input=True)


def arrivals(f, label, df, a, found, table):
    complete = stack_complete(df)
    chosen = _default_rows(table)
    default = a.coffee_breaks.attrs["arrival"]
    user_min = a.min_break_ns != chosen.loc[default, "min_ns"]
    rows, kept, queues = [], {}, {}
    for arrival, (every, *_) in found.items():
        # from t1 the analysis has it; from t0 the backlog joins the queue
        q = (a.input_queue if arrival == "t1" else
             QueueSeries(*step_count(*stage_interval(df, arrival, "t2")[:2])))
        n, frac = a.input_queue_hist if arrival == "t1" else time_weighted_hist(q)
        queues[arrival] = q
        least = a.min_break_ns if user_min else int(chosen.loc[arrival, "min_ns"])
        if arrival == default:  # the analysis kept them, at this very least
            breaks, gaps = a.coffee_breaks, a.coffee_interoccurrence
        else:
            breaks = coffee.at_least(every, least)
            gaps = coffee.interoccurrence(breaks)
        st = coffee.interoccurrence_stats(gaps)
        kept[arrival] = breaks, gaps, st, every, least  # the table's, and the figures'
        p = wait_quantiles(df, arrival, complete, a)
        floor = table[(table["arrival"] == arrival) & (table["rule"] == "idle floor")
                      & (table["quantile"] == coffee.IDLE_QUANTILE)]["floor_ns"].iloc[0]
        rows.append([f"{arrival}: {coffee.ARRIVALS[arrival]}", *(_us(v) for v in p),
                     _us(floor), _n(float((n * frac).sum()), 2),
                     str(int(q.n.max()) if len(q.n) else 0), _us(least),
                     str(len(breaks)), _n(st["mode"]), _n(st["median"]),
                     _n(st["mean"])])
    rule = ("--min-break-us" if user_min else
            "one arrival gap (the mean time between two arrivals: a shorter break is over "
            f"before the next packet comes), at least {coffee.DEFAULT_MIN_NS / 1000:g} µs")
    title = layout.Text(f"{label}: coffee breaks, the input queue joined at t0 or at t1 (the "
                        f"default here: breaks from {default}; d_iq and the queue pages from "
                        "t1)", 13, gap=6)
    table = layout.Table(rows, ["arrival", "wait p50", "p99", "p99.9",
                                f"idle p{coffee.IDLE_QUANTILE * 100:g}", "queue mean", "max",
                                "min break", "breaks", "mode", "median", "mean"],
                         "the input queue from each arrival to t2: wait (µs), size (packets, "
                         "time-weighted); its coffee breaks, interoccurrence in packets")
    note = layout.Text(f"Breaks counted: at least {rule}. Mode: the paper's statistic (Sec. "
                       f"IV-D: a new break \"very likely\" after about {PAPER_MODE} packets), "
                       f"from {coffee.MODE_BIN_PACKETS}-packet bins.")
    plots, ax = layout.strip(f, title.height + table.height() + note.height + 2 * layout.MARGIN,
                             top=True)
    y = title.draw(ax, layout.MARGIN, layout.MARGIN)
    note.draw(ax, layout.MARGIN, table.draw(ax, layout.MARGIN, y) + layout.PAD)
    axd = plots.subplot_mosaic([[f"gaps {x}" for x in found] + ["durations"],
                                ["queue"] * len(found) + ["when"]])
    start = fig.first_instant(df)
    for i, (arrival, (b, gaps, st, every, least)) in enumerate(kept.items()):
        ax = axd[f"gaps {arrival}"]
        fig.counts_hist(ax, gaps, None)
        if st["count"]:
            ax.axvline(st["mode"], color="C1", lw=1, label=f"mode {st['mode']}")
        ax.axvline(PAPER_MODE, color="C2", lw=1, ls=":", label=f"the paper: ~{PAPER_MODE}")
        ax.legend(fontsize=8)
        ax.set_xlabel("packets between two breaks")
        ax.set_title(f"interoccurrence from {arrival} (cf. Fig. 7c)", fontsize=10)
        # every break of at least 1 µs, the line at the shortest counted:
        # what a run without breaks that long had instead
        every = every[every["duration_ns"] >= coffee.DEFAULT_MIN_NS]
        d = every["duration_ns"].to_numpy() / 1000
        color = f"C{i}"
        if len(d):
            edges = np.geomspace(d.min(), d.max() * 1.001, 40)
            counts, _ = np.histogram(d, edges)
            axd["durations"].stairs(counts / len(d), edges, color=color,
                                    label=f"from {arrival}")
            t = (every["start_ns"].to_numpy() - start) * 1e-9
            counted = d >= least / 1000
            step = max(1, -(-int((~counted).sum()) // MAX_POINTS))
            axd["when"].plot(t[~counted][::step], d[~counted][::step], ".", ms=2, color=color,
                             alpha=0.3, rasterized=True, label=f"from {arrival}, shorter"
                             + (f" (1 in {step})" if step > 1 else ""))
            axd["when"].plot(t[counted], d[counted], "o", ms=3, color=color,
                             label=f"from {arrival}, counted ({int(counted.sum())})")
        axd["durations"].axvline(least / 1000, color=color, lw=0.8, ls="--",
                                 label=f"shortest counted from {arrival}")
        axd["when"].axhline(least / 1000, color=color, lw=0.8, ls="--")
        fig.occupancy_series(axd["queue"], queues[arrival], start, f"from {arrival}")
    ax = axd["durations"]
    fig.log_scale(ax, "x")
    ax.set_xlabel("break duration (µs)")
    ax.set_ylabel("relative frequency")
    ax.set_title(f"durations, every break ≥ {coffee.DEFAULT_MIN_NS / 1000:g} µs", fontsize=10)
    axd["queue"].set_title("the input queue over time: where the breaks leave packets waiting",
                           fontsize=10)
    axd["queue"].legend(fontsize=8)
    ax_w = axd["when"]
    ax_w.set_xlim(axd["queue"].get_xlim())
    fig.log_scale(ax_w)
    ax_w.set_xlabel("time since the first packet (s)")
    ax_w.set_ylabel("break duration (µs)")
    ax_w.set_title("when the breaks came", fontsize=10)
    ax.legend(fontsize=7)
    if len(ax_w.lines) > len(kept):  # a break drawn, beside the dashed lines
        ax_w.legend(fontsize=7)


def sweep(f, label, table):
    rows = [[r.arrival, f"idle p{r.quantile * 100:g}" if r.rule == "idle floor" else r.rule,
             "yes" if r.judged else "", _us(r.floor_ns), _us(r.min_ns), str(r.breaks),
             str(r.shorter), _us(r.total_ns), _n(r.mode), _n(r.median), _n(r.mean)]
            for r in table.itertuples()]
    shown = layout.Table(layout.once(rows), ["arrival", "threshold", "judged", "idle floor", "min (µs)",
                            "breaks", "shorter", "total (µs)", "mode", "median", "mean"],
                     f"every threshold, at least {coffee.DEFAULT_MIN_NS / 1000:g} µs (an idle "
                     f"floor needs {coffee.IDLE_TAIL_PACKETS} idle waits above it); judged: "
                     "fixed before looking, the paper's claim is judged at each", size=7)
    plots, ax_t = layout.strip(f, shown.height() + 2 * layout.PAD)
    shown.draw(ax_t, layout.MARGIN)
    ax_b, ax_m = plots.subplots(1, 2)
    for i, (arrival, t) in enumerate(table.groupby("arrival", sort=False)):
        fixed, floor = t[t["rule"] == "fixed"], t[t["rule"] == "idle floor"]
        color = f"C{i}"
        ax_b.plot(fixed["min_ns"] / 1000, fixed["breaks"], "o-", color=color,
                  label=f"from {arrival}")
        ax_b.plot(floor["min_ns"] / 1000, floor["breaks"], "s", color=color, mfc="none",
                  label=f"from {arrival}, idle floors")
        gap = t[t["rule"] == "arrival gap"]
        ax_b.plot(gap["min_ns"] / 1000, gap["breaks"], "D", color=color, mfc="none",
                  label=f"from {arrival}, one arrival gap")
        for stat, style in (("mode", "o-"), ("median", "^--"), ("mean", "v:")):
            ax_m.plot(fixed["min_ns"] / 1000, fixed[stat], style, color=color,
                      label=f"{stat}, from {arrival}")
    ax_m.axhline(PAPER_MODE, color="k", lw=0.8, ls=":", label=f"the paper's ~{PAPER_MODE}")
    for ax, what in ((ax_b, "breaks counted"), (ax_m, "interoccurrence (packets)")):
        fig.log_scale(ax, "x")
        ax.set_xlabel("shortest break counted (µs)")
        ax.set_ylabel(what)
        ax.legend(fontsize=7)
    fig.log_scale(ax_m)
    f.suptitle(f"{label}: coffee breaks against the shortest break counted "
               "(the default: one arrival gap)")
