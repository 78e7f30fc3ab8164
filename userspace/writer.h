/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Writes the record file: header, then FLOWS/RECORDS/COUNTERS chunks, then END. */
#ifndef HS_WRITER_H
#define HS_WRITER_H

#include <limits.h>
#include <stdint.h>
#include "flows.h"
#include "hopscope_file.h"

#define HS_CHUNK_RECORDS_MAX 65536

struct hs_writer {
	int fd;
	const char *path;
	char tmp[PATH_MAX];		/* the new file's name until it is renamed to path */
	struct hs_record *buf;
	uint32_t nbuf;
	struct hs_flows flows;
	uint64_t written;		/* records in the file */
	uint64_t by_status[HS_ST_END];	/* records received, by enum hs_status */
	uint64_t complete;
	uint64_t complete_by_path[HS_PATH_END];	/* complete records by enum hs_path */
	uint64_t complete_wire;		/* the wire packets those stand for (hs_record.segs) */
	uint64_t t4_unseen;		/* records written with HS_F_T4_UNSEEN */
	uint32_t chunks;		/* chunks written: the next one's hs_chunk.index */
	uint64_t whole;			/* file bytes up to the end of the last whole chunk */
	int err;			/* the first write error (-errno); nothing is written after it */
	uint64_t not_stored;		/* records received but not in the file (after err) */
	/* time in write(): the drain waits meanwhile, and the rings fill */
	uint64_t write_ns, write_max_ns;
};

int hs_writer_open(struct hs_writer *w, const char *path, const char *header_json);
/* takes one record (and judges an inflight one: HS_F_T4_UNSEEN); writes a
 * chunk when the buffer is full. After a write error every record is counted
 * in not_stored (buffered ones too) and the error is returned again. */
int hs_writer_add(struct hs_writer *w, const struct hs_record *r);
/* writes buffered flows and records, then a COUNTERS chunk with json */
int hs_writer_flush(struct hs_writer *w, const char *counters_json);
/* flushes, writes the END chunk and closes; after a write error it still tries
 * the END chunk (the file was cut back to whole chunks) and returns that error */
int hs_writer_close(struct hs_writer *w, const char *end_json);
/* closes; says how many records were not stored, if any */
void hs_writer_free(struct hs_writer *w);

#endif
