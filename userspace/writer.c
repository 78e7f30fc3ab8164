/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <libdeflate.h>
#include "columns.h"
#include "writer.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* one chunk for the I/O thread; a RECORDS buffer goes back to the spares */
struct hs_write_item {
	struct hs_write_item *next;
	uint32_t type, count, bytes;
	void *payload;
	bool is_buf;
};

static int write_all(struct hs_writer *w, const void *p, size_t n)
{
	while (n) {
		uint64_t t0 = mono_ns();
		ssize_t k = write(w->fd, p, n);
		uint64_t dt = mono_ns() - t0;

		/* one writer at a time (the I/O thread once it runs); read elsewhere */
		__atomic_store_n(&w->write_ns, w->write_ns + dt, __ATOMIC_RELAXED);
		if (dt > w->write_max_ns)
			__atomic_store_n(&w->write_max_ns, dt, __ATOMIC_RELAXED);
		if (k < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "hopscope: writing %s: %s\n", w->path, strerror(errno));
			return -errno;
		}
		p = (const char *)p + k;
		n -= k;
	}
	return 0;
}

/* the file back to its last whole chunk: what it holds stays readable, and the
 * space of a partial chunk is free again */
static void cut_back(struct hs_writer *w)
{
	if (ftruncate(w->fd, w->whole) == 0)
		lseek(w->fd, w->whole, SEEK_SET);
}

static int file_err(struct hs_writer *w)
{
	return __atomic_load_n(&w->err, __ATOMIC_RELAXED);
}

/* A write failed (disk full, file too large, I/O error; the I/O thread cut
 * the file back, room for the END chunk) or a buffer could not be had: from
 * now on nothing is written. The lane's buffered records are counted as not
 * stored. */
static int lane_fail(struct hs_lane *l, int err)
{
	struct hs_writer *w = l->w;

	pthread_mutex_lock(&w->mu);
	if (!w->err)
		__atomic_store_n(&w->err, err, __ATOMIC_RELAXED);
	w->not_stored += l->nbuf;
	err = w->err;
	pthread_mutex_unlock(&w->mu);
	l->nbuf = 0;
	return err;
}

/* what the I/O thread could not write, into the file's counts */
static void fold_io(struct hs_writer *w)
{
	if (!w->io_started)
		return;
	pthread_mutex_lock(&w->mu);
	w->written -= w->io_lost;
	w->not_stored += w->io_lost;
	w->io_lost = 0;
	if (w->io_err && !w->err)
		__atomic_store_n(&w->err, w->io_err, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&w->mu);
}

/* the lane's view after a failure: the error, its buffer not stored */
static int check_io(struct hs_lane *l)
{
	if (__atomic_load_n(&l->w->io_failed, __ATOMIC_ACQUIRE))
		fold_io(l->w);
	return file_err(l->w) ? lane_fail(l, file_err(l->w)) : 0;
}

static int write_chunk(struct hs_writer *w, uint32_t type, uint32_t count,
		       const void *payload, uint32_t bytes)
{
	static const char zeros[8];
	struct hs_chunk c = {
		.magic = HS_CHUNK_MAGIC,
		.type = type,
		.count = count,
		.bytes = bytes,
		/* zlib's CRC-32; libdeflate's runs ~7x faster (7 GB/s against 1 here) */
		.crc32 = libdeflate_crc32(0, payload, bytes),
		.index = w->chunks,
	};
	int err;

	err = write_all(w, &c, sizeof(c));
	if (!err)
		err = write_all(w, payload, bytes);
	if (!err && bytes % 8)
		err = write_all(w, zeros, 8 - bytes % 8);
	if (err)
		return err;
	w->chunks++;
	w->whole += sizeof(c) + (bytes + 7) / 8 * 8;
	return 0;
}

/* The file is written under a new name beside path and renamed over path once
 * its header is there: a reader of an old file at path keeps reading that file
 * (never truncated under its map), and path is never anything but a record file. */
static int create(struct hs_writer *w, const char *path)
{
	struct stat st;
	const char *slash = strrchr(path, '/');
	int dirlen = slash ? (int)(slash - path + 1) : 0;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		fprintf(stderr, "hopscope: %s is not a regular file (a FIFO, device or "
			"directory): record writes a file it can seek and rename\n", path);
		return -EINVAL;
	}
	if (snprintf(w->tmp, sizeof(w->tmp), "%.*s.%s.XXXXXX", dirlen, path,
		     path + dirlen) >= (int)sizeof(w->tmp)) {
		fprintf(stderr, "hopscope: %s: name too long\n", path);
		return -ENAMETOOLONG;
	}
	w->fd = mkostemp(w->tmp, O_CLOEXEC);
	if (w->fd < 0) {
		fprintf(stderr, "hopscope: cannot create %s: %s\n", path, strerror(errno));
		w->tmp[0] = 0;
		return -errno;
	}
	/* the mode open(O_CREAT, 0644) would give: mkostemp makes it 0600 */
	mode_t mask = umask(0);

	umask(mask);
	if (fchmod(w->fd, 0644 & ~mask))
		fprintf(stderr, "hopscope: %s: %s\n", w->tmp, strerror(errno));
	return 0;
}

/* a RECORDS buffer as a COLUMNS chunk (half the bytes or fewer, and each field
 * one pass for a reader), or as it is when an instant does not fit one */
static int write_records(struct hs_writer *w, const struct hs_write_item *it)
{
	size_t bytes = hs_columns_encode(it->payload, it->count, w->columns);

	if (!bytes)
		return write_chunk(w, HS_CHUNK_RECORDS, it->count, it->payload, it->bytes);
	return write_chunk(w, HS_CHUNK_COLUMNS, it->count, w->columns, bytes);
}

static void release(struct hs_writer *w, struct hs_write_item *it)
{
	if (it->is_buf) {
		w->queued_bufs--;
		if (w->nspare < sizeof(w->spare) / sizeof(*w->spare))
			w->spare[w->nspare++] = it->payload;
		else
			free(it->payload);
	} else {
		free(it->payload);
	}
	free(it);
}

/* Writes the queue's chunks in order; after a failure it writes nothing more
 * and counts the records of every chunk it drops. */
static void *io_main(void *arg)
{
	struct hs_writer *w = arg;

	pthread_mutex_lock(&w->mu);
	for (;;) {
		struct hs_write_item *it;
		int err;

		while (!w->head && !w->io_quit)
			pthread_cond_wait(&w->more, &w->mu);
		if (!w->head)
			break;
		it = w->head;
		w->head = it->next;
		if (!w->head)
			w->tail = NULL;
		w->io_busy = true;
		err = w->io_err;
		pthread_mutex_unlock(&w->mu);
		if (!err)
			err = it->type == HS_CHUNK_RECORDS ? write_records(w, it) :
			      write_chunk(w, it->type, it->count, it->payload, it->bytes);
		pthread_mutex_lock(&w->mu);
		if (err) {
			if (!w->io_err) {
				w->io_err = err;
				cut_back(w);
				__atomic_store_n(&w->io_failed, 1, __ATOMIC_RELEASE);
			}
			if (it->type == HS_CHUNK_RECORDS)
				w->io_lost += it->count;
		}
		release(w, it);
		w->io_busy = false;
		pthread_cond_broadcast(&w->done);
	}
	pthread_mutex_unlock(&w->mu);
	return NULL;
}

/* one chunk to the I/O thread, which then owns payload; a RECORDS buffer
 * counts in written, and waits for room (HS_WRITE_QUEUE_CHUNKS) if wait */
static int enqueue(struct hs_writer *w, uint32_t type, uint32_t count, void *payload,
		   uint32_t bytes, bool is_buf, bool wait)
{
	struct hs_write_item *it = malloc(sizeof(*it));

	if (!it)
		return -ENOMEM;
	*it = (struct hs_write_item){ .type = type, .count = count, .bytes = bytes,
				      .payload = payload, .is_buf = is_buf };
	pthread_mutex_lock(&w->mu);
	while (wait && is_buf && w->queued_bufs >= HS_WRITE_QUEUE_CHUNKS && !w->io_err)
		pthread_cond_wait(&w->done, &w->mu);
	if (w->tail)
		w->tail->next = it;
	else
		w->head = it;
	w->tail = it;
	w->queued_bufs += is_buf;
	if (is_buf)
		w->written += count;
	pthread_cond_signal(&w->more);
	pthread_mutex_unlock(&w->mu);
	return 0;
}

static struct hs_record *take_buffer(struct hs_writer *w)
{
	struct hs_record *buf = NULL;

	pthread_mutex_lock(&w->mu);
	if (w->nspare)
		buf = w->spare[--w->nspare];
	pthread_mutex_unlock(&w->mu);
	return buf ? buf : malloc(HS_CHUNK_RECORDS_MAX * sizeof(*buf));
}

static void stop_io(struct hs_writer *w)
{
	if (!w->io_started)
		return;
	pthread_mutex_lock(&w->mu);
	w->io_quit = true;
	pthread_cond_signal(&w->more);
	pthread_mutex_unlock(&w->mu);
	pthread_join(w->io, NULL);	/* it wrote (or dropped) every chunk queued */
	fold_io(w);
	w->io_started = false;
}

/* the locks, the lanes and the flow table, before anything can fail */
static int init(struct hs_writer *w, const char *path, int nlanes)
{
	memset(w, 0, sizeof(*w));
	w->fd = -1;
	w->path = path;
	pthread_mutex_init(&w->mu, NULL);
	pthread_mutex_init(&w->flows_mu, NULL);
	pthread_cond_init(&w->more, NULL);
	pthread_cond_init(&w->done, NULL);
	w->nlanes = nlanes < 1 ? 1 : nlanes > HS_MAX_LANES ? HS_MAX_LANES : nlanes;
	w->columns = malloc(hs_columns_bound(HS_CHUNK_RECORDS_MAX));
	if (!w->columns || hs_flows_init(&w->flows, HS_MAX_FLOWS))
		return -ENOMEM;
	for (int i = 0; i < w->nlanes; i++) {
		struct hs_lane *l = &w->lane[i];

		l->w = w;
		pthread_mutex_init(&l->mu, NULL);
		l->buf = malloc(HS_CHUNK_RECORDS_MAX * sizeof(*l->buf));
		l->memo = calloc(1, sizeof(*l->memo));
		/* pages touched only as flows come */
		l->done_t1 = calloc(HS_MAX_FLOWS, sizeof(*l->done_t1));
		if (!l->buf || !l->memo || !l->done_t1)
			return -ENOMEM;
	}
	return 0;
}

int hs_writer_open(struct hs_writer *w, const char *path, const char *header_json, int nlanes)
{
	struct hs_file_header h = {
		.version = HS_FILE_VERSION,
		.record_size = sizeof(struct hs_record),
		.endian = HS_ENDIAN_MARK,
	};
	size_t len = strlen(header_json), padded = (len + 7) / 8 * 8;
	char *text;
	int err = init(w, path, nlanes);

	if (err)
		return err;
	if (padded > UINT32_MAX - sizeof(h))
		return -E2BIG;
	err = create(w, path);
	if (err)
		return err;
	memcpy(h.magic, HS_FILE_MAGIC, sizeof(h.magic));
	h.header_bytes = padded;
	text = malloc(padded);
	if (!text)
		return -ENOMEM;
	memcpy(text, header_json, len);
	memset(text + len, ' ', padded - len);
	h.header_crc32 = libdeflate_crc32(0, (const void *)&h,
					  offsetof(struct hs_file_header, header_crc32));
	h.header_crc32 = libdeflate_crc32(h.header_crc32, text, padded);
	err = write_all(w, &h, sizeof(h));
	if (!err)
		err = write_all(w, text, padded);
	free(text);
	if (!err && rename(w->tmp, path)) {
		err = -errno;
		fprintf(stderr, "hopscope: cannot rename %s to %s: %s\n", w->tmp, path,
			strerror(errno));
	}
	if (err)
		return err;
	w->tmp[0] = 0;
	w->whole = sizeof(h) + padded;
	err = -pthread_create(&w->io, NULL, io_main, w);
	if (err) {
		fprintf(stderr, "hopscope: cannot start the writing thread: %s\n", strerror(-err));
		return err;
	}
	w->io_started = true;
	return 0;
}

/* items[*written .. n) as a FLOWS chunk: a copy, as the table grows meanwhile
 * (under flows_mu) */
static int write_flows(struct hs_writer *w, const struct hs_flow *items, uint32_t n,
		       uint32_t *written)
{
	size_t bytes = (size_t)(n - *written) * sizeof(*items);
	void *copy;

	if (n == *written)
		return 0;
	copy = malloc(bytes);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, items + *written, bytes);
	if (enqueue(w, HS_CHUNK_FLOWS, n - *written, copy, bytes, false, false)) {
		free(copy);
		return -ENOMEM;
	}
	*written = n;
	return 0;
}

/*
 * The flows not yet in the file, then the lane's records. A record names
 * only flows added before it, and whichever lane hands chunks over next
 * queues every flow added so far first: a flow's FLOWS chunk always comes
 * before the records that name it. wait: for room in the queue first.
 */
static int write_pending(struct hs_lane *l, bool wait)
{
	struct hs_writer *w = l->w;
	struct hs_flows *f = &w->flows;
	struct hs_record *next;
	int err = check_io(l);

	if (err)
		return err;
	/* translations after the flows they name */
	pthread_mutex_lock(&w->flows_mu);
	err = write_flows(w, f->items, f->n, &f->written) ?:
	      write_flows(w, f->nat, f->nat_n, &f->nat_written);
	pthread_mutex_unlock(&w->flows_mu);
	if (err)
		return lane_fail(l, err);
	if (!l->nbuf)
		return 0;
	next = take_buffer(w);
	if (!next || enqueue(w, HS_CHUNK_RECORDS, l->nbuf, l->buf, l->nbuf * sizeof(*l->buf),
			     true, wait)) {
		free(next);
		return lane_fail(l, -ENOMEM);
	}
	l->nbuf = 0;
	l->buf = next;
	return 0;
}

int hs_lane_add(struct hs_lane *l, const struct hs_record *r)
{
	struct hs_writer *w = l->w;
	struct hs_record rec, *slot = &rec;	/* rec: one counted, not stored */
	struct hs_tally *t = &l->t;
	int err = file_err(w);

	if (!err && __atomic_load_n(&w->io_failed, __ATOMIC_RELAXED))
		err = check_io(l);

	/* after a failed write nothing more is stored, only counted: the buffer
	 * is never filled past HS_CHUNK_RECORDS_MAX */
	if (!err)
		slot = &l->buf[l->nbuf++];
	*slot = *r;
	slot->flow = hs_flow_memo_id(l->memo, &w->flows, &w->flows_mu, r);
	if (r->status < HS_ST_END)
		t->by_status[r->status]++;
	if (r->status == HS_ST_COMPLETE) {
		/* read by other threads (hs_writer_complete) */
		__atomic_store_n(&t->complete, t->complete + 1, __ATOMIC_RELAXED);
		if (r->path < HS_PATH_END)
			t->complete_by_path[r->path]++;
		t->complete_wire += r->segs ? r->segs : 1;
		if (slot->flow != HS_FLOW_NONE && r->t[HS_T1] > l->done_t1[slot->flow])
			l->done_t1[slot->flow] = r->t[HS_T1];
	}
	/* A flow keeps its order through the router (one RPS CPU, one FIFO or
	 * per-flow qdisc queue): a packet still "inside" after a later one of its
	 * flow left was not inside; its t4 went unseen. So is one evicted from
	 * its slot after that (a ring lap later, its t4 never having come). The
	 * backend hands over the ring's records in their order, and the inflight
	 * ones after them, so every complete packet before is known here: a
	 * flow's CPU is drained by one lane, and the inflight ones come to lane
	 * 0 after hs_writer_merge_lanes. This is the one place that rule is
	 * decided: the record carries the verdict (docs/record-format.md). */
	if ((r->status == HS_ST_INFLIGHT || r->status == HS_ST_EVICTED) &&
	    slot->flow != HS_FLOW_NONE && l->done_t1[slot->flow] > r->t[HS_T1]) {
		slot->flags |= HS_F_T4_UNSEEN;
		t->t4_unseen++;
	}
	if (err) {
		pthread_mutex_lock(&w->mu);
		w->not_stored++;
		pthread_mutex_unlock(&w->mu);
		return err;
	}
	return l->nbuf == HS_CHUNK_RECORDS_MAX ? write_pending(l, true) : 0;
}

uint64_t hs_writer_complete(struct hs_writer *w)
{
	uint64_t n = 0;

	for (int i = 0; i < w->nlanes; i++)
		n += __atomic_load_n(&w->lane[i].t.complete, __ATOMIC_RELAXED);
	return n;
}

void hs_lane_lock(struct hs_lane *l)
{
	pthread_mutex_lock(&l->mu);
}

void hs_lane_unlock(struct hs_lane *l)
{
	pthread_mutex_unlock(&l->mu);
}

void hs_writer_hold(struct hs_writer *w)
{
	for (int i = 0; i < w->nlanes; i++)
		pthread_mutex_lock(&w->lane[i].mu);
}

void hs_writer_release(struct hs_writer *w)
{
	for (int i = w->nlanes - 1; i >= 0; i--)
		pthread_mutex_unlock(&w->lane[i].mu);
}

void hs_writer_tally(struct hs_writer *w, struct hs_tally *t, uint64_t *records_written,
		     uint64_t *not_stored)
{
	uint64_t buffered = 0;

	memset(t, 0, sizeof(*t));
	for (int i = 0; i < w->nlanes; i++) {
		const struct hs_tally *a = &w->lane[i].t;

		for (int k = 0; k < HS_ST_END; k++)
			t->by_status[k] += a->by_status[k];
		t->complete += a->complete;
		for (int k = 0; k < HS_PATH_END; k++)
			t->complete_by_path[k] += a->complete_by_path[k];
		t->complete_wire += a->complete_wire;
		t->t4_unseen += a->t4_unseen;
		buffered += w->lane[i].nbuf;
	}
	pthread_mutex_lock(&w->mu);
	*records_written = w->written + buffered;
	*not_stored = w->not_stored;
	pthread_mutex_unlock(&w->mu);
}

void hs_writer_merge_lanes(struct hs_writer *w)
{
	uint64_t *done = w->lane[0].done_t1;

	for (int i = 1; i < w->nlanes; i++)
		for (uint32_t id = 0; id < w->flows.n; id++)
			if (w->lane[i].done_t1[id] > done[id])
				done[id] = w->lane[i].done_t1[id];
}

int hs_writer_nat(struct hs_writer *w, const struct hs_tuple *from, const struct hs_nat *n,
		  bool final, bool add)
{
	int err;

	pthread_mutex_lock(&w->flows_mu);
	err = hs_flows_nat(&w->flows, from, n, final, add);
	pthread_mutex_unlock(&w->flows_mu);
	return err;
}

static int write_all_pending(struct hs_writer *w, bool wait)
{
	int err = 0;

	for (int i = 0; i < w->nlanes; i++) {
		int e = write_pending(&w->lane[i], wait);

		err = err ?: e;
	}
	return err;
}

bool hs_writer_backed_up(struct hs_writer *w)
{
	bool full;

	pthread_mutex_lock(&w->mu);
	full = w->queued_bufs >= HS_WRITE_QUEUE_CHUNKS;
	pthread_mutex_unlock(&w->mu);
	return full;
}

int hs_writer_flush(struct hs_writer *w, const char *counters_json)
{
	/* the lanes are held: none waits for the disk here */
	int err = write_all_pending(w, false);
	char *copy;

	if (!err && counters_json) {
		copy = strdup(counters_json);
		if (!copy || enqueue(w, HS_CHUNK_COUNTERS, 0, copy, strlen(copy), false, false)) {
			free(copy);
			err = lane_fail(&w->lane[0], -ENOMEM);
		}
	}
	return err;
}

int hs_writer_sync(struct hs_writer *w)
{
	int err = write_all_pending(w, true);

	if (w->io_started) {
		pthread_mutex_lock(&w->mu);
		while (w->head || w->io_busy)
			pthread_cond_wait(&w->done, &w->mu);
		pthread_mutex_unlock(&w->mu);
	}
	return check_io(&w->lane[0]) ?: err;
}

int hs_writer_close(struct hs_writer *w, const char *end_json)
{
	int err = hs_writer_sync(w), end_err;

	stop_io(w);	/* idle: the END chunk is written here */

	/* after a write error too: the file was cut back to its last whole chunk,
	 * so the END chunk (saying how many records were not stored) may fit */
	if (end_json && w->fd >= 0) {
		end_err = write_chunk(w, HS_CHUNK_END, 0, end_json, strlen(end_json));
		if (end_err) {
			cut_back(w);	/* no part of an END chunk */
			lane_fail(&w->lane[0], end_err);
		}
		if (!err)
			err = end_err;
	}
	if (w->fd >= 0 && close(w->fd) && !err) {
		fprintf(stderr, "hopscope: closing %s: %s\n", w->path, strerror(errno));
		err = -errno;
	}
	w->fd = -1;
	return err ? err : w->err;
}

void hs_writer_free(struct hs_writer *w)
{
	if (!w->nlanes)		/* never opened */
		return;
	stop_io(w);	/* without a close: what was queued is written first */
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	if (w->tmp[0])
		unlink(w->tmp);
	if (w->not_stored)
		fprintf(stderr, "hopscope: WARNING: %llu records were not stored in %s (%s); "
			"it holds the %llu before, whole up to byte %llu\n",
			(unsigned long long)w->not_stored, w->path, strerror(-w->err),
			(unsigned long long)w->written, (unsigned long long)w->whole);
	w->not_stored = 0;
	for (int i = 0; i < w->nlanes; i++) {
		struct hs_lane *l = &w->lane[i];

		free(l->buf);
		free(l->memo);
		free(l->done_t1);
		pthread_mutex_destroy(&l->mu);
	}
	free(w->columns);
	w->columns = NULL;
	while (w->nspare)
		free(w->spare[--w->nspare]);
	hs_flows_free(&w->flows);
	pthread_mutex_destroy(&w->mu);
	pthread_mutex_destroy(&w->flows_mu);
	pthread_cond_destroy(&w->more);
	pthread_cond_destroy(&w->done);
	w->nlanes = 0;
}
