#!/bin/bash
# Makes the small real data the notebooks and their tests read, from scratch:
#   single.hsr, competitive.hsr   tests/data/recording.toml run through the
#                                 netns testbed with hopscope recording
#   overhead.json                 evaluation/bench/overhead.py at short settings
# Each file replaces the old one only once it is complete. The runner and
# evaluation/bench/overhead.py take their testbed down themselves; the trap does it again
# (and removes the scratch folder) whatever happens.
#
#   tests/data/make_recording.sh [all|recordings|overhead]
#   HS_PREFIX=mine- tests/data/make_recording.sh     (default prefix hsnb-)
set -euo pipefail
cd "$(dirname "$0")/../.."
WHAT=${1:-all}
case $WHAT in
all | recordings | overhead) ;;
*) echo "usage: tests/data/make_recording.sh [all|recordings|overhead]" >&2; exit 2 ;;
esac
[ "$(id -u)" = 0 ] || { echo "make_recording: must run as root (BPF, network namespaces)" >&2; exit 1; }
[ -x build/hopscope ] || { echo "make_recording: build/hopscope missing: run make first" >&2; exit 1; }

export HS_PREFIX=${HS_PREFIX:-hsnb-}
DATA=tests/data
TMP=$(mktemp -d /tmp/hopscope-data.XXXXXX)
cleanup() {
	testbed/testbed.sh down >/dev/null 2>&1 || true
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

keep() { # keep SRC NAME: into tests/data without ever leaving half a file there
	cp "$1" "$DATA/$2.tmp"
	mv "$DATA/$2.tmp" "$DATA/$2"
}

if [ "$WHAT" != overhead ]; then
	build/hopscope scenario run "$DATA/recording.toml" -o "$TMP" --prefix "$HS_PREFIX"
	for cond in single competitive; do
		keep "$TMP/$cond/run.hsr" "$cond.hsr"
	done
fi
if [ "$WHAT" != recordings ]; then
	# 3 interleaved rounds of 2 s per configuration and payload: about 2 minutes
	evaluation/bench/overhead.py --payloads 64,1400 --rounds 3 --seconds 2 -o "$TMP/overhead.json"
	keep "$TMP/overhead.json" overhead.json
fi
ls -l "$DATA"/*.hsr "$DATA"/overhead.json
