/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --sample: a run's sampling factor, --sample auto's choice of it, and what
 * the file says of it (docs/record-format.md, "sampling"). */
#ifndef HS_SAMPLE_H
#define HS_SAMPLE_H

#include <stdint.h>
#include "backend.h"
#include "json.h"

#define HS_SAMPLE_MAX (1u << 24)	/* the largest N: a packet in 16 million */

struct hs_sampling {
	uint32_t n;		/* now: 1 packet traced in n */
	uint32_t n_min, n_max;	/* over the run */
	double budget;		/* --cpu-budget, % of one CPU; 0: fixed n */
	uint64_t seen;		/* xdp_pkts at the last step */
	double at;		/* its time, s */
};

void hs_sampling_init(struct hs_sampling *s, const struct hs_config *cfg);
/* auto: the n that keeps the probes' time (cost, per traced packet) within
 * the budget at the rate counters say t1 saw since the last step; 0: keep n */
uint32_t hs_sampling_step(struct hs_sampling *s, double now, const uint64_t *counters,
			  const struct hs_cost *cost);
/* the member "sampling": counters NULL (the header) gives the setting alone */
void hs_sampling_json(struct js *j, const struct hs_sampling *s, const uint64_t *counters);

#endif
