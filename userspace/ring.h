/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Reading the record rings the programs hand records over in
 * (include/hopscope.h, struct hs_ring_pos): the recorder's drain. */
#ifndef HS_RING_H
#define HS_RING_H

#include "backend.h"

struct hs_ring_reader {
	const struct hs_record *ring;	/* ncpu rings of 1 << shift records, CPU by CPU */
	struct hs_ring_pos *pos;	/* ncpu positions */
	int ncpu;
	uint32_t shift;
	struct hs_drain_seen *seen;	/* what the drains saw, kept up to date */
};

/*
 * Every committed record of the rings of lane's CPUs (c % nlanes == lane:
 * each ring has one reader), in each ring's order, to cb;
 * a ring's reading stops at a place a program is still filling. A
 * callback's failure ends it (the record is taken, as the callback counts
 * what it could not store): the error, else the records handed over.
 */
int hs_ring_drain(const struct hs_ring_reader *rr, int lane, int nlanes, hs_record_cb cb,
		  void *ctx);

#endif
