// SPDX-License-Identifier: GPL-2.0
/*
 * The output stages. Optional t_tceg: net:net_dev_queue, just before the
 * qdisc enqueue. t4: net:net_dev_start_xmit, after the qdisc, handed to the
 * driver: the packet's one record leaves here. Both tracepoints fire for
 * every device on the machine: filter by netns first.
 */
#include "session.h"

void hs_probe_queue(void *data, struct sk_buff *skb)
{
	struct hs_session *s = data;
	u64 now, seq;

	HS_FLOOR_EXIT(s);
	if (!hs_dev_out(s, skb->dev))
		return;
	now = ktime_get_ns();
	seq = hs_slot_stamp(s, skb, HS_TCEG, now);
	if (!seq)
		return;
	hs_count(s, HS_C_OPT_PKTS);
	if (hs_cost_sampled(seq))
		hs_cost_add(s, HS_TCEG, now);
}

void hs_probe_xmit(void *data, const struct sk_buff *skb, const struct net_device *dev)
{
	struct hs_session *s = data;
	struct hs_bucket *b;
	struct hs_slot *slot;
	unsigned long flags;
	bool traced;
	u64 now, seq;

	HS_FLOOR_EXIT(s);
	if (!dev || dev_net(dev) != READ_ONCE(s->net))
		return;
	now = ktime_get_ns();
	traced = hs_ifindex_in(s->out_ifindex, s->n_out, dev->ifindex);
	slot = hs_slot_find_fwd(s, skb, &b, &flags);
	if (!slot) {
		if (hs_gso_xmit(s, skb, dev, traced, now, &seq)) {
			if (seq && hs_cost_sampled(seq))
				hs_cost_add(s, HS_T4, now);
			return;
		}
		/* the router's own packets, or from an input not traced */
		if (traced)
			hs_count(s, HS_C_OUT_NOMETA);
		return;
	}
	seq = slot->r.seq;
	hs_record_out(s, &slot->r, dev, now, traced);
	hs_slot_free(slot);
	hs_slot_unlock(b, flags);
	/* after t4: in no delay, but what the probe costs the packet's sender */
	if (hs_cost_sampled(seq))
		hs_cost_add(s, HS_T4, now);
}
