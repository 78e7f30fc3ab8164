#!/bin/busybox sh
# /init of the router-configuration guest (routers.sh): hopscope record
# (eBPF backend) on guest-router.sh's sender1 -> router -> receiver
# namespaces, with the router set up as people run one where the build
# machine's kernel cannot: an nftables flowtable loaded before hopscope
# starts and after, a ruleset shaped like OpenWrt's fw4 (DNAT, masquerade,
# flow offloading), the input on a VLAN sub-interface, tunnels (GRE, IPIP,
# VXLAN, Geneve, WireGuard) out and in by either device, the output a bond.
# Each run sends one paced UDP flow whose receiver's count is the truth for
# "forwarded", and checks the records (hs_hsrpath) and hopscope's counters
# against the path the packets took. Prints "CHECK name ok|FAIL|SKIP
# detail", then one "RESULT kernel=RELEASE pass=N fail=N skip=N" line, and
# powers off.

. /lib/hs/guest-lib.sh
. /lib/hs/guest-router.sh
. /lib/hs/guest-tunnels.sh
COUNT=1000	# datagrams a run: TCG forwards a few thousand a second
GAP=300		# microseconds between them: nothing is dropped on the way

ifindex() { in_ns router cat /sys/class/net/$1/ifindex; }

# NAME DST HOOK ARGS...: `hopscope record ARGS` in the router around COUNT
# datagrams to DST:9000, HOOK run once it is ready (a shell command, or
# true). The receiver answers the first datagram, so that conntrack sees the
# flow established. Sets $rrc $ready $sent $received, $from (the address
# the receiver saw the flow come from) and $line, the HSRPATH line of the
# file; the stderr in /tmp/NAME.err
run() {
	name=$1 dst=$2 hook=$3
	shift 3
	$NS_EXEC receiver hs_udp sink 9000 1 >/tmp/$name.sink &
	spid=$!
	rm -f /tmp/$name.ready
	mkfifo /tmp/$name.ready
	hopscope record --backend ebpf -n router "$@" -q -o /tmp/$name.hsr \
		--ready-fd 3 3>/tmp/$name.ready 2>/tmp/$name.err &
	rpid=$!
	read -r ready </tmp/$name.ready || ready=
	$hook
	sent=$(in_ns sender1 hs_udp send $dst 9000 $COUNT 64 0 $GAP | sed -n 's/^sent //p')
	sleep 1
	kill -INT $rpid 2>/dev/null
	wait $rpid
	rrc=$?
	kill -TERM $spid
	wait $spid
	received=$(sed -n 's/^received //p' /tmp/$name.sink)
	from=$(sed -n 's/^from //p' /tmp/$name.sink)
	line=$(hs_hsrpath /tmp/$name.hsr)
	echo "  $name: rc $rrc, sent $sent, received $received from $from; $line"
	sed 's/^/  stderr: /' /tmp/$name.err | grep -v '^  stderr: *$' | tail -n 8
}

# every datagram sent arrived, and has its one complete record, out of $1;
# other records only of packets the router dropped (fw4's input policy
# drops what the hosts send it unasked)
all_recorded() {
	[ "$sent" = $COUNT ] && [ "$received" = "$sent" ] &&
		[ "$(val "$line" records)" = "$((received + $(val "$line" dropped)))" ] &&
		[ "$(val "$line" complete)" = "$received" ] &&
		[ "$(echo " $line" | sed -n 's/.* outs=//p')" = "$1:$received" ] &&
		[ "$(val "$line" no_t1t4)" = 0 ] && [ "$(val "$line" partial)" = 0 ] &&
		[ "$(num /tmp/$name.err partial)" = 0 ]
}
# the stack's path for all of them, each with t2 and t3
all_stack() {
	all_recorded "$1" && [ "$(val "$line" stack)" = "$received" ] &&
		[ "$(val "$line" stack_gap)" = 0 ] && [ "$(num /tmp/$name.err fast_path)" = 0 ]
}

# hopscope starts beside the ruleset (in the order the run took)
check_starts() {
	expect ${name}_starts "rc $rrc, ready ${ready:-none}$(grep -m1 'cannot' /tmp/$name.err | sed 's/^/: /')" \
		"$rrc" = 0 -a "$ready" = ready
}
# a flowtable forwarded the flow: the first packets by the stack (until
# conntrack saw the reply and the forward chain added the flow), with t2
# and t3; every later one by the flowtable, with neither, counted as
# fast_path, its path one of PATHS: flowtable where the recorder found the
# flowtable on the input at start, no_netfilter (a fast path it cannot
# name) where the flowtable came later; the receiver saw it come from SOURCE
check_flowtable() {	# PATHS SOURCE
	check_starts
	fast=$(val "$line" fast) named=0
	for p in $1; do named=$((named + $(val "$line" $p))); done
	all_recorded "$(ifindex r-rx)" && [ "$from" = "::ffff:$2" ] &&
		[ "$(val "$line" stack)" -ge 1 ] && [ "$fast" -ge 1 ] && [ "$named" = "$fast" ] && [ "$(val "$line" stack_gap)" = 0 ] &&
		[ "$(val "$line" fast_stamped)" = 0 ] && [ "$(val "$line" stack_late)" = 0 ] &&
		[ "$(num /tmp/$name.err fast_path)" = "$fast" ]
	ok=$?
	expect ${name}_paths "sent $sent, received $received from $from, stack $(val "$line" stack), flowtable $(val "$line" flowtable), no_netfilter $(val "$line" no_netfilter), other $(val "$line" other_path), counters fast_path $(num /tmp/$name.err fast_path) partial $(num /tmp/$name.err partial)" \
		$ok = 0
}

# an inet flowtable on both directions' devices, the flow added
# once conntrack has seen it established
cat >/tmp/flowtable.nft <<'NFT'
table inet f {
	flowtable ft { hook ingress priority 0; devices = { r-s1, r-rx }; }
	chain forward { type filter hook forward priority 0; ct state established flow add @ft; }
}
NFT
# OpenWrt's fw4 in small: inet, stateful, drop by default, a port forward
# (DNAT, accepted by its ct status) to the receiver, masquerade out, and
# software flow offloading of established flows
cat >/tmp/fw4.nft <<'NFT'
table inet fw4 {
	flowtable ft { hook ingress priority 0; devices = { r-s1, r-rx }; }
	chain input {
		type filter hook input priority filter; policy drop;
		iif "lo" accept
		ct state established,related accept
	}
	chain forward {
		type filter hook forward priority filter; policy drop;
		ct state established flow add @ft
		ct state established,related accept
		ct status dnat accept
	}
	chain output {
		type filter hook output priority filter; policy accept;
		oif "lo" accept
		ct state established,related accept
	}
	chain dstnat {
		type nat hook prerouting priority dstnat; policy accept;
		iifname "r-s1" meta nfproto ipv4 udp dport 9000 dnat ip to 198.18.3.2:9000
	}
	chain srcnat {
		type nat hook postrouting priority srcnat; policy accept;
		oifname "r-rx" meta nfproto ipv4 masquerade
	}
}
NFT
load_ruleset() { in_ns router nft -f "$ruleset"; }
# NAME RULESET TABLE DST SOURCE: the ruleset (a file) loaded before hopscope
# starts, then after it, a flow to DST through it each time, which the
# receiver sees come from SOURCE
both_orders() {
	ruleset=$2
	load_ruleset
	run ${1}_before $4 true -i r-s1 -O r-rx
	check_flowtable flowtable $5
	in_ns router nft delete table inet $3
	run ${1}_after $4 load_ruleset -i r-s1 -O r-rx
	check_flowtable "flowtable no_netfilter" $5
	in_ns router nft delete table inet $3
}

# the sender tags its packets (VLAN 10 on its own device); the router takes
# them on r-s1.10 over r-s1
vlans() {
	ip -n sender1 link add link s1-eth0 name s1-eth0.10 type vlan id 10
	ip -n router link add link r-s1 name r-s1.10 type vlan id 10
	# no IPv6 on them: the MLD report of a device coming up is a record too
	in_ns sender1 sh -c 'echo 1 > /proc/sys/net/ipv6/conf/s1-eth0.10/disable_ipv6'
	in_ns router sh -c 'echo 1 > /proc/sys/net/ipv6/conf/r-s1.10/disable_ipv6'
	ip -n sender1 addr add 198.18.10.2/24 dev s1-eth0.10
	ip -n router addr add 198.18.10.1/24 dev r-s1.10
	ip -n sender1 link set s1-eth0.10 up
	ip -n router link set r-s1.10 up
	ip -n sender1 neigh replace 198.18.10.1 lladdr 02:00:00:00:01:01 dev s1-eth0.10 nud permanent
	ip -n router neigh replace 198.18.10.2 lladdr 02:00:00:00:01:02 dev r-s1.10 nud permanent
	ip -n sender1 route add 198.18.3.0/24 via 198.18.10.1 dev s1-eth0.10
	rx=$(ifindex r-rx)
	run vlan_sub 198.18.3.2 true -i r-s1.10 -O r-rx
	all_stack $rx
	ok=$?
	expect vlan_sub "--in r-s1.10: rc $rrc, sent $sent, received $received, $line" \
		$ok = 0 -a "$rrc" = 0 -a "$ready" = ready
	run vlan_parent 198.18.3.2 true -i r-s1 -O r-rx
	all_stack $rx
	ok=$?
	expect vlan_parent "--in r-s1: rc $rrc, sent $sent, received $received, $line" \
		$ok = 0 -a "$rrc" = 0 -a "$ready" = ready
	# a device and its upper one: each packet would be taken twice
	hopscope record --backend ebpf -n router -i r-s1,r-s1.10 -O r-rx -d 1 -q \
		-o /tmp/vlan_both.hsr 2>/tmp/vlan_both.err
	rc=$?
	expect vlan_both_refused "--in r-s1,r-s1.10: rc $rc: $(head -n 1 /tmp/vlan_both.err)" "$rc" = 2
	ip -n sender1 route del 198.18.3.0/24 via 198.18.10.1
	ip -n sender1 link del s1-eth0.10
	ip -n router link del r-s1.10
}

# the output a bond of one slave, r-rx (active-backup); last: it keeps r-rx
bonds() {
	ip -n router link add bond0 type bond mode active-backup
	ip -n router addr flush dev r-rx
	ip -n router link set r-rx down
	ip -n router link set r-rx master bond0
	ip -n router link set bond0 up
	ip -n router addr add 198.18.3.1/24 dev bond0
	ip -n router neigh replace 198.18.3.2 lladdr 02:00:00:00:03:02 dev bond0 nud permanent
	run bond_master 198.18.3.2 true -i r-s1 -O bond0
	all_stack "$(ifindex bond0)"
	ok=$?
	expect bond_master "--out bond0: rc $rrc, sent $sent, received $received, $line" \
		$ok = 0 -a "$rrc" = 0 -a "$ready" = ready
	# t4 passes bond0's start_xmit by (out_pass) and takes r-rx's
	run bond_slave 198.18.3.2 true -i r-s1 -O r-rx
	all_stack "$(ifindex r-rx)"
	ok=$?
	expect bond_slave "--out r-rx: rc $rrc, sent $sent, received $received, out_pass $(num /tmp/$name.err out_pass), $line" \
		$ok = 0 -a "$rrc" = 0 -a "$ready" = ready -a "$(num /tmp/$name.err out_pass)" = "$received"
}

echo "GUEST kernel $(uname -r)"
for m in $(cat /lib/hs/modules); do insmod /lib/hs/$m.ko || echo "insmod $m failed"; done
if topology; then
	both_orders flowtable /tmp/flowtable.nft f 198.18.3.2 198.18.1.2
	# to the router's own address: the port forward takes it to the
	# receiver, masqueraded as the router's address there
	both_orders fw4 /tmp/fw4.nft fw4 198.18.1.1 198.18.3.1
	vlans
	tunnels
	bonds
else
	expect topology "the namespaces could not be built" 1 = 0
fi
bad=$(dmesg | grep -E 'WARNING:|BUG:|Oops|Call Trace|general protection|RIP:')
expect dmesg_clean "$(echo "$bad" | grep -c .) bad lines" -z "$bad"
[ -n "$bad" ] && dmesg | tail -n 60
echo "RESULT kernel=$(uname -r) pass=$pass fail=$fail skip=$skip"
