/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one contract between the BPF programs, the kernel module and userspace:
 * the per-packet record, the stages, statuses, flags and counters, the limits
 * and the packet key. Plain fixed-width types only, so the same bytes mean the
 * same thing in BPF, in the kernel, in C userspace and in the Python loader
 * (tests/python/test_format.py checks the Python mirror against the offsets a
 * C program compiled against this header prints).
 *
 * Form. Tools without a C compiler read the facts of this header and of
 * hopscope_file.h (the Python package's constants are generated from them),
 * so every fact below is in one of three line forms:
 *   - a constant: one line `#define HS_NAME VALUE` with VALUE a decimal or
 *     0x-hex integer (an optional `u` suffix) or a "double-quoted string",
 *     optionally followed by a comment;
 *   - a named list: an X-macro `#define HS_<LIST>_LIST(X) \` followed by one
 *     entry per line, `X(HS_NAME, VALUE, "name") \`, VALUE as above, a comment
 *     allowed before the backslash, the last entry without it. The C enum, the
 *     name table and any other language's table are all made from the list;
 *     lists of consecutive values (stages, statuses, counters) are written in
 *     value order without gaps, which the static assertions below check;
 *   - an enum member with its value, alone on its line: `HS_NAME = VALUE,`
 *     (hopscope_file.h's chunk types).
 * Everything else (macros with arguments, expressions, structs, functions,
 * enum members without a value) is C only, and a reader skips it.
 */
#ifndef HOPSCOPE_H
#define HOPSCOPE_H

#if defined(__KERNEL__) || defined(__VMLINUX_H__)
/* kernel and BPF builds get __u8..__u64 from their own headers */
#else
#include <linux/types.h>
#endif

/* hopscope's release: the recorder, the module and the Python package */
#define HS_VERSION "0.1.0"
/* version of this contract (record layout; numbering of stages, statuses,
 * flags and counters): the module prints it when it loads */
#define HS_VERSION_MAJOR 1
#define HS_VERSION_MINOR 1

/* interfaces one recording traces, inputs and outputs together (one that is
 * both counts once); BPF and the module hold this many per direction */
#define HS_MAX_IFACES 16

/* --gro keep (ebpf/gro.bpf.h): the t1 of this many (a power of 2) batched
 * packets kept per CPU, far more than wait in GRO at once */
#define HS_GRO_LOG_SHIFT 12

/* X-macro helpers: the C side of every list below */
#define HS_X_ENUM(id, val, name) id,
#define HS_X_ENUM_VALUE(id, val, name) id = val,
#define HS_X_NAME(id, val, name) [val] = name,
#define HS_X_AT_PLACE(id, val, name) _Static_assert(id == val, #id " is out of place in its list");

/*
 * Stages in the order a forwarded packet meets them. Index into
 * hs_record.t[]. T1..T4 are the paper's four instants; the others are optional
 * and split a queue into its parts. The name is the record file's and the
 * DataFrame column's; `--stages` also takes it without "t_" (tcin, fwd, tceg).
 */
#define HS_STAGE_LIST(X) \
	X(HS_T0, 0, "t0")	/* arrival: netif_rx (enqueue to the backlog) or NIC hw stamp */ \
	X(HS_T1, 1, "t1")	/* XDP at the input interface */ \
	X(HS_TCIN, 2, "t_tcin")	/* tc ingress (skb built) */ \
	X(HS_T2, 3, "t2")	/* netfilter PRE_ROUTING, earliest priority: routing starts */ \
	X(HS_FWD, 4, "t_fwd")	/* netfilter FORWARD */ \
	X(HS_T3, 5, "t3")	/* netfilter POST_ROUTING, latest priority: routing done */ \
	X(HS_TCEG, 6, "t_tceg")	/* tc egress: just before the qdisc enqueue */ \
	X(HS_T4, 7, "t4")	/* net_dev_start_xmit: handed to the output driver */

enum hs_stage {
	HS_STAGE_LIST(HS_X_ENUM)
	HS_NSTAGES,
};
HS_STAGE_LIST(HS_X_AT_PLACE)
#define HS_STAGE_NAMES { HS_STAGE_LIST(HS_X_NAME) }

/* bit per stage: the set of enabled stages (--stages, the module's config) */
#define HS_STAGE_BIT(s) (1u << (s))
#define HS_STAGES_CORE (HS_STAGE_BIT(HS_T1) | HS_STAGE_BIT(HS_T2) | \
			HS_STAGE_BIT(HS_T3) | HS_STAGE_BIT(HS_T4))

/* hs_record.status: what became of the packet (0 is never written) */
#define HS_STATUS_LIST(X) \
	X(HS_ST_COMPLETE, 1, "complete")	/* t1..t4 seen (and enabled stages passed) */ \
	X(HS_ST_DROPPED, 2, "dropped")		/* freed with a drop reason (drop_stage) */ \
	X(HS_ST_EVICTED, 3, "evicted")		/* slot reused first: lost by the tracer */ \
	X(HS_ST_COLLISION, 4, "collision")	/* one key twice in flight where it must match */ \
	X(HS_ST_INFLIGHT, 5, "inflight")	/* inside at the stop (unless HS_F_T4_UNSEEN) */ \
	X(HS_ST_OTHER_OUT, 6, "other_out")	/* forwarded out of an untraced interface */ \
	X(HS_ST_PARTIAL, 7, "partial")		/* out of a traced interface with t2 or t3 alone */

enum hs_status {
	HS_ST_NONE,
	HS_STATUS_LIST(HS_X_ENUM)
	HS_ST_END,		/* one past the last status */
};
HS_STATUS_LIST(HS_X_AT_PLACE)
#define HS_STATUS_NAMES { HS_STATUS_LIST(HS_X_NAME) }

/* hs_record.flags, bit by bit; the record file's header lists them by name */
#define HS_FLAG_LIST(X) \
	X(HS_F_IPV6, 0x01, "ipv6") \
	X(HS_F_FRAGMENT, 0x02, "fragment")	/* IP fragment: no ports or payload in the key */ \
	X(HS_F_IPOPTS, 0x04, "ip_options")	/* IPv4 options present */ \
	X(HS_F_IPV6_EXT, 0x08, "ipv6_ext")	/* IPv6 extension headers walked */ \
	X(HS_F_VLAN, 0x10, "vlan")		/* arrived with an 802.1Q/802.1ad tag */ \
	X(HS_F_T0_COLL, 0x20, "t0_collision")	/* t0 unknown: its key was in flight twice */ \
	X(HS_F_TRUNC, 0x40, "truncated")	/* headers shorter than they claim */ \
	X(HS_F_T4_UNSEEN, 0x80, "t4_unseen")	/* inflight, but its flow overtook it: t4 missed */

enum hs_flag {
	HS_FLAG_LIST(HS_X_ENUM_VALUE)
};

/*
 * hs_record.path: the way a packet took through the router, and so the
 * stages it can have (docs/recording.md, "Forwarding paths"). The kernel
 * tells stack from no_netfilter by the stamps at t4; the recorder names a
 * no_netfilter packet's fast path, and a stack packet's detour, from what it
 * found on the packet's input at start (hs_iface.fast): only when one
 * mechanism there explains it. Only stack packets have the paper's d_iq,
 * d_p and d_oq; the others have t1 .. t4 (and t_tcin, t_tceg when on).
 */
#define HS_PATH_LIST(X) \
	X(HS_PATH_STACK, 0, "stack")		/* PRE_ROUTING .. POST_ROUTING: the IP stack */ \
	X(HS_PATH_NO_NF, 1, "no_netfilter")	/* out with neither t2 nor t3: a fast path, which unknown */ \
	X(HS_PATH_FLOWTABLE, 2, "flowtable")	/* nftables flowtable, at the input's netdev ingress */ \
	X(HS_PATH_TC_REDIRECT, 3, "tc_redirect")	/* a tc ingress program's redirect (bpf_redirect_neigh) */ \
	X(HS_PATH_BRIDGE_NF, 4, "bridge_netfilter")	/* in by a bridge port whose bridge calls ip(6)tables: t2 inside the bridge */ \
	X(HS_PATH_IFB, 5, "ifb")		/* in through an ifb (ingress shaping): d_iq holds the ifb's queue */ \
	X(HS_PATH_TUNNEL, 6, "tunnel")		/* in or out by a tunnel (tun_in_ns, tun_out_ns): d_iq holds the decapsulation, d_oq the encapsulation and the underlay's queue */

enum hs_path {
	HS_PATH_LIST(HS_X_ENUM)
	HS_PATH_END,
};
HS_PATH_LIST(HS_X_AT_PLACE)
#define HS_PATH_NAMES { HS_PATH_LIST(HS_X_NAME) }

/*
 * One record per packet. Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns
 * and ktime_get_ns are that clock); 0 = stage not seen or not enabled.
 * 160 bytes, naturally aligned, no holes.
 */
struct hs_record {
	__u64 t[HS_NSTAGES];	/* 0   indexed by enum hs_stage */
	__u64 seq;		/* 64  packet id: hs_seq(cpu_in, per-CPU arrival count) */
	__u32 key;		/* 72  hs_key_hash of the packet's invariant bytes */
	__u32 drop_reason;	/* 76  enum skb_drop_reason, when status == DROPPED */
	__u32 in_ifindex;	/* 80 */
	__u32 out_ifindex;	/* 84 */
	__u32 flow;		/* 88  filled by the recorder: index in the file's flow table
				 *     (in the eBPF slot table: the skb last seen, hs_drop) */
	__u16 ip_len;		/* 92  IPv4 total length / IPv6 payload length + 40,
				 *     65535 when that sum does not fit */
	__u16 sport;		/* 94  host order; 0 when none (fragment, non TCP/UDP) */
	__u16 dport;		/* 96 */
	__u16 cpu_in;		/* 98  CPU at t1 */
	__u16 cpu_out;		/* 100 CPU at t4 (or at the drop) */
	__u8 tos;		/* 102 IPv4 TOS / IPv6 traffic class, whole byte (DSCP << 2 | ECN) */
	__u8 proto;		/* 103 L4 protocol (after IPv6 extension headers) */
	__u8 status;		/* 104 enum hs_status */
	__u8 drop_stage;	/* 105 enum hs_stage: last stage seen before the drop */
	__u8 flags;		/* 106 enum hs_flag bits */
	__u8 path;		/* 107 enum hs_path: the way it took through the router */
	__u32 saddr[4];		/* 108 network order; IPv4 in saddr[0] */
	__u32 daddr[4];		/* 124 */
	__u32 segs;		/* 140 a GRO-merged skb: the wire packets it holds (>= 2); 0: one
				 *     packet (the eBPF backend stops GRO on traced inputs) */
	/* after t1, ns (saturated at 2^32 - 1), 0: none; the stages of a
	 * tunnel device, which a packet may or may not pass */
	__u32 tun_in_ns;	/* 144 to the inner packet on its input tunnel device
				 *     (decapsulated; WireGuard: decrypted) */
	__u32 tun_out_ns;	/* 148 to start_xmit on its output tunnel device
				 *     (encapsulation starts) */
	__u32 t4_span_ns;	/* 152 from the first piece's hand-over (t4) to the last's */
	__u16 out_segs;		/* 156 the pieces it left as (IP fragments, GSO segments,
				 *     >= 2); 0: left whole */
	__u16 reserved;		/* 158 */
};				/* 160 */

/* a record file's record_size before the tail above (hs_record up to segs):
 * readers take those files with the tail's fields 0 */
#define HS_RECORD_SIZE_V1 144

/* hs_record.seq: the input CPU above HS_SEQ_CPU_SHIFT, that CPU's arrival
 * count below it (HS_SEQ_COUNT_MASK) */
#define HS_SEQ_CPU_SHIFT 48
#define HS_SEQ_COUNT_MASK 0xffffffffffff

static inline __u64 hs_seq(__u32 cpu, __u64 count)
{
	return (__u64)cpu << HS_SEQ_CPU_SHIFT | (count & HS_SEQ_COUNT_MASK);
}

static inline __u32 hs_seq_cpu(__u64 seq)
{
	return seq >> HS_SEQ_CPU_SHIFT;
}

/*
 * The eBPF backend's hand-over of records: per CPU a ring of 2^n records in
 * an mmapable array (the recorder maps it), and these two positions, each on
 * its own cache line. A program claims a place with a fetching add on claim
 * (a program on the same CPU may interrupt another's hand-over), fills the
 * record, and commits it last by turning its `flow` into hs_ring_token of
 * its place. The recorder reads in order while the token is there, then
 * moves read on; a program finds the ring full when claim is
 * HS_RING_SLACK places short of a lap past read (room for nested claims),
 * and counts the record lost. A committed record with seq 0 was given up
 * (its packet left by another way) and is passed over. Measured against
 * the kernel's BPF ring buffer: evaluation/measurements.md.
 */
struct hs_ring_pos {
	__u64 claim;		/* places taken by the programs */
	__u64 read_seen;	/* the programs' copy of read, taken when the ring
				 * looks full: read's line stays the recorder's */
	__u64 pad0[6];
	__u64 read;		/* places the recorder is done with */
	__u64 pad1[7];
};
#define HS_RING_SLACK 16

/* a place's commit mark: never the mark of the place a lap before, never 0 */
static inline __u32 hs_ring_token(__u64 place)
{
	return (__u32)place | 0x80000000u;
}

/*
 * What XDP leaves in the packet's metadata area (in front of the MAC header,
 * carried into the skb) so that later stages find the packet's slot without a
 * hash lookup. The last 4 bytes are padding: neigh_hh_output copies 16 bytes
 * ending at the network header, which overwrites the 2 bytes in front of the
 * MAC header on the way out.
 */
struct hs_meta {
	__u64 seq;
	__u32 magic;
	__u32 pad;
};
#define HS_META_MAGIC 0x48537031u	/* "HSp1" */
/* a packet --sample left out at t1: later stages pass it by, uncounted as a loss */
#define HS_META_UNSAMPLED 0x48537530u	/* "HSu0" */

/* Counters: a per-CPU array in BPF, summed by userspace, stored in the trailer. */
#define HS_COUNTER_LIST(X) \
	X(HS_C_XDP_PKTS, 0, "xdp_pkts")		/* frames seen by the XDP stage */ \
	X(HS_C_XDP_NONIP, 1, "xdp_nonip")	/* not IPv4/IPv6: passed untouched */ \
	X(HS_C_XDP_TRUNC, 2, "xdp_truncated")	/* truncated headers */ \
	X(HS_C_XDP_VLAN, 3, "xdp_vlan") \
	X(HS_C_XDP_FRAG, 4, "xdp_fragment") \
	X(HS_C_XDP_IPOPTS, 5, "xdp_ip_options") \
	X(HS_C_XDP_IPV6EXT, 6, "xdp_ipv6_ext") \
	X(HS_C_XDP_META_FAIL, 7, "xdp_meta_fail")	/* adjust_meta refused: not traced */ \
	X(HS_C_T0_PKTS, 8, "t0_pkts") \
	X(HS_C_T0_COLLISION, 9, "t0_collision")	/* packets flagged t0_collision: a twin of theirs was in flight */ \
	X(HS_C_T0_MAP_FULL, 10, "t0_map_full") \
	X(HS_C_T0_MISS, 11, "t0_miss")		/* XDP found no t0 for its key */ \
	X(HS_C_PRE_PKTS, 12, "pre_pkts")	/* PRE_ROUTING packets carrying our metadata */ \
	X(HS_C_PRE_NOMETA, 13, "pre_nometa")	/* PRE_ROUTING without it (local, untraced in) */ \
	X(HS_C_POST_PKTS, 14, "post_pkts") \
	X(HS_C_POST_NOMETA, 15, "post_nometa") \
	X(HS_C_OUT_PKTS, 16, "out_pkts")	/* t4 on a traced output with metadata */ \
	X(HS_C_OUT_NOMETA, 17, "out_nometa")	/* t4 on a traced output without it */ \
	X(HS_C_OPT_PKTS, 18, "opt_pkts")	/* optional stages that found their slot */ \
	X(HS_C_STALE, 19, "stale")		/* metadata whose slot was reused or emitted */ \
	X(HS_C_LOCAL, 20, "local")		/* to the router itself (LOCAL_IN): no record */ \
	X(HS_C_COMPLETE, 21, "complete") \
	X(HS_C_DROPPED, 22, "dropped") \
	X(HS_C_EVICTED, 23, "evicted") \
	X(HS_C_OTHER_OUT, 24, "other_out") \
	X(HS_C_RACE, 25, "race")		/* evicted while it left: one record (evicted) */ \
	X(HS_C_RB_FAIL, 26, "rb_fail")		/* ring buffer full: record lost */ \
	X(HS_C_RB_FAIL_COMPLETE, 27, "rb_fail_complete") \
	X(HS_C_PROG_MISSES, 28, "prog_misses")	/* runs the kernel skipped (prog info) */ \
	X(HS_C_OUT_SEGS, 29, "out_segs")	/* t4 of a merged packet's later segments: in its record's segs */ \
	X(HS_C_UNSAMPLED, 30, "unsampled")	/* left out by --sample at t1 (in xdp_pkts): marked, not traced */ \
	X(HS_C_PARTIAL, 31, "partial")		/* out of a traced output with t2 or t3 alone */ \
	X(HS_C_FAST, 32, "fast_path")		/* complete without t2 and t3 (in complete) */ \
	X(HS_C_OUT_PASS, 33, "out_pass")	/* start_xmit on a step to a traced output (bridge, bond, VLAN; ifb): passed by */ \
	X(HS_C_XDP_AGAIN, 34, "xdp_again")	/* back at their input's XDP (an ifb's hand-back): kept their slot (in xdp_pkts) */ \
	X(HS_C_PIECED, 35, "left_in_pieces")	/* records of packets that left as IP fragments or GSO segments (out_segs >= 2) */ \
	X(HS_C_GRO_JOINED, 36, "gro_joined")	/* --gro keep: packets that joined a batch's slot at t1 (in xdp_pkts; in its record's segs) */ \
	X(HS_C_GRO_SPLIT, 37, "gro_split")	/* --gro keep: records opened at t2 for a later part of a batch GRO merged in parts */ \
	X(HS_C_GRO_LOST, 38, "gro_lost")	/* --gro keep: later parts of a split batch no record could be opened for */ \
	X(HS_C_NAT, 39, "nat")			/* t3 found the packet's tuple changed by NAT (in post_pkts) */ \
	X(HS_C_NAT_NEW, 40, "nat_new")		/* translations filed: a tuple's first packet NAT changed */ \
	X(HS_C_NAT_CHANGED, 41, "nat_changed")	/* packets NAT changed otherwise than their tuple's filed translation */ \
	X(HS_C_NAT_FULL, 42, "nat_full")	/* packets NAT changed whose translation found the map full: not filed */ \
	X(HS_C_XDP_L3, 43, "xdp_l3")		/* frames of an input without a MAC header (GRE, IPIP, WireGuard, tun): read from their IP header (in xdp_pkts) */ \
	X(HS_C_TUN_OUT, 44, "tun_out")		/* start_xmit on an output tunnel device: followed through the encapsulation, no record there */ \
	X(HS_C_TUN_OUTER, 45, "tun_outer")	/* POST_ROUTING of such a packet's outer packet: t3 stays the inner packet's */ \
	X(HS_C_TUN_FOLLOW, 46, "tun_follow")	/* outer packets of a tunnel at LOCAL_IN: followed into the tunnel, not retired */ \
	X(HS_C_TUN_IN, 47, "tun_in")		/* followed outer packets taken up as inner packets on their tunnel device */ \
	X(HS_C_TUN_END, 48, "tun_end")		/* followed outer packets the router consumed (a handshake, a keepalive): in local */ \
	X(HS_C_IN_NOMETA, 49, "in_nometa")	/* POST_ROUTING without a slot, in by a traced input or a tunnel over one hopscope does not follow: forwarded unrecorded */

enum hs_counter {
	HS_COUNTER_LIST(HS_X_ENUM)
	HS_C_NCOUNTERS,
};
HS_COUNTER_LIST(HS_X_AT_PLACE)
#define HS_COUNTER_NAMES { HS_COUNTER_LIST(HS_X_NAME) }

/*
 * NAT: t3 compares the packet's addresses and ports with the ones t1 read
 * from the wire; where they differ it files the translation by the original
 * tuple (ebpf/nat.bpf.h), and the recorder writes it into the file's flow
 * table (hopscope_file.h, HS_FLOW_NAT). Ports only for TCP and UDP, as the
 * record has them; addresses for every protocol.
 */
#define HS_NAT_MAX 65536	/* translations filed at most; later ones count in nat_full */

struct hs_tuple {
	__u8 family;		/* 4 or 6 */
	__u8 proto;
	__u16 sport;		/* host order */
	__u16 dport;
	__u16 pad;
	__u32 saddr[4];		/* network order */
	__u32 daddr[4];
};

/* a filed translation: the tuple NAT made of the key's, the packets it was
 * seen on and the times a packet of the key was translated otherwise (the
 * latest such tuple then replaces `to`) */
struct hs_nat {
	struct hs_tuple to;
	__u64 packets;
	__u64 changes;
};

/*
 * Probe cost: what the probes add to the delays they measure, sampled on the
 * run itself. A stage program stamps its instant as it starts; on a sampled
 * packet it reads the clock again just before it returns, and exit - entry
 * is the time the probe spends inside the delay that begins at its stamp.
 * Sampled: the packets whose per-CPU arrival count (seq's low bits) is a
 * multiple of 2^HS_COST_SAMPLE_SHIFT, the same packets at every stage; t0,
 * which has no seq yet, samples as often at random. So that a sampled packet
 * is like the others, the eBPF stages t1 .. t_tceg only note exit - entry
 * beside the packet's slot; t4 adds the notes to these sums after its own
 * stamp, where they lie in no delay (ebpf/hopscope.bpf.h, cost_due). t0, t4
 * and the kernel module add their sample where they take it.
 * One struct hs_cost per stage in a per-CPU array, summed by userspace into
 * the COUNTERS and END JSON ("probe_cost", docs/record-format.md).
 * Histogram: HS_COST_FINE buckets of HS_COST_BUCKET_NS, then buckets of
 * HS_COST_WIDE_NS up to HS_COST_BUCKETS (hs_cost_bucket): 16 ns steps where
 * the warm probes lie, and up to 9.2 us for a cold or interrupted one, so
 * that low quantiles are measured rather than cut off.
 */
#define HS_COST_SAMPLE_SHIFT 6
#define HS_COST_BUCKET_NS 16	/* fine buckets' width: 0 .. 1023 ns */
#define HS_COST_FINE 64		/* fine buckets */
#define HS_COST_WIDE_NS 128	/* the buckets after them: 1024 .. 9215 ns */
#define HS_COST_BUCKETS 128	/* longer ones count in over */
#define HS_COST_SQ_CAP 65535	/* sum_sq adds min(cost, this)^2: never overflows */

/* d's histogram bucket; HS_COST_BUCKETS or more: over */
static inline __u64 hs_cost_bucket(__u64 d)
{
	const __u64 fine = HS_COST_FINE * HS_COST_BUCKET_NS;

	return d < fine ? d / HS_COST_BUCKET_NS : HS_COST_FINE + (d - fine) / HS_COST_WIDE_NS;
}

struct hs_cost {
	__u64 n;		/* samples */
	__u64 sum_ns;
	__u64 sum_sq;		/* of min(cost, HS_COST_SQ_CAP) squared */
	__u64 max_ns;
	__u64 over;		/* samples beyond the last bucket */
	__u64 hist[HS_COST_BUCKETS];	/* [i]: the costs hs_cost_bucket puts at i */
};

/*
 * Stage histograms (record --histograms, --aggregate): per output interface
 * and TOS byte, a histogram of each delay over the complete packets, filled
 * at t4 with no record needed. Buckets are Prometheus native-histogram
 * buckets of schema HS_HIST_SCHEMA: bucket i holds the delays d (ns) with
 * 2^((i-1)/8) < d <= 2^(i/8), so a classic `le` bound 2^(i/8) is a sum of
 * whole buckets. 0 counts apart (zero), delays over 2^HS_HIST_MAX_POW2 ns
 * (~17 s) in overflow, a later stamp before an earlier one (no clock does
 * that; counted, never wrapped) in negative. Counts and sum_ns are exact.
 */
#define HS_HIST_SCHEMA 3
#define HS_HIST_MAX_POW2 34
#define HS_HIST_BUCKETS 273	/* i = 0 .. HS_HIST_MAX_POW2 << HS_HIST_SCHEMA */
#define HS_HIST_KEYS 64		/* (TOS, output) series; packets of others are counted (nokey) */
#define HS_DROP_KEYS 256	/* (last stage, drop reason) pairs counted beside them */
/* cfg_hist: histograms beside the records, or instead of them */
#define HS_HIST_RECORDS 1
#define HS_HIST_AGGREGATE 2
/* record --floor (cfg_floor): every program returns at once (EMPTY), or
 * reads the clock into a per-CPU word first (CLOCK): at the four stages that
 * is what any tracer that stamps them pays at least (evaluation/bench/overhead.py) */
#define HS_FLOOR_EMPTY 1
#define HS_FLOOR_CLOCK 2

/* the delays histogrammed: later stage minus earlier (d_rxq with t0 on,
 * d_qdisc with tceg on); the names are the DataFrame's columns */
#define HS_DELAY_LIST(X) \
	X(HS_D_IQ, 0, "d_iq")		/* t2 - t1 */ \
	X(HS_D_P, 1, "d_p")		/* t3 - t2 */ \
	X(HS_D_OQ, 2, "d_oq")		/* t4 - t3 */ \
	X(HS_D_TRANSIT, 3, "transit")	/* t4 - t1 */ \
	X(HS_D_RXQ, 4, "d_rxq")		/* t1 - t0 */ \
	X(HS_D_QDISC, 5, "d_qdisc")	/* t4 - t_tceg */

enum hs_delay {
	HS_DELAY_LIST(HS_X_ENUM)
	HS_NDELAYS,
};
HS_DELAY_LIST(HS_X_AT_PLACE)
#define HS_DELAY_NAMES { HS_DELAY_LIST(HS_X_NAME) }
/* each delay's two stages, in HS_DELAY_LIST's order: later - earlier */
#define HS_DELAY_LATER { HS_T2, HS_T3, HS_T4, HS_T4, HS_T1, HS_T4 }
#define HS_DELAY_EARLIER { HS_T1, HS_T2, HS_T3, HS_T1, HS_T0, HS_TCEG }

/* no count of its own: userspace adds up the parts, so that a snapshot read
 * while a packet is being added is still a whole histogram */
struct hs_hist {
	__u64 sum_ns;		/* of the delays in zero, buckets and overflow */
	__u64 zero;
	__u64 negative;
	__u64 overflow;
	__u64 bucket[HS_HIST_BUCKETS];
};

/* one series: what a per-CPU array entry holds, all delays in one lookup */
struct hs_hist_set {
	struct hs_hist d[HS_NDELAYS];
};

/* the series key in the map that hands out HS_HIST_KEYS indices: the output
 * by its place among the --out interfaces, not its ifindex, so that an
 * interface deleted and re-created (a new ifindex) keeps its series; + 1:
 * never 0, the key of an empty entry in the programs' cache of keys; the
 * path (enum hs_path) above the TOS byte: fast paths never mix with the stack */
static inline __u64 hs_hist_key(__u32 out_pos, __u8 tos, __u8 path)
{
	return (__u64)path << 40 | (__u64)tos << 32 | (out_pos + 1);
}

/*
 * Flight recorder (record --aggregate --flight N): each record the kernel
 * would hand over also goes, with the time it was kept, into a per-CPU ring
 * of N entries, overwritten, never drained; a trigger (a delay above its
 * threshold at t4, a drop of a chosen reason) is noted for the recorder,
 * which freezes the rings, copies them out and writes the last N records to
 * a record file of their own (a flight dump, docs/record-format.md).
 */
#define HS_FLIGHT_REASONS 8		/* drop reasons that trigger, at most */
#define HS_FLIGHT_ANY_DROP 0xffffffff	/* in the reasons: any drop triggers */
#define HS_FLIGHT_WHAT_DROP 64		/* hs_flight_trigger.what of a drop; delays: enum hs_delay */

struct hs_flight_entry {
	struct hs_record r;	/* seq 0: empty, or its packet's release was lost to a race */
	__u64 at;		/* when it was kept (CLOCK_MONOTONIC): orders the CPUs' rings */
};

/* per CPU: entries kept (the next one's place is pos % N), triggers, and
 * records not kept because the recorder was copying the rings */
struct hs_flight_cpu {
	__u64 pos;
	__u64 triggers;
	__u64 not_kept;
};

/* the first trigger since the recorder last re-armed; ns written last, 0: none */
struct hs_flight_trigger {
	__u64 ns;		/* when it fired */
	__u64 what;		/* enum hs_delay, or HS_FLIGHT_WHAT_DROP */
	__u64 value;		/* the delay (ns), or the drop reason */
	__u64 seq;		/* the packet that fired it */
};

/*
 * The bucket of d > 0 (HS_HIST_BUCKETS or more: overflow), exactly, in
 * integers: e = the highest set bit, m = d shifted so that bit is bit 63,
 * d = m * 2^(e-63). d is in bucket 8e when m is 2^63 (d a power of 2), else
 * 8e + k for the least k with m <= 2^(63+k/8); that bound is irrational for
 * k = 1..7, so comparing the integer m with its floor is exact. The floors
 * are the integer 8th roots of 2^(504+k) (tests/bpf checks them). Three
 * compares for k, six for e: no loop, no float, no table.
 */
#define HS_HIST_T1 0x8b95c1e3ea8bd6e6ull
#define HS_HIST_T2 0x9837f0518db8a96full
#define HS_HIST_T3 0xa5fed6a9b15138eaull
#define HS_HIST_T4 0xb504f333f9de6484ull
#define HS_HIST_T5 0xc5672a115506daddull
#define HS_HIST_T6 0xd744fccad69d6af4ull
#define HS_HIST_T7 0xeac0c6e7dd24392eull

static inline __u32 hs_hist_bucket(__u64 d)
{
	__u32 e = 0, k;
	__u64 m = d;

	if (m >> 32) { e += 32; m >>= 32; }
	if (m >> 16) { e += 16; m >>= 16; }
	if (m >> 8) { e += 8; m >>= 8; }
	if (m >> 4) { e += 4; m >>= 4; }
	if (m >> 2) { e += 2; m >>= 2; }
	if (m >> 1) { e += 1; }
	m = d << (63 - e);
	if (m == 1ull << 63)
		return e << HS_HIST_SCHEMA;
	if (m > HS_HIST_T4)
		k = m > HS_HIST_T6 ? (m > HS_HIST_T7 ? 8 : 7) : (m > HS_HIST_T5 ? 6 : 5);
	else
		k = m > HS_HIST_T2 ? (m > HS_HIST_T3 ? 4 : 3) : (m > HS_HIST_T1 ? 2 : 1);
	return (e << HS_HIST_SCHEMA) + k;
}

/*
 * The packet key: a hash of the bytes a router never changes, computed the
 * same way wherever a stage has no skb to key on. The caller fills this
 * struct (zeroed first) from the packet; hs_key_hash mixes it. Eight 64-bit
 * words (two 32-bit fields each, the first the low half) and the meta word.
 */
struct hs_key_input {
	__u32 saddr[4];
	__u32 daddr[4];
	__u32 l4[4];		/* ports, TCP seq/ack or ICMP id/seq: first 16 bytes of L4 */
	__u32 payload[4];	/* first 16 payload bytes after the L4 header, within the IP length */
	__u32 meta;		/* proto << 16 | ip_len */
};

static inline __u64 hs_rotl64(__u64 x, unsigned int r)
{
	return (x << r) | (x >> (64 - r));
}

/*
 * xxHash64's round per 64-bit word and murmur3's 64-bit finalizer, folded to
 * 32 bits: 64-bit arithmetic throughout (BPF without alu32 pays for every
 * 32-bit operation), a quarter of the multiplications murmur3's 32-bit
 * rounds took; it cost XDP ~35 ns a packet (evaluation/measurements.md).
 */
/* which hs_key_hash a file's keys are (its header's key_hash): keys of two
 * files compare only when it is the same; 1 was murmur3's 32-bit rounds */
#define HS_KEY_HASH 2

static inline __u32 hs_key_hash(const struct hs_key_input *k)
{
	/* the fields as 32-bit words, read as they were written: a 64-bit
	 * pointer to them breaks C's aliasing rules, and the compiler then read
	 * the words before the caller's stores (the recorder's flow table gave
	 * one flow two ids) */
	const __u32 *w = (const __u32 *)k;
	__u64 h = 0x27d4eb2f165667c5ull ^ k->meta;
	unsigned int i;

	for (i = 0; i < 8; i++) {
		__u64 v = (__u64)w[2 * i] | (__u64)w[2 * i + 1] << 32;

		h ^= v * 0xc2b2ae3d27d4eb4full;
		h = hs_rotl64(h, 31) * 0x9e3779b185ebca87ull;
	}
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return (__u32)(h ^ (h >> 32));
}

#endif /* HOPSCOPE_H */
