#!/usr/bin/env python3
"""How long the analysis library takes on a large run.

Writes a synthetic record file (hopscope.synth) of --records records in a
temporary folder, loads it, then times every statistic of hopscope.analysis
one by one on the loaded DataFrame, to see where analyse() spends its time.
Its goal, against DuckDB's quantiles of the same records, is evaluation/bench/analysis.py's.

The statistics run twice: one by one (run_stats), then as analysis.analyse
does them. On a VM whose host takes back freed guest memory (virtio-balloon
free page reporting, after about 2 s) touching memory the process has not
used recently costs up to seconds per GB, and that cost varies from run to
run; the script times touching 1 GB first so the two can be told apart.
With build/hopscope's GLIBC_TUNABLES (userspace/glibc.tunables) glibc keeps
freed memory in the process, its threads' too, and the statistics reuse it.
"""
import argparse
import os
import tempfile
import time

import numpy as np

import benchlib  # noqa: F401 (the tree's package first on the path)
import hopscope
from hopscope.analysis import busy
from hopscope.analysis import coffee
from hopscope.analysis import hist
from hopscope.analysis import interarrival
from hopscope.analysis import loss
from hopscope.analysis import queues
from hopscope.analysis import stats
from hopscope.analysis import analyse
from hopscope.analysis.stats import STAGES
from hopscope.record.synth import write_synthetic
from load_speed import touch_seconds


def run_stats(df):
    """{statistic: seconds} for every statistic analyse() computes, on df,
    called the way analyse calls them."""
    seconds = {}

    def timed(name, f, *args, **kw):
        t = time.perf_counter()
        result = f(*args, **kw)
        seconds[name] = time.perf_counter() - t
        return result

    by_tos = timed("grouped_delays by tos", stats.grouped_delays, df, "tos")
    timed("stats_table by tos", stats.stats_table, df, "tos", by_tos)
    for d in by_tos:
        timed(f"histogram {d.stage} tos {d.key[0]}", hist.relative_histogram, d.values,
              sorted_finite=True)
    overall = []
    for stage in STAGES:  # all packets: the senders' sorted delays merged
        d = timed(f"merged {stage}", stats.merged, stage, [g for g in by_tos if g.stage == stage])
        timed(f"histogram {stage}", hist.relative_histogram, d.values, sorted_finite=True)
        timed(f"histogram {stage} log", hist.relative_histogram, d.values, 1, log=True,
              sorted_finite=True)
        overall.append(d)
    timed("stats_table", stats.stats_table, df, None, overall)
    for q in ("input", "output"):
        series = timed(f"occupancy {q}", queues.occupancy, df, q)
        timed(f"time_weighted_hist {q}", queues.time_weighted_hist, series)
        enter, leave = queues.PAPER_ESTIMATE[q]
        left = timed(f"seen_sorted {leave}", interarrival.seen_sorted, df, leave)
        entered = timed(f"seen_sorted {enter}", interarrival.seen_sorted, df, enter)
        timed(f"inter-departures {q}", np.diff, left)
        timed(f"paper_estimate {q}", queues.arrivals_per_departure, entered, left)
    breaks = timed("coffee_breaks", coffee.coffee_breaks, df)
    timed("interoccurrence", coffee.interoccurrence, breaks)
    timed("loss_table", loss.loss_table, df)
    timed("busy_periods", busy.busy_periods, df)
    timed("min_transit_by_size", busy.min_transit_by_size, df)
    return seconds


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--records", type=int, default=10_000_000, help="records to synthesise")
    p.add_argument("--file", help="analyse this record file instead of a synthetic one")
    p.add_argument("-v", "--verbose", action="store_true", help="print every statistic's time")
    a = p.parse_args()
    time.sleep(3)  # long enough for the host to take back recently freed memory
    print(f"touching 1 GB of memory the process never used: {touch_seconds(10**9):.2f} s")
    with tempfile.TemporaryDirectory(prefix="hopscope-bench-") as tmp:
        path = a.file
        if path is None:
            path = os.path.join(tmp, "synthetic.hsr")
            t = time.perf_counter()
            write_synthetic(path, a.records)
            print(f"wrote {a.records} records in {time.perf_counter() - t:.1f} s", flush=True)
        t = time.perf_counter()
        df = hopscope.load(path)
        load_s = time.perf_counter() - t
    print(f"load: {len(df)} records in {load_s:.2f} s = {len(df) / load_s / 1e6:.1f} M records/s")
    t = time.perf_counter()
    seconds = run_stats(df)
    first = time.perf_counter() - t
    if a.verbose:
        for what, s in sorted(seconds.items(), key=lambda kv: -kv[1]):
            print(f"  {s:7.3f} s  {what}")
    t = time.perf_counter()
    analyse(df)
    again = time.perf_counter() - t
    print(f"statistics: {first:.2f} s one by one, then {again:.2f} s for analyse() "
          f"on {len(df)} records")


if __name__ == "__main__":
    main()
