/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The QEMU guest's check of the probe cost a recording stored (no Python in
 * the guest): reads a .hsr file that `hopscope record` wrote, counts its
 * complete records whose seq is one the probes sample (HS_COST_SAMPLE_SHIFT),
 * and prints the END trailer's probe_cost per stage:
 *   HSRCOST backend=NAME end=0|1 complete=N sampled=N
 *           t0_n=N [t0_mean_ns=N t0_max_ns=N] ... t4_n=N ... hist_ok=0|1
 * mean and max only for a stage with samples. hist_ok: every stage's
 * histogram and over add up to its n. Exit: 0 read, 1 no END trailer or not
 * a hopscope file.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "hopscope_file.h"

static const char *const stage_names[] = HS_STAGE_NAMES;

static char *slurp(const char *path, size_t *len)
{
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
	return buf;
}

/* the numbers of one stage's object in probe_cost, when it is there */
static void stage_cost(const char *stages, const char *name, struct hs_cost *c, int *hist_ok)
{
	char key[32];
	const char *p;
	unsigned long long n, sum, sq, max, over, h, hsum = 0;
	int used;

	snprintf(key, sizeof(key), "\"%s\":{", name);
	p = strstr(stages, key);
	if (!p || sscanf(p + strlen(key), "\"n\":%llu,\"sum_ns\":%llu,\"sum_sq\":%llu,"
			 "\"max_ns\":%llu,\"over\":%llu,\"hist\":[%n", &n, &sum, &sq, &max,
			 &over, &used) != 5)
		return;
	p += strlen(key) + used;
	while (sscanf(p, "%llu%n", &h, &used) == 1) {
		hsum += h;
		p += used;
		if (*p == ',')
			p++;
	}
	if (hsum + over != n)
		*hist_ok = 0;
	c->n = n;
	c->sum_ns = sum;
	c->max_ns = max;
}

int main(int argc, char **argv)
{
	const struct hs_file_header *fh;
	unsigned long complete = 0, sampled = 0;
	const char *end = NULL, *stages = NULL, *be;
	char backend[16] = "?";
	int hist_ok = 1;
	size_t len = 0, off;
	char *buf;

	if (argc != 2) {
		fprintf(stderr, "usage: hs_hsrcost FILE.hsr\n");
		return 2;
	}
	buf = slurp(argv[1], &len);
	fh = (const void *)buf;
	if (!buf || len < sizeof(*fh) || memcmp(fh->magic, HS_FILE_MAGIC, 8) ||
	    fh->version != HS_FILE_VERSION || fh->record_size != sizeof(struct hs_record)) {
		printf("HSRCOST %s: not a hopscope file of version %d\n", argv[1], HS_FILE_VERSION);
		return 1;
	}
	be = strstr(buf + sizeof(*fh), "\"backend\":\"");
	if (be)
		sscanf(be + strlen("\"backend\":\""), "%15[a-z]", backend);
	for (off = sizeof(*fh) + fh->header_bytes; off + sizeof(struct hs_chunk) <= len;) {
		const struct hs_chunk *ch = (const void *)(buf + off);
		const char *payload = buf + off + sizeof(*ch);

		if (ch->magic != HS_CHUNK_MAGIC || ch->bytes > len - off - sizeof(*ch))
			break;
		if (ch->type == HS_CHUNK_RECORDS) {
			const struct hs_record *r = (const void *)payload;

			for (uint32_t i = 0; i < ch->count; i++) {
				if (r[i].status != HS_ST_COMPLETE)
					continue;
				complete++;
				sampled += !(r[i].seq & ((1u << HS_COST_SAMPLE_SHIFT) - 1));
			}
		} else if (ch->type == HS_CHUNK_END) {
			/* JSON, then zero padding: a string */
			end = payload;
		}
		off += sizeof(*ch) + ((ch->bytes + 7) & ~7u);
	}
	if (end && (stages = strstr(end, "\"probe_cost\":{")))
		stages = strstr(stages, "\"stages\":{");
	printf("HSRCOST backend=%s end=%d complete=%lu sampled=%lu", backend, !!end, complete,
	       sampled);
	for (int s = 0; s < HS_NSTAGES; s++) {
		struct hs_cost c = {};

		if (stages)
			stage_cost(stages, stage_names[s], &c, &hist_ok);
		printf(" %s_n=%" PRIu64, stage_names[s], (uint64_t)c.n);
		if (c.n)
			printf(" %s_mean_ns=%" PRIu64 " %s_max_ns=%" PRIu64, stage_names[s],
			       (uint64_t)(c.sum_ns / c.n), stage_names[s], (uint64_t)c.max_ns);
	}
	printf(" hist_ok=%d\n", hist_ok);
	free(buf);
	return !end;
}
