/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Drops: skb:kfree_skb fires only for skbs freed with a drop reason. A traced
 * packet (it carries our metadata) gets its record here, with the reason and
 * the last stage it was seen at; with the histograms on, it is also counted
 * by that stage and reason (all an aggregate run keeps of it).
 */
#include "hopscope.bpf.h"
#include "netns.bpf.h"
#include "pieces.bpf.h"

SEC("tp_btf/kfree_skb")
int BPF_PROG(hs_drop, struct sk_buff *skb, void *location, enum skb_drop_reason reason)
{
	struct hs_record *rec, *out;
	const struct hs_record *src;
	__u8 last = HS_T1;
	__u32 seen;
	__u64 seq;

	HS_FLOOR_EXIT(0);
	/* drops elsewhere (a receiver discarding what it got) cost no lookup;
	 * an skb without a device may still be ours */
	if (skb->dev && !hs_dev_in_router(skb->dev))
		return 0;
	switch (hs_find(skb, &rec, &seq)) {
	case HS_FOUND:
		/*
		 * The metadata lives in the packet's head, which clones share: a
		 * copy freed (tcpdump's, dropped by its socket) is not the packet.
		 * The packet is the skb the stages last saw (flow holds it);
		 * before any stage saw one, an skb whose head another skb still
		 * uses is a copy's, or an original whose copy lives on: neither is
		 * the packet's end.
		 */
		seen = HS_READ_ONCE(rec->flow);
		if (seen ? seen != hs_skb_id(skb) : hs_head_shared(skb))
			return 0;
		break;
	case HS_NOMETA:
		/* a piece lost is its packet lost (pieces.bpf.h) */
		if (hs_piece_find(skb, &rec, &seq) == HS_FOUND)
			break;
		return 0;
	default:
		return 0;
	}
	hs_by_skb_forget(skb);
	out = hs_emit_begin(rec, HS_ST_DROPPED, 0);
	/* no copy (aggregate, ring full): the slot, read before the release */
	src = out ? out : rec;
#pragma unroll
	for (int s = HS_T1; s < HS_T4; s++)	/* t4: only a piece's, and the packet is lost */
		if (src->t[s])
			last = s;
	if (out) {
		out->drop_stage = last;
		out->drop_reason = reason;
		out->cpu_out = bpf_get_smp_processor_id();
	}
	if (hs_emit_commit(rec, seq, out, HS_ST_DROPPED)) {
		hs_count(HS_C_DROPPED);
		if (cfg_hist)
			hs_drop_add(last, reason);
		if (cfg_flight_n)
			hs_flight_drop(reason, seq);
	} else {
		hs_count(HS_C_RACE);	/* evicted as it was dropped: recorded once, as evicted */
	}
	return 0;
}
