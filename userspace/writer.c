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
#include <zlib.h>
#include "writer.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static int write_all(struct hs_writer *w, const void *p, size_t n)
{
	while (n) {
		uint64_t t0 = mono_ns();
		ssize_t k = write(w->fd, p, n);
		uint64_t dt = mono_ns() - t0;

		w->write_ns += dt;
		if (dt > w->write_max_ns)
			w->write_max_ns = dt;
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

/* A write failed (disk full, file too large, I/O error): from now on nothing is
 * written. The file is cut back (room for the END chunk, hs_writer_close); the
 * records buffered are counted as not stored. */
static int fail(struct hs_writer *w, int err)
{
	if (!w->err) {
		w->err = err;
		cut_back(w);
	}
	w->not_stored += w->nbuf;
	w->nbuf = 0;
	return w->err;
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
		.crc32 = crc32(0, payload, bytes),
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

int hs_writer_open(struct hs_writer *w, const char *path, const char *header_json)
{
	struct hs_file_header h = {
		.version = HS_FILE_VERSION,
		.record_size = sizeof(struct hs_record),
		.endian = HS_ENDIAN_MARK,
	};
	size_t len = strlen(header_json), padded = (len + 7) / 8 * 8;
	char *text;
	int err;

	memset(w, 0, sizeof(*w));
	w->fd = -1;
	w->path = path;
	w->buf = calloc(HS_CHUNK_RECORDS_MAX, sizeof(*w->buf));
	if (!w->buf || hs_flows_init(&w->flows, 1u << 20))
		return -ENOMEM;
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
	h.header_crc32 = crc32(crc32(0, (const void *)&h, offsetof(struct hs_file_header,
								  header_crc32)),
			       (const void *)text, padded);
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
	return 0;
}

/* items[*written .. n) as a FLOWS chunk */
static int write_flows(struct hs_writer *w, const struct hs_flow *items, uint32_t n,
		       uint32_t *written)
{
	int err;

	if (n == *written)
		return 0;
	err = write_chunk(w, HS_CHUNK_FLOWS, n - *written, items + *written,
			  (n - *written) * sizeof(*items));
	if (err)
		return fail(w, err);
	*written = n;
	return 0;
}

static int write_pending(struct hs_writer *w)
{
	struct hs_flows *f = &w->flows;
	int err = 0;

	if (w->err)
		return fail(w, w->err);
	/* translations after the flows they name */
	err = write_flows(w, f->items, f->n, &f->written) ?:
	      write_flows(w, f->nat, f->nat_n, &f->nat_written);
	if (err)
		return err;
	if (w->nbuf) {
		err = write_chunk(w, HS_CHUNK_RECORDS, w->nbuf, w->buf, w->nbuf * sizeof(*w->buf));
		if (err)
			return fail(w, err);
		w->written += w->nbuf;
		w->nbuf = 0;
	}
	return 0;
}

int hs_writer_add(struct hs_writer *w, const struct hs_record *r)
{
	struct hs_record rec = *r, *slot = &rec;

	/* after a failed write nothing more is stored, only counted: the buffer
	 * is never filled past HS_CHUNK_RECORDS_MAX */
	if (!w->err)
		slot = &w->buf[w->nbuf++];
	*slot = *r;
	slot->flow = hs_flows_id(&w->flows, r);
	if (r->status < HS_ST_END)
		w->by_status[r->status]++;
	if (r->status == HS_ST_COMPLETE) {
		w->complete++;
		if (r->path < HS_PATH_END)
			w->complete_by_path[r->path]++;
		w->complete_wire += r->segs ? r->segs : 1;
		if (slot->flow != HS_FLOW_NONE && r->t[HS_T1] > w->flows.done_t1[slot->flow])
			w->flows.done_t1[slot->flow] = r->t[HS_T1];
	}
	/* A flow keeps its order through the router (one RPS CPU, one FIFO or
	 * per-flow qdisc queue): a packet still "inside" after a later one of its
	 * flow left was not inside; its t4 went unseen. So is one evicted from
	 * its slot after that (a ring lap later, its t4 never having come). The
	 * backend hands over the ring's records in their order, and the inflight
	 * ones after them, so every complete packet before is known here. This
	 * is the one place that rule is decided: the record carries the verdict
	 * (docs/record-format.md). */
	if ((r->status == HS_ST_INFLIGHT || r->status == HS_ST_EVICTED) &&
	    slot->flow != HS_FLOW_NONE && w->flows.done_t1[slot->flow] > r->t[HS_T1]) {
		slot->flags |= HS_F_T4_UNSEEN;
		w->t4_unseen++;
	}
	if (w->err) {
		w->not_stored++;
		return w->err;
	}
	return w->nbuf == HS_CHUNK_RECORDS_MAX ? write_pending(w) : 0;
}

int hs_writer_flush(struct hs_writer *w, const char *counters_json)
{
	int err = write_pending(w);

	if (!err && counters_json) {
		err = write_chunk(w, HS_CHUNK_COUNTERS, 0, counters_json, strlen(counters_json));
		if (err)
			fail(w, err);
	}
	return err;
}

int hs_writer_close(struct hs_writer *w, const char *end_json)
{
	int err = write_pending(w), end_err;

	/* after a write error too: the file was cut back to its last whole chunk,
	 * so the END chunk (saying how many records were not stored) may fit */
	if (end_json && w->fd >= 0) {
		end_err = write_chunk(w, HS_CHUNK_END, 0, end_json, strlen(end_json));
		if (end_err && w->err)
			cut_back(w);
		else if (end_err)
			fail(w, end_err);
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
	free(w->buf);
	w->buf = NULL;
	hs_flows_free(&w->flows);
}
