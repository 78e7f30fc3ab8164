// SPDX-License-Identifier: GPL-2.0
/*
 * The slot table: one slot per packet between its input stage and its record,
 * keyed by the skb address (exact: every stage the module hooks has the skb).
 * A fixed array of buckets of HS_WAYS slots, a spinlock each: memory is fixed
 * when the recording is configured, and a full bucket evicts its oldest
 * packet (recorded as EVICTED, counted) instead of growing.
 */
#include <linux/hash.h>
#include <linux/log2.h>
#include <linux/mm.h>
#include <linux/slab.h>
#include "session.h"

int hs_slots_init(struct hs_session *s, u32 slots_per_cpu)
{
	u64 total = (u64)slots_per_cpu * num_possible_cpus();
	u32 i;

	total = clamp_t(u64, total, 2 * HS_WAYS, HS_KMOD_MAX_SLOTS);
	total = roundup_pow_of_two(total);
	s->nbuckets = total / HS_WAYS;
	s->bucket_bits = ilog2(s->nbuckets);
	s->buckets = kvcalloc(s->nbuckets, sizeof(*s->buckets), GFP_KERNEL);
	if (!s->buckets)
		return -ENOMEM;
	for (i = 0; i < s->nbuckets; i++)
		spin_lock_init(&s->buckets[i].lock);
	s->drain_pos = 0;
	return 0;
}

void hs_slots_free(struct hs_session *s)
{
	kvfree(s->buckets);
	s->buckets = NULL;
	s->nbuckets = 0;
}

static struct hs_bucket *hs_bucket_of(struct hs_session *s, const struct sk_buff *skb)
{
	return &s->buckets[hash_ptr(skb, s->bucket_bits)];
}

void hs_slot_free(struct hs_slot *slot)
{
	WRITE_ONCE(slot->skb, NULL);
	slot->head = NULL;
}

/* queue a record with this status */
void hs_record_emit(struct hs_session *s, struct hs_record *r, u8 status)
{
	bool t2 = r->t[HS_T2], t3 = r->t[HS_T3];

	/* the path by the stamps, as the eBPF t4 tells it (include/hopscope.h) */
	r->path = HS_PATH_STACK;
	if (status == HS_ST_COMPLETE && t2 != t3) {
		status = HS_ST_PARTIAL;
	} else if (status == HS_ST_COMPLETE && !t2) {
		r->path = HS_PATH_NO_NF;
		hs_count(s, HS_C_FAST);
	}
	r->status = status;
	hs_count_emitted(s, status, hs_ring_push(&s->ring, r));
}

/* t4: the packet was handed to dev's driver; complete when dev is traced */
void hs_record_out(struct hs_session *s, struct hs_record *r, const struct net_device *dev,
		   u64 now, bool traced)
{
	r->t[HS_T4] = now;
	r->out_ifindex = dev->ifindex;
	r->cpu_out = raw_smp_processor_id();
	if (traced)
		hs_count(s, HS_C_OUT_PKTS);
	hs_record_emit(s, r, traced ? HS_ST_COMPLETE : HS_ST_OTHER_OUT);
}

/* queue the slot's record with this status and free the slot */
void hs_slot_emit(struct hs_session *s, struct hs_slot *slot, u8 status)
{
	hs_record_emit(s, &slot->r, status);
	hs_slot_free(slot);
}

struct hs_slot *hs_slot_find(struct hs_session *s, const struct sk_buff *skb,
			     struct hs_bucket **b, unsigned long *flags)
{
	struct hs_bucket *bk = hs_bucket_of(s, skb);
	int i;

	/* most packets the hooks see are not ours: look before taking the lock */
	for (i = 0; i < HS_WAYS; i++)
		if (READ_ONCE(bk->slot[i].skb) == skb)
			break;
	if (i == HS_WAYS)
		return NULL;
	spin_lock_irqsave(&bk->lock, *flags);
	for (i = 0; i < HS_WAYS; i++) {
		if (bk->slot[i].skb == skb) {
			*b = bk;
			return &bk->slot[i];
		}
	}
	spin_unlock_irqrestore(&bk->lock, *flags);
	return NULL;
}

/*
 * After input, a slot found by address belongs to this skb only if the skb
 * came in where the slot's packet did (skb_iif is set on receive and kept
 * through forwarding). A packet the router made itself (skb_iif 0), or one
 * from another interface, may sit at the address of a packet that left by a
 * way no hook saw: retire that slot as stale.
 */
struct hs_slot *hs_slot_find_fwd(struct hs_session *s, const struct sk_buff *skb,
				 struct hs_bucket **b, unsigned long *flags)
{
	struct hs_slot *slot = hs_slot_find(s, skb, b, flags);

	if (!slot || skb->skb_iif == slot->r.in_ifindex)
		return slot;
	hs_count(s, HS_C_STALE);
	hs_slot_emit(s, slot, HS_ST_EVICTED);
	hs_slot_unlock(*b, *flags);
	return NULL;
}

/* a later stage: stamp the packet's slot, if it has one; its seq, 0 when it
 * has none (arrival counts start at 1) */
u64 hs_slot_stamp(struct hs_session *s, const struct sk_buff *skb, enum hs_stage st, u64 now)
{
	struct hs_bucket *b;
	struct hs_slot *slot;
	unsigned long flags;
	u64 seq;

	slot = hs_slot_find_fwd(s, skb, &b, &flags);
	if (!slot)
		return 0;
	slot->r.t[st] = now;
	seq = slot->r.seq;
	hs_slot_unlock(b, flags);
	return seq;
}

struct hs_slot *hs_slot_new(struct hs_session *s, const struct sk_buff *skb, u64 now,
			    struct hs_bucket **b, unsigned long *flags)
{
	struct hs_bucket *bk = hs_bucket_of(s, skb);
	struct hs_slot *victim = NULL;
	int i;

	spin_lock_irqsave(&bk->lock, *flags);
	for (i = 0; i < HS_WAYS; i++) {
		struct hs_slot *slot = &bk->slot[i];

		if (slot->skb == skb) {
			/* the address came back while we still held the old packet: it
			 * left by a way no hook saw (freed without a drop, GSO, ...) */
			hs_count(s, HS_C_STALE);
			hs_slot_emit(s, slot, HS_ST_EVICTED);
			victim = slot;
			break;
		}
		if (!slot->skb && !victim)
			victim = slot;
	}
	if (!victim) {
		victim = &bk->slot[0];
		for (i = 1; i < HS_WAYS; i++)
			if (bk->slot[i].born < victim->born)
				victim = &bk->slot[i];
		hs_slot_emit(s, victim, HS_ST_EVICTED);
	}
	memset(&victim->r, 0, sizeof(victim->r));
	victim->head = skb->head;
	victim->born = now;
	WRITE_ONCE(victim->skb, skb);
	*b = bk;
	return victim;
}

/* after stop, no probe runs: hand over what is still in flight */
u32 hs_slots_drain(struct hs_session *s, struct hs_record *out, u32 max)
{
	u32 total = s->nbuckets * HS_WAYS, n = 0;

	while (n < max && s->drain_pos < total) {
		u32 pos = s->drain_pos++;
		struct hs_slot *slot = &s->buckets[pos / HS_WAYS].slot[pos % HS_WAYS];

		if (!slot->skb)
			continue;
		out[n] = slot->r;
		out[n].status = HS_ST_INFLIGHT;
		n++;
		hs_slot_free(slot);
	}
	return n;
}
