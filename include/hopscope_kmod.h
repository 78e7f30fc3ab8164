/* SPDX-License-Identifier: (GPL-2.0 WITH Linux-syscall-note) OR BSD-2-Clause */
/*
 * The ioctl interface of the kernel module backend (/dev/hopscope).
 *
 * One recording per open file, one open file at a time, CAP_NET_ADMIN only:
 *   open -> HS_IOC_CONFIGURE -> HS_IOC_START -> read()... -> HS_IOC_STOP
 *   -> read() until it returns 0 -> HS_IOC_COUNTERS, HS_IOC_COST -> close.
 * read() returns whole struct hs_record (include/hopscope.h), never part of
 * one: the buffer must hold at least one. poll() says POLLIN when records are
 * waiting. After HS_IOC_STOP, read() first drains the queue, then hands over
 * every packet still in flight (status HS_ST_INFLIGHT), then returns 0.
 * Closing the file stops the recording and frees everything.
 */
#ifndef HOPSCOPE_KMOD_H
#define HOPSCOPE_KMOD_H

#include <linux/ioctl.h>
#include <linux/types.h>
#include "hopscope.h"

#define HS_KMOD_DEVICE		"/dev/hopscope"
#define HS_KMOD_ABI		9	/* 2: HS_IOC_COST; 3: out_segs, GSO followed;
					 * 4: HS_KMOD_F_FLOOR, which an older module
					 * refuses as a bad config, not as its ABI;
					 * 5: the unsampled counter (HS_IOC_COUNTERS
					 * grew; the module never counts it);
					 * 6: the probe cost's wider histogram;
					 * 7: paths (partial, fast_path, out_pass);
					 * 8: the record's 160 bytes (tunnels, pieces);
					 * more counters (nat, pieces, GRO: the module
					 * counts none of them);
					 * 9: the tunnels' counters (HS_IOC_COUNTERS
					 * grew; the module follows no tunnel) */
#define HS_KMOD_MAX_SLOTS	(1u << 18)	/* all CPUs together: memory stays bounded */
#define HS_KMOD_MAX_RING	(1u << 19)	/* records */

/* stages the module can stamp (T1 is the netif_receive_skb tracepoint) */
#define HS_KMOD_STAGES (HS_STAGE_BIT(HS_T0) | HS_STAGE_BIT(HS_T1) | HS_STAGE_BIT(HS_T2) | \
			HS_STAGE_BIT(HS_FWD) | HS_STAGE_BIT(HS_T3) | HS_STAGE_BIT(HS_TCEG) | \
			HS_STAGE_BIT(HS_T4))

/* hs_kmod_config.flags */
#define HS_KMOD_F_DROPS		0x1	/* record kernel drops (skb:kfree_skb) */
#define HS_KMOD_F_FLOOR		0x2	/* every probe and hook returns at once: what
					 * the hooks alone cost, nothing recorded */

struct hs_kmod_config {
	__u32 abi;		/* HS_KMOD_ABI */
	__s32 netns_fd;		/* router's netns (an open /run/netns/NAME), -1: the caller's */
	__u32 stages;		/* HS_STAGE_BIT mask within HS_KMOD_STAGES; T1 and T4 required */
	__u32 flags;		/* HS_KMOD_F_* */
	__u32 slots_per_cpu;	/* packets in flight per CPU, power of two; 0: module default;
				 * the table is capped at HS_KMOD_MAX_SLOTS (see info.slots) */
	__u32 ring_records;	/* records queued for read(), power of two, at most
				 * HS_KMOD_MAX_RING; 0: module default */
	__u32 n_in;		/* input interfaces (ifindex in that netns) */
	__u32 n_out;		/* output interfaces */
	__u32 in_ifindex[HS_MAX_IFACES];
	__u32 out_ifindex[HS_MAX_IFACES];
};

struct hs_kmod_info {
	__u32 abi;		/* HS_KMOD_ABI of the loaded module */
	__u32 stages;		/* stages this kernel offers (HS_KMOD_STAGES less missing tracepoints) */
	__u32 nr_cpus;		/* possible CPUs: slots_per_cpu is multiplied by this */
	__u32 slots;		/* slot table size of the configured recording (0 before) */
	__u32 ring_records;	/* record queue size of the configured recording (0 before) */
	__s32 prio_pre;		/* netfilter priorities used at PRE_ROUTING / POST_ROUTING */
	__s32 prio_post;
	__u32 pad;
	__u64 netns_inum;	/* inode of the configured netns (0 before) */
};

struct hs_kmod_counters {
	__u64 c[HS_C_NCOUNTERS];	/* enum hs_counter, summed over CPUs */
};

/* the probes' own cost by stage (struct hs_cost in hopscope.h), summed over
 * CPUs, max_ns the largest; sampled on the eBPF backend's rule */
struct hs_kmod_cost {
	struct hs_cost c[HS_NSTAGES];
};

#define HS_KMOD_IOC_MAGIC	'h'
#define HS_IOC_INFO		_IOR(HS_KMOD_IOC_MAGIC, 1, struct hs_kmod_info)
#define HS_IOC_CONFIGURE	_IOW(HS_KMOD_IOC_MAGIC, 2, struct hs_kmod_config)
#define HS_IOC_START		_IO(HS_KMOD_IOC_MAGIC, 3)
#define HS_IOC_STOP		_IO(HS_KMOD_IOC_MAGIC, 4)
#define HS_IOC_COUNTERS		_IOR(HS_KMOD_IOC_MAGIC, 5, struct hs_kmod_counters)
#define HS_IOC_COST		_IOR(HS_KMOD_IOC_MAGIC, 6, struct hs_kmod_cost)

#endif /* HOPSCOPE_KMOD_H */
