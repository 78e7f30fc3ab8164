# ---
# jupyter:
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # What recording costs the router, and the floor no tracer can beat
#
# `evaluation/bench/overhead.py` measures the router's maximum forwarding rate three ways,
# interleaved round by round so that drift in the machine's load hits all
# three alike:
#
# | configuration | what runs at the router's hooks |
# |---|---|
# | **untraced** | nothing |
# | **floor** | `hopscope record --floor`: *empty* programs at the same hooks (XDP at the input, netfilter PRE_ROUTING and POST_ROUTING, `net_dev_start_xmit`, `kfree_skb`), recording nothing |
# | **traced** | `hopscope record`: the full tracer, a record per packet |
#
# The router forwards one iperf3 UDP stream as fast as it can, inline on the
# sender's CPU; the receiver drops the data with an XDP sink; the recorder runs
# on the other CPU. A second pass with `kernel.bpf_stats_enabled` gives the
# time each program takes per run.
#
# **The questions**: how much of the router's forwarding rate does recording
# take, how much of that is the price of merely having programs at these
# hooks (the floor), and what does each stage's program cost per packet?
#
# **Input**: `HOPSCOPE_OVERHEAD`, a JSON file written by `evaluation/bench/overhead.py`.
# The default, `tests/data/overhead.json`, was made by
# `tests/data/make_recording.sh` at short settings (3 rounds of 2 s per
# configuration and payload); `make bench` writes `evaluation/results/overhead-CPU.json`
# with longer ones.

# %%
import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from notebook_setup import input_path

PATH = input_path("HOPSCOPE_OVERHEAD", "overhead.json")
CONFIGS = ("untraced", "floor", "traced")
# each program's hook, in the order a packet meets them
PROGRAMS = {
    "hs_arrival": "t0 netif_rx",
    "hs_input": "t1 XDP (input)",
    "hs_tc_ingress": "tc ingress",
    "hs_prerouting": "t2 PRE_ROUTING",
    "hs_forward": "FORWARD",
    "hs_postrouting": "t3 POST_ROUTING",
    "hs_tc_egress": "tc egress",
    "hs_output": "t4 net_dev_start_xmit",
    "hs_localin": "LOCAL_IN (the router's own)",
    "hs_drop": "kfree_skb (drops)",
}

# %%
with open(PATH) as f:
    bench = json.load(f)
payloads = sorted(bench["summary"], key=int)
print(f"kernel {bench.get('machine')}, {bench.get('cpus')} CPUs; {len(bench['rounds'])} rounds "
      f"of {bench.get('seconds')} s per configuration and payload; "
      f"recorder options {bench.get('record_args') or 'none'}")

# %% [markdown]
# ## The rates
# One row per UDP payload size: the median over rounds of each
# configuration's forwarding rate (thousands of packets per second), the
# ratios (taken within each round, then the median), and how complete the
# traced recording was (complete records / packets forwarded; `ring lost`
# counts records the ring buffer had no room for).

# %%
summary = pd.DataFrame(bench["summary"]).T.loc[payloads]
summary.index = [f"{p} B" for p in payloads]
summary.index.name = "payload"
summary.round(3)

# %% [markdown]
# Left: each configuration's rate per payload; the bar is the median, the dots
# are the rounds (their spread is the measurement's noise on a shared
# 2-CPU VM). Right: the ratios per round. How to read them:
#
# - **floor / untraced** is what any tracer at these four hooks pays, however
#   little its programs do: entering a BPF program at every hook, and generic
#   XDP on veth. No tracer at these hooks can do better than this.
# - **traced / floor** is what hopscope's own work costs: reading the clock,
#   finding the packet's slot, writing the record and the ring buffer.
# - **traced / untraced** is the product of the two: the share of its maximum
#   rate the router keeps while recorded (`evaluation/bench/overhead.py` aims at ≥ 0.75).
#
# Below its maximum rate the router forwards everything either way: the
# cost then shows as a little more time per packet at each stage (next
# section), not as loss.

# %%
rates = {c: {p: [r[p][c]["pps"] / 1e3 for r in bench["rounds"]] for p in payloads}
         for c in CONFIGS}
ratios = {"floor / untraced": ("floor", "untraced"), "traced / untraced": ("traced", "untraced"),
          "traced / floor": ("traced", "floor")}
fig, (ax_r, ax_q) = plt.subplots(1, 2, figsize=(13, 4.2), layout="constrained")
x = np.arange(len(payloads))
width = 0.8 / len(CONFIGS)
for i, c in enumerate(CONFIGS):
    med = [np.median(rates[c][p]) for p in payloads]
    ax_r.bar(x + (i - 1) * width, med, width, label=c)
    for j, p in enumerate(payloads):
        ax_r.plot(np.full(len(rates[c][p]), x[j] + (i - 1) * width), rates[c][p], "k.",
                  markersize=4)
ax_r.set_xticks(x, [f"{p} B" for p in payloads])
ax_r.set_xlabel("UDP payload")
ax_r.set_ylabel("forwarded (kpackets/s)")
ax_r.set_title("maximum forwarding rate (bars: median; dots: rounds)")
ax_r.legend(fontsize=8)
width = 0.8 / len(ratios)
for i, (name, (num, den)) in enumerate(ratios.items()):
    per_round = [[n / d for n, d in zip(rates[num][p], rates[den][p])] for p in payloads]
    ax_q.bar(x + (i - 1) * width, [np.median(r) for r in per_round], width, label=name,
             color=f"C{len(CONFIGS) + i}")  # not the colours of the configurations
    for j, r in enumerate(per_round):
        ax_q.plot(np.full(len(r), x[j] + (i - 1) * width), r, "k.", markersize=4)
ax_q.axhline(1, color="grey", lw=0.8)
ax_q.set_xticks(x, [f"{p} B" for p in payloads])
ax_q.set_xlabel("UDP payload")
ax_q.set_ylabel("ratio of forwarding rates")
ax_q.set_title("what the hooks and the tracer take (bars: median; dots: rounds)")
ax_q.legend(fontsize=8, loc="lower right")
plt.show()

# %% [markdown]
# ## Nanoseconds per program run, per stage
# For each program (the hook it sits at), the mean time one run took with
# `kernel.bpf_stats_enabled` on: the empty floor program beside the traced
# one. The floor's 40–70 ns are mostly the statistics' own cost (about
# 35–40 ns per run); the difference between the bars is what each stage's
# work costs a packet. These are also why sub-microsecond stage delays are at
# the tracer's resolution: the delay between two stages of one packet
# includes the earlier stage's program (0.1–0.3 µs).

# %%
rows = []
for p in payloads:
    for config, progs in bench.get("ns_per_run", {}).get(p, {}).items():
        rows += [{"payload": f"{p} B", "config": config, "program": name, "ns": ns}
                 for name, ns in progs.items()]
ns = pd.DataFrame(rows, columns=["payload", "config", "program", "ns"])
if ns.empty:
    print(f"{PATH} holds no time per program run: evaluation/bench/overhead.py found none of its "
          "recorder's programs in `bpftool prog show` (see its stats pass)")
else:
    order = [n for n in PROGRAMS if n in set(ns["program"])]
    order += sorted(set(ns["program"]) - set(order))
    fig, axes = plt.subplots(1, len(payloads), figsize=(6.5 * len(payloads), 4.2),
                             layout="constrained", squeeze=False, sharey=True)
    for ax, p in zip(axes[0], payloads):
        t = ns[ns["payload"] == f"{p} B"].pivot(index="program", columns="config", values="ns")
        t = t.reindex(index=order, columns=[c for c in ("floor", "traced") if c in t.columns])
        y = np.arange(len(order))
        for i, c in enumerate(t.columns):
            ax.barh(y + (i - 0.5) * 0.4, t[c], 0.4, label=c)
        ax.set_yticks(y, [PROGRAMS.get(n, n) for n in order])
        ax.set_xlabel("ns per run (mean)")
        ax.set_title(f"{p} B payload")
        ax.legend(fontsize=8)
    axes[0, 0].invert_yaxis()  # shared: once for all, the first hook on top
    fig.suptitle("time per program run at each hook (bpf_stats on)")
    plt.show()
ns.pivot_table(index="program", columns=["payload", "config"], values="ns") if len(ns) else ns
