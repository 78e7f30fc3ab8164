#!/bin/sh
# usage: mkinitramfs.sh OUT.cpio.gz INIT KO... -- BIN...
# A minimal initramfs: busybox, the host's ip (busybox ip has no netns) and
# the shared libraries of every dynamic binary, the modules and guest-lib.sh
# in /lib/hs, INIT as /init, the binaries in /bin.
set -eu
out=$1 init=$2
shift 2
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT INT TERM
mkdir -p "$root/bin" "$root/usr/sbin" "$root/lib/hs" "$root/proc" "$root/sys" "$root/dev" \
	"$root/tmp" "$root/run"

copy_libs() {	# the loader and libraries of a dynamic binary
	ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' |
	while read -r lib; do
		mkdir -p "$root$(dirname "$lib")"
		cp -L "$lib" "$root$lib"
	done
}

cp /bin/busybox "$root/bin/busybox"	# busybox-static
ipbin=$(command -v ip)
cp "$ipbin" "$root/usr/sbin/ip"
copy_libs "$ipbin"
# every guest's /init sources it first
cp "$(dirname "$0")/guest-lib.sh" "$root/lib/hs/"
while [ $# -gt 0 ] && [ "$1" != -- ]; do
	cp "$1" "$root/lib/hs/"
	shift
done
[ $# -gt 0 ] && shift
for bin in "$@"; do
	cp "$bin" "$root/bin/"
	copy_libs "$bin"
done
cp "$init" "$root/init"
chmod 755 "$root/init"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) > "$out"
