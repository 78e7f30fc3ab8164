#!/bin/bash
# hopscope's router testbed: four network namespaces in the shape of the
# paper's Fig. 3, two senders -> router -> receiver, joined by veth pairs.
# testbed/README.md has the drawing, which CPU does what in each mode, and why.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=lib.sh source-path=SCRIPTDIR
. "$here/lib.sh"

SINK_OBJ=${HS_SINK_OBJ:-$(dirname "$here")/build/sink.bpf.o}
BUF_BYTES=33554432	# 32 MiB: the receiver's socket buffers
DEFAULT_LIMIT=1000p	# shaper queue, like txqueuelen and netdev_max_backlog
FRAME=1514		# a full Ethernet frame at MTU 1500, for the shaper's burst
ETHERNET_WIRE=24	# preamble and SFD 8, FCS 4, inter-frame gap 12: not in an skb
PING_WAIT=10		# seconds up waits for end-to-end ping

# The layout, typed here and nowhere else: `layout --json` and `status --json`
# print it for the Python side (hopscope/traffic/testbed.py) and for scripts.
# Each host's link to the chain of routers: host role, host interface, router
# interface, subnet number. The senders' links go to the first router, the
# receiver's to the last.
HOST_LINKS=("sender1 s1-eth0 r-s1 1" "sender2 s2-eth0 r-s2 2" "receiver rx-eth0 r-rx 3")
SENDERS=(sender1 sender2)
MAX_ROUTERS=4
HOP_SUBNET=10	# the link from router rK to rK+1 is subnet HOP_SUBNET + K
# Every namespace any testbed of this prefix may have: down and the left-over
# checks look for all of them, whatever the chain's length.
ALL_ROLES=("${SENDERS[@]}" router $(seq -f r%g "$MAX_ROUTERS") receiver)
declare -A R_IN R_OUT R_PREV R_NEXT R_SHAPE

# The chain of N routers (plan_chain N) sets:
#   ROUTERS  router roles in path order: (router) for one, (r1 .. rN) for more
#   ROLES    every namespace's role: senders, routers, receiver
#   LINKS    "host-role host-if router-role router-if subnet position": one
#            veth pair each, the router side .1 and the host side .2; between
#            routers rK and rK+1 the "host" is rK+1. Position: how many routers
#            are before the link (0 for the senders', N for the receiver's).
#   R_IN[role] R_OUT[role] R_PREV[role] R_NEXT[role]  a router's input
#            interfaces, its output interface, the roles feeding it and the
#            role its output feeds
#   RX_IF    the receiver's interface
plan_chain() {
	local n=$1 k l role host_if rt_if sub first last
	NROUTERS=$n ROUTERS=()
	if [ "$n" = 1 ]; then
		ROUTERS=(router)
	else
		for ((k = 1; k <= n; k++)); do ROUTERS+=("r$k"); done
	fi
	first=${ROUTERS[0]} last=${ROUTERS[n - 1]}
	ROLES=("${SENDERS[@]}" "${ROUTERS[@]}" receiver)
	LINKS=() R_IN=() R_OUT=() R_PREV=() R_NEXT=()
	for l in "${HOST_LINKS[@]}"; do
		read -r role host_if rt_if sub <<<"$l"
		[ "$role" != receiver ] || continue
		LINKS+=("$role $host_if $first $rt_if $sub 0")
		R_IN[$first]+="${R_IN[$first]:+ }$rt_if" R_PREV[$first]+="${R_PREV[$first]:+ }$role"
	done
	for ((k = 1; k < n; k++)); do
		LINKS+=("r$((k + 1)) r$((k + 1))-r$k r$k r$k-r$((k + 1)) $((HOP_SUBNET + k)) $k")
		R_OUT[r$k]=r$k-r$((k + 1)) R_NEXT[r$k]=r$((k + 1))
		R_IN[r$((k + 1))]=r$((k + 1))-r$k R_PREV[r$((k + 1))]=r$k
	done
	for l in "${HOST_LINKS[@]}"; do
		read -r role host_if rt_if sub <<<"$l"
		[ "$role" = receiver ] || continue
		LINKS+=("$role $host_if $last $rt_if $sub $n")
		R_OUT[$last]=$rt_if R_NEXT[$last]=$role RX_IF=$host_if
	done
}
plan_chain 1

is_router() {	# ROLE
	[[ " ${ROUTERS[*]} " == *" $1 "* ]]
}

# Addresses on link SUBNET; END is 1 for the router's side, 2 for the host's.
addr4() { echo "198.18.$1.$2"; }	# RFC 2544 benchmarking range 198.18.0.0/15
addr6() { echo "2001:2:0:$1::$2"; }	# RFC 5180 benchmarking range 2001:2::/48
mac() { printf '02:00:c6:12:%02x:%02x\n' "$1" "$2"; }	# the IPv4 address's last octets, hex
PLEN4=24 PLEN6=64

link_of() {	# ROLE: prints that host role's LINKS entry
	local l
	for l in "${LINKS[@]}"; do
		[ "${l%% *}" != "$1" ] || { echo "$l"; return; }
	done
	return 1
}

link_subnet() { local l; l=$(link_of "$1") && read -r _ _ _ _ l _ <<<"$l" && echo "$l"; }
host_addr4() { local n; n=$(link_subnet "$1") && addr4 "$n" 2; }
host_addr6() { local n; n=$(link_subnet "$1") && addr6 "$n" 2; }
host_if() { local l; l=$(link_of "$1") && read -r _ l _ <<<"$l" && echo "$l"; }

usage() {
	cat <<EOF
usage: ${0##*/} COMMAND [options]

Commands:
  up [options]  build the testbed; if it is already up with the same options, say so
  down          remove it: namespaces (and processes left in them), state file
  status [--json]
                show it; exits non-zero unless it is fully up. --json: its
                layout (names, addresses, CPUs, options, router netns inode)
                and problems as JSON (testbed/README.md)
  layout --json [up options]
                the layout up would make with these options, as JSON, without
                making anything (the same code as up's)
  relink ROLE   delete ROLE's (sender1, sender2, receiver) link and make it again:
                the router's interface returns with a new ifindex (rps, inline)
  shield        an up with --shield: keep the calling process (and what it
                starts from then on) off the kept CPUs too (a benchmark runs
                it before each measurement, from a process of its own)
  cpu ROLE      CPU list to pin ROLE (sender, router, receiver) to, for taskset -c
  sink          packets and bytes the receiver's XDP sink has dropped so far
  help          this text

Options for up:
  --routers N   a chain of N routers (1 to $MAX_ROUTERS, default 1): senders -> r1 -> ..
                -> rN -> receiver, each in its namespace, joined by rK-rK+1 ..
                rK+1-rK; one router is the namespace "router" as always. Every
                option below applies to every router
  --mode rps|inline|napi   where the router's receive processing runs (default rps)
        rps     RPS on r-s1 and r-s2 to the last CPU, senders on CPU0: the router
                has its own CPU and a real input queue (the backlog) forms
        inline  no RPS: forwarding runs on the sending CPU, as veth does by default
        napi    threaded NAPI on r-s1 and r-s2, its threads pinned to the last CPU
                at SCHED_FIFO: the high-rate alternative (queue = veth's ring)
  --shape none|tbf:RATE[:LIMIT][:ethernet][:frame]|htb:RATE[:LIMIT][:ethernet][:frame]
                qdisc on the router's output r-rx (default none: veth's noqueue,
                so no output queue forms). RATE as tc writes it (20mbit, 1gbit,
                10mbps); LIMIT in packets (100p) or bytes (64kb, 30000b);
                default $DEFAULT_LIMIT. ethernet: count each frame as an
                Ethernet wire carries it, $ETHERNET_WIRE bytes more (preamble, FCS, gap).
                The burst is 1 ms of tokens, at least two full frames; frame:
                one full frame ($FRAME bytes, with ethernet $((FRAME + ETHERNET_WIRE))), as a NIC
                that sends back to back at its rate. On a chain this shapes
                the last router's output
  --shape rK=SPEC
                the same on router K's output (rK-rK+1; for the last, r-rx);
                repeat for several routers. rN= and a bare SPEC are one qdisc
  --shape-in none|tbf:...|htb:...
                the same shaper on each sender's interface toward the router
                (s1-eth0, s2-eth0, in the senders' namespaces): the senders'
                links get a rate, the queue is the sender's (default none)
  --sink        attach the sink (HS_SINK_OBJ) as generic XDP on rx-eth0: the
                receiver drops UDP data and counts it (make build/sink.bpf.o)
  --shield router|senders
                keep the testbed's own processes off a CPU while it is up: the
                process that runs up (and every process it starts from then
                on: recorder, generators, analysis) leaves the router's CPU
                (in inline mode the senders' too), or the senders' (for runs
                that record nothing, where a generator sharing its CPU sends
                less than asked: hopscope throughput); the roles' processes
                are pinned by their starters (cpu ROLE). No other task on the
                machine is moved (testbed/shield.py; the last testbed down
                gives the moved threads their CPUs back). Off by default
  --no-shield   the default, said explicitly

Environment:
  HS_PREFIX     prefix of the namespace names (default empty); give each
                testbed its own (hst1-, hst2-) to run several at once
  HS_STATE_DIR  where the state file goes (default /run/hopscope)
  HS_SINK_OBJ   the sink object (default build/sink.bpf.o)

Examples:
  testbed/testbed.sh up --mode rps --shape tbf:20mbit --sink
  testbed/testbed.sh up --shape tbf:100mbit:ethernet:frame --shape-in tbf:100mbit:ethernet:frame
  testbed/testbed.sh up --routers 3 --shape r2=tbf:20mbit
  ip netns exec sender1 taskset -c "\$(testbed/testbed.sh cpu sender)" \\
      iperf3 -c 198.18.3.2 -u -b 0 -l 64 -t 5
  testbed/testbed.sh sink
  HS_PREFIX=hst1- testbed/testbed.sh down
EOF
}

say() {
	echo "testbed${HS_PREFIX:+ $HS_PREFIX}: $*"
}

# ---- option parsing: no side effects, every mistake named -------------------

# "20mbit" -> bytes per second; fails on what is not a tc rate
rate_bytes() {
	local num mult
	[[ $1 =~ ^([0-9]+)(k|m|g|t|ki|mi|gi|ti)?(bit|bps)$ ]] || return 1
	num=$((10#${BASH_REMATCH[1]}))
	case ${BASH_REMATCH[2]} in
	'') mult=1 ;;
	k) mult=1000 ;;
	m) mult=1000000 ;;
	g) mult=1000000000 ;;
	t) mult=1000000000000 ;;
	ki) mult=1024 ;;
	mi) mult=1048576 ;;
	gi) mult=1073741824 ;;
	ti) mult=1099511627776 ;;
	esac
	if [ "${BASH_REMATCH[3]}" = bit ]; then
		echo $((num * mult / 8))
	else
		echo $((num * mult))
	fi
}

# "100p" -> "pfifo 100", "64kb" -> "bfifo 65536"
limit_leaf() {
	local n
	if [[ $1 =~ ^([0-9]+)p$ ]]; then
		n=$((10#${BASH_REMATCH[1]}))
		[ "$n" -ge 1 ] || return 1
		echo "pfifo $n"
	elif [[ $1 =~ ^([0-9]+)(b|kb|mb)?$ ]]; then
		n=$((10#${BASH_REMATCH[1]}))
		case ${BASH_REMATCH[2]} in
		kb) n=$((n * 1024)) ;;
		mb) n=$((n * 1048576)) ;;
		esac
		[ "$n" -ge "$FRAME" ] || return 1
		echo "bfifo $n"
	else
		return 1
	fi
}

usage_die() {	# a bad option: refused before anything is made, exit 2
	echo "${0##*/}: $*" >&2
	exit 2
}

SHAPER_FORMS='none, tbf:RATE[:LIMIT][:ethernet][:frame] or htb:RATE[:LIMIT][:ethernet][:frame]'

# OPTION SPEC: checks a shaper (--shape, --shape-in) and prints it canonical,
# kind:rate:limit[:ethernet][:frame], the default limit filled in.
parse_shaper() {
	local opt=$1 kind rate limit='' flags='' f bps
	local -a fields
	if [ "$2" = none ]; then
		echo none
		return
	fi
	IFS=: read -r -a fields <<<"$2"
	kind=${fields[0]:-} rate=${fields[1]:-}
	case $kind in
	tbf | htb) ;;
	*) usage_die "$opt '$2': expected $SHAPER_FORMS" ;;
	esac
	bps=$(rate_bytes "$rate") ||
		usage_die "$opt '$2': rate '$rate' is not a tc rate such as 20mbit, 1gbit or 10mbps"
	[ "$bps" -gt 0 ] || usage_die "$opt '$2': rate '$rate' must be above zero"
	for f in "${fields[@]:2}"; do
		case $f in
		ethernet | frame)
			[[ " $flags " != *" $f "* ]] || usage_die "$opt '$2': '$f' twice"
			flags+=" $f"
			;;
		*)
			[ -z "$limit" ] && [ -z "$flags" ] ||
				usage_die "$opt '$2': '$f': expected the limit first, then ethernet or frame"
			limit_leaf "$f" >/dev/null ||
				usage_die "$opt '$2': limit '$f' must be packets (100p) or bytes of at least one frame, $FRAME (64kb, 30000b)"
			limit=$f
			;;
		esac
	done
	limit=${limit:-$DEFAULT_LIMIT}
	echo "$kind:$rate:$limit$([[ $flags != *ethernet* ]] || echo :ethernet)$([[ $flags != *frame* ]] || echo :frame)"
}

parse_up_options() {
	local n=1 k spec bare='' shapes=() given=()
	MODE=rps SHAPE_IN=none SINK=0 SHIELD=0 SHIELD_FOR=router
	while [ $# -gt 0 ]; do
		case $1 in
		--routers)
			[ $# -ge 2 ] || usage_die "--routers needs a value: 1 to $MAX_ROUTERS"
			[[ $2 =~ ^[1-9]$ ]] && [ "$2" -le "$MAX_ROUTERS" ] ||
				usage_die "--routers '$2': expected a number of routers from 1 to $MAX_ROUTERS"
			n=$2
			shift 2
			;;
		--mode)
			[ $# -ge 2 ] || usage_die "--mode needs a value: rps, inline or napi"
			case $2 in
			rps | inline | napi) MODE=$2 ;;
			*) usage_die "--mode '$2': expected rps, inline or napi" ;;
			esac
			shift 2
			;;
		--shape)
			[ $# -ge 2 ] || usage_die "$1 needs a value: $SHAPER_FORMS, or rK=one of those"
			if [[ $2 =~ ^r([0-9]+)=(.*)$ ]]; then
				k=$((10#${BASH_REMATCH[1]})) spec=${BASH_REMATCH[2]}
				[[ " ${given[*]} " != *" r$k "* ]] || usage_die "--shape r$k= given twice"
				given+=("r$k")
				spec=$(parse_shaper "--shape r$k=" "$spec") || exit
				shapes+=("$k $spec")
			else
				# the last router's, whose number is known at the end
				bare=$(parse_shaper "$1" "$2") || exit
			fi
			shift 2
			;;
		--shape-in)
			[ $# -ge 2 ] || usage_die "$1 needs a value: $SHAPER_FORMS"
			SHAPE_IN=$(parse_shaper "$1" "$2") || exit
			shift 2
			;;
		--sink)
			SINK=1
			shift
			;;
		--no-shield)
			SHIELD=0
			shift
			;;
		--shield)
			[ $# -ge 2 ] || usage_die "--shield needs a value: router or senders"
			case $2 in
			router | senders) SHIELD=1 SHIELD_FOR=$2 ;;
			*) usage_die "--shield '$2': expected router or senders" ;;
			esac
			shift 2
			;;
		*) usage_die "up: unknown option '$1' (see ${0##*/} help)" ;;
		esac
	done
	plan_chain "$n"
	R_SHAPE=()
	for k in "${ROUTERS[@]}"; do R_SHAPE[$k]=none; done
	if [ -n "$bare" ]; then
		[[ " ${given[*]} " != *" r$n "* ]] ||
			usage_die "--shape r$n= and a bare --shape both name the last router's output: give one"
		shapes+=("$n $bare")
	fi
	for spec in ${shapes[@]+"${shapes[@]}"}; do
		read -r k spec <<<"$spec"
		[ "$k" -ge 1 ] && [ "$k" -le "$n" ] ||
			usage_die "--shape r$k=: there is no router $k in a chain of $n (--routers $n)"
		R_SHAPE[${ROUTERS[k - 1]}]=$spec
	done
	SHAPE=${R_SHAPE[${ROUTERS[n - 1]}]}
	OPTIONS="--mode $MODE --shape $SHAPE"
	if [ "$n" != 1 ]; then
		OPTIONS="--routers $n $OPTIONS"
		for ((k = 1; k < n; k++)); do
			[ "${R_SHAPE[r$k]}" = none ] || OPTIONS+=" --shape r$k=${R_SHAPE[r$k]}"
		done
	fi
	[ "$SHAPE_IN" = none ] || OPTIONS+=" --shape-in $SHAPE_IN"
	[ "$SINK" = 0 ] || OPTIONS+=" --sink"
	[ "$SHIELD" = 0 ] || OPTIONS+=" --shield $SHIELD_FOR"
}

# ---- what the testbed is made of ---------------------------------------------

check_prefix() {
	[[ $HS_PREFIX =~ ^[A-Za-z0-9_.-]{0,20}$ ]] ||
		hs_die "HS_PREFIX '$HS_PREFIX': use at most 20 letters, digits, '.', '_' or '-'"
}

ns_of() {
	hs_ns "$1"
}

# sysfs takes a CPU mask in comma-separated 32-bit hex groups
cpu_mask() {
	local mask i
	mask=$(printf '%x' $((1 << ($1 % 32))))
	for ((i = 0; i < $1 / 32; i++)); do
		mask+=,00000000
	done
	echo "$mask"
}

mask_value() {
	local m=${1//,/}
	m=${m#"${m%%[!0]*}"}
	echo "${m:-0}"
}

# Which CPU each role runs on: sets CPU_SENDER, CPU_ROUTER, CPU_RECEIVER.
# With two CPUs the receiver shares the router's (evaluation/measurements.md: a
# router with its own CPU); with more it gets CPU1 to itself.
plan_cpus() {
	local n last
	n=$(getconf _NPROCESSORS_ONLN)	# nproc would count only the CPUs this shell may use
	last=$((n - 1))
	if [ "$MODE" != inline ] && [ "$n" -lt 2 ]; then
		hs_die "--mode $MODE gives the router its own CPU, but this machine has $n; use --mode inline"
	fi
	NCPU=$n
	CPU_SENDER=0
	CPU_RECEIVER=$((n >= 3 ? 1 : last))
	if [ "$MODE" = inline ]; then
		CPU_ROUTER=0
	else
		CPU_ROUTER=$last
	fi
	# The CPUs the shield keeps the testbed's own processes off. The
	# senders' (--shield senders): a generator that shares its CPU sends
	# less than asked, while the router's forwarding runs in softirq, which
	# preempts any task; with two CPUs the rest of ours share the router's.
	SHIELD_CPUS=()
	if [ "$SHIELD" = 1 ] && [ "$SHIELD_FOR" = senders ]; then
		SHIELD_CPUS=("$CPU_SENDER")
		[ "$CPU_ROUTER" = "$CPU_SENDER" ] || [ "$n" -lt 3 ] || SHIELD_CPUS+=("$CPU_ROUTER")
	elif [ "$SHIELD" = 1 ]; then
		SHIELD_CPUS=("$CPU_ROUTER")
	fi
}

sys_write() {	# NS PATH VALUE
	printf '%s\n' "$3" | hs_in_sys "$1" tee "$2" >/dev/null
}

sys_read() {	# NS PATH
	hs_in_sys "$1" cat "$2"
}

# ---- up -----------------------------------------------------------------------

make_namespaces() {
	local role ns
	for role in "${ROLES[@]}"; do
		ns=$(ns_of "$role")
		ip netns add "$ns"
		# no DAD: IPv6 addresses usable at once; new interfaces copy 'default'
		hs_in "$ns" sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
		ip -n "$ns" link set lo up
	done
	for role in "${ROUTERS[@]}"; do
		hs_in "$(ns_of "$role")" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
	done
}

# one veth pair, made inside the namespaces: its names never touch the root's
make_link() {	# a LINKS entry's words: host-role host-if router-role router-if subnet position
	local host rt hmac rmac r4 r6 h4 h6
	host=$(ns_of "$1") rt=$(ns_of "$3")
	hmac=$(mac "$5" 2) rmac=$(mac "$5" 1)
	r4=$(addr4 "$5" 1) r6=$(addr6 "$5" 1) h4=$(addr4 "$5" 2) h6=$(addr6 "$5" 2)
	ip -n "$rt" link add "$4" address "$rmac" type veth peer name "$2" address "$hmac" netns "$host"
	ip -n "$rt" addr add "$r4/$PLEN4" dev "$4"
	ip -n "$rt" addr add "$r6/$PLEN6" dev "$4" nodad
	ip -n "$host" addr add "$h4/$PLEN4" dev "$2"
	ip -n "$host" addr add "$h6/$PLEN6" dev "$2" nodad
	# senders segment like a NIC: one skb per packet on the wire, not 64 KB
	# TSO/GSO blocks that a real router would never see as one
	[[ " ${SENDERS[*]} " != *" $1 "* ]] || hs_in "$host" ethtool -K "$2" tso off gso off >/dev/null
	ip -n "$rt" link set "$4" up
	ip -n "$host" link set "$2" up
	if ! is_router "$1"; then
		ip -n "$host" route add default via "$r4"
		ip -n "$host" -6 route add default via "$r6"
	fi
	# static neighbours: no ARP or ND in the traces, nothing to resolve first
	ip -n "$host" neigh replace "$r4" lladdr "$rmac" dev "$2" nud permanent
	ip -n "$host" neigh replace "$r6" lladdr "$rmac" dev "$2" nud permanent
	ip -n "$rt" neigh replace "$h4" lladdr "$hmac" dev "$4" nud permanent
	ip -n "$rt" neigh replace "$h6" lladdr "$hmac" dev "$4" nud permanent
}

# A chain's static routes: router rK reaches every link it is not on through
# rK-1 (the links before it) or rK+1 (those after it), both ways.
make_routes() {
	local k ns l sub pos via
	[ "$NROUTERS" -gt 1 ] || return 0
	for ((k = 1; k <= NROUTERS; k++)); do
		ns=$(ns_of "r$k")
		for l in "${LINKS[@]}"; do
			read -r _ _ _ _ sub pos <<<"$l"
			if [ "$pos" -lt $((k - 1)) ]; then
				via="$((HOP_SUBNET + k - 1)) 1"	# rK-1's side of their link
			elif [ "$pos" -gt "$k" ]; then
				via="$((HOP_SUBNET + k)) 2"	# rK+1's side
			else
				continue	# its own input or output link
			fi
			# shellcheck disable=SC2086 # subnet and end
			ip -n "$ns" route add "$(addr4 "$sub" 0)/$PLEN4" via "$(addr4 $via)"
			# shellcheck disable=SC2086
			ip -n "$ns" -6 route add "$(addr6 "$sub" '')/$PLEN6" via "$(addr6 $via)"
		done
	done
}

# The far end of a router's output on veth's NAPI rather than the backlog the
# router's input uses ("rpsq" in evaluation/measurements.md): the receiver's
# interface, and on a chain the next router's input, which also keeps GRO
# from merging the packets it forwards (gro_max_size 0, as napi mode).
next_hop_on_napi() {	# a LINKS entry's words
	! is_router "$1" || ip -n "$(ns_of "$1")" link set dev "$2" gro_max_size 0
	hs_in "$(ns_of "$1")" ethtool -K "$2" gro on
	hs_in "$(ns_of "$3")" ethtool -K "$4" tso off
}

outputs_on_napi() {
	local l
	for l in "${LINKS[@]}"; do
		[[ " ${SENDERS[*]} " != *" ${l%% *} "* ]] || continue
		# shellcheck disable=SC2086 # six words
		next_hop_on_napi $l
	done
}

router_inputs() {	# every router's inputs: "role interface" per line
	local role ifc
	for role in "${ROUTERS[@]}"; do
		for ifc in ${R_IN[$role]}; do echo "$role $ifc"; done
	done
}

napi_threads() {	# pids of every testbed's router-input NAPI threads
	local names
	names=$(router_inputs | cut -d' ' -f2 | paste -sd'|')
	# a long pattern makes pgrep warn that names are 15 characters; these fit
	pgrep -d ' ' "^napi/($names)-" 2>/dev/null || true
}

set_mode() {
	local role ifc pid before new=() n
	case $MODE in
	inline) ;;
	rps)
		while read -r role ifc; do
			sys_write "$(ns_of "$role")" "/sys/class/net/$ifc/queues/rx-0/rps_cpus" "$(cpu_mask "$CPU_ROUTER")"
		done < <(router_inputs)
		outputs_on_napi
		;;
	napi)
		# GRO on turns on veth's NAPI without an XDP program (a tracer's
		# native XDP keeps it on); gro_max_size 0 stops GRO from merging
		# forwarded TCP segments into one skb (measured: 17402 frames in,
		# 1159 skbs forwarded without it), so the router handles packets
		before=" $(napi_threads) "
		n=0
		while read -r role ifc; do
			ip -n "$(ns_of "$role")" link set dev "$ifc" gro_max_size 0
			hs_in "$(ns_of "$role")" ethtool -K "$ifc" gro on
			sys_write "$(ns_of "$role")" "/sys/class/net/$ifc/threaded" 1
			n=$((n + 1))
		done < <(router_inputs)
		for pid in $(napi_threads); do
			[[ $before == *" $pid "* ]] || new+=("$pid")
		done
		[ "${#new[@]}" = "$n" ] ||
			hs_die "threaded NAPI on the routers' $n inputs made ${#new[@]} kernel threads, expected $n"
		for pid in "${new[@]}"; do
			taskset -pc "$CPU_ROUTER" "$pid" >/dev/null
			chrt -f -p 50 "$pid"
		done
		NAPI_PIDS=${new[*]}
		outputs_on_napi
		;;
	esac
}

# NS DEV SPEC: the shaper SPEC (parse_shaper's form) as DEV's root qdisc.
add_shaper() {
	local ns=$1 dev=$2 kind rate limit flags bps burst stab=()
	IFS=: read -r kind rate limit flags <<<"$3"
	bps=$(rate_bytes "$rate")
	if [[ $flags == *frame* ]]; then
		# one full frame, as the shaper counts it: a NIC sends back to back
		# at its rate and holds no tokens for a burst
		burst=$FRAME
		[[ $flags != *ethernet* ]] || burst=$((FRAME + ETHERNET_WIRE))
	else
		# 1 ms worth of tokens, and never less than two full frames
		burst=$((bps / 1000 > 2 * FRAME ? bps / 1000 : 2 * FRAME))
	fi
	# a frame on an Ethernet wire takes ETHERNET_WIRE bytes more than veth's skb
	[[ $flags != *ethernet* ]] || stab=(stab overhead "$ETHERNET_WIRE" linklayer ethernet)
	if [ "$kind" = tbf ]; then
		# tbf needs a limit of its own; the leaf below replaces its queue
		tc -n "$ns" qdisc add dev "$dev" root handle 1: "${stab[@]}" tbf rate "$rate" burst "$burst" limit "$((burst * 2))"
	else
		tc -n "$ns" qdisc add dev "$dev" root handle 1: "${stab[@]}" htb default 1
		tc -n "$ns" class add dev "$dev" parent 1: classid 1:1 htb rate "$rate" ceil "$rate" \
			burst "$burst" cburst "$burst" quantum "$FRAME"
	fi
	# shellcheck disable=SC2046 # "pfifo N" / "bfifo N" are two words on purpose
	tc -n "$ns" qdisc add dev "$dev" parent 1:1 handle 10: $(limit_leaf "$limit" | sed 's/ / limit /')
}

shape_router() {	# ROLE: its output's shaper, if it has one
	[ "${R_SHAPE[$1]}" = none ] || add_shaper "$(ns_of "$1")" "${R_OUT[$1]}" "${R_SHAPE[$1]}"
}

set_shape() {
	local role
	for role in "${ROUTERS[@]}"; do shape_router "$role"; done
}

# The senders' links into the router shaped on the senders' side: the queue
# is the sender's NIC queue, and frames reach the router at the link's rate.
shape_sender() {	# ROLE
	[ "$SHAPE_IN" = none ] || add_shaper "$(ns_of "$1")" "$(host_if "$1")" "$SHAPE_IN"
}

attach_sink() {
	[ "$SINK" = 1 ] || return 0
	ip -n "$(ns_of receiver)" link set dev "$RX_IF" xdpgeneric obj "$SINK_OBJ" sec xdp ||
		hs_die "--sink: could not attach $SINK_OBJ on $RX_IF (rebuild it: make build/sink.bpf.o)"
}

# The receiver's socket buffers: rmem_default (what D-ITG gets) and rmem_max
# (the cap on SO_RCVBUF, iperf3 -w), 32 MiB so bursts never overflow them.
# Set in the receiver's namespace where the kernel lets it; on 6.18 a child
# namespace only sees the root's values, read-only, so they are raised
# machine-wide while any testbed is up, and restored by the last one down.
BUF_SYSCTLS=(rmem_max rmem_default)
SAVED_SYSCTLS=$HS_STATE_DIR/sysctl-saved

set_buffers() {
	local rx key cur
	rx=$(ns_of receiver)
	if hs_in "$rx" test -w /proc/sys/net/core/rmem_max; then
		for key in "${BUF_SYSCTLS[@]}"; do
			hs_in "$rx" sysctl -qw "net.core.$key=$BUF_BYTES"
		done
		BUF_SCOPE=namespace
		return
	fi
	BUF_SCOPE=global
	for key in "${BUF_SYSCTLS[@]}"; do
		cur=$(cat "/proc/sys/net/core/$key")
		[ "$cur" -lt "$BUF_BYTES" ] || continue
		grep -q "^$key " "$SAVED_SYSCTLS" 2>/dev/null || echo "$key $cur" >>"$SAVED_SYSCTLS"
		echo "$BUF_BYTES" >"/proc/sys/net/core/$key"
		say "raised net.core.$key from $cur to $BUF_BYTES (global; restored by the last testbed down)"
	done
}

# Whether any testbed (of any prefix) is up: what all of them share (buffers,
# shield) is put back only by the last one down.
testbeds_up() {
	compgen -G "$HS_STATE_DIR/testbed-*.env" >/dev/null
}

# Run after this testbed's state file is gone: restores what set_buffers
# raised once no testbed is left up, unless someone changed it since.
restore_buffers() {
	local key orig cur
	[ -e "$SAVED_SYSCTLS" ] || return 0
	! testbeds_up || return 0
	while read -r key orig; do
		cur=$(cat "/proc/sys/net/core/$key")
		if [ "$cur" = "$BUF_BYTES" ]; then
			echo "$orig" >"/proc/sys/net/core/$key"
			say "restored net.core.$key to $orig"
		else
			echo "${0##*/}: warning: net.core.$key was changed to $cur while testbeds were up; left as it is" >&2
		fi
	done <"$SAVED_SYSCTLS"
	rm -f "$SAVED_SYSCTLS"
}

# The testbed's own processes off the kept CPUs (testbed/shield.py): its
# caller's threads, given back by the last testbed down.
SHIELD_STATE=$HS_STATE_DIR/shield-saved

set_shield() {	# PID: the process to place (default: the caller)
	local out cpus
	[ "$SHIELD" = 1 ] || return 0
	cpus=$(IFS=,; echo "${SHIELD_CPUS[*]}")
	out=$(python3 "$here/shield.py" on "$cpus" "${1:-$PPID}" "$SHIELD_STATE") ||
		hs_die "could not place process ${1:-$PPID} off CPU $cpus (see above)"
	say "shield: $out"
}

# Run after this testbed's state file is gone, like restore_buffers.
lift_shield() {
	local out
	[ -e "$SHIELD_STATE" ] || return 0
	! testbeds_up || return 0
	out=$(python3 "$here/shield.py" off "$SHIELD_STATE") ||
		hs_die "could not give the testbed's threads their CPUs back ($SHIELD_STATE kept)"
	say "shield lifted: $out"
}

link_up() {	# NS IF: carrier and operstate UP
	local line
	line=$(ip -n "$1" -br link show dev "$2" 2>/dev/null) || return 1
	read -r _ line _ <<<"$line"
	[ "$line" = UP ]
}

links_up() {
	local l host host_if rt rt_if
	for l in "${LINKS[@]}"; do
		read -r host host_if rt rt_if _ <<<"$l"
		link_up "$(ns_of "$host")" "$host_if" && link_up "$(ns_of "$rt")" "$rt_if" || return 1
	done
}

ping_ok() {	# from-role address
	hs_in "$(ns_of "$1")" ping -c1 -W1 -q "$2"
}

wait_end_to_end() {
	local from addr
	# operstate follows carrier within a second (linkwatch)
	hs_wait_for "$PING_WAIT" links_up || hs_die "the veth links did not come up within ${PING_WAIT}s"
	for from in "${SENDERS[@]}"; do
		for addr in "$(host_addr4 receiver)" "$(host_addr6 receiver)"; do
			hs_wait_for "$PING_WAIT" ping_ok "$from" "$addr" ||
				hs_die "ping from $from to $addr through ${ROUTERS[*]} did not work within ${PING_WAIT}s"
		done
	done
}

# The state of this prefix's testbed: hs_state_load, then the chain's plan
# from its options.
state_load() {
	hs_state_load || return
	# shellcheck disable=SC2086 # up's options, as words
	parse_up_options $HS_TB_OPTIONS
}

write_state() {
	local f tmp role one='' ns=() inodes=() ins=() outs=() shapes=()
	f=$(hs_state_file)
	tmp=$f.tmp
	for role in "${ROUTERS[@]}"; do
		ns+=("$(ns_of "$role")")
		inodes+=("$(stat -L -c %i "/run/netns/$(ns_of "$role")")")
		ins+=("$(tr ' ' , <<<"${R_IN[$role]}")")
		outs+=("${R_OUT[$role]}")
		shapes+=("${R_SHAPE[$role]}")
	done
	# one router: its names as ever; a chain has none (HS_TB_ROUTER*S instead)
	[ "$NROUTERS" != 1 ] || one=router
	{
		echo "# written by testbed.sh up; hs_state_load (testbed/lib.sh) reads it"
		printf 'HS_TB_%s=%q\n' \
			PREFIX "$HS_PREFIX" \
			OPTIONS "$OPTIONS" \
			MODE "$MODE" \
			SHAPE "$SHAPE" \
			SHAPE_IN "$SHAPE_IN" \
			SINK "$SINK" \
			NS_SENDER1 "$(ns_of sender1)" \
			NS_SENDER2 "$(ns_of sender2)" \
			NS_ROUTER "${one:+${ns[0]}}" \
			NS_RECEIVER "$(ns_of receiver)" \
			ROUTER_NETNS_INODE "${one:+${inodes[0]}}" \
			ROUTER_IN "${one:+${R_IN[router]}}" \
			ROUTER_OUT "${one:+${R_OUT[router]}}" \
			NROUTERS "$NROUTERS" \
			ROUTERS "${ROUTERS[*]}" \
			ROUTER_NSS "${ns[*]}" \
			ROUTER_NETNS_INODES "${inodes[*]}" \
			ROUTER_INS "${ins[*]}" \
			ROUTER_OUTS "${outs[*]}" \
			ROUTER_SHAPES "${shapes[*]}" \
			S1_IF "$(host_if sender1)" S2_IF "$(host_if sender2)" RX_IF "$RX_IF" \
			S1_ADDR4 "$(host_addr4 sender1)" S1_ADDR6 "$(host_addr6 sender1)" \
			S2_ADDR4 "$(host_addr4 sender2)" S2_ADDR6 "$(host_addr6 sender2)" \
			RX_ADDR4 "$(host_addr4 receiver)" RX_ADDR6 "$(host_addr6 receiver)" \
			CPU_SENDER "$CPU_SENDER" \
			CPU_ROUTER "$CPU_ROUTER" \
			CPU_RECEIVER "$CPU_RECEIVER" \
			SHIELD "$SHIELD" \
			SHIELD_FOR "$SHIELD_FOR" \
			SHIELD_CPUS "${SHIELD_CPUS[*]}" \
			NAPI_PIDS "${NAPI_PIDS:-}" \
			RCVBUF_BYTES "$BUF_BYTES" \
			RCVBUF_SCOPE "$BUF_SCOPE"
	} >"$tmp"
	mv "$tmp" "$f"
}

cmd_up() {
	local role l leftovers=()
	parse_up_options "$@"
	plan_cpus
	command -v ethtool >/dev/null || hs_die "ethtool not found: run scripts/install-deps.sh"
	if [ "$SINK" = 1 ] && [ ! -r "$SINK_OBJ" ]; then
		hs_die "--sink: $SINK_OBJ not found; build it with: make build/sink.bpf.o"
	fi
	if hs_state_load; then
		[ "$HS_TB_OPTIONS" = "$OPTIONS" ] ||
			hs_die "already up with '$HS_TB_OPTIONS', not '$OPTIONS': run ${0##*/} down first"
		problems >/dev/null ||
			hs_die "up with '$OPTIONS' but not healthy (see ${0##*/} status): run ${0##*/} down first"
		say "already up with $OPTIONS"
		return 0
	fi
	read -r -a leftovers <<<"$(left_over)"
	[ "${#leftovers[@]}" = 0 ] ||
		hs_die "namespaces ${leftovers[*]} exist but no testbed state: run ${0##*/} down first"

	hs_cleanup_push teardown
	make_namespaces
	for l in "${LINKS[@]}"; do
		# shellcheck disable=SC2086 # six words
		make_link $l
	done
	make_routes
	set_buffers
	set_mode
	set_shape
	for role in "${SENDERS[@]}"; do
		shape_sender "$role"
	done
	attach_sink
	set_shield
	wait_end_to_end
	write_state
	hs_cleanup_clear
	say "up: $OPTIONS; CPUs: sender $CPU_SENDER, router $CPU_ROUTER${ROUTERS[1]:+ (all ${ROUTERS[*]})}, receiver $CPU_RECEIVER"
}

left_over() {	# the namespaces of this prefix that exist, of any chain
	local role
	for role in "${ALL_ROLES[@]}"; do
		! hs_ns_exists "$(ns_of "$role")" || printf '%s ' "$(ns_of "$role")"
	done
}

# ---- relink -------------------------------------------------------------------

# One host's veth pair deleted and made again as up made it: the router's end
# comes back under the same name and a new ifindex, what an always-on tracer
# must follow (tests/e2e/test_ifaces_churn.py).
cmd_relink() {
	local l host host_if rt rt_if
	[ $# = 1 ] || hs_die "usage: ${0##*/} relink sender1|sender2|receiver"
	[[ " ${SENDERS[*]} receiver " == *" $1 "* ]] || hs_die "relink '$1': expected sender1, sender2 or receiver"
	state_load || hs_die "the testbed is not up: run ${0##*/} up"
	[ "$MODE" != napi ] || hs_die "relink: not in napi mode (the input's NAPI thread would change)"
	plan_cpus
	l=$(link_of "$1")
	read -r host host_if rt rt_if _ <<<"$l"
	# gone already (deleted by hand) or not: made anew either way
	ip -n "$(ns_of "$rt")" link del "$rt_if" 2>/dev/null || true
	# shellcheck disable=SC2086 # six words
	make_link $l
	if [ "$1" = receiver ]; then
		# shellcheck disable=SC2086 # six words
		[ "$MODE" != rps ] || next_hop_on_napi $l
		shape_router "$rt"
		attach_sink
	else
		shape_sender "$1"
		[ "$MODE" != rps ] ||
			sys_write "$(ns_of "$rt")" "/sys/class/net/$rt_if/queues/rx-0/rps_cpus" "$(cpu_mask "$CPU_ROUTER")"
	fi
	wait_end_to_end
	say "relinked $rt_if (ifindex $(ip -n "$(ns_of "$rt")" -j link show dev "$rt_if" | jq '.[0].ifindex'))"
}

# ---- down ---------------------------------------------------------------------

no_processes() {
	[ -z "$(ip netns pids "$1" 2>/dev/null)" ]
}

# Stops what still runs in NS (a left-over iperf3 keeps the namespace and its
# veths alive after the name is gone).
stop_processes() {
	local ns=$1 pids n
	pids=$(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')
	[ -n "${pids// /}" ] || return 0
	n=$(wc -w <<<"$pids")
	# shellcheck disable=SC2086
	kill $pids 2>/dev/null || true
	hs_wait_for 2 no_processes "$ns" || {
		# shellcheck disable=SC2086
		kill -KILL $pids 2>/dev/null || true
	}
	say "stopped $n process(es) left in $ns"
}

teardown() {
	local i ns removed=0
	for ((i = ${#ALL_ROLES[@]} - 1; i >= 0; i--)); do
		ns=$(ns_of "${ALL_ROLES[i]}")
		hs_ns_exists "$ns" || continue
		stop_processes "$ns"
		ip netns del "$ns"
		removed=$((removed + 1))
	done
	rm -f "$(hs_state_file)"
	restore_buffers
	lift_shield
	REMOVED=$removed
}

cmd_down() {
	[ $# = 0 ] || hs_die "down takes no options"
	teardown
	if [ "$REMOVED" = 0 ]; then
		say "down: nothing to remove"
	else
		say "down: removed $REMOVED namespaces"
	fi
}

# ---- status -------------------------------------------------------------------

# Prints what is wrong, one line each; fails if anything is. Reads the plan
# (state_load) and the state's HS_TB_* values.
problems() {
	local role ns l host host_if rt rt_if ifc key pid want got n=0
	for role in "${ROLES[@]}"; do
		ns=$(ns_of "$role")
		hs_ns_exists "$ns" || { echo "namespace $ns missing"; n=$((n + 1)); }
	done
	[ "$n" = 0 ] || return 1
	for l in "${LINKS[@]}"; do
		read -r host host_if rt rt_if _ <<<"$l"
		link_up "$(ns_of "$host")" "$host_if" ||
			{ echo "$host_if in $(ns_of "$host") is not up"; n=$((n + 1)); }
		link_up "$(ns_of "$rt")" "$rt_if" || { echo "$rt_if in $(ns_of "$rt") is not up"; n=$((n + 1)); }
	done
	for role in "${ROUTERS[@]}"; do
		ns=$(ns_of "$role")
		[ "$(hs_in "$ns" sysctl -n net.ipv4.ip_forward)" = 1 ] ||
			{ echo "IPv4 forwarding off in $ns"; n=$((n + 1)); }
		[ "$(hs_in "$ns" sysctl -n net.ipv6.conf.all.forwarding)" = 1 ] ||
			{ echo "IPv6 forwarding off in $ns"; n=$((n + 1)); }
	done
	while read -r role ifc; do
		ns=$(ns_of "$role")
		want=0
		[ "$MODE" != rps ] || want=$(mask_value "$(cpu_mask "$HS_TB_CPU_ROUTER")")
		got=$(mask_value "$(sys_read "$ns" "/sys/class/net/$ifc/queues/rx-0/rps_cpus")")
		[ "$got" = "$want" ] || { echo "rps_cpus on $ifc in $ns is $got, want $want"; n=$((n + 1)); }
		want=0
		[ "$MODE" != napi ] || want=1
		got=$(sys_read "$ns" "/sys/class/net/$ifc/threaded")
		[ "$got" = "$want" ] || { echo "threaded NAPI on $ifc in $ns is $got, want $want"; n=$((n + 1)); }
		# napi mode's inputs, and in rps a router's input fed by a router
		[ "$MODE" = napi ] || { [ "$MODE" = rps ] && is_router "${R_PREV[$role]}"; } || continue
		[[ $(ip -n "$ns" -d link show dev "$ifc") == *"gro_max_size 0 "* ]] ||
			{ echo "GRO on $ifc in $ns may merge packets (gro_max_size not 0)"; n=$((n + 1)); }
	done < <(router_inputs)
	for pid in $HS_TB_NAPI_PIDS; do
		got=$(taskset -pc "$pid" 2>/dev/null | sed 's/.*: //')
		[ "$got" = "$HS_TB_CPU_ROUTER" ] ||
			{ echo "NAPI thread $pid is not pinned to CPU $HS_TB_CPU_ROUTER (${got:-gone})"; n=$((n + 1)); }
	done
	[ "$HS_TB_SHIELD" != 1 ] || [ -e "$SHIELD_STATE" ] ||
		{ echo "no shield on CPU ${HS_TB_SHIELD_CPUS-$HS_TB_CPU_ROUTER} ($SHIELD_STATE is gone)"; n=$((n + 1)); }
	for role in "${ROUTERS[@]}"; do
		[ "${R_SHAPE[$role]}" != none ] || continue
		got=$(tc -n "$(ns_of "$role")" qdisc show dev "${R_OUT[$role]}")
		[[ $got == "qdisc ${R_SHAPE[$role]%%:*} 1: root"* ]] ||
			{ echo "no ${R_SHAPE[$role]%%:*} qdisc on ${R_OUT[$role]} in $(ns_of "$role")"; n=$((n + 1)); }
	done
	if [ "${HS_TB_SHAPE_IN:-none}" != none ]; then
		for role in "${SENDERS[@]}"; do
			got=$(tc -n "$(ns_of "$role")" qdisc show dev "$(host_if "$role")")
			[[ $got == "qdisc ${HS_TB_SHAPE_IN%%:*} 1: root"* ]] ||
				{ echo "no ${HS_TB_SHAPE_IN%%:*} qdisc on $(host_if "$role") in $(ns_of "$role")"; n=$((n + 1)); }
		done
	fi
	if [ "$HS_TB_SINK" = 1 ]; then
		got=$(ip -n "$HS_TB_NS_RECEIVER" link show dev "$RX_IF")
		[[ $got == *"prog/xdp id "*" name xdp_sink "* ]] ||
			{ echo "sink not attached on $RX_IF"; n=$((n + 1)); }
	fi
	for key in "${BUF_SYSCTLS[@]}"; do
		got=$(hs_in "$HS_TB_NS_RECEIVER" cat "/proc/sys/net/core/$key")
		[ "$got" -ge "$HS_TB_RCVBUF_BYTES" ] ||
			{ echo "receiver's net.core.$key is $got, want $HS_TB_RCVBUF_BYTES"; n=$((n + 1)); }
	done
	ping_ok sender1 "$HS_TB_RX_ADDR4" >/dev/null 2>&1 || { echo "IPv4 ping sender1 -> receiver fails"; n=$((n + 1)); }
	ping_ok sender1 "$HS_TB_RX_ADDR6" >/dev/null 2>&1 || { echo "IPv6 ping sender1 -> receiver fails"; n=$((n + 1)); }
	[ "$n" = 0 ]
}

show_namespace() {	# ROLE
	local ns ifc
	ns=$(ns_of "$1")
	echo "== $ns"
	ip -n "$ns" -br addr show | sed 's/^/  /'
	tc -n "$ns" qdisc show | grep -v '^qdisc noqueue' | sed 's/^/  /' || true
	ip -n "$ns" -o link show | awk '/prog\/xdp/ {
		sub(/[@:].*/, "", $2); match($0, /prog\/xdp id [0-9]+ name [^ ]+/)
		print "  " $2 ": " $6 " " substr($0, RSTART, RLENGTH) }'
	! is_router "$1" || for ifc in ${R_IN[$1]}; do
		echo "  $ifc: rps_cpus $(sys_read "$ns" "/sys/class/net/$ifc/queues/rx-0/rps_cpus")," \
			"threaded NAPI $(sys_read "$ns" "/sys/class/net/$ifc/threaded")"
	done
}

cmd_status() {
	local role ns found cpus inodes
	if [ "${1:-}" = --json ] && [ $# = 1 ]; then
		status_json
		return
	fi
	[ $# = 0 ] || hs_die "status takes no options but --json"
	if ! state_load; then
		found=$(left_over)
		say "not up${found:+ (left-over namespaces: ${found% }; run ${0##*/} down)}"
		return 1
	fi
	say "$HS_TB_OPTIONS"
	inodes="router netns inode $HS_TB_ROUTER_NETNS_INODE"
	[ "$NROUTERS" = 1 ] || inodes="routers' netns inodes ${HS_TB_ROUTER_NETNS_INODES// /, }"
	echo "CPUs: sender $HS_TB_CPU_SENDER, router $HS_TB_CPU_ROUTER, receiver $HS_TB_CPU_RECEIVER;" \
		"$inodes; state $(hs_state_file)"
	if [ "$HS_TB_SHIELD" = 1 ] && [ -e "$SHIELD_STATE" ]; then
		cpus=${HS_TB_SHIELD_CPUS-$HS_TB_CPU_ROUTER}
		echo "shield: CPU ${cpus// /,} kept for the ${HS_TB_SHIELD_FOR:-router};" \
			"$(grep -c '^[0-9]' "$SHIELD_STATE") threads of the testbed's callers placed off it"
	fi
	echo "receiver socket buffers ($HS_TB_RCVBUF_SCOPE):" \
		"rmem_default $(hs_in "$HS_TB_NS_RECEIVER" cat /proc/sys/net/core/rmem_default)," \
		"rmem_max $(hs_in "$HS_TB_NS_RECEIVER" cat /proc/sys/net/core/rmem_max);" \
		"netdev_max_backlog (global, the router's input queue) $(cat /proc/sys/net/core/netdev_max_backlog)"
	for role in "${ROLES[@]}"; do
		ns=$(ns_of "$role")
		if hs_ns_exists "$ns"; then show_namespace "$role"; else echo "== $ns: missing"; fi
	done
	local out
	if out=$(problems); then
		say "fully up"
	else
		printf '%s\n' "$out" | sed 's/^/problem: /'
		say "NOT fully up: run ${0##*/} down, then up"
		return 1
	fi
}

# ---- layout as JSON -------------------------------------------------------------

# Prints the layout as JSON (testbed/README.md, "Layout as JSON"): the names
# and addresses from LINKS and the chain's plan, the options and CPUs from MODE
# SHAPE SHAPE_IN SINK SHIELD CPU_* NCPU. Arguments: whether it is up
# (true/false), the routers' netns inodes in path order and the NAPI thread
# ids (empty unless up), then the problems, one each.
layout_json() {
	local up=$1 napi=$3 l host host_if rt rt_if n i role links=() routers=() inodes
	read -r -a inodes <<<"$2"
	shift 3
	for l in "${LINKS[@]}"; do
		read -r host host_if rt rt_if n _ <<<"$l"
		links+=("$host" "$host_if" "$rt" "$rt_if" "$(addr4 "$n" 2)" "$(addr6 "$n" 2)" "$(mac "$n" 2)"
			"$(addr4 "$n" 1)" "$(addr6 "$n" 1)" "$(mac "$n" 1)")
	done
	for i in "${!ROUTERS[@]}"; do
		role=${ROUTERS[i]}
		routers+=("$role" "$(ns_of "$role")" "${R_IN[$role]}" "${R_OUT[$role]}" "${R_SHAPE[$role]}"
			"${inodes[i]:-}" "${R_NEXT[$role]}" "${R_PREV[$role]}")
	done
	local roles senders
	roles=$(printf '%s\n' "${ROLES[@]}")
	senders=$(printf '%s\n' "${SENDERS[@]}")
	jq -n --arg prefix "$HS_PREFIX" --arg options "$OPTIONS" --arg mode "$MODE" \
		--arg shape "$SHAPE" --arg shape_in "$SHAPE_IN" --argjson sink "$([ "$SINK" = 1 ] && echo true || echo false)" \
		--argjson shield "$([ "$SHIELD" = 1 ] && echo true || echo false)" \
		--arg shield_for "$([ "$SHIELD" = 1 ] && echo "$SHIELD_FOR")" \
		--arg shield_cpus "${SHIELD_CPUS[*]}" \
		--argjson up "$up" --arg napi "$napi" \
		--arg roles "$roles" --arg senders "$senders" --arg state "$(hs_state_file)" \
		--argjson cpu_sender "$CPU_SENDER" --argjson cpu_router "$CPU_ROUTER" \
		--argjson cpu_receiver "$CPU_RECEIVER" --argjson ncpu "$NCPU" \
		--argjson plen4 "$PLEN4" --argjson plen6 "$PLEN6" \
		--argjson nlinks "${#LINKS[@]}" --argjson nrouters "$NROUTERS" --argjson nproblems $# \
		--args '
		def lines: split("\n") | map(select(. != ""));
		def words: split(" ") | map(select(. != ""));
		def iface(name; peer; peer_role; a4; a6; mac):
			{name: name, peer: peer, peer_role: peer_role, ipv4: a4, prefix4: $plen4,
			 ipv6: a6, prefix6: $plen6, mac: mac};
		$ARGS.positional as $p
		| ($nlinks * 10) as $r0 | ($r0 + $nrouters * 8) as $q0
		| [range(0; $nlinks) | $p[. * 10:. * 10 + 10]] as $links
		| [range(0; $nrouters) | $p[$r0 + . * 8:$r0 + . * 8 + 8]
		   | {role: .[0], netns: .[1], in: (.[2] | words), out: .[3], shape: .[4],
		      netns_inode: (if .[5] == "" then null else (.[5] | tonumber) end),
		      next: .[6], prev: (.[7] | words)}] as $routers
		| ($routers | map(.role)) as $rroles
		| def router: . as $r | $rroles | index($r) != null;
		  # each side of each link, the hosts first, every role'"'"'s in path order
		  ([$links[] | select(.[0] | router | not) | [.[0], iface(.[1]; .[3]; .[2]; .[4]; .[5]; .[6])]]
		   + [$links[] | (select(.[0] | router) | [.[0], iface(.[1]; .[3]; .[2]; .[4]; .[5]; .[6])]),
			         [.[2], iface(.[3]; .[1]; .[0]; .[7]; .[8]; .[9])]]) as $sides
		| {format: "hopscope-testbed/1", prefix: $prefix, up: $up,
		   options: $options, mode: $mode, shape: $shape, shape_in: $shape_in,
		   sink: $sink, shield: $shield,
		   shield_for: (if $shield_for == "" then null else $shield_for end),
		   shield_cpus: ($shield_cpus | words | map(tonumber)),
		   namespaces: ($roles | lines | map({key: ., value: ($prefix + .)}) | from_entries),
		   senders: ($senders | lines),
		   interfaces: (reduce $sides[] as $s ({}; .[$s[0]] += [$s[1]])),
		   # one router: as ever; a chain has no single one (routers below)
		   router: (if $nrouters == 1 then $routers[0] | {in, out} else null end),
		   nrouters: $nrouters,
		   routers: $routers,
		   cpus: {sender: $cpu_sender, router: $cpu_router, receiver: $cpu_receiver},
		   ncpu: $ncpu,
		   router_netns_inode: (if $nrouters == 1 then $routers[0].netns_inode else null end),
		   napi_pids: ($napi | words | map(tonumber)),
		   state_file: $state}
		| if $up then . + {healthy: ($nproblems == 0), problems: $p[$q0:]} else . end' \
		"${links[@]}" "${routers[@]}" "$@"
}

# `layout --json [up options]`: what up with these options would make, from
# the same code, without making anything.
cmd_layout() {
	local args=()
	while [ $# -gt 0 ]; do
		[ "$1" = --json ] || args+=("$1")
		shift
	done
	parse_up_options ${args[@]+"${args[@]}"}
	plan_cpus
	layout_json false "" ""
}

# `status --json`: the layout of the testbed up now, with its problems.
status_json() {
	local out=() line
	if ! state_load; then
		jq -n --arg prefix "$HS_PREFIX" --arg found "$(left_over)" \
			'{format: "hopscope-testbed/1", prefix: $prefix, up: false,
			  left_over: ($found | split(" ") | map(select(. != "")))}'
		return 1
	fi
	read -r -a SHIELD_CPUS <<<"${HS_TB_SHIELD_CPUS-$HS_TB_CPU_ROUTER}"
	CPU_SENDER=$HS_TB_CPU_SENDER CPU_ROUTER=$HS_TB_CPU_ROUTER
	CPU_RECEIVER=$HS_TB_CPU_RECEIVER NCPU=$(getconf _NPROCESSORS_ONLN)
	while IFS= read -r line; do
		[ -z "$line" ] || out+=("$line")
	done < <(problems || true)
	# ROUTER_NETNS_INODES: state from before --routers has the one router's only
	layout_json true "${HS_TB_ROUTER_NETNS_INODES-$HS_TB_ROUTER_NETNS_INODE}" "$HS_TB_NAPI_PIDS" \
		${out[@]+"${out[@]}"}
	[ "${#out[@]}" = 0 ]
}

cmd_shield() {
	[ $# = 0 ] || hs_die "shield takes no options"
	state_load || hs_die "the testbed is not up: run ${0##*/} up --shield router"
	[ "$HS_TB_SHIELD" = 1 ] || hs_die "the testbed is up without --shield"
	SHIELD=1
	read -r -a SHIELD_CPUS <<<"$HS_TB_SHIELD_CPUS"
	CPU_ROUTER=$HS_TB_CPU_ROUTER
	set_shield
}

# ---- cpu, sink ----------------------------------------------------------------

cmd_cpu() {
	[ $# = 1 ] || hs_die "usage: ${0##*/} cpu sender|router|receiver"
	hs_state_load || hs_die "the testbed is not up: run ${0##*/} up"
	case $1 in
	sender) echo "$HS_TB_CPU_SENDER" ;;
	router) echo "$HS_TB_CPU_ROUTER" ;;
	receiver) echo "$HS_TB_CPU_RECEIVER" ;;
	*) hs_die "cpu '$1': expected sender, router or receiver" ;;
	esac
}

cmd_sink() {
	local prog map
	[ $# = 0 ] || hs_die "sink takes no options"
	hs_state_load || hs_die "the testbed is not up: run ${0##*/} up --sink"
	[ "$HS_TB_SINK" = 1 ] || hs_die "the testbed is up without --sink"
	prog=$(ip -n "$HS_TB_NS_RECEIVER" -j -d link show dev "$RX_IF" | jq -r '.[0].xdp.prog.id // empty')
	[ -n "$prog" ] || hs_die "no XDP program on $RX_IF in $HS_TB_NS_RECEIVER"
	map=$(bpftool -j prog show id "$prog" | jq -r '.map_ids[0] // empty')
	[ -n "$map" ] || hs_die "the sink program $prog has no map"
	bpftool -j map dump id "$map" |
		jq -r '.[0].formatted.values | "packets \(map(.value.packets) | add) bytes \(map(.value.bytes) | add)"'
}

main() {
	local cmd=${1:-}
	[ $# = 0 ] || shift
	check_prefix
	case $cmd in
	up | down | relink | shield)
		[ "$(id -u)" = 0 ] || hs_die "$cmd: must run as root"
		mkdir -p "$HS_STATE_DIR"
		# one up or down at a time on this machine (napi mode spots its
		# threads by what appeared; state files must not be half-written)
		exec 9<"$HS_STATE_DIR"
		flock 9
		hs_cleanup_on_exit
		"cmd_$cmd" "$@"
		;;
	status | cpu | sink | layout) "cmd_$cmd" "$@" ;;
	help | -h | --help) usage ;;
	'') usage >&2; exit 1 ;;
	*) hs_die "unknown command '$cmd' (see ${0##*/} help)" ;;
	esac
}

main "$@"
