/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What every backend does alike: allocation, hook description, release. */
#include <stdlib.h>
#include "backend.h"

struct hs_backend *hs_backend_new(const struct hs_backend *ops, size_t priv_size)
{
	struct hs_backend *b = malloc(sizeof(*b));
	void *priv = calloc(1, priv_size);

	if (!b || !priv) {
		free(b);
		free(priv);
		return NULL;
	}
	*b = *ops;
	b->priv = priv;
	b->nhooks = 0;
	b->nlanes = 1;
	js_init(&b->info);
	return b;
}

void hs_backend_hook(struct hs_backend *b, int stage, const char *hook, bool has_priority,
		     int priority)
{
	if (b->nhooks == HS_MAX_HOOKS)
		return;	/* a backend has fewer probes than this: never reached */
	b->hooks[b->nhooks++] = (struct hs_hook){
		.stage = stage,
		.hook = hook,
		.priority = has_priority ? priority : 0,
		.has_priority = has_priority,
	};
}

void hs_backend_free(struct hs_backend *b)
{
	js_free(&b->info);
	free(b->priv);
	free(b);
}
