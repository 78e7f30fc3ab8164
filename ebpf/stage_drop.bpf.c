/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Drops: skb:kfree_skb fires only for skbs freed with a drop reason. A traced
 * packet (it carries our metadata) gets its record here, with the reason and
 * the last stage it was seen at.
 */
#include "hopscope.bpf.h"
#include "netns.bpf.h"

SEC("tp_btf/kfree_skb")
int BPF_PROG(hs_drop, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	struct hs_record *rec;
	__u8 last = HS_T1;
	__u64 seq;

	HS_FLOOR_EXIT(0);
	/* drops elsewhere (a receiver discarding what it got) cost no lookup;
	 * an skb without a device may still be ours */
	if (skb->dev && !hs_dev_in_router(skb->dev))
		return 0;
	if (hs_find(skb, &rec, &seq) != HS_FOUND)
		return 0;
#pragma unroll
	for (int s = HS_T1; s < HS_NSTAGES; s++)
		if (rec->t[s])
			last = s;
	rec->drop_stage = last;
	rec->drop_reason = reason;
	rec->cpu_out = bpf_get_smp_processor_id();
	hs_count(HS_C_DROPPED);
	hs_emit(rec, seq, HS_ST_DROPPED);
	return 0;
}
