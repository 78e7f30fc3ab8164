# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # One sender: what each stage of the router adds to a packet's delay
#
# The paper's first set of experiments (Angrisani et al., IEEE TIM 2006,
# Sec. IV-D, Figs. 4–6): sender1 alone sends through the router, and for every
# packet forwarded four instants give three delays:
#
# | delay | from → to | what it holds |
# |---|---|---|
# | d_iq = t2 − t1 | XDP at the input → netfilter PRE_ROUTING | input queueing: the packet taken in, not yet routed |
# | d_p = t3 − t2 | PRE_ROUTING → POST_ROUTING | processing: the routing decision and forwarding |
# | d_oq = t4 − t3 | POST_ROUTING → the driver's transmit | output queueing: the qdisc and the wait for the link |
#
# **The question**: how large is each contribution, how much does it vary,
# and does it change during the run?
#
# **Input**: `HOPSCOPE_RECORDING`, a record file (`.hsr`). The default,
# `tests/data/single.hsr`, is a real recording made by
# `tests/data/make_recording.sh`: sender1 (TOS 4, D-ITG) sends 6000 packets of
# 550 B payload with Poisson arrivals at 8000 packet/s; the router's output
# is a 100 Mbit/s TBF, which stands in for the paper's Fast Ethernet output link
# (about 40 % busy). `HOPSCOPE_TOS` picks the sender; by default, the TOS most
# packets carry.

# %%
import os

import matplotlib.pyplot as plt

from notebook_setup import in_us, input_path, output_qdiscs

import hopscope
from hopscope.report import figures
from hopscope.analysis import analyse

PATH = input_path("HOPSCOPE_RECORDING", "single.hsr")
RESOLUTION_NS = 1000  # histogram bins: the paper's time resolution, 1 µs
PAPER_STAGES = ("d_iq", "d_p", "d_oq")

# %% [markdown]
# ## The run
# Records per TOS and status. Only **complete** packets (seen at all four
# stages) have the three delays. Packets of other TOS values are the
# generators' control traffic (TCP, TOS 0): they are left out below.

# %%
df = hopscope.load(PATH)
print(output_qdiscs(df))
df.groupby(["tos", "status"], observed=True).size().unstack(fill_value=0)

# %%
TOS = int(os.environ.get("HOPSCOPE_TOS") or df["tos"].value_counts().idxmax())
sender = df[df["tos"] == TOS]
sizes = sorted(int(n) for n in sender["ip_len"].unique())
print(f"the sender: TOS {TOS}, {len(sender)} of {len(df)} records; IP length "
      f"{', '.join(map(str, sizes[:5]))}{' ...' if len(sizes) > 5 else ''} B")
a = analyse(sender, resolution_ns=RESOLUTION_NS)

# %% [markdown]
# ## Per-stage statistics
# One row per stage, complete packets only, times in µs. p50 is what RFC 8219
# calls the *typical* delay and p99.9 the *worst case*. `negative` counts
# delays below zero (a clock or matching error) and `missing` complete
# packets without that stage: both should be 0, and they are left out of the
# other columns. `transit` = t4 − t1 is the whole hop.

# %%
in_us(a.stats)

# %% [markdown]
# ## Relative-frequency histograms at 1 µs (the paper's Figs. 4–6)
# Each panel is one stage: the height of a bar is the fraction of the
# sender's packets whose delay fell in that 1 µs bin, so the bars of a panel
# add up to 1. The paper drew one such figure per payload size (Fig. 4: 20 B,
# Fig. 5: 550 B, Fig. 6: 1400 B); the default recording is 550 B, so compare
# with Fig. 5. The x axis stops at the 99.9th percentile (the rest is counted
# in the top-right corner of the panel).
#
# How to read them: a narrow peak near the left is a stage that costs the same
# for every packet; a second peak or a long tail is a stage some packets wait
# in. The paper saw several peaks in d_p (processing is not constant,
# Sec. IV-D, point 1); d_iq and d_oq mostly small, as queues hardly form at
# this load. Here the
# stages are a few µs or less: the probes themselves take 0.1–0.3 µs each
# (see the overhead notebook), so sub-µs differences are at the tracer's floor.

# %%
hists = a.histograms
fig, axes = plt.subplots(1, 3, figsize=(13, 3.8), layout="constrained")
for ax, stage in zip(axes, PAPER_STAGES):
    figures.histogram(ax, hists[stage])
    ax.set_title(figures.STAGE_LABEL[stage])
fig.suptitle(f"TOS {TOS}: relative frequency of each stage's delay, "
             f"{RESOLUTION_NS / 1000:g} µs bins (cf. the paper's Figs. 4–6)")
plt.show()

# %% [markdown]
# The same delays with logarithmic bins (20 per decade), the whole range
# visible: the tail of rare long delays the linear view cuts off. A bar's
# height is still the fraction of packets in it, but the bins widen to the
# right, so compare positions, not areas.

# %%
fig = plt.figure(figsize=(12, 7), layout="constrained")
figures.stage_grid(fig, [a.log_histograms], f"TOS {TOS}: each stage's delay, log-spaced bins",
                   log_x=True)
plt.show()

# %% [markdown]
# ## The delays over time
# Are the delays steady during the run, or do they come in episodes? Per time
# bin (about 400 across the run), the median and the 99th percentile of the
# packets that arrived (t1) in it; log y axis. A median that stays flat while
# the p99 jumps means a few packets were held up (an interrupt, the scheduler,
# a queue building for a moment), not the whole stream.

# %%
complete = (sender["status"] == "complete").to_numpy()
t0 = int(sender["t1"][sender["t1"] > 0].min())
# the complete packets in time bins by t1, once for the three delays
rows, bounds, mid = figures.time_bins(sender["t1"].to_numpy(), complete, t0)
fig, axes = plt.subplots(3, 1, figsize=(12, 8), sharex=True, layout="constrained")
for ax, stage in zip(axes, PAPER_STAGES):
    figures.delay_series(ax, mid, sender[stage].to_numpy()[rows] * figures.US, bounds, stage)
    ax.set_title(figures.STAGE_LABEL[stage])
    ax.legend(loc="upper right", fontsize=8)
fig.suptitle(f"TOS {TOS}: delays over time (per time bin: median and 99th percentile)")
plt.show()

# %% [markdown]
# ## What is left
# The packets of this sender that did not complete, and why: `dropped` by
# the kernel (the stage and the kernel's drop reason say where), `inflight`
# (no exit seen before the recording stopped). The notebook
# `competitive.ipynb` breaks losses down per sender, `queues_coffee.ipynb`
# looks at the queues themselves.

# %%
sender["status"].value_counts().loc[lambda s: s > 0]
