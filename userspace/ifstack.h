/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The router's interface stack (bridges, bonds, VLANs, tunnels, ifb) and
 * what takes an input's packets off the IP stack path (hs_iface.fast). */
#ifndef HS_IFSTACK_H
#define HS_IFSTACK_H

#include <stdbool.h>
#include <stdint.h>
#include "backend.h"
#include "json.h"

/* one device of the router's netns, as rtnetlink tells it: netns-correct
 * whether or not /sys could be remounted for it */
struct hs_link {
	int ifindex;
	char name[32];
	char kind[16];		/* IFLA_INFO_KIND; "" for a device without one (a NIC) */
	int master;		/* its bridge, bond, team or VRF; 0: none */
	int link;		/* in this netns, what it sits on: a VLAN's or macvlan's
				 * parent, a tunnel's underlay (its link, else the route
				 * to its remote); 0: none or unknown */
	bool nf_call[2];	/* a bridge's own nf_call_iptables, nf_call_ip6tables */
	int remote_af;		/* a tunnel's remote (AF_INET, AF_INET6; 0: none) */
	unsigned char remote[16];
	bool link_netns;	/* what it sits on is in another netns */
	bool up;		/* IFF_UP */
	uint32_t ep[2];		/* a tunnel's outer packets: protocol << 16 | UDP port */
};

struct hs_links {
	struct hs_link *l;
	int n;
};

/* every device of the current netns; -errno */
int hs_links_read(struct hs_links *ls);
void hs_links_free(struct hs_links *ls);

/* Once the interfaces are resolved, before the backend attaches: refuses
 * (-EINVAL, exit 2) a device named with its L2 upper on one side; fills
 * cfg->pass_if with the outputs' L2 uppers and the netns's ifb devices, each
 * input's fast bits and cfg->flowtables_known; says on stderr what the stack
 * means for t1 and t4. -errno (said) on other failures. */
int hs_ifstack_check(struct hs_config *cfg);

/* members "fast_paths", "master", "upper", "lower" of interface ifc's object */
void hs_ifstack_json(struct js *j, const struct hs_links *ls, const struct hs_iface *ifc);

#endif
