#!/bin/sh
# `make deps`: everything hopscope needs on Debian bookworm (run as root).
#  1. Debian's packages (apt). libbpf-dev and bpftool alone come from
#     bookworm-backports: bookworm's libbpf 1.1 cannot attach netfilter
#     programs, and pulling more from backports upgrades systemd.
#     openjdk-17-jre-headless is the JVM of pyspark (in the `test` group
#     below): Spark 4 needs Java 17 or 21, and bookworm has 17.
#  2. The Python packages, in one virtualenv for the machine ($VENV, default
#     /opt/hopscope/venv) made from $PYTHON (default: the python3 first on
#     PATH; Debian's own works). The list is userspace/python/pyproject.toml's
#     dependencies and its `test` group. The venv holds third-party packages
#     only: build/hopscope and the tests put their own tree's package first.
# Nothing is installed into the system's Python. Each part is skipped when it
# is up to date; FORCE=1 does both again, the virtualenv made anew.
# docs/install.md tells what goes where.
set -eu
[ "$(id -u)" = 0 ] || { echo "install-deps: must run as root" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
umask 022  # the venv must be readable by whoever runs hopscope
top=$(cd "$(dirname "$0")/.." && pwd)
pyproject=$top/userspace/python/pyproject.toml
VENV=${VENV:-/opt/hopscope/venv}
PY=${PYTHON:-python3}
FORCE=${FORCE:-0}
case $VENV in
/?*) ;;
*) echo "install-deps: VENV must be an absolute path, not '$VENV'" >&2; exit 2 ;;
esac

# --- 1. Debian's packages ---------------------------------------------------
stamp=/var/lib/hopscope-deps.stamp
want=11
if [ "$FORCE" = 1 ] || [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
	bp=/etc/apt/sources.list.d/bookworm-backports.list
	[ -f "$bp" ] || echo 'deb http://deb.debian.org/debian bookworm-backports main' > "$bp"
	# Third-party lists on some images are unreachable; a failed list must not stop us.
	apt-get update -q || true
	apt-get install -y -q --no-install-recommends \
		clang llvm make gcc pkg-config libelf-dev zlib1g-dev libdeflate-dev \
		iproute2 ethtool iputils-ping jq iperf3 d-itg tcpdump nftables wireguard-tools procps psmisc util-linux \
		python3 python3-venv poppler-utils man-db openjdk-17-jre-headless \
		qemu-system-x86 busybox-static cpio xz-utils kmod
	apt-get install -y -q --no-install-recommends -t bookworm-backports libbpf-dev bpftool
	# prometheus: tests/e2e/test_serve.py starts its own on loopback. Debian's
	# package starts and enables a service on :9090; no policy-rc.d here means
	# none keeps it from starting, so one is put in place for the install, and
	# the service is disabled (stopped where systemd runs) after it
	if ! dpkg -s prometheus >/dev/null 2>&1; then
		rc=/usr/sbin/policy-rc.d
		own=0
		[ -e "$rc" ] || { printf '#!/bin/sh\nexit 101\n' > "$rc"; chmod 755 "$rc"; own=1; }
		apt-get install -y -q --no-install-recommends prometheus || { [ "$own" = 0 ] || rm -f "$rc"; exit 1; }
		[ "$own" = 0 ] || rm -f "$rc"
		if [ -d /run/systemd/system ]; then
			systemctl disable --now prometheus.service
		elif command -v systemctl >/dev/null 2>&1; then
			systemctl disable prometheus.service  # works offline, SysV links too
		else
			update-rc.d prometheus disable
		fi
	fi
	# The kernel module (make kmod, make kmod-test) builds against Debian's 6.1 and
	# 6.12 headers; testbed/qemu fetches the matching images itself. INITRD=No: no
	# initramfs for kernels that are never booted here (saves about a minute).
	INITRD=No apt-get install -y -q --no-install-recommends libc6-dev \
		linux-headers-amd64 linux-headers-6.12-amd64
	echo "$want" > "$stamp"
fi

# --- 2. the Python packages, in $VENV ----------------------------------------
vpy=$VENV/bin/python
vstamp=$VENV/hopscope-requirements.txt  # the list last installed in full
remake() {  # never removes a folder that is not a virtualenv
	if [ -e "$VENV" ] && [ ! -f "$VENV/pyvenv.cfg" ] && [ -n "$(ls -A "$VENV")" ]; then
		echo "install-deps: $VENV is not a virtualenv: not touching it (set VENV)" >&2
		exit 1
	fi
	command -v "$PY" >/dev/null 2>&1 || { echo "install-deps: no $PY (set PYTHON)" >&2; exit 1; }
	echo "install-deps: making the virtualenv $VENV from" \
		"$("$PY" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
	rm -rf "$VENV"
	mkdir -p "$(dirname "$VENV")"
	"$PY" -m venv "$VENV"
}
# made anew on FORCE=1, and when its Python no longer runs (its base Python
# removed) or it has no pip (made without python3-venv)
if [ "$FORCE" = 1 ] || ! "$vpy" -m pip --version >/dev/null 2>&1; then
	remake
fi
# the list, from pyproject.toml: tomllib from Python 3.11 on, tomli before
if ! "$vpy" -c 'import tomllib' 2>/dev/null && ! "$vpy" -c 'import tomli' 2>/dev/null; then
	"$vpy" -m pip install -q --disable-pip-version-check tomli
fi
reqs=$("$vpy" - "$pyproject" <<'EOF'
import sys
try:
    import tomllib
except ImportError:
    import tomli as tomllib
with open(sys.argv[1], "rb") as f:
    project = tomllib.load(f)["project"]
for req in project["dependencies"] + project["optional-dependencies"]["test"]:
    print(req)
EOF
)
if [ -f "$vstamp" ] && [ "$(cat "$vstamp")" = "$reqs" ]; then
	echo "install-deps: Python packages up to date in $VENV"
else
	echo "install-deps: installing into $VENV:" $reqs
	list=$(mktemp)
	trap 'rm -f "$list"' EXIT
	printf '%s\n' "$reqs" > "$list"
	"$vpy" -m pip install -q --disable-pip-version-check -r "$list"
	cp "$list" "$vstamp"
fi

# --- the editable hopscope an older install-deps put into $PYTHON -------------
# It made the system's `python3 -m hopscope` follow whichever checkout ran
# `make deps` last; build/hopscope and the tests do not need it.
if command -v "$PY" >/dev/null 2>&1; then
	old=$("$PY" - 2>/dev/null <<'EOF' || true
import json
from importlib import metadata
try:
    url = json.loads(metadata.distribution("hopscope").read_text("direct_url.json") or "{}")
except Exception:
    url = {}
if url.get("dir_info", {}).get("editable"):
    print(url.get("url", "?"))
EOF
)
	if [ -n "$old" ]; then
		echo "install-deps: removing the editable hopscope ($old) from $PY:" \
			"build/hopscope and the tests use their own tree's package and $VENV"
		PIP_ROOT_USER_ACTION=ignore "$PY" -m pip uninstall -q -y hopscope ||
			echo "install-deps: could not remove it: run '$PY -m pip uninstall hopscope'" >&2
	fi
fi
