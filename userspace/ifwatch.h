/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The interfaces during a run: an always-on recorder outlives an interface
 * going down, being deleted and being re-created (a new ifindex). Looked at
 * once a second; what was seen is said on stderr and counted in the COUNTERS
 * and END JSON ("ifaces", docs/record-format.md).
 */
#ifndef HS_IFWATCH_H
#define HS_IFWATCH_H

#include "backend.h"
#include "json.h"

/* before the run: each interface's first ifindex */
void hs_ifwatch_init(struct hs_config *cfg);
/* looks at every interface (in the current netns); a re-created one is
 * handed to b->follow. Returns 0, or -errno when following one failed
 * (said on stderr; the run goes on without it) */
int hs_ifwatch(struct hs_config *cfg, struct hs_backend *b);
/* "ifaces": {NAME: {"state", "ifindexes", "gone", "down"}} */
void hs_ifwatch_json(struct js *j, const struct hs_config *cfg);

#endif
