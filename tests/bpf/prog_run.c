/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Runs the XDP stage on crafted frames with BPF_PROG_TEST_RUN (nothing is
 * attached) and prints what it made of each: one JSON line per frame with the
 * XDP verdict, the slot's fields (or null) and the counters that moved.
 * Frames come on stdin, one hex string per line.
 *
 * --time RUNS [--floor empty|clock]: the stage's cost instead, without
 * traffic's spread (evaluation/measurements.md): per frame RUNS test runs of one
 * run each (a test run repeated reuses its frame, whose metadata room then
 * fills up: t1 would fail from the third run on), with as many slots per CPU
 * as `hopscope record` takes by default, freed from here every lap of them,
 * so that t1 takes free slots as under traffic (nothing releases them in a
 * test run); prints the runs' ns (the mean of the middle 80 %, median,
 * least, most: each with the test run's own clock reads) and the counters
 * that moved.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/mman.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include "hopscope.h"	/* before the skeleton: its .bss has hopscope.h's structs */
#include "hopscope.skel.h"
#include "runmeta.h"

static int unhex(const char *s, unsigned char *out, int max)
{
	int n = 0;

	while (s[0] && s[1] && s[0] != '\n' && n < max) {
		unsigned int b;

		if (sscanf(s, "%2x", &b) != 1)
			return -1;
		out[n++] = b;
		s += 2;
	}
	return n;
}

/* vals: one value per possible CPU */
static void counters(struct hopscope_bpf *s, uint64_t *vals, uint64_t *out)
{
	int ncpu = libbpf_num_possible_cpus();

	for (__u32 k = 0; k < HS_C_NCOUNTERS; k++) {
		out[k] = 0;
		if (!bpf_map_lookup_elem(bpf_map__fd(s->maps.counters), &k, vals))
			for (int c = 0; c < ncpu; c++)
				out[k] += vals[c];
	}
}

static void addr(const char *name, const __u32 *a, int v6)
{
	const unsigned char *b = (const unsigned char *)a;

	printf("\"%s\":\"", name);
	for (int i = 0; i < (v6 ? 16 : 4); i++)
		printf("%02x", b[i]);
	printf("\",");
}

static void print_counters(const uint64_t *before, const uint64_t *after)
{
	int first = 1;

	printf("\"counters\":{");
	for (int c = 0; c < HS_C_NCOUNTERS; c++)
		if (after[c] != before[c]) {
			printf("%s\"%s\":%llu", first ? "" : ",", hs_counter_names[c],
			       (unsigned long long)(after[c] - before[c]));
			first = 0;
		}
	printf("}}\n");
	fflush(stdout);
}

static int by_value(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

/* --time: one frame's runs; ns[] their durations */
static int time_frame(struct hopscope_bpf *s, void *slots, size_t size, unsigned int nslots,
		      unsigned char *pkt, int n, long runs, __u32 *ns)
{
	unsigned char out[2048 + 256];

	for (long i = 0; i < runs; i++) {
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = n,
			    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

		if (i % nslots == 0)
			memset(slots, 0, size);
		if (bpf_prog_test_run_opts(bpf_program__fd(s->progs.hs_input), &o))
			return -1;
		ns[i] = o.duration;
	}
	qsort(ns, runs, sizeof(*ns), by_value);
	/* the mean of the middle 80 %: a run's clock reads step by ~10 ns here,
	 * so the median alone moves in steps; the slowest runs are interrupts */
	double sum = 0;
	long lo = runs / 10, hi = runs - runs / 10;

	for (long i = lo; i < hi; i++)
		sum += ns[i];
	printf("{\"ns_per_run\":{\"middle_mean\":%.1f,\"median\":%u,\"least\":%u,"
	       "\"most\":%u},", sum / (hi - lo), ns[runs / 2], ns[0], ns[runs - 1]);
	return 0;
}

/* a whole number from 1 to max, or -1 */
static long count_arg(const char *s, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	return errno || *end || v < 1 || v > max ? -1 : v;
}

int main(int argc, char **argv)
{
	struct hopscope_bpf *s = hopscope_bpf__open();
	unsigned char pkt[2048], out[2048 + 256];
	char line[8192];
	uint64_t before[HS_C_NCOUNTERS], after[HS_C_NCOUNTERS];
	uint64_t last_seq = 0, *percpu = calloc(libbpf_num_possible_cpus(), sizeof(*percpu));
	int shift = 6, timing = argc > 1 && !strcmp(argv[1], "--time");
	long runs = 0;
	__u32 *ns = NULL;

	if (timing) {
		shift = __builtin_ctz(HS_SLOTS_DEFAULT);
		runs = argc > 2 ? count_arg(argv[2], 100000000) : -1;
	}
	if (runs < 0 || (timing && argc != 3 && argc != 5) || (!timing && argc != 1) ||
	    (argc == 5 && (strcmp(argv[3], "--floor") ||
			   (strcmp(argv[4], "empty") && strcmp(argv[4], "clock"))))) {
		fprintf(stderr, "usage: prog_run [--time RUNS [--floor empty|clock]]\n");
		return 2;
	}
	if (!s || !percpu || (timing && !(ns = calloc(runs, sizeof(*ns)))))
		return 1;
	s->rodata->cfg_slot_shift = shift;
	if (argc == 5)
		s->rodata->cfg_floor = strcmp(argv[4], "empty") ? HS_FLOOR_CLOCK : HS_FLOOR_EMPTY;
	s->rodata->cfg_stages = HS_STAGES_CORE;
	s->rodata->cfg_ring_shift = 6;
	bpf_map__set_max_entries(s->maps.slots, libbpf_num_possible_cpus() << shift);
	bpf_map__set_max_entries(s->maps.ring, libbpf_num_possible_cpus() << 6);
	bpf_map__set_max_entries(s->maps.ring_pos, libbpf_num_possible_cpus());
	for (struct bpf_program *p = bpf_object__next_program(s->obj, NULL); p;
	     p = bpf_object__next_program(s->obj, p))
		bpf_program__set_autoload(p, p == s->progs.hs_input);
	if (hopscope_bpf__load(s)) {
		fprintf(stderr, "prog_run: cannot load the XDP stage\n");
		return 1;
	}
	size_t nslots = bpf_map__max_entries(s->maps.slots);
	size_t size = hs_page_round(nslots * sizeof(struct hs_record));
	struct hs_record *slots = mmap(NULL, size, PROT_READ | (timing ? PROT_WRITE : 0),
				       MAP_SHARED, bpf_map__fd(s->maps.slots), 0);

	if (slots == MAP_FAILED)
		return 1;
	while (fgets(line, sizeof(line), stdin)) {
		int n = unhex(line, pkt, sizeof(pkt));
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = pkt, .data_size_in = n,
			    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);
		const struct hs_record *r = NULL;

		if (n < 0)
			return 1;
		counters(s, percpu, before);
		if (timing) {
			if (time_frame(s, slots, size, 1u << shift, pkt, n, runs, ns)) {
				fprintf(stderr, "prog_run: test run failed\n");
				return 1;
			}
			counters(s, percpu, after);
			print_counters(before, after);
			continue;
		}
		if (bpf_prog_test_run_opts(bpf_program__fd(s->progs.hs_input), &o)) {
			printf("{\"error\":\"test_run failed\"}\n");
			continue;
		}
		counters(s, percpu, after);
		for (size_t i = 0; i < nslots; i++)
			if (slots[i].seq && (slots[i].seq & HS_SEQ_COUNT_MASK) >
			    (last_seq & HS_SEQ_COUNT_MASK) &&
			    (!r || slots[i].seq > r->seq))
				r = &slots[i];
		printf("{\"verdict\":%u,\"meta_len\":%u,", o.retval, o.data_size_out > (__u32)n ?
		       o.data_size_out - n : 0);
		if (r) {
			last_seq = r->seq;
			printf("\"record\":{\"key\":%u,\"ip_len\":%u,\"sport\":%u,\"dport\":%u,"
			       "\"tos\":%u,\"proto\":%u,\"flags\":%u,", r->key, r->ip_len, r->sport,
			       r->dport, r->tos, r->proto, r->flags);
			addr("saddr", r->saddr, r->flags & HS_F_IPV6);
			addr("daddr", r->daddr, r->flags & HS_F_IPV6);
			printf("\"t1\":%llu},", (unsigned long long)r->t[HS_T1]);
		} else {
			printf("\"record\":null,");
		}
		print_counters(before, after);
	}
	return 0;
}
