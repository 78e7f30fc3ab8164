"""Everything the report and the notebooks show about one run, computed once."""
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import inplace
from .busy import busy_periods, min_transit_by_size
from .coffee import at_least, coffee_breaks, default_arrival, default_min_ns, interoccurrence
from .hist import relative_histogram
from .interarrival import seen_sorted
from .loss import loss_table
from .queues import (PAPER_ESTIMATE, QueueSeries, arrivals_per_departure, occupancy,
                     time_weighted_hist)
from .stats import STAGES, delays_by_stage, describe, merged, table

WORKERS = 2  # more threads, more temporaries at once: fresh memory is slow on a VM


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
    log_histograms_by_tos: dict     # tos -> stage -> Histogram (log-spaced bins)
    delta_pr: np.ndarray            # Δpr, ns
    delta_o: np.ndarray             # Δo, ns
    input_queue: QueueSeries        # exact occupancy t1 <= t < t2
    output_queue: QueueSeries       # exact occupancy t3 <= t < t4
    input_queue_hist: tuple         # time_weighted_hist(input_queue)
    output_queue_hist: tuple
    input_queue_paper: np.ndarray   # arrivals per Δpr
    output_queue_paper: np.ndarray  # arrivals per Δo
    coffee_breaks: pd.DataFrame     # attrs say what was left out
    coffee_every: pd.DataFrame      # every break however short (coffee_breaks(df, 0)):
                                    # those at any minimum come from it (coffee.at_least)
    coffee_interoccurrence: np.ndarray
    loss: pd.DataFrame
    busy_periods: pd.DataFrame
    min_transit: pd.DataFrame


def analyse(df, resolution_ns=1000, min_break_ns=None):
    """Analysis of one loaded run; min_break_ns None = the run's arrival gap,
    at least coffee.DEFAULT_MIN_NS (coffee.default_min_ns)."""
    # numpy lets go of the GIL in its sorts, searches and array arithmetic:
    # independent steps run side by side, one per CPU (two here)
    with ThreadPoolExecutor(min(WORKERS, os.cpu_count() or 1)) as pool:
        def start(f, *args):
            return pool.submit(f, df, *args)
        delays = start(_delays, resolution_ns)
        if min_break_ns is None:
            min_break_ns = default_min_ns(df)
        min_break_ns = int(min_break_ns)
        # the steps that keep nothing large first, those whose results stay
        # after: their temporaries then stack on less (fresh memory is slow on a VM)
        arrival = default_arrival(df)
        every = start(coffee_breaks, 0, arrival)
        loss, min_transit = start(loss_table), start(min_transit_by_size)
        busy = start(busy_periods)  # its temporaries are four times what it keeps
        # the longer steps (the output's) first: the two threads end together
        outq, outp = start(_queue, "output"), start(_departures, "output")
        inq, inp = start(_queue, "input"), start(_departures, "input")
        complete = int((df["status"] == "complete").sum())  # while the steps run
        stats, stats_by_tos, hists, log_hists, hists_by_tos, log_by_tos = delays.result()
        (delta_pr, input_paper), (delta_o, output_paper) = inp.result(), outp.result()
        (inq, inq_hist), (outq, outq_hist), every = inq.result(), outq.result(), every.result()
        breaks = at_least(every, min_break_ns)
        return Analysis(
            resolution_ns=int(resolution_ns), min_break_ns=min_break_ns,
            packets=len(df), complete=complete,
            stats=stats, stats_by_tos=stats_by_tos,
            histograms=hists, log_histograms=log_hists, histograms_by_tos=hists_by_tos,
            log_histograms_by_tos=log_by_tos,
            delta_pr=delta_pr, delta_o=delta_o,
            input_queue=inq, output_queue=outq,
            input_queue_hist=inq_hist, output_queue_hist=outq_hist,
            input_queue_paper=input_paper, output_queue_paper=output_paper,
            coffee_breaks=breaks, coffee_interoccurrence=interoccurrence(breaks),
            coffee_every=every,
            loss=loss.result(), busy_periods=busy.result(), min_transit=min_transit.result())


def _queue(df, queue):
    """(occupancy, its time_weighted_hist): the histogram on the pool too,
    beside the other steps, not after them all."""
    series = occupancy(df, queue)
    return series, time_weighted_hist(series)


def _departures(df, queue):
    """(inter-departure times, queues.paper_estimate) of a queue from one
    sort of each instant (Δpr and Δo are interarrival's)."""
    enter, leave = PAPER_ESTIMATE[queue]
    left = seen_sorted(df, leave)
    # the entries sorted and searched before the intervals are taken, in
    # left's own memory: no more than three arrays of a packet each at once
    # (fresh memory is slow)
    paper = arrivals_per_departure(seen_sorted(df, enter), left)
    return inplace.diff(left), paper


def _delays(df, resolution_ns):
    """(stats, stats by TOS, {stage: Histogram}, {stage: log Histogram},
    {tos: {stage: Histogram}}, {tos: {stage: log Histogram}}) from one sort
    per sender and stage: all
    packets' delays are the senders' merged, not sorted again. A stage at
    a time, its values let go before the next stage's are gathered: one
    stage's values in memory at once, not every stage's."""
    by_tos_rows, overall_rows, hists, log_hists = [], [], {}, {}
    hists_by_tos, log_by_tos = {}, {}
    for stage, groups in zip(STAGES, delays_by_stage(df, "tos", STAGES)):
        for d in groups:
            by_tos_rows.append(d.key + (stage,) + describe(d))
            tos = int(d.key[0])
            hists_by_tos.setdefault(tos, {})[stage] = relative_histogram(
                d.values, resolution_ns, sorted_finite=True)
            log_by_tos.setdefault(tos, {})[stage] = relative_histogram(
                d.values, 1, log=True, sorted_finite=True)
        d = merged(stage, groups)
        del groups
        hists[stage] = relative_histogram(d.values, resolution_ns, sorted_finite=True)
        # log bins from the smallest delay: sub-µs stages must stay on the axis
        log_hists[stage] = relative_histogram(d.values, 1, log=True, sorted_finite=True)
        overall_rows.append((stage,) + describe(d))
        del d  # before the next stage's values are gathered
    return (table(df, None, overall_rows), table(df, "tos", by_tos_rows), hists, log_hists,
            hists_by_tos, log_by_tos)
