#!/bin/bash
# `make demo`: one scenario (traffic/examples/demo.toml: two senders, TOS 4 and
# 5, through a shaped output) run through the netns testbed and recorded;
# per-sender delays and the generators' truth joined to the records; where the
# delay came from (stage, when, whose packets), from the data; the PDF report.
# The runner takes the testbed down also on failure or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "demo: must run as root (BPF, network namespaces)" >&2; exit 1; }
OUT=${OUT:-results/demo}
SCENARIO=traffic/examples/demo.toml
RUN="$OUT/demo"
rm -rf "$RUN"
build/hopscope scenario run "$SCENARIO" -o "$OUT" --prefix "${HS_PREFIX:-demo-}"
PYTHONPATH=userspace/python "${HOPSCOPE_PYTHON:-${VENV:-/opt/hopscope/venv}/bin/python}" - "$RUN" "$SCENARIO" <<'PY'
import os
import sys
import tomllib

import pandas as pd

from hopscope import load
from hopscope.traffic.truth import truth_counts

run, scenario = sys.argv[1:]
STAGES = {"d_rxq": "the input backlog (t0..t1)", "d_iq": "the input queue (t1..t2)",
          "d_p": "routing (t2..t3)", "d_oq": "the output queue (t3..t4)"}
BIN_NS = 50_000_000  # "when": 50 ms bins of arrival time

truth = pd.read_parquet(os.path.join(run, "truth.parquet"))
print(f"\n{run}: per packet sent, its fate in the router; delays of the forwarded ones in "
      "microseconds (d_rxq: netif_rx to XDP, the backlog wait; owd: D-ITG's one-way delay)")
counts = truth_counts(truth)
for sender, c in counts.items():
    print(f"\n{sender}: " + ", ".join(f"{k} {v}" for k, v in c.items() if v is not None))
    g = truth[(truth.sender == sender) & truth.forwarded]
    cols = [c for c in ("d_rxq", "d_iq", "d_p", "d_oq", "transit", "owd_ns") if c in g]
    g = g[cols].astype(float).rename(columns={"owd_ns": "owd"}).dropna(axis=1, how="all")
    s = g.div(1000).describe(percentiles=[.5, .99])
    print(s.loc[["min", "50%", "99%", "max"]].round(2).to_string())

# the drops, by the sender's TOS (the scenario's): stage and kernel reason
if any(c["dropped"] for c in counts.values()):
    with open(scenario, "rb") as f:
        tos = {name: s.get("tos", 0) for name, s in tomllib.load(f)["senders"].items()}
    df = load(os.path.join(run, "run.hsr"))
    names = df.attrs["header"].get("drop_reasons") or {}
    dropped = df[df["status"] == "dropped"]
    for sender, c in counts.items():
        mine = dropped[dropped["tos"] == tos[sender]]
        where = mine.groupby(["drop_stage", "drop_reason"], observed=True).size()
        print(f"\n{sender}: dropped " + (", ".join(
            f"{n} at {stage} ({names.get(str(reason), f'reason {reason}')})"
            for (stage, reason), n in where.items() if n) or "none"))

# where the delay came from: each stage's share of the time the forwarded
# packets spent in the router; of the stage that held most, when it was
# long and whose packets waited there longest
fwd = truth[truth.forwarded]
stages = [c for c in STAGES if c in fwd and fwd[c].notna().any()]
spent = fwd[stages].sum()
top = spent.idxmax()
since = (fwd["t1"] - fwd["t1"].min()).astype("int64")
by_bin = fwd[top].groupby(since // BIN_NS).median()
long = by_bin.index[by_bin >= by_bin.max() / 10]  # a tenth of its longest bin, or more
p50 = fwd.groupby("sender", observed=True)[top].median().sort_values(ascending=False)
sent = since.groupby(fwd["sender"], observed=True).agg(["min", "max"]) / 1e9
print("\nwhere the delay came from, as a share of the time the forwarded packets spent in the "
      "router:\n  " + ", ".join(f"{spent[c] / spent.sum():.1%} {STAGES[c]} {c}"
                                for c in spent.sort_values(ascending=False).index))
print(f"{STAGES[top]} was long from {long.min() * BIN_NS / 1e9:.2f} s to "
      f"{(long.max() + 1) * BIN_NS / 1e9:.2f} s into the run (median of a {BIN_NS // 10**6} ms "
      f"bin up to {by_bin.max() / 1e3:.2f} µs)\n  while the senders sent: " + ", ".join(
          f"{n} {r['min']:.2f}-{r['max']:.2f} s" for n, r in sent.iterrows()))
print(f"{p50.index[0]}'s packets waited there longest: median {p50.iloc[0] / 1e3:.2f} µs, "
      + ", ".join(f"{n}'s {v / 1e3:.2f} µs" for n, v in p50.iloc[1:].items()))
PY
build/hopscope report "$RUN/run.hsr" --labels demo -o "$OUT/demo.pdf"
echo "demo: run folder $RUN (record file run.hsr, generator logs, truth.parquet, metadata.json)"
echo "demo: report $OUT/demo.pdf"
