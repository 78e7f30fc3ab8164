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
#include "hsr_file.h"

static const char *const stage_names[] = HS_STAGE_NAMES;

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

struct walk {
	unsigned long complete, sampled;
	const char *end;	/* the END trailer's JSON */
};

static void on_chunk(const struct hs_chunk *ch, const char *payload, void *ctx)
{
	struct walk *w = ctx;
	const struct hs_record *r = hsr_records(ch, payload);

	if (r) {
		for (uint32_t i = 0; i < ch->count; i++) {
			if (r[i].status != HS_ST_COMPLETE)
				continue;
			w->complete++;
			w->sampled += !(r[i].seq & ((1u << HS_COST_SAMPLE_SHIFT) - 1));
		}
		hsr_free_records(ch, r);
	} else if (ch->type == HS_CHUNK_END) {
		/* JSON, then zero padding: a string */
		w->end = payload;
	}
}

int main(int argc, char **argv)
{
	struct walk w = {};
	const char *stages = NULL, *be;
	char backend[16] = "?";
	int hist_ok = 1;
	size_t len = 0;
	char *buf;

	if (argc != 2) {
		fprintf(stderr, "usage: hs_hsrcost FILE.hsr\n");
		return 2;
	}
	buf = hsr_load(argv[1], &len);
	if (!buf)
		return 1;
	be = strstr(buf + sizeof(struct hs_file_header), "\"backend\":\"");
	if (be)
		sscanf(be + strlen("\"backend\":\""), "%15[a-z]", backend);
	hsr_walk(buf, len, on_chunk, &w);
	if (w.end && (stages = strstr(w.end, "\"probe_cost\":{")))
		stages = strstr(stages, "\"stages\":{");
	printf("HSRCOST backend=%s end=%d complete=%lu sampled=%lu", backend, !!w.end, w.complete,
	       w.sampled);
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
	return !w.end;
}
