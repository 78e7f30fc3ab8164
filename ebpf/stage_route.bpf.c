/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * t2 and t3: netfilter PRE_ROUTING at the earliest priority (routing starts)
 * and POST_ROUTING at the latest (routing done), where NAT is done and its
 * translation is read (nat.bpf.h). Optional FORWARD stamp, and
 * LOCAL_IN to retire packets addressed to the router itself, which are not
 * forwarded and must not be counted as lost (a tunnel's outer packets are
 * followed on, tunnel.bpf.h).
 */
#include "hopscope.bpf.h"
#include "tunnel.bpf.h"
#include "pieces.bpf.h"
#include "gro.bpf.h"
#include "nat.bpf.h"

#define NF_ACCEPT 1

static __always_inline int hs_route_stamp(struct bpf_nf_ctx *ctx, enum hs_stage s,
					  __u32 c_ok, __u32 c_nometa)
{
	struct hs_record *rec;
	__u64 seq, now;
	bool traced = false;

	HS_FLOOR_STAMP_EXIT(s, NF_ACCEPT);
	if (hs_left_out(ctx->skb)) {
		if (s == HS_T2)
			hs_tap_note(ctx->skb, HS_SEQ_UNSAMPLED);
		return NF_ACCEPT;
	}
	now = bpf_ktime_get_ns();
	/* a later part of a batch GRO merged in parts: a record of its own */
	if (cfg_gro && s == HS_T2 && hs_gro_later(ctx->skb, now)) {
		hs_count(c_ok);
		return NF_ACCEPT;
	}
	switch (hs_find(ctx->skb, &rec, &seq)) {
	case HS_FOUND:
		traced = true;
		if (s == HS_T3 && !hs_tun_post(ctx, rec, seq)) {
			/* the outer packet: its pieces, if any, are the packet's */
			hs_pieces_open(ctx->skb, seq);
			break;
		}
		/* from PRE_ROUTING on, this skb is the packet (hs_drop) */
		hs_stamp_slot(rec, seq, s, now, s == HS_T2 ? hs_skb_id(ctx->skb) : 0);
		if (s == HS_T2) {
			hs_tap_note(ctx->skb, seq);
			hs_gro_first(ctx->skb, rec, seq);
		} else {
			hs_pieces_open(ctx->skb, seq);
			hs_nat_check(ctx->skb, rec, seq);
		}
		hs_count(c_ok);
		if (hs_cost_sampled(seq))
			hs_cost_note(seq, s, now);
		break;
	case HS_NOMETA:
		hs_count(c_nometa);
		if (s == HS_T3)
			hs_tun_lost(ctx->skb);
		break;
	case HS_STALE:
		hs_count(HS_C_STALE);
		if (s == HS_T3)
			hs_tun_lost(ctx->skb);
		break;
	case HS_UNSAMPLED:
		/* no loss: left out at t1 (its tap copy is passed by too) */
		if (s == HS_T2)
			hs_tap_note(ctx->skb, HS_SEQ_UNSAMPLED);
		break;
	}
	if (s == HS_T3 && !traced)
		hs_pieces_open(ctx->skb, 0);
	return NF_ACCEPT;
}

SEC("netfilter")
int hs_prerouting(struct bpf_nf_ctx *ctx)
{
	return hs_route_stamp(ctx, HS_T2, HS_C_PRE_PKTS, HS_C_PRE_NOMETA);
}

SEC("netfilter")
int hs_postrouting(struct bpf_nf_ctx *ctx)
{
	return hs_route_stamp(ctx, HS_T3, HS_C_POST_PKTS, HS_C_POST_NOMETA);
}

SEC("netfilter")
int hs_forward(struct bpf_nf_ctx *ctx)
{
	HS_FLOOR_STAMP_EXIT(HS_FWD, NF_ACCEPT);
	hs_stamp(ctx->skb, HS_FWD, bpf_ktime_get_ns());
	return NF_ACCEPT;
}

SEC("netfilter")
int hs_localin(struct bpf_nf_ctx *ctx)
{
	struct hs_record *rec;
	__u64 seq;

	HS_FLOOR_EXIT(NF_ACCEPT);
	if (hs_find(ctx->skb, &rec, &seq) != HS_FOUND || hs_tun_follow(ctx->skb, seq))
		return NF_ACCEPT;
	/* retired without a record: the slot is released like an emit's */
	if (hs_release(rec, seq)) {
		hs_by_skb_forget(ctx->skb);
		hs_count(HS_C_LOCAL);
	}
	return NF_ACCEPT;
}
