#!/bin/sh
# usage: fetch-kernel.sh RELEASE DIR [MODULE...]
# Puts the kernel of Debian's linux-image-RELEASE (the same version as the
# installed linux-headers-RELEASE) and its veth module into DIR: vmlinuz,
# veth.ko. Each MODULE named (virtio_net, e1000e...) goes there too, with the
# modules it depends on; DIR/MODULE.deps lists them and it in loading order.
# Nothing is installed: apt-get download, then the files out of the .deb.
set -eu
rel=$1 dir=$2
shift 2
have=1
for f in vmlinuz veth.ko; do [ -s "$dir/$f" ] || have=0; done
for m; do [ -s "$dir/$m.deps" ] || have=0; done
[ $have = 1 ] && exit 0
ver=$(dpkg-query -W -f='${Version}' "linux-headers-$rel" 2>/dev/null) || {
	echo "fetch-kernel: linux-headers-$rel is not installed (scripts/install-deps.sh)" >&2
	exit 1
}
mkdir -p "$dir/deb"
cd "$dir/deb"
rm -rf ./*.deb boot lib
# the signed image, or the unsigned one where only that exists; apt prints a
# harmless warning when root downloads outside its sandbox
apt-get download -q "linux-image-$rel=$ver" 2>/dev/null ||
	apt-get download -q "linux-image-$rel-unsigned=$ver" || {
	echo "fetch-kernel: cannot download linux-image-$rel $ver (run apt-get update?)" >&2
	exit 1
}
deb=$(ls ./*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x --wildcards "./boot/vmlinuz-$rel" "./lib/modules/$rel/kernel/*"
mv "boot/vmlinuz-$rel" ../vmlinuz

take() {	# NAME: DIR/NAME.ko, uncompressed; fails when the package has none
	ko=$(find "lib/modules/$rel/kernel" -name "$1.ko*" | head -n 1)
	[ -n "$ko" ] || { echo "fetch-kernel: linux-image-$rel has no module $1" >&2; return 1; }
	case $ko in
	*.xz) xz -dc "$ko" > "../$1.ko" ;;
	*.zst) zstd -dqc "$ko" > "../$1.ko" ;;
	*) cp "$ko" "../$1.ko" ;;
	esac
}
# NAME: its dependencies first (modinfo's depends, recursively), then itself
order() {
	take "$1" || return 1
	for d in $(modinfo -F depends "../$1.ko" | tr , ' '); do
		order "$d" || return 1
	done
	echo "$1"
}
take veth
for m; do
	# each module once, where it is first needed
	order "$m" > "../$m.all"
	awk '!seen[$0]++' "../$m.all" > "../$m.deps"
	rm "../$m.all"
done
cd .. && rm -rf deb
