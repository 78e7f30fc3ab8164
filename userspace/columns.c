/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Records to columns (the COLUMNS chunk of hopscope_file.h). Every column is
 * filled a block of records at a time, so a block's records are read from
 * cache, while each column's bits are OR-ed to find those that are 0 in
 * every record; the columns left are then moved together.
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include "columns.h"

#define COLUMN_INDEX(id, bytes, name) id##_AT,
enum { HS_COLUMN_LIST(COLUMN_INDEX) NCOLUMNS };
#define COLUMN_BYTES(id, bytes, name) bytes,
static const uint8_t width[NCOLUMNS] = { HS_COLUMN_LIST(COLUMN_BYTES) };

/* records a block: 256 x 160 bytes stay in L1/L2 for every column's pass */
#define BLOCK 256

_Static_assert(HS_COL_SEQ_AT == 1 + HS_NSTAGES - 1, "the stages come first");
_Static_assert(offsetof(struct hs_record, seq) == 8 * HS_NSTAGES, "seq follows t[]");

static size_t pad8(size_t n)
{
	return (n + 7) / 8 * 8;
}

size_t hs_columns_bound(uint32_t n)
{
	size_t bytes = 8;

	for (int c = 0; c < NCOLUMNS; c++)
		bytes += pad8((size_t)n * width[c]);
	return bytes;
}

/* the stage of column c, one of those after t1's: the stages but t1, in order */
static int column_stage(int c)
{
	return c <= HS_T1 ? c - 1 : c;
}

/* the stages other than t1 as __s32 from it; false when one does not fit */
static bool stages(const struct hs_record *r, uint32_t lo, uint32_t hi, uint8_t **col,
		   uint64_t *any)
{
	uint64_t *t1 = (uint64_t *)col[HS_COL_T1_AT];

	for (uint32_t i = lo; i < hi; i++) {
		t1[i] = r[i].t[HS_T1];
		any[HS_COL_T1_AT] |= t1[i];
	}
	for (int c = HS_COL_T1_AT + 1; c < HS_COL_SEQ_AT; c++) {
		int32_t *d = (int32_t *)col[c];
		int s = column_stage(c);
		uint64_t seen = 0;

		for (uint32_t i = lo; i < hi; i++) {
			uint64_t t = r[i].t[s];
			int64_t v = (int64_t)(t - t1[i]);

			if (!t) {
				d[i] = (int32_t)HS_COLUMN_UNSEEN;
				continue;
			}
			if (!t1[i] || v <= INT32_MIN || v > INT32_MAX)
				return false;
			d[i] = (int32_t)v;
			seen = 1;
		}
		any[c] |= seen;
	}
	return true;
}

#define COPY(type) do {							\
	const uint8_t *src = (const uint8_t *)&r[lo] + at;		\
	type *d = (type *)col[c], acc = 0;				\
	for (uint32_t i = lo; i < hi; i++, src += sizeof(*r)) {		\
		type v;							\
		memcpy(&v, src, sizeof(v));				\
		d[i] = v;						\
		acc |= v;						\
	}								\
	any[c] |= acc;							\
} while (0)

/* the fields from seq on, each its column, in the record's order */
static void fields(const struct hs_record *r, uint32_t lo, uint32_t hi, uint8_t **col,
		   uint64_t *any)
{
	size_t at = offsetof(struct hs_record, seq);

	for (int c = HS_COL_SEQ_AT; c < NCOLUMNS; at += width[c++]) {
		switch (width[c]) {
		case 1: COPY(uint8_t); break;
		case 2: COPY(uint16_t); break;
		case 4: COPY(uint32_t); break;
		default: COPY(uint64_t); break;
		}
	}
}

size_t hs_columns_encode(const struct hs_record *r, uint32_t n, void *out)
{
	uint8_t *col[NCOLUMNS], *to = (uint8_t *)out + 8;
	uint64_t any[NCOLUMNS] = { 0 }, present = 0;
	size_t at = 8;

	for (int c = 0; c < NCOLUMNS; c++) {
		col[c] = (uint8_t *)out + at;
		at += pad8((size_t)n * width[c]);
	}
	for (uint32_t lo = 0; lo < n; lo += BLOCK) {
		uint32_t hi = n - lo < BLOCK ? n : lo + BLOCK;

		if (!stages(r, lo, hi, col, any))
			return 0;
		fields(r, lo, hi, col, any);
	}
	/* the columns not 0 everywhere, moved down over those left out */
	for (int c = 0; c < NCOLUMNS; c++) {
		size_t bytes = (size_t)n * width[c];

		if (!any[c])
			continue;
		present |= 1ull << c;
		memmove(to, col[c], bytes);
		memset(to + bytes, 0, pad8(bytes) - bytes);
		to += pad8(bytes);
	}
	memcpy(out, &present, sizeof(present));
	return to - (uint8_t *)out;
}

int hs_columns_decode(const void *payload, size_t bytes, uint32_t n, struct hs_record *out)
{
	const uint8_t *p = payload;
	uint64_t present;
	size_t at = 8, field = offsetof(struct hs_record, seq);

	if (bytes < 8)
		return -1;
	memcpy(&present, p, 8);
	for (int c = 0; c < NCOLUMNS; c++)
		at += present >> c & 1 ? pad8((size_t)n * width[c]) : 0;
	if (at != bytes || present >> NCOLUMNS)
		return -1;
	memset(out, 0, (size_t)n * sizeof(*out));
	at = 8;
	for (int c = 0; c < NCOLUMNS; c++) {
		const uint8_t *col = p + at;

		if (present >> c & 1) {
			at += pad8((size_t)n * width[c]);
			for (uint32_t i = 0; i < n; i++) {
				if (c == HS_COL_T1_AT) {
					memcpy(&out[i].t[HS_T1], col + 8 * i, 8);
				} else if (c < HS_COL_SEQ_AT) {
					int s = column_stage(c);
					uint32_t d;

					memcpy(&d, col + 4 * i, 4);
					out[i].t[s] = d == HS_COLUMN_UNSEEN ? 0 :
						      out[i].t[HS_T1] + (int64_t)(int32_t)d;
				} else {
					memcpy((uint8_t *)&out[i] + field, col + (size_t)width[c] * i,
					       width[c]);
				}
			}
		}
		if (c >= HS_COL_SEQ_AT)
			field += width[c];
	}
	return 0;
}
