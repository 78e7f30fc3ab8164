/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What `hopscope record` needs from a backend (eBPF or kernel module). */
#ifndef HS_BACKEND_H
#define HS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include "hopscope.h"
#include "json.h"

#define HS_IFINDEX_HISTORY 16	/* ifindexes kept per interface; later ones replace the last */

struct hs_iface {
	char name[32];
	int ifindex;
	char driver[32];
	bool is_in;		/* --in */
	bool is_out;		/* --out */
	int xdp_mode;		/* XDP_FLAGS_SKB_MODE / XDP_FLAGS_DRV_MODE, for --in */
	bool xdp_auto;		/* --xdp-mode auto: native may fall back to generic */
	bool gro_keep;		/* --gro keep, here: its TCP batched for GRO (ebpf/gro.bpf.h) */
	const char *gro_why;	/* why that, or why not, for the header */
	const char *xdp_why;	/* why this mode, for the header */
	/* what became of it during the run, seen once a second (ifwatch.c) */
	int ifindexes[HS_IFINDEX_HISTORY];	/* every ifindex it had, [0] the header's */
	int n_ifindexes;
	bool gone, down;	/* as the last look found it */
	uint32_t n_gone, n_down;	/* times seen gone (deleted, moved), gone down */
	uint32_t fast;		/* HS_IFP_* found on this input at start: the paths it may take */
};

/* hs_iface.fast: what an input has that takes packets off the stack path
 * (the recorder names a record's path by them, include/hopscope.h hs_path) */
#define HS_IFP_FLOWTABLE 0x01	/* in the devices of an nftables flowtable */
#define HS_IFP_TC_FOREIGN 0x02	/* a tc ingress program not hopscope's (tcx or cls_bpf) */
#define HS_IFP_BR_NF4 0x04	/* port of a bridge with bridge-nf-call-iptables */
#define HS_IFP_BR_NF6 0x08	/* port of a bridge with bridge-nf-call-ip6tables */
#define HS_IFP_IFB 0x10		/* tc ingress redirects it to an ifb device */

/* slots_per_cpu without --slots (a literal: record's help prints it) */
#define HS_SLOTS_DEFAULT 16384
/* records a CPU's ring holds without --ring: 60 ms of the fastest CPU
 * measured (1.1 M packets a second), more than a drain at SCHED_FIFO was
 * seen to wait beside other work (evaluation/measurements.md) */
#define HS_RING_CPU_RECORDS 65536
/* --ring's bounds, MiB: also the default's (a literal: the help prints it) */
#define HS_RING_MIN_MIB 32
#define HS_RING_MAX_MIB 1024
#define HS_STR_(x) #x
#define HS_STR(x) HS_STR_(x)

/* Settings, filled from the command line before the backend opens. */
struct hs_config {
	const char *netns;		/* name under /run/netns, or NULL = current */
	uint64_t netns_inum;		/* inode of the router's netns (filled after entering it) */
	const char *router_id;		/* --router-id, NULL: HOST or HOST/NETNS (runmeta.c) */
	struct hs_iface ifaces[HS_MAX_IFACES];
	int n_ifaces;
	uint32_t stages;		/* HS_STAGE_BIT mask */
	/* devices a packet passes on its way to a traced output or back into
	 * the router (a traced output's bridge, bond or VLAN upper; an ifb):
	 * their start_xmit is neither the hand-over nor another output */
	uint32_t pass_if[HS_MAX_IFACES];
	char pass_name[HS_MAX_IFACES][32];
	int n_pass;
	/* the tunnel devices followed (their underlay in this netns), and the
	 * outer packets followed into them: protocol << 16 | UDP port (0:
	 * a protocol of their own); ebpf/tunnel.bpf.h */
	uint32_t tun_if[HS_MAX_IFACES];
	int n_tun;
	uint32_t tun_ep[HS_MAX_IFACES];
	int n_tun_ep;
	/* tunnels over an input that are not followed: their packets are
	 * counted (in_nometa) where they reach POST_ROUTING */
	uint32_t lost_if[HS_MAX_IFACES];
	int n_lost;
	bool flowtables_known;		/* nft listed the netns's flowtables (HS_IFP_FLOWTABLE) */
	uint32_t slots_per_cpu;		/* power of two */
	uint64_t ringbuf_bytes;
	bool drops;			/* record kernel drops (skb:kfree_skb) */
	int floor;			/* 0, HS_FLOOR_EMPTY or HS_FLOOR_CLOCK: nothing recorded */
	int hist;			/* 0, HS_HIST_RECORDS or HS_HIST_AGGREGATE */
	uint32_t sample_n;		/* --sample: trace 1 packet in this many (1: all) */
	bool gro_keep;			/* --gro keep (hs_iface.gro_keep: where it applies) */
	double cpu_budget;		/* --sample auto: % of one CPU for the probes; 0: fixed */
	char *calibration;		/* --calibration: the file's JSON text, or NULL */
	/* --flight (flight.c): records kept per CPU (0: off), what triggers */
	uint32_t flight_n;
	uint64_t flight_over[HS_NDELAYS];	/* threshold + 1 ns; 0: none */
	uint32_t flight_reasons[HS_FLIGHT_REASONS];	/* 0 ends the list */
	int verbose;
};

typedef int (*hs_record_cb)(void *ctx, const struct hs_record *r);
/* a NAT translation: the flow from (as t1 saw it) and what t3 found */
typedef int (*hs_nat_cb)(void *ctx, const struct hs_tuple *from, const struct hs_nat *n);

/* hooks that stamp no instant, beside enum hs_stage in hs_hook.stage */
enum { HS_HOOK_LOCAL_IN = HS_NSTAGES, HS_HOOK_DROP, HS_HOOK_PIECES, HS_HOOK_TUN_IN,
       HS_HOOK_TUN_END, HS_HOOK_NKINDS };
/* their names in the header's "hooks", from HS_HOOK_LOCAL_IN on */
#define HS_HOOK_NAMES { "local_in", "drop", "pieces", "tun_in", "tun_end" }

/* How one probe is attached; the record file's header lists them as "hooks"
 * (docs/record-format.md), the same shape for every backend. */
struct hs_hook {
	int stage;		/* enum hs_stage, or a hook that stamps none (HS_HOOK_*):
				 * LOCAL_IN, drops, a packet's pieces on the way out,
				 * a tunnel's inner packet, its outer one's end */
	const char *hook;	/* what it attaches to, libbpf's section spelling: "xdp",
				 * "tcx/ingress", "netfilter/PRE_ROUTING",
				 * "tp_btf/net_dev_start_xmit", "tracepoint/net/netif_rx" */
	int priority;		/* netfilter priority, when has_priority */
	bool has_priority;
};

#define HS_MAX_HOOKS 16

/* what the drain saw, for the recorder's own counts: one CPU's ring in
 * records, and the most records one ring held when a drain came (0: this
 * backend cannot see it) */
struct hs_drain_seen {
	uint64_t ring_records;
	uint64_t peak_waiting;
	bool more;	/* the last poll stopped at its batch's bound, records waiting */
};

struct hs_backend {
	const char *name;
	/* attach everything; on failure print why to stderr and return -errno */
	int (*open)(struct hs_backend *b, struct hs_config *cfg);
	/* hand every record waiting in drain lane 0 to cb, without waiting for
	 * more; returns records or -errno, -ECANCELED when it stopped the run and
	 * has said why */
	int (*poll)(struct hs_backend *b, hs_record_cb cb, void *ctx);
	/* drain lane `lane` (1 to nlanes - 1): hand its CPUs' records to cb
	 * without waiting, from a thread of its own; returns records or -errno.
	 * NULL: this backend has one lane */
	int (*drain_lane)(struct hs_backend *b, int lane, hs_record_cb cb, void *ctx);
	/* sum of every counter (HS_C_NCOUNTERS values) */
	int (*counters)(struct hs_backend *b, uint64_t *out);
	/* the probe cost samples by stage, summed over CPUs (HS_NSTAGES values);
	 * NULL: this backend does not sample them */
	int (*cost)(struct hs_backend *b, struct hs_cost *out);
	/* every NAT translation filed so far, to cb (include/hopscope.h, HS_NAT_MAX);
	 * NULL: this backend does not record translations */
	int (*nat)(struct hs_backend *b, hs_nat_cb cb, void *ctx);
	/* cfg->ifaces[i] was re-created under a new ifindex (ifc->ifindex):
	 * attach to it; NULL: this backend cannot (its probes keep the old one) */
	int (*follow)(struct hs_backend *b, int i);
	/* the stage histograms as the member "histograms" of j (docs/record-format.md);
	 * NULL: this backend has none */
	int (*hist)(struct hs_backend *b, struct js *j);
	/* trace 1 packet in n from now on (--sample auto); NULL: this backend
	 * traces every packet */
	int (*sample)(struct hs_backend *b, uint32_t n);
	/* detach, then hand over packets still in flight (status INFLIGHT; under
	 * HS_HIST_AGGREGATE none: returns their number) */
	int (*stop)(struct hs_backend *b, hs_record_cb cb, void *ctx);
	void (*close)(struct hs_backend *b);
	/* --flight; NULL: this backend has none. flight_poll: the counts summed
	 * over CPUs, and 1 with *t the trigger that fired since the last re-arm
	 * (0: none); rearm: ready for the next one. flight_copy: freezes the
	 * rings, waits for running programs, points *e at every CPU's entries
	 * (*n of them, empty ones included) and lets the rings go on */
	int (*flight_poll)(struct hs_backend *b, struct hs_flight_trigger *t,
			   struct hs_flight_cpu *sum);
	void (*flight_rearm)(struct hs_backend *b);
	int (*flight_copy)(struct hs_backend *b, const struct hs_flight_entry **e, size_t *n);
	void *priv;
	/* written by open, for the file header: the probes in stage order, and
	 * the backend's own sizes as one JSON object ("backend_info") */
	struct hs_hook hooks[HS_MAX_HOOKS];
	int nhooks;
	struct js info;
	struct hs_drain_seen drain;	/* kept up to date by poll, drain and stop */
	/* drain lanes, set before the first poll: lane k drains the rings of
	 * the CPUs c with c % nlanes == k (0: poll's) */
	int nlanes;
};

/* backend_common.c: a copy of ops with priv_size zeroed bytes as priv, no
 * hooks and no info yet (NULL: out of memory); hs_backend_free releases all */
struct hs_backend *hs_backend_new(const struct hs_backend *ops, size_t priv_size);
void hs_backend_free(struct hs_backend *b);
/* appends one probe to b->hooks; priority is read only when has_priority */
void hs_backend_hook(struct hs_backend *b, int stage, const char *hook, bool has_priority,
		     int priority);

/* n bytes rounded up to whole pages: the length to mmap n bytes of a map */
static inline size_t hs_page_round(size_t n)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	return (n + page - 1) / page * page;
}

struct hs_backend *hs_backend_ebpf(void);
struct hs_backend *hs_backend_kmod(void);
/* true when this kernel can run the backend (feature probe, no side effects) */
bool hs_backend_ebpf_supported(char *why, size_t len);
bool hs_backend_kmod_supported(char *why, size_t len);

#endif
