/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * A packet's record leaves by its hand-over to an output driver (t4): out of
 * a traced output complete, or partial with t2 or t3 alone; out of another,
 * other_out. The stamps tell the path: t2 and t3, the IP stack; neither, a
 * fast path that skips netfilter's IP hooks (flowtable, tc redirect:
 * complete for the stages it has).
 */
#ifndef HS_LEAVE_BPF_H
#define HS_LEAVE_BPF_H

#include "hopscope.bpf.h"
#include "pieces.bpf.h"
#include "tunnel.bpf.h"

/*
 * rec (seq) leaves: handed over at t4 to ifindex on cpu (a packet in pieces:
 * its first piece's, in the slot); now: the instant this program stamped.
 * Out of an underlay, a packet that passed its tunnel leaves by the
 * tunnel when only that is in --out. False: evicted meanwhile, recorded as
 * that.
 */
static __always_inline bool hs_leave(struct hs_record *rec, __u64 seq, __u64 t4, __u32 ifindex,
				     __u32 cpu, __u64 now)
{
	struct hs_record *out;
	int out_pos = hs_if_pos(hs_out_if, ifindex);
	__u64 t[HS_NSTAGES] = {};	/* zeroed: the verifier cannot tie its fill to its use */
	__u8 tos = 0, status = HS_ST_OTHER_OUT, path = HS_PATH_STACK;
	bool pieces;

	if (out_pos < 0)
		out_pos = hs_tun_traced(rec, seq, &ifindex);
	if (out_pos >= 0) {
		bool t2 = rec->t[HS_T2], t3 = rec->t[HS_T3];

		status = t2 == t3 ? HS_ST_COMPLETE : HS_ST_PARTIAL;
		path = hs_tun_path(rec, t2 || t3 ? HS_PATH_STACK : HS_PATH_NO_NF);
	}
	pieces = hs_pw_queued(HS_READ_ONCE(*hs_pieces_word(rec)));
	/* what t4 adds goes into the copy: the slot may change hands meanwhile */
	out = hs_emit_begin(rec, status, now);
	if (out) {
		out->t[HS_T4] = t4;
		out->out_ifindex = ifindex;
		out->cpu_out = cpu;
		out->path = path;
	}
	/* read before the release below: after it the slot may be another's */
	if (cfg_hist && status == HS_ST_COMPLETE) {
		const struct hs_record *src = out ? out : rec;

		__builtin_memcpy(t, src->t, sizeof(t));
		t[HS_T4] = t4;
		tos = src->tos;
	}
	if (!hs_emit_commit(rec, seq, out, status)) {
		/* evicted while it left: recorded once, as evicted */
		hs_count(HS_C_RACE);
		return false;
	}
	if (pieces)
		hs_count(HS_C_PIECED);
	if (status == HS_ST_COMPLETE) {
		hs_count(HS_C_OUT_PKTS);
		hs_count(HS_C_COMPLETE);
		if (path == HS_PATH_NO_NF)
			hs_count(HS_C_FAST);
		if (cfg_hist)
			hs_hist_packet(t, out_pos, tos, path);
		if (cfg_flight_n)
			hs_flight_delays(t, seq);
	} else if (status == HS_ST_PARTIAL) {
		hs_count(HS_C_OUT_PKTS);
		hs_count(HS_C_PARTIAL);
	} else {
		hs_count(HS_C_OTHER_OUT);
	}
	return true;
}

#endif
