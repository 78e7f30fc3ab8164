#!/bin/sh
# All tests: BPF unit tests, Python package, testbed, end to end, kernel module in QEMU.
# pytest prints the closing summary line CI reads.
set -u
cd "$(dirname "$0")/.."
[ "$(id -u)" = 0 ] || { echo "tests need root (BPF, network namespaces)" >&2; exit 1; }
export PYTHONPATH="$PWD/userspace/python${PYTHONPATH:+:$PYTHONPATH}"
exec python3 -m pytest -q -p no:cacheprovider tests "$@"
