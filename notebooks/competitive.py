# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Competitive traffic: does each sender see the same router?
#
# The paper's second part (Angrisani et al., IEEE TIM 2006, Sec. IV-E,
# Figs. 10–12, Tables I–III): sender1 (TOS 4) and sender2 (TOS 5) send at the
# same time through the router into one output link. The TOS byte tells their
# packets apart, so each stage's delay — d_iq = t2 − t1 (input queueing),
# d_p = t3 − t2 (processing), d_oq = t4 − t3 (output queueing) — can be
# looked at per sender.
#
# **The questions**: are the senders' delays alike at each stage, and when
# the output link is overloaded, whose packets are lost, where, and when?
#
# **Input**: `HOPSCOPE_RECORDING`, a record file (`.hsr`). The default,
# `tests/data/competitive.hsr`, is a real recording made by
# `tests/data/make_recording.sh`: sender1 (D-ITG, Poisson arrivals,
# 2400 packet/s) beside sender2 (iperf3, constant rate, 1800 packet/s), both
# 550 B payload, into a 20 Mbit/s TBF with a 50-packet queue on the router's
# output, offered about 99 % of its rate: the output queue fills and drains,
# and overflows now and then. `HOPSCOPE_TOS` lists the senders' TOS values (default
# `4,5`, the paper's).

# %%
import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from notebook_setup import in_us, input_path, output_qdiscs

import hopscope
from hopscope.report import figures
from hopscope.analysis import analyse
from hopscope.record.format import STAGE_NAMES
from hopscope.analysis.hist import relative_histogram
from hopscope.analysis.stats import STAGES

PATH = input_path("HOPSCOPE_RECORDING", "competitive.hsr")
SENDERS = [int(t) for t in os.environ.get("HOPSCOPE_TOS", "4,5").split(",")]
RESOLUTION_NS = 1000  # the paper's 1 µs bins
PAPER_STAGES = ("d_iq", "d_p", "d_oq")

# %% [markdown]
# ## The run
# Records per TOS and status. Only complete packets (seen at all four stages)
# have delays; `dropped` ones were freed by the kernel inside the router.
# TOS 0 is the generators' control traffic (TCP).

# %%
df = hopscope.load(PATH)
print(output_qdiscs(df))
missing = [t for t in SENDERS if not (df["tos"] == t).any()]
if missing:
    raise ValueError(f"no packets with TOS {missing} in {PATH}: set HOPSCOPE_TOS")
df.groupby(["tos", "status"], observed=True).size().unstack(fill_value=0)

# %%
a = analyse(df, resolution_ns=RESOLUTION_NS)
mine = a.stats_by_tos[a.stats_by_tos["tos"].isin(SENDERS)]

# %% [markdown]
# ## Per-sender statistics
# One row per sender and stage, complete packets only, times in µs (p50 is
# RFC 8219's *typical* delay, p99.9 its *worst case*). The second table puts
# the senders side by side for the typical and the 99th-percentile delay.
#
# How to read them: the input and processing stages see each packet on its
# own, so the senders should look alike there unless one of them brings more
# work (more packets, bursts). At the output both share one FIFO queue, so
# their d_oq distributions look alike too, whatever their arrival pattern;
# what differs is who arrives when the queue is full (next sections).

# %%
in_us(mine, keys=("tos",))

# %%
side = mine.assign(sender=mine["tos"].map(figures.tos_label))
side = side.pivot(index="stage", columns="sender", values=["p50", "p99"]) / 1000
side.round(2).rename(columns={"p50": "p50 (µs)", "p99": "p99 (µs)"}).loc[list(STAGES)]

# %% [markdown]
# ## Per-sender histograms at 1 µs (the paper's Figs. 10–12)
# As in the paper: one row per sender — (a)–(c) sender1, (d)–(f) sender2 —
# one column per stage; a bar is the fraction of that sender's packets whose
# delay fell in that 1 µs bin, so each panel adds up to 1. The x axis stops at
# the 99.9th percentile (the rest is counted in the panel's corner).
#
# With competition the paper saw a greater single-hop delay on average
# (Sec. IV-E, point 1), the most frequent delays of each sender close to
# those without competition (point 2), d_iq and d_oq still showing limited
# queuing (point 3), and d_p's mean and spread grow, above all in the third
# set (point 4). Here the output link is the bottleneck: d_oq spreads
# over milliseconds — up to the time the 50-packet queue takes to drain at
# 20 Mbit/s, about 50 × 592 B × 8 / 20 Mbit/s ≈ 12 ms — so at 1 µs bins each
# bar of that panel holds few packets; the log-binned view below shows its
# shape better.

# %%
fig, axes = plt.subplots(len(SENDERS), 3, figsize=(13, 3.3 * len(SENDERS)),
                         layout="constrained", squeeze=False)
for row, tos in zip(axes, SENDERS):
    for ax, stage in zip(row, PAPER_STAGES):
        figures.histogram(ax, a.histograms_by_tos[tos][stage])
        ax.set_title(f"{figures.tos_label(tos)}: {figures.STAGE_LABEL[stage]}", fontsize=10)
fig.suptitle(f"per-sender relative frequency of each stage's delay, "
             f"{RESOLUTION_NS / 1000:g} µs bins (cf. the paper's Figs. 10–12)")
plt.show()

# %% [markdown]
# The senders overlaid, with logarithmic bins (20 per decade, from the
# smallest delay) so that sub-µs stages and millisecond queueing fit on one
# axis. Where the two lines lie on top of each other the senders were
# treated alike.

# %%
complete = df[df["status"] == "complete"]
log_hists = [{stage: relative_histogram(complete.loc[complete["tos"] == tos, stage].to_numpy(),
                                        1, log=True)
              for stage in STAGES} for tos in SENDERS]
fig = plt.figure(figsize=(12, 7), layout="constrained")
figures.stage_grid(fig, log_hists, "the senders' delays overlaid, log-spaced bins", log_x=True,
                   labels=[figures.tos_label(t) for t in SENDERS])
plt.show()

# %% [markdown]
# ## Losses per sender
# Every record of a sender by status, and the fraction dropped in the router.
# `inflight` packets had no exit seen when the recording stopped; a packet
# lost before the router's first hook left no record at all (the scenario
# runner's truth table, `hopscope.truth`, counts those from the generators'
# logs).

# %%
per_sender = pd.crosstab(df["tos"], df["status"]).loc[SENDERS]
per_sender = per_sender.loc[:, per_sender.sum() > 0]
per_sender["records"] = per_sender.sum(axis=1)
per_sender["dropped %"] = (100 * per_sender.get("dropped", 0) / per_sender["records"]).round(2)
per_sender.index = [figures.tos_label(t) for t in per_sender.index]
per_sender

# %% [markdown]
# Where and why, per sender: the last stage each dropped packet was seen at
# and the kernel's drop reason (named as the recording kernel names it:
# `QDISC_DROP` is the output queue overflowing).

# %%
names = df.attrs["header"].get("drop_reasons") or {}
dropped = df[(df["status"] == "dropped") & df["tos"].isin(SENDERS)]
where = dropped.groupby(["tos", "drop_stage", "drop_reason"], observed=True).size()
where = where.rename("packets").reset_index()
where["reason"] = where["drop_reason"].map(lambda r: names.get(str(r), f"reason {r}"))
where

# %% [markdown]
# The whole run's loss table (`hopscope.analysis.loss.loss_table`): the router's own
# drops apart from what the tracer lost (ring buffer full, evicted slots,
# key collisions) and from packets that were neither. Rows with a count of 0
# are left out here; a tracer row above 0 means the recording itself is
# incomplete.

# %%
a.loss[a.loss["packets"].fillna(0) > 0]

# %% [markdown]
# ## When were packets dropped?
# The output queue's exact occupancy over time (packets between t3 and t4;
# per time bin its maximum) with each dropped packet marked at the instant it
# was last seen, per sender. Drops should sit where the queue touches its
# limit: a drop elsewhere would be lost for another reason (see the table
# above).

# %%
seen = [s for s in STAGE_NAMES if s in df.columns]
t_start = int(df["t1"][df["t1"] > 0].min())
fig, ax = plt.subplots(figsize=(12, 4), layout="constrained")
figures.occupancy_series(ax, a.output_queue, t_start, "output queue")
for i, tos in enumerate(SENDERS):
    last_seen = dropped.loc[dropped["tos"] == tos, seen].max(axis=1).to_numpy()
    ax.plot((last_seen - t_start) * 1e-9, np.full(len(last_seen), -1 - i), "|", markersize=10,
            label=f"{figures.tos_label(tos)} dropped ({len(last_seen)})")
ax.set_title("output queue occupancy (t3 ≤ t < t4) and the drops")
ax.legend(loc="upper right", fontsize=8)
plt.show()
