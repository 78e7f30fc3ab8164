/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The one packet parser: header fields and packet key, computed the same way
 * by the eBPF programs (ebpf/parse.bpf.h: XDP and the arrival tracepoint) and
 * by the kernel module (kmod/parse.c), so a record's key, ports, TOS and flags
 * mean the same whichever backend wrote it.
 *
 * The includer defines, before including this file, where the bytes come from:
 *   struct hs_src;
 *   int hs_load(const struct hs_src *s, __u32 off, void *dst, __u32 len);
 * (0: len bytes at off copied to dst; anything else: not there). Every read
 * goes through hs_load, bounded; a frame shorter than its headers claim is
 * flagged HS_F_TRUNC, never read past.
 */
#ifndef HS_PARSE_H
#define HS_PARSE_H

#include "hopscope.h"

#ifdef __KERNEL__
#define hs_htons(x)	htons(x)
#define hs_ntohs(x)	ntohs(x)
#else
#define hs_htons(x)	bpf_htons(x)
#define hs_ntohs(x)	bpf_ntohs(x)
#endif

/* the BPF build unrolls the header walks (clang); elsewhere they are plain loops */
#ifdef __clang__
#define HS_UNROLL	_Pragma("unroll")
#else
#define HS_UNROLL
#endif

#define HS_ETH_P_IP	hs_htons(0x0800)
#define HS_ETH_P_IPV6	hs_htons(0x86DD)
#define HS_ETH_P_8021Q	hs_htons(0x8100)
#define HS_ETH_P_8021AD	hs_htons(0x88A8)
#define HS_IP_MF_OFFSET	hs_htons(0x3fff)
#define HS_IP6_OFFSET	hs_htons(0xfff8)
/* IPv6 next-header values: vmlinux.h has the IPv4 enum only */
#define HS_NH_HOPOPTS	0
#define HS_NH_ROUTING	43
#define HS_NH_FRAGMENT	44
#define HS_NH_AH	51
#define HS_NH_ICMPV6	58
#define HS_NH_DSTOPTS	60

/* what the parser learns; the key input is filled alongside */
struct hs_pkt {
	__u32 saddr[4];
	__u32 daddr[4];
	__u16 ip_len;
	__u16 sport;
	__u16 dport;
	__u8 tos;
	__u8 proto;
	__u8 flags;
};

/* L4 header words and up to 16 payload bytes inside the IP packet */
static __always_inline void hs_parse_l4(const struct hs_src *s, __u32 off, __u32 l3end,
					struct hs_key_input *k, struct hs_pkt *p)
{
	__u32 hlen;

	switch (p->proto) {
	case IPPROTO_UDP:
		hlen = 8;
		break;
	case IPPROTO_TCP:
		hlen = 20;
		break;
	case IPPROTO_ICMP:
	case HS_NH_ICMPV6:
		hlen = 8;
		break;
	default:
		return;
	}
	/* constant sizes at each call: an XDP source reads those directly */
	if (off + hlen > l3end ||
	    (hlen == 8 ? hs_load(s, off, k->l4, 8) : hs_load(s, off, k->l4, 16))) {
		p->flags |= HS_F_TRUNC;
		return;
	}
	if (p->proto == IPPROTO_UDP || p->proto == IPPROTO_TCP) {
		p->sport = hs_ntohs((__u16)k->l4[0]);
		p->dport = hs_ntohs((__u16)(k->l4[0] >> 16));
	}
	if (p->proto == IPPROTO_TCP) {
		__u8 doff;

		if (hs_load(s, off + 12, &doff, 1)) {
			p->flags |= HS_F_TRUNC;
			return;
		}
		hlen = (doff >> 4) * 4;
		if (hlen < 20)
			return;
	}
	off += hlen;
	if (off >= l3end)
		return;
	hlen = l3end - off;
	if (hlen > 16)
		hlen = 16;
	/* same value (hlen is 1..16 here), but a form every verifier bounds to [1,16]:
	 * 6.12 still saw [0,15] for the mask-and-test version */
	hlen = 1 + ((hlen - 1) & 15);
	if (hlen == 16 ? hs_load(s, off, k->payload, 16) : hs_load(s, off, k->payload, hlen))
		p->flags |= HS_F_TRUNC;
}

static __always_inline int hs_parse_ipv4(const struct hs_src *s, __u32 off,
					 struct hs_key_input *k, struct hs_pkt *p)
{
	struct iphdr ip;
	__u32 ihl;

	if (hs_load(s, off, &ip, sizeof(ip)) || ip.version != 4 || ip.ihl < 5)
		return -1;
	ihl = ip.ihl * 4;
	p->ip_len = hs_ntohs(ip.tot_len);
	if (p->ip_len < ihl)
		return -1;
	p->tos = ip.tos;
	p->proto = ip.protocol;
	p->saddr[0] = k->saddr[0] = ip.saddr;
	p->daddr[0] = k->daddr[0] = ip.daddr;
	if (ihl > 20)
		p->flags |= HS_F_IPOPTS;
	if (ip.frag_off & HS_IP_MF_OFFSET) {
		/* fragments share no ports; the IP ID and offset tell them apart */
		p->flags |= HS_F_FRAGMENT;
		k->l4[0] = ip.id;
		k->l4[1] = ip.frag_off;
		return 0;
	}
	hs_parse_l4(s, off + ihl, off + p->ip_len, k, p);
	return 0;
}

static __always_inline int hs_parse_ipv6(const struct hs_src *s, __u32 off,
					 struct hs_key_input *k, struct hs_pkt *p)
{
	struct ipv6hdr ip;
	__u32 l3end, l3len;
	__u8 nh;

	if (hs_load(s, off, &ip, sizeof(ip)) || ip.version != 6)
		return -1;
	p->flags |= HS_F_IPV6;
	/* in 32 bits: a payload_len above 65495 plus the 40-byte header does not
	 * fit ip_len's 16 bits; the record says 65535 (saturated), the parser
	 * still knows where the packet claims to end */
	l3len = (__u32)hs_ntohs(ip.payload_len) + sizeof(ip);
	p->ip_len = l3len > 0xffff ? 0xffff : l3len;
	p->tos = (ip.priority << 4) | (ip.flow_lbl[0] >> 4);
	__builtin_memcpy(p->saddr, &ip.saddr, 16);
	__builtin_memcpy(p->daddr, &ip.daddr, 16);
	__builtin_memcpy(k->saddr, &ip.saddr, 16);
	__builtin_memcpy(k->daddr, &ip.daddr, 16);
	l3end = off + l3len;
	off += sizeof(ip);
	nh = ip.nexthdr;
	HS_UNROLL
	for (int i = 0; i < 6; i++) {
		__u8 h[8];

		if (nh != HS_NH_HOPOPTS && nh != HS_NH_ROUTING && nh != HS_NH_DSTOPTS &&
		    nh != HS_NH_FRAGMENT && nh != HS_NH_AH)
			break;
		p->flags |= HS_F_IPV6_EXT;
		if (hs_load(s, off, h, sizeof(h))) {
			p->flags |= HS_F_TRUNC;
			p->proto = nh;
			return 0;
		}
		if (nh == HS_NH_FRAGMENT) {
			p->flags |= HS_F_FRAGMENT;
			__builtin_memcpy(&k->l4[0], &h[4], 4);		/* identification */
			k->l4[1] = h[2] | h[3] << 8;			/* offset and M */
			p->proto = h[0];
			if ((h[2] | h[3] << 8) & HS_IP6_OFFSET)
				return 0;	/* not the first fragment: no L4 header here */
			off += 8;
		} else if (nh == HS_NH_AH) {
			off += (h[1] + 2) * 4;
		} else {
			off += (h[1] + 1) * 8;
		}
		nh = h[0];
	}
	p->proto = nh;
	if (p->flags & HS_F_FRAGMENT)
		return 0;
	hs_parse_l4(s, off, l3end, k, p);
	return 0;
}

/*
 * Parse from byte off, where a header of type proto (network order) starts:
 * an Ethernet header when proto is 0, VLAN tags (up to two) when a tag is
 * what starts there. Returns 0 for IPv4/IPv6, -1 for any other protocol, -2
 * for a frame too short or malformed to hold its headers.
 */
static __always_inline int hs_parse(const struct hs_src *s, __u32 off, __be16 proto,
				    struct hs_key_input *k, struct hs_pkt *p)
{
	int r;

	if (!proto) {
		struct ethhdr eth;

		if (hs_load(s, off, &eth, sizeof(eth)))
			return -2;
		proto = eth.h_proto;
		off += sizeof(eth);
	}
	HS_UNROLL
	for (int i = 0; i < 2; i++) {
		__be16 vlan[2];

		if (proto != HS_ETH_P_8021Q && proto != HS_ETH_P_8021AD)
			break;
		if (hs_load(s, off, vlan, sizeof(vlan)))
			return -2;
		p->flags |= HS_F_VLAN;
		proto = vlan[1];
		off += sizeof(vlan);
	}
	if (proto == HS_ETH_P_IP)
		r = hs_parse_ipv4(s, off, k, p);
	else if (proto == HS_ETH_P_IPV6)
		r = hs_parse_ipv6(s, off, k, p);
	else
		return -1;
	if (r)
		return -2;
	k->meta = (__u32)p->proto << 16 | p->ip_len;
	return 0;
}

/* what the parser learnt, into the packet's record */
static __always_inline void hs_pkt_to_record(const struct hs_pkt *p, struct hs_record *r)
{
	r->ip_len = p->ip_len;
	r->sport = p->sport;
	r->dport = p->dport;
	r->tos = p->tos;
	r->proto = p->proto;
	r->flags = p->flags;
	__builtin_memcpy(r->saddr, p->saddr, sizeof(p->saddr));
	__builtin_memcpy(r->daddr, p->daddr, sizeof(p->daddr));
}

#endif /* HS_PARSE_H */
