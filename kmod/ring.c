// SPDX-License-Identifier: GPL-2.0
/* The queue of finished records between the probes and read(). */
#include <linux/mm.h>
#include <linux/slab.h>
#include "session.h"

int hs_ring_init(struct hs_ring *r, u32 records)
{
	spin_lock_init(&r->lock);
	r->head = r->tail = 0;
	r->mask = records - 1;
	r->rec = kvcalloc(records, sizeof(*r->rec), GFP_KERNEL);
	return r->rec ? 0 : -ENOMEM;
}

void hs_ring_free(struct hs_ring *r)
{
	kvfree(r->rec);
	r->rec = NULL;
}

/* false when full: the caller counts the loss */
bool hs_ring_push(struct hs_ring *r, const struct hs_record *rec)
{
	unsigned long flags;
	bool ok = false;

	spin_lock_irqsave(&r->lock, flags);
	if (r->head - r->tail <= r->mask) {
		r->rec[r->head & r->mask] = *rec;
		r->head++;
		ok = true;
	}
	spin_unlock_irqrestore(&r->lock, flags);
	return ok;
}

u32 hs_ring_pop(struct hs_ring *r, struct hs_record *out, u32 max)
{
	unsigned long flags;
	u32 n = 0;

	spin_lock_irqsave(&r->lock, flags);
	while (n < max && r->tail != r->head) {
		out[n++] = r->rec[r->tail & r->mask];
		r->tail++;
	}
	spin_unlock_irqrestore(&r->lock, flags);
	return n;
}

u32 hs_ring_len(struct hs_ring *r)
{
	return READ_ONCE(r->head) - READ_ONCE(r->tail);
}
