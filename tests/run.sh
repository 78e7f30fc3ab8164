#!/bin/sh
# The tests: BPF unit tests, Python package, testbed, end to end, kernel
# module in QEMU, installation. pytest prints the closing summary line CI
# reads. They run with the virtualenv `make deps` made (VENV, default
# /opt/hopscope/venv), or the Python HOPSCOPE_PYTHON names, and this tree's
# package first on the path; build/hopscope runs the same Python.
#   tests/run.sh [PATH...] [pytest options]   every test (or those under PATH), as root
#   tests/run.sh --check [PATH...]            those that need neither root nor QEMU, nor
#                                             take minutes: any user (make check)
set -u
cd "$(dirname "$0")/.."
check=0
[ "${1:-}" = --check ] && { check=1; shift; }
[ "$check" = 1 ] || [ "$(id -u)" = 0 ] || {
	echo "tests need root (BPF, network namespaces); tests/run.sh --check runs those that do not" >&2
	exit 1
}
PY=${HOPSCOPE_PYTHON:-${VENV:-/opt/hopscope/venv}/bin/python}
[ -x "$PY" ] || command -v "$PY" >/dev/null 2>&1 || {
	echo "tests: no $PY: run 'make deps' (or set VENV or HOPSCOPE_PYTHON)" >&2
	exit 1
}
export HOPSCOPE_PYTHON="$PY"
# a virtualenv's bin first on PATH, as if activated: a test's `python3`, and the
# notebooks' kernel, are the same Python
bin=$(dirname "$PY")
[ -f "$bin/../pyvenv.cfg" ] && export PATH="$bin:$PATH"
export PYTHONPATH="$PWD/userspace/python${PYTHONPATH:+:$PYTHONPATH}"
# paths given (./tests/run.sh tests/install): those; otherwise every test
paths=0
for a; do case $a in -*) ;; *) [ -e "${a%%::*}" ] && paths=1 ;; esac; done
[ "$paths" = 1 ] || set -- tests "$@"
[ "$check" = 1 ] && set -- "$@" -m "not root and not qemu and not slow"
exec "$PY" -m pytest -q -p no:cacheprovider "$@"
