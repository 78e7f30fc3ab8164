/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "ring.h"

/* the most records a ring held when a drain came: lanes race to raise it */
static void seen_waiting(struct hs_drain_seen *seen, uint64_t n)
{
	uint64_t was = __atomic_load_n(&seen->peak_waiting, __ATOMIC_RELAXED);

	while (n > was && !__atomic_compare_exchange_n(&seen->peak_waiting, &was, n, true,
						       __ATOMIC_RELAXED, __ATOMIC_RELAXED))
		;
}

int hs_ring_drain(const struct hs_ring_reader *rr, int lane, int nlanes, hs_record_cb cb,
		  void *ctx)
{
	uint32_t mask = (1u << rr->shift) - 1;
	int got = 0;

	for (int c = lane; c < rr->ncpu; c += nlanes) {
		struct hs_ring_pos *p = &rr->pos[c];
		uint64_t read = p->read, claim = __atomic_load_n(&p->claim, __ATOMIC_ACQUIRE);
		int err = 0;

		/* how full the drain found it (programs stop short of full) */
		seen_waiting(rr->seen, claim - read);

		for (; read != claim && !err; read++) {
			const struct hs_record *at = &rr->ring[(size_t)c << rr->shift | (read & mask)];
			struct hs_record r;

			if (__atomic_load_n(&at->flow, __ATOMIC_ACQUIRE) != hs_ring_token(read))
				break;
			r = *at;
			if (!r.seq)
				continue;	/* given up: its packet left by another way */
			got++;
			err = cb(ctx, &r);
		}
		/* the place is the programs' again once the copy is made */
		__atomic_store_n(&p->read, read, __ATOMIC_RELEASE);
		if (err)
			return err;
	}
	return got;
}
