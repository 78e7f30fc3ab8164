/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include "writer.h"

static int write_all(struct hs_writer *w, const void *p, size_t n)
{
	while (n) {
		ssize_t k = write(w->fd, p, n);

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
	};
	int err;

	err = write_all(w, &c, sizeof(c));
	if (!err)
		err = write_all(w, payload, bytes);
	if (!err && bytes % 8)
		err = write_all(w, zeros, 8 - bytes % 8);
	return err;
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
	w->path = path;
	w->buf = calloc(HS_CHUNK_RECORDS_MAX, sizeof(*w->buf));
	if (!w->buf || hs_flows_init(&w->flows, 1u << 20))
		return -ENOMEM;
	w->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (w->fd < 0) {
		fprintf(stderr, "hopscope: cannot create %s: %s\n", path, strerror(errno));
		return -errno;
	}
	memcpy(h.magic, HS_FILE_MAGIC, sizeof(h.magic));
	h.header_bytes = padded;
	text = malloc(padded);
	if (!text)
		return -ENOMEM;
	memcpy(text, header_json, len);
	memset(text + len, ' ', padded - len);
	err = write_all(w, &h, sizeof(h));
	if (!err)
		err = write_all(w, text, padded);
	free(text);
	return err;
}

static int write_pending(struct hs_writer *w)
{
	struct hs_flows *f = &w->flows;
	int err = 0;

	if (f->n > f->written) {
		err = write_chunk(w, HS_CHUNK_FLOWS, f->n - f->written, f->items + f->written,
				  (f->n - f->written) * sizeof(*f->items));
		if (err)
			return err;
		f->written = f->n;
	}
	if (w->nbuf) {
		err = write_chunk(w, HS_CHUNK_RECORDS, w->nbuf, w->buf, w->nbuf * sizeof(*w->buf));
		if (err)
			return err;
		w->written += w->nbuf;
		w->nbuf = 0;
	}
	return 0;
}

int hs_writer_add(struct hs_writer *w, const struct hs_record *r)
{
	struct hs_record *slot = &w->buf[w->nbuf++];

	*slot = *r;
	slot->flow = hs_flows_id(&w->flows, r);
	if (r->status < HS_ST_END)
		w->by_status[r->status]++;
	if (r->status == HS_ST_COMPLETE) {
		w->complete++;
		if (slot->flow != HS_FLOW_NONE && r->t[HS_T1] > w->flows.done_t1[slot->flow])
			w->flows.done_t1[slot->flow] = r->t[HS_T1];
	}
	/* A flow keeps its order through the router (one RPS CPU, one FIFO or
	 * per-flow qdisc queue): a packet still "inside" after a later one of its
	 * flow left was not inside; its t4 went unseen. The backend hands over the
	 * ring's records before the inflight ones, so every complete packet of
	 * the run is known here. This is the one place that rule is decided: the
	 * record carries the verdict (docs/record-format.md). */
	if (r->status == HS_ST_INFLIGHT && slot->flow != HS_FLOW_NONE &&
	    w->flows.done_t1[slot->flow] > r->t[HS_T1]) {
		slot->flags |= HS_F_T4_UNSEEN;
		w->t4_unseen++;
	}
	return w->nbuf == HS_CHUNK_RECORDS_MAX ? write_pending(w) : 0;
}

int hs_writer_flush(struct hs_writer *w, const char *counters_json)
{
	int err = write_pending(w);

	if (!err && counters_json)
		err = write_chunk(w, HS_CHUNK_COUNTERS, 0, counters_json, strlen(counters_json));
	return err;
}

int hs_writer_close(struct hs_writer *w, const char *end_json)
{
	int err = write_pending(w);

	if (!err)
		err = write_chunk(w, HS_CHUNK_END, 0, end_json, strlen(end_json));
	if (close(w->fd) && !err) {
		fprintf(stderr, "hopscope: closing %s: %s\n", w->path, strerror(errno));
		err = -errno;
	}
	w->fd = -1;
	return err;
}

void hs_writer_free(struct hs_writer *w)
{
	if (w->fd > 0)
		close(w->fd);
	free(w->buf);
	hs_flows_free(&w->flows);
}
