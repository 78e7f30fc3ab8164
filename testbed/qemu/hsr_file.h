/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The QEMU guest's readers of a .hsr file (no Python in the guest): the
 * whole file in memory, checked to be one this tree writes, and its chunks
 * walked in order. Shared by hs_hsrcost.c and hs_hsrpath.c, each built with
 * userspace/columns.c (hsr_records).
 */
#ifndef HSR_FILE_H
#define HSR_FILE_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hopscope_file.h"
#include "columns.h"

/* PATH's bytes, NUL-terminated (the JSON chunks are read as strings); NULL
 * unless it is a hopscope file of this version and record size */
static char *hsr_load(const char *path, size_t *len)
{
	const struct hs_file_header *fh;
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (n = ftell(f)) > 0 && !fseek(f, 0, SEEK_SET)) {
		buf = malloc(n + 1);
		if (buf && fread(buf, 1, n, f) == (size_t)n) {
			buf[n] = 0;
			*len = n;
		} else {
			free(buf);
			buf = NULL;
		}
	}
	fclose(f);
	fh = (const void *)buf;
	if (buf && (*len < sizeof(*fh) || memcmp(fh->magic, HS_FILE_MAGIC, 8) ||
		    fh->version != HS_FILE_VERSION || fh->record_size != sizeof(struct hs_record))) {
		free(buf);
		buf = NULL;
	}
	if (!buf)
		printf("HSR %s: not a hopscope file of version %d\n", path, HS_FILE_VERSION);
	return buf;
}

/* calls CHUNK for each whole chunk after the header, in file order */
static void hsr_walk(const char *buf, size_t len,
		     void (*chunk)(const struct hs_chunk *ch, const char *payload, void *ctx),
		     void *ctx)
{
	const struct hs_file_header *fh = (const void *)buf;

	for (size_t off = sizeof(*fh) + fh->header_bytes; off + sizeof(struct hs_chunk) <= len;) {
		const struct hs_chunk *ch = (const void *)(buf + off);

		if (ch->magic != HS_CHUNK_MAGIC || ch->bytes > len - off - sizeof(*ch))
			break;
		chunk(ch, buf + off + sizeof(*ch), ctx);
		off += sizeof(*ch) + ((ch->bytes + 7) & ~7u);
	}
}

/* a RECORDS or COLUMNS chunk's records (free them with hsr_free_records);
 * NULL for another chunk, or COLUMNS that do not decode */
static const struct hs_record *hsr_records(const struct hs_chunk *ch, const char *payload)
{
	struct hs_record *r;

	if (ch->type == HS_CHUNK_RECORDS)
		return (const void *)payload;
	if (ch->type != HS_CHUNK_COLUMNS || !(r = malloc((ch->count + 1) * sizeof(*r))))
		return NULL;
	if (hs_columns_decode(payload, ch->bytes, ch->count, r)) {
		printf("HSR chunk %u: COLUMNS that do not decode\n", ch->index);
		free(r);
		return NULL;
	}
	return r;
}

static void hsr_free_records(const struct hs_chunk *ch, const struct hs_record *r)
{
	if (ch->type == HS_CHUNK_COLUMNS)
		free((void *)r);
}

#endif
