#!/bin/sh
# usage: fetch-kernel.sh RELEASE DIR
# Puts the kernel of Debian's linux-image-RELEASE (the same version as the
# installed linux-headers-RELEASE) and its veth module into DIR: vmlinuz, veth.ko.
# Nothing is installed: apt-get download, then the two files out of the .deb.
set -eu
rel=$1 dir=$2
[ -s "$dir/vmlinuz" ] && [ -s "$dir/veth.ko" ] && exit 0
ver=$(dpkg-query -W -f='${Version}' "linux-headers-$rel" 2>/dev/null) || {
	echo "fetch-kernel: linux-headers-$rel is not installed (scripts/install-deps.sh)" >&2
	exit 1
}
mkdir -p "$dir/deb"
cd "$dir/deb"
rm -f ./*.deb
# the signed image, or the unsigned one where only that exists; apt prints a
# harmless warning when root downloads outside its sandbox
apt-get download -q "linux-image-$rel=$ver" 2>/dev/null ||
	apt-get download -q "linux-image-$rel-unsigned=$ver" || {
	echo "fetch-kernel: cannot download linux-image-$rel $ver (run apt-get update?)" >&2
	exit 1
}
deb=$(ls ./*.deb)
dpkg-deb --fsys-tarfile "$deb" | tar -x --wildcards "./boot/vmlinuz-$rel" "./lib/modules/$rel/kernel/drivers/net/veth.ko*"
mv "boot/vmlinuz-$rel" ../vmlinuz
veth=$(ls lib/modules/"$rel"/kernel/drivers/net/veth.ko*)
case $veth in
*.xz) xz -dc "$veth" > ../veth.ko ;;
*.zst) zstd -dqc "$veth" > ../veth.ko ;;
*) cp "$veth" ../veth.ko ;;
esac
cd .. && rm -rf deb
