/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The router guest's check of a .hsr file's paths (routers-guest.sh; no
 * Python in the guest): what each record says the packet took, and whether
 * its stamps agree with that path. Prints one line:
 *   HSRPATH end=0|1 records=N complete=N dropped=N ... partial=N stack=N
 *           tunnel=N tun_in=N tun_out=N fast=N flowtable=N no_netfilter=N
 *           other_path=N stack_gap=N fast_stamped=N no_t1t4=N stack_late=N
 *           outs=IFINDEX:N[,IFINDEX:N...]
 * complete .. partial: the records of each status; stack, tunnel, fast:
 * complete records of path stack, of path tunnel and of any other path;
 * tun_in, tun_out: complete records with that stage; flowtable,
 * no_netfilter, other_path: the fast ones by path; stack_gap: complete
 * stack or tunnel records without t2 or t3; fast_stamped: complete fast ones
 * with t2 or t3; no_t1t4: complete ones without t1 or t4; stack_late:
 * complete stack records that came in (t1) after the first fast one; outs:
 * the complete records' out_ifindex, counted. Exit: 0 read, 1 no END
 * trailer or not a hopscope file.
 */
#include <stdint.h>
#include "hsr_file.h"

#define MAX_OUTS 8

static const char *const status_names[] = HS_STATUS_NAMES;

struct walk {
	unsigned long records, by_status[HS_ST_END], by_path[HS_PATH_END + 1];
	unsigned long stack_gap, fast_stamped, no_t1t4, stack_late, tun_in, tun_out;
	uint64_t first_fast_t1;	/* 0: none yet */
	uint32_t out[MAX_OUTS];
	unsigned long out_n[MAX_OUTS];
	int end;
};

static void count_out(struct walk *w, uint32_t ifindex)
{
	for (int i = 0; i < MAX_OUTS; i++)
		if (w->out[i] == ifindex || !w->out_n[i]) {
			w->out[i] = ifindex;
			w->out_n[i]++;
			return;
		}
}

static void on_chunk(const struct hs_chunk *ch, const char *payload, void *ctx)
{
	const struct hs_record *r = hsr_records(ch, payload);
	struct walk *w = ctx;

	w->end |= ch->type == HS_CHUNK_END;
	if (!r)
		return;
	for (uint32_t i = 0; i < ch->count; i++) {
		const __u64 *t = r[i].t;

		w->records++;
		w->by_status[r[i].status < HS_ST_END ? r[i].status : HS_ST_NONE]++;
		if (r[i].status != HS_ST_COMPLETE)
			continue;
		w->by_path[r[i].path < HS_PATH_END ? r[i].path : HS_PATH_END]++;
		count_out(w, r[i].out_ifindex);
		w->no_t1t4 += !t[HS_T1] || !t[HS_T4];
		w->tun_in += r[i].tun_in_ns != 0;
		w->tun_out += r[i].tun_out_ns != 0;
		if (r[i].path == HS_PATH_STACK || r[i].path == HS_PATH_TUNNEL) {
			w->stack_gap += !t[HS_T2] || !t[HS_T3];
		} else {
			w->fast_stamped += t[HS_T2] || t[HS_T3];
			if (!w->first_fast_t1 || t[HS_T1] < w->first_fast_t1)
				w->first_fast_t1 = t[HS_T1];
		}
	}
	hsr_free_records(ch, r);
}

/* a second pass: "first fast" is known only once every record is read */
static void on_chunk_late(const struct hs_chunk *ch, const char *payload, void *ctx)
{
	struct walk *w = ctx;
	const struct hs_record *r = w->first_fast_t1 ? hsr_records(ch, payload) : NULL;

	if (!r)
		return;
	for (uint32_t i = 0; i < ch->count; i++)
		w->stack_late += r[i].status == HS_ST_COMPLETE && r[i].path == HS_PATH_STACK &&
				 r[i].t[HS_T1] > w->first_fast_t1;
	hsr_free_records(ch, r);
}

int main(int argc, char **argv)
{
	struct walk w = {};
	unsigned long fast;
	size_t len = 0;
	char *buf;

	if (argc != 2) {
		fprintf(stderr, "usage: hs_hsrpath FILE.hsr\n");
		return 2;
	}
	buf = hsr_load(argv[1], &len);
	if (!buf)
		return 1;
	hsr_walk(buf, len, on_chunk, &w);
	hsr_walk(buf, len, on_chunk_late, &w);
	fast = w.by_status[HS_ST_COMPLETE] - w.by_path[HS_PATH_STACK] - w.by_path[HS_PATH_TUNNEL];
	printf("HSRPATH end=%d records=%lu", w.end, w.records);
	for (int st = HS_ST_NONE + 1; st < HS_ST_END; st++)
		printf(" %s=%lu", status_names[st], w.by_status[st]);
	printf(" stack=%lu tunnel=%lu tun_in=%lu tun_out=%lu fast=%lu flowtable=%lu no_netfilter=%lu "
	       "other_path=%lu stack_gap=%lu fast_stamped=%lu no_t1t4=%lu stack_late=%lu outs=",
	       w.by_path[HS_PATH_STACK], w.by_path[HS_PATH_TUNNEL], w.tun_in, w.tun_out, fast,
	       w.by_path[HS_PATH_FLOWTABLE], w.by_path[HS_PATH_NO_NF],
	       fast - w.by_path[HS_PATH_FLOWTABLE] - w.by_path[HS_PATH_NO_NF], w.stack_gap,
	       w.fast_stamped, w.no_t1t4, w.stack_late);
	for (int i = 0; i < MAX_OUTS && w.out_n[i]; i++)
		printf("%s%u:%lu", i ? "," : "", w.out[i], w.out_n[i]);
	printf("\n");
	free(buf);
	return !w.end;
}
