#!/bin/sh
# Installs everything hopscope needs on Debian bookworm (run as root).
# libbpf-dev and bpftool alone come from bookworm-backports: bookworm's libbpf 1.1
# cannot attach netfilter programs, and pulling more from backports upgrades systemd.
set -eu
[ "$(id -u)" = 0 ] || { echo "install-deps: must run as root" >&2; exit 1; }
export DEBIAN_FRONTEND=noninteractive
stamp=/var/lib/hopscope-deps.stamp
want=7
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ "${FORCE:-0}" != 1 ]; then
	exit 0
fi
bp=/etc/apt/sources.list.d/bookworm-backports.list
[ -f "$bp" ] || echo 'deb http://deb.debian.org/debian bookworm-backports main' > "$bp"
# Third-party lists on some images are unreachable; a failed list must not stop us.
apt-get update -q || true
apt-get install -y -q --no-install-recommends \
	clang llvm make gcc pkg-config libelf-dev zlib1g-dev \
	iproute2 ethtool iputils-ping jq iperf3 d-itg tcpdump procps psmisc util-linux \
	python3-pip poppler-utils \
	qemu-system-x86 busybox-static cpio xz-utils kmod
apt-get install -y -q --no-install-recommends -t bookworm-backports libbpf-dev bpftool
# The kernel module (make kmod, make kmod-test) builds against Debian's 6.1 and
# 6.12 headers; testbed/qemu fetches the matching images itself. INITRD=No: no
# initramfs for kernels that are never booted here (saves about a minute).
INITRD=No apt-get install -y -q --no-install-recommends libc6-dev \
	linux-headers-amd64 linux-headers-6.12-amd64
PY=${PYTHON:-python3}
"$PY" -m pip install -q --disable-pip-version-check \
	'pandas>=2.1' 'numpy' 'matplotlib' 'pyarrow' 'pytest' 'scapy' 'jupytext' 'nbmake' 'duckdb' 'tomli; python_version<"3.11"'
# the hopscope package itself, editable: the tree is what runs
"$PY" -m pip install -q --disable-pip-version-check -e "$(dirname "$0")/../userspace/python"
echo "$want" > "$stamp"
