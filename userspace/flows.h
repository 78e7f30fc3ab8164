/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* 5-tuples seen in a run, numbered in order of first sight. */
#ifndef HS_FLOWS_H
#define HS_FLOWS_H

#include <stdint.h>
#include "hopscope_file.h"

struct hs_flows {
	struct hs_flow *items;		/* by id */
	uint64_t *done_t1;		/* by id: latest t1 of the flow's complete packets */
	uint32_t *index;		/* open addressing: id + 1, 0 = empty */
	uint32_t n, cap, mask, max;
	uint32_t written;		/* items[0..written) are in the file */
	uint64_t overflow;		/* records whose flow did not fit */
};

int hs_flows_init(struct hs_flows *f, uint32_t max);
void hs_flows_free(struct hs_flows *f);
/* the record's flow id, adding the flow if new */
uint32_t hs_flows_id(struct hs_flows *f, const struct hs_record *r);

#endif
