/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Following the run's interfaces (ifwatch.h). */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include "ifwatch.h"

void hs_ifwatch_init(struct hs_config *cfg)
{
	for (int i = 0; i < cfg->n_ifaces; i++) {
		cfg->ifaces[i].ifindexes[0] = cfg->ifaces[i].ifindex;
		cfg->ifaces[i].n_ifindexes = 1;
	}
}

/* the interface's ifindex and IFF_UP now; ifindex 0: there is none of that name */
static void look(int fd, const char *name, int *ifindex, bool *up)
{
	struct ifreq ifr = {};

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	*ifindex = ioctl(fd, SIOCGIFINDEX, &ifr) ? 0 : ifr.ifr_ifindex;
	*up = *ifindex && !ioctl(fd, SIOCGIFFLAGS, &ifr) && (ifr.ifr_flags & IFF_UP);
}

static void remember(struct hs_iface *ifc, int ifindex)
{
	int n = ifc->n_ifindexes < HS_IFINDEX_HISTORY ? ifc->n_ifindexes++ :
		HS_IFINDEX_HISTORY - 1;

	ifc->ifindexes[n] = ifindex;
	ifc->ifindex = ifindex;
}

int hs_ifwatch(struct hs_config *cfg, struct hs_backend *b)
{
	/* a socket belongs to the netns it is made in: the router's */
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	for (int i = 0; i < cfg->n_ifaces; i++) {
		struct hs_iface *ifc = &cfg->ifaces[i];
		int ifindex;
		bool up;

		look(fd, ifc->name, &ifindex, &up);
		if (!ifindex) {
			if (!ifc->gone)
				fprintf(stderr, "\nhopscope: %s is gone (deleted or moved out of the "
					"namespace): its packets go untraced until it is back\n",
					ifc->name);
			ifc->n_gone += !ifc->gone;
			ifc->gone = true;
			continue;
		}
		/* back: re-created (a new ifindex), or moved back in, which may
		 * have taken its XDP program off: attached anew either way */
		if (ifindex != ifc->ifindex || ifc->gone) {
			int e;

			if (ifindex != ifc->ifindex)
				remember(ifc, ifindex);
			e = b->follow ? b->follow(b, i) : -EOPNOTSUPP;
			if (e)
				fprintf(stderr, "\nhopscope: ERROR: %s is back as ifindex %d but cannot "
					"be followed (%s): its packets go untraced\n", ifc->name,
					ifindex, strerror(-e));
			else
				fprintf(stderr, "\nhopscope: %s is back as ifindex %d: attached to it\n",
					ifc->name, ifindex);
			err = err ?: e;
		}
		ifc->gone = false;
		if (ifc->down != !up)
			fprintf(stderr, "\nhopscope: %s is %s\n", ifc->name, up ? "up" : "down");
		ifc->n_down += !up && !ifc->down;
		ifc->down = !up;
	}
	close(fd);
	return err;
}

void hs_ifwatch_json(struct js *j, const struct hs_config *cfg)
{
	js_open(j, "ifaces", '{');
	for (int i = 0; i < cfg->n_ifaces; i++) {
		const struct hs_iface *ifc = &cfg->ifaces[i];

		js_open(j, ifc->name, '{');
		js_str(j, "state", ifc->gone ? "gone" : ifc->down ? "down" : "up");
		js_open(j, "ifindexes", '[');
		for (int k = 0; k < ifc->n_ifindexes; k++)
			js_u64(j, NULL, ifc->ifindexes[k]);
		js_close(j, ']');
		js_u64(j, "gone", ifc->n_gone);
		js_u64(j, "down", ifc->n_down);
		js_close(j, '}');
	}
	js_close(j, '}');
}
