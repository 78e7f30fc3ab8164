/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A packet that leaves in pieces: IP fragments (ip_do_fragment, the output's
 * MTU smaller than the packet) or GSO segments (a merged packet cut in
 * software, at ip_finish_output_gso or at the transmit). Each piece is a new
 * skb with no metadata, so t4 cannot find the packet through it; the packet
 * gets one record, complete when its last piece is handed over, with t4 at
 * the first piece's hand-over, out_segs the pieces and t4_span_ns from the
 * first hand-over to the last.
 *
 * How a piece is tied to its packet, by where the kernel cuts it:
 *  - after t3 on the same CPU, before the packet itself is consumed
 *    (fragments; GSO segments at ip_finish_output_gso): each piece passes
 *    dev_queue_xmit (net_dev_queue) while the packet last past t3 on that
 *    CPU is still open (pieces_cpu.seq): it is filed in piece_of by its
 *    address and counted queued; the packet's consume_skb then says that
 *    every piece is queued;
 *  - inside the transmit (validate_xmit_skb): the merged packet is consumed
 *    first, with its segment count, and its segments reach the driver next
 *    on that CPU (pieces_cpu.gso_seq, gso_left).
 * The count of pieces queued and handed over lives in the slot (the pieces
 * word, over t4_span_ns .. reserved, which the record's own fields replace as
 * it leaves): whichever of the last piece's t4 and the packet's consume
 * comes last emits the record. A piece that misses its tie (its neighbour
 * unresolved, so sent later from elsewhere) counts as out_nometa and its
 * packet ends in flight or evicted: counted, never lost.
 */
#ifndef HS_PIECES_BPF_H
#define HS_PIECES_BPF_H

#include "hopscope.bpf.h"

struct hs_pieces_cpu {
	__u64 seq;	/* the packet last past t3 here; 0: one not traced */
	__u32 daddr;	/* its destination as t3 saw it (IPv6: the last word) */
	__u32 gso;	/* it was a merged one (its segments are not fragments) */
	__u64 gso_seq;	/* a merged packet cut at its transmit here ... */
	__u64 gso_left;	/* ... and its segments still to reach t4 */
};

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32);
	__type(value, struct hs_pieces_cpu);
	__uint(max_entries, 1);
} pieces_cpu SEC(".maps");

/* a piece's skb address -> its packet's seq; left to the LRU like by_skb */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, __u64);
	__uint(max_entries, 65536);
} piece_of SEC(".maps");

/* piece_of holds anything: until then t4 never looks there */
HS_EXTERN volatile __u32 hs_pieces_seen HS_ZERO;

/* the pieces word: span ns (bits 0-31, the record's t4_span_ns), pieces
 * queued (32-47, its out_segs), handed over (48-62), all queued (63) */
#define HS_PW_QUEUED_1 (1ull << 32)
#define HS_PW_HANDED_1 (1ull << 48)
#define HS_PW_ALL (1ull << 63)

/* uapi values vmlinux.h leaves out (macros) */
#define HS_IP_MF 0x2000
#define HS_IP_OFFSET 0x1fff
#define HS_IPPROTO_FRAGMENT 44
#define HS_SKB_IP bpf_htons(0x0800)	/* skb->protocol */
#define HS_SKB_IPV6 bpf_htons(0x86DD)

static __always_inline __u64 *hs_pieces_word(struct hs_record *rec)
{
	return (__u64 *)&rec->t4_span_ns;
}

static __always_inline __u32 hs_pw_queued(__u64 w)
{
	return (w >> 32) & 0xffff;
}

static __always_inline __u32 hs_pw_handed(__u64 w)
{
	return (w >> 48) & 0x7fff;
}

static __always_inline struct hs_pieces_cpu *hs_pieces_here(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&pieces_cpu, &zero);
}

/* the skb's IP destination (IPv6: its last word); 0: not IP */
static __always_inline __u32 hs_skb_daddr(const struct sk_buff *skb)
{
	unsigned char *nh = skb->head + skb->network_header;

	if (skb->protocol == HS_SKB_IP)
		return hs_cast(nh, struct iphdr)->daddr;
	if (skb->protocol == HS_SKB_IPV6)
		return hs_cast(nh, struct ipv6hdr)->daddr.in6_u.u6_addr32[3];
	return 0;
}

/* t3: the packet whose pieces, if any, are queued next on this CPU (seq 0:
 * one hopscope does not trace, so that nothing is tied to the last one) */
static __always_inline void hs_pieces_open(const struct sk_buff *skb, __u64 seq)
{
	struct hs_pieces_cpu *c = hs_pieces_here();

	if (!c)
		return;
	c->seq = seq;
	if (!seq)
		return;
	/* after NAT: what its pieces carry */
	c->daddr = hs_skb_daddr(skb);
	c->gso = hs_shinfo(skb)->gso_size;
}

/* skb, with no metadata, is a piece of c's packet: an IP fragment (or, of a
 * merged packet, a segment) to its destination */
static __always_inline bool hs_piece_of_open(const struct sk_buff *skb,
					     const struct hs_pieces_cpu *c)
{
	unsigned char *nh = skb->head + skb->network_header;

	if (hs_skb_daddr(skb) != c->daddr)
		return false;
	if (c->gso)
		return true;
	if (skb->protocol == HS_SKB_IP)
		return hs_cast(nh, struct iphdr)->frag_off & bpf_htons(HS_IP_MF | HS_IP_OFFSET);
	return hs_cast(nh, struct ipv6hdr)->nexthdr == HS_IPPROTO_FRAGMENT;
}

/* the slot of the packet whose piece skb is, through piece_of, which lets
 * the piece go: its skb's address is soon another skb's */
static __always_inline enum hs_find hs_piece_find(const struct sk_buff *skb,
						  struct hs_record **rec, __u64 *seq)
{
	__u64 addr, *sq;

	if (!hs_pieces_seen)
		return HS_NOMETA;
	addr = hs_skb_addr(skb);
	sq = bpf_map_lookup_elem(&piece_of, &addr);
	if (!sq)
		return HS_NOMETA;
	*seq = *sq;
	bpf_map_delete_elem(&piece_of, &addr);
	return hs_slot_of(*seq, rec);
}

/* t4 of an skb without metadata: a segment of the packet cut at a transmit
 * on this CPU just before? */
static __always_inline enum hs_find hs_gso_next(struct hs_record **rec, __u64 *seq)
{
	struct hs_pieces_cpu *c = hs_pieces_here();

	if (!c || !c->gso_left)
		return HS_NOMETA;
	c->gso_left--;
	*seq = c->gso_seq;
	return hs_slot_of(*seq, rec);
}

/* t4 of a segment that kept its packet's metadata (seq's): one less to come */
static __always_inline void hs_gso_took(__u64 seq)
{
	struct hs_pieces_cpu *c = hs_pieces_here();

	if (c && c->gso_left && c->gso_seq == seq)
		c->gso_left--;
}

/*
 * A piece handed over at now: the first one's instant, output and CPU go
 * into the slot (the record's t4); the span, then the count. True: it was the
 * packet's last, after the consume: its record leaves now. *first: it was
 * the first piece handed over.
 */
static __always_inline bool hs_piece_out(struct hs_record *rec, __u32 ifindex, __u64 now,
					 bool *first)
{
	__u64 *word = hs_pieces_word(rec), w, t4, span, was;

	*first = !__sync_val_compare_and_swap(&rec->t[HS_T4], 0, now);
	if (*first) {
		rec->out_ifindex = ifindex;
		rec->cpu_out = bpf_get_smp_processor_id();
	}
	t4 = HS_READ_ONCE(rec->t[HS_T4]);
	span = now > t4 ? now - t4 : 0;
	if (span > 0xffffffffull)
		span = 0xffffffffull;
	/* the span only grows; a lost race with another piece retries */
#pragma unroll
	for (int i = 0; i < 4; i++) {
		w = HS_READ_ONCE(*word);
		if ((w & 0xffffffffull) >= span)
			break;
		if (__sync_val_compare_and_swap(word, w, (w & ~0xffffffffull) | span) == w)
			break;
	}
	was = __sync_fetch_and_add(word, HS_PW_HANDED_1) + HS_PW_HANDED_1;
	return (was & HS_PW_ALL) && hs_pw_handed(was) == hs_pw_queued(was);
}

#endif
