/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Optional stamps at tc: ingress (the skb is built, before IP), and egress,
 * just before the qdisc enqueue, which splits d_oq into the output path
 * (t3 -> t_tceg) and the qdisc sojourn (t_tceg -> t4).
 */
#include "hopscope.bpf.h"

#define TCX_NEXT (-1)

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

SEC("tcx/ingress")
int hs_tc_ingress(struct __sk_buff *ctx)
{
	HS_FLOOR_STAMP_EXIT(HS_TCIN, TCX_NEXT);
	hs_stamp(bpf_cast_to_kern_ctx(ctx), HS_TCIN, bpf_ktime_get_ns());
	return TCX_NEXT;
}

SEC("tcx/egress")
int hs_tc_egress(struct __sk_buff *ctx)
{
	HS_FLOOR_STAMP_EXIT(HS_TCEG, TCX_NEXT);
	hs_stamp(bpf_cast_to_kern_ctx(ctx), HS_TCEG, bpf_ktime_get_ns());
	return TCX_NEXT;
}
