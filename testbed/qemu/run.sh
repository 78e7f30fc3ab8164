#!/bin/sh
# usage: testbed/qemu/run.sh [SERIES...]      SERIES: 6.1 6.12 (default: both)
# The kernel module's test: for each Debian kernel series whose headers are
# installed (scripts/install-deps.sh), build kmod/ against the headers, fetch
# the matching kernel image, boot it in QEMU (TCG: this host's KVM cannot
# boot a stock kernel) with a minimal initramfs that runs guest.sh, and read
# its CHECK and RESULT lines from the serial console.
# Work files and the console log go to build/qemu/RELEASE/ (HS_QEMU_DIR).
# HS_QEMU_GUEST: another /init for the same guest (evaluation/bench/kmod_overhead.py's
# bench-guest.sh), its work files in build/qemu/RELEASE/NAME/.
# Exit: 0 every kernel passed, 1 a check failed, 77 QEMU or headers missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# the settings; need_qemu LABEL, build_module KDIR DIR, boot_guest LABEL DIR KERNEL [QEMU ARGS]
. "$here/lib.sh"
limit=${HS_QEMU_TIMEOUT:-240}	# seconds per guest
guest=${HS_QEMU_GUEST:-$here/guest.sh}

need_qemu kmod-qemu

headers() {	# newest plain amd64 headers of a series: 6.1 -> /usr/src/linux-headers-6.1.0-N-amd64
	ls -d /usr/src/linux-headers-"$1".*-amd64 2>/dev/null | sort -V | tail -n 1
}

build_tools() {	# $CFLAGS is a list of flags: split on purpose
	mkdir -p "$work/tools"
	# shellcheck disable=SC2086
	$CC $CFLAGS -static -o "$work/tools/hs_udp" "$here/hs_udp.c"
	# shellcheck disable=SC2086
	$CC $CFLAGS -static -I"$top/include" -I"$top/userspace" -o "$work/tools/hs_reader" \
		"$here/hs_reader.c" "$top/userspace/backend_kmod.c" "$top/userspace/backend_common.c" \
		"$top/userspace/json.c"
	# shellcheck disable=SC2086
	$CC $CFLAGS -static -pthread -I"$top/include" -o "$work/tools/hs_rawread" \
		"$here/hs_rawread.c"
	# shellcheck disable=SC2086
	$CC $CFLAGS -static -I"$top/include" -I"$top/userspace" -o "$work/tools/hs_hsrcost" \
		"$here/hs_hsrcost.c" "$top/userspace/columns.c"
}

run_series() {
	kdir=$(headers "$1")
	if [ -z "$kdir" ]; then
		echo "kmod-qemu: $1: no /usr/src/linux-headers-$1.*-amd64 (scripts/install-deps.sh)"
		return 77
	fi
	rel=${kdir#/usr/src/linux-headers-}
	dir=$work/$rel
	# another guest's files apart: a test may be running this one meanwhile
	out=$dir
	[ "$guest" = "$here/guest.sh" ] || out=$dir/$(basename "$guest" .sh)
	mkdir -p "$out"
	t0=$(date +%s)
	"$here/fetch-kernel.sh" "$rel" "$dir" || return 1
	build_module "$kdir" "$out" || { echo "kmod-qemu: $rel: module build failed"; return 1; }
	bins="$work/tools/hs_reader $work/tools/hs_udp $work/tools/hs_rawread $work/tools/hs_hsrcost"
	[ -x "$cli" ] && bins="$bins $cli"
	# shellcheck disable=SC2086
	"$here/mkinitramfs.sh" "$out/initrd.gz" "$guest" "$here/guest-router.sh" "$dir/veth.ko" \
		"$out/src/kmod/hopscope.ko" -- $bins
	boot_guest kmod-qemu "$out" "$dir/vmlinuz" -nic none
}

[ $# -gt 0 ] || set -- 6.1 6.12
build_tools
status=0
for series in "$@"; do
	rc=0
	run_series "$series" || rc=$?
	[ $rc -eq 0 ] && continue
	[ $rc -eq 77 ] && [ $status -eq 0 ] && status=77
	[ $rc -ne 77 ] && status=1
done
exit $status
