/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* 5-tuples seen in a run, numbered in order of first sight, and their NAT
 * translations (include/hopscope_file.h, HS_FLOW_NAT). */
#ifndef HS_FLOWS_H
#define HS_FLOWS_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "hopscope_file.h"

struct hs_flows {
	struct hs_flow *items;		/* by id */
	uint32_t *index;		/* open addressing: id + 1, 0 = empty */
	uint32_t n, cap, mask, max;
	uint32_t written;		/* items[0..written) are in the file */
	uint64_t overflow;		/* records whose flow did not fit */
	/* NAT translations (kind HS_FLOW_NAT*), each as written, in order */
	struct hs_flow *nat;
	uint32_t nat_n, nat_cap;
	uint32_t nat_written;		/* nat[0..nat_written) are in the file */
	uint32_t *nat_last;		/* by flow id: index + 1 in nat of its last item, 0: none */
	uint32_t nat_flows;		/* flows with a translation */
	uint32_t nat_changed;		/* flows whose translation changed */
};

int hs_flows_init(struct hs_flows *f, uint32_t max);
void hs_flows_free(struct hs_flows *f);
/*
 * A drain thread's memory of the flows it saw last: tuple to id, direct
 * mapped, so that drain threads seldom take the shared table's lock. A
 * miss asks the table (under mu), adding the flow if new, and replaces the
 * slot; a flow the full table has no room for is not remembered (each of
 * its records counts in overflow).
 */
#define HS_MEMO_BITS 10

struct hs_flow_memo {
	struct hs_flow slot[1u << HS_MEMO_BITS];	/* id: the table's; free: family 0 */
};

/* the record's flow id, from the memo, else the table f under mu */
uint32_t hs_flow_memo_id(struct hs_flow_memo *m, struct hs_flows *f, pthread_mutex_t *mu,
			 const struct hs_record *r);
/* the kernel's translation of the flow `from` (add: adding the flow if new;
 * else only a flow in the table): a new item when it is new or changed, or,
 * final, when its packets grew; -ENOMEM when it cannot be kept */
int hs_flows_nat(struct hs_flows *f, const struct hs_tuple *from, const struct hs_nat *n,
		 bool final, bool add);

#endif
