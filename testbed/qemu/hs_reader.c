/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The QEMU guest's check of the module and of userspace/backend_kmod.c: records
 * through the backend exactly as `hopscope record --backend kmod` does, then
 * checks every record and prints one summary line, the counters and the
 * probe cost samples by stage:
 *   HSREAD records=.. complete=.. dropped=.. evicted=.. inflight=.. other_out=..
 *          v6=.. bad_order=.. dup_seq=.. zero_key=.. drop_t2=.. other=.. sampled=..
 * With --port P the per-record figures count the test's UDP flow to port P
 * only; the router's own chatter (MLD, RS) goes to other=. sampled= counts the
 * complete records of every flow whose seq the probes sample their cost on.
 *   HSCOUNT name=value ...
 *   HSCOST STAGE_n=.. [STAGE_mean_ns=.. STAGE_max_ns=..] ... (every stage)
 * Runs in the router's netns (ip netns exec router hs_reader ...), or with
 * --netns NAME enters it only to start the recording and goes back, so that
 * the netns can be deleted under a running recording. Stops on SIGINT or SIGTERM. Exit: 0 ok, 1 error, 2 usage, 3 open refused (EPERM/EACCES),
 * 4 device busy.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <sched.h>
#include <linux/capability.h>
#include <net/if.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "backend.h"

static volatile sig_atomic_t stop;

struct stats {
	uint32_t stages;
	int port;
	unsigned long other, sampled;
	unsigned long by_status[HS_ST_OTHER_OUT + 1], records, v6, bad_order, zero_key, drop_t2;
	uint64_t *seqs;
	size_t nseq, capseq;
};

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* every enabled stage stamped, in the order the packet meets them */
static int in_order(const struct hs_record *r, uint32_t stages)
{
	uint64_t prev = 0;

	for (int s = 0; s < HS_NSTAGES; s++) {
		if (!(stages & HS_STAGE_BIT(s)))
			continue;
		if (!r->t[s] || r->t[s] < prev)
			return 0;
		prev = r->t[s];
	}
	return 1;
}

static int on_record(void *ctx, const struct hs_record *r)
{
	struct stats *st = ctx;

	if (r->status == HS_ST_COMPLETE && !(r->seq & ((1u << HS_COST_SAMPLE_SHIFT) - 1)))
		st->sampled++;
	if (st->port && (r->proto != IPPROTO_UDP || r->dport != st->port)) {
		st->other++;
		return 0;
	}
	st->records++;
	if (r->status <= HS_ST_OTHER_OUT)
		st->by_status[r->status]++;
	if (r->flags & HS_F_IPV6)
		st->v6++;
	if (!r->key)
		st->zero_key++;
	if (r->status == HS_ST_COMPLETE && !in_order(r, st->stages))
		st->bad_order++;
	if (r->status == HS_ST_DROPPED && r->drop_stage == HS_T2)
		st->drop_t2++;
	if (st->nseq == st->capseq) {
		size_t cap = st->capseq ? st->capseq * 2 : 4096;
		uint64_t *n = realloc(st->seqs, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		st->seqs = n;
		st->capseq = cap;
	}
	st->seqs[st->nseq++] = r->seq;
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static unsigned long dup_seqs(struct stats *st)
{
	unsigned long d = 0;

	qsort(st->seqs, st->nseq, sizeof(*st->seqs), cmp_u64);
	for (size_t i = 1; i < st->nseq; i++)
		d += st->seqs[i] == st->seqs[i - 1];
	return d;
}

static int add_ifaces(struct hs_config *cfg, char *list, int out)
{
	for (char *save = NULL, *n = strtok_r(list, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
		struct hs_iface *ifc = &cfg->ifaces[cfg->n_ifaces];

		if (cfg->n_ifaces == HS_MAX_IFACES || !(ifc->ifindex = if_nametoindex(n))) {
			fprintf(stderr, "hs_reader: no interface %s here\n", n);
			return -1;
		}
		snprintf(ifc->name, sizeof(ifc->name), "%s", n);
		ifc->is_in = !out;
		ifc->is_out = out;
		cfg->n_ifaces++;
	}
	return 0;
}

static int parse_stages(const char *list, uint32_t *stages)
{
	static const char *const names[] = HS_STAGE_NAMES;
	char *copy = strdup(list), *save = NULL;

	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int s;

		for (s = 0; s < HS_NSTAGES && strcmp(t, names[s]); s++)
			;
		if (s == HS_NSTAGES) {
			fprintf(stderr, "hs_reader: unknown stage %s\n", t);
			free(copy);
			return -1;
		}
		*stages |= HS_STAGE_BIT(s);
	}
	free(copy);
	return 0;
}

/* stay root but lose CAP_NET_ADMIN: the module's own check must refuse */
static int drop_net_admin(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2];

	if (syscall(SYS_capget, &h, d))
		return -1;
	d[0].effective &= ~(1u << CAP_NET_ADMIN);
	return syscall(SYS_capset, &h, d);
}

/* *home: the netns to come back to */
static int enter_netns(const char *name, int *home)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	*home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (*home < 0 || fd < 0 || setns(fd, CLONE_NEWNET)) {
		fprintf(stderr, "hs_reader: cannot enter %s: %s\n", path, strerror(errno));
		return -1;
	}
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "in", 1, 0, 'i' }, { "out", 1, 0, 'o' }, { "stages", 1, 0, 's' },
		{ "slots", 1, 0, 'S' }, { "ring", 1, 0, 'r' }, { "no-drops", 0, 0, 'n' },
		{ "hold", 1, 0, 'h' }, { "ready", 1, 0, 'R' }, { "as-uid", 1, 0, 'u' },
		{ "drop-cap", 0, 0, 'c' }, { "netns", 1, 0, 'N' }, { "port", 1, 0, 'p' }, { 0 },
	};
	struct hs_config cfg = { .stages = HS_STAGES_CORE, .drops = true };
	struct stats st = {};
	uint64_t c[HS_C_NCOUNTERS];
	struct hs_cost cost[HS_NSTAGES];
	static const char *const cnames[] = HS_COUNTER_NAMES;
	static const char *const snames[] = HS_STAGE_NAMES;
	const char *ready = NULL, *netns = NULL;
	char *in = NULL, *out = NULL;
	struct hs_backend *b;
	int opt, err, hold = 0, uid = -1, dropcap = 0, home = -1;

	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'i': in = optarg; break;
		case 'o': out = optarg; break;
		case 'N': netns = optarg; break;
		case 'p': st.port = atoi(optarg); break;
		case 's': if (parse_stages(optarg, &cfg.stages)) return 2; break;
		case 'S': cfg.slots_per_cpu = strtoul(optarg, NULL, 0); break;
		case 'r': cfg.ringbuf_bytes = strtoull(optarg, NULL, 0) * sizeof(struct hs_record); break;
		case 'n': cfg.drops = false; break;
		case 'h': hold = atoi(optarg); break;
		case 'R': ready = optarg; break;
		case 'u': uid = atoi(optarg); break;
		case 'c': dropcap = 1; break;
		default: return 2;
		}
	}
	if ((uid >= 0 && (setresgid(uid, uid, uid) || setresuid(uid, uid, uid))) ||
	    (dropcap && drop_net_admin())) {
		perror("hs_reader: dropping privileges");
		return 1;
	}
	if (netns && enter_netns(netns, &home))
		return 1;
	if (!in || !out || add_ifaces(&cfg, in, 0) || add_ifaces(&cfg, out, 1)) {
		fprintf(stderr, "hs_reader: --in and --out name interfaces of the router\n");
		return 2;
	}
	st.stages = cfg.stages;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	b = hs_backend_kmod();
	if (!b)
		return 1;
	err = b->open(b, &cfg);
	if (err) {
		b->close(b);
		return err == -EPERM || err == -EACCES ? 3 : err == -EBUSY ? 4 : 1;
	}
	if (home >= 0 && setns(home, CLONE_NEWNET)) {
		perror("hs_reader: back to the first netns");
		return 1;
	}
	if (ready)
		fclose(fopen(ready, "w"));
	/* --hold: let the queue overflow before the first read */
	for (int i = 0; i < hold * 10 && !stop; i++)
		usleep(100000);
	while (!stop) {
		err = b->poll(b, on_record, &st);
		if (err >= 0 && !b->drain.more)
			usleep(10000);	/* the module wakes no reader: poll's is a drain */
		if (err < 0) {
			fprintf(stderr, "hs_reader: poll: %s\n", strerror(-err));
			break;
		}
	}
	err = b->stop(b, on_record, &st);
	if (err >= 0)
		err = b->counters(b, c);
	if (err >= 0)
		err = b->cost(b, cost);
	b->close(b);
	if (err < 0) {
		fprintf(stderr, "hs_reader: stop: %s\n", strerror(-err));
		return 1;
	}
	printf("HSREAD records=%lu complete=%lu dropped=%lu evicted=%lu inflight=%lu other_out=%lu "
	       "v6=%lu bad_order=%lu dup_seq=%lu zero_key=%lu drop_t2=%lu other=%lu sampled=%lu\n",
	       st.records,
	       st.by_status[HS_ST_COMPLETE], st.by_status[HS_ST_DROPPED],
	       st.by_status[HS_ST_EVICTED], st.by_status[HS_ST_INFLIGHT],
	       st.by_status[HS_ST_OTHER_OUT], st.v6, st.bad_order, dup_seqs(&st), st.zero_key,
	       st.drop_t2, st.other, st.sampled);
	printf("HSCOUNT");
	for (int i = 0; i < HS_C_NCOUNTERS; i++)
		printf(" %s=%llu", cnames[i], (unsigned long long)c[i]);
	printf("\nHSCOST");
	for (int s = 0; s < HS_NSTAGES; s++) {
		printf(" %s_n=%llu", snames[s], (unsigned long long)cost[s].n);
		if (cost[s].n)
			printf(" %s_mean_ns=%llu %s_max_ns=%llu", snames[s],
			       (unsigned long long)(cost[s].sum_ns / cost[s].n), snames[s],
			       (unsigned long long)cost[s].max_ns);
	}
	printf("\n");
	free(st.seqs);
	return 0;
}
