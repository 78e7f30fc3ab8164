/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * What every stage program shares: maps, load-time settings, counters, and
 * the way a stage finds its packet's slot. maps.bpf.c defines them (with
 * HS_DEFINE_MAPS), the stage objects see them as externs; bpftool links the
 * objects into one, so there is one copy of each map.
 */
#ifndef HOPSCOPE_BPF_H
#define HOPSCOPE_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "hopscope.h"

#ifdef HS_DEFINE_MAPS
#define HS_EXTERN
#define HS_ZERO = {0}
#else
#define HS_EXTERN extern
#define HS_ZERO
#endif

/* Per-packet slots: per CPU a ring of 2^cfg_slot_shift records, indexed by seq. */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct hs_record);
	__uint(max_entries, 1);		/* set by the loader: possible CPUs << shift */
} slots SEC(".maps");

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, HS_C_NCOUNTERS);
} counters SEC(".maps");

/* per-CPU arrival count: seq's low bits (hs_seq) */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);
} seqno SEC(".maps");

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 24);	/* set by the loader (--ring) */
} records SEC(".maps");

/* t0 (arrival) by packet key: no skb or metadata exists yet at XDP's side */
struct hs_arrival_key {
	__u32 key;
	__u32 ifindex;
};

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct hs_arrival_key);
	__type(value, __u64);
	__uint(max_entries, 65536);
} arrivals SEC(".maps");

/* Settings fixed at load time (rodata: the verifier prunes what is off). */
HS_EXTERN const volatile __u64 cfg_netns_inum HS_ZERO;
HS_EXTERN const volatile __u32 cfg_slot_shift HS_ZERO;
HS_EXTERN const volatile __u32 cfg_stages HS_ZERO;
HS_EXTERN const volatile __u32 cfg_in_if[HS_MAX_IFACES] HS_ZERO;
HS_EXTERN const volatile __u32 cfg_out_if[HS_MAX_IFACES] HS_ZERO;
/* force a wakeup once this much is waiting; below it the reader polls */
HS_EXTERN const volatile __u64 cfg_wakeup_bytes HS_ZERO;
/* --floor: every program returns at once (the verifier drops the rest), so a
 * run measures what the hooks alone cost, the floor no tracer there can beat */
HS_EXTERN const volatile __u32 cfg_floor HS_ZERO;

#define HS_FLOOR_EXIT(ret) do { if (cfg_floor) return (ret); } while (0)

static __always_inline void hs_count(__u32 c)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &c);

	if (v)
		(*v)++;
}

static __always_inline bool hs_stage_on(enum hs_stage s)
{
	return cfg_stages & HS_STAGE_BIT(s);
}

static __always_inline bool hs_if_in(const volatile __u32 *set, __u32 ifindex)
{
#pragma unroll
	for (int i = 0; i < HS_MAX_IFACES; i++) {
		if (!set[i])
			return false;
		if (set[i] == ifindex)
			return true;
	}
	return false;
}

static __always_inline struct hs_record *hs_slot(__u64 seq)
{
	__u32 cpu = hs_seq_cpu(seq);
	__u32 idx = (cpu << cfg_slot_shift) |
		    ((__u32)seq & ((1u << cfg_slot_shift) - 1));

	return bpf_map_lookup_elem(&slots, &idx);
}

enum hs_find { HS_FOUND, HS_NOMETA, HS_STALE };

/*
 * The slot of the packet behind skb, through the metadata XDP left in front of
 * its MAC header. meta_len must be exactly ours and the magic must match, so a
 * packet that never met our XDP program (or whose headers moved) is never
 * mistaken for one that did; a slot reused since, or already emitted, is stale.
 */
static __always_inline enum hs_find hs_find(const struct sk_buff *skb,
					    struct hs_record **rec, __u64 *seq)
{
	unsigned char *head = skb->head;
	struct skb_shared_info *shinfo = (void *)(head + skb->end);
	struct hs_meta m;
	__u8 mlen = 0;

	if (bpf_probe_read_kernel(&mlen, sizeof(mlen), &shinfo->meta_len) ||
	    mlen != sizeof(struct hs_meta))
		return HS_NOMETA;
	if (bpf_probe_read_kernel(&m, sizeof(m), head + skb->mac_header - sizeof(m)) ||
	    m.magic != HS_META_MAGIC)
		return HS_NOMETA;
	*rec = hs_slot(m.seq);
	if (!*rec || (*rec)->seq != m.seq || (*rec)->done)
		return HS_STALE;
	*seq = m.seq;
	return HS_FOUND;
}

static __always_inline __u64 hs_wakeup_flag(void)
{
	return bpf_ringbuf_query(&records, BPF_RB_AVAIL_DATA) >= cfg_wakeup_bytes ?
	       BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
}

/*
 * Hand the slot's record to userspace with the given status and free the
 * slot. The copy is checked against seq afterwards: another CPU may reuse the
 * slot meanwhile, and a torn record must never leave the kernel.
 */
static __always_inline void hs_emit(struct hs_record *rec, __u64 seq, __u8 status)
{
	struct hs_record *out;

	rec->status = status;
	out = bpf_ringbuf_reserve(&records, sizeof(*out), 0);
	if (!out) {
		rec->done = 1;
		hs_count(HS_C_RB_FAIL);
		if (status == HS_ST_COMPLETE)
			hs_count(HS_C_RB_FAIL_COMPLETE);
		return;
	}
	__builtin_memcpy(out, rec, sizeof(*out));
	if (rec->seq != seq) {
		bpf_ringbuf_discard(out, BPF_RB_NO_WAKEUP);
		hs_count(HS_C_RACE);
		return;
	}
	rec->done = 1;
	bpf_ringbuf_submit(out, hs_wakeup_flag());
}

/* An optional stage: stamp the packet's slot if it has one. */
static __always_inline void hs_stamp(const struct sk_buff *skb, enum hs_stage s, __u64 now)
{
	struct hs_record *rec;
	__u64 seq;

	if (hs_find(skb, &rec, &seq) != HS_FOUND)
		return;
	rec->t[s] = now;
	hs_count(HS_C_OPT_PKTS);
}

#endif
