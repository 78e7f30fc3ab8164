/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The kernel module backend: drives /dev/hopscope (kmod/, ABI in
 * include/hopscope_kmod.h). Same records, counters and probe cost samples as
 * the eBPF backend; the module joins the stages by skb address and queues
 * one record per packet, read here in batches.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>
#include "backend.h"
#include "hopscope_kmod.h"
#include "json.h"

#define KMOD_BATCH 256		/* records per read() */
#define KMOD_READS_PER_POLL 64	/* then return to the caller, even under load */

struct kmod {
	int fd;
	struct hs_kmod_info info;
	struct hs_record buf[KMOD_BATCH];
};

static const char *const stage_names[] = HS_STAGE_NAMES;

bool hs_backend_kmod_supported(char *why, size_t len)
{
	if (access(HS_KMOD_DEVICE, F_OK) == 0)
		return true;
	if (access("/proc/modules", F_OK))
		snprintf(why, len, "this kernel cannot load modules");
	else
		snprintf(why, len, "%s is missing: load the module (make kmod; insmod "
			 "kmod/hopscope.ko)", HS_KMOD_DEVICE);
	return false;
}

static int open_device(void)
{
	int fd = open(HS_KMOD_DEVICE, O_RDONLY | O_NONBLOCK | O_CLOEXEC), err;

	if (fd >= 0)
		return fd;
	err = -errno;
	if (err == -ENOENT || err == -ENXIO || err == -ENODEV)
		fprintf(stderr, "hopscope: no %s: the hopscope module is not loaded "
			"(make kmod; insmod kmod/hopscope.ko)\n", HS_KMOD_DEVICE);
	else if (err == -EPERM || err == -EACCES)
		fprintf(stderr, "hopscope: %s needs root (CAP_NET_ADMIN)\n", HS_KMOD_DEVICE);
	else if (err == -EBUSY)
		fprintf(stderr, "hopscope: %s is in use by another recording\n", HS_KMOD_DEVICE);
	else
		fprintf(stderr, "hopscope: %s: %s\n", HS_KMOD_DEVICE, strerror(-err));
	return err;
}

/* largest power of two of records that fits, within the module's bound */
static uint32_t ring_records(uint64_t bytes)
{
	uint64_t n = bytes / sizeof(struct hs_record);
	uint32_t p = 1;

	if (!n)
		return 0;
	while ((uint64_t)p * 2 <= n && p < HS_KMOD_MAX_RING)
		p *= 2;
	return p;
}

static int build_config(const struct hs_config *cfg, const struct hs_kmod_info *info,
			struct hs_kmod_config *kc)
{
	uint32_t missing = cfg->stages & ~info->stages;

	for (int s = 0; s < HS_NSTAGES; s++)
		if (missing & HS_STAGE_BIT(s))
			fprintf(stderr, "hopscope: stage %s is not available with the kmod backend "
				"on this kernel\n", stage_names[s]);
	if (missing)
		return -EOPNOTSUPP;
	if (cfg->floor == HS_FLOOR_CLOCK) {	/* --backend auto picked the module */
		fprintf(stderr, "hopscope: --floor=clock needs the eBPF backend\n");
		return -EOPNOTSUPP;
	}
	memset(kc, 0, sizeof(*kc));
	kc->abi = HS_KMOD_ABI;
	kc->netns_fd = -1;	/* the recorder has entered the router's netns */
	kc->stages = cfg->stages;
	kc->flags = (cfg->drops ? HS_KMOD_F_DROPS : 0) | (cfg->floor ? HS_KMOD_F_FLOOR : 0);
	kc->slots_per_cpu = cfg->slots_per_cpu;
	kc->ring_records = ring_records(cfg->ringbuf_bytes);
	for (int i = 0; i < cfg->n_ifaces; i++) {
		const struct hs_iface *ifc = &cfg->ifaces[i];

		if (ifc->is_in && kc->n_in < HS_MAX_IFACES)
			kc->in_ifindex[kc->n_in++] = ifc->ifindex;
		if (ifc->is_out && kc->n_out < HS_MAX_IFACES)
			kc->out_ifindex[kc->n_out++] = ifc->ifindex;
	}
	if (!kc->n_in || !kc->n_out) {
		fprintf(stderr, "hopscope: the kmod backend needs at least one input and one "
			"output interface\n");
		return -EINVAL;
	}
	return 0;
}

static void configure_error(int err)
{
	const char *why;

	switch (err) {
	case -EINVAL:
		fprintf(stderr, "hopscope: the module refused the configuration: slots and ring "
			"must be powers of two, t1 and t4 enabled, 1 to %d interfaces each way\n",
			HS_MAX_IFACES);
		return;
	case -E2BIG:
		why = "slots or ring larger than the module allows";
		break;
	case -EOPNOTSUPP:
		why = "a stage or drop tracing is not available on this kernel";
		break;
	case -EPROTO:
		why = "the module speaks another ABI: rebuild it with this hopscope";
		break;
	default:
		why = strerror(-err);
	}
	fprintf(stderr, "hopscope: the module refused the configuration: %s\n", why);
}

/* what the module hooked, in stage order, for the file header */
static void describe(struct hs_backend *b, const struct kmod *k, const struct hs_config *cfg)
{
	uint32_t st = cfg->stages;

	if (st & HS_STAGE_BIT(HS_T0))
		hs_backend_hook(b, HS_T0, "tracepoint/net/netif_rx", false, 0);
	hs_backend_hook(b, HS_T1, "tracepoint/net/netif_receive_skb", false, 0);
	hs_backend_hook(b, HS_T2, "netfilter/PRE_ROUTING", true, k->info.prio_pre);
	if (st & HS_STAGE_BIT(HS_FWD))
		hs_backend_hook(b, HS_FWD, "netfilter/FORWARD", true, k->info.prio_pre);
	hs_backend_hook(b, HS_T3, "netfilter/POST_ROUTING", true, k->info.prio_post);
	if (st & HS_STAGE_BIT(HS_TCEG))
		hs_backend_hook(b, HS_TCEG, "tracepoint/net/net_dev_queue", false, 0);
	hs_backend_hook(b, HS_T4, "tracepoint/net/net_dev_start_xmit", false, 0);
	hs_backend_hook(b, HS_HOOK_LOCAL_IN, "netfilter/LOCAL_IN", true, k->info.prio_post);
	if (cfg->drops)
		hs_backend_hook(b, HS_HOOK_DROP, "tracepoint/skb/kfree_skb", false, 0);
	js_open(&b->info, NULL, '{');
	js_u64(&b->info, "abi", k->info.abi);
	js_u64(&b->info, "possible_cpus", k->info.nr_cpus);
	js_u64(&b->info, "slots", k->info.slots);
	js_u64(&b->info, "ring_records", k->info.ring_records);
	js_close(&b->info, '}');
	b->drain.ring_records = k->info.ring_records;	/* its fill: the module's to see */
}

static int kmod_open(struct hs_backend *b, struct hs_config *cfg)
{
	struct kmod *k = b->priv;
	struct hs_kmod_config kc;
	int err;

	k->fd = open_device();
	if (k->fd < 0)
		return k->fd;
	if (ioctl(k->fd, HS_IOC_INFO, &k->info)) {
		err = -errno;
		fprintf(stderr, "hopscope: %s does not answer as hopscope's module: %s\n",
			HS_KMOD_DEVICE, strerror(-err));
		return err;
	}
	if (k->info.abi != HS_KMOD_ABI) {
		fprintf(stderr, "hopscope: the loaded module has ABI %u, this hopscope needs %u: "
			"rebuild and reload it\n", k->info.abi, HS_KMOD_ABI);
		return -EPROTO;
	}
	err = build_config(cfg, &k->info, &kc);
	if (err)
		return err;
	if (ioctl(k->fd, HS_IOC_CONFIGURE, &kc)) {
		err = -errno;
		configure_error(err);
		return err;
	}
	if (ioctl(k->fd, HS_IOC_INFO, &k->info))
		return -errno;
	if (cfg->netns_inum && k->info.netns_inum != cfg->netns_inum) {
		fprintf(stderr, "hopscope: the module hooked netns %llu, expected %llu\n",
			(unsigned long long)k->info.netns_inum,
			(unsigned long long)cfg->netns_inum);
		return -EXDEV;
	}
	if (ioctl(k->fd, HS_IOC_START, 0)) {
		err = -errno;
		fprintf(stderr, "hopscope: the module cannot start: %s%s\n", strerror(-err),
			err == -ENODEV ? " (the network namespace went away)" : "");
		return err;
	}
	describe(b, k, cfg);
	if (cfg->verbose)
		fprintf(stderr, "hopscope: kmod: %u slots, %u queued records, netns %llu\n",
			k->info.slots, k->info.ring_records,
			(unsigned long long)k->info.netns_inum);
	return 0;
}

/* hand every record read to cb: records read, or -errno (a read that failed);
 * *inflight counts HS_ST_INFLIGHT. A callback that fails has counted the record
 * it could not take (the writer counts each record it cannot store) and
 * reported its failure to its owner (record.c stops on it): the rest of that
 * read's batch is handed over all the same, none dropped uncounted, and no
 * further read is made (the stop drains what is left). */
static int drain(struct kmod *k, hs_record_cb cb, void *ctx, int max_reads, int *eof,
		 int *inflight)
{
	int n = 0, cb_err = 0;

	*eof = 0;
	for (int i = 0; i < max_reads; i++) {
		ssize_t got = read(k->fd, k->buf, sizeof(k->buf));

		if (got < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			return -errno;
		}
		if (got == 0) {
			*eof = 1;
			break;
		}
		for (size_t r = 0; r < (size_t)got / sizeof(struct hs_record); r++) {
			int err = cb(ctx, &k->buf[r]);

			if (err)
				cb_err = 1;
			*inflight += k->buf[r].status == HS_ST_INFLIGHT;
			n++;
		}
		if (cb_err)
			break;
	}
	return n;
}

static int kmod_poll(struct hs_backend *b, hs_record_cb cb, void *ctx)
{
	struct kmod *k = b->priv;
	int eof, inflight = 0, n = drain(k, cb, ctx, KMOD_READS_PER_POLL, &eof, &inflight);

	b->drain.more = n >= KMOD_READS_PER_POLL * KMOD_BATCH;
	return n;
}

static int kmod_counters(struct hs_backend *b, uint64_t *out)
{
	struct kmod *k = b->priv;
	struct hs_kmod_counters c;

	if (ioctl(k->fd, HS_IOC_COUNTERS, &c))
		return -errno;
	memcpy(out, c.c, sizeof(c.c));
	return 0;
}

static int kmod_cost(struct hs_backend *b, struct hs_cost *out)
{
	struct kmod *k = b->priv;
	struct hs_kmod_cost c;

	if (ioctl(k->fd, HS_IOC_COST, &c))
		return -errno;
	memcpy(out, c.c, sizeof(c.c));
	return 0;
}

static int kmod_stop(struct hs_backend *b, hs_record_cb cb, void *ctx)
{
	struct kmod *k = b->priv;
	int n, eof = 0, inflight = 0;

	if (ioctl(k->fd, HS_IOC_STOP, 0)) {
		n = -errno;
		fprintf(stderr, "hopscope: cannot stop the module's recording: %s\n",
			strerror(-n));
		return n;
	}
	/* after stop: queued records, then the packets in flight, then end of file;
	 * after a callback failure too, so that every record is handed over and
	 * counted (the failure is the callback's to report) */
	while (!eof) {
		n = drain(k, cb, ctx, KMOD_READS_PER_POLL, &eof, &inflight);
		if (n < 0)
			return n;
	}
	return inflight;
}

static void kmod_close(struct hs_backend *b)
{
	struct kmod *k = b->priv;

	if (k->fd >= 0)
		close(k->fd);
	hs_backend_free(b);
}

struct hs_backend *hs_backend_kmod(void)
{
	static const struct hs_backend ops = {
		.name = "kmod",
		.open = kmod_open,
		.poll = kmod_poll,
		.counters = kmod_counters,
		.cost = kmod_cost,
		.stop = kmod_stop,
		.close = kmod_close,
	};
	struct hs_backend *b = hs_backend_new(&ops, sizeof(struct kmod));
	struct kmod *k;

	if (!b)
		return NULL;
	k = b->priv;
	k->fd = -1;
	return b;
}
