/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * The eBPF backend: loads the stage programs, attaches them with BPF links
 * only (a link dies with its process, so even SIGKILL leaves nothing
 * attached), drains the record rings, and at stop hands over the packets
 * still in flight from the slot table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/if_link.h>
#include <linux/netfilter.h>
#include <linux/netfilter_ipv4.h>
#include "backend.h"
#include "hopscope.skel.h"
#include "json.h"
#include "ring.h"
#include "runmeta.h"

/* the BPF netfilter link refuses NF_IP_PRI_FIRST/LAST themselves (ERANGE) */
#define PRI_FIRST (NF_IP_PRI_FIRST + 1)
#define PRI_LAST (NF_IP_PRI_LAST - 1)
/*
 * It also refuses a priority any other hook of that family and hook holds
 * (EBUSY, nf_hook_entries_grow): an nftables base chain, or the kernel's own
 * (IPv6 conntrack confirms at LOCAL_IN at NF_IP6_PRI_LAST - 1). A probe takes
 * PRI_FIRST or PRI_LAST, else the next priority inward, at most
 * HS_PRI_TRIES of them. The bounds keep each probe on its side of every
 * hook the kernel has (include/uapi/linux/netfilter_ipv4.h, _ipv6.h; the
 * same numbers): t2 and t_fwd before the first (raw before defrag, -450,
 * then defrag, raw, SELinux, conntrack), t3 after the last one short of
 * confirm (conntrack helper 300, after SNAT 100 and SELinux's last 225);
 * LOCAL_IN only retires packets, any late place will do.
 */
#define HS_PRI_TRIES 16
_Static_assert(PRI_FIRST + HS_PRI_TRIES - 1 < NF_IP_PRI_RAW_BEFORE_DEFRAG,
	       "t2 and t_fwd stay before the kernel's first hook");
_Static_assert(PRI_LAST - (HS_PRI_TRIES - 1) > NF_IP_PRI_CONNTRACK_HELPER,
	       "t3 stays after the kernel's hooks but conntrack confirm");
#define HS_MAX_LINKS 64

struct ebpf {
	struct hopscope_bpf *skel;
	/* the hand-over rings (include/hopscope.h, struct hs_ring_pos), mapped,
	 * and what their drains saw (the backend's drain) */
	struct hs_ring_reader rings;
	size_t ring_size, ring_pos_size;
	struct bpf_link *links[HS_MAX_LINKS];
	int nlinks;
	int prio[NF_INET_NUMHOOKS];	/* the netfilter priority each hook got */
	int xdp_fds[HS_MAX_IFACES];
	int xdp_ifc[HS_MAX_IFACES];	/* the cfg->ifaces index of each xdp_fds */
	int nxdp;
	/* by cfg->ifaces index: tcx links (t_tcin, t_tceg), the place in hs_in_if
	 * and hs_out_if (-1: not an input, not an output) */
	struct bpf_link *tcx_in[HS_MAX_IFACES], *tcx_eg[HS_MAX_IFACES];
	int in_pos[HS_MAX_IFACES], out_pos[HS_MAX_IFACES];
	/* native inputs whose metadata is not yet known to work (check_meta) */
	bool meta_known[HS_MAX_IFACES];	/* by cfg->ifaces index */
	int meta_open;
	int ncpu;		/* possible CPUs: values per key of a per-CPU map */
	uint64_t *percpu;	/* ncpu values: one counter read */
	struct hs_cost *percpu_cost;	/* ncpu values: one stage's probe cost */
	struct hs_hist_set *percpu_hist;	/* ncpu values: one series */
	struct hs_hist_set *hist_sum;	/* one series summed */
	int sync_outer, sync_inner;	/* the map-in-map pair of synchronize() */
	struct hs_flight_entry *flight;	/* --flight: every CPU's entries, as copied */
	struct hs_flight_cpu *percpu_flight;	/* ncpu values */
	struct hs_config *cfg;
};

/* input i's metadata is known to work or not: the first to tell closes it
 * (drain lanes and check_meta race) */
static bool meta_settle(struct ebpf *e, int i)
{
	if (__atomic_exchange_n(&e->meta_known[i], true, __ATOMIC_RELAXED))
		return false;
	__atomic_fetch_sub(&e->meta_open, 1, __ATOMIC_RELAXED);
	return true;
}

/* a record from an input: its metadata reached a later stage, so it works */
static void meta_works(struct ebpf *e, uint32_t ifindex)
{
	for (int i = 0; i < e->cfg->n_ifaces; i++)
		if (e->cfg->ifaces[i].ifindex == (int)ifindex &&
		    !__atomic_load_n(&e->meta_known[i], __ATOMIC_RELAXED))
			meta_settle(e, i);
}

struct sink {
	struct ebpf *e;
	hs_record_cb cb;
	void *ctx;
};

/* a record from the rings: its input's metadata works, then the caller's */
static int ebpf_record(void *ctx, const struct hs_record *r)
{
	struct sink *s = ctx;

	if (__atomic_load_n(&s->e->meta_open, __ATOMIC_RELAXED))
		meta_works(s->e, r->in_ifindex);
	return s->cb(s->ctx, r);
}

static int ring_drain(struct ebpf *e, int lane, int nlanes, hs_record_cb cb, void *ctx)
{
	struct sink s = { e, cb, ctx };

	return hs_ring_drain(&e->rings, lane, nlanes, ebpf_record, &s);
}

/* records per CPU ring: the --ring bytes shared by the CPUs, a power of 2,
 * at least 2^HS_RING_MIN_SHIFT (an aggregate run hands nothing over: that
 * least) */
#define HS_RING_MIN_SHIFT 6
#define HS_RING_MAX_SHIFT 24

static uint32_t ring_shift(const struct hs_config *cfg, int ncpu)
{
	uint64_t n = cfg->ringbuf_bytes / ncpu / sizeof(struct hs_record);
	uint32_t shift = HS_RING_MIN_SHIFT;

	if (cfg->hist == HS_HIST_AGGREGATE)
		return shift;
	while (shift < HS_RING_MAX_SHIFT && (2ull << shift) <= n)
		shift++;
	return shift;
}

static int libbpf_quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	return level == LIBBPF_WARN ? vfprintf(stderr, fmt, ap) : 0;
}

bool hs_backend_ebpf_supported(char *why, size_t len)
{
	if (libbpf_probe_bpf_prog_type(BPF_PROG_TYPE_NETFILTER, NULL) != 1) {
		snprintf(why, len, "this kernel has no BPF netfilter link (Linux 6.4 or later)");
		return false;
	}
	return true;
}

static int add_link(struct ebpf *e, struct bpf_link *l, const char *what)
{
	if (!l) {
		int err = -errno;

		fprintf(stderr, "hopscope: cannot attach %s: %s\n", what, strerror(-err));
		return err;
	}
	e->links[e->nlinks++] = l;
	return 0;
}

/*
 * p at hook for IPv4 and IPv6, at one priority for both (the header's one
 * number): from PRI_FIRST inward when early, else from PRI_LAST inward,
 * the first one both families have free. Says why on failure.
 */
static int attach_nf(struct ebpf *e, struct bpf_program *p, enum nf_inet_hooks hook, bool early,
		     const char *name)
{
	static const int pfs[] = { NFPROTO_IPV4, NFPROTO_IPV6 };
	static const char *const family_names[] = { "IPv4", "IPv6", "IPv4 or IPv6" };
	static const char *const hooks[] = { "PRE_ROUTING", "LOCAL_IN", "FORWARD", "LOCAL_OUT",
					     "POST_ROUTING" };
	int first = early ? PRI_FIRST : PRI_LAST, step = early ? 1 : -1, busy = 0;
	bool stranger = false;	/* a holder that is not the kernel's */

	for (int t = 0; t < HS_PRI_TRIES; t++) {
		int prio = first + t * step, i, err;
		struct bpf_link *l[2] = {};
		/* a refusal here is a step inward, not libbpf's warning */
		libbpf_print_fn_t print = libbpf_set_print(NULL);

		for (i = 0; i < 2; i++) {
			LIBBPF_OPTS(bpf_netfilter_opts, o, .pf = pfs[i], .hooknum = hook,
				    .priority = prio);

			l[i] = bpf_program__attach_netfilter(p, &o);
			if (!l[i])
				break;
		}
		err = -errno;
		libbpf_set_print(print);
		if (i == 2) {
			e->links[e->nlinks++] = l[0];
			e->links[e->nlinks++] = l[1];
			e->prio[hook] = prio;
			if (stranger)
				fprintf(stderr, "hopscope: %s: priority %d at netfilter %s is "
					"held by another hook (an nftables chain, or a BPF program: "
					"if it is an older hopscope, which takes no router lock, "
					"stop it): attached at %d\n", name, first, hooks[hook], prio);
			return 0;
		}
		bpf_link__destroy(l[0]);
		if (err != -EBUSY) {
			fprintf(stderr, "hopscope: cannot attach netfilter %s (%s) at priority %d: "
				"%s\n", name, family_names[i], prio, strerror(-err));
			return err;
		}
		busy |= 1 << i;
		/* IPv6 conntrack's confirm hook: the one kernel hook there */
		stranger |= !t && !(hook == NF_INET_LOCAL_IN && pfs[i] == NFPROTO_IPV6);
	}
	fprintf(stderr, "hopscope: cannot attach netfilter %s: a netfilter hook (an nftables "
		"chain or the kernel's own) holds every priority from %d to %d at %s (%s): "
		"move the chains that hold them (`nft list ruleset` shows each chain's "
		"priority)\n", name, first, first + (HS_PRI_TRIES - 1) * step,
		hooks[hook], family_names[busy - 1]);
	return -EBUSY;
}

/*
 * ifc has an XDP program of someone else's. One program per interface (no
 * dispatcher chains them here); a forwarding one (XDP_REDIRECT, XDP_TX) also
 * sends its packets past every later stage, so tracing beside it could not
 * see them anyway: say whose it is and what the user can do.
 */
static void xdp_taken(const struct hs_iface *ifc)
{
	LIBBPF_OPTS(bpf_xdp_query_opts, q);
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info), id = 0;
	int fd;

	if (!bpf_xdp_query(ifc->ifindex, 0, &q))
		id = q.prog_id ?: q.skb_prog_id ?: q.drv_prog_id ?: q.hw_prog_id;
	fd = id ? bpf_prog_get_fd_by_id(id) : -1;
	if (fd >= 0 && bpf_prog_get_info_by_fd(fd, &info, &len))
		info.name[0] = 0;
	if (fd >= 0)
		close(fd);
	fprintf(stderr, "hopscope: %s already has an XDP program (id %u%s%s): hopscope's XDP stage "
		"(t1) cannot run beside it, one XDP program per interface. If it forwards "
		"(XDP_REDIRECT, XDP_TX), its packets pass no later stage either. Record the "
		"router's other inputs, or detach it (ip link set dev %s xdp off)\n", ifc->name, id,
		info.name[0] ? ", name " : "", info.name, ifc->name);
}

/* an XDP link on ifc in its mode (auto: native, else generic); -errno after saying why */
static int xdp_link(struct ebpf *e, struct hs_iface *ifc)
{
	LIBBPF_OPTS(bpf_link_create_opts, o, .flags = ifc->xdp_mode);
	int fd = bpf_link_create(bpf_program__fd(e->skel->progs.hs_input), ifc->ifindex,
				 BPF_XDP, &o);

	/* auto: a driver without native XDP refuses it; generic works on any */
	if (fd < 0 && ifc->xdp_auto && ifc->xdp_mode == XDP_FLAGS_DRV_MODE &&
	    (errno == EOPNOTSUPP || errno == EINVAL)) {
		int refused = errno;

		fprintf(stderr, "hopscope: %s (driver %s) refuses native XDP (%s): using generic "
			"XDP\n", ifc->name, ifc->driver[0] ? ifc->driver : "?", strerror(refused));
		ifc->xdp_mode = o.flags = XDP_FLAGS_SKB_MODE;
		ifc->xdp_why = refused == EOPNOTSUPP ?
			"auto: the driver refused native XDP (not supported): generic" :
			"auto: the driver refused native XDP (invalid argument): generic";
		fd = bpf_link_create(bpf_program__fd(e->skel->progs.hs_input), ifc->ifindex,
				     BPF_XDP, &o);
	}
	if (fd < 0) {
		int err = -errno;

		if (err == -EBUSY || err == -EEXIST)
			xdp_taken(ifc);
		else
			fprintf(stderr, "hopscope: cannot attach XDP (%s) to %s: %s\n",
				ifc->xdp_mode == XDP_FLAGS_SKB_MODE ? "generic" : "native",
				ifc->name, strerror(-err));
		errno = -err;
	}
	return fd;
}

/* native XDP's metadata room is checked anew on every link (check_meta) */
static void meta_unknown(struct ebpf *e, const struct hs_iface *ifc)
{
	int i = ifc - e->cfg->ifaces;

	if (ifc->xdp_mode == XDP_FLAGS_DRV_MODE &&
	    __atomic_exchange_n(&e->meta_known[i], false, __ATOMIC_RELAXED))
		__atomic_fetch_add(&e->meta_open, 1, __ATOMIC_RELAXED);
}

static int attach_xdp(struct ebpf *e, struct hs_iface *ifc)
{
	int fd = xdp_link(e, ifc);

	if (fd < 0)
		return fd;
	e->xdp_ifc[e->nxdp] = ifc - e->cfg->ifaces;
	e->xdp_fds[e->nxdp++] = fd;
	if (ifc->xdp_mode == XDP_FLAGS_DRV_MODE)
		e->meta_open++;
	else	/* generic XDP always has the room */
		e->meta_known[ifc - e->cfg->ifaces] = true;
	return 0;
}

static int ebpf_sample(struct hs_backend *b, uint32_t n)
{
	struct ebpf *e = b->priv;

	/* .bss is mapped: the programs read the new value from their next packet */
	e->skel->bss->hs_sample_n = n;
	return 0;
}

static void autoload(struct hs_config *cfg, struct hopscope_bpf *s)
{
	bpf_program__set_autoload(s->progs.hs_arrival, cfg->stages & HS_STAGE_BIT(HS_T0));
	bpf_program__set_autoload(s->progs.hs_tc_ingress, cfg->stages & HS_STAGE_BIT(HS_TCIN));
	bpf_program__set_autoload(s->progs.hs_forward, cfg->stages & HS_STAGE_BIT(HS_FWD));
	bpf_program__set_autoload(s->progs.hs_tc_egress, cfg->stages & HS_STAGE_BIT(HS_TCEG));
	bpf_program__set_autoload(s->progs.hs_drop, cfg->drops);
	/* only where outer packets are followed into a tunnel */
	bpf_program__set_autoload(s->progs.hs_tun_rx, cfg->n_tun_ep);
	bpf_program__set_autoload(s->progs.hs_tun_end, cfg->n_tun_ep);
}

/* cfg->ifaces[i]'s ifindex where the programs look for it; the inputs
 * that redirect to an ifb, and those whose TCP is batched for GRO, listed
 * anew (hs_again_if, hs_gro_if: no gap before their end) */
static void set_ifindex(struct ebpf *e, int i)
{
	const struct hs_iface *ifc = &e->cfg->ifaces[i];
	struct hopscope_bpf *s = e->skel;
	int n = 0;

	if (e->out_pos[i] >= 0)
		s->bss->hs_out_if[e->out_pos[i]] = ifc->ifindex;
	if (e->in_pos[i] >= 0)
		s->bss->hs_in_if[e->in_pos[i]] = ifc->ifindex;
	for (int k = 0; k < e->cfg->n_ifaces; k++)
		if (e->cfg->ifaces[k].is_in && (e->cfg->ifaces[k].fast & HS_IFP_IFB))
			s->bss->hs_again_if[n++] = e->cfg->ifaces[k].ifindex;
	while (n < HS_MAX_IFACES)
		s->bss->hs_again_if[n++] = 0;
	n = 0;
	for (int k = 0; k < e->cfg->n_ifaces; k++)
		if (e->cfg->ifaces[k].gro_keep)
			s->bss->hs_gro_if[n++] = e->cfg->ifaces[k].ifindex;
	while (n < HS_MAX_IFACES)
		s->bss->hs_gro_if[n++] = 0;
}

static int configure(struct ebpf *e, struct hs_config *cfg)
{
	struct hopscope_bpf *s = e->skel;
	int shift = __builtin_ctz(cfg->slots_per_cpu), nin = 0, nout = 0;
	int ncpu = libbpf_num_possible_cpus();

	if (ncpu <= 0 || ncpu > 65535)
		return -EINVAL;
	e->ncpu = ncpu;
	s->rodata->cfg_netns_inum = cfg->netns_inum;
	s->rodata->cfg_slot_shift = shift;
	s->rodata->cfg_stages = cfg->stages;
	e->rings.shift = ring_shift(cfg, ncpu);
	e->rings.seen->ring_records = 1ull << e->rings.shift;
	s->rodata->cfg_ring_shift = e->rings.shift;
	s->rodata->cfg_floor = cfg->floor;
	s->rodata->cfg_hist = cfg->hist;
	s->rodata->cfg_flight_n = cfg->flight_n;
	memcpy((void *)s->rodata->cfg_flight_over, cfg->flight_over, sizeof(cfg->flight_over));
	memcpy((void *)s->rodata->cfg_flight_reasons, cfg->flight_reasons,
	       sizeof(cfg->flight_reasons));
	if (cfg->flight_n)
		bpf_map__set_max_entries(s->maps.flight, cfg->flight_n);
	s->bss->hs_sample_n = cfg->sample_n;
	for (int i = 0; i < cfg->n_ifaces; i++) {
		e->in_pos[i] = cfg->ifaces[i].is_in ? nin++ : -1;
		e->out_pos[i] = cfg->ifaces[i].is_out ? nout++ : -1;
		set_ifindex(e, i);
	}
	for (int i = 0; i < cfg->n_pass; i++)
		s->bss->hs_pass_if[i] = cfg->pass_if[i];
	for (int i = 0; i < cfg->n_ifaces; i++)
		if (cfg->ifaces[i].gro_keep)
			s->rodata->cfg_gro = 1;
	for (int i = 0; i < cfg->n_tun; i++)
		s->bss->hs_tun_if[i] = cfg->tun_if[i];
	for (int i = 0; i < cfg->n_tun_ep; i++)
		s->bss->hs_tun_ep[i] = cfg->tun_ep[i];
	for (int i = 0; i < cfg->n_lost; i++)
		s->bss->hs_lost_if[i] = cfg->lost_if[i];
	bpf_map__set_max_entries(s->maps.slots, (__u32)ncpu << shift);
	bpf_map__set_max_entries(s->maps.cost_due, (__u32)ncpu << (shift - HS_COST_SAMPLE_SHIFT));
	bpf_map__set_max_entries(s->maps.ring, (__u32)ncpu << e->rings.shift);
	bpf_map__set_max_entries(s->maps.ring_pos, ncpu);
	bpf_map__set_max_entries(s->maps.gro_t1, (__u32)ncpu << HS_GRO_LOG_SHIFT);
	autoload(cfg, s);
	return 0;
}

/* t_tcin on input i, t_tceg on output i, when that stage is on (any link
 * there before goes first) */
static int attach_tcx(struct ebpf *e, int i, bool in)
{
	struct bpf_program *p = in ? e->skel->progs.hs_tc_ingress : e->skel->progs.hs_tc_egress;
	struct bpf_link **l = in ? &e->tcx_in[i] : &e->tcx_eg[i];
	struct bpf_link *now;

	if (!(e->cfg->stages & HS_STAGE_BIT(in ? HS_TCIN : HS_TCEG)))
		return 0;
	bpf_link__destroy(*l);
	*l = NULL;
	now = bpf_program__attach_tcx(p, e->cfg->ifaces[i].ifindex, NULL);
	if (!now) {
		int err = -errno;

		fprintf(stderr, "hopscope: cannot attach tcx %s to %s: %s\n",
			in ? "ingress" : "egress", e->cfg->ifaces[i].name, strerror(-err));
		return err;
	}
	*l = now;
	return 0;
}

/*
 * Downstream first: a packet that takes a slot at XDP then finds every later
 * stage in place. Attached the other way, the first packets got t1 and passed
 * PRE_ROUTING before its program was there, and waited in their slots until
 * evicted: counted as the tracer's loss (an MLD report in a CI run). t0 comes
 * last: an arrival whose XDP was not yet attached is left to the LRU.
 */
static int attach_all(struct ebpf *e, struct hs_config *cfg)
{
	struct hopscope_bpf *s = e->skel;
	int err = 0;

	if (cfg->drops)
		err = add_link(e, bpf_program__attach(s->progs.hs_drop), "tp_btf/kfree_skb");
	if (!err && cfg->n_tun_ep)
		err = add_link(e, bpf_program__attach(s->progs.hs_tun_rx),
			       "tp_btf/netif_receive_skb") ?:
		      add_link(e, bpf_program__attach(s->progs.hs_tun_end), "tp_btf/consume_skb");
	err = err ?: add_link(e, bpf_program__attach(s->progs.hs_output),
			      "tp_btf/net_dev_start_xmit") ?:
		add_link(e, bpf_program__attach(s->progs.hs_consume), "tp_btf/consume_skb") ?:
		add_link(e, bpf_program__attach(s->progs.hs_queue), "tp_btf/net_dev_queue");
	err = err ?: attach_nf(e, s->progs.hs_localin, NF_INET_LOCAL_IN, false, "local_in") ?:
		attach_nf(e, s->progs.hs_postrouting, NF_INET_POST_ROUTING, false, "t3");
	if (!err && (cfg->stages & HS_STAGE_BIT(HS_FWD)))
		err = attach_nf(e, s->progs.hs_forward, NF_INET_FORWARD, true, "t_fwd");
	err = err ?: attach_nf(e, s->progs.hs_prerouting, NF_INET_PRE_ROUTING, true, "t2");
	for (int i = 0; i < cfg->n_ifaces && !err; i++)
		if (cfg->ifaces[i].is_out)
			err = attach_tcx(e, i, false);
	for (int i = 0; i < cfg->n_ifaces && !err; i++) {
		if (!cfg->ifaces[i].is_in)
			continue;
		err = attach_tcx(e, i, true) ?: attach_xdp(e, &cfg->ifaces[i]);
	}
	if (!err && (cfg->stages & HS_STAGE_BIT(HS_T0)))
		err = add_link(e, bpf_program__attach(s->progs.hs_arrival), "tp_btf/netif_rx");
	return err;
}

/* what attach_all attached, in stage order, for the file header */
static void describe(struct hs_backend *b, const struct ebpf *e, const struct hs_config *cfg)
{
	uint32_t st = cfg->stages;

	if (st & HS_STAGE_BIT(HS_T0))
		hs_backend_hook(b, HS_T0, "tp_btf/netif_rx", false, 0);
	hs_backend_hook(b, HS_T1, "xdp", false, 0);
	if (st & HS_STAGE_BIT(HS_TCIN))
		hs_backend_hook(b, HS_TCIN, "tcx/ingress", false, 0);
	hs_backend_hook(b, HS_T2, "netfilter/PRE_ROUTING", true, e->prio[NF_INET_PRE_ROUTING]);
	if (st & HS_STAGE_BIT(HS_FWD))
		hs_backend_hook(b, HS_FWD, "netfilter/FORWARD", true, e->prio[NF_INET_FORWARD]);
	hs_backend_hook(b, HS_T3, "netfilter/POST_ROUTING", true, e->prio[NF_INET_POST_ROUTING]);
	if (st & HS_STAGE_BIT(HS_TCEG))
		hs_backend_hook(b, HS_TCEG, "tcx/egress", false, 0);
	hs_backend_hook(b, HS_T4, "tp_btf/net_dev_start_xmit", false, 0);
	hs_backend_hook(b, HS_HOOK_LOCAL_IN, "netfilter/LOCAL_IN", true, e->prio[NF_INET_LOCAL_IN]);
	if (cfg->drops)
		hs_backend_hook(b, HS_HOOK_DROP, "tp_btf/kfree_skb", false, 0);
	hs_backend_hook(b, HS_HOOK_PIECES, "tp_btf/net_dev_queue", false, 0);
	hs_backend_hook(b, HS_HOOK_PIECES, "tp_btf/consume_skb", false, 0);
	if (cfg->n_tun_ep) {
		hs_backend_hook(b, HS_HOOK_TUN_IN, "tp_btf/netif_receive_skb", false, 0);
		hs_backend_hook(b, HS_HOOK_TUN_END, "tp_btf/consume_skb", false, 0);
	}
	js_open(&b->info, NULL, '{');
	js_u64(&b->info, "possible_cpus", e->ncpu);
	js_u64(&b->info, "slots", bpf_map__max_entries(e->skel->maps.slots));
	js_u64(&b->info, "ring_records", bpf_map__max_entries(e->skel->maps.ring));
	js_close(&b->info, '}');
}

/*
 * Waits until no program run that began before now is still running: a
 * BPF_MAP_UPDATE_ELEM on an array of maps returns only after synchronize_rcu()
 * (kernel/bpf/syscall.c, maybe_wait_bpf_programs: "so that userspace, when we
 * return to it, knows that all non-sleepable programs that could be running
 * use the new map value"; the kernel's BPF selftests wait the same way,
 * kern_sync_rcu). Every stage here is non-sleepable and runs inside an RCU
 * read-side section (XDP, netfilter, tcx and tracepoints alike), so after a
 * detach this is the moment the slot table and the record rings stop changing.
 * The maps are made at open, so stop needs no allocation.
 */
static int synchronize_init(struct ebpf *e)
{
	LIBBPF_OPTS(bpf_map_create_opts, o);

	e->sync_inner = bpf_map_create(BPF_MAP_TYPE_ARRAY, "hs_sync_in", 4, 4, 1, NULL);
	if (e->sync_inner < 0)
		return -errno;
	o.inner_map_fd = e->sync_inner;
	e->sync_outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "hs_sync", 4, 4, 1, &o);
	return e->sync_outer < 0 ? -errno : 0;
}

static int synchronize(struct ebpf *e)
{
	__u32 zero = 0;

	return bpf_map_update_elem(e->sync_outer, &zero, &e->sync_inner, BPF_ANY) ? -errno : 0;
}

/* a BPF_F_MMAPABLE array whole, elem bytes an entry (its size in *size);
 * MAP_FAILED with errno on failure */
static void *map_array(const struct bpf_map *m, size_t elem, int prot, size_t *size)
{
	*size = hs_page_round((size_t)bpf_map__max_entries(m) * elem);
	return mmap(NULL, *size, prot, MAP_SHARED, bpf_map__fd(m), 0);
}

/* the hand-over rings and their positions, mapped: read by ring_drain */
static int map_rings(struct ebpf *e)
{
	void *p = map_array(e->skel->maps.ring, sizeof(struct hs_record), PROT_READ,
			    &e->ring_size);

	if (p == MAP_FAILED)
		goto fail;
	e->rings.ring = p;
	p = map_array(e->skel->maps.ring_pos, sizeof(struct hs_ring_pos), PROT_READ | PROT_WRITE,
		      &e->ring_pos_size);
	if (p == MAP_FAILED)
		goto fail;
	e->rings.pos = p;
	e->rings.ncpu = e->ncpu;
	return 0;
fail:
	fprintf(stderr, "hopscope: cannot map the record rings: %s\n", strerror(errno));
	return -errno;
}

static int ebpf_open(struct hs_backend *b, struct hs_config *cfg)
{
	struct ebpf *e = b->priv;
	char why[128];
	int err;

	libbpf_set_print(cfg->verbose ? NULL : libbpf_quiet);
	if (!hs_backend_ebpf_supported(why, sizeof(why))) {
		fprintf(stderr, "hopscope: %s; use --backend kmod\n", why);
		return -EOPNOTSUPP;
	}
	e->cfg = cfg;
	e->skel = hopscope_bpf__open();
	if (!e->skel) {
		fprintf(stderr, "hopscope: cannot open the BPF object: %s\n", strerror(errno));
		return -errno;
	}
	err = configure(e, cfg);
	if (err)
		return err;
	e->percpu = calloc(e->ncpu, sizeof(*e->percpu));
	e->percpu_cost = calloc(e->ncpu, sizeof(*e->percpu_cost));
	e->percpu_hist = calloc(e->ncpu, sizeof(*e->percpu_hist));
	e->hist_sum = malloc(sizeof(*e->hist_sum));
	if (cfg->flight_n) {
		e->flight = calloc((size_t)cfg->flight_n * e->ncpu, sizeof(*e->flight));
		e->percpu_flight = calloc(e->ncpu, sizeof(*e->percpu_flight));
	}
	if (!e->percpu || !e->percpu_cost || !e->percpu_hist || !e->hist_sum ||
	    (cfg->flight_n && (!e->flight || !e->percpu_flight)))
		return -ENOMEM;
	err = synchronize_init(e);
	if (err) {
		fprintf(stderr, "hopscope: cannot create a BPF map: %s\n", strerror(-err));
		return err;
	}
	err = hopscope_bpf__load(e->skel);
	if (err) {
		fprintf(stderr, "hopscope: loading the BPF programs failed: %s%s\n", strerror(-err),
			err == -EPERM ? " (needs root: CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN)" : "");
		return err;
	}
	err = attach_all(e, cfg);
	if (err)
		return err;
	describe(b, e, cfg);
	return map_rings(e);
}

/*
 * A driver can run native XDP and still give the program no room for
 * metadata (vmxnet3: xdp_prepare_buff(..., false)): every packet's
 * adjust_meta fails, no later stage finds it, and a run would record nothing
 * and exit 0. Decided from what the driver does: an input in native mode
 * with HS_META_PROBE refusals and not one record of its own. Under auto it
 * is re-attached in generic mode (the packets before and during the switch,
 * when a driver may restart the device, go untraced: pre_nometa counts
 * them); asked for native, the run stops with an error.
 */
#define HS_META_PROBE 16

static int check_meta(struct ebpf *e)
{
	int map = bpf_map__fd(e->skel->maps.meta_fail_in);

	for (int k = 0; k < e->nxdp; k++) {
		int i = e->xdp_ifc[k];
		struct hs_iface *ifc = &e->cfg->ifaces[i];
		__u32 key = ifc->ifindex;
		__u64 n = 0;
		int fd;

		if (__atomic_load_n(&e->meta_known[i], __ATOMIC_RELAXED) ||
		    bpf_map_lookup_elem(map, &key, &n) || n < HS_META_PROBE || !meta_settle(e, i))
			continue;
		if (!ifc->xdp_auto) {
			fprintf(stderr, "\nhopscope: ERROR: %s (driver %s) runs native XDP but leaves "
				"no room for XDP metadata: its first %llu packets went untraced, and "
				"so would every other. Use --xdp-mode generic (or auto, which "
				"switches by itself)\n", ifc->name, ifc->driver[0] ? ifc->driver : "?",
				(unsigned long long)n);
			return -ECANCELED;
		}
		/* one XDP program per interface: the native link goes first */
		close(e->xdp_fds[k]);
		LIBBPF_OPTS(bpf_link_create_opts, o, .flags = XDP_FLAGS_SKB_MODE);
		fd = bpf_link_create(bpf_program__fd(e->skel->progs.hs_input), ifc->ifindex,
				     BPF_XDP, &o);
		if (fd < 0) {
			int err = -errno;

			e->xdp_fds[k] = -1;
			fprintf(stderr, "\nhopscope: ERROR: %s (driver %s) leaves no room for XDP "
				"metadata in native mode, and generic XDP cannot be attached: %s\n",
				ifc->name, ifc->driver[0] ? ifc->driver : "?", strerror(-err));
			return -ECANCELED;
		}
		e->xdp_fds[k] = fd;
		ifc->xdp_mode = XDP_FLAGS_SKB_MODE;
		fprintf(stderr, "\nhopscope: %s (driver %s) runs native XDP but leaves no room for "
			"XDP metadata: re-attached in generic XDP (the file's header says native, "
			"its END chunk's xdp_modes generic). Untraced: the packets before the "
			"switch (%llu so far, in xdp_meta_fail) and those that came in while the "
			"driver changed modes; pre_nometa counts both\n", ifc->name,
			ifc->driver[0] ? ifc->driver : "?", (unsigned long long)n);
	}
	return 0;
}

static int ebpf_poll(struct hs_backend *b, hs_record_cb cb, void *ctx)
{
	struct ebpf *e = b->priv;
	/* programs never wake the recorder: it drains what is there and sleeps */
	int n = ring_drain(e, 0, b->nlanes, cb, ctx);

	if (n >= 0 && __atomic_load_n(&e->meta_open, __ATOMIC_RELAXED)) {
		int err = check_meta(e);

		if (err)
			return err;
	}
	return n;
}

static int ebpf_drain_lane(struct hs_backend *b, int lane, hs_record_cb cb, void *ctx)
{
	return ring_drain(b->priv, lane, b->nlanes, cb, ctx);
}

/* runs the kernel skipped because the program was already running on that CPU */
static uint64_t recursion_misses(struct ebpf *e)
{
	struct bpf_program *p;
	uint64_t sum = 0;

	bpf_object__for_each_program(p, e->skel->obj) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_program__fd(p);

		if (fd >= 0 && !bpf_prog_get_info_by_fd(fd, &info, &len))
			sum += info.recursion_misses;
	}
	return sum;
}

/* all counters or none: on an error out keeps what it held (the last good read) */
static int ebpf_counters(struct hs_backend *b, uint64_t *out)
{
	struct ebpf *e = b->priv;
	int fd = bpf_map__fd(e->skel->maps.counters);
	uint64_t sum[HS_C_NCOUNTERS];

	for (__u32 k = 0; k < HS_C_NCOUNTERS; k++) {
		sum[k] = 0;
		if (bpf_map_lookup_elem(fd, &k, e->percpu))
			return errno ? -errno : -EIO;
		for (int c = 0; c < e->ncpu; c++)
			sum[k] += e->percpu[c];
	}
	sum[HS_C_PROG_MISSES] = recursion_misses(e);
	memcpy(out, sum, sizeof(sum));
	return 0;
}

/* every translation t3 filed, a batch of lookups at a time */
static int ebpf_nat(struct hs_backend *b, hs_nat_cb cb, void *ctx)
{
	enum { BATCH = 256 };
	struct ebpf *e = b->priv;
	int fd = bpf_map__fd(e->skel->maps.nat), err = 0;
	struct hs_tuple keys[BATCH];
	struct hs_nat vals[BATCH];
	__u64 batch;
	bool more = true;

	for (void *in = NULL; more && !err; in = &batch) {
		__u32 n = BATCH;

		if (bpf_map_lookup_batch(fd, in, &batch, keys, vals, &n, NULL)) {
			if (errno != ENOENT)
				return -errno;
			more = false;	/* the last batch, n entries in it */
		}
		for (__u32 i = 0; i < n && !err; i++)
			err = cb(ctx, &keys[i], &vals[i]);
	}
	return err;
}

static int ebpf_cost(struct hs_backend *b, struct hs_cost *out)
{
	struct ebpf *e = b->priv;
	int fd = bpf_map__fd(e->skel->maps.cost);

	memset(out, 0, HS_NSTAGES * sizeof(*out));
	for (__u32 s = 0; s < HS_NSTAGES; s++) {
		if (bpf_map_lookup_elem(fd, &s, e->percpu_cost))
			return errno ? -errno : -EIO;
		for (int c = 0; c < e->ncpu; c++) {
			const struct hs_cost *v = &e->percpu_cost[c];

			out[s].n += v->n;
			out[s].sum_ns += v->sum_ns;
			out[s].sum_sq += v->sum_sq;
			out[s].over += v->over;
			if (v->max_ns > out[s].max_ns)
				out[s].max_ns = v->max_ns;
			for (int i = 0; i < HS_COST_BUCKETS; i++)
				out[s].hist[i] += v->hist[i];
		}
	}
	return 0;
}

/* every delay in h: its parts added up (the kernel keeps no count) */
static uint64_t hist_count(const struct hs_hist *h)
{
	uint64_t n = h->zero + h->negative + h->overflow;

	for (int i = 0; i < HS_HIST_BUCKETS; i++)
		n += h->bucket[i];
	return n;
}

/* one delay's histogram of a series, sparse: only the buckets with counts */
static void hist_series_json(struct js *j, const struct hs_hist *h, uint8_t tos, uint8_t path,
			     const char *out_if, int delay)
{
	char idx[16];

	js_open(j, NULL, '{');
	js_u64(j, "tos", tos);
	js_str(j, "out_if", out_if);
	js_str(j, "path", path < HS_PATH_END ? hs_path_names[path] : "?");
	js_str(j, "delay", hs_delay_names[delay]);
	js_u64(j, "count", hist_count(h));
	js_u64(j, "sum_ns", h->sum_ns);
	js_u64(j, "zero", h->zero);
	js_u64(j, "negative", h->negative);
	js_u64(j, "overflow", h->overflow);
	js_open(j, "buckets", '{');
	for (int i = 0; i < HS_HIST_BUCKETS; i++)
		if (h->bucket[i]) {
			snprintf(idx, sizeof(idx), "%d", i);
			js_u64(j, idx, h->bucket[i]);
		}
	js_close(j, '}');
	js_close(j, '}');
}

/* the output at place pos among the --out interfaces (hs_hist_key) */
static const char *out_name(const struct ebpf *e, uint32_t pos)
{
	for (int i = 0; i < e->cfg->n_ifaces; i++)
		if (e->out_pos[i] == (int)pos)
			return e->cfg->ifaces[i].name;
	return "?";
}

/*
 * Every series, its per-CPU histograms summed. While the programs run, each
 * CPU's copy is read as it stands: a packet being added may be in one delay's
 * histogram and not yet in the next, or its bucket counted before its sum_ns;
 * each histogram's count is the sum of its parts, so it is whole all the same.
 * After the stop (detach, then synchronize) nothing changes: the sums are exact.
 */
/* the drops by (last stage, reason), summed over CPUs */
static int drops_json(struct ebpf *e, struct js *j)
{
	int fd = bpf_map__fd(e->skel->maps.drops);
	__u64 key, next, *prev = NULL;

	js_open(j, "drops", '[');
	while (!bpf_map_get_next_key(fd, prev, &next)) {
		uint64_t sum = 0;

		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(fd, &key, e->percpu))
			return errno ? -errno : -EIO;
		for (int c = 0; c < e->ncpu; c++)
			sum += e->percpu[c];
		js_open(j, NULL, '{');
		js_str(j, "stage", hs_stage_names[(key >> 32) % HS_NSTAGES]);
		js_u64(j, "reason", (uint32_t)key);
		js_u64(j, "count", sum);
		js_close(j, '}');
	}
	js_close(j, ']');
	return errno == ENOENT ? 0 : -errno;
}

static int ebpf_hist(struct hs_backend *b, struct js *out)
{
	struct ebpf *e = b->priv;
	int keys = bpf_map__fd(e->skel->maps.hist_keys), fd = bpf_map__fd(e->skel->maps.hist);
	__u64 key, next, *prev = NULL;
	struct js j;
	int err = 0;
	__u32 idx;

	/* apart, so that a failed read leaves out whole */
	js_init(&j);
	js_open(&j, NULL, '{');
	js_u64(&j, "schema", HS_HIST_SCHEMA);
	js_u64(&j, "max_pow2", HS_HIST_MAX_POW2);
	js_u64(&j, "nokey", e->skel->bss->hs_hist_nokey);
	js_open(&j, "series", '[');
	while (!bpf_map_get_next_key(keys, prev, &next)) {
		key = next;
		prev = &key;
		if (bpf_map_lookup_elem(keys, &key, &idx) ||
		    bpf_map_lookup_elem(fd, &idx, e->percpu_hist))
			break;
		memset(e->hist_sum, 0, sizeof(*e->hist_sum));
		for (int c = 0; c < e->ncpu; c++)
			for (int d = 0; d < HS_NDELAYS; d++) {
				const struct hs_hist *v = &e->percpu_hist[c].d[d];
				struct hs_hist *s = &e->hist_sum->d[d];

				s->sum_ns += v->sum_ns;
				s->zero += v->zero;
				s->negative += v->negative;
				s->overflow += v->overflow;
				for (int i = 0; i < HS_HIST_BUCKETS; i++)
					s->bucket[i] += v->bucket[i];
			}
		for (int d = 0; d < HS_NDELAYS; d++)
			if (hist_count(&e->hist_sum->d[d]))
				hist_series_json(&j, &e->hist_sum->d[d], key >> 32, key >> 40,
						 out_name(e, (uint32_t)key - 1), d);
	}
	if (errno != ENOENT)
		err = errno ? -errno : -EIO;
	js_close(&j, ']');
	js_u64(&j, "drops_nokey", e->skel->bss->hs_drops_nokey);
	err = err ?: drops_json(e, &j);
	js_close(&j, '}');
	if (!err && !js_text(&j))
		err = -ENOMEM;
	if (!err)
		js_raw(out, "histograms", js_text(&j));
	js_free(&j);
	return err;
}

/*
 * cfg->ifaces[i] is back, under a new ifindex or moved back in: the programs
 * learn its ifindex (its place in hs_in_if, hs_out_if stays, and with it the
 * histograms' series), then its links are made anew, downstream first as in
 * attach_all. The old links died with the old device.
 */
static int ebpf_follow(struct hs_backend *b, int i)
{
	struct ebpf *e = b->priv;
	struct hs_iface *ifc = &e->cfg->ifaces[i];
	int err = 0;

	set_ifindex(e, i);
	if (ifc->is_out)
		err = attach_tcx(e, i, false);
	if (!ifc->is_in || err)
		return err;
	err = attach_tcx(e, i, true);
	for (int k = 0; k < e->nxdp && !err; k++) {
		if (e->xdp_ifc[k] != i)
			continue;
		if (e->xdp_fds[k] >= 0)
			close(e->xdp_fds[k]);
		e->xdp_fds[k] = xdp_link(e, ifc);
		if (e->xdp_fds[k] < 0)
			return e->xdp_fds[k];
		meta_unknown(e, ifc);
	}
	return err;
}

/* upstream first, the reverse of attach_all: no packet takes a slot once
 * the later stages start to go */
static void detach(struct ebpf *e)
{
	for (int i = 0; i < e->nxdp; i++)
		if (e->xdp_fds[i] >= 0)	/* -1: lost in check_meta's switch or a follow */
			close(e->xdp_fds[i]);
	e->nxdp = 0;
	for (int i = 0; i < HS_MAX_IFACES; i++) {
		bpf_link__destroy(e->tcx_in[i]);
		bpf_link__destroy(e->tcx_eg[i]);
		e->tcx_in[i] = e->tcx_eg[i] = NULL;
	}
	while (e->nlinks > 0)
		bpf_link__destroy(e->links[--e->nlinks]);
}

static int ebpf_stop(struct hs_backend *b, hs_record_cb cb, void *ctx)
{
	struct ebpf *e = b->priv;
	size_t n = bpf_map__max_entries(e->skel->maps.slots), size;
	struct hs_record *slots;
	int inflight = 0, err;

	detach(e);
	/* a program that started before the detach may still be running */
	err = synchronize(e);
	if (err) {
		fprintf(stderr, "hopscope: cannot wait for the programs to finish: %s\n",
			strerror(-err));
		return err;
	}
	/* every record left in the rings is handed over, after a callback
	 * failure too: ring_drain takes the failed record and returns the
	 * error, the callback has counted the record it could not take (the
	 * writer counts each one it cannot store) and its owner knows of the
	 * failure. The programs are detached: the rings only empty. */
	for (long guard = 0; guard < (1l << 32); guard++) {
		int got = ring_drain(e, 0, 1, cb, ctx);

		if (got == 0)
			break;
	}
	slots = map_array(e->skel->maps.slots, sizeof(struct hs_record), PROT_READ, &size);
	if (slots == MAP_FAILED) {
		fprintf(stderr, "hopscope: cannot read the slot table: %s\n", strerror(errno));
		return -errno;
	}
	for (size_t i = 0; i < n; i++) {
		struct hs_record r = slots[i];

		if (!r.seq)
			continue;
		inflight++;
		if (e->cfg->hist == HS_HIST_AGGREGATE)
			continue;	/* no records: their number alone */
		r.status = HS_ST_INFLIGHT;
		/* as hs_emit_begin hands over a packet that did not leave: not
		 * the first piece's hand-over, nor the count of pieces out */
		r.t[HS_T4] = 0;
		r.out_ifindex = 0;
		r.cpu_out = 0;
		r.reserved = 0;
		/* a failure is the callback's to count and report (as above):
		 * every packet still inside is handed over */
		cb(ctx, &r);
	}
	munmap(slots, size);
	return inflight;
}

static int ebpf_flight_poll(struct hs_backend *b, struct hs_flight_trigger *t,
			    struct hs_flight_cpu *sum)
{
	struct ebpf *e = b->priv;
	volatile struct hs_flight_trigger *k = &e->skel->bss->hs_flight_trig;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(bpf_map__fd(e->skel->maps.flight_cpu), &zero, e->percpu_flight))
		return errno ? -errno : -EIO;
	memset(sum, 0, sizeof(*sum));
	for (int c = 0; c < e->ncpu; c++) {
		sum->pos += e->percpu_flight[c].pos;
		sum->triggers += e->percpu_flight[c].triggers;
		sum->not_kept += e->percpu_flight[c].not_kept;
	}
	t->ns = k->ns;
	if (!t->ns)
		return 0;
	/* the program wrote the rest before ns */
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	t->what = k->what;
	t->value = k->value;
	t->seq = k->seq;
	return 1;
}

static void ebpf_flight_rearm(struct hs_backend *b)
{
	struct ebpf *e = b->priv;

	e->skel->bss->hs_flight_trig.ns = 0;
	__atomic_store_n(&e->skel->bss->hs_flight_claim, 0, __ATOMIC_RELEASE);
}

/* the freeze lasts one RCU grace period and one batch read per 4096 entries */
static int ebpf_flight_copy(struct hs_backend *b, const struct hs_flight_entry **out, size_t *n)
{
	struct ebpf *e = b->priv;
	int fd = bpf_map__fd(e->skel->maps.flight), err;
	__u32 in, next, got, total = 0, want = e->cfg->flight_n, keys[4096];
	void *at = NULL;

	__atomic_store_n(&e->skel->bss->hs_flight_frozen, 1, __ATOMIC_SEQ_CST);
	err = synchronize(e);
	while (!err && total < want) {
		LIBBPF_OPTS(bpf_map_batch_opts, o);

		got = want - total < 4096 ? want - total : 4096;
		if (bpf_map_lookup_batch(fd, at, &next, keys, e->flight + (size_t)total * e->ncpu,
					 &got, &o) && errno != ENOENT)
			err = -errno;
		total += got;
		in = next;
		at = &in;
		if (!got)
			break;
	}
	__atomic_store_n(&e->skel->bss->hs_flight_frozen, 0, __ATOMIC_SEQ_CST);
	*out = e->flight;
	*n = (size_t)total * e->ncpu;
	return err;
}

static void ebpf_close(struct hs_backend *b)
{
	struct ebpf *e = b->priv;

	detach(e);
	if (e->rings.ring)
		munmap((void *)e->rings.ring, e->ring_size);
	if (e->rings.pos)
		munmap(e->rings.pos, e->ring_pos_size);
	hopscope_bpf__destroy(e->skel);
	if (e->sync_outer >= 0)
		close(e->sync_outer);
	if (e->sync_inner >= 0)
		close(e->sync_inner);
	free(e->percpu);
	free(e->percpu_cost);
	free(e->percpu_hist);
	free(e->hist_sum);
	free(e->flight);
	free(e->percpu_flight);
	hs_backend_free(b);
}

struct hs_backend *hs_backend_ebpf(void)
{
	static const struct hs_backend ops = {
		.name = "ebpf",
		.open = ebpf_open,
		.poll = ebpf_poll,
		.drain_lane = ebpf_drain_lane,
		.counters = ebpf_counters,
		.cost = ebpf_cost,
		.nat = ebpf_nat,
		.hist = ebpf_hist,
		.follow = ebpf_follow,
		.sample = ebpf_sample,
		.stop = ebpf_stop,
		.close = ebpf_close,
		.flight_poll = ebpf_flight_poll,
		.flight_rearm = ebpf_flight_rearm,
		.flight_copy = ebpf_flight_copy,
	};
	struct hs_backend *b = hs_backend_new(&ops, sizeof(struct ebpf));
	struct ebpf *e;

	if (!b)
		return NULL;
	e = b->priv;
	e->sync_outer = e->sync_inner = -1;
	e->rings.seen = &b->drain;
	return b;
}
