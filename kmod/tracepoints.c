// SPDX-License-Identifier: GPL-2.0
/*
 * The net and skb tracepoints the probes hang on. None of the net ones is
 * exported to modules: find them by name among the kernel's tracepoints.
 */
#include <linux/tracepoint.h>
#include "session.h"

struct hs_tp {
	const char *name;
	void *probe;
	struct tracepoint *tp;
};

static struct hs_tp hs_tps[HS_TP_N] = {
	[HS_TP_NETIF_RX] = { "netif_rx", hs_probe_netif_rx },
	[HS_TP_RECEIVE] = { "netif_receive_skb", hs_probe_receive },
	[HS_TP_QUEUE] = { "net_dev_queue", hs_probe_queue },
	[HS_TP_XMIT] = { "net_dev_start_xmit", hs_probe_xmit },
	[HS_TP_KFREE] = { "kfree_skb", hs_probe_kfree },
	[HS_TP_CONSUME] = { "consume_skb", hs_probe_consume },
};

static void hs_tp_match(struct tracepoint *tp, void *priv)
{
	int i;

	for (i = 0; i < HS_TP_N; i++)
		if (!strcmp(tp->name, hs_tps[i].name))
			hs_tps[i].tp = tp;
}

int hs_tp_lookup(void)
{
	int i;

	for_each_kernel_tracepoint(hs_tp_match, NULL);
	for (i = 0; i < HS_TP_N; i++)
		if (!hs_tps[i].tp)
			pr_info("tracepoint %s not found: its stage is not available\n",
				hs_tps[i].name);
	if (!hs_tps[HS_TP_RECEIVE].tp || !hs_tps[HS_TP_XMIT].tp || !hs_tps[HS_TP_CONSUME].tp)
		return -ENOENT;
	return 0;
}

bool hs_tp_found(enum hs_tp_id id)
{
	return hs_tps[id].tp;
}

u32 hs_tp_stages(void)
{
	u32 stages = HS_KMOD_STAGES;

	if (!hs_tps[HS_TP_NETIF_RX].tp)
		stages &= ~HS_STAGE_BIT(HS_T0);
	if (!hs_tps[HS_TP_QUEUE].tp)
		stages &= ~HS_STAGE_BIT(HS_TCEG);
	return stages;
}

/* outputs and drops first, inputs last: a packet stamped at input finds its exit hooked */
int hs_tp_attach(struct hs_session *s)
{
	static const enum hs_tp_id order[] = {
		HS_TP_KFREE, HS_TP_XMIT, HS_TP_CONSUME, HS_TP_QUEUE, HS_TP_RECEIVE,
		HS_TP_NETIF_RX,
	};
	/* consume_skb: a merged packet cut into segments (gso.c) */
	u32 want = BIT(HS_TP_RECEIVE) | BIT(HS_TP_XMIT) | BIT(HS_TP_CONSUME);
	int i, err;

	if (hs_stage_on(s, HS_T0))
		want |= BIT(HS_TP_NETIF_RX);
	if (hs_stage_on(s, HS_TCEG))
		want |= BIT(HS_TP_QUEUE);
	if (s->flags & HS_KMOD_F_DROPS)
		want |= BIT(HS_TP_KFREE);
	for (i = 0; i < ARRAY_SIZE(order); i++) {
		struct hs_tp *t = &hs_tps[order[i]];

		if (!(want & BIT(order[i])))
			continue;
		err = tracepoint_probe_register(t->tp, t->probe, s);
		if (err) {
			pr_err("tracepoint %s: error %d\n", t->name, err);
			hs_tp_detach(s);
			return err;
		}
		s->tp_on |= BIT(order[i]);
	}
	return 0;
}

/* the caller waits for running probes (tracepoint_synchronize_unregister) before freeing */
void hs_tp_detach(struct hs_session *s)
{
	int i;

	/* inputs first (enum order): no new packet after the first unregister */
	for (i = 0; i < HS_TP_N; i++) {
		if (!(s->tp_on & BIT(i)))
			continue;
		tracepoint_probe_unregister(hs_tps[i].tp, hs_tps[i].probe, s);
		s->tp_on &= ~BIT(i);
	}
}
