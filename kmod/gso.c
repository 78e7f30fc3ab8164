// SPDX-License-Identifier: GPL-2.0
/*
 * Merged packets. The module's probes are not XDP, so GRO stays on: t1 sees
 * one skb for several wire packets (its record's segs). When the output
 * device cannot send it whole, validate_xmit_skb cuts it into new skbs,
 * consumes the merged one (skb:consume_skb) and hands the segments to the
 * driver next, in order (a busy driver has the qdisc requeue the rest, sent
 * first when it resumes, maybe from another CPU). So at the consume the
 * packet is queued, its record taken out of its slot (the freed address may
 * be the next packet's before the first segment leaves); at t4 a skb without
 * a slot of its own, of a queued packet's flow and device, is that packet's
 * next segment: the first stamps t4 and emits the record, the others are
 * counted out_segs. A merged skb cut elsewhere (an MTU smaller than its
 * segments: ip_finish_output_gso) is followed the same way when its
 * segments leave in order. A packet the output's MTU makes into IP
 * fragments is known at t3 (POST_ROUTING, before ip_fragment), with the
 * count it will leave as: its fragments are told by their IP id and
 * addresses. Pieces nobody follows count as out_nometa and
 * their record ends evicted or in flight: counted, never lost.
 */
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/tcp.h>
#include <net/ip.h>
#include "session.h"

/* the packet's wire packets at t1 (0: one) */
u32 hs_gso_segs(const struct sk_buff *skb)
{
	return skb_is_gso(skb) && skb_shinfo(skb)->gso_segs > 1 ? skb_shinfo(skb)->gso_segs : 0;
}

static struct hs_gso_wait *hs_gso_at(struct hs_gso_queue *q, u32 i)
{
	return &q->w[(q->head + i) % HS_GSO_WAIT];
}

/* w's pieces will not come: a record it still holds leaves as evicted */
static void hs_gso_let_go(struct hs_session *s, struct hs_gso_wait *w)
{
	w->left = 0;
	if (w->held) {
		w->held = false;
		hs_record_emit(s, &w->r, HS_ST_EVICTED);
	}
}

/* drop the head entries whose pieces are all seen or let go */
static void hs_gso_trim(struct hs_gso_queue *q)
{
	while (q->n && !hs_gso_at(q, 0)->left) {
		q->head = (q->head + 1) % HS_GSO_WAIT;
		q->n--;
	}
}

/* the TCP sequence number of the skb's first payload byte; false when not TCP */
static bool hs_tcp_seq(const struct sk_buff *skb, u8 proto, u32 *seq)
{
	__be32 v;

	if (proto != IPPROTO_TCP ||
	    skb_copy_bits(skb, skb_transport_offset(skb) + 4, &v, sizeof(v)))
		return false;
	*seq = ntohl(v);
	return true;
}

/* the segment is one of the waiting packet's: its addresses and ports, and
 * for TCP a sequence number within the packet's payload; a fragment, its IP
 * id and addresses */
static bool hs_gso_match(const struct sk_buff *skb, const struct hs_gso_wait *w)
{
	const struct hs_record *r = &w->r;
	__be16 ports[2];
	u32 seq;

	if (w->frag)
		return skb->protocol == htons(ETH_P_IP) && ip_hdr(skb)->id == w->ip_id &&
		       ip_hdr(skb)->saddr == w->saddr && ip_hdr(skb)->daddr == w->daddr;

	if (r->flags & HS_F_IPV6) {
		const struct ipv6hdr *ip6 = ipv6_hdr(skb);

		if (skb->protocol != htons(ETH_P_IPV6) ||
		    memcmp(&ip6->saddr, r->saddr, 16) || memcmp(&ip6->daddr, r->daddr, 16))
			return false;
	} else {
		const struct iphdr *ip = ip_hdr(skb);

		if (skb->protocol != htons(ETH_P_IP) ||
		    ip->saddr != r->saddr[0] || ip->daddr != r->daddr[0])
			return false;
	}
	if (!r->sport && !r->dport)
		return true;
	if (skb_copy_bits(skb, skb_transport_offset(skb), ports, sizeof(ports)) ||
	    ntohs(ports[0]) != r->sport || ntohs(ports[1]) != r->dport)
		return false;
	return !w->seq_len || (hs_tcp_seq(skb, r->proto, &seq) && seq - w->seq_lo < w->seq_len);
}

/* w's pieces are awaited, after the others' */
static void hs_gso_wait_for(struct hs_session *s, struct hs_gso_wait *w)
{
	struct hs_gso_queue *q = &s->gso;
	unsigned long flags;

	w->left = w->n;
	spin_lock_irqsave(&q->lock, flags);
	if (q->n == HS_GSO_WAIT) {
		/* the oldest's pieces never came */
		hs_gso_let_go(s, hs_gso_at(q, 0));
		hs_gso_trim(q);
	}
	*hs_gso_at(q, q->n) = *w;
	WRITE_ONCE(q->n, q->n + 1);
	spin_unlock_irqrestore(&q->lock, flags);
}

#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
void hs_probe_consume(void *data, struct sk_buff *skb, void *location)
#else
void hs_probe_consume(void *data, struct sk_buff *skb)
#endif
{
	struct hs_session *s = data;
	struct hs_gso_wait w;
	struct hs_bucket *b;
	struct hs_slot *slot;
	unsigned long flags;

	HS_FLOOR_EXIT(s);
	/* most consumed skbs are not merged, and of those few are ours */
	if (!skb_is_gso(skb))
		return;
	slot = hs_slot_find(s, skb, &b, &flags);
	if (!slot)
		return;
	if (!slot->r.t[HS_T3] || !slot->r.segs || skb->skb_iif != slot->r.in_ifindex ||
	    !skb->dev || dev_net(skb->dev) != READ_ONCE(s->net)) {
		hs_slot_unlock(b, flags);
		return;
	}
	w.r = slot->r;
	hs_slot_free(slot);
	hs_slot_unlock(b, flags);	/* the queue's lock is never taken inside a bucket's */
	w.held = true;
	w.skb = NULL;
	w.ifindex = skb->dev->ifindex;
	w.n = w.r.segs;
	w.seq_len = 0;
	w.frag = false;
	if (hs_tcp_seq(skb, w.r.proto, &w.seq_lo))
		w.seq_len = skb->len - skb_transport_offset(skb) - tcp_hdrlen(skb);
	hs_gso_wait_for(s, &w);
}

/*
 * t3 of a traced packet: if the output's MTU will make it into IP fragments
 * (ip_fragment's test; a packet with DF set is dropped there instead, and
 * recorded so), wait for them, as many as ip_do_fragment cuts.
 */
void hs_frag_expect(struct hs_session *s, struct sk_buff *skb)
{
	struct hs_gso_wait w = { .frag = true };
	const struct iphdr *ip;
	unsigned int mtu, hlen, per;
	struct hs_bucket *b;
	struct hs_slot *slot;
	unsigned long flags;

	if (skb->protocol != htons(ETH_P_IP) || skb_is_gso(skb) || !skb_dst(skb) || !skb->dev)
		return;
	mtu = ip_skb_dst_mtu(NULL, skb);
	ip = ip_hdr(skb);
	hlen = ip->ihl * 4;
	if (skb->len <= mtu || mtu <= hlen + 8 ||
	    ((ip->frag_off & htons(IP_DF)) && !skb->ignore_df))
		return;
	per = (mtu - hlen) & ~7u;
	slot = hs_slot_find(s, skb, &b, &flags);
	if (!slot)
		return;
	w.r = slot->r;
	hs_slot_unlock(b, flags);
	w.held = false;
	w.skb = skb;
	w.ifindex = skb->dev->ifindex;
	w.n = DIV_ROUND_UP(skb->len - hlen, per);
	w.ip_id = ip->id;
	w.saddr = ip->saddr;
	w.daddr = ip->daddr;
	hs_gso_wait_for(s, &w);
}

/*
 * t4 of a skb with no slot: the next segment of a queued merged packet? The
 * first segment stamps t4 and emits the record (complete on a traced
 * output), the others are counted out_segs; a segment whose record was
 * evicted meanwhile counts as out_nometa. False when the skb is none of
 * those; *seq: the packet emitted, else 0.
 */
bool hs_gso_xmit(struct hs_session *s, const struct sk_buff *skb,
		 const struct net_device *dev, bool traced, u64 now, u64 *seq)
{
	struct hs_gso_queue *q = &s->gso;
	struct hs_gso_wait *w = NULL;
	unsigned long irq;
	u32 i;

	*seq = 0;
	if (!READ_ONCE(q->n))
		return false;
	spin_lock_irqsave(&q->lock, irq);
	for (i = 0; i < q->n && !w; i++) {
		struct hs_gso_wait *e = hs_gso_at(q, i);

		if (e->left && e->ifindex == dev->ifindex && hs_gso_match(skb, e))
			w = e;
	}
	if (w && w->seq_len)
		/* a flow leaves in order: older packets of it still waiting
		 * lost the rest of their segments */
		for (i = 0; hs_gso_at(q, i) != w; i++) {
			struct hs_gso_wait *e = hs_gso_at(q, i);

			if (e->ifindex == w->ifindex && e->r.sport == w->r.sport &&
			    e->r.dport == w->r.dport && !memcmp(e->r.saddr, w->r.saddr, 16) &&
			    !memcmp(e->r.daddr, w->r.daddr, 16))
				hs_gso_let_go(s, e);
		}
	if (!w) {
		spin_unlock_irqrestore(&q->lock, irq);
		return false;
	}
	if (w->held) {
		/* the rest are counted as they come: no span here */
		w->r.out_segs = w->n > 1 ? w->n : 0;
		hs_record_out(s, &w->r, dev, now, traced);
		w->held = false;
		*seq = w->r.seq;
	} else if (w->left == w->n) {
		/* fragments: the packet's slot, kept by its skb until now */
		struct hs_bucket *b;
		struct hs_slot *slot;
		unsigned long flags;

		slot = hs_slot_find(s, w->skb, &b, &flags);
		if (slot && slot->r.seq == w->r.seq) {
			slot->r.out_segs = w->n > 1 ? w->n : 0;
			hs_record_out(s, &slot->r, dev, now, traced);
			hs_slot_free(slot);
			*seq = w->r.seq;
		} else {
			/* another packet took the address and retired the slot */
			w->r.seq = 0;
		}
		if (slot)
			hs_slot_unlock(b, flags);
	}
	if (traced && !*seq)
		hs_count(s, w->r.seq ? HS_C_OUT_SEGS : HS_C_OUT_NOMETA);
	w->left--;
	hs_gso_trim(q);
	spin_unlock_irqrestore(&q->lock, irq);
	return true;
}

/* after stop, no probe runs: hand over the records still waiting for their
 * first segment, in flight */
u32 hs_gso_drain(struct hs_session *s, struct hs_record *out, u32 max)
{
	struct hs_gso_queue *q = &s->gso;
	u32 i, n = 0;

	for (i = 0; i < q->n && n < max; i++) {
		struct hs_gso_wait *w = hs_gso_at(q, i);

		if (!w->held)
			continue;
		w->held = false;
		out[n] = w->r;
		out[n].status = HS_ST_INFLIGHT;
		n++;
	}
	return n;
}
