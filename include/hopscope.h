/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one contract between the BPF programs, the kernel module and userspace:
 * the per-packet record, the stages, the counters and the packet key.
 * Plain fixed-width types only, so the same bytes mean the same thing in BPF,
 * in the kernel, in C userspace and in the Python loader (hopscope/format.py
 * mirrors this layout; tests/python/test_format.py checks it against the
 * offsets that `build/hopscope layout` prints from this header).
 */
#ifndef HOPSCOPE_H
#define HOPSCOPE_H

#if defined(__KERNEL__) || defined(__VMLINUX_H__)
/* kernel and BPF builds get __u8..__u64 from their own headers */
#else
#include <linux/types.h>
#endif

#define HS_VERSION_MAJOR 1
#define HS_VERSION_MINOR 0

/*
 * Stages in the order a forwarded packet meets them. Index into
 * hs_record.t[]. T1..T4 are the paper's four instants; the others are optional
 * and split a queue into its parts.
 */
enum hs_stage {
	HS_T0 = 0,	/* arrival: netif_rx (enqueue to the backlog) or NIC hw stamp */
	HS_T1,		/* XDP at the input interface */
	HS_TCIN,	/* tc ingress (skb built) */
	HS_T2,		/* netfilter PRE_ROUTING, earliest priority: routing starts */
	HS_FWD,		/* netfilter FORWARD */
	HS_T3,		/* netfilter POST_ROUTING, latest priority: routing done */
	HS_TCEG,	/* tc egress: just before the qdisc enqueue */
	HS_T4,		/* net_dev_start_xmit: handed to the output driver */
	HS_NSTAGES,
};

/* bit per stage, for hs_record.stages and the --stages option */
#define HS_STAGE_BIT(s) (1u << (s))
#define HS_STAGES_CORE (HS_STAGE_BIT(HS_T1) | HS_STAGE_BIT(HS_T2) | \
			HS_STAGE_BIT(HS_T3) | HS_STAGE_BIT(HS_T4))

enum hs_status {
	HS_ST_COMPLETE = 1,	/* seen at t1..t4 (and every enabled optional stage it passed) */
	HS_ST_DROPPED,		/* freed by the kernel with a drop reason; drop_stage = last stage seen */
	HS_ST_EVICTED,		/* its slot was reused before it completed: lost by the tracer */
	HS_ST_COLLISION,	/* two packets in flight with one key where a key match was needed */
	HS_ST_INFLIGHT,		/* still inside the router when the recording stopped */
	HS_ST_OTHER_OUT,	/* forwarded, but out of an interface that is not traced */
};

/* hs_record.flags */
#define HS_F_IPV6	0x01
#define HS_F_FRAGMENT	0x02	/* an IP fragment: ports and payload not in the key */
#define HS_F_IPOPTS	0x04	/* IPv4 options present */
#define HS_F_IPV6_EXT	0x08	/* IPv6 extension headers walked */
#define HS_F_VLAN	0x10	/* arrived with an 802.1Q/802.1ad tag */
#define HS_F_T0_COLL	0x20	/* t0 unknown: its key was in flight twice */
#define HS_F_TRUNC	0x40	/* headers shorter than they claim: key from what was there */

/*
 * One record per packet. Times are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns
 * and ktime_get_ns are that clock); 0 = stage not seen or not enabled.
 * 144 bytes, naturally aligned, no holes.
 */
struct hs_record {
	__u64 t[HS_NSTAGES];	/* 0   indexed by enum hs_stage */
	__u64 seq;		/* 64  packet id: cpu_in << 48 | per-CPU arrival count */
	__u32 key;		/* 72  hs_key_hash of the packet's invariant bytes */
	__u32 drop_reason;	/* 76  enum skb_drop_reason, when status == DROPPED */
	__u32 in_ifindex;	/* 80 */
	__u32 out_ifindex;	/* 84 */
	__u32 flow;		/* 88  filled by the recorder: index in the file's flow table */
	__u16 ip_len;		/* 92  IPv4 total length / IPv6 payload length + 40 */
	__u16 sport;		/* 94  host order; 0 when none (fragment, non TCP/UDP) */
	__u16 dport;		/* 96 */
	__u16 cpu_in;		/* 98  CPU at t1 */
	__u16 cpu_out;		/* 100 CPU at t4 (or at the drop) */
	__u8 tos;		/* 102 IPv4 TOS / IPv6 traffic class, whole byte (DSCP << 2 | ECN) */
	__u8 proto;		/* 103 L4 protocol (after IPv6 extension headers) */
	__u8 status;		/* 104 enum hs_status */
	__u8 drop_stage;	/* 105 enum hs_stage: last stage seen before the drop */
	__u8 flags;		/* 106 HS_F_* */
	__u8 done;		/* 107 kernel-side: record emitted, slot free */
	__u32 saddr[4];		/* 108 network order; IPv4 in saddr[0] */
	__u32 daddr[4];		/* 124 */
	__u32 pad;		/* 140 keeps the size a multiple of 8 */
};				/* 144 */

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

/* Counters: a per-CPU array in BPF, summed by userspace, stored in the trailer. */
enum hs_counter {
	HS_C_XDP_PKTS = 0,	/* frames seen by the XDP stage */
	HS_C_XDP_NONIP,		/* not IPv4/IPv6: passed untouched */
	HS_C_XDP_TRUNC,		/* truncated headers */
	HS_C_XDP_VLAN,
	HS_C_XDP_FRAG,
	HS_C_XDP_IPOPTS,
	HS_C_XDP_IPV6EXT,
	HS_C_XDP_META_FAIL,	/* bpf_xdp_adjust_meta refused: packet not traced */
	HS_C_T0_PKTS,
	HS_C_T0_COLLISION,	/* t0 key already in flight */
	HS_C_T0_MAP_FULL,
	HS_C_T0_MISS,		/* XDP found no t0 for its key */
	HS_C_PRE_PKTS,		/* PRE_ROUTING packets carrying our metadata */
	HS_C_PRE_NOMETA,	/* PRE_ROUTING packets without it (local, untraced input, moved metadata) */
	HS_C_POST_PKTS,
	HS_C_POST_NOMETA,
	HS_C_OUT_PKTS,		/* t4 on a traced output with metadata */
	HS_C_OUT_NOMETA,	/* t4 on a traced output without it (router's own packets, untraced input) */
	HS_C_OPT_PKTS,		/* optional stages (tc in, forward, tc egress) that found their slot */
	HS_C_STALE,		/* metadata whose slot was reused or already emitted */
	HS_C_LOCAL,		/* delivered to the router itself (LOCAL_IN): not forwarded, no record */
	HS_C_COMPLETE,
	HS_C_DROPPED,
	HS_C_EVICTED,
	HS_C_OTHER_OUT,
	HS_C_RACE,		/* slot reused while its record was being copied: record discarded */
	HS_C_RB_FAIL,		/* ring buffer full: record lost (counted per status below) */
	HS_C_RB_FAIL_COMPLETE,
	HS_C_PROG_MISSES,	/* program runs the kernel skipped (recursion on a CPU); from prog info */
	HS_C_NCOUNTERS,
};

#define HS_COUNTER_NAMES { \
	"xdp_pkts", "xdp_nonip", "xdp_truncated", "xdp_vlan", "xdp_fragment", \
	"xdp_ip_options", "xdp_ipv6_ext", "xdp_meta_fail", \
	"t0_pkts", "t0_collision", "t0_map_full", "t0_miss", \
	"pre_pkts", "pre_nometa", "post_pkts", "post_nometa", \
	"out_pkts", "out_nometa", "opt_pkts", "stale", "local", \
	"complete", "dropped", "evicted", "other_out", "race", \
	"rb_fail", "rb_fail_complete", "prog_misses" }

#define HS_STAGE_NAMES { "t0", "t1", "t_tcin", "t2", "t_fwd", "t3", "t_tceg", "t4" }

/*
 * The packet key: a hash of the bytes a router never changes, computed the
 * same way wherever a stage has no skb to key on. The caller fills this
 * struct (zeroed first) from the packet; hs_key_hash mixes it.
 */
struct hs_key_input {
	__u32 saddr[4];
	__u32 daddr[4];
	__u32 l4[4];		/* ports, TCP seq/ack or ICMP id/seq: first 16 bytes of L4 */
	__u32 payload[4];	/* first 16 payload bytes after the L4 header, within the IP length */
	__u32 meta;		/* proto << 16 | ip_len */
};

static inline __u32 hs_mix32(__u32 h, __u32 v)
{
	/* murmur3's per-word step: cheap, no tables, same result everywhere */
	v *= 0xcc9e2d51u;
	v = (v << 15) | (v >> 17);
	v *= 0x1b873593u;
	h ^= v;
	h = (h << 13) | (h >> 19);
	return h * 5 + 0xe6546b64u;
}

static inline __u32 hs_key_hash(const struct hs_key_input *k)
{
	const __u32 *w = (const __u32 *)k;
	__u32 h = 0x9747b28cu;
	unsigned int i;

	for (i = 0; i < sizeof(*k) / 4; i++)
		h = hs_mix32(h, w[i]);
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

#endif /* HOPSCOPE_H */
