/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * --gro keep: GRO merges the input's TCP segments as it would untraced.
 * Native XDP runs before GRO, and GRO merges only skbs whose XDP metadata is
 * byte for byte the same, so a per-packet seq stops all merging (a traced
 * router then did ~7x the per-packet work for TCP). Here t1 gives the packets
 * of one flow that arrive back to back on a CPU (a batch) one slot and one
 * seq: GRO merges them, and the merged skb's record counts them in segs.
 *
 * Where GRO ends merged packets is its own business (64 KB, a PSH, the end
 * of a NAPI poll): a batch may reach t2 as several skbs, in order. The first
 * keeps the batch's slot with its own segment count; each later one opens a
 * record of its own at t2 (gro_split), found by its skb address from then on
 * (by_skb), with the t1 of its first packet: t1 logs every batched packet's
 * instant per CPU (gro_t1), so no record gets another packet's arrival.
 */
#ifndef HS_GRO_BPF_H
#define HS_GRO_BPF_H

#include "hopscope.bpf.h"
#include "parse.bpf.h"	/* struct hs_pkt */

/* per CPU: the batch t1 is filling */
struct hs_gro_cpu {
	__u64 seq;	/* its slot's seq; 0: none */
	__u64 flow;	/* its flow (hs_gro_flow) */
	__u64 last;	/* its last packet's t1 */
	__u64 bytes;	/* IP bytes in it */
	__u64 n;	/* packets in it */
	__u64 pos;	/* t1's count of batched packets: the next gro_t1 place */
};

/* a batch split by GRO, waiting for its later parts at t2 (by seq) */
struct hs_gro_split {
	__u64 seq;
	__u64 next;	/* the batch's packet the next part starts with */
	__u64 n;	/* the batch's packets */
	__u64 log0;	/* gro_t1 place of its first packet */
	struct hs_record r;	/* the first part at its t2: its slot may be gone
				 * (it left) by the time the others come */
};

#define HS_GRO_LOG (1u << HS_GRO_LOG_SHIFT)
#define HS_GRO_SPLITS 64
#define HS_GRO_MAX_SEGS 64	/* as GRO's own limit on one merged skb */
#define HS_GRO_MAX_BYTES 65535
/* packets further apart than this start a new batch: GRO holds a packet
 * for one NAPI poll, microseconds */
#define HS_GRO_GAP_NS 100000

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hs_gro_cpu);
	__uint(max_entries, 1);
} gro_cpu SEC(".maps");

/* by (CPU << HS_GRO_LOG_SHIFT | place): a batch's CPU writes its own, and
 * t2 reads it on whichever CPU RPS gave the merged packet to */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, __u64);
	__uint(max_entries, 1);		/* set by the loader: possible CPUs << HS_GRO_LOG_SHIFT */
} gro_t1 SEC(".maps");

/* by seq's hash: a batch's parts reach t2 on one CPU, in order (RPS keeps a
 * flow on one), but not the CPU that batched them */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct hs_gro_split);
	__uint(max_entries, HS_GRO_SPLITS);
} gro_split SEC(".maps");

/* the inputs whose TCP is batched (--gro keep, GRO on), 0 after the last */
HS_EXTERN volatile __u32 hs_gro_if[HS_MAX_IFACES] HS_ZERO;

/*
 * segs and daddr[3] (set at t1, never changed after) make one aligned
 * 64-bit word: a join and t2 change segs through it, as BPF before cpu v3
 * has fetching atomics of 64 bits only.
 */
_Static_assert(__builtin_offsetof(struct hs_record, segs) ==
	       __builtin_offsetof(struct hs_record, daddr[3]) + 4 &&
	       __builtin_offsetof(struct hs_record, daddr[3]) % 8 == 0, "segs's word");
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HS_SEGS_SHIFT 32
#else
#define HS_SEGS_SHIFT 0
#endif

static __always_inline __u64 *hs_segs_word(struct hs_record *rec)
{
	return (__u64 *)&rec->daddr[3];
}

/* a TCP flow on an input, as a word */
static __always_inline __u64 hs_gro_flow(const struct hs_pkt *p, __u32 ifindex)
{
	__u64 a = (__u64)p->saddr[0] ^ p->saddr[1] ^ p->saddr[2] ^ p->saddr[3];
	__u64 b = (__u64)p->daddr[0] ^ p->daddr[1] ^ p->daddr[2] ^ p->daddr[3];

	return (a << 32 | b) ^ ((__u64)p->sport << 48 | (__u64)p->dport << 32 | ifindex);
}

/*
 * t1: a TCP packet of a batching input, at now, joins the batch its CPU is
 * filling (true: *seq is the batch's, for the caller's metadata), or starts
 * one (false: the caller takes a slot, then hs_gro_start). *pos: its place
 * in gro_t1, where its instant is kept.
 */
static __always_inline bool hs_gro_join(struct hs_gro_cpu *g, const struct hs_pkt *p,
					__u32 ifindex, __u64 now, __u64 *seq, __u64 *pos)
{
	__u64 flow = hs_gro_flow(p, ifindex);
	__u32 at = bpf_get_smp_processor_id() << HS_GRO_LOG_SHIFT | (g->pos & (HS_GRO_LOG - 1));
	__u64 *t1 = bpf_map_lookup_elem(&gro_t1, &at);
	struct hs_record *rec;
	__u64 w;

	if (t1)
		*t1 = now;
	*pos = g->pos++;
	if (!g->seq || g->flow != flow || now - g->last > HS_GRO_GAP_NS ||
	    g->n >= HS_GRO_MAX_SEGS || g->bytes + p->ip_len > HS_GRO_MAX_BYTES)
		goto start;
	rec = hs_slot(g->seq);
	/* still the batch's, and not yet at t2 (GRO has not let it go); t2 may
	 * run on another CPU (RPS) meanwhile: it closes segs as it reads it, so
	 * a join either counts in what t2 reads or fails and starts a batch */
	if (!rec || HS_READ_ONCE(rec->seq) != g->seq || HS_READ_ONCE(rec->t[HS_T2]))
		goto start;
	w = HS_READ_ONCE(*hs_segs_word(rec));
	if ((w >> HS_SEGS_SHIFT) & HS_GRO_CLOSED ||
	    __sync_val_compare_and_swap(hs_segs_word(rec), w, w + (1ull << HS_SEGS_SHIFT)) != w)
		goto start;
	g->n++;
	g->bytes += p->ip_len;
	g->last = now;
	*seq = g->seq;
	return true;
start:
	g->seq = 0;
	g->flow = flow;
	g->last = now;
	g->bytes = p->ip_len;
	g->n = 1;
	return false;
}

/* the batch's slot, taken by its first packet: segs counts from 1 in the
 * slot, and drop_reason, unused until a drop, keeps its gro_t1 place
 * (hs_emit_begin clears both for the record) */
static __always_inline void hs_gro_start(struct hs_gro_cpu *g, struct hs_record *rec, __u64 seq,
					 __u64 pos)
{
	rec->segs = 1;
	rec->drop_reason = pos;
	g->seq = seq;
}

static __always_inline struct hs_gro_split *hs_gro_split_of(__u64 seq)
{
	__u32 i = (seq ^ seq >> HS_SEQ_CPU_SHIFT) & (HS_GRO_SPLITS - 1);

	return bpf_map_lookup_elem(&gro_split, &i);
}

/* the wire packets an skb holds */
static __always_inline __u32 hs_skb_segs(const struct sk_buff *skb)
{
	const struct skb_shared_info *sh = hs_shinfo(skb);

	return sh->gso_size && sh->gso_segs > 1 ? sh->gso_segs : 1;
}

/*
 * t2 of a packet's slot: the wire packets its skb holds. Merged before t1
 * (generic XDP runs after GRO), segs says how many. A batch's first part
 * holds k of the batch's n packets; if fewer than all, the rest follow in
 * later parts.
 */
static __always_inline void hs_gro_first(const struct sk_buff *skb, struct hs_record *rec,
					 __u64 seq)
{
	__u32 n, k = hs_skb_segs(skb);
	struct hs_gro_split *s;

	/* no packet joins the batch once t2 has read its count (hs_gro_join) */
	n = rec->segs;
	if (cfg_gro)
		n = (__u32)(__sync_fetch_and_or(hs_segs_word(rec),
						(__u64)HS_GRO_CLOSED << HS_SEGS_SHIFT) >>
			    HS_SEGS_SHIFT) & ~HS_GRO_CLOSED;
	if (n < 2) {
		if (k > 1)
			rec->segs = k | (rec->segs & HS_GRO_CLOSED);
		return;
	}
	if (k >= n)
		return;
	rec->segs = k | HS_GRO_CLOSED;
	s = hs_gro_split_of(seq);
	if (!s)
		return;
	if (s->seq && s->next < s->n)
		/* an older split's parts never all came */
		hs_count(HS_C_GRO_LOST);
	s->seq = seq;
	s->next = k;
	s->n = n;
	s->log0 = rec->drop_reason;
	__builtin_memcpy(&s->r, rec, sizeof(s->r));
}

/*
 * t2 of an skb whose metadata names a split batch and that is not its first
 * part: a record of its own, from the batch's header fields, with the t1 of
 * its own first packet; found by its address from now on. True: it was one.
 */
static __always_inline bool hs_gro_later(const struct sk_buff *skb, __u64 now)
{
	union hs_meta_words m;
	struct hs_gro_split *s;
	const struct hs_record *batch;
	struct hs_record *rec;
	__u64 seq, addr, *t1;
	__u32 k, at;

	if (!hs_meta_read(skb, &m) || m.m.magic != HS_META_MAGIC)
		return false;
	s = hs_gro_split_of(m.m.seq);
	if (!s || s->seq != m.m.seq || s->next >= s->n)
		return false;
	batch = &s->r;
	if (batch->flow == hs_skb_id(skb))
		return false;	/* the first part itself, at t2 again (an ifb) */
	k = hs_skb_segs(skb);
	at = hs_seq_cpu(m.m.seq) << HS_GRO_LOG_SHIFT | ((s->log0 + s->next) & (HS_GRO_LOG - 1));
	s->next += k;
	t1 = bpf_map_lookup_elem(&gro_t1, &at);
	rec = hs_slot_take(now, &seq);
	if (!rec || !t1) {
		hs_count(HS_C_GRO_LOST);
		return true;
	}
	rec->t[HS_T1] = *t1;
	rec->t[HS_T2] = now;
	rec->in_ifindex = batch->in_ifindex;
	/* the batch's header fields, ip_len .. daddr, as t1 parsed them (the
	 * first part's, at its t2: nothing there has left yet) */
	__builtin_memcpy(&rec->ip_len, &batch->ip_len,
			 __builtin_offsetof(struct hs_record, segs) -
			 __builtin_offsetof(struct hs_record, ip_len));
	rec->segs = k;
	rec->flow = hs_skb_id(skb);
	hs_slot_publish(rec, seq);
	addr = hs_skb_addr(skb);
	if (!bpf_map_update_elem(&by_skb, &addr, &seq, BPF_ANY) && !hs_tapped)
		hs_tapped = 1;
	hs_count(HS_C_GRO_SPLIT);
	return true;
}

#endif
