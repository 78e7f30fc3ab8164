"""Everything the report and the notebooks show about one run, computed once."""
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .busy import busy_periods, min_transit_by_size
from .coffee import DEFAULT_MIN_NS, coffee_breaks, idle_floor_ns, interoccurrence
from .hist import relative_histogram
from .interarrival import output_interarrivals, prerouting_interarrivals
from .loss import loss_table
from .queues import QueueSeries, occupancy, paper_estimate, time_weighted_hist
from .stats import grouped_delays, stats_table


@dataclass
class Analysis:
    resolution_ns: int
    min_break_ns: int
    packets: int                    # records in the run
    complete: int                   # of those, complete: they make the delays
    stats: pd.DataFrame             # stats.stage_stats(df)
    stats_by_tos: pd.DataFrame      # stage_stats(df, by="tos")
    histograms: dict                # stage -> hist.Histogram (linear, resolution_ns)
    log_histograms: dict            # stage -> Histogram (log-spaced bins)
    histograms_by_tos: dict         # tos -> stage -> Histogram (linear); every TOS seen
    delta_pr: np.ndarray            # Δpr, ns
    delta_o: np.ndarray             # Δo, ns
    input_queue: QueueSeries        # exact occupancy t1 <= t < t2
    output_queue: QueueSeries       # exact occupancy t3 <= t < t4
    input_queue_hist: tuple         # time_weighted_hist(input_queue)
    output_queue_hist: tuple
    input_queue_paper: np.ndarray   # arrivals per Δpr
    output_queue_paper: np.ndarray  # arrivals per Δo
    coffee_breaks: pd.DataFrame     # attrs say what was left out
    coffee_interoccurrence: np.ndarray
    loss: pd.DataFrame
    busy_periods: pd.DataFrame
    min_transit: pd.DataFrame


def analyse(df, resolution_ns=1000, min_break_ns=None):
    """Analysis of one loaded run; min_break_ns None = the run's idle floor
    (coffee.idle_floor_ns), at least coffee.DEFAULT_MIN_NS."""
    if min_break_ns is None:
        min_break_ns = max(DEFAULT_MIN_NS, idle_floor_ns(df) or 0)
    min_break_ns = int(min_break_ns)
    stats, hists, log_hists = _delays(df, None, resolution_ns)
    stats_by_tos, hists_by_tos, _ = _delays(df, "tos", resolution_ns)
    inq, outq = occupancy(df, "input"), occupancy(df, "output")
    breaks = coffee_breaks(df, min_break_ns)
    return Analysis(
        resolution_ns=int(resolution_ns), min_break_ns=min_break_ns,
        packets=len(df), complete=int((df["status"] == "complete").sum()),
        stats=stats, stats_by_tos=stats_by_tos,
        histograms=hists[()], log_histograms=log_hists,
        histograms_by_tos={int(k[0]): h for k, h in hists_by_tos.items()},
        delta_pr=prerouting_interarrivals(df), delta_o=output_interarrivals(df),
        input_queue=inq, output_queue=outq,
        input_queue_hist=time_weighted_hist(inq), output_queue_hist=time_weighted_hist(outq),
        input_queue_paper=paper_estimate(df, "input"),
        output_queue_paper=paper_estimate(df, "output"),
        coffee_breaks=breaks, coffee_interoccurrence=interoccurrence(breaks),
        loss=loss_table(df), busy_periods=busy_periods(df),
        min_transit=min_transit_by_size(df))


def _delays(df, by, resolution_ns):
    """(stats table, {group key: {stage: Histogram}}, {stage: log Histogram}
    when by is None) from one sort per group and stage; the sorted delays
    are freed on return, before the next step needs memory."""
    delays = grouped_delays(df, by)
    hists, log_hists = {}, {}
    for d in delays:
        hists.setdefault(d.key, {})[d.stage] = relative_histogram(d.values, resolution_ns)
        if by is None:
            # log bins from the smallest delay: sub-µs stages must stay on the axis
            log_hists[d.stage] = relative_histogram(d.values, 1, log=True)
    return stats_table(df, by, delays), hists, log_hists
