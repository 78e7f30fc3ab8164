# sourced by run.sh and nics.sh: build kmod/ for one kernel's headers.
# Needs $top (the repository).

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
