/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * NAT at t3: the packet's tuple as POST_ROUTING sees it, after every NAT
 * hook, against the one t1 read from the wire (the slot's). Most packets
 * pass with a few loads and compares; a translated one files its tuple in
 * `nat` by the original (include/hopscope.h, struct hs_nat), which the
 * recorder copies into the file's flow table.
 */
#ifndef HS_NAT_BPF_H
#define HS_NAT_BPF_H

#include "hopscope.bpf.h"

#ifndef EEXIST
#define EEXIST 17	/* vmlinux.h has no errno values */
#endif

HS_EXTERN struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct hs_tuple);
	__type(value, struct hs_nat);
	__uint(max_entries, HS_NAT_MAX);
} nat SEC(".maps");

/* ports compared only for TCP or UDP, whole, with no IPv6 extension headers
 * in front (the transport header is then right after the IP header); the
 * translation of another packet has ports 0 */
static __always_inline bool hs_nat_ports(const struct hs_record *rec)
{
	return (rec->proto == IPPROTO_TCP || rec->proto == IPPROTO_UDP) &&
	       !(rec->flags & (HS_F_FRAGMENT | HS_F_TRUNC | HS_F_IPV6_EXT));
}

/* skb's tuple into to; false when it is the slot's (no NAT) */
static __always_inline bool hs_nat_read(const struct sk_buff *skb, const struct hs_record *rec,
					struct hs_tuple *to)
{
	unsigned char *head = skb->head;
	bool same;
	int i;

	if (rec->flags & HS_F_IPV6) {
		const struct ipv6hdr *ip6 = hs_cast(head + skb->network_header, struct ipv6hdr);

		same = true;
		for (i = 0; i < 4; i++) {
			to->saddr[i] = ip6->saddr.in6_u.u6_addr32[i];
			to->daddr[i] = ip6->daddr.in6_u.u6_addr32[i];
			same &= to->saddr[i] == rec->saddr[i] && to->daddr[i] == rec->daddr[i];
		}
	} else {
		const struct iphdr *ip = hs_cast(head + skb->network_header, struct iphdr);

		to->saddr[0] = ip->saddr;
		to->daddr[0] = ip->daddr;
		same = to->saddr[0] == rec->saddr[0] && to->daddr[0] == rec->daddr[0];
	}
	if (hs_nat_ports(rec)) {
		/* TCP's ports lie where UDP's do */
		const struct udphdr *uh = hs_cast(head + skb->transport_header, struct udphdr);

		to->sport = bpf_ntohs(uh->source);
		to->dport = bpf_ntohs(uh->dest);
		same = same && to->sport == rec->sport && to->dport == rec->dport;
	}
	return !same;
}

/* one more packet of a filed translation; false: it was translated otherwise */
static __always_inline bool hs_nat_same(struct hs_nat *v, const struct hs_tuple *to)
{
	bool same = v->to.sport == to->sport && v->to.dport == to->dport;
	int i;

	/* family and proto are the key's: NAT keeps them */
	for (i = 0; i < 4; i++)
		same &= v->to.saddr[i] == to->saddr[i] && v->to.daddr[i] == to->daddr[i];
	if (!same)
		return false;
	__sync_fetch_and_add(&v->packets, 1);
	return true;
}

static __always_inline void hs_nat_file(const struct hs_tuple *key, const struct hs_tuple *to)
{
	struct hs_nat n = { .to = *to, .packets = 1 };
	struct hs_nat *v = bpf_map_lookup_elem(&nat, key);
	long err;

	if (!v) {
		err = bpf_map_update_elem(&nat, key, &n, BPF_NOEXIST);
		if (!err) {
			hs_count(HS_C_NAT_NEW);
			return;
		}
		/* another CPU filed it first */
		v = err == -EEXIST ? bpf_map_lookup_elem(&nat, key) : NULL;
		if (!v) {
			hs_count(HS_C_NAT_FULL);
			return;
		}
	}
	if (hs_nat_same(v, to))
		return;
	/* replaced whole (the recorder never reads half of one), the change counted */
	n.packets = v->packets + 1;
	n.changes = v->changes + 1;
	bpf_map_update_elem(&nat, key, &n, BPF_EXIST);
	hs_count(HS_C_NAT_CHANGED);
}

/* at t3, after the stamp: a packet NAT changed files its translation */
static __always_inline void hs_nat_check(const struct sk_buff *skb, struct hs_record *rec,
					 __u64 seq)
{
	struct hs_tuple key = {}, to = {};

	if (!hs_nat_read(skb, rec, &to))
		return;
	/* the flow as the recorder keys the record's: its ports as t1 read them */
	key.family = to.family = rec->flags & HS_F_IPV6 ? 6 : 4;
	key.proto = to.proto = rec->proto;
	key.sport = rec->sport;
	key.dport = rec->dport;
	__builtin_memcpy(key.saddr, rec->saddr, sizeof(key.saddr));
	__builtin_memcpy(key.daddr, rec->daddr, sizeof(key.daddr));
	/* the slot changed hands since the stamp: its tuple is another packet's */
	if (hs_seq_now(rec, seq) != seq)
		return;
	hs_count(HS_C_NAT);
	hs_nat_file(&key, &to);
}

#endif
