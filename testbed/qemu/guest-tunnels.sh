# Sourced by routers-guest.sh (routers.sh puts it in /lib/hs): tunnels on
# guest-router.sh's namespaces, each kind (GRE, IPIP, VXLAN, Geneve,
# WireGuard, and SIT with IPv6 inside) in both directions.
#
#   sender1 ==t-s/t-in (10.10.0.0/30)== router ==t-out/t-rx (10.9.0.0/30)== receiver
#            over s1-eth0 -- r-s1                  over r-rx -- rx-eth0
#
# Out: sender1's datagrams to 10.9.0.2 are routed into t-out, whose outer
# packets leave by r-rx; named as t-out and as r-rx. In: sender1 sends to
# the receiver through t-s, and the router takes the outer packets on r-s1;
# named as r-s1 (the underlay: followed into t-in) and as t-in itself. Each
# run checks the records against the receiver's count and the named
# output's own transmit counter. Needs run, expect, val, num, ifindex.

# two WireGuard keys (RFC 7748's test vectors; wg pubkey gives their halves)
WG_KEY1=dwdtCnMYpX08FsFyUbJmRd9ML4frwJkqsXf7pR25LCo=
WG_KEY2=XasIfmJKikt54X+Lg4AO5m87sSkmGLb9HC+LJ/+I4Os=

txp() { in_ns router cat /sys/class/net/$1/statistics/tx_packets; }

# KIND NS DEV LOCAL REMOTE UNDERLAY ADDR PEER_ADDR MAC PEER_MAC PORT PEER_PORT KEY PEER_KEY:
# one end of a tunnel of KIND in NS, ADDR/30 on it
tunnel_end() {
	k=$1 n=$2 d=$3 lo=$4 re=$5 u=$6 a=$7 pa=$8 mac=$9
	shift 9
	pmac=$1 port=$2 pport=$3 key=$4 pkey=$5
	case $k in
	gre|ipip) ip -n $n link add $d type $k local $lo remote $re dev $u ;;
	# VNI 9 out, 10 in (the address's second byte): one port, two VNIs
	vxlan) ip -n $n link add $d address $mac type vxlan id $(echo $a | cut -d. -f2) \
		local $lo remote $re dstport 4789 dev $u ;;
	geneve) ip -n $n link add $d address $mac type geneve id $(echo $a | cut -d. -f2) \
		remote $re ;;
	wireguard)
		ip -n $n link add $d type wireguard
		echo $key >/tmp/$n.key
		in_ns $n wg set $d private-key /tmp/$n.key listen-port $port \
			peer "$(echo $pkey | wg pubkey)" endpoint $re:$pport allowed-ips 0.0.0.0/0 ;;
	esac
	ip -n $n addr add $a/30 dev $d
	ip -n $n link set $d up
	case $k in
	vxlan|geneve) ip -n $n neigh replace $pa lladdr $pmac dev $d nud permanent ;;
	esac
}

# KIND: t-out between the router and the receiver over r-rx, t-in between
# sender1 and the router over r-s1; sender1 reaches the receiver through t-s
tunnels_up() {
	tunnel_end $1 router t-out 198.18.3.1 198.18.3.2 r-rx 10.9.0.1 10.9.0.2 \
		02:00:00:09:00:01 02:00:00:09:00:02 51820 51821 $WG_KEY1 $WG_KEY2
	tunnel_end $1 receiver t-rx 198.18.3.2 198.18.3.1 rx-eth0 10.9.0.2 10.9.0.1 \
		02:00:00:09:00:02 02:00:00:09:00:01 51821 51820 $WG_KEY2 $WG_KEY1
	tunnel_end $1 router t-in 198.18.1.1 198.18.1.2 r-s1 10.10.0.1 10.10.0.2 \
		02:00:00:10:00:01 02:00:00:10:00:02 51822 51823 $WG_KEY1 $WG_KEY2
	tunnel_end $1 sender1 t-s 198.18.1.2 198.18.1.1 s1-eth0 10.10.0.2 10.10.0.1 \
		02:00:00:10:00:02 02:00:00:10:00:01 51823 51822 $WG_KEY2 $WG_KEY1
	ip -n sender1 route add 198.18.3.2/32 via 10.10.0.1 dev t-s
	# the handshakes, before any recording (WireGuard)
	in_ns router ping -c 1 -W 3 10.9.0.2 >/dev/null
	in_ns sender1 ping -c 1 -W 3 10.10.0.1 >/dev/null
	return 0
}

tunnels_down() {
	for end in "router t-out" "receiver t-rx" "router t-in" "sender1 t-s"; do
		set -- $end
		ip -n $1 link del $2
	done
}

# NAME OUT KEY: after a run, every datagram sent arrived, has its one
# complete record of path tunnel with KEY (tun_in, tun_out) set, out of
# OUT, which counted as many transmits; none lost
tunneled() {
	all_recorded "$(ifindex $2)" && [ "$(val "$line" tunnel)" = "$received" ] &&
		[ "$(val "$line" $3)" = "$received" ] && [ "$tx" = "$received" ] &&
		[ "$(num /tmp/$name.err evicted)" = 0 ] && [ "$(num /tmp/$name.err stale)" = 0 ]
	ok=$?
	expect $1 "rc $rrc, sent $sent, received $received, $2 sent $tx, tunnel $(val "$line" tunnel), $3 $(val "$line" $3), $line" \
		$ok = 0 -a "$rrc" = 0 -a "$ready" = ready
}

# NAME DST OUT ARGS...: one run, the output's transmits counted in $tx
counted_run() {
	cn=$1 cd=$2 co=$3
	shift 3
	before=$(txp $co)
	run $cn $cd true "$@"
	tx=$(($(txp $co) - before))
}

# without wg, WireGuard's listen port is unknown: its outer packets are
# retired as local, and the inner ones it forwards are counted (in_nometa)
# and warned about, in the summary, never silently unrecorded
wireguard_unfollowed() {
	mv /bin/wg /bin/wg.off
	counted_run wireguard_unfollowed 198.18.3.2 r-rx -i r-s1 -O r-rx
	mv /bin/wg.off /bin/wg
	expect wireguard_unfollowed "rc $rrc, sent $sent, received $received, r-rx sent $tx, local $(num /tmp/$name.err local), in_nometa $(num /tmp/$name.err in_nometa), $line" \
		"$rrc" = 0 -a "$received" = "$sent" -a "$tx" = "$received" \
		-a "$(num /tmp/$name.err local)" = "$received" \
		-a "$(num /tmp/$name.err in_nometa)" = "$received" -a "$(val "$line" complete)" = 0 \
		-a "$(grep -c 'WARNING: .* forwarded without their record' /tmp/$name.err)" = 1
}

# KIND: its runs
tunnel_kind() {
	k=$1
	tunnels_up $k
	counted_run ${k}_out_tunnel 10.9.0.2 t-out -i r-s1 -O t-out
	tunneled ${k}_out_tunnel t-out tun_out
	counted_run ${k}_out_underlay 10.9.0.2 r-rx -i r-s1 -O r-rx
	tunneled ${k}_out_underlay r-rx tun_out
	counted_run ${k}_in_underlay 198.18.3.2 r-rx -i r-s1 -O r-rx
	tunneled ${k}_in_underlay r-rx tun_in
	# the tunnel itself: t1 at its XDP, after the decapsulation, no MAC
	# header but VXLAN's: the stack's path. Named alone, it is refused where
	# t-out's outer packets look like its own (the same protocol and port):
	# LOCAL_IN could not tell which to follow; named with t-out, neither is
	if [ $k != wireguard ]; then
		hopscope record --backend ebpf -n router -i t-in -O r-rx -d 1 -q \
			-o /tmp/${k}_in_alone.hsr 2>/tmp/${k}_in_alone.err
		rc=$?
		expect ${k}_in_alone_refused "--in t-in: rc $rc: $(head -n 1 /tmp/${k}_in_alone.err)" \
			"$rc" = 2
	fi
	counted_run ${k}_in_tunnel 198.18.3.2 r-rx -i t-in,t-out -O r-rx
	all_stack "$(ifindex r-rx)"
	ok=$?
	expect ${k}_in_tunnel "rc $rrc, sent $sent, received $received, r-rx sent $tx, $line" \
		$ok = 0 -a "$rrc" = 0 -a "$ready" = ready -a "$tx" = "$received"
	[ $k = wireguard ] && wireguard_unfollowed
	ip -n sender1 route del 198.18.3.2/32 via 10.10.0.1 dev t-s
	tunnels_down
}

# IPv6 again on the veths (tunnels turned it off): addresses, routes and
# neighbours as guest-router.sh gave them
v6_back() {
	for spec in "sender1 s1-eth0 r-s1 1" "receiver rx-eth0 r-rx 3"; do
		set -- $spec
		in_ns $1 sh -c "echo 0 > /proc/sys/net/ipv6/conf/$2/disable_ipv6"
		in_ns router sh -c "echo 0 > /proc/sys/net/ipv6/conf/$3/disable_ipv6"
		ip -n $1 addr add 2001:2:0:$4::2/64 dev $2 nodad
		ip -n router addr add 2001:2:0:$4::1/64 dev $3 nodad
		ip -n $1 -6 route replace default via 2001:2:0:$4::1
		ip -n $1 neigh replace 2001:2:0:$4::1 lladdr 02:00:00:00:0$4:01 dev $2 nud permanent
		ip -n router neigh replace 2001:2:0:$4::2 lladdr 02:00:00:00:0$4:02 dev $3 nud permanent
	done
	# the MLD reports of the addresses just added, before any count
	sleep 3
}

# NS DEV LOCAL REMOTE UNDERLAY ADDR: one end of a SIT tunnel (IPv6 in IPv4)
sit_end() {
	ip -n $1 link add $2 type sit local $3 remote $4 dev $5
	in_ns $1 sh -c "echo 0 > /proc/sys/net/ipv6/conf/$2/disable_ipv6"
	ip -n $1 addr add $6/64 dev $2 nodad
	ip -n $1 link set $2 up
}

# SIT's runs: IPv6 datagrams out through t-out to fd09::2, and in through
# t-s to the receiver's 2001:2:0:3::2
sit_kind() {
	v6_back
	sit_end router t-out 198.18.3.1 198.18.3.2 r-rx fd09::1
	sit_end receiver t-rx 198.18.3.2 198.18.3.1 rx-eth0 fd09::2
	sit_end router t-in 198.18.1.1 198.18.1.2 r-s1 fd10::1
	sit_end sender1 t-s 198.18.1.2 198.18.1.1 s1-eth0 fd10::2
	ip -n sender1 -6 route add 2001:2:0:3::2/128 dev t-s
	counted_run sit_out_tunnel fd09::2 t-out -i r-s1 -O t-out
	tunneled sit_out_tunnel t-out tun_out
	counted_run sit_out_underlay fd09::2 r-rx -i r-s1 -O r-rx
	tunneled sit_out_underlay r-rx tun_out
	counted_run sit_in_underlay 2001:2:0:3::2 r-rx -i r-s1 -O r-rx
	tunneled sit_in_underlay r-rx tun_in
	counted_run sit_in_tunnel 2001:2:0:3::2 r-rx -i t-in,t-out -O r-rx
	all_stack "$(ifindex r-rx)"
	ok=$?
	expect sit_in_tunnel "rc $rrc, sent $sent, received $received, r-rx sent $tx, $line" \
		$ok = 0 -a "$rrc" = 0 -a "$ready" = ready -a "$tx" = "$received"
	tunnels_down
}

tunnels() {
	# no IPv6 from here on: no router solicitation or MLD report crosses
	# the router during a run, so the transmit counters count the flow alone
	for n in sender1 router receiver; do
		in_ns $n sh -c 'for f in /proc/sys/net/ipv6/conf/*/disable_ipv6; do echo 1 > $f; done'
	done
	for k in gre ipip vxlan geneve wireguard; do
		tunnel_kind $k
	done
	sit_kind
}
