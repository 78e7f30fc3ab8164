// SPDX-License-Identifier: GPL-2.0
/*
 * Header fields and packet key at the input stages: the eBPF backend's parser
 * (include/hs_parse.h), reading the skb through skb_header_pointer, so nothing
 * past what the skb holds is read, paged data included.
 */
#include <linux/if_ether.h>
#include <linux/if_vlan.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/skbuff.h>
#include "session.h"

struct hs_src {
	const struct sk_buff *skb;
};

static int hs_load(const struct hs_src *s, __u32 off, void *dst, __u32 len)
{
	const void *src = skb_header_pointer(s->skb, off, len, dst);

	if (!src)
		return -1;
	if (src != dst)
		memcpy(dst, src, len);
	return 0;
}

#include "hs_parse.h"

/*
 * skb->data is the network header (or a VLAN tag the driver left in) at
 * netif_rx and netif_receive_skb. Returns hs_parse's result; on 0 the
 * record's header fields and key are filled.
 */
int hs_parse_skb(const struct sk_buff *skb, struct hs_record *r)
{
	struct hs_src src = { .skb = skb };
	struct hs_key_input k = {};
	struct hs_pkt p = {};
	int err;

	if (skb_vlan_tag_present(skb))
		p.flags |= HS_F_VLAN;
	err = hs_parse(&src, 0, skb->protocol, &k, &p);
	r->flags = p.flags;
	if (err)
		return err;
	hs_pkt_to_record(&p, r);
	r->key = hs_key_hash(&k);
	return 0;
}

/* the input stage's counters, as the eBPF backend's XDP stage counts them */
void hs_count_parse(struct hs_session *s, int err, u8 flags)
{
	if (err) {
		hs_count(s, err == -1 ? HS_C_XDP_NONIP : HS_C_XDP_TRUNC);
		return;
	}
	if (flags & HS_F_VLAN)
		hs_count(s, HS_C_XDP_VLAN);
	if (flags & HS_F_FRAGMENT)
		hs_count(s, HS_C_XDP_FRAG);
	if (flags & HS_F_IPOPTS)
		hs_count(s, HS_C_XDP_IPOPTS);
	if (flags & HS_F_IPV6_EXT)
		hs_count(s, HS_C_XDP_IPV6EXT);
	if (flags & HS_F_TRUNC)
		hs_count(s, HS_C_XDP_TRUNC);
}
