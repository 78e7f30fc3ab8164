// SPDX-License-Identifier: GPL-2.0
/*
 * Per-CPU counters (enum hs_counter): every packet lost or set aside is
 * counted. And the probes' own cost by stage (struct hs_cost).
 */
#include "session.h"

/* the counter of each status a record is emitted with (0: none) */
static const u8 hs_status_counter[] = {
	[HS_ST_COMPLETE] = HS_C_COMPLETE,
	[HS_ST_DROPPED] = HS_C_DROPPED,
	[HS_ST_EVICTED] = HS_C_EVICTED,
	[HS_ST_OTHER_OUT] = HS_C_OTHER_OUT,
	[HS_ST_PARTIAL] = HS_C_PARTIAL,
};

void hs_count_emitted(struct hs_session *s, u8 status, bool queued)
{
	if (status < ARRAY_SIZE(hs_status_counter) && hs_status_counter[status])
		hs_count(s, hs_status_counter[status]);
	if (queued)
		return;
	hs_count(s, HS_C_RB_FAIL);
	if (status == HS_ST_COMPLETE)
		hs_count(s, HS_C_RB_FAIL_COMPLETE);
}

/*
 * A sampled probe's time from its stamp (entry) to now, its return. One
 * this_cpu op per field, as hs_count: safe against preemption and against a
 * probe nesting on this CPU (t0 may run in hardirq), so the sums over CPUs
 * stay exact; such a nested probe can at worst lose a max.
 */
void hs_cost_add(struct hs_session *s, enum hs_stage st, u64 entry)
{
	u64 d = ktime_get_ns() - entry, sq = min_t(u64, d, HS_COST_SQ_CAP), i = hs_cost_bucket(d);
	struct hs_cost __percpu *c = &s->pcpu->cost[st];

	this_cpu_inc(c->n);
	this_cpu_add(c->sum_ns, d);
	this_cpu_add(c->sum_sq, sq * sq);
	if (d > this_cpu_read(c->max_ns))
		this_cpu_write(c->max_ns, d);
	if (i < HS_COST_BUCKETS)
		this_cpu_inc(c->hist[i]);
	else
		this_cpu_inc(c->over);
}

void hs_cost_sum(struct hs_session *s, struct hs_kmod_cost *out)
{
	int cpu, st, i;

	memset(out, 0, sizeof(*out));
	for_each_possible_cpu(cpu) {
		const struct hs_cost *pc = per_cpu_ptr(s->pcpu, cpu)->cost;

		for (st = 0; st < HS_NSTAGES; st++) {
			const struct hs_cost *c = &pc[st];
			struct hs_cost *o = &out->c[st];

			o->n += READ_ONCE(c->n);
			o->sum_ns += READ_ONCE(c->sum_ns);
			o->sum_sq += READ_ONCE(c->sum_sq);
			o->max_ns = max(o->max_ns, READ_ONCE(c->max_ns));
			o->over += READ_ONCE(c->over);
			for (i = 0; i < HS_COST_BUCKETS; i++)
				o->hist[i] += READ_ONCE(c->hist[i]);
		}
	}
}

void hs_counters_sum(struct hs_session *s, struct hs_kmod_counters *out)
{
	int cpu, i;

	memset(out, 0, sizeof(*out));
	for_each_possible_cpu(cpu) {
		const struct hs_pcpu *pc = per_cpu_ptr(s->pcpu, cpu);

		for (i = 0; i < HS_C_NCOUNTERS; i++)
			out->c[i] += READ_ONCE(pc->c[i]);
	}
}
