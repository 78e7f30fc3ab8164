# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Queues, coffee breaks and busy periods
#
# The paper (Angrisani et al., IEEE TIM 2006, Sec. IV-D, Fig. 7) estimated
# how full the router's queues were and found *coffee breaks*: moments when a
# packet waits in the input queue while the router processes nothing and its
# output is idle. With all four instants of every packet both can be measured
# exactly here:
#
# - **queue sizes**: a packet is in the input queue from t1 to t2 and in the
#   output queue from t3 to t4, so the number of packets in each is known at
#   every instant. The paper, which could not do that, counted the packets
#   that *arrived* at a queue during each inter-departure interval
#   (Δpr(n) = t2(n) − t2(n−1) for the input, Δo(n) = t4(n) − t4(n−1) for the
#   output). Both are drawn side by side.
# - **coffee breaks**: their durations, and their *interoccurrence*: the
#   number of packets that left the input queue between two breaks (the
#   paper's Fig. 7c: a new break about every 390 packets).
# - **busy periods** of the output (Hohn et al.): how long the output stays
#   busy once a packet enters it empty.
# - **minimum transit per packet size** (Papagiannaki et al.): the service
#   time without queueing.
#
# **Input**: `HOPSCOPE_RECORDING`, a record file (`.hsr`). The default,
# `tests/data/competitive.hsr` (made by `tests/data/make_recording.sh`), has an
# output queue that fills and overflows: two senders, 550 B payload, into a
# 20 Mbit/s TBF with a 50-packet queue. For the paper's Fig. 7 setting (one
# sender, 550 B, little queueing) point it at `tests/data/single.hsr`.
# `HOPSCOPE_MIN_BREAK_US` sets the shortest coffee break counted (default:
# one arrival gap, `coffee.default_min_ns`, at least 1 µs: below).
#
# **Where the input queue starts.** The paper stamped a packet's arrival in
# its input card's driver, before the input queue. On this testbed that is
# t0 (netif_rx, recorded with `--stages t0`); t1 (XDP) comes after the
# input backlog, where the router's CPU takes the packet. Coffee breaks
# count from t0 when the run has it (`coffee.default_arrival`), and every
# table says which arrival it used; d_iq = t2 − t1 and the input queue
# below start at t1, and the backlog t0..t1 is drawn beside them.

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from notebook_setup import input_path, output_qdiscs

import hopscope
from hopscope.report import figures
from hopscope.analysis import analyse
from hopscope.analysis.coffee import ARRIVALS, interoccurrence_stats, sweep
from hopscope.analysis.hist import relative_histogram
from hopscope.analysis.queues import occupancy, time_weighted_hist

PATH = input_path("HOPSCOPE_RECORDING", "competitive.hsr")
MIN_BREAK_NS = (int(float(os.environ["HOPSCOPE_MIN_BREAK_US"]) * 1000)
                if os.environ.get("HOPSCOPE_MIN_BREAK_US") else None)

# %%
df = hopscope.load(PATH)
a = analyse(df, min_break_ns=MIN_BREAK_NS)
has_t0 = "t0" in df.columns and bool(df["t0"].any())
t_start = int(df["t1"][df["t1"] > 0].min())
print(output_qdiscs(df))
print(f"{a.packets} records, {a.complete} complete; t0 (netif_rx) recorded: {has_t0}")

# %% [markdown]
# ## Queue sizes: exact, and the paper's estimate (Fig. 7a, 7b)
# Bars: the **exact** occupancy, as the fraction of the recording's time the
# queue held n packets. Line: the **paper's estimate**, the relative
# frequency of the number of packets that entered the queue during one
# inter-departure interval (Δpr for the input, Δo for the output).
#
# How to read them: the two answer different questions. The exact one says
# how long the queue held n packets. The estimate counts arrivals per
# departure, one value per packet, not per unit of time: a queue that is
# empty most of the time and passes packets one by one gives one arrival per
# departure (the departing packet itself) while the exact bars sit at 0; a
# queue that builds up gives 2 or more arrivals per departure while it grows
# and 0 while it drains. Both concentrating at 0–1 is the paper's "limited
# queuing phenomena" (Sec. IV-D, its point 2).
#
# On this testbed the router's receive processing runs on its own CPU (RPS)
# and XDP (t1) runs *after* the backlog, so a packet's wait for that CPU is
# before t1, in t1 − t0 (`d_rxq`), when t0 (netif_rx) was recorded: the third
# panel shows that queue (exact occupancy only; the paper had no such
# instant).

# %%
panels = [("input queue, t1 ≤ t < t2", a.input_queue, a.input_queue_hist, a.input_queue_paper),
          ("output queue, t3 ≤ t < t4", a.output_queue, a.output_queue_hist,
           a.output_queue_paper)]
if has_t0:
    backlog = occupancy(df, "backlog")
    panels.append(("backlog, t0 ≤ t < t1", backlog, time_weighted_hist(backlog), None))
fig, axes = plt.subplots(1, len(panels), figsize=(4.4 * len(panels), 3.8), layout="constrained")
for ax, (name, q, (n, frac), estimate) in zip(axes, panels):
    figures.queue_hist(ax, n, frac, "exact: fraction of time")
    if estimate is not None:
        figures.counts_hist(ax, estimate, "paper: arrivals per departure interval")
    ax.set_xlabel("packets in the queue")
    ax.set_ylabel("fraction of time (bars) / of departures (line)")
    ax.set_title(name + (f"\n({q.open} open: a lower bound)" if q.open else ""), fontsize=10)
    ax.legend(fontsize=8)
fig.suptitle("queue sizes: exact occupancy and the paper's estimate (cf. Fig. 7a, 7b)")
plt.show()

# %% [markdown]
# The same in numbers. `time non-empty` is the fraction of the time the queue
# held at least one packet; `open` counts packets that entered and were not
# seen leaving (dropped inside, or still there at the end): they are left
# out, so with open > 0 the occupancy is a lower bound.

# %%
rows = []
for name, q, (n, frac), estimate in panels:
    rows.append({"queue": name, "mean (time-weighted)": float((n * frac).sum()),
                 "max": int(q.n.max()) if len(q.n) else 0,
                 "time non-empty": float(frac[1:].sum()),
                 "open": q.open,
                 "paper estimate: mean arrivals per departure":
                     float(estimate.mean()) if estimate is not None and len(estimate) else np.nan})
pd.DataFrame(rows).set_index("queue").round(3)

# %% [markdown]
# Over time: per time bin (about 400 across the run) the most packets each
# queue held. An output queue that climbs to the qdisc's limit and stays
# there is an overloaded link; the drops follow (`competitive.ipynb`).

# %%
fig, axes = plt.subplots(len(panels), 1, figsize=(12, 2.6 * len(panels)), sharex=True,
                         layout="constrained")
for ax, (name, q, _, _) in zip(axes, panels):
    figures.occupancy_series(ax, q, t_start, name)
    ax.set_title(name, fontsize=10)
fig.suptitle("queue occupancy over time (maximum per time bin)")
plt.show()

# %% [markdown]
# ## Coffee breaks (Fig. 7c)
# A coffee break is an interval in which a packet waits in the input queue
# (arrived, not yet at t2) while no packet is being processed (t2..t3), the
# output queue is empty and the link idle: the router idles although work is
# waiting — interrupt moderation, the scheduler, a CPU waking up.
# `hopscope.analysis.coffee.coffee_breaks` counts those at least `min_duration_ns`
# long. By default (`analyse`) that is one arrival gap: the mean time between
# two arrivals, set by the traffic, not by the machine. A break that starts
# with a packet's arrival and ends within it is over before the next packet
# comes, so it cannot grow the input queue (the paper's reason to count
# breaks). The other reading, the idle floor, is a percentile of the wait
# from arrival to t2 over packets that found the router idle (nothing in it
# for 50 µs): such a packet waits that long with nothing wrong (skb
# building, GRO, the probes, from t0 the router's CPU waking up), so only
# longer gaps are breaks. It is measured on the run, so it moves with the
# machine's state. Both are chosen without looking at the breaks; the sweep
# below shows both and how much the answer depends on them.
#
# The paper: a new break is "very likely to occur after about 390 packets"
# (Sec. IV-D, point 3): the peak of Fig. 7c's histogram, its **mode**.
# `coffee.interoccurrence_stats` gives the mode (the most frequent value in
# the most populated 10-packet bin) with the median and the mean beside it;
# the three differ a lot on a skewed count.
#
# Left: the breaks' durations, 1 µs bins. Right: the interoccurrence, the
# number of packets that left the input queue (reached t2) between one break
# and the next (log y axis). A peak at 1 means nearly every packet found the
# router idle.

# %%
b = a.coffee_breaks
gaps = a.coffee_interoccurrence
st = interoccurrence_stats(gaps)
print(f"{len(b)} breaks of at least {a.min_break_ns / 1000:g} µs, the queue joined at "
      f"{b.attrs['arrival']} ({ARRIVALS[b.attrs['arrival']]}); "
      f"{b.attrs['shorter']} shorter ones left out; "
      f"{b.attrs['open']} packets with no known exit taken as busy")
fig, (ax_d, ax_i) = plt.subplots(1, 2, figsize=(12, 3.8), layout="constrained")
figures.histogram(ax_d, relative_histogram(b["duration_ns"].to_numpy(), 1000))
ax_d.set_xlabel("break duration (µs)")
ax_d.set_title(f"durations ({len(b)} breaks)")
figures.counts_hist(ax_i, gaps, None)
ax_i.set_yscale("log")  # the rare long gaps stay visible beside the common short ones
ax_i.set_xlabel("packets that left the input queue between two breaks")
told = (f"mode {st['mode']}, median {st['median']:.0f}, mean {st['mean']:.0f}" if st["count"]
        else "none")
ax_i.set_title(f"interoccurrence from {b.attrs['arrival']} ({told}; the paper's mode: ~390)")
fig.suptitle("coffee breaks: the router idle while a packet waits (cf. Fig. 7c)")
plt.show()

# %% [markdown]
# How much the answer depends on the two choices behind it (`coffee.sweep`):
# the shortest break counted — fixed from 0.5 to 20 µs, one arrival gap, or
# the idle floor at the 99th, 99.9th and 99.99th percentile (none where fewer
# than 10 idle waits lie above it; `judged`: the thresholds fixed before
# looking, at which `hopscope paper` judges the claim) — and where a packet joins the
# input queue: at t0 (netif_rx), the paper's placement, which puts the
# backlog in front of the router's CPU into the queue, or at t1 (XDP), after
# it. On this testbed a packet takes tens of µs from netif_rx on the
# sender's CPU to XDP on the router's (an inter-processor interrupt and a CPU
# waking up: the median is printed below), so counted from t0 with a fixed
# threshold almost every packet that finds the router idle starts a break:
# the router's own CPU is the coffee drinker. The idle floor from t0 takes
# that wake-up in; from t1, breaks of a few µs are common and longer ones
# rare. `hopscope report` draws the same table.

# %%
if has_t0:
    print(f"t1 - t0 (netif_rx to XDP), median of complete packets: "
          f"{df.loc[df['status'] == 'complete', 'd_rxq'].median() / 1000:.1f} µs")
sw = sweep(df)
sw["threshold"] = [f"{q:.2%} idle floor" if rule == "idle floor" else rule
                   for rule, q in zip(sw["rule"], sw["quantile"])]
(sw.assign(min_us=sw["min_ns"] / 1000, total_ms=sw["total_ns"] / 1e6)
   .set_index(["arrival", "threshold", "min_us"])
   [["judged", "breaks", "total_ms", "mode", "median", "mean"]].round(1))

# %% [markdown]
# ## Output busy periods
# A busy period starts when a packet enters an empty output (t3) and ends when
# the output is empty again (the last t4 of the period). No wire time is
# added after t4 (`busy_periods(df, link_bps=...)` would, for a real link):
# veth has none, and a TBF's pacing is time spent before t4, in its queue. So
# a packet that finds the output empty and the shaper's tokens available
# makes a period of its own, about a µs long. Left: their durations
# with log-spaced bins (they span from a single packet's passage, about a µs,
# to the whole time an overloaded link stays backlogged); right: how many
# packets each carried (log y axis).

# %%
bp = a.busy_periods
span = (df["t4"].max() - df["t3"][df["t3"] > 0].min())
print(f"{len(bp)} busy periods; the output was busy {bp['duration_ns'].sum() / span:.1%} "
      f"of the time from the first t3 to the last t4; "
      f"{bp.attrs['open']} packets entered and were not seen leaving (left out)")
fig, (ax_d, ax_n) = plt.subplots(1, 2, figsize=(12, 3.8), layout="constrained")
figures.histogram(ax_d, relative_histogram(bp["duration_ns"].to_numpy(), 1, log=True), log_x=True)
ax_d.set_xlabel("busy period (µs)")
ax_d.set_title("durations, log-spaced bins")
figures.counts_hist(ax_n, bp["packets"].to_numpy(), None)
ax_n.set_yscale("log")
ax_n.set_xlabel("packets in the busy period")
ax_n.set_title("packets per busy period")
fig.suptitle("output busy periods")
plt.show()

# %% [markdown]
# ## Minimum transit per packet size
# For each IP length, the smallest transit t4 − t1 of a complete packet: the
# time the router needs for a packet of that size when nothing is in its
# way. Sizes with few packets (the generators' control traffic) are rough:
# the minimum of a few values is not yet the floor. The paper argued that
# processing is *not* that minimum (Sec. IV-D, its point 1): compare with the
# d_p histograms of `single_sender.ipynb`.

# %%
m = a.min_transit
fig, ax = plt.subplots(figsize=(8, 3.8), layout="constrained")
ax.scatter(m["ip_len"], m["min_transit_ns"] / 1000, s=12 + 6 * np.log10(m["count"]))
for r in m.itertuples():
    ax.annotate(f"{r.count}", (r.ip_len, r.min_transit_ns / 1000), fontsize=7,
                textcoords="offset points", xytext=(4, 4))
ax.set_xlabel("IP length (bytes)")
ax.set_ylabel("minimum transit t4 − t1 (µs)")
ax.set_ylim(bottom=0)
ax.set_title("minimum transit vs packet size (labels: packets of that size)")
plt.show()
m.assign(min_transit_us=m["min_transit_ns"] / 1000)
