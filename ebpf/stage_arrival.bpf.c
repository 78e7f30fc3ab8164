/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * t0 (optional): the packet enters the input queue. On veth that is netif_rx,
 * called on the sender's CPU; the backlog wait until XDP (t1) is the input
 * queue the paper measured. No slot exists yet, so t0 waits under the packet
 * key until XDP takes it.
 */
#include "hopscope.bpf.h"
#include "parse.bpf.h"
#include "netns.bpf.h"

SEC("tp_btf/netif_rx")
int BPF_PROG(hs_arrival, struct sk_buff *skb)
{
	__u64 now;
	struct hs_key_input k = {};
	struct hs_pkt p = {};
	struct hs_arrival_key ak;
	struct hs_src src;
	__u64 *old;

	HS_FLOOR_STAMP_EXIT(HS_T0, 0);
	now = bpf_ktime_get_ns();
	if (!hs_dev_in_router(skb->dev) || hs_if_pos(hs_in_if, skb->dev->ifindex) < 0)
		return 0;
	/* eth_type_trans has pulled the MAC header: data is the network header */
	src.p = skb->data;
	src.limit = skb->len - skb->data_len;
	src.xdp = false;
	if (hs_parse(&src, 0, skb->protocol, &k, &p))
		return 0;
	hs_count(HS_C_T0_PKTS);
	ak.key = hs_key_hash(&k);
	ak.ifindex = skb->dev->ifindex;
	old = bpf_map_lookup_elem(&arrivals, &ak);
	if (old) {
		/* packets with one key in flight together: none gets a t0, each is
		 * flagged (HS_T0_TWINS). 0: XDP has just taken the entry, whose
		 * packet left the backlog: no twin (this one's t0 is lost, a miss) */
		__u64 v = HS_READ_ONCE(*old);

		if (v && !(v & HS_T0_TWINS)) {
			__u64 was = __sync_val_compare_and_swap(old, v, HS_T0_TWINS | 2);

			if (was == v) {
				/* the first twin lost its t0 too: the counter
				 * counts the packets flagged (analysis/loss.py) */
				hs_count(HS_C_T0_COLLISION);
				hs_count(HS_C_T0_COLLISION);
				return 0;
			}
			v = was;
		}
		if (v & HS_T0_TWINS) {
			__sync_fetch_and_add(old, 1);
			hs_count(HS_C_T0_COLLISION);
		}
		return 0;
	}
	if (bpf_map_update_elem(&arrivals, &ak, &now, BPF_NOEXIST))
		hs_count(HS_C_T0_MAP_FULL);
	/* no seq yet: sampled as often, at random */
	if (hs_cost_sampled(bpf_get_prandom_u32()))
		hs_cost_add(HS_T0, now);
	return 0;
}
