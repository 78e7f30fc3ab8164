/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* --sample N and --sample auto --cpu-budget PCT (sample.h). */
#include <math.h>
#include <stdio.h>
#include "sample.h"

void hs_sampling_init(struct hs_sampling *s, const struct hs_config *cfg)
{
	*s = (struct hs_sampling){ .n = cfg->sample_n, .n_min = cfg->sample_n,
				   .n_max = cfg->sample_n, .budget = cfg->cpu_budget, .at = -1 };
}

/* the probes' mean time on a traced packet: every stage's sampled mean, added */
static double traced_ns(const struct hs_cost *cost)
{
	double ns = 0;

	for (int st = 0; st < HS_NSTAGES; st++)
		if (cost[st].n)
			ns += (double)cost[st].sum_ns / cost[st].n;
	return ns;
}

uint32_t hs_sampling_step(struct hs_sampling *s, double now, const uint64_t *counters,
			  const struct hs_cost *cost)
{
	uint64_t seen = counters[HS_C_XDP_PKTS];
	double rate, ns, want;
	uint32_t n;

	if (s->budget <= 0)
		return 0;
	rate = s->at >= 0 && now > s->at && seen >= s->seen ? (seen - s->seen) / (now - s->at) : -1;
	s->seen = seen;
	s->at = now;
	ns = traced_ns(cost);
	/* no rate yet, or no cost sampled yet (the first traced packets) */
	if (rate < 0 || ns <= 0)
		return 0;
	/* rate / n packets a second at ns each within budget % of 1e9 ns */
	want = ceil(rate * ns / (s->budget * 1e7));
	n = want < 1 ? 1 : want > HS_SAMPLE_MAX ? HS_SAMPLE_MAX : (uint32_t)want;
	if (n == s->n)
		return 0;
	s->n = n;
	if (n < s->n_min)
		s->n_min = n;
	if (n > s->n_max)
		s->n_max = n;
	return n;
}

void hs_sampling_json(struct js *j, const struct hs_sampling *s, const uint64_t *counters)
{
	char pct[32];

	js_open(j, "sampling", '{');
	js_str(j, "mode", s->budget > 0 ? "auto" : s->n > 1 ? "fixed" : "off");
	js_u64(j, "n", s->n);
	if (s->budget > 0) {
		snprintf(pct, sizeof(pct), "%.6g", s->budget);
		js_raw(j, "cpu_budget_pct", pct);
	}
	if (counters) {
		uint64_t seen = counters[HS_C_XDP_PKTS], out = counters[HS_C_UNSAMPLED];

		js_u64(j, "n_min", s->n_min);
		js_u64(j, "n_max", s->n_max);
		js_u64(j, "seen", seen);
		/* a snapshot reads xdp_pkts before unsampled: never below 0 */
		js_u64(j, "sampled", seen > out ? seen - out : 0);
		js_u64(j, "unsampled", out);
	}
	js_close(j, '}');
}
