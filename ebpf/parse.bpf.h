/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where the BPF stages' parser (include/hs_parse.h, shared with the kernel
 * module) reads its bytes: XDP through bpf_xdp_load_bytes, the arrival
 * tracepoint from the skb's linear data.
 */
#ifndef HS_PARSE_BPF_H
#define HS_PARSE_BPF_H

#include "hopscope.bpf.h"

struct hs_src {
	void *p;	/* xdp_md, or the kernel address of byte 0 */
	__u32 limit;	/* bytes readable at p (skb only) */
	bool xdp;
};

static __always_inline int hs_load(const struct hs_src *s, __u32 off, void *dst, __u32 len)
{
	if (s->xdp)
		return bpf_xdp_load_bytes(s->p, off, dst, len);
	if (off + len > s->limit)
		return -1;
	return bpf_probe_read_kernel(dst, len, s->p + off);
}

#include "hs_parse.h"

#endif
