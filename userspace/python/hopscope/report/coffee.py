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
from . import figures as fig

PAPER_MODE = 390  # packets: Fig. 7c's peak


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
    complete = (df["status"] == "complete").to_numpy()
    chosen = _default_rows(table)
    default = a.coffee_breaks.attrs["arrival"]
    user_min = a.min_break_ns != chosen.loc[default, "min_ns"]
    rows, kept = [], {}
    for arrival, (every, *_) in found.items():
        # from t1 the analysis has it; from t0 the backlog joins the queue
        q = (a.input_queue if arrival == "t1" else
             QueueSeries(*step_count(*stage_interval(df, arrival, "t2")[:2])))
        n, frac = a.input_queue_hist if arrival == "t1" else time_weighted_hist(q)
        least = a.min_break_ns if user_min else int(chosen.loc[arrival, "min_ns"])
        if arrival == default:  # the analysis kept them, at this very least
            breaks, gaps = a.coffee_breaks, a.coffee_interoccurrence
        else:
            breaks = coffee.at_least(every, least)
            gaps = coffee.interoccurrence(breaks)
        st = coffee.interoccurrence_stats(gaps)
        kept[arrival] = breaks, gaps, st  # the table's, and the figures'
        p = wait_quantiles(df, arrival, complete, a)
        floor = table[(table["arrival"] == arrival) & (table["rule"] == "idle floor")
                      & (table["quantile"] == coffee.IDLE_QUANTILE)]["floor_ns"].iloc[0]
        rows.append([f"{arrival}: {coffee.ARRIVALS[arrival]}", *(_us(v) for v in p),
                     _us(floor), _n(float((n * frac).sum()), 2),
                     str(int(q.n.max()) if len(q.n) else 0), _us(least),
                     str(len(breaks)), _n(st["mode"]), _n(st["median"]),
                     _n(st["mean"])])
    layout = [["table"] * (len(found) + 1), [f"gaps {x}" for x in found] + ["durations"]]
    axd = f.subplot_mosaic(layout, height_ratios=[0.8, 2])
    rule = ("--min-break-us" if user_min else
            "one arrival gap (the mean time between two arrivals: a shorter break is over "
            f"before the next packet comes), at least {coffee.DEFAULT_MIN_NS / 1000:g} µs")
    fig.table(axd["table"], rows, ["arrival", "wait p50", "p99", "p99.9",
                                   f"idle p{coffee.IDLE_QUANTILE * 100:g}",
                                   "queue mean", "max", "min break", "breaks", "mode", "median",
                                   "mean"],
              "the input queue from each arrival to t2: wait (µs), size (packets, "
              "time-weighted); its coffee breaks, interoccurrence in packets",
              widths=[0.3, 0.06, 0.06, 0.06, 0.07, 0.07, 0.04, 0.07, 0.05, 0.06, 0.06, 0.06])
    axd["table"].text(0, 0.05, f"Breaks counted: at least {rule}.\nMode: the paper's statistic "
                      f"(Sec. IV-D: a new break \"very likely\" after about {PAPER_MODE} "
                      f"packets), from {coffee.MODE_BIN_PACKETS}-packet bins.",
                      fontsize=9, transform=axd["table"].transAxes, in_layout=False)
    for arrival, (b, gaps, st) in kept.items():
        ax = axd[f"gaps {arrival}"]
        fig.counts_hist(ax, gaps, None)
        if st["count"]:
            ax.axvline(st["mode"], color="C1", lw=1, label=f"mode {st['mode']}")
        ax.axvline(PAPER_MODE, color="C2", lw=1, ls=":", label=f"the paper: ~{PAPER_MODE}")
        ax.legend(fontsize=8)
        ax.set_xlabel("packets that left the input queue between two breaks")
        ax.set_title(f"interoccurrence from {arrival} (cf. Fig. 7c)", fontsize=10)
        d = b["duration_ns"].to_numpy() / 1000
        if len(d):
            edges = np.geomspace(d.min(), d.max() * 1.001, 40)
            counts, _ = np.histogram(d, edges)
            axd["durations"].stairs(counts / len(d), edges, label=f"from {arrival}")
    ax = axd["durations"]
    fig.log_scale(ax, "x")
    ax.set_xlabel("break duration (µs)")
    ax.set_ylabel("relative frequency")
    ax.set_title("durations", fontsize=10)
    if any(len(b) for b, _, _ in kept.values()):
        ax.legend(fontsize=8)
    f.suptitle(f"{label}: coffee breaks, the input queue joined at t0 or at t1\n(the default "
               f"here: breaks from {default}; d_iq and the queue pages from t1)")


def sweep(f, label, table):
    ax_b, ax_m, ax_t = f.subplot_mosaic([["breaks", "stats"], ["table", "table"]],
                                        height_ratios=[1, 1.3]).values()
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
    rows = [[r.arrival, f"idle p{r.quantile * 100:g}" if r.rule == "idle floor" else r.rule,
             "yes" if r.judged else "", _us(r.floor_ns), _us(r.min_ns), str(r.breaks),
             str(r.shorter), _us(r.total_ns), _n(r.mode), _n(r.median), _n(r.mean)]
            for r in table.itertuples()]
    fig.table(ax_t, rows, ["arrival", "threshold", "judged", "idle floor", "min (µs)",
                           "breaks", "shorter", "total (µs)", "mode", "median", "mean"],
              f"every threshold, at least {coffee.DEFAULT_MIN_NS / 1000:g} µs (an idle floor "
              f"needs {coffee.IDLE_TAIL_PACKETS} idle waits above it); judged: fixed before "
              "looking, the paper's claim is judged at each", fontsize=7)
    f.suptitle(f"{label}: coffee breaks against the shortest break counted "
               "(the default: one arrival gap)")
