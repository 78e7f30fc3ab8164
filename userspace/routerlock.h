/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* One recorder per router: a lock file named by the router's netns inode. */
#ifndef HS_ROUTERLOCK_H
#define HS_ROUTERLOCK_H

#include <stdint.h>

#define HS_LOCK_DIR "/run/hopscope"

/*
 * Take dir/recorder-INODE.lock (flock, exclusive, without waiting) and write
 * who holds it there: pid, netns name, --in, --out, start time, one line.
 * Returns its fd, to keep open for the run's life (closed at exit, the lock
 * goes with it, a crash's too), or -1 after saying why: another recorder
 * holds it (its line is in the message) or the file cannot be made.
 */
int hs_router_lock(const char *dir, uint64_t netns_inum, const char *netns, const char *in,
		   const char *out);

#endif
