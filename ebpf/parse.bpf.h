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

/* offsets the parser can reach are far below this; the bound is for the verifier */
#define HS_MAX_PKT_OFF	4096

static __always_inline int hs_load(const struct hs_src *s, __u32 off, void *dst, __u32 len)
{
	if (s->xdp) {
		struct xdp_md *x = s->p;
		void *data = (void *)(long)x->data, *end = (void *)(long)x->data_end;

		/* a fixed-size read from the linear part: direct access costs a few
		 * ns, the helper ~30 ns per call; the helper stays for the rest
		 * (non-linear frames, sizes known only at run time) */
		if (__builtin_constant_p(len) && off < HS_MAX_PKT_OFF) {
			__u64 o = off;

			/* the 6.12 verifier loses clang's range check on the 32-bit
			 * off; a mask it sees (and clang cannot drop) bounds it again */
			asm volatile("%0 &= %1" : "+r"(o) : "i"(HS_MAX_PKT_OFF - 1));
			if (data + o + len <= end) {
				__builtin_memcpy(dst, data + o, len);
				return 0;
			}
		}
		return bpf_xdp_load_bytes(s->p, off, dst, len);
	}
	if (off + len > s->limit)
		return -1;
	return bpf_probe_read_kernel(dst, len, s->p + off);
}

#include "hs_parse.h"

#endif
