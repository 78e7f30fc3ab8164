/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * t1: the packet at the input interface's XDP hook. Allocates the packet's
 * slot, fills the header fields and the key, and leaves the slot's seq in the
 * XDP metadata so every later stage finds it without a hash lookup.
 */
#include "hopscope.bpf.h"
#include "parse.bpf.h"
#include "tunnel.bpf.h"
#include "gro.bpf.h"

/* adjust_meta's refusals by input ifindex: a driver that runs native XDP but
 * gives no metadata room refuses every packet, and userspace must tell that
 * input from the others (backend_ebpf.c, check_meta) */
/* --sample: per CPU, the packets until the next one traced */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} sample_left SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, HS_MAX_IFACES);
	__type(key, __u32);
	__type(value, __u64);
} meta_fail_in SEC(".maps");

static __always_inline void hs_meta_refused(__u32 ifindex)
{
	__u64 one = 1, *n = bpf_map_lookup_elem(&meta_fail_in, &ifindex);

	hs_count(HS_C_XDP_META_FAIL);
	if (n)
		__sync_fetch_and_add(n, 1);
	else
		bpf_map_update_elem(&meta_fail_in, &ifindex, &one, BPF_NOEXIST);
}

static __always_inline __u64 hs_arrival(__u32 key, __u32 ifindex, __u8 *flags)
{
	struct hs_arrival_key ak = { .key = key, .ifindex = ifindex };
	__u64 *t0 = bpf_map_lookup_elem(&arrivals, &ak);
	__u64 t;

	if (!t0) {
		hs_count(HS_C_T0_MISS);
		return 0;
	}
	t = HS_READ_ONCE(*t0);
	if (t && !(t & HS_T0_TWINS)) {
		/* taken (0) so that a twin arriving from now on is not counted in */
		__u64 was = __sync_val_compare_and_swap(t0, t, 0);

		if (was == t) {
			bpf_map_delete_elem(&arrivals, &ak);
			return t;
		}
		t = was;
	}
	if (!(t & HS_T0_TWINS)) {
		/* 0: taken by a packet of this key that just left: this one's
		 * own arrival came too late to be a twin, and was not kept */
		hs_count(HS_C_T0_MISS);
		return 0;
	}
	/* one of twins (hopscope.bpf.h, arrivals): no t0; the last one out
	 * deletes the entry */
	*flags |= HS_F_T0_COLL;
	if (__sync_fetch_and_add(t0, -1) == (HS_T0_TWINS | 1))
		bpf_map_delete_elem(&arrivals, &ak);
	return 0;
}

/*
 * --sample N (n > 1): whether t1 leaves this packet out. Per CPU, a countdown
 * to the next packet traced, drawn uniformly from 1 .. 2n - 1 (mean n) as
 * each traced packet passes: a gap of random length whatever the traffic,
 * so a periodic stream is not sampled in step with its period, and every
 * packet is traced with probability 1/n. A random draw per packet (traced
 * when below 2^32/n) cost t1 12-15 ns more per packet left out
 * (evaluation/measurements.md).
 */
static __always_inline bool hs_skip(__u32 n)
{
	__u32 zero = 0, *left;

	if (n <= 1)
		return false;
	left = bpf_map_lookup_elem(&sample_left, &zero);
	if (!left)
		return false;
	if (*left > 1) {
		(*left)--;
		return true;
	}
	*left = 1 + bpf_get_prandom_u32() % (2 * n - 1);
	return false;
}

/* room for struct hs_meta in front of the frame; NULL: refused (counted) */
static __always_inline struct hs_meta *hs_meta_room(struct xdp_md *ctx)
{
	struct hs_meta *meta;

	if (!bpf_xdp_adjust_meta(ctx, -(int)sizeof(*meta))) {
		meta = (void *)(long)ctx->data_meta;
		if ((void *)(meta + 1) <= (void *)(long)ctx->data)
			return meta;
	}
	hs_meta_refused(ctx->ingress_ifindex);
	return NULL;
}

/* the packet's slot by seq, for every later stage */
static __always_inline void hs_meta_set(struct hs_meta *meta, __u64 seq)
{
	meta->seq = seq;
	meta->magic = HS_META_MAGIC;
	meta->pad = 0;
}

/* --sample left this packet out: the mark tells later stages it is no loss */
static __always_inline int hs_unsampled(struct xdp_md *ctx)
{
	struct hs_meta *meta;

	hs_count(HS_C_UNSAMPLED);
	meta = hs_meta_room(ctx);
	if (!meta)
		return XDP_PASS;
	meta->seq = 0;
	meta->magic = HS_META_UNSAMPLED;
	meta->pad = 0;
	return XDP_PASS;
}

/*
 * A packet back at its input's XDP: an ifb (ingress shaping) hands what tc
 * ingress redirected to it back to the input's receive, and generic XDP runs
 * again (on the inputs the recorder found redirecting to one, hs_again_if). Its metadata is still in front of it (adjust_meta leaves the room's
 * bytes as they are). It is the packet of that seq when the slot is still
 * that seq's, from this input, not yet at PRE_ROUTING, and holds this
 * packet (its key, where the slot keeps one; else its header fields): it
 * keeps its t1, and the ifb's queue lies in its d_iq (path ifb).
 */
static __always_inline bool hs_again(struct xdp_md *ctx, const struct hs_meta *meta,
				     const struct hs_key_input *k, const struct hs_pkt *p)
{
	__u64 seq = meta->seq;
	struct hs_record *rec;

	/* only there: elsewhere stale bytes in the room are never looked at */
	if (hs_if_pos(hs_again_if, ctx->ingress_ifindex) < 0)
		return false;
	if (meta->magic != HS_META_MAGIC || !seq)
		return false;
	rec = hs_slot(seq);
	if (!rec || HS_READ_ONCE(rec->seq) != seq || rec->in_ifindex != ctx->ingress_ifindex ||
	    rec->t[HS_T2])
		return false;
	if (rec->key)
		return rec->key == hs_key_hash(k);
	return rec->sport == p->sport && rec->dport == p->dport && rec->ip_len == p->ip_len &&
		rec->proto == p->proto && rec->saddr[0] == p->saddr[0] &&
		rec->daddr[0] == p->daddr[0];
}

SEC("xdp")
int hs_input(struct xdp_md *ctx)
{
	__u64 now;
	struct hs_src src = { .p = ctx, .xdp = true };
	struct hs_key_input k = {};
	struct hs_pkt p = {};
	struct hs_gro_cpu *g = NULL;
	struct hs_record *rec;
	struct hs_meta *meta;
	__u32 zero = 0;
	__u64 seq, pos = 0;
	int r;

	HS_FLOOR_STAMP_EXIT(HS_T1, XDP_PASS);
	hs_count(HS_C_XDP_PKTS);
	/* before the clock: a packet left out never reads it */
	if (hs_skip(HS_READ_ONCE(hs_sample_n)))
		return hs_unsampled(ctx);
	now = bpf_ktime_get_ns();
	r = hs_parse(&src, 0, hs_xdp_l3(ctx, &src), &k, &p);
	if (r) {
		hs_count(r == -1 ? HS_C_XDP_NONIP : HS_C_XDP_TRUNC);
		return XDP_PASS;
	}
	if (p.flags & HS_F_VLAN)
		hs_count(HS_C_XDP_VLAN);
	if (p.flags & HS_F_FRAGMENT)
		hs_count(HS_C_XDP_FRAG);
	if (p.flags & HS_F_IPOPTS)
		hs_count(HS_C_XDP_IPOPTS);
	if (p.flags & HS_F_IPV6_EXT)
		hs_count(HS_C_XDP_IPV6EXT);
	if (p.flags & HS_F_TRUNC)
		hs_count(HS_C_XDP_TRUNC);

	meta = hs_meta_room(ctx);
	if (!meta)
		return XDP_PASS;
	if (hs_again(ctx, meta, &k, &p)) {
		hs_count(HS_C_XDP_AGAIN);
		return XDP_PASS;
	}

	if (cfg_gro && p.proto == IPPROTO_TCP && !(p.flags & HS_F_FRAGMENT) &&
	    hs_if_pos(hs_gro_if, ctx->ingress_ifindex) >= 0) {
		g = bpf_map_lookup_elem(&gro_cpu, &zero);
		if (g && hs_gro_join(g, &p, ctx->ingress_ifindex, now, &seq, &pos)) {
			/* the batch's own metadata: GRO merges it with the others */
			hs_count(HS_C_GRO_JOINED);
			hs_meta_set(meta, seq);
			return XDP_PASS;
		}
	}
	rec = hs_slot_take(now, &seq);
	if (!rec) {
		hs_count(HS_C_XDP_META_FAIL);
		return XDP_PASS;
	}
	if (g)
		hs_gro_start(g, rec, seq, pos);
	rec->t[HS_T1] = now;
	/* the key is for the records (a flight dump's too) and t0's match: an
	 * aggregate run without t0 or flight recorder has neither, and saves
	 * its ~35 ns */
	if ((cfg_hist != HS_HIST_AGGREGATE || hs_stage_on(HS_T0) || cfg_flight_n) &&
	    !HS_BENCH_NO_KEY)
		rec->key = hs_key_hash(&k);
	rec->in_ifindex = ctx->ingress_ifindex;
	rec->cpu_in = bpf_get_smp_processor_id();
	hs_pkt_to_record(&p, rec);
	if (hs_stage_on(HS_T0))
		rec->t[HS_T0] = hs_arrival(rec->key, rec->in_ifindex, &rec->flags);
	hs_slot_publish(rec, seq);
	hs_meta_set(meta, seq);
	if (hs_cost_sampled(seq))
		hs_cost_note(seq, HS_T1, now);
	return XDP_PASS;
}
