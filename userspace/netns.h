/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Moving the recorder into the router's network namespace. */
#ifndef HS_NETNS_H
#define HS_NETNS_H

#include <stdint.h>

/*
 * Enter /run/netns/NAME (NULL: stay) and remount /sys in a private mount
 * namespace so /sys/class/net shows the router's interfaces, as `ip netns
 * exec` does. Netfilter links attach in the loader's namespace, so this comes
 * before any attach. Returns 0 and the namespace inode, or -errno after
 * printing why.
 */
int hs_netns_enter(const char *name, uint64_t *inum);

#endif
