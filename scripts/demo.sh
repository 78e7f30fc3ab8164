#!/bin/bash
# `make demo`: testbed up, a short two-sender run (TOS 4 and 5), recorded,
# per-stage summaries per sender, testbed down (also on failure or Ctrl-C).
set -euo pipefail
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "demo: must run as root (BPF, network namespaces)" >&2; exit 1; }
export HS_PREFIX=${HS_PREFIX:-demo-}
OUT=${OUT:-results/demo}
mkdir -p "$OUT"
REC="$OUT/demo.hsr"
ns() { local n=$1; shift; ip netns exec "${HS_PREFIX}$n" "$@"; }
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	testbed/testbed.sh down >/dev/null 2>&1 || true
}
trap cleanup EXIT INT TERM

testbed/testbed.sh up
ns receiver iperf3 -s -1 >/dev/null 2>&1 & pids+=($!)
ns receiver ITGRecv >/dev/null 2>&1 & pids+=($!)
sleep 0.5
build/hopscope record --netns "${HS_PREFIX}router" --in r-s1,r-s2 --out r-rx --stages t0 -d 6 -o "$REC" &
rec=$!; pids+=($rec)
sleep 1
echo "demo: sender1 iperf3 (TOS 4, 550 B, 8000 pkt/s) and sender2 D-ITG (TOS 5, 550 B, Poisson 5000 pkt/s), 3 s"
ns sender2 taskset -c 0 ITGSend -a 198.18.3.2 -T UDP -c 550 -E 5000 -b 5 -t 3000 -poll >/dev/null 2>&1 &
itg=$!; pids+=($itg)
ns sender1 taskset -c 0 iperf3 -c 198.18.3.2 -u -l 550 -b 35200k -t 3 -S 4 >/dev/null
wait "$itg" || true
wait "$rec"
PYTHONPATH=userspace/python python3 - "$REC" <<'PY'
import sys
import hopscope
df = hopscope.load(sys.argv[1])
c = df[df.status == "complete"]
print(f"\n{sys.argv[1]}: {len(df)} records, {len(c)} complete; delays in microseconds "
      "(d_rxq: netif_rx to XDP, the backlog wait)")
for tos, g in c[c.proto == 17].groupby("tos"):
    cols = [c for c in ("d_rxq", "d_iq", "d_p", "d_oq", "transit") if c in g]
    s = g[cols].div(1000).describe(percentiles=[.5, .9, .99])
    print(f"\nTOS {tos} ({'sender1' if tos == 4 else 'sender2' if tos == 5 else '?'}): {len(g)} packets")
    print(s.loc[["min", "mean", "50%", "90%", "99%", "max"]].round(2).to_string())
PY
build/hopscope report "$REC" -o "$OUT/demo.pdf"
echo "demo: record file $REC (hopscope export $REC --csv out.csv)"
echo "demo: report $OUT/demo.pdf"
