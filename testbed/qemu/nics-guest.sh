#!/bin/busybox sh
# /init of the NIC guest (nics.sh): hopscope record on real drivers. Each
# driver has four emulated NICs, joined pairwise as wires by QEMU hubs:
#
#   snd: s-eth 10.D.1.2 --- r-in 10.D.1.1 | rtr | r-out 10.D.2.1 --- x-eth 10.D.2.2 :rcv
#
# (D: the driver's number; one sender, router and receiver namespace per
# driver, each NIC found by the MAC address nics.sh gave it). For each XDP
# mode, UDP through the router while `hopscope record` (eBPF backend) traces
# it, the receiver's count the truth for "forwarded"; then one TCP connection
# per driver in a mode that works there, and with packet taps on the
# router's interfaces. On 6.1 (/lib/hs/backend: kmod) the kernel module
# instead: UDP and TCP per driver, each also with taps, and GRO. Prints
# "CHECK name ok|FAIL|SKIP detail", a "NICROW" line per run for the table and
# one "RESULT kernel=RELEASE pass=N fail=N skip=N" line, then powers off.

. /lib/hs/guest-lib.sh
COUNT=300	# datagrams a run: TCG forwards a few thousand a second
GAP=300		# microseconds between them: no emulated ring overflows
TCP_BYTES=200000	# about 140 segments
GRO_BYTES=2000000	# about 1400 segments: what GRO merges untraced

# the NIC whose MAC is $1, renamed $3, in namespace $2
nic() {
	for _dev in /sys/class/net/*; do
		[ "$(cat "$_dev/address")" = "$1" ] || continue
		ip link set "${_dev##*/}" name "$3" && ip link set "$3" netns "$2" && return 0
	done
	echo "no NIC with MAC $1"
	return 1
}

# D: the three namespaces of driver D and its four NICs
topology() {
	d=$1
	# no IPv6: nothing but the test's traffic leaves r-out (the TCP truth)
	for ns in snd$d rtr$d rcv$d; do
		ip netns add $ns
		$NS_EXEC $ns sh -c 'echo 1 > /proc/sys/net/ipv6/conf/all/disable_ipv6 &&
			echo 1 > /proc/sys/net/ipv6/conf/default/disable_ipv6'
	done
	nic 52:54:00:0$d:00:01 snd$d s-eth && nic 52:54:00:0$d:00:02 rtr$d r-in &&
		nic 52:54:00:0$d:00:03 rtr$d r-out && nic 52:54:00:0$d:00:04 rcv$d x-eth || return 1
	for spec in "snd$d s-eth r-in 1 02" "rcv$d x-eth r-out 2 03"; do
		set -- $spec
		ip -n "$1" link set lo up
		ip -n "$1" addr add 10.$d.$4.2/24 dev "$2"
		ip -n "$1" link set "$2" up
		ip -n "$1" route add default via 10.$d.$4.1
		ip -n "$1" neigh replace 10.$d.$4.1 lladdr 52:54:00:0$d:00:$5 dev "$2" nud permanent
		ip -n rtr$d addr add 10.$d.$4.1/24 dev "$3"
		ip -n rtr$d link set "$3" up
	done
	ip -n rtr$d neigh replace 10.$d.1.2 lladdr 52:54:00:0$d:00:01 dev r-in nud permanent
	ip -n rtr$d neigh replace 10.$d.2.2 lladdr 52:54:00:0$d:00:04 dev r-out nud permanent
	ip -n rtr$d link set lo up
	ip -n rtr$d route add unreachable 10.$d.9.0/24
	$NS_EXEC rtr$d sh -c 'echo 1 > /proc/sys/net/ipv4/conf/all/forwarding'
	# QEMU 7.2's e1000e and vmxnet3 turn TSO into IP fragments: the
	# sender's segments are made in software, one packet each on the wire
	$NS_EXEC snd$d ethtool -K s-eth tso off gso off 2>/dev/null
	# a link comes up a little after `up` on an emulated NIC (6.1's e1000e
	# took over 2 s once): wait for the carrier of all four, 10 s at most
	for i in $(seq 50); do
		up=0
		for pair in "snd$d s-eth" "rtr$d r-in" "rtr$d r-out" "rcv$d x-eth"; do
			set -- $pair
			[ "$($NS_EXEC $1 cat /sys/class/net/$2/carrier 2>/dev/null)" = 1 ] && up=$((up + 1))
		done
		[ $up = 4 ] && break
		sleep 0.2
	done
	sleep 0.5
}

# start `hopscope record` in rtr$d in mode $2, wait for its ready line:
# sets $rpid, $ready; stderr in /tmp/$name.err
rec_start() {
	d=$1 mode=$2 name=$3
	rm -f /tmp/$name.ready
	mkfifo /tmp/$name.ready
	if [ $BACKEND = kmod ]; then
		set -- --backend kmod
	else
		set -- --backend ebpf --xdp-mode $mode
	fi
	hopscope record "$@" -n rtr$d -i r-in -O r-out -q \
		-o /tmp/$name.hsr --ready-fd 3 3>/tmp/$name.ready 2>/tmp/$name.err &
	rpid=$!
	read -r ready </tmp/$name.ready || ready=
}
# SIGINT (the run may have ended by itself), its exit status in $rrc
rec_stop() {
	kill -INT $rpid 2>/dev/null
	wait $rpid
	rrc=$?
}

# DRIVER D MODE: one run of UDP through rtr$d; prints a NICROW line, sets
# $complete $received $metafail $rrc $ready, the stderr in /tmp/$name.err
run() {
	drv=$1 d=$2 mode=$3 name=$1-$3
	$NS_EXEC rcv$d hs_udp sink 9000 >/tmp/$name.sink &
	spid=$!
	rec_start $d $mode $name
	sent=$($NS_EXEC snd$d hs_udp send 10.$d.2.2 9000 $COUNT 64 0 $GAP | sed -n 's/^sent //p')
	sleep 1
	rec_stop
	kill -TERM $spid
	wait $spid
	received=$(sed -n 's/^received //p' /tmp/$name.sink)
	complete=$(num /tmp/$name.err complete) metafail=$(num /tmp/$name.err xdp_meta_fail)
	got=native
	grep -q 'using generic\|re-attached in generic' /tmp/$name.err && got=native-then-generic
	grep -q 'using generic' /tmp/$name.err && got=generic
	[ $mode = generic ] && got=generic
	[ $BACKEND = kmod ] && got=none
	echo "NICROW $drv $mode ready=${ready:-none} rc=$rrc sent=$sent received=$received" \
		"complete=$complete xdp_meta_fail=$metafail pre_nometa=$(num /tmp/$name.err pre_nometa)" \
		"xdp=$got"
	sed 's/^/  stderr: /' /tmp/$name.err | grep -v '^  stderr: *$' | tail -n 12
}

# every packet the receiver got has its one complete record
run_ok() {
	run "$@"
	expect "${1}_$3" "rc $rrc, ready ${ready:-none}, sent $sent, received $received, complete $complete" \
		"$rrc" = 0 -a "$ready" = ready -a "$received" -gt 0 -a "$complete" = "$received"
}

# a packet tap on both router interfaces (as tcpdump): the tap holds a clone
# of each packet, so forwarding copies its head and the metadata with it is
# gone; the later stages must still find it (by_skb) and record every one
with_taps() {	# D COMMAND...: COMMAND with a tap on both interfaces of rtrD
	$NS_EXEC rtr$1 hs_udp tap r-in >/tmp/tapin.out &
	t1pid=$!
	$NS_EXEC rtr$1 hs_udp tap r-out >/tmp/tapout.out &
	t2pid=$!
	shift
	sleep 1
	"$@"
	kill -TERM $t1pid $t2pid
	wait $t1pid $t2pid
	taps="taps ($(cat /tmp/tapin.out), $(cat /tmp/tapout.out))"
}
run_tap() {
	with_taps $2 run "$@"
	expect "${1}_tap_$3" "rc $rrc, $taps, received $received, complete $complete, post_nometa $(num /tmp/$name.err post_nometa)" \
		"$rrc" = 0 -a "$received" -gt 0 -a "$complete" = "$received"
}

# a driver that refuses native XDP: asked for, an error (exit 1) that names it
run_refused() {
	run "$@"
	expect "${1}_$3" "rc $rrc, ready ${ready:-none}: $(grep -m1 'cannot attach XDP' /tmp/$name.err)" \
		"$rrc" = 1 -a -z "$ready" -a -n "$(grep 'cannot attach XDP (native) to r-in' /tmp/$name.err)"
}

# auto where native is refused: generic, said so, every packet recorded
run_fallback() {
	run "$@"
	said=$(grep -c 'refuses native XDP' /tmp/$name.err)
	expect "${1}_$3" "rc $rrc, fallback said $said time(s), received $received, complete $complete" \
		"$rrc" = 0 -a "$said" = 1 -a "$received" -gt 0 -a "$complete" = "$received"
}

# native XDP without metadata room, asked for: the run stops with exit 1 and
# says why, once the first packets show it, not a file with no records
run_nometa_native() {
	run "$@"
	msg=$(grep -m1 'no room for XDP metadata' /tmp/$name.err)
	expect "${1}_$3" "rc $rrc, xdp_meta_fail $metafail, complete $complete: ${msg:-no message}" \
		"$rrc" = 1 -a -n "$msg" -a "$complete" = 0
}

# the same under auto: re-attached generic, said so; the packets before the
# switch (xdp_meta_fail) and during it (vmxnet3 restarts the device) are the
# only ones not recorded, and counted: they reach PRE_ROUTING untraced
run_nometa_auto() {
	run "$@"
	msg=$(grep -m1 'no room for XDP metadata' /tmp/$name.err)
	nometa=$(num /tmp/$name.err pre_nometa)
	# the file's END chunk (its last JSON) holds the mode the input ended in
	modes=$(grep -ao '"xdp_modes": *{[^}]*}' /tmp/$name.hsr | tail -n 1)
	expect "${1}_$3" "rc $rrc, received $received, complete $complete, meta refused $metafail, untraced at PRE_ROUTING $nometa, at the end $modes: ${msg:-no message}" \
		"$rrc" = 0 -a -n "$msg" -a "$complete" -gt 0 -a "$complete" -le "$received" -a \
		$((received - complete)) -le "$nometa" -a -n "$(echo "$modes" | grep '"r-in": *"generic"')"
}

txp() { $NS_EXEC rtr$1 cat /sys/class/net/r-out/statistics/tx_packets; }

# TCP, one connection of TCP_BYTES: every packet the router sent on r-out
# (its driver's count) has its one complete record. Traced, no segments
# merge on r-in (generic XDP skips GRO; native's metadata differs per packet)
rxp() { $NS_EXEC rtr$1 cat /sys/class/net/r-in/statistics/rx_packets; }
# the run and its NICROW line; sets $sent $received $complete, and the
# router's counts: $fwd (r-out's driver), $rxin (r-in's), $skbs (forwarded)
tcp_row() {
	drv=$1 d=$2 mode=$3 name=$1-tcp-$3
	$NS_EXEC rcv$d timeout 60 hs_udp tcpsink 9100 >/tmp/$name.sink &
	spid=$!
	rec_start $d $mode $name
	tx0=$(txp $d) rx0=$(rxp $d) f0=$(fwd_data $d)
	sent=$($NS_EXEC snd$d timeout 60 hs_udp tcpsend 10.$d.2.2 9100 $TCP_BYTES | sed -n 's/^sent //p')
	wait $spid
	sleep 1
	rec_stop
	fwd=$(($(txp $d) - tx0)) rxin=$(($(rxp $d) - rx0)) skbs=$(($(fwd_data $d) - f0))
	received=$(sed -n 's/^received //p' /tmp/$name.sink)
	complete=$(num /tmp/$name.err complete)
	echo "NICROW $drv tcp-$mode ready=${ready:-none} rc=$rrc bytes=$sent/$received" \
		"forwarded=$fwd complete=$complete xdp_meta_fail=$(num /tmp/$name.err xdp_meta_fail)"
	sed 's/^/  stderr: /' /tmp/$name.err | grep -v '^  stderr: *$' | tail -n 12
}
# tcp_row DRIVER D MODE, with taps when the 4th argument is "tap"; sets $check
tcp_run() {
	if [ "${4:-}" = tap ]; then
		with_taps $2 tcp_row $1 $2 $3
		check=${1}_tcp_tap_$3
	else
		tcp_row $1 $2 $3
		check=${1}_tcp_$3
	fi
}
run_tcp() {	# DRIVER D MODE [tap]
	tcp_run "$@"
	expect "$check" "rc $rrc, bytes sent $sent received $received, packets forwarded $fwd, complete $complete" \
		"$rrc" = 0 -a "$ready" = ready -a "$sent" = $TCP_BYTES -a "$received" = $TCP_BYTES -a \
		"$fwd" -gt 0 -a "$complete" = "$fwd"
}

# TCP through the module, GRO on: the router's input merges segments, the
# module records each merged skb with its segs, and follows the segments the
# output cuts it into: every packet the router sent on r-out is in a complete
# record (wire_packets), the first of each at t4 (out_pkts), the rest
# counted (out_segs), none unaccounted (out_nometa)
run_tcp_merged() {	# DRIVER D [tap]
	tcp_run $1 $2 kmod ${3:-}
	wire=$(num /tmp/$name.err wire_packets) outp=$(num /tmp/$name.err out_pkts)
	segs=$(num /tmp/$name.err out_segs) nometa=$(num /tmp/$name.err out_nometa)
	# no merged record: wire_packets is not printed, complete is all
	[ "$wire" = -1 ] && wire=$complete
	# every skb forwarded has one complete record, every hand-over to
	# r-out's driver is counted; the packets the records hold lie between
	# those hand-overs and what r-in received (e1000e's TSO sends a merged
	# skb whole: one hand-over, counted once by its driver)
	expect "$check" "rc $rrc, bytes $sent/$received, r-in got $rxin, forwarded $skbs skbs, r-out sent $fwd, complete $complete holding $wire packets, out_pkts $outp out_segs $segs out_nometa $nometa" \
		"$rrc" = 0 -a "$ready" = ready -a "$sent" = $TCP_BYTES -a "$received" = $TCP_BYTES -a \
		"$fwd" -gt 0 -a "$complete" = "$skbs" -a "$complete" = "$outp" -a \
		"$((outp + segs))" = "$fwd" -a "$nometa" = 0 -a "$wire" -ge "$fwd" -a "$wire" -le "$rxin"
}

# GRO, measured: one connection of GRO_BYTES untraced, then traced (native):
# the data skbs the router forwarded (Ip ForwDatagrams, less the ACKs it
# sent back out of r-in: r-out's own count sees the merged skbs segmented
# again) and the time each took (TCG: a ratio, not a rate)
fwd_data() {
	$NS_EXEC rtr$1 sh -c 'echo $(($(awk "/^Ip: [0-9]/ { print \$7 }" /proc/net/snmp) -
		$(cat /sys/class/net/r-in/statistics/tx_packets)))'
}
now_cs() { awk '{ printf "%d", $1 * 100 }' /proc/uptime; }
gro_pass() {	# D: sets $skbs $wire (packets sent on r-out) $cs $got
	$NS_EXEC rcv$1 timeout 120 hs_udp tcpsink 9200 >/tmp/gro.sink &
	gpid=$!
	f0=$(fwd_data $1) c0=$(now_cs) tx0=$(txp $1)
	$NS_EXEC snd$1 timeout 120 hs_udp tcpsend 10.$1.2.2 9200 $GRO_BYTES >/dev/null
	wait $gpid
	cs=$(($(now_cs) - c0)) skbs=$(($(fwd_data $1) - f0)) wire=$(($(txp $1) - tx0))
	got=$(sed -n 's/^received //p' /tmp/gro.sink)
}
# eBPF (native XDP): GRO off while traced, a record per segment. The module:
# GRO on either way, a record per merged skb holding all its segments
run_gro() {
	drv=$1 d=$2 name=$1-gro
	gro_pass $d
	skbs0=$skbs cs0=$cs got0=$got
	rec_start $d native $name
	gro_pass $d
	rec_stop
	complete=$(num /tmp/$name.err complete) held=$(num /tmp/$name.err wire_packets)
	[ "$held" = -1 ] && held=$complete
	echo "NICROW $drv gro bytes=$GRO_BYTES untraced: skbs=$skbs0 cs=$cs0; traced: skbs=$skbs" \
		"cs=$cs complete=$complete wire=$wire held=$held"
	# traced, GRO merges (module) or not (eBPF)
	merged="-ge $skbs0"
	[ $BACKEND = kmod ] && merged="-lt $wire"
	expect "${drv}_gro" "untraced: $skbs0 skbs forwarded in ${cs0}0 ms; traced: $skbs skbs ($wire packets out) in ${cs}0 ms, complete $complete holding $held" \
		"$got0" = $GRO_BYTES -a "$got" = $GRO_BYTES -a "$rrc" = 0 -a "$skbs" $merged -a \
		"$complete" = "$skbs" -a "$held" = "$wire"
}

# a healthy native run whose router gets only local traffic and packets it
# drops: no metadata failure, so no refusal, exit 0
run_healthy_idle() {
	drv=$1 d=$2 name=$1-idle
	rec_start $d native $name
	$NS_EXEC snd$d hs_udp send 10.$d.1.1 9000 100 64 0 $GAP >/dev/null
	$NS_EXEC snd$d hs_udp send 10.$d.9.1 9000 100 64 0 $GAP >/dev/null
	sleep 1
	rec_stop
	metafail=$(num /tmp/$name.err xdp_meta_fail)
	expect "${drv}_native_local_and_drops" "rc $rrc, ready ${ready:-none}, xdp_meta_fail $metafail, local $(num /tmp/$name.err local), dropped $(num /tmp/$name.err dropped)" \
		"$rrc" = 0 -a "$ready" = ready -a "$metafail" = 0 -a \
		-z "$(grep 'no room for XDP metadata' /tmp/$name.err)"
}

BACKEND=$(cat /lib/hs/backend)
echo "GUEST kernel $(uname -r), backend $BACKEND"
for m in $(cat /lib/hs/modules); do insmod /lib/hs/$m.ko || echo "insmod $m failed"; done
d=0
for drv in $(cat /lib/hs/drivers); do
	d=$((d + 1))
	echo "== $drv"
	if ! topology $d; then
		expect "${drv}_topology" "the NICs of $drv are missing" 1 = 0
		continue
	fi
	echo "  $(ls /sys/class/net/ 2>/dev/null | tr '\n' ' ')"
	echo "  driver $($NS_EXEC rtr$d readlink /sys/class/net/r-in/device/driver | sed 's,.*/,,')"
	if [ $BACKEND = kmod ]; then
		# the module's probes are not XDP: UDP, and UDP with taps, per
		# driver; TCP with GRO on (a record per merged skb, its segs)
		run_ok $drv $d kmod
		run_tap $drv $d kmod
		run_tcp_merged $drv $d
		run_tcp_merged $drv $d tap
		[ $drv = virtio_net ] && run_gro $drv $d
		continue
	fi
	case $drv in
	virtio_net)
		run_ok $drv $d native
		run_ok $drv $d generic
		run_ok $drv $d auto
		run_healthy_idle $drv $d
		run_tap $drv $d native
		run_tap $drv $d generic
		run_tcp $drv $d native
		run_tcp $drv $d native tap
		run_tcp $drv $d generic
		run_gro $drv $d
		;;
	e1000e)
		run_refused $drv $d native
		run_ok $drv $d generic
		run_fallback $drv $d auto
		run_tap $drv $d generic
		run_tcp $drv $d auto
		;;
	vmxnet3)
		run_nometa_native $drv $d native
		run_ok $drv $d generic
		run_nometa_auto $drv $d auto
		run_tap $drv $d generic
		run_tcp $drv $d generic
		run_tcp $drv $d generic tap
		;;
	esac
done
bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace|general protection|RIP:')
expect dmesg_clean "$(echo "$bad" | grep -c .) bad lines" -z "$bad"
[ -n "$bad" ] && dmesg | tail -n 60
echo "RESULT kernel=$(uname -r) pass=$pass fail=$fail skip=$skip"
