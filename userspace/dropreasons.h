/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#ifndef HS_DROPREASONS_H
#define HS_DROPREASONS_H

#include "json.h"

/* "drop_reasons": {"NUMBER": "NAME", ...} of the running kernel, or null */
void hs_drop_reasons_json(struct js *j);
/* the number of the kernel's drop reason NAME (SKB_DROP_REASON_ optional,
 * any case); -1: no such reason, -2: this kernel names none (no BTF) */
long hs_drop_reason_value(const char *name);

#endif
