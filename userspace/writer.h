/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Writes the record file: header, then FLOWS/RECORDS/COUNTERS chunks, then END. */
#ifndef HS_WRITER_H
#define HS_WRITER_H

#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "flows.h"
#include "hopscope_file.h"

#define HS_CHUNK_RECORDS_MAX 65536
/* RECORDS chunks waiting for the I/O thread at most: past them the caller
 * waits (4 x 10 MiB: a write() blocked 0.3 s at 800 k records/s) */
#define HS_WRITE_QUEUE_CHUNKS 4

struct hs_write_item;

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
	/* time in write() (the I/O thread's: read with __atomic_load_n) */
	uint64_t write_ns, write_max_ns;
	/*
	 * The I/O thread: chunks are handed to it in file order and written
	 * while the caller goes on, so a write() that blocks (writeback,
	 * another writer's fsync) does not hold up the drain. written counts
	 * the records handed over; what the thread could not write is moved
	 * to not_stored when the caller next looks (fold_io).
	 */
	pthread_t io;
	bool io_started, io_quit, io_busy;
	pthread_mutex_t mu;
	pthread_cond_t more, done;	/* an item queued; an item written */
	struct hs_write_item *head, *tail;
	uint32_t queued_bufs;		/* RECORDS buffers queued or being written */
	struct hs_record *spare[HS_WRITE_QUEUE_CHUNKS + 1];	/* buffers to reuse */
	uint32_t nspare;
	int io_err;			/* the thread's first write error */
	uint64_t io_lost;		/* records it could not write, not yet folded */
	int io_failed;			/* io_err set: read without the lock */
};

int hs_writer_open(struct hs_writer *w, const char *path, const char *header_json);
/* takes one record (and judges an inflight one: HS_F_T4_UNSEEN); writes a
 * chunk when the buffer is full. After a write error every record is counted
 * in not_stored (buffered ones too) and the error is returned again. */
int hs_writer_add(struct hs_writer *w, const struct hs_record *r);
/* hands buffered flows and records, then a COUNTERS chunk with json, to the
 * I/O thread (a write error it met is returned here, or at the next call) */
int hs_writer_flush(struct hs_writer *w, const char *counters_json);
/* hands everything buffered over and waits until the I/O thread has written
 * it (or failed): written and not_stored are then final, for the END chunk */
int hs_writer_sync(struct hs_writer *w);
/* syncs, writes the END chunk and closes; after a write error it still tries
 * the END chunk (the file was cut back to whole chunks) and returns that
 * error. Build end_json after hs_writer_sync, so that its counts are final. */
int hs_writer_close(struct hs_writer *w, const char *end_json);
/* closes; says how many records were not stored, if any */
void hs_writer_free(struct hs_writer *w);

#endif
