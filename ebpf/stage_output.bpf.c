/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * t4: net_dev_start_xmit, after the qdisc, as the packet is handed to the
 * output driver. Completes the slot and emits the packet's one record
 * (leave.bpf.h), and (--histograms, --aggregate) adds its delays to its
 * series' histograms. A piece of a packet cut into several (pieces.bpf.h)
 * is counted, and the last one emits. A step on the way to a traced output
 * (its bridge, bond or VLAN upper; an ifb) is passed by; a tunnel device's
 * is followed to its underlay's (tunnel.bpf.h).
 */
#include "hopscope.bpf.h"
#include "leave.bpf.h"
#include "netns.bpf.h"
#include "tunnel.bpf.h"

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(hs_output, const struct sk_buff *skb, const struct net_device *dev)
{
	__u64 now;
	struct hs_record *rec = NULL;
	bool traced, first, piece = false;
	__u64 seq = 0;	/* set on every path that reads it; the verifier wants it always */
	enum hs_find r;

	if (cfg_floor) {
		/* a stamping tracer's least: the router's transmits, one read */
		if (cfg_floor == HS_FLOOR_CLOCK && hs_dev_in_router(dev))
			hs_floor_clock(HS_T4);
		return 0;
	}
	/* fires for every transmit on the machine, the senders' too: those
	 * (and packets --sample left out) are told apart before the clock,
	 * its dearest read (evaluation/measurements.md) */
	if (!hs_dev_in_router(dev) || hs_left_out(skb))
		return 0;
	if (hs_if_pos(hs_pass_if, dev->ifindex) >= 0) {
		hs_count(HS_C_OUT_PASS);
		return 0;
	}
	now = bpf_ktime_get_ns();
	traced = hs_if_pos(hs_out_if, dev->ifindex) >= 0;
	r = hs_find(skb, &rec, &seq);
	if (r == HS_NOMETA) {
		r = hs_piece_find(skb, &rec, &seq);
		if (r == HS_NOMETA)
			r = hs_gso_next(&rec, &seq);
		piece = r != HS_NOMETA;
	} else if (r == HS_FOUND && hs_pw_queued(HS_READ_ONCE(*hs_pieces_word(rec)))) {
		/* a GSO segment that kept its packet's metadata (the packet
		 * itself, cut, never reaches t4) */
		hs_gso_took(seq);
		piece = true;
	}
	switch (r) {
	case HS_NOMETA:
		if (traced)
			hs_count(HS_C_OUT_NOMETA);
		return 0;
	case HS_STALE:
		/* a piece of a packet recorded already (dropped, evicted) */
		hs_count(piece && traced ? HS_C_OUT_SEGS : HS_C_STALE);
		return 0;
	case HS_UNSAMPLED:	/* left out at t1 (--sample): no loss */
		return 0;
	case HS_FOUND:
		break;
	}
	if (!piece && hs_tun_xmit(dev, rec, seq, now))
		return 0;
	if (piece) {
		bool last = hs_piece_out(rec, dev->ifindex, now, &first);

		if (!first && traced)
			hs_count(HS_C_OUT_SEGS);
		if (!last)
			return 0;
		hs_leave(rec, seq, HS_READ_ONCE(rec->t[HS_T4]), HS_READ_ONCE(rec->out_ifindex),
			 HS_READ_ONCE(rec->cpu_out), now);
	} else {
		hs_by_skb_forget(skb);
		if (!hs_leave(rec, seq, now, dev->ifindex, bpf_get_smp_processor_id(), now))
			return 0;
	}
	/* after t4: in no delay, but what the probe costs the packet's sender */
	if (hs_cost_sampled(seq)) {
		hs_cost_settle(seq);
		hs_cost_add(HS_T4, now);
	}
	return 0;
}
