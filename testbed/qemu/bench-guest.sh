#!/bin/busybox sh
# /init of evaluation/bench/kmod_overhead.py's guest (run.sh with HS_QEMU_GUEST): what the
# kernel module costs the router per packet, against its empty probes
# (`hopscope record --floor`) and no module at all. The router of
# guest-router.sh forwards a UDP flood inline on the sender's CPU0 (no RPS),
# as evaluation/bench/overhead.py's; the recorder runs on CPU1. The receiver drops every
# packet at its IP input (sent to a MAC not its own), so --no-drops: its
# kfree_skb is the testbed's, not the router's. Rounds of untraced, floor
# and traced, their order rotated; per run one line
#   BENCH round config rc records | snapshot before | snapshot after | HSRCOST...
# a snapshot being /proc/uptime, r-rx's tx_packets, /proc/stat's cpu0 and
# cpu1 lines; then RESULT as guest.sh. Kernel command line: hs.rounds=N
# hs.seconds=S (window per run, after 1 s of warm-up) hs.size=BYTES.
. /lib/hs/guest-lib.sh
. /lib/hs/guest-router.sh

arg() { sed -n "s/.*[ ]hs\.$1=\([0-9]*\).*/\1/p" /proc/cmdline; }
rounds=$(arg rounds) secs=$(arg seconds) size=$(arg size)
rounds=${rounds:-5} secs=${secs:-3} size=${size:-64}
snapshot() {
	echo "$(cat /proc/uptime) $(forwarded) $(grep '^cpu[01] ' /proc/stat)" | tr '\n' ' '
}

run() {	# ROUND CONFIG
	rc=0 n=0 cost=
	if [ "$2" != untraced ]; then
		flag=
		[ "$2" = floor ] && flag=--floor
		rm -f /tmp/rec.ready /tmp/rec.hsr
		mkfifo /tmp/rec.ready
		taskset 2 hopscope record --backend kmod $flag --no-drops -n router -i r-s1 -O r-rx \
			-q -o /tmp/rec.hsr --ready-fd 3 3>/tmp/rec.ready 2>/tmp/rec.err &
		rpid=$!
		read -r ready </tmp/rec.ready || { echo "recorder did not start:"; cat /tmp/rec.err; }
	fi
	taskset 1 $NS_EXEC sender1 hs_udp send 198.18.3.9 9000 0 "$size" >/dev/null &
	fpid=$!
	sleep 1
	a=$(snapshot)
	sleep "$secs"
	b=$(snapshot)
	kill -TERM $fpid
	wait $fpid
	if [ "$2" != untraced ]; then
		kill -INT $rpid
		wait $rpid
		rc=$?
		n=$(sed -n 's/.*: \([0-9]*\) records in .*/\1/p' /tmp/rec.err)
		cost=$(hs_hsrcost /tmp/rec.hsr)
		[ $rc -eq 0 ] || sed 's/^/  stderr: /' /tmp/rec.err
		rm -f /tmp/rec.hsr
	fi
	echo "BENCH $1 $2 $rc ${n:-0} | $a | $b | $cost"
	# the floor records nothing, a recording something, every recorder exits 0
	case $2:$rc:${n:-0} in
	untraced:0:0 | floor:0:0 | traced:0:[1-9]*) ;;
	*) bad=$((bad + 1)) ;;
	esac
}

echo "GUEST kernel $(uname -r)"
insmod /lib/hs/veth.ko
topology || echo "topology failed"
# a neighbour the receiver is not: its input drops the packet at once
ip -n router neigh replace 198.18.3.9 lladdr 02:00:00:00:03:99 dev r-rx nud permanent
insmod /lib/hs/hopscope.ko
bad=0
configs="untraced floor traced"
for r in $(seq 1 "$rounds"); do
	for c in $configs; do
		run "$r" "$c"
	done
	# rotate: each config runs first, second and third as often
	configs="${configs#* } ${configs%% *}"
done
expect bench_runs "$rounds rounds of untraced, floor and traced, $secs s, $size B; runs that failed: $bad" $bad -eq 0
bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace|general protection|stall|hopscope: .*error')
expect dmesg_clean "$(echo "$bad" | grep -c .) bad lines" -z "$bad"
echo "RESULT kernel=$(uname -r) pass=$pass fail=$fail skip=$skip"
