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
/* flows a file's table holds at most; records of more have no flow */
#define HS_MAX_FLOWS (1u << 20)
/* RECORDS chunks waiting for the I/O thread at most: past them the caller
 * waits (4 x 10 MiB: a write() blocked 0.3 s at 800 k records/s) */
#define HS_WRITE_QUEUE_CHUNKS 4

struct hs_write_item;
struct hs_writer;

/* what a lane's records were, counted as they were added (stored or not) */
struct hs_tally {
	uint64_t by_status[HS_ST_END];	/* by enum hs_status */
	uint64_t complete;
	uint64_t complete_by_path[HS_PATH_END];	/* complete records by enum hs_path */
	uint64_t complete_wire;		/* the wire packets those stand for (hs_record.segs) */
	uint64_t t4_unseen;		/* records written with HS_F_T4_UNSEEN */
};

/*
 * One drain thread's part of the writer: its chunk buffer, its counts and
 * its memory of flows, so that drain threads add records without sharing a
 * cache line. The flow table and the file are shared. A lane's owner holds
 * mu while it adds a batch; whoever reads its counts or flushes it for a
 * COUNTERS chunk takes mu too, so that a chunk's counts are those of the
 * records before it.
 */
struct hs_lane {
	struct hs_writer *w;
	pthread_mutex_t mu;
	struct hs_record *buf;
	uint32_t nbuf;
	struct hs_tally t;
	struct hs_flow_memo *memo;
	/* by flow id: latest t1 of the flow's complete packets in this lane (a
	 * flow is on one CPU under RSS/RPS, so in one lane) */
	uint64_t *done_t1;
	uint32_t done_cap;
};

#define HS_MAX_LANES 64

struct hs_writer {
	int fd;
	const char *path;
	char tmp[PATH_MAX];		/* the new file's name until it is renamed to path */
	struct hs_lane lane[HS_MAX_LANES];	/* lane 0: the caller's */
	int nlanes;
	struct hs_flows flows;		/* under flows_mu */
	pthread_mutex_t flows_mu;
	uint64_t written;		/* records in the file (handed to the I/O thread) */
	uint32_t chunks;		/* chunks written: the next one's hs_chunk.index */
	uint64_t whole;			/* file bytes up to the end of the last whole chunk */
	int err;			/* the first write error (-errno); nothing is written after it */
	uint64_t not_stored;		/* records received but not in the file (after err) */
	/* time in write() (the I/O thread's: read with __atomic_load_n) */
	uint64_t write_ns, write_max_ns;
	/*
	 * The I/O thread: chunks are handed to it in file order and written
	 * while the lanes go on, so a write() that blocks (writeback, another
	 * writer's fsync) does not hold up the drain. written counts the
	 * records handed over; what the thread could not write is moved to
	 * not_stored when a lane next looks (fold_io). err, written and
	 * not_stored change under mu.
	 */
	pthread_t io;
	bool io_started, io_quit, io_busy;
	pthread_mutex_t mu;
	pthread_cond_t more, done;	/* an item queued; an item written */
	struct hs_write_item *head, *tail;
	uint32_t queued_bufs;		/* RECORDS buffers queued or being written */
	struct hs_record *spare[HS_WRITE_QUEUE_CHUNKS + HS_MAX_LANES];	/* buffers to reuse */
	uint32_t nspare;
	void *columns;			/* the I/O thread's: a RECORDS buffer as columns */
	int io_err;			/* the thread's first write error */
	uint64_t io_lost;		/* records it could not write, not yet folded */
	int io_failed;			/* io_err set: read without the lock */
};

/* nlanes drain threads will add records (1 to HS_MAX_LANES) */
int hs_writer_open(struct hs_writer *w, const char *path, const char *header_json, int nlanes);
/* takes one record into lane l (and judges an inflight one: HS_F_T4_UNSEEN);
 * hands a chunk over when the lane's buffer is full. After a write error
 * every record is counted in not_stored (buffered ones too) and the error is
 * returned again. The caller holds the lane's mu when other threads run
 * (hs_lane_lock). */
int hs_lane_add(struct hs_lane *l, const struct hs_record *r);
static inline int hs_writer_add(struct hs_writer *w, const struct hs_record *r)
{
	return hs_lane_add(&w->lane[0], r);
}
void hs_lane_lock(struct hs_lane *l);
void hs_lane_unlock(struct hs_lane *l);
/* every lane's counts summed into t; the file's written and not_stored with
 * them. Lanes held (hs_writer_hold) or stopped: a consistent view */
void hs_writer_tally(struct hs_writer *w, struct hs_tally *t, uint64_t *records_written,
		     uint64_t *not_stored);
/* complete records so far, any thread, lanes running */
uint64_t hs_writer_complete(struct hs_writer *w);
/* every lane's mu taken, in order, and released */
void hs_writer_hold(struct hs_writer *w);
void hs_writer_release(struct hs_writer *w);
/* the lanes' memory of complete packets into lane 0's, for the records the
 * caller adds there after the other lanes stopped (the inflight ones at stop) */
void hs_writer_merge_lanes(struct hs_writer *w);
/* the flow table, under its lock: NAT's translation of a flow (flows.h) */
int hs_writer_nat(struct hs_writer *w, const struct hs_tuple *from, const struct hs_nat *n,
		  bool final, bool add);
/* hands every lane's buffered records, the flows, then a COUNTERS chunk with
 * json, to the I/O thread, without waiting for room: past
 * HS_WRITE_QUEUE_CHUNKS by at most a buffer a lane when the caller flushes
 * only while the queue is not backed up (a write error the I/O thread met
 * is returned here, or at the next call). Lanes held or stopped. */
int hs_writer_flush(struct hs_writer *w, const char *counters_json);
/* the queue holds HS_WRITE_QUEUE_CHUNKS buffers or more: the disk is behind,
 * and a lane's full buffer waits */
bool hs_writer_backed_up(struct hs_writer *w);
/* hands everything buffered over and waits until the I/O thread has written
 * it (or failed): written and not_stored are then final, for the END chunk.
 * The other lanes stopped. */
int hs_writer_sync(struct hs_writer *w);
/* syncs, writes the END chunk and closes; after a write error it still tries
 * the END chunk (the file was cut back to whole chunks) and returns that
 * error. Build end_json after hs_writer_sync, so that its counts are final. */
int hs_writer_close(struct hs_writer *w, const char *end_json);
/* closes; says how many records were not stored, if any */
void hs_writer_free(struct hs_writer *w);

#endif
