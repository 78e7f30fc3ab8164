/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What every backend does alike: allocation, hook description, release. */
#include <stdlib.h>
#include "backend.h"

static const char *hooks_json(struct hs_backend *b)
{
	return js_text(&b->hooks);
}

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
	b->hooks_json = hooks_json;
	js_init(&b->hooks);
	return b;
}

void hs_backend_free(struct hs_backend *b)
{
	js_free(&b->hooks);
	free(b->priv);
	free(b);
}
