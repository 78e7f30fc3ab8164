// SPDX-License-Identifier: GPL-2.0
/*
 * A recording's life: configure (allocate everything, bounded), start (hook),
 * stop (unhook and wait until no probe runs), free. The caller holds s->lock.
 */
#include <linux/log2.h>
#include <linux/netfilter_ipv4.h>
#include <linux/nsproxy.h>
#include <linux/proc_ns.h>
#include <linux/sched.h>
#include <linux/slab.h>
#include <linux/tracepoint.h>
#include <net/net_namespace.h>
#include "session.h"

/* wake the reader once per tick, not once per record: a wakeup costs more
 * than the probe itself (evaluation/measurements.md, "What probes cost") */
static void hs_wake_fn(struct work_struct *w)
{
	struct hs_session *s = container_of(to_delayed_work(w), struct hs_session, wake);

	if (hs_ring_len(&s->ring))
		wake_up_interruptible(&s->wq);
	if (READ_ONCE(s->state) == HS_RUNNING)
		schedule_delayed_work(&s->wake, 1);
}

struct hs_session *hs_session_new(void)
{
	struct hs_session *s = kzalloc(sizeof(*s), GFP_KERNEL);

	if (!s)
		return NULL;
	mutex_init(&s->lock);
	mutex_init(&s->read_lock);
	init_waitqueue_head(&s->wq);
	INIT_DELAYED_WORK(&s->wake, hs_wake_fn);
	spin_lock_init(&s->ring.lock);
	spin_lock_init(&s->gso.lock);
	s->pcpu = alloc_percpu(struct hs_pcpu);
	s->bounce = kmalloc_array(HS_BOUNCE_RECORDS, sizeof(*s->bounce), GFP_KERNEL);
	if (!s->pcpu || !s->bounce) {
		hs_session_free(s);
		return NULL;
	}
	return s;
}

static void hs_session_release_tables(struct hs_session *s)
{
	hs_slots_free(s);
	hs_ring_free(&s->ring);
}

void hs_session_free(struct hs_session *s)
{
	hs_session_stop(s);
	hs_session_release_tables(s);
	free_percpu(s->pcpu);
	kfree(s->bounce);
	kfree(s);
}

static int hs_check_pow2(u32 *v, u32 dflt, u32 max)
{
	BUILD_BUG_ON_NOT_POWER_OF_2(CONFIG_HOPSCOPE_SLOTS_PER_CPU);
	BUILD_BUG_ON_NOT_POWER_OF_2(CONFIG_HOPSCOPE_RING_RECORDS);
	if (!*v)
		*v = dflt;
	if (!is_power_of_2(*v))
		return -EINVAL;
	return *v > max ? -E2BIG : 0;
}

static int hs_check_ifaces(int *dst, const __u32 *src, u32 n)
{
	u32 i;

	if (n < 1 || n > HS_MAX_IFACES)
		return -EINVAL;
	for (i = 0; i < n; i++) {
		if (!src[i] || src[i] > INT_MAX)
			return -EINVAL;
		dst[i] = src[i];
	}
	return 0;
}

int hs_session_configure(struct hs_session *s, const struct hs_kmod_config *cfg)
{
	u32 slots = cfg->slots_per_cpu, ring = cfg->ring_records;
	struct net *net;
	int cpu, err;

	if (s->state == HS_RUNNING)
		return -EBUSY;
	if (cfg->abi != HS_KMOD_ABI)
		return -EPROTO;
	if (cfg->stages & ~hs_tp_stages())
		return -EOPNOTSUPP;
	if (!(cfg->stages & HS_STAGE_BIT(HS_T1)) || !(cfg->stages & HS_STAGE_BIT(HS_T4)))
		return -EINVAL;
	if (cfg->flags & ~(HS_KMOD_F_DROPS | HS_KMOD_F_FLOOR))
		return -EINVAL;
	if ((cfg->flags & HS_KMOD_F_DROPS) && !hs_tp_found(HS_TP_KFREE))
		return -EOPNOTSUPP;
	err = hs_check_pow2(&slots, CONFIG_HOPSCOPE_SLOTS_PER_CPU, HS_KMOD_MAX_SLOTS) ?:
	      hs_check_pow2(&ring, CONFIG_HOPSCOPE_RING_RECORDS, HS_KMOD_MAX_RING) ?:
	      hs_check_ifaces(s->in_ifindex, cfg->in_ifindex, cfg->n_in) ?:
	      hs_check_ifaces(s->out_ifindex, cfg->out_ifindex, cfg->n_out);
	if (err)
		return err;

	if (cfg->netns_fd >= 0) {
		net = get_net_ns_by_fd(cfg->netns_fd);
		if (IS_ERR(net))
			return PTR_ERR(net);
	} else {
		net = get_net(current->nsproxy->net_ns);
	}

	hs_session_release_tables(s);
	err = hs_slots_init(s, slots) ?: hs_ring_init(&s->ring, ring);
	if (err) {
		hs_session_release_tables(s);
		put_net(net);
		s->state = HS_IDLE;
		return err;
	}
	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(s->pcpu, cpu), 0, sizeof(struct hs_pcpu));
	prandom_seed_full_state(&s->pcpu->rnd);
	s->gso.head = s->gso.n = 0;
	s->n_in = cfg->n_in;
	s->n_out = cfg->n_out;
	s->stages = cfg->stages;
	s->flags = cfg->flags;
	/* no reference kept: the pernet exit tells us when it goes */
	WRITE_ONCE(s->net, net);
	s->net_inum = net->ns.inum;
	put_net(net);
	s->state = HS_CONFIGURED;
	return 0;
}

int hs_session_start(struct hs_session *s)
{
	int err;

	if (s->state != HS_CONFIGURED)
		return -EINVAL;
	if (!s->net)
		return -ENODEV;
	err = hs_nf_attach(s);
	if (err)
		return err;
	err = hs_tp_attach(s);
	if (err) {
		hs_nf_detach(s);
		synchronize_net();
		return err;
	}
	WRITE_ONCE(s->state, HS_RUNNING);
	schedule_delayed_work(&s->wake, 1);
	pr_debug("start: netns %llu, stages 0x%x, %u inputs, %u outputs, %u slots, %u records\n",
		 s->net_inum, s->stages, s->n_in, s->n_out, s->nbuckets * HS_WAYS, s->ring.mask + 1);
	return 0;
}

void hs_session_stop(struct hs_session *s)
{
	if (s->state != HS_RUNNING)
		return;
	WRITE_ONCE(s->state, HS_STOPPED);
	hs_tp_detach(s);
	hs_nf_detach(s);
	/* every probe and hook that started before the unregisters has returned */
	tracepoint_synchronize_unregister();
	synchronize_net();
	cancel_delayed_work_sync(&s->wake);
	wake_up_interruptible(&s->wq);
	if (IS_ENABLED(DEBUG)) {
		struct hs_kmod_counters c;

		hs_counters_sum(s, &c);
		pr_debug("stop: complete %llu dropped %llu evicted %llu rb_fail %llu, %u queued\n",
			 c.c[HS_C_COMPLETE], c.c[HS_C_DROPPED], c.c[HS_C_EVICTED],
			 c.c[HS_C_RB_FAIL], hs_ring_len(&s->ring));
	}
}

/* the recorded netns is being dismantled: unhook there, keep the rest */
void hs_session_net_exit(struct hs_session *s, struct net *net)
{
	mutex_lock(&s->lock);
	if (s->net == net) {
		WRITE_ONCE(s->net, NULL);
		hs_nf_detach(s);
		pr_info("the recorded network namespace went away\n");
	}
	mutex_unlock(&s->lock);
}

void hs_session_info(struct hs_session *s, struct hs_kmod_info *info)
{
	memset(info, 0, sizeof(*info));
	info->abi = HS_KMOD_ABI;
	info->stages = hs_tp_stages();
	info->nr_cpus = num_possible_cpus();
	info->slots = s->nbuckets * HS_WAYS;
	info->ring_records = s->ring.rec ? s->ring.mask + 1 : 0;
	info->prio_pre = NF_IP_PRI_FIRST;
	info->prio_post = NF_IP_PRI_LAST;
	info->netns_inum = s->state == HS_IDLE ? 0 : s->net_inum;
}
