// SPDX-License-Identifier: GPL-2.0
/*
 * The input stages. t0: net:netif_rx, the packet enters the receiving CPU's
 * backlog (the paper's input instant; on veth the sender's xmit). t1:
 * net:netif_receive_skb, it leaves the backlog into the stack: the closest a
 * module gets to the driver. The slot is made at the first of the two.
 * The module leaves GRO on: at t1 a skb may hold several wire packets (segs).
 */
#include "session.h"

/*
 * The input fields of a packet's slot, stamped at st (t0 or t1) on this CPU;
 * the packet's seq. t1 gives every packet its seq from the arrival count,
 * which the probe cost samples by; t0's is provisional (a packet dropped
 * before t1 keeps it), from a count of its own: taking both from one count
 * made t1's seqs all odd or all even on a CPU that ran both, and then none
 * or twice as many were sampled.
 */
static u64 hs_stamp_input(struct hs_session *s, struct hs_slot *slot,
			  const struct sk_buff *skb, enum hs_stage st, u64 now)
{
	u32 cpu = raw_smp_processor_id();

	slot->r.t[st] = now;
	slot->r.seq = st == HS_T0 ?
		hs_seq(cpu, HS_SEQ_PROVISIONAL | this_cpu_inc_return(s->pcpu->t0_arrivals)) :
		hs_seq(cpu, this_cpu_inc_return(s->pcpu->arrivals));
	slot->r.cpu_in = cpu;
	slot->r.in_ifindex = skb->dev->ifindex;
	slot->r.segs = hs_gso_segs(skb);
	return slot->r.seq;
}

void hs_probe_netif_rx(void *data, struct sk_buff *skb)
{
	struct hs_session *s = data;
	struct hs_record r = {};
	struct hs_bucket *b;
	struct hs_slot *slot;
	unsigned long flags;
	u64 now;

	HS_FLOOR_EXIT(s);
	if (!hs_dev_in(s, skb->dev))
		return;
	now = ktime_get_ns();
	hs_count(s, HS_C_T0_PKTS);
	/* parse problems are counted at t1, where every input packet passes */
	if (hs_parse_skb(skb, &r))
		return;
	slot = hs_slot_new(s, skb, now, &b, &flags);
	slot->r = r;
	hs_stamp_input(s, slot, skb, HS_T0, now);
	hs_slot_unlock(b, flags);
	/* t1 gives the packet its seq anew: sampled as often, at random (the
	 * probe runs with preemption off: this CPU's state) */
	if (hs_cost_sampled(prandom_u32_state(this_cpu_ptr(&s->pcpu->rnd))))
		hs_cost_add(s, HS_T0, now);
}

void hs_probe_receive(void *data, struct sk_buff *skb)
{
	struct hs_session *s = data;
	struct hs_bucket *b;
	struct hs_slot *slot;
	unsigned long flags;
	u64 now, seq;
	int err;

	HS_FLOOR_EXIT(s);
	if (!hs_dev_in(s, skb->dev))
		return;
	now = ktime_get_ns();
	hs_count(s, HS_C_XDP_PKTS);
	slot = hs_slot_find(s, skb, &b, &flags);
	if (slot && slot->r.t[HS_T0] && !slot->r.t[HS_T1] && slot->head == skb->head) {
		/* parsed at t0 */
		hs_count_parse(s, 0, slot->r.flags);
	} else {
		struct hs_record r = {};

		/* an address still holding another packet (past t1, or other
		 * data) is stale: hs_slot_new retires it */
		if (slot)
			hs_slot_unlock(b, flags);
		if (hs_stage_on(s, HS_T0))
			hs_count(s, HS_C_T0_MISS);
		err = hs_parse_skb(skb, &r);
		hs_count_parse(s, err, r.flags);
		if (err)
			return;
		slot = hs_slot_new(s, skb, now, &b, &flags);
		slot->r = r;
	}
	seq = hs_stamp_input(s, slot, skb, HS_T1, now);
	hs_slot_unlock(b, flags);
	if (hs_cost_sampled(seq))
		hs_cost_add(s, HS_T1, now);
}
