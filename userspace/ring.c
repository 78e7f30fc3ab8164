/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include "ring.h"

int hs_ring_drain(const struct hs_ring_reader *rr, hs_record_cb cb, void *ctx)
{
	uint32_t mask = (1u << rr->shift) - 1;
	int got = 0;

	for (int c = 0; c < rr->ncpu; c++) {
		struct hs_ring_pos *p = &rr->pos[c];
		uint64_t read = p->read, claim = __atomic_load_n(&p->claim, __ATOMIC_ACQUIRE);
		int err = 0;

		/* how full the drain found it (programs stop short of full) */
		if (claim - read > rr->seen->peak_waiting)
			rr->seen->peak_waiting = claim - read;

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
