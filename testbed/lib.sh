# shellcheck shell=bash
# Helpers shared by testbed.sh and the test and benchmark scripts that drive a
# testbed. Source it from bash; it defines functions and variables only:
#   . testbed/lib.sh
#   hs_cleanup_on_exit
#   hs_state_load || hs_die "testbed not up: run testbed/testbed.sh up"
#   hs_in "$HS_TB_NS_RECEIVER" iperf3 -s -1 & hs_cleanup_push kill $!
#   hs_wait_for 5 hs_in "$HS_TB_NS_SENDER1" ping -c1 -W1 "$HS_TB_RX_ADDR4"
# Several testbeds coexist when each has its own HS_PREFIX (e.g. hst1-).

HS_PREFIX=${HS_PREFIX:-}
HS_STATE_DIR=${HS_STATE_DIR:-/run/hopscope}
HS_CLEANUP=()

hs_die() {
	echo "${0##*/}: $*" >&2
	exit 1
}

# The namespace that plays ROLE (sender1, sender2, router or r1 .. rN on a
# chain, receiver) here.
hs_ns() {
	printf '%s%s\n' "$HS_PREFIX" "$1"
}

hs_ns_exists() {
	[ -e "/run/netns/$1" ]
}

# hs_in NS CMD...: run CMD in network namespace NS. nsenter keeps the
# caller's mounts, so bpffs and tracefs stay where they were (ip netns exec
# would remount /sys and hide /sys/fs/bpf).
hs_in() {
	local ns=$1
	shift
	nsenter --net="/run/netns/$ns" -- "$@"
}

# hs_in_sys NS CMD...: like hs_in, but /sys shows NS's own devices, which
# /sys/class/net/IF/... (rps_cpus, threaded) needs.
hs_in_sys() {
	local ns=$1
	shift
	ip netns exec "$ns" "$@"
}

# hs_wait_for SECONDS CMD...: run CMD every 0.1 s until it succeeds; returns
# non-zero if it has not succeeded within SECONDS (whole seconds).
hs_wait_for() {
	local deadline=$((SECONDS + $1))
	shift
	until "$@" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# hs_cleanup_push CMD...: remember CMD; hs_cleanup runs the list newest first.
hs_cleanup_push() {
	HS_CLEANUP+=("$(printf '%q ' "$@")")
}

# Runs and empties the cleanup list; every step runs even if one fails, and
# each failure is reported.
hs_cleanup() {
	local i rc=0
	for ((i = ${#HS_CLEANUP[@]} - 1; i >= 0; i--)); do
		eval "${HS_CLEANUP[i]}" || {
			echo "${0##*/}: cleanup step failed: ${HS_CLEANUP[i]}" >&2
			rc=1
		}
	done
	HS_CLEANUP=()
	return "$rc"
}

# Forget the list without running it (the work it would undo is to stay).
hs_cleanup_clear() {
	HS_CLEANUP=()
}

# Run the cleanup list when the script exits, also on a signal or a closed pipe.
hs_cleanup_on_exit() {
	trap 'hs_cleanup' EXIT
	trap 'exit 129' HUP
	trap 'exit 130' INT
	trap 'exit 141' PIPE
	trap 'exit 143' TERM
}

# The state file that testbed.sh up writes for this HS_PREFIX.
hs_state_file() {
	printf '%s/testbed-%s.env\n' "$HS_STATE_DIR" "$HS_PREFIX"
}

# Load the HS_TB_* variables of this prefix's testbed (names, addresses,
# CPUs, options; see testbed/README.md). Fails if it is not up.
hs_state_load() {
	local f
	f=$(hs_state_file)
	[ -r "$f" ] || return 1
	# shellcheck source=/dev/null
	. "$f"
}
