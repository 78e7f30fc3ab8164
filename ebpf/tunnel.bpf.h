/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Devices without a MAC header, and tunnels: packets whose headers move on
 * the way, so that the metadata in front of the MAC header is no longer
 * found. Such a packet is followed by its skb (by_skb), which stays the same
 * through encapsulation, decapsulation and WireGuard's queues.
 *
 * In by an L3 device (GRE, IPIP, WireGuard, tun): XDP reads the frame from
 * its IP header. Out by a tunnel: POST_ROUTING files the skb; the tunnel
 * device's start_xmit stamps tun_out and passes the packet by; its outer
 * packet's POST_ROUTING keeps the inner packet's t3; t4 is the underlay's
 * hand-over. In by a tunnel's underlay: LOCAL_IN follows an outer packet of
 * one of the netns's tunnels instead of retiring it; the tunnel device's
 * receive takes it up as the inner packet (tun_in, new header fields), or
 * the router consumes it (a handshake, a keepalive: local). The userspace
 * side is userspace/ifstack.c.
 */
#ifndef HS_TUNNEL_BPF_H
#define HS_TUNNEL_BPF_H

#include "hopscope.bpf.h"
#include "parse.bpf.h"

/* the tunnel devices of the netns whose underlay is in it (hs_config.tun_if),
 * 0 after the last; the outer packets LOCAL_IN follows, as protocol << 16 |
 * UDP port (0 for a protocol of its own: GRE, IPIP), 0 after the last */
HS_EXTERN volatile __u32 hs_tun_if[HS_MAX_IFACES] HS_ZERO;
HS_EXTERN volatile __u32 hs_tun_ep[HS_MAX_IFACES] HS_ZERO;
/* tunnels over a traced input that are not followed (IPsec's vti, a
 * WireGuard device whose port is unknown), 0 after the last */
HS_EXTERN volatile __u32 hs_lost_if[HS_MAX_IFACES] HS_ZERO;

/* outer packets LOCAL_IN followed, by skb address: taken up by the tunnel's
 * receive, or retired where the router consumes them */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, __u64);
	__uint(max_entries, 16384);
} tun_follow SEC(".maps");

/* the output tunnel a packet passed, by its seq, for its t4 on the underlay
 * (out_ifindex stays the t4 device's: only a record that left holds one) */
HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, __u64);
	__type(value, __u32);
	__uint(max_entries, 16384);
} tun_dev SEC(".maps");

/* ns from the packet's t1 to now, never 0 (0: no such stage), saturated */
static __always_inline __u32 hs_since_t1(const struct hs_record *rec, __u64 now)
{
	__u64 d = now - rec->t[HS_T1];

	return d ? (d < 0xffffffffu ? d : 0xffffffffu) : 1;
}

#define HS_KERN_CTX ___apply(bpf_cast_to_kern_ctx___, HS_OBJECT)
extern void *HS_KERN_CTX(void *obj) __ksym;

/* XDP: what the frame starts with, for hs_parse: 0, an Ethernet header; on
 * a device without a link-layer header (hard_header_len 0: tun, GRE, IPIP,
 * WireGuard), the IP version's protocol (0xffff: not IP) */
static __always_inline __be16 hs_xdp_l3(struct xdp_md *ctx, const struct hs_src *src)
{
	const struct xdp_buff *x = HS_KERN_CTX(ctx);
	__u8 v;

	if (x->rxq->dev->hard_header_len)
		return 0;
	hs_count(HS_C_XDP_L3);
	if (hs_load(src, 0, &v, 1))
		return 0xffff;
	return v >> 4 == 4 ? HS_ETH_P_IP : v >> 4 == 6 ? HS_ETH_P_IPV6 : 0xffff;
}

/*
 * POST_ROUTING of a packet with a slot: false when it is the outer packet
 * of one that passed its tunnel's start_xmit (t3 stays the inner packet's).
 * A packet without a MAC header (in by an L3 device: the output's header
 * will overwrite its metadata), or routed to an L3 device or a tunnel (whose
 * transmit moves the MAC header), is filed for the stages after.
 */
static __always_inline bool hs_tun_post(const struct bpf_nf_ctx *ctx, struct hs_record *rec,
					__u64 seq)
{
	const struct sk_buff *skb = ctx->skb;
	const struct net_device *out = ctx->state->out;

	if (HS_READ_ONCE(rec->tun_out_ns)) {
		hs_count(HS_C_TUN_OUTER);
		return false;
	}
	if (skb->mac_header == skb->network_header || (out && (!out->hard_header_len ||
	    hs_if_pos(hs_tun_if, out->ifindex) >= 0)))
		hs_file(skb, seq);
	return true;
}

/* POST_ROUTING without a slot: a packet in by a traced input (or by a tunnel
 * over one that is not followed) is forwarded unrecorded, and counted: it
 * came in by a way hopscope does not follow (IPsec policies, which hand the
 * decrypted packet back in by the same device; an unknown tunnel) */
static __always_inline void hs_tun_lost(const struct sk_buff *skb)
{
	__u32 iif = skb->skb_iif;

	if (iif && (hs_if_pos(hs_in_if, iif) >= 0 || hs_if_pos(hs_lost_if, iif) >= 0))
		hs_count(HS_C_IN_NOMETA);
}

/* start_xmit on a tunnel device: encapsulation starts. The instant goes
 * into the slot, the device into tun_dev, and the packet on to its
 * underlay's t4 */
static __always_inline bool hs_tun_xmit(const struct net_device *dev, struct hs_record *rec,
					__u64 seq, __u64 now)
{
	__u32 d, tun = dev->ifindex;

	if (hs_if_pos(hs_tun_if, tun) < 0)
		return false;
	d = hs_since_t1(rec, now);
	bpf_map_update_elem(&tun_dev, &seq, &tun, BPF_ANY);
	rec->tun_out_ns = d;
	if (hs_seq_now(rec, seq) == seq)
		hs_count(HS_C_TUN_OUT);
	else if (HS_READ_ONCE(rec->tun_out_ns) == d)
		rec->tun_out_ns = 0;
	return true;
}

/* t4 of a packet that went out by a tunnel, on a device not in --out: the
 * tunnel's place in --out (its ifindex into *out_if), -1: not traced */
static __always_inline int hs_tun_traced(const struct hs_record *rec, __u64 seq, __u32 *out_if)
{
	__u32 *tun = rec->tun_out_ns ? bpf_map_lookup_elem(&tun_dev, &seq) : NULL;
	int pos = tun ? hs_if_pos(hs_out_if, *tun) : -1;

	if (pos >= 0)
		*out_if = *tun;
	return pos;
}

/* the path of a packet t4 found by the stack: tunnel, when it passed one */
static __always_inline __u8 hs_tun_path(const struct hs_record *rec, __u8 path)
{
	return path == HS_PATH_STACK && (rec->tun_in_ns || rec->tun_out_ns) ? HS_PATH_TUNNEL : path;
}

/* LOCAL_IN: an outer packet of one of the netns's tunnels (by its protocol,
 * and its UDP port) is followed into the tunnel rather than retired */
static __always_inline bool hs_tun_follow(const struct sk_buff *skb, __u64 seq)
{
	const unsigned char *head = skb->head;
	const struct iphdr *ip = hs_cast(head + skb->network_header, struct iphdr);
	__u32 proto, ep;
	__u64 addr;

	if (!hs_tun_ep[0])
		return false;
	if (ip->version == 4)
		proto = ip->protocol;
	else if (ip->version == 6)
		proto = hs_cast(ip, struct ipv6hdr)->nexthdr;
	else
		return false;
	ep = proto << 16;
	if (proto == IPPROTO_UDP)
		ep |= bpf_ntohs(hs_cast(head + skb->transport_header, struct udphdr)->dest);
	if (hs_if_pos(hs_tun_ep, ep) < 0)
		return false;
	addr = hs_skb_addr(skb);
	bpf_map_update_elem(&tun_follow, &addr, &seq, BPF_ANY);
	/* where the tunnel drops it, the drop stage finds it by its skb */
	hs_file(skb, seq);
	hs_count(HS_C_TUN_FOLLOW);
	return true;
}

/* the slot of the outer packet LOCAL_IN followed in skb, its entry taken;
 * NULL: none, or its slot moved on */
static __always_inline struct hs_record *hs_tun_followed(const struct sk_buff *skb, __u64 *seq)
{
	__u64 addr = hs_skb_addr(skb), *sq = bpf_map_lookup_elem(&tun_follow, &addr);
	struct hs_record *rec;

	if (!sq)
		return NULL;
	*seq = *sq;
	bpf_map_delete_elem(&tun_follow, &addr);
	return hs_slot_of(*seq, &rec) == HS_FOUND ? rec : NULL;
}

#endif
