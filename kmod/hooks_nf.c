// SPDX-License-Identifier: GPL-2.0
/*
 * t2 and t3: netfilter PRE_ROUTING at the earliest priority (routing starts,
 * before defrag and conntrack) and POST_ROUTING at the latest (routing done),
 * IPv4 and IPv6, registered only in the recorded netns. Optional FORWARD
 * stamp; LOCAL_IN retires packets addressed to the router itself, which are
 * not forwarded and must not be counted as lost.
 */
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6.h>
#include "session.h"

/* what each stamping hook stamps and counts, by hook number */
static const struct hs_nf_stamp {
	int prio;
	u8 stage;
	u8 hit;		/* the packet has a slot */
	u8 miss;	/* it has none; HS_C_NCOUNTERS: not counted */
} hs_nf_stamps[NF_INET_NUMHOOKS] = {
	[NF_INET_PRE_ROUTING] = { NF_IP_PRI_FIRST, HS_T2, HS_C_PRE_PKTS, HS_C_PRE_NOMETA },
	[NF_INET_FORWARD] = { NF_IP_PRI_FIRST, HS_FWD, HS_C_OPT_PKTS, HS_C_NCOUNTERS },
	[NF_INET_POST_ROUTING] = { NF_IP_PRI_LAST, HS_T3, HS_C_POST_PKTS, HS_C_POST_NOMETA },
};

static unsigned int hs_nf_stamp(void *priv, struct sk_buff *skb, const struct nf_hook_state *st)
{
	const struct hs_nf_stamp *h = &hs_nf_stamps[st->hook];
	struct hs_session *s = priv;
	u64 now, seq;

	HS_FLOOR_EXIT(s, NF_ACCEPT);
	now = ktime_get_ns();
	seq = hs_slot_stamp(s, skb, h->stage, now);
	if (!seq) {
		if (h->miss != HS_C_NCOUNTERS)
			hs_count(s, h->miss);
		return NF_ACCEPT;
	}
	hs_count(s, h->hit);
	if (hs_cost_sampled(seq))
		hs_cost_add(s, h->stage, now);
	if (h->stage == HS_T3)
		hs_frag_expect(s, skb);
	return NF_ACCEPT;
}

static unsigned int hs_nf_local_in(void *priv, struct sk_buff *skb, const struct nf_hook_state *st)
{
	struct hs_session *s = priv;
	struct hs_bucket *b;
	struct hs_slot *slot;
	unsigned long flags;

	HS_FLOOR_EXIT(s, NF_ACCEPT);
	slot = hs_slot_find_fwd(s, skb, &b, &flags);
	if (slot) {
		hs_count(s, HS_C_LOCAL);
		hs_slot_free(slot);
		hs_slot_unlock(b, flags);
	}
	return NF_ACCEPT;
}

static void hs_nf_add(struct hs_session *s, nf_hookfn *fn, unsigned int hook, int prio)
{
	static const u8 families[] = { NFPROTO_IPV4, NFPROTO_IPV6 };
	int i;

	for (i = 0; i < (IS_ENABLED(CONFIG_IPV6) ? 2 : 1); i++) {
		struct nf_hook_ops *op = &s->nf_ops[s->n_nf_ops++];

		memset(op, 0, sizeof(*op));
		op->hook = fn;
		op->pf = families[i];
		op->hooknum = hook;
		op->priority = prio;
		op->priv = s;
	}
}

int hs_nf_attach(struct hs_session *s)
{
	static const u8 stamping[] = { NF_INET_POST_ROUTING, NF_INET_FORWARD, NF_INET_PRE_ROUTING };
	int i, err;

	/* exits first, as the tracepoints: a packet stamped at t2 finds t3 hooked */
	s->n_nf_ops = 0;
	hs_nf_add(s, hs_nf_local_in, NF_INET_LOCAL_IN, NF_IP_PRI_LAST);
	for (i = 0; i < ARRAY_SIZE(stamping); i++) {
		const struct hs_nf_stamp *h = &hs_nf_stamps[stamping[i]];

		if (hs_stage_on(s, h->stage))
			hs_nf_add(s, hs_nf_stamp, stamping[i], h->prio);
	}
	err = nf_register_net_hooks(s->net, s->nf_ops, s->n_nf_ops);
	if (err) {
		pr_err("netfilter hooks: error %d\n", err);
		return err;
	}
	s->nf_net = s->net;
	return 0;
}

/* the caller waits for running hooks (synchronize_rcu) before freeing */
void hs_nf_detach(struct hs_session *s)
{
	if (!s->nf_net)
		return;
	nf_unregister_net_hooks(s->nf_net, s->nf_ops, s->n_nf_ops);
	s->nf_net = NULL;
}
