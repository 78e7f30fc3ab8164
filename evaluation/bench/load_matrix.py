#!/usr/bin/env python3
"""hopscope's delays and completeness at 0, 25, 50, 80 and 100 % of the
router's lossless rate (the load matrix of capture-accuracy studies).

First the lossless rate: a constant-rate iperf3 UDP stream of 200 B from
sender1 through the testbed's router (rps, --sink, --shield router) while
hopscope records, searched as `hopscope throughput` does (each trial
--seconds long); lossless = every packet sent reached the sink and has a
complete record. Then each level
(0 %: a trickle of --idle-pps, the idle router) is recorded --reps times
for --seconds, the levels' order rotated every repetition so that drift in
the shared machine's load hits them alike. Per level: mean and range
(min-max over repetitions) of each stage delay's p50 and p99, of its probe
floor (the recording's own, when it has one) and of completeness. The
methods are in evaluation/bench/loadlib.py; evaluation/load.md says what they show.

    evaluation/bench/load_matrix.py [--reps 10] [--seconds 2.5] [--rate PPS | --max PPS]
Writes evaluation/results/load_matrix.json and .png and prints a table. Needs
root and `make`.
"""
import os
import tempfile

import benchlib
import loadlib

PREFIX = os.environ.get("HS_PREFIX", "hst-lm-")
LEVELS = (0, 25, 50, 80, 100)


def us(x):
    return f"{x / 1e3:.2f}" if x is not None else "-"


def cell(s):
    """mean (min-max) in µs"""
    return f"{us(s['mean'])} ({us(s['min'])}-{us(s['max'])})" if s["n"] else "-"


def pct(s):
    return f"{s['mean']:.2%} ({s['min']:.2%}-{s['max']:.2%})" if s["n"] else "-"


def report(res):
    print(f"\nlossless rate {res['lossless_pps']:.0f} pps ({res['limited_by']}); "
          f"{res['reps']} reps x {res['seconds']} s per level; µs: mean (min-max) over reps")
    print(f"{'load':>5} {'pps offered':>21} {'stage':>5} {'p50':>22} {'p99':>24} "
          f"{'probe floor':>22} {'complete/received':>28} {'complete/sent':>28}")
    for level, s in res["summary"].items():
        for i, col in enumerate(loadlib.STAGES):
            o = s["offered_pps"]
            head = (f"{level + '%':>5} {o['mean']:7.0f} ({o['min']:.0f}-{o['max']:.0f})".ljust(27)
                    if i == 0 else " " * 27)
            tail = (f" {pct(s['complete_of_received']):>28} {pct(s['complete_of_sent']):>28}"
                    if i == 0 else "")
            print(f"{head} {col:>5} {cell(s[col]['p50_ns']):>22} {cell(s[col]['p99_ns']):>24} "
                  f"{cell(s[col]['floor_ns']):>22}{tail}")


def figure(res, path):
    """p50 and p99 of each stage against load, range bars over reps; the probe
    floor dashed where the recordings have one."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    levels = [int(k) for k in res["summary"]]
    fig, axes = plt.subplots(1, 3, figsize=(13, 4), sharey=True)
    for ax, col in zip(axes, loadlib.STAGES):
        for q, mark in (("p50_ns", "o-"), ("p99_ns", "s-"), ("floor_ns", "x--")):
            rows = [res["summary"][str(lv)][col][q] for lv in levels]
            xs = [lv for lv, r in zip(levels, rows) if r["n"]]
            rows = [r for r in rows if r["n"]]
            if not rows:
                continue
            mean = [r["mean"] / 1e3 for r in rows]
            err = [[m - r["min"] / 1e3 for m, r in zip(mean, rows)],
                   [r["max"] / 1e3 - m for m, r in zip(mean, rows)]]
            ax.errorbar(xs, mean, yerr=err, fmt=mark, capsize=3,
                        label={"p50_ns": "p50", "p99_ns": "p99", "floor_ns": "probe floor"}[q])
        ax.set_title(col)
        ax.set_xlabel(f"load, % of {res['lossless_pps']:.0f} pps")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("µs (mean over reps, bars: min-max)")
    axes[0].legend()
    fig.suptitle(f"hopscope stage delays vs load ({res['reps']} reps per level, "
                 f"{res['machine']['date'][:10]}, {res['machine']['commit']})")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = benchlib.parser("load_matrix", __doc__, epilog=__doc__.split("\n\n", 1)[1])
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=2.5, help="per recording (default 2.5)")
    ap.add_argument("--idle-pps", type=float, default=100, help="the 0 %% level (default 100)")
    ap.add_argument("--rate", type=float, metavar="PPS",
                    help="the lossless rate, not searched (e.g. from an earlier run)")
    ap.add_argument("--max", type=float, default=400000, metavar="PPS",
                    help="the search's highest rate, tried first (default 400000)")
    ap.add_argument("--resolution", type=float, default=5000, metavar="PPS")
    a = ap.parse_args()
    if a.reps < 1 or a.seconds <= 0 or a.idle_pps <= 0:
        ap.error("--reps, --seconds and --idle-pps must be above 0")
    if (a.rate is not None and a.rate <= a.idle_pps) or a.max <= a.idle_pps or a.resolution < 1:
        ap.error("--rate and --max must be above --idle-pps, --resolution at least 1")
    benchlib.preflight("load_matrix", ("iperf3",))
    res = {"machine": benchlib.machine(), "reps": a.reps, "seconds": a.seconds,
           "idle_pps": a.idle_pps, "size": loadlib.SIZE,
           "generator": f"iperf3 -u -b RATE -l 200 --pacing-timer {loadlib.PACING_US}",
           "testbed": "rps, --sink, --shield router", "levels": list(LEVELS),
           "runs": {str(lv): [] for lv in LEVELS}}
    beds = []

    def levels():
        with tempfile.TemporaryDirectory() as tmp:
            beds.append(loadlib.Bed(PREFIX))
            if a.rate is None:
                pps, limited_by, runs = loadlib.search_lossless(
                    beds[0], 0, a.max, a.resolution, a.seconds, tmp,
                    lambda m: print(m, flush=True))
                if pps is None:
                    raise loadlib.BenchError("packets lost at every rate tried")
                res["search"] = {"max_pps": a.max, "resolution_pps": a.resolution,
                                 "runs": runs}
            else:
                pps, limited_by = a.rate, "given"
            res.update(lossless_pps=pps, limited_by=limited_by)
            for i in range(a.reps):
                for lv in benchlib.rotated(list(LEVELS), i):
                    rate = lv / 100 * pps if lv else a.idle_pps
                    r = loadlib.offer(beds[0], rate, a.seconds, os.path.join(tmp, "level.hsr"))
                    res["runs"][str(lv)].append(r)
                    print(f"rep {i + 1} {lv:3d} %: {r['offered_pps']:.0f} pps, complete "
                          f"{r['complete']}/{r['received']}/{r['sent']}, d_iq p99 "
                          f"{us(r['d_iq']['p99_ns'])} µs, load {r['loadavg'][0]}", flush=True)

    benchlib.measure("load_matrix", levels, lambda: [b.down() for b in beds])
    res["summary"] = {k: loadlib.level_summary(v) for k, v in res["runs"].items()}
    loads = [r["loadavg"][0] for v in res["runs"].values() for r in v]
    res["loadavg_1min"] = loadlib.spread(loads)
    png = os.path.splitext(a.output)[0] + ".png"

    def figure_and_report(res):
        figure(res, png)
        report(res)
        print(f"\nload average (1 min) during the runs: {loads and min(loads)}-"
              f"{loads and max(loads)}\n{png}")

    benchlib.finish(res, a.output, figure_and_report)


if __name__ == "__main__":
    main()
