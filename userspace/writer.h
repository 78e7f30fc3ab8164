/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Writes the record file: header, then FLOWS/RECORDS/COUNTERS chunks, then END. */
#ifndef HS_WRITER_H
#define HS_WRITER_H

#include <stdint.h>
#include "flows.h"
#include "hopscope_file.h"

#define HS_CHUNK_RECORDS_MAX 65536

struct hs_writer {
	int fd;
	const char *path;
	struct hs_record *buf;
	uint32_t nbuf;
	struct hs_flows flows;
	uint64_t written;		/* records in the file */
	uint64_t by_status[HS_ST_END];	/* records received, by enum hs_status */
	uint64_t complete;
	uint64_t t4_unseen;		/* records written with HS_F_T4_UNSEEN */
};

int hs_writer_open(struct hs_writer *w, const char *path, const char *header_json);
/* takes one record (and judges an inflight one: HS_F_T4_UNSEEN); writes a
 * chunk when the buffer is full */
int hs_writer_add(struct hs_writer *w, const struct hs_record *r);
/* writes buffered flows and records, then a COUNTERS chunk with json */
int hs_writer_flush(struct hs_writer *w, const char *counters_json);
/* flushes, writes the END chunk and closes */
int hs_writer_close(struct hs_writer *w, const char *end_json);
void hs_writer_free(struct hs_writer *w);

#endif
