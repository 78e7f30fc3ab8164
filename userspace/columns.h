/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A RECORDS buffer as a COLUMNS chunk's payload (hopscope_file.h). */
#ifndef HS_COLUMNS_H
#define HS_COLUMNS_H

#include <stddef.h>
#include <stdint.h>
#include "hopscope_file.h"

/* the most bytes hs_columns_encode writes for n records */
size_t hs_columns_bound(uint32_t n);
/* n records as a COLUMNS payload into out (hs_columns_bound(n) bytes): its
 * length, or 0 when an instant does not fit a column (write RECORDS then) */
size_t hs_columns_encode(const struct hs_record *r, uint32_t n, void *out);
/* a COLUMNS payload of n records (bytes long) back into records: 0, or -1
 * when its length does not match the columns it says it stores */
int hs_columns_decode(const void *payload, size_t bytes, uint32_t n, struct hs_record *out);

#endif
