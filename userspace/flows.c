/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The run's flow table: 5-tuples by id, and the translations NAT made of them. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "flows.h"

int hs_flows_init(struct hs_flows *f, uint32_t max)
{
	memset(f, 0, sizeof(*f));
	f->max = max;
	f->cap = 1024;
	f->mask = 2 * f->cap - 1;
	f->items = calloc(f->cap, sizeof(*f->items));
	f->nat_last = calloc(f->cap, sizeof(*f->nat_last));
	f->index = calloc(f->mask + 1, sizeof(*f->index));
	return f->items && f->nat_last && f->index ? 0 : -ENOMEM;
}

void hs_flows_free(struct hs_flows *f)
{
	free(f->items);
	free(f->nat_last);
	free(f->nat);
	free(f->index);
	memset(f, 0, sizeof(*f));
}

static void tuple_of(struct hs_flow *t, const struct hs_record *r)
{
	memset(t, 0, sizeof(*t));
	t->family = r->flags & HS_F_IPV6 ? 6 : 4;
	t->proto = r->proto;
	t->sport = r->sport;
	t->dport = r->dport;
	memcpy(t->saddr, r->saddr, sizeof(t->saddr));
	memcpy(t->daddr, r->daddr, sizeof(t->daddr));
}

static uint32_t tuple_hash(const struct hs_flow *t)
{
	struct hs_key_input k = { .meta = (uint32_t)t->family << 24 | t->proto << 16 };

	memcpy(k.saddr, t->saddr, sizeof(k.saddr));
	memcpy(k.daddr, t->daddr, sizeof(k.daddr));
	k.l4[0] = (uint32_t)t->sport << 16 | t->dport;
	return hs_key_hash(&k);
}

/* id field excluded: compare from family on */
static int same(const struct hs_flow *a, const struct hs_flow *b)
{
	return !memcmp(&a->family, &b->family, sizeof(*a) - sizeof(a->id));
}

static int grow(struct hs_flows *f)
{
	uint32_t cap = f->cap * 2, mask = 2 * cap - 1;
	struct hs_flow *items = realloc(f->items, cap * sizeof(*items));
	uint32_t *index, *nat_last;

	if (!items)
		return -ENOMEM;
	f->items = items;
	nat_last = realloc(f->nat_last, cap * sizeof(*nat_last));
	if (!nat_last)
		return -ENOMEM;
	memset(nat_last + f->cap, 0, (cap - f->cap) * sizeof(*nat_last));
	f->nat_last = nat_last;
	index = calloc(mask + 1, sizeof(*index));
	if (!index)
		return -ENOMEM;
	for (uint32_t id = 0; id < f->n; id++) {
		uint32_t h = tuple_hash(&items[id]) & mask;

		while (index[h])
			h = (h + 1) & mask;
		index[h] = id + 1;
	}
	free(f->index);
	f->index = index;
	f->cap = cap;
	f->mask = mask;
	return 0;
}

/* t's id, t added if new and add; HS_FLOW_NONE: not added (the table is full) */
static uint32_t id_of(struct hs_flows *f, struct hs_flow t, bool add)
{
	uint32_t h;

	for (h = tuple_hash(&t) & f->mask; f->index[h]; h = (h + 1) & f->mask)
		if (same(&f->items[f->index[h] - 1], &t))
			return f->index[h] - 1;
	if (!add || f->n >= f->max || (f->n == f->cap && grow(f)))
		return HS_FLOW_NONE;
	for (h = tuple_hash(&t) & f->mask; f->index[h]; h = (h + 1) & f->mask)
		;
	t.id = f->n;
	f->items[f->n] = t;
	f->index[h] = ++f->n;
	return t.id;
}

uint32_t hs_flow_memo_id(struct hs_flow_memo *m, struct hs_flows *f, pthread_mutex_t *mu,
			 const struct hs_record *r)
{
	/* a cheap mix of the fields that tell flows apart: the table's hash
	 * (hs_key_hash) costs more than the lookup it would save */
	uint32_t h = (r->saddr[0] ^ r->saddr[3] ^ r->daddr[0] ^ r->daddr[3] ^
		      ((uint32_t)r->sport << 16 | r->dport) ^ r->proto) * 0x9e3779b1u;
	struct hs_flow *s = &m->slot[h >> (32 - HS_MEMO_BITS)], t;

	tuple_of(&t, r);
	if (same(s, &t))
		return s->id;
	pthread_mutex_lock(mu);
	t.id = id_of(f, t, true);
	f->overflow += t.id == HS_FLOW_NONE;	/* each such record: never remembered */
	pthread_mutex_unlock(mu);
	if (t.id != HS_FLOW_NONE)
		*s = t;
	return t.id;
}

static void flow_of(struct hs_flow *t, const struct hs_tuple *from)
{
	memset(t, 0, sizeof(*t));
	t->family = from->family;
	t->proto = from->proto;
	t->sport = from->sport;
	t->dport = from->dport;
	memcpy(t->saddr, from->saddr, sizeof(t->saddr));
	memcpy(t->daddr, from->daddr, sizeof(t->daddr));
}

int hs_flows_nat(struct hs_flows *f, const struct hs_tuple *from, const struct hs_nat *n,
		 bool final, bool add)
{
	struct hs_flow from_t, to, *last;
	uint32_t id;

	flow_of(&from_t, from);
	id = id_of(f, from_t, add);
	if (id == HS_FLOW_NONE)	/* none of its records here, or they have no flow: counted */
		return 0;
	flow_of(&to, &n->to);
	to.id = id;
	to.kind = n->changes ? HS_FLOW_NAT_CHANGED : HS_FLOW_NAT;
	to.packets = n->packets > UINT32_MAX ? UINT32_MAX : n->packets;
	last = f->nat_last[id] ? &f->nat[f->nat_last[id] - 1] : NULL;
	if (last && !memcmp(&last->family, &to.family, offsetof(struct hs_flow, packets) -
			    offsetof(struct hs_flow, family)) &&
	    (!final || last->packets == to.packets))
		return 0;
	if (f->nat_n == f->nat_cap) {
		uint32_t cap = f->nat_cap ? 2 * f->nat_cap : 256;
		struct hs_flow *items = realloc(f->nat, cap * sizeof(*items));

		if (!items)
			return -ENOMEM;
		f->nat = items;
		f->nat_cap = cap;
	}
	f->nat_flows += !last;
	f->nat_changed += to.kind == HS_FLOW_NAT_CHANGED &&
			  (!last || last->kind != HS_FLOW_NAT_CHANGED);
	f->nat[f->nat_n++] = to;
	f->nat_last[id] = f->nat_n;
	return 0;
}
