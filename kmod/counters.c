// SPDX-License-Identifier: GPL-2.0
/* Per-CPU counters (enum hs_counter): every packet lost or set aside is counted. */
#include "session.h"

/* the counter of each status a record is emitted with (0: none) */
static const u8 hs_status_counter[] = {
	[HS_ST_COMPLETE] = HS_C_COMPLETE,
	[HS_ST_DROPPED] = HS_C_DROPPED,
	[HS_ST_EVICTED] = HS_C_EVICTED,
	[HS_ST_OTHER_OUT] = HS_C_OTHER_OUT,
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
