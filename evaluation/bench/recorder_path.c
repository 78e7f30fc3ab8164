/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The recorder's user-space path alone, from the record rings to the file:
 * a producer thread fills a ring as the programs do (claim a place, write
 * the record, commit its token; wait while the ring is full, so that the
 * drain sets the pace), and the recorder's own code drains it (ring.c) into
 * its writer (writer.c, with its writing thread), as `hopscope record`
 * does. Built and run by recorder_path.py.
 *
 *   recorder_path path FILE RECORDS SHIFT PRODUCER_CPU DRAIN_CPU
 *       prints one JSON line: records, seconds, the drain's CPU seconds,
 *       the writing thread's, the process's, records in the file
 *   recorder_path memcpy MIB ROUNDS CPU
 *       prints one JSON line: bytes copied a second, one buffer to another
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ring.h"
#include "writer.h"

#define FLOWS 64	/* distinct 5-tuples, as a few senders' traffic has */

struct bench {
	struct hs_record *ring;
	struct hs_ring_pos *pos;
	uint32_t shift;
	uint64_t records;
	int producer_cpu;
	struct hs_writer w;
	uint64_t taken;
};

static double now(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		perror("recorder_path: sched_setaffinity");
}

/* the programs' side of include/hopscope.h's ring, one CPU's */
static void *produce(void *arg)
{
	struct bench *b = arg;
	uint64_t n = 1ull << b->shift;
	struct hs_ring_pos *p = &b->pos[0];

	pin(b->producer_cpu);
	for (uint64_t place = 0; place < b->records; place++) {
		struct hs_record *at = &b->ring[place & (n - 1)];

		while (place - __atomic_load_n(&p->read, __ATOMIC_ACQUIRE) >= n - HS_RING_SLACK)
			;	/* full: the drain is the bench's pace */
		memset(at, 0, sizeof(*at));
		at->flow = ~hs_ring_token(place);
		at->saddr[0] = 0x01011262 + (uint32_t)(place % FLOWS);
		at->daddr[0] = 0x02031262;
		at->sport = 40000;
		at->dport = 9000;
		at->proto = 17;
		at->status = HS_ST_COMPLETE;
		at->seq = hs_seq(0, place + 1);
		at->t[HS_T1] = 1000000 + place * 1000;
		at->t[HS_T2] = at->t[HS_T1] + 2000;
		at->t[HS_T3] = at->t[HS_T2] + 3000;
		at->t[HS_T4] = at->t[HS_T3] + 4000;
		__atomic_store_n(&p->claim, place + 1, __ATOMIC_RELEASE);
		__atomic_store_n(&at->flow, hs_ring_token(place), __ATOMIC_RELEASE);
	}
	return NULL;
}

static int take(void *ctx, const struct hs_record *r)
{
	struct bench *b = ctx;

	b->taken++;
	return hs_writer_add(&b->w, r);
}

static int path(const char *file, uint64_t records, uint32_t shift, int producer_cpu,
		int drain_cpu)
{
	struct hs_drain_seen seen = {};
	struct bench b = { .shift = shift, .records = records, .producer_cpu = producer_cpu };
	struct hs_ring_reader rr = { .ncpu = 1, .shift = shift, .seen = &seen };
	double t0, cpu0, pcpu0;
	pthread_t producer;
	int err = 0;

	b.ring = aligned_alloc(64, sizeof(*b.ring) << shift);
	b.pos = aligned_alloc(64, sizeof(*b.pos));
	if (!b.ring || !b.pos)
		return 1;
	memset(b.ring, 0, sizeof(*b.ring) << shift);	/* touched before the clock runs */
	memset(b.pos, 0, sizeof(*b.pos));
	rr.ring = b.ring;
	rr.pos = b.pos;
	pin(drain_cpu);	/* before the writing thread starts: it shares the drain's CPU */
	if (hs_writer_open(&b.w, file, "{\"format\":\"hopscope-record\"}", 1))
		return 1;
	t0 = now(CLOCK_MONOTONIC);
	cpu0 = now(CLOCK_THREAD_CPUTIME_ID);
	pcpu0 = now(CLOCK_PROCESS_CPUTIME_ID);
	if (pthread_create(&producer, NULL, produce, &b))
		return 1;
	while (b.taken < records && err >= 0)
		err = hs_ring_drain(&rr, 0, 1, take, &b);
	err = err < 0 ? err : hs_writer_sync(&b.w);
	double seconds = now(CLOCK_MONOTONIC) - t0, drain_cpu_s = now(CLOCK_THREAD_CPUTIME_ID) - cpu0;
	/* the writing thread's CPU, all of it: it idled before t0 */
	clockid_t io_clock;
	double io_cpu_s = pthread_getcpuclockid(b.w.io, &io_clock) ? -1 : now(io_clock);

	pthread_join(producer, NULL);
	/* the producer spun on its own CPU: the process's less its */
	double process_cpu_s = now(CLOCK_PROCESS_CPUTIME_ID) - pcpu0;

	if (!err)
		err = hs_writer_close(&b.w, "{\"userspace\":{},\"stop_reason\":\"count\"}");
	printf("{\"records\": %llu, \"seconds\": %.6f, \"drain_cpu_s\": %.6f, "
	       "\"io_cpu_s\": %.6f, \"process_cpu_s\": %.6f, \"written\": %llu, \"not_stored\": %llu, "
	       "\"ring_records\": %llu, \"ring_peak_waiting\": %llu, \"error\": %d}\n",
	       (unsigned long long)b.taken, seconds, drain_cpu_s, io_cpu_s, process_cpu_s,
	       (unsigned long long)b.w.written, (unsigned long long)b.w.not_stored,
	       1ull << shift, (unsigned long long)seen.peak_waiting, err);
	hs_writer_free(&b.w);
	free(b.ring);
	free(b.pos);
	return err ? 1 : 0;
}

static int copy(size_t mib, int rounds, int cpu)
{
	size_t n = mib << 20;
	char *a = malloc(n), *b = malloc(n);
	double t0;

	if (!a || !b)
		return 1;
	pin(cpu);
	memset(a, 1, n);
	memset(b, 2, n);
	t0 = now(CLOCK_MONOTONIC);
	for (int i = 0; i < rounds; i++) {
		memcpy(i % 2 ? a : b, i % 2 ? b : a, n);
		__asm__ volatile("" : : "r"(a), "r"(b) : "memory");	/* kept */
	}
	printf("{\"bytes_per_s\": %.0f}\n", (double)n * rounds / (now(CLOCK_MONOTONIC) - t0));
	free(a);
	free(b);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 7 && !strcmp(argv[1], "path"))
		return path(argv[2], strtoull(argv[3], NULL, 10), atoi(argv[4]), atoi(argv[5]),
			    atoi(argv[6]));
	if (argc == 5 && !strcmp(argv[1], "memcpy"))
		return copy(strtoull(argv[2], NULL, 10), atoi(argv[3]), atoi(argv[4]));
	fprintf(stderr, "usage: recorder_path path FILE RECORDS SHIFT PRODUCER_CPU DRAIN_CPU\n"
		"       recorder_path memcpy MIB ROUNDS CPU\n");
	return 2;
}
