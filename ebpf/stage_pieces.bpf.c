/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A packet cut into pieces on its way out (pieces.bpf.h): each piece is tied
 * to it as it is queued (net_dev_queue), and its consume_skb says every piece
 * is queued, or, for a merged packet cut at its transmit, how many follow.
 */
#include "hopscope.bpf.h"
#include "leave.bpf.h"
#include "netns.bpf.h"

SEC("tp_btf/net_dev_queue")
int BPF_PROG(hs_queue, struct sk_buff *skb)
{
	struct hs_pieces_cpu *c;
	union hs_meta_words m;
	struct hs_record *rec;
	__u64 seq, addr;

	HS_FLOOR_EXIT(0);
	c = hs_pieces_here();
	if (!c || !c->seq || !hs_dev_in_router(skb->dev))
		return 0;
	/* most transmits: a whole packet, with its metadata; the open one
	 * itself closes its window (no piece of it follows) */
	if (hs_meta_read(skb, &m)) {
		if (m.m.seq == c->seq && m.m.magic == HS_META_MAGIC)
			c->seq = 0;
		return 0;
	}
	if (!hs_piece_of_open(skb, c))
		return 0;
	seq = c->seq;
	rec = hs_slot(seq);
	if (!rec || HS_READ_ONCE(rec->seq) != seq)
		return 0;
	addr = hs_skb_addr(skb);
	/* not filed: the piece counts as out_nometa at t4 */
	if (bpf_map_update_elem(&piece_of, &addr, &seq, BPF_ANY))
		return 0;
	if (!hs_pieces_seen)
		hs_pieces_seen = 1;
	__sync_fetch_and_add(hs_pieces_word(rec), HS_PW_QUEUED_1);
	return 0;
}

SEC("tp_btf/consume_skb")
int BPF_PROG(hs_consume, struct sk_buff *skb, void *location)
{
	const struct skb_shared_info *sh;
	struct hs_pieces_cpu *c;
	struct hs_record *rec;
	__u64 seq, *word, was;
	__u32 n;

	HS_FLOOR_EXIT(0);
	if (!skb->dev || !hs_dev_in_router(skb->dev) || hs_find(skb, &rec, &seq) != HS_FOUND)
		return 0;
	c = hs_pieces_here();
	if (!c)
		return 0;
	word = hs_pieces_word(rec);
	if (hs_pw_queued(HS_READ_ONCE(*word))) {
		/* cut after t3: every piece is queued; if every one has left,
		 * the record leaves now */
		if (c->seq == seq)
			c->seq = 0;
		was = __sync_fetch_and_add(word, HS_PW_ALL);
		if (hs_pw_handed(was) == hs_pw_queued(was))
			hs_leave(rec, seq, HS_READ_ONCE(rec->t[HS_T4]), HS_READ_ONCE(rec->out_ifindex),
				 HS_READ_ONCE(rec->cpu_out), bpf_ktime_get_ns());
		return 0;
	}
	sh = hs_shinfo(skb);
	if (!sh->gso_size)
		return 0;
	hs_by_skb_forget(skb);
	/* a merged packet cut at its transmit: its segments reach the
	 * driver next, here */
	n = sh->gso_segs;
	__sync_fetch_and_add(word, (__u64)n * HS_PW_QUEUED_1 | HS_PW_ALL);
	c->gso_seq = seq;
	c->gso_left = n;
	return 0;
}
