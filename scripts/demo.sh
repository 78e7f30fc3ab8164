#!/bin/bash
# `make demo`: one scenario (traffic/examples/demo.toml: two senders, TOS 4 and
# 5) run through the netns testbed and recorded; per-sender delays and the
# generators' truth joined to the records; the PDF report. The runner takes the
# testbed down also on failure or Ctrl-C.
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "demo: must run as root (BPF, network namespaces)" >&2; exit 1; }
OUT=${OUT:-results/demo}
SCENARIO=traffic/examples/demo.toml
RUN="$OUT/demo"
rm -rf "$RUN"
build/hopscope scenario run "$SCENARIO" -o "$OUT" --prefix "${HS_PREFIX:-demo-}"
PYTHONPATH=userspace/python "${HOPSCOPE_PYTHON:-${VENV:-/opt/hopscope/venv}/bin/python}" - "$RUN" <<'PY'
import os
import sys

import pandas as pd

from hopscope.traffic.truth import truth_counts

run = sys.argv[1]
truth = pd.read_parquet(os.path.join(run, "truth.parquet"))
print(f"\n{run}: per packet sent, its fate in the router; delays of the forwarded ones in "
      "microseconds (d_rxq: netif_rx to XDP, the backlog wait; owd: D-ITG's one-way delay)")
for sender, c in truth_counts(truth).items():
    print(f"\n{sender}: " + ", ".join(f"{k} {v}" for k, v in c.items() if v is not None))
    g = truth[(truth.sender == sender) & truth.forwarded]
    cols = [c for c in ("d_rxq", "d_iq", "d_p", "d_oq", "transit", "owd_ns") if c in g]
    g = g[cols].astype(float).rename(columns={"owd_ns": "owd"}).dropna(axis=1, how="all")
    s = g.div(1000).describe(percentiles=[.5, .99])
    print(s.loc[["min", "50%", "99%", "max"]].round(2).to_string())
PY
build/hopscope report "$RUN/run.hsr" -o "$OUT/demo.pdf"
echo "demo: run folder $RUN (record file run.hsr, generator logs, truth.parquet, metadata.json)"
echo "demo: report $OUT/demo.pdf"
