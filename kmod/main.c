// SPDX-License-Identifier: GPL-2.0
/*
 * hopscope.ko: per-packet timestamps at a software router's stages (input,
 * PRE_ROUTING, POST_ROUTING, transmit), one record per packet, for the same
 * userspace as the eBPF backend. Module load and the pernet hook that tells a
 * recording its netns is going away.
 */
#include <linux/module.h>
#include <net/net_namespace.h>
#include "session.h"

DEFINE_MUTEX(hs_global_lock);
struct hs_session *hs_current;

static void __net_exit hs_net_exit(struct net *net)
{
	mutex_lock(&hs_global_lock);
	if (hs_current)
		hs_session_net_exit(hs_current, net);
	mutex_unlock(&hs_global_lock);
}

static struct pernet_operations hs_net_ops = {
	.exit = hs_net_exit,
};

static int __init hs_init(void)
{
	int err;

	err = hs_tp_lookup();
	if (err) {
		pr_err("needs the net:netif_receive_skb and net:net_dev_start_xmit tracepoints\n");
		return err;
	}
	err = register_pernet_subsys(&hs_net_ops);
	if (err)
		return err;
	err = hs_chardev_init();
	if (err) {
		unregister_pernet_subsys(&hs_net_ops);
		return err;
	}
	pr_info("ready: /dev/hopscope %s, stages 0x%x, record ABI %d.%d\n", HS_VERSION,
		hs_tp_stages(), HS_VERSION_MAJOR, HS_VERSION_MINOR);
	return 0;
}

static void __exit hs_exit(void)
{
	/* no session is left: an open file holds a module reference */
	hs_chardev_exit();
	unregister_pernet_subsys(&hs_net_ops);
}

module_init(hs_init);
module_exit(hs_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("hopscope: per-packet stage timestamps of a software router");
MODULE_VERSION(HS_VERSION);
