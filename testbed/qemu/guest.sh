#!/bin/busybox sh
# /init of the QEMU guest (busybox sh): builds the router namespaces, loads
# hopscope.ko, checks its records against known traffic, unloads it under
# traffic, and ends with one line the host parses:
#   RESULT kernel=RELEASE pass=N fail=N skip=N
# Each check prints "CHECK name ok|FAIL|SKIP detail".
# The topology is guest-router.sh's; RPS moves the router's receive
# processing on r-s1 to CPU1, so t0 (netif_rx, sender's CPU) and t1
# (netif_receive_skb, CPU1) are on different CPUs.

. /lib/hs/guest-lib.sh
. /lib/hs/guest-router.sh

wait_file() {	# up to 30 s
	i=0
	while [ ! -e "$1" ] && [ $i -lt 300 ]; do usleep 100000; i=$((i + 1)); done
	[ -e "$1" ]
}
meminfo() { sed -n "s/^$1: *\([0-9]*\) kB/\1/p" /proc/meminfo; }

# reader NAME ARGS...: start hs_reader in the router, wait until it records
reader() {
	name=$1
	shift
	rm -f /tmp/$name.ready
	$NS_EXEC router hs_reader --in r-s1 --out r-rx --ready /tmp/$name.ready "$@" \
		>/tmp/$name.out 2>/tmp/$name.err &
	rpid=$!
	wait_file /tmp/$name.ready || { echo "reader $name did not start:"; cat /tmp/$name.err; }
}
# reader_stop: SIGINT, wait, leave its summary lines in $hsread, $hscount, $hscost
reader_stop() {
	kill -INT $rpid 2>/dev/null
	wait $rpid
	rrc=$?
	hsread=$(grep '^HSREAD' /tmp/$name.out)
	hscount=$(grep '^HSCOUNT' /tmp/$name.out)
	hscost=$(grep '^HSCOST' /tmp/$name.out)
	echo "  $name (rc $rrc): $hsread"
	echo "  $hscount"
	echo "  $hscost"
	[ -s /tmp/$name.err ] && sed 's/^/  stderr: /' /tmp/$name.err
}
send() { in_ns sender1 hs_udp send "$@" | sed -n 's/^sent //p'; }

# the test's own flow goes to port 9001 and its own sink: the receiver's count
# is the ground truth for "forwarded"
test_forwarding() {
	$NS_EXEC receiver hs_udp sink 9001 >/tmp/sink9001.out &
	spid=$!
	reader basic --stages t0,t_fwd,t_tceg --port 9001
	rc=0
	in_ns router timeout 10 hs_reader --in r-s1 --out r-rx >/dev/null 2>&1 || rc=$?
	expect exclusive_open "second open while recording: rc $rc (4 = busy)" $rc -eq 4
	s4=$(send 198.18.3.2 9001 3000 64 4)
	s6=$(send 2001:2:0:3::2 9001 1000 64 5)
	sleep 1
	reader_stop
	kill -TERM $spid
	wait $spid
	received=$(sed -n 's/^received //p' /tmp/sink9001.out)
	complete=$(val "$hsread" complete)
	expect sent "sent v4 $s4 v6 $s6" "$s4" = 3000 -a "$s6" = 1000
	expect one_record_per_packet "complete $complete, sent 4000, received $received" \
		"$complete" = 4000 -a "$received" = 4000
	expect ipv6 "v6 records $(val "$hsread" v6)" "$(val "$hsread" v6)" = 1000
	expect delays_nonnegative "records with a stage missing or out of order: $(val "$hsread" bad_order)" \
		"$(val "$hsread" bad_order)" = 0
	expect unique_seq "duplicate seq $(val "$hsread" dup_seq)" "$(val "$hsread" dup_seq)" = 0
	expect nothing_lost "dropped $(val "$hsread" dropped) evicted $(val "$hsread" evicted) rb_fail $(val "$hscount" rb_fail)" \
		"$(val "$hsread" dropped)$(val "$hsread" evicted)$(val "$hscount" rb_fail)" = 000
	expect counters_agree "counter complete $(val "$hscount" complete), out_pkts $(val "$hscount" out_pkts)" \
		"$(val "$hscount" complete)" = 4000 -a "$(val "$hscount" out_pkts)" = 4000
	# every stage samples its probe's cost: t0 at random, the others on the
	# packets whose seq is sampled, each stage on those that reached it
	n0=$(val "$hscost" t0_n) n1=$(val "$hscost" t1_n) n2=$(val "$hscost" t2_n)
	nf=$(val "$hscost" t_fwd_n) n3=$(val "$hscost" t3_n) ne=$(val "$hscost" t_tceg_n)
	n4=$(val "$hscost" t4_n)
	expect probe_cost_every_stage "$hscost; complete records sampled $(val "$hsread" sampled)" \
		"$n4" = "$(val "$hsread" sampled)" -a "$n4" -gt 0 -a "$n0" -gt 0 -a "$ne" -ge "$n4" -a \
		"$n3" -ge "$ne" -a "$nf" -ge "$n3" -a "$n2" -ge "$nf" -a "$n1" -ge "$n2"
}

# a packet tap on both router interfaces (as tcpdump): the tap shares each
# packet's data, so forwarding copies it (skb_cow); the module must follow
test_tap() {
	$NS_EXEC router hs_udp tap r-s1 >/tmp/tap1.out &
	t1pid=$!
	$NS_EXEC router hs_udp tap r-rx >/tmp/tap2.out &
	t2pid=$!
	sleep 1
	reader tap --port 9000
	s=$(send 198.18.3.2 9000 1000)
	sleep 1
	reader_stop
	kill -TERM $t1pid $t2pid
	wait $t1pid $t2pid
	expect packet_taps "sent $s with taps ($(cat /tmp/tap1.out), $(cat /tmp/tap2.out)): complete $(val "$hsread" complete), evicted $(val "$hsread" evicted)" \
		"$(val "$hsread" complete)" = 1000 -a "$(val "$hsread" bad_order)" = 0
}

# the output's MTU below the datagrams (DF clear): each leaves as two IP
# fragments, new skbs the module ties to their packet at t3 by IP id: one
# complete record each, out_segs counting the second fragments
test_fragments() {
	in_ns router ip link set r-rx mtu 1000
	$NS_EXEC receiver hs_udp sink 9003 >/tmp/sink9003.out &
	fpid=$!
	reader frag --port 9003
	s=$(send 198.18.3.2 9003 500 1400 0 100 0)
	sleep 1
	reader_stop
	kill -TERM $fpid
	wait $fpid
	in_ns router ip link set r-rx mtu 1500
	got=$(sed -n 's/^received //p' /tmp/sink9003.out)
	expect fragments "sent $s of 1400 B through MTU 1000, received $got: complete $(val "$hsread" complete), inflight $(val "$hsread" inflight), out_pkts $(val "$hscount" out_pkts), out_segs $(val "$hscount" out_segs), out_nometa $(val "$hscount" out_nometa)" \
		"$(val "$hsread" complete)" = 500 -a "$got" = 500 -a "$(val "$hscount" out_segs)" = 500 -a \
		"$(val "$hscount" out_nometa)" = 0
}

test_drops() {
	reader drops --port 9000
	s=$(send 198.18.9.1 9000 500)
	sleep 1
	reader_stop
	expect drops_recorded "sent $s to an unreachable route: dropped $(val "$hsread" dropped), at t2 $(val "$hsread" drop_t2)" \
		"$(val "$hsread" dropped)" = 500 -a "$(val "$hsread" drop_t2)" = 500 -a "$(val "$hsread" complete)" = 0
}

test_eviction() {
	reader evict --slots 8 --no-drops --port 9000
	s=$(send 198.18.9.1 9000 300)
	sleep 1
	reader_stop
	ev=$(val "$hsread" evicted) inf=$(val "$hsread" inflight)
	expect eviction_bounded "16 slots, 300 packets never completed: evicted $ev + in flight $inf" \
		$((ev + inf)) -eq 300 -a "$inf" -le 16 -a "$(val "$hscount" evicted)" = "$ev"
}

test_ring_full() {
	reader ringfull --ring 64 --hold 6 --port 9000
	s=$(send 198.18.3.2 9000 1000)
	sleep 2
	reader_stop
	expect ring_loss_counted "64-record queue not read: records $(val "$hsread" complete), rb_fail $(val "$hscount" rb_fail), complete $(val "$hscount" complete)" \
		"$(val "$hsread" complete)" = 64 -a "$(val "$hscount" rb_fail)" = 936 -a \
		"$(val "$hscount" rb_fail_complete)" = 936 -a "$(val "$hscount" complete)" = 1000
}

# read() into buffers that fail: the records a failed copy did not deliver
# are handed out by the next read, none is lost
test_read_faults() {
	rm -f /tmp/rf.ready /tmp/rf.go
	$NS_EXEC router hs_rawread efault r-s1 r-rx 9000 /tmp/rf.ready /tmp/rf.go >/tmp/rf.out 2>&1 &
	rpid=$!
	wait_file /tmp/rf.ready
	s=$(send 198.18.3.2 9000 1000)
	sleep 1
	touch /tmp/rf.go
	sleep 1
	kill -INT $rpid
	wait $rpid
	rc=$?
	line=$(grep '^RAWREAD' /tmp/rf.out)
	echo "  $line (rc $rc)"
	expect read_fault_keeps_records "sent $s; $line" $rc -eq 0 -a \
		"$(val "$line" efault)" = 1 -a "$(val "$line" partial)" = 1 -a "$(val "$line" complete)" = 1000
}

# a reader stalled inside copy_to_user (userfaultfd) must not stall the
# netns teardowns of the machine: the module's pernet exit takes the
# session's lock, which read() held across the copy
test_stalled_reader() {
	rm -f /tmp/st.ready /tmp/st.go /tmp/st.ready.stalled /tmp/st.ready.release
	$NS_EXEC router hs_rawread stall r-s1 r-rx 9000 /tmp/st.ready /tmp/st.go >/tmp/st.out 2>&1 &
	rpid=$!
	wait_file /tmp/st.ready
	send 198.18.3.2 9000 100 >/dev/null
	touch /tmp/st.go
	wait_file /tmp/st.ready.stalled
	stalled=$([ -e /tmp/st.ready.stalled ] && echo 1 || echo 0)
	# the first teardown enters the module's pernet exit; the second one's
	# veth (its peer here) goes only once the first has finished
	ip netns add tmpa
	ip netns add tmpb
	ip link add tmpb-out type veth peer name tmpb-in netns tmpb
	ip netns del tmpa
	sleep 1
	ip netns del tmpb
	i=0
	while ip link show tmpb-out >/dev/null 2>&1 && [ $i -lt 50 ]; do usleep 100000; i=$((i + 1)); done
	gone=$(ip link show tmpb-out >/dev/null 2>&1 && echo 0 || echo 1)
	touch /tmp/st.ready.release
	wait $rpid
	rc=$?
	i=0
	while ip link show tmpb-out >/dev/null 2>&1 && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
	echo "  $(cat /tmp/st.out) (rc $rc)"
	expect stalled_reader_blocks_no_teardown "reader stalled in its copy: $stalled; netns teardown done within 5 s: $gone" \
		"$stalled" = 1 -a "$gone" = 1 -a $rc -eq 0
}

test_privileges() {
	rc=0
	in_ns router timeout 10 hs_reader --in r-s1 --out r-rx --as-uid 65534 >/dev/null 2>&1 || rc=$?
	expect refuses_user "open as uid 65534: rc $rc (3 = refused)" $rc -eq 3
	rc=0
	in_ns router timeout 10 hs_reader --in r-s1 --out r-rx --drop-cap >/dev/null 2>&1 || rc=$?
	expect refuses_no_cap "open as root without CAP_NET_ADMIN: rc $rc" $rc -eq 3
}

test_netns_gone() {
	ip netns add tmpr
	ip -n tmpr link add tmp-a type veth peer name tmp-b
	rm -f /tmp/gone.ready
	hs_reader --netns tmpr --in tmp-a --out tmp-b --ready /tmp/gone.ready >/tmp/gone.out 2>&1 &
	rpid=$!
	wait_file /tmp/gone.ready
	ip netns del tmpr
	i=0
	while ! dmesg | grep -q 'namespace went away' && [ $i -lt 100 ]; do usleep 100000; i=$((i + 1)); done
	kill -INT $rpid
	wait $rpid
	rc=$?
	expect netns_deleted_while_recording "pernet exit seen: $(dmesg | grep -c 'namespace went away'), reader rc $rc" \
		"$(dmesg | grep -c 'namespace went away')" -ge 1 -a $rc -eq 0
}

test_unload_under_traffic() {
	$NS_EXEC sender1 hs_udp send 198.18.3.2 9000 0 >/tmp/flood.out &
	fpid=$!
	sleep 1
	reader loadA
	sleep 2
	reader_stop
	expect stop_under_traffic "records $(val "$hsread" records), bad $(val "$hsread" bad_order), dup $(val "$hsread" dup_seq)" \
		"$(val "$hsread" complete)" -gt 0 -a "$(val "$hsread" bad_order)" = 0 -a "$(val "$hsread" dup_seq)" = 0
	reader loadB
	sleep 1
	kill -KILL $rpid
	wait $rpid
	rmmod hopscope
	rc1=$?
	insmod /lib/hs/hopscope.ko
	reader loadC --stages t0,t_fwd,t_tceg
	sleep 1
	kill -KILL $rpid
	wait $rpid
	rmmod hopscope
	rc2=$?
	kill -TERM $fpid
	wait $fpid
	expect unload_under_traffic "rmmod rc $rc1 $rc2 while sending ($(cat /tmp/flood.out))" \
		$rc1 -eq 0 -a $rc2 -eq 0 -a ! -e /sys/module/hopscope
}

# the lead's CLI, when the harness put it in: same traffic through both backends
test_cli() {
	if [ ! -x /bin/hopscope ]; then
		skipped cli "build/hopscope not in this guest"
		return
	fi
	insmod /lib/hs/hopscope.ko
	c_kmod='' c_ebpf=''
	# where the kernel has the BPF netfilter link, both backends side by side;
	# elsewhere --backend auto must fall back to the module
	if grep -q ' bpf_nf_link_attach$' /proc/kallsyms; then
		backends="kmod ebpf"
	else
		backends=auto
	fi
	for be in $backends; do
		rm -f /tmp/$be.ready
		mkfifo /tmp/$be.ready
		hopscope record --backend $be -n router -i r-s1 -O r-rx -q -o /tmp/$be.hsr \
			--ready-fd 3 3>/tmp/$be.ready 2>/tmp/cli-$be.err &
		eval pid_$be=$!
	done
	# each writes `ready` once attached; end of file instead: it failed
	for be in $backends; do
		read -r ready </tmp/$be.ready || ready=
		expect cli_ready_$be "hopscope record --backend $be: ${ready:-no ready line}" \
			"$ready" = ready
	done
	s=$(send 198.18.3.2 9000 2000)
	sleep 1
	for be in $backends; do
		eval kill -INT \$pid_$be
		eval wait \$pid_$be
		c=$(sed -n 's/.*records .*complete \([0-9]*\).*/\1/p' /tmp/cli-$be.err | tail -n 1)
		eval c_$be=$c
		expect cli_$be "hopscope record --backend $be: complete $c of $s" "$c" = 2000
		[ "$c" = 2000 ] || tail -n 8 /tmp/cli-$be.err | sed 's/^/  stderr: /'
		echo "  $be: $(hs_hsrcost /tmp/$be.hsr)"
	done
	# the module's file (auto picks it without the link) carries its probes'
	# cost, sampled at every stage on the same packets: at t4 on exactly the
	# complete records whose seq is a multiple of 2^HS_COST_SAMPLE_SHIFT
	kf=/tmp/kmod.hsr
	[ "$backends" = auto ] && kf=/tmp/auto.hsr
	line=$(hs_hsrcost $kf)
	n1=$(val "$line" t1_n) n2=$(val "$line" t2_n) n3=$(val "$line" t3_n) n4=$(val "$line" t4_n)
	expect kmod_probe_cost "$line" "$(val "$line" end)" = 1 -a \
		"$(echo " $line " | sed -n 's/.* backend=\([a-z]*\) .*/\1/p')" = kmod -a \
		"$(val "$line" sampled)" -gt 0 -a "$n4" = "$(val "$line" sampled)" -a \
		"$n3" -ge "$n4" -a "$n2" -ge "$n3" -a "$n1" -ge "$n2" -a "$(val "$line" hist_ok)" = 1
	# both branches print the same check names: the host counts them
	if [ "$backends" = "kmod ebpf" ]; then
		expect backends_agree "kmod $c_kmod, ebpf $c_ebpf" "$c_kmod" = "$c_ebpf"
		skipped auto_picks_kmod "BPF netfilter link: auto picks eBPF"
	else
		picked=$(grep -c 'using the kernel module backend' /tmp/cli-auto.err)
		expect auto_picks_kmod "no BPF netfilter link: auto said so $picked time(s)" "$picked" -ge 1
		skipped backends_agree "no BPF netfilter link on this kernel"
	fi
	# --floor (evaluation/bench/kmod_overhead.py): the module's probes return at once, the
	# router forwards, the file holds no record and no cost sample
	f0=$(forwarded)
	rm -f /tmp/floor.ready
	mkfifo /tmp/floor.ready
	hopscope record --backend kmod --floor -n router -i r-s1 -O r-rx -q -o /tmp/floor.hsr \
		--ready-fd 3 3>/tmp/floor.ready 2>/tmp/cli-floor.err &
	fpid=$!
	read -r ready </tmp/floor.ready || ready=
	s=$(send 198.18.3.2 9000 1000)
	kill -INT $fpid
	wait $fpid
	rc=$?
	f1=$(forwarded)
	n=$(sed -n 's/.*: \([0-9]*\) records in .*/\1/p' /tmp/cli-floor.err)
	line=$(hs_hsrcost /tmp/floor.hsr)
	expect kmod_floor "${ready:-no ready line}, rc $rc, forwarded $((f1 - f0)) of $s, records ${n:-?}; $line" \
		"$ready" = ready -a $rc -eq 0 -a $((f1 - f0)) -ge 1000 -a "$n" = 0 -a \
		"$(val "$line" end)" = 1 -a "$(val "$line" t1_n)" = 0 -a "$(val "$line" t4_n)" = 0
	[ $rc -eq 0 ] || sed 's/^/  stderr: /' /tmp/cli-floor.err
	rmmod hopscope
}

echo "GUEST kernel $(uname -r)"
insmod /lib/hs/veth.ko
topology || echo "topology failed"
in_ns router sh -c 'echo 2 > /sys/class/net/r-s1/queues/rx-0/rps_cpus'
vm0=$(meminfo VmallocUsed) pc0=$(meminfo Percpu)
insmod /lib/hs/hopscope.ko
expect loaded "$(dmesg | grep 'hopscope: ready' | tail -n 1)" -c /dev/hopscope
expect device_mode "$(ls -l /dev/hopscope | cut -c1-10)" "$(ls -l /dev/hopscope | cut -c1-10)" = "crw-------"
$NS_EXEC receiver hs_udp sink 9000 >/tmp/sink.out &
sinkpid=$!
for t in forwarding tap fragments drops eviction ring_full privileges netns_gone unload_under_traffic; do
	echo "== $t"
	test_$t
done
# the module's memory, measured here: the namespaces test_stalled_reader
# makes and deletes (24 kB on 6.12, even made before the baseline) and the
# CLI's eBPF maps leave per-CPU pages populated that are not the module's
vm1=$(meminfo VmallocUsed) pc1=$(meminfo Percpu)
insmod /lib/hs/hopscope.ko
for t in read_faults stalled_reader; do
	echo "== $t"
	test_$t
done
rmmod hopscope
echo "== cli"
test_cli
kill -TERM $sinkpid
wait $sinkpid

if [ -e /sys/kernel/debug/kmemleak ]; then
	echo scan > /sys/kernel/debug/kmemleak
	leaks=$(grep -c unreferenced /sys/kernel/debug/kmemleak)
	expect kmemleak "unreferenced objects: $leaks" "$leaks" = 0
else
	skipped kmemleak "this kernel has no kmemleak"
fi
# every recording here vmallocs its slot table (>= 1.4 MB by default) and queue
# (9 MB): one leaked recording shows; kernel stacks of new threads stay below
expect vmalloc_freed "VmallocUsed ${vm0} -> ${vm1} kB after the last unload" $((vm1 - vm0)) -lt 1024
# a recording's per-CPU area (counters and probe cost: 4.6 kB a CPU) freed
# leaves its pages populated; when other per-CPU memory (a netns) takes its
# place, the next one populates up to 3 new pages a CPU. Two such moves are
# allowed; a recording leaked each time (9 before pc1) would keep 4.6 kB a CPU
# each
ncpu=$(ls -d /sys/devices/system/cpu/cpu[0-9]* | wc -l)
expect percpu_freed "Percpu ${pc0} -> ${pc1} kB after the last unload ($ncpu CPUs)" \
	$((pc1 - pc0)) -le $((2 * 12 * ncpu))
bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace|general protection|RIP:|refcount_t|list_(add|del) corruption|stall|kmemleak|hopscope: .*error')
expect dmesg_clean "$(echo "$bad" | grep -c .) bad lines" -z "$bad"
if [ $fail -gt 0 ]; then
	echo "---- dmesg (tail) ----"
	dmesg | tail -n 60
fi
echo "RESULT kernel=$(uname -r) pass=$pass fail=$fail skip=$skip"
