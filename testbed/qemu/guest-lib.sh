# Sourced first by each guest's /init (guest.sh, nics-guest.sh; mkinitramfs.sh
# puts it in /lib/hs): as PID 1 it sets the machine up and runs /init again
# in a child shell, then powers off; in that child it gives what every check
# uses. Each check prints "CHECK name ok|FAIL|SKIP detail".
export PATH=/bin:/sbin:/usr/bin:/usr/sbin
if [ $$ = 1 ]; then
	# as init: set up, run the tests in a child shell (a shell error there
	# must not kill init), power off whatever happens
	/bin/busybox mkdir -p /sbin /usr/bin /usr/sbin
	/bin/busybox --install -s
	mount -t proc proc /proc
	mount -t sysfs sys /sys
	mount -t devtmpfs dev /dev
	mount -t tmpfs tmp /tmp
	mount -t tmpfs run /run
	mount -t debugfs debug /sys/kernel/debug 2>/dev/null
	mkdir -p /run/netns /var
	ln -s /run /var/run
	exec >/dev/console 2>&1
	# HS_QEMU_APPEND=hs.trace on the host: trace every command
	grep -q hs.trace /proc/cmdline && set -- -x
	sh "$@" /init tests
	echo "guest: the test script ended with status $?"
	poweroff -f
fi

# busybox ip has no netns: always the host's. A process to signal later is
# started with "$NS_EXEC ns cmd &", never through a function: $! must be its pid.
ip() { /usr/sbin/ip "$@"; }
NS_EXEC="/usr/sbin/ip netns exec"

pass=0 fail=0 skip=0
expect() {	# CHECK-NAME DETAIL TEST-ARGS...
	_check=$1 _detail=$2
	shift 2
	if [ "$@" ]; then
		pass=$((pass + 1)); echo "CHECK $_check ok $_detail"
	else
		fail=$((fail + 1)); echo "CHECK $_check FAIL $_detail"
	fi
}
val() {	# SUMMARY-LINE KEY: the number, -1 when missing
	_v=$(echo " $1 " | sed -n "s/.* $2=\([0-9]*\) .*/\1/p")
	echo "${_v:--1}"
}
num() {	# FILE KEY: the number after KEY in hopscope's summary (its stderr), -1 when missing
	_v=$(sed -n "s/.* $2 \([0-9]*\).*/\1/p" "$1" | tail -n 1)
	echo "${_v:--1}"
}
skipped() { skip=$((skip + 1)); echo "CHECK $1 SKIP $2"; }
