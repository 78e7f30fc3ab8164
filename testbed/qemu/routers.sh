#!/bin/sh
# usage: testbed/qemu/routers.sh
# hopscope record on router configurations the build machine's kernel cannot
# run (no module support): an nftables flowtable (the software fast path),
# a ruleset shaped like OpenWrt's fw4 with flow offloading, VLAN
# sub-interfaces, a bond, tunnels (GRE, IPIP, VXLAN, Geneve, WireGuard) in
# and out.
# Boots Debian's 6.12 kernel in QEMU (TCG) with nf_tables, conntrack, NAT,
# the flowtable, 8021q, bonding and the tunnels' modules out of the
# linux-image .deb and the host's nft and wg, and runs routers-guest.sh on
# guest-router.sh's namespaces (guest-tunnels.sh for the tunnels). Work files and the console log go to
# build/qemu/routers-RELEASE/.
# Exit: 0 every check passed, 1 one failed, 77 QEMU, headers, nft, wg or
# build/hopscope missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# the settings; need_qemu LABEL, build_module KDIR DIR, boot_guest LABEL DIR KERNEL [QEMU ARGS]
. "$here/lib.sh"
limit=${HS_QEMU_TIMEOUT:-540}
# loaded by name in the guest (no modprobe there): every one a rule needs;
# crc32c_generic first, libcrc32c's soft dependency (modinfo's depends omits it)
MODULES="crc32c_generic nf_tables nft_ct nf_conntrack nf_nat nft_nat nft_masq nft_chain_nat nf_flow_table
	nf_flow_table_inet nft_flow_offload 8021q bonding ip_gre ipip vxlan geneve wireguard sit"

need_qemu routers-qemu
[ -x "$cli" ] || { echo "routers-qemu: no $cli (make)"; exit 77; }
nft=$(command -v nft) || { echo "routers-qemu: nft missing (scripts/install-deps.sh)"; exit 77; }
wg=$(command -v wg) || { echo "routers-qemu: wg missing (scripts/install-deps.sh)"; exit 77; }
kdir=$(ls -d /usr/src/linux-headers-6.12.*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$kdir" ] || { echo "routers-qemu: no /usr/src/linux-headers-6.12.*-amd64 (scripts/install-deps.sh)"; exit 77; }
rel=${kdir#/usr/src/linux-headers-}
kdir=$work/$rel		# the kernel and modules, shared with run.sh and nics.sh
dir=$work/routers-$rel
mkdir -p "$dir" "$work/tools"

# shellcheck disable=SC2086
$CC $CFLAGS -static -o "$work/tools/hs_udp" "$here/hs_udp.c"
# shellcheck disable=SC2086
$CC $CFLAGS -static -I"$top/include" -I"$top/userspace" -o "$work/tools/hs_hsrpath" \
	"$here/hs_hsrpath.c" "$top/userspace/columns.c"
t0=$(date +%s)
# shellcheck disable=SC2086
"$here/fetch-kernel.sh" "$rel" "$kdir" $MODULES
# every module once, dependencies first
{ echo veth; for m in $MODULES; do cat "$kdir/$m.deps"; done; } | awk '!seen[$0]++' > "$dir/modules"
kos=$(sed "s,^\(.*\)\$,$kdir/\1.ko," "$dir/modules")
# shellcheck disable=SC2086
"$here/mkinitramfs.sh" "$dir/initrd.gz" "$here/routers-guest.sh" "$here/guest-router.sh" \
	"$here/guest-tunnels.sh" $kos "$dir/modules" -- "$work/tools/hs_udp" \
	"$work/tools/hs_hsrpath" "$cli" "$nft" "$wg"
boot_guest routers-qemu "$dir" "$kdir/vmlinuz" -nic none || exit 1
