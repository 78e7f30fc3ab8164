/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel tells only what the stamps show: a packet out of a traced output
 * with t2 and t3 took the IP stack, one with neither skipped netfilter's IP
 * hooks. Which fast path skipped them, or which detour a stack packet took on
 * the way in, is a fact of its input the recorder found at start (ifaces.c):
 * named here only when exactly one mechanism on that input explains it, so a
 * name is never a guess.
 */
#include "paths.h"

static const struct hs_iface *input_of(const struct hs_config *cfg, uint32_t ifindex)
{
	for (int i = 0; i < cfg->n_ifaces; i++) {
		const struct hs_iface *ifc = &cfg->ifaces[i];

		if (!ifc->is_in)
			continue;
		if ((uint32_t)ifc->ifindex == ifindex)
			return ifc;
		for (int k = 0; k < ifc->n_ifindexes; k++)
			if ((uint32_t)ifc->ifindexes[k] == ifindex)
				return ifc;
	}
	return NULL;
}

uint8_t hs_path_of(const struct hs_config *cfg, const struct hs_record *r)
{
	const struct hs_iface *in;
	uint32_t f;

	if (r->status != HS_ST_COMPLETE && r->status != HS_ST_PARTIAL)
		return r->path;
	in = input_of(cfg, r->in_ifindex);
	if (!in || !in->fast)
		return r->path;
	f = in->fast;
	if (r->path == HS_PATH_NO_NF) {
		uint32_t fast = f & (HS_IFP_FLOWTABLE | HS_IFP_TC_FOREIGN);

		if (fast == HS_IFP_FLOWTABLE)
			return HS_PATH_FLOWTABLE;
		if (fast == HS_IFP_TC_FOREIGN)
			return HS_PATH_TC_REDIRECT;
	} else if (r->path == HS_PATH_STACK) {
		bool br = f & (r->flags & HS_F_IPV6 ? HS_IFP_BR_NF6 : HS_IFP_BR_NF4);

		if (br && !(f & HS_IFP_IFB))
			return HS_PATH_BRIDGE_NF;
		if (!br && (f & HS_IFP_IFB))
			return HS_PATH_IFB;
	}
	return r->path;
}
