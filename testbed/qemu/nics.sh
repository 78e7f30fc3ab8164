#!/bin/sh
# usage: testbed/qemu/nics.sh [SERIES]      SERIES: 6.12 (default: the eBPF
#   backend, which needs the BPF netfilter link) or 6.1 (the kernel module)
# hopscope record on real drivers: boots Debian's kernel in QEMU (TCG) with
# four emulated NICs per driver (virtio-net-pci, e1000e, vmxnet3), joined
# pairwise as wires by QEMU hubs, the drivers taken out of the linux-image
# .deb, and runs nics-guest.sh: every XDP mode on every driver, checked
# against the receiver's count. igb is not in Debian 12's QEMU (7.2).
# Work files and the console log go to build/qemu/nics-RELEASE/.
# Exit: 0 every check passed, 1 one failed, 77 QEMU, headers or build/hopscope missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
# the settings; need_qemu LABEL, build_module KDIR DIR, boot_guest LABEL DIR KERNEL [QEMU ARGS]
. "$here/lib.sh"
limit=${HS_QEMU_TIMEOUT:-300}
series=${1:-6.12}
# 6.1 has no BPF netfilter link: the module is its backend
backend=ebpf
[ "$series" = 6.1 ] && backend=kmod
# driver, QEMU's device: in this order, driver D's NICs have MACs 52:54:00:0D:00:0N
DRIVERS="virtio_net:virtio-net-pci e1000e:e1000e vmxnet3:vmxnet3"

need_qemu nics-qemu
[ -x "$cli" ] || { echo "nics-qemu: no $cli (make)"; exit 77; }
ethtool=$(command -v ethtool) || { echo "nics-qemu: ethtool missing (apt-get install ethtool)"; exit 77; }
kdir=$(ls -d /usr/src/linux-headers-"$series".*-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$kdir" ] || { echo "nics-qemu: $series: no /usr/src/linux-headers-$series.*-amd64 (scripts/install-deps.sh)"; exit 77; }
rel=${kdir#/usr/src/linux-headers-}
kdir=$work/$rel		# the kernel and modules, shared with run.sh
dir=$work/nics-$rel
mkdir -p "$dir" "$work/tools"

# shellcheck disable=SC2086
$CC $CFLAGS -static -o "$work/tools/hs_udp" "$here/hs_udp.c"
drivers='' devices=''
for spec in $DRIVERS; do
	drivers="$drivers ${spec%%:*}"
	devices="$devices ${spec#*:}"
done
# virtio's PCI transport, where the kernel has it as a module (6.1), loads first
buses=
grep -q '^CONFIG_VIRTIO_PCI=m' "/usr/src/linux-headers-$rel/.config" && buses=virtio_pci
t0=$(date +%s)
# shellcheck disable=SC2086
"$here/fetch-kernel.sh" "$rel" "$kdir" $buses $drivers
echo $drivers | tr ' ' '\n' > "$dir/drivers"
# every module once, dependencies first
for drv in $buses $drivers; do cat "$kdir/$drv.deps"; done | awk '!seen[$0]++' > "$dir/modules"
kos=$(sed "s,^\(.*\)\$,$kdir/\1.ko," "$dir/modules")
echo $backend > "$dir/backend"
if [ $backend = kmod ]; then
	build_module "/usr/src/linux-headers-$rel" "$dir" || { echo "nics-qemu: $rel: module build failed"; exit 1; }
	echo hopscope >> "$dir/modules"
	kos="$kos $dir/src/kmod/hopscope.ko"
fi
# shellcheck disable=SC2086
"$here/mkinitramfs.sh" "$dir/initrd.gz" "$here/nics-guest.sh" $kos "$dir/drivers" \
	"$dir/modules" "$dir/backend" -- "$work/tools/hs_udp" "$cli" "$ethtool"

# NICs: for driver D, 1 (sender) and 2 (router in) on hub D1, 3 (router out)
# and 4 (receiver) on hub D2: two wires. No option ROM: nothing boots from them
set --
d=0
for dev in $devices; do
	d=$((d + 1))
	for n in 1 2 3 4; do
		set -- "$@" -netdev "hubport,id=n$d$n,hubid=$d$(((n + 1) / 2))" \
			-device "$dev,netdev=n$d$n,mac=52:54:00:0$d:00:0$n,romfile="
	done
done
boot_guest nics-qemu "$dir" "$kdir/vmlinuz" "$@" || exit 1
