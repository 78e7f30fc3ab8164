// SPDX-License-Identifier: GPL-2.0
/*
 * Drops: skb:kfree_skb fires for skbs freed with a drop reason (consume_skb
 * has its own tracepoint). A packet holding a slot gets its record here, with
 * the reason and the last stage it was stamped at.
 */
#include "session.h"

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 11, 0)
void hs_probe_kfree(void *data, struct sk_buff *skb, void *location,
		    enum skb_drop_reason reason, struct sock *rx_sk)
#else
void hs_probe_kfree(void *data, struct sk_buff *skb, void *location,
		    enum skb_drop_reason reason)
#endif
{
	struct hs_session *s = data;
	struct hs_bucket *b;
	struct hs_slot *slot;
	unsigned long flags;
	u8 st, last = HS_T0;

	HS_FLOOR_EXIT(s);
	slot = hs_slot_find(s, skb, &b, &flags);
	if (!slot)
		return;
	for (st = HS_T0; st < HS_NSTAGES; st++)
		if (slot->r.t[st])
			last = st;
	/* the same address may hold an skb that is not ours (see hs_slot_find_fwd);
	 * before PRE_ROUTING skb_iif is not set yet, but the data is untouched */
	if (last > HS_T1 ? skb->skb_iif != slot->r.in_ifindex : skb->head != slot->head) {
		hs_count(s, HS_C_STALE);
		hs_slot_emit(s, slot, HS_ST_EVICTED);
		hs_slot_unlock(b, flags);
		return;
	}
	slot->r.drop_stage = last;
	slot->r.drop_reason = reason;
	slot->r.cpu_out = raw_smp_processor_id();
	hs_slot_emit(s, slot, HS_ST_DROPPED);
	hs_slot_unlock(b, flags);
}
