/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Tracepoints are global: keep only the router's namespace. */
#ifndef HS_NETNS_BPF_H
#define HS_NETNS_BPF_H

#include "hopscope.bpf.h"

static __always_inline bool hs_dev_in_router(const struct net_device *dev)
{
	/* ifindex alone is ambiguous: every namespace numbers its own
	 * (evaluation/measurements.md, "Hooks on kernel 6.18") */
	return dev && dev->nd_net.net->ns.inum == cfg_netns_inum;
}

#endif
