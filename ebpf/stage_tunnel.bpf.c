/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The inner packet of an outer one LOCAL_IN followed (tunnel.bpf.h): taken
 * up where the tunnel device receives it, decapsulated (and, WireGuard,
 * decrypted): tun_in, and the record's header fields and key from now on
 * the inner packet's, whose PRE_ROUTING stamps t2. An outer packet the
 * router consumes instead (a WireGuard handshake or keepalive, an inner
 * frame that is not IP) ends there, like one to the router itself.
 */
#include "hopscope.bpf.h"
#include "netns.bpf.h"
#include "tunnel.bpf.h"

SEC("tp_btf/netif_receive_skb")
int BPF_PROG(hs_tun_rx, struct sk_buff *skb)
{
	struct hs_src src = { .p = skb->data, .limit = skb->len - skb->data_len };
	struct hs_key_input k = {};
	struct hs_pkt p = {};
	struct hs_record *rec;
	__u64 seq, now;

	HS_FLOOR_EXIT(0);
	if (!hs_dev_in_router(skb->dev) || hs_if_pos(hs_tun_if, skb->dev->ifindex) < 0)
		return 0;
	now = bpf_ktime_get_ns();
	rec = hs_tun_followed(skb, &seq);
	if (!rec)
		return 0;
	if (!hs_parse(&src, 0, skb->protocol, &k, &p)) {
		hs_pkt_to_record(&p, rec);
		rec->key = hs_key_hash(&k);
	}
	/* the inner packet's own PRE_ROUTING comes next */
	rec->t[HS_T2] = 0;
	rec->tun_in_ns = hs_since_t1(rec, now);
	if (hs_seq_now(rec, seq) != seq)
		return 0;
	/* its MAC header is gone, or in the outer packet's place */
	hs_file(skb, seq);
	hs_count(HS_C_TUN_IN);
	return 0;
}

SEC("tp_btf/consume_skb")
int BPF_PROG(hs_tun_end, struct sk_buff *skb, void *location)
{
	struct hs_record *rec;
	__u64 seq;

	HS_FLOOR_EXIT(0);
	if (skb->dev && !hs_dev_in_router(skb->dev))
		return 0;
	rec = hs_tun_followed(skb, &seq);
	if (rec && hs_release(rec, seq)) {
		hs_by_skb_forget(skb);
		hs_count(HS_C_TUN_END);
		hs_count(HS_C_LOCAL);
	}
	return 0;
}
