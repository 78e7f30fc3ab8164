/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Runs the XDP stage on crafted frames with BPF_PROG_TEST_RUN (nothing is
 * attached) and prints what it made of each: one JSON line per frame with the
 * XDP verdict, the slot's fields (or null) and the counters that moved.
 * Frames come on stdin, one hex string per line.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
	struct hopscope_bpf *s = hopscope_bpf__open();
	unsigned char pkt[2048], out[2048 + 256];
	char line[8192];
	uint64_t before[HS_C_NCOUNTERS], after[HS_C_NCOUNTERS];
	uint64_t last_seq = 0, *percpu = calloc(libbpf_num_possible_cpus(), sizeof(*percpu));

	if (!s || !percpu)
		return 1;
	s->rodata->cfg_slot_shift = 6;
	s->rodata->cfg_stages = HS_STAGES_CORE;
	s->rodata->cfg_ring_shift = 6;
	bpf_map__set_max_entries(s->maps.slots, libbpf_num_possible_cpus() << 6);
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
	struct hs_record *slots = mmap(NULL, size, PROT_READ, MAP_SHARED,
				       bpf_map__fd(s->maps.slots), 0);

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
		printf("\"counters\":{");
		int first = 1;
		for (int c = 0; c < HS_C_NCOUNTERS; c++)
			if (after[c] != before[c]) {
				printf("%s\"%s\":%llu", first ? "" : ",", hs_counter_names[c],
				       (unsigned long long)(after[c] - before[c]));
				first = 0;
			}
		printf("}}\n");
		fflush(stdout);
	}
	return 0;
}
