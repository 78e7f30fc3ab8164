# sourced by run.sh, nics.sh and routers.sh: their settings, build kmod/
# for one kernel's headers, and boot a guest and read its result. Needs $top
# (the repository).

work=${HS_QEMU_DIR:-$top/build/qemu}
cli=${HS_CLI:-$top/build/hopscope}
CC=${CC:-gcc}
CFLAGS="-O2 -Wall -Wextra -Wno-unused-parameter -Wno-missing-field-initializers -Werror -std=gnu11"

need_qemu() {	# LABEL: exit 77 unless QEMU and busybox-static are installed
	command -v qemu-system-x86_64 >/dev/null || { echo "$1: qemu-system-x86_64 missing (scripts/install-deps.sh)"; exit 77; }
	[ -x /bin/busybox ] || { echo "$1: busybox-static missing (scripts/install-deps.sh)"; exit 77; }
}

# KDIR DIR: a copy of the sources per kernel, so builds never mix. Built
# through the root Kbuild, as a kernel tree enters it (obj-$(CONFIG_HOPSCOPE)
# += kmod/); make kmod builds kmod/ directly, the other way in.
build_module() {
	rm -rf "$2/src"
	mkdir -p "$2/src/kmod"
	cp "$top"/Kbuild "$top"/Kconfig "$2/src/"
	cp "$top"/kmod/Kbuild "$top"/kmod/*.c "$top"/kmod/*.h "$2/src/kmod/"
	cp -r "$top/include" "$2/src/include"
	make -s -C "$1" M="$2/src" CONFIG_HOPSCOPE=m modules >"$2/build.log" 2>&1 || {
		cat "$2/build.log"
		return 1
	}
	if grep -qi 'warning' "$2/build.log"; then
		cat "$2/build.log"
		return 1
	fi
}

# LABEL DIR KERNEL [QEMU ARGS...]: boot KERNEL with DIR/initrd.gz, the serial
# console into DIR/console.txt; echo its CHECK (and NICROW) lines and one
# line with its RESULT and the times (since $t0, the caller's start);
# return 1 unless every check passed and the console shows no kernel error.
# Needs $limit and $rel.
boot_guest() {
	label=$1 dir=$2 kernel=$3
	shift 3
	t1=$(date +%s)
	# thread=single: with one host thread per vCPU the guest oopsed on a stale
	# int3 after the kernel patched a tracepoint under traffic (README.md)
	timeout "$limit" qemu-system-x86_64 -accel tcg,thread=single -cpu max -m 1024 -smp 2 -nographic \
		-no-reboot -nodefaults -serial stdio -kernel "$kernel" "$@" \
		-initrd "$dir/initrd.gz" -append "console=ttyS0 panic=-1 quiet rdinit=/init ${HS_QEMU_APPEND:-}" \
		</dev/null >"$dir/console.log" 2>&1 || true
	t2=$(date +%s)
	tr -d '\r' <"$dir/console.log" >"$dir/console.txt"
	sed -n 's/^CHECK /  /p; s/^NICROW /  row /p' "$dir/console.txt"
	result=$(grep '^RESULT ' "$dir/console.txt" || true)
	echo "$label: $rel: ${result:-no RESULT line (guest hung or crashed, see $dir/console.txt)}" \
		"(prepare $((t1 - t0)) s, guest $((t2 - t1)) s)"
	case $result in
	*" fail=0 "*) ;;
	*)
		[ -n "$result" ] || tail -n 40 "$dir/console.txt"
		return 1
		;;
	esac
	if grep -qE 'Kernel panic|Oops|BUG:' "$dir/console.txt"; then
		echo "$label: $rel: the console shows a kernel error"
		return 1
	fi
}
