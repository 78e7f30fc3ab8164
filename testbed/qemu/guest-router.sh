# Sourced by the /init of run.sh's guests (guest.sh, bench-guest.sh; run.sh
# puts it in /lib/hs): the router of testbed/ in miniature, on veth.
#
#   sender1                    router                        receiver
#   s1-eth0 198.18.1.2 --- r-s1 198.18.1.1 | r-rx 198.18.3.1 --- rx-eth0 198.18.3.2
#           2001:2:0:1::2       2001:2:0:1::1 | 2001:2:0:3::1        2001:2:0:3::2
in_ns() { $NS_EXEC "$@"; }
# packets the router has sent on r-rx
forwarded() { in_ns router cat /sys/class/net/r-rx/statistics/tx_packets; }

topology() {
	ip netns add sender1 && ip netns add router && ip netns add receiver || return 1
	ip -n router link add r-s1 address 02:00:00:00:01:01 type veth \
		peer name s1-eth0 address 02:00:00:00:01:02 netns sender1 || return 1
	ip -n router link add r-rx address 02:00:00:00:03:01 type veth \
		peer name rx-eth0 address 02:00:00:00:03:02 netns receiver || return 1
	for spec in "sender1 s1-eth0 r-s1 1" "receiver rx-eth0 r-rx 3"; do
		set -- $spec
		ip -n "$1" link set lo up
		ip -n "$1" addr add 198.18.$4.2/24 dev "$2"
		ip -n "$1" addr add 2001:2:0:$4::2/64 dev "$2" nodad
		ip -n "$1" link set "$2" up
		ip -n "$1" route add default via 198.18.$4.1
		ip -n "$1" -6 route add default via 2001:2:0:$4::1
		ip -n "$1" neigh replace 198.18.$4.1 lladdr 02:00:00:00:0$4:01 dev "$2" nud permanent
		ip -n "$1" neigh replace 2001:2:0:$4::1 lladdr 02:00:00:00:0$4:01 dev "$2" nud permanent
		ip -n router addr add 198.18.$4.1/24 dev "$3"
		ip -n router addr add 2001:2:0:$4::1/64 dev "$3" nodad
		ip -n router link set "$3" up
		ip -n router neigh replace 198.18.$4.2 lladdr 02:00:00:00:0$4:02 dev "$3" nud permanent
		ip -n router neigh replace 2001:2:0:$4::2 lladdr 02:00:00:00:0$4:02 dev "$3" nud permanent
	done
	ip -n router link set lo up
	ip -n router route add unreachable 198.18.9.0/24
	in_ns router sh -c 'echo 1 > /proc/sys/net/ipv4/conf/all/forwarding &&
		echo 1 > /proc/sys/net/ipv6/conf/all/forwarding'
}
