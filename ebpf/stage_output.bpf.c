/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * t4: net_dev_start_xmit, after the qdisc, as the packet is handed to the
 * output driver. Completes the slot and emits the packet's one record, and
 * (--histograms, --aggregate) adds its delays to its series' histograms.
 * The stamps tell the path: t2 and t3, the IP stack; neither, a fast path
 * that skips netfilter's IP hooks (flowtable, tc redirect: complete for the
 * stages it has); one alone, partial, never complete. A step on the way to
 * a traced output (its bridge, bond or VLAN upper; an ifb) is passed by; a
 * tunnel device's is followed to its underlay's (tunnel.bpf.h).
 */
#include "hopscope.bpf.h"
#include "netns.bpf.h"
#include "tunnel.bpf.h"

SEC("tp_btf/net_dev_start_xmit")
int BPF_PROG(hs_output, const struct sk_buff *skb, const struct net_device *dev)
{
	__u64 now;
	struct hs_record *rec, *out;
	bool traced;
	int out_pos;
	__u32 out_if = dev->ifindex;
	__u64 seq, t[HS_NSTAGES] = {};	/* zeroed: the verifier cannot tie its fill to its use */
	__u8 tos = 0, status = HS_ST_OTHER_OUT, path = HS_PATH_STACK;

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
	out_pos = hs_if_pos(hs_out_if, dev->ifindex);
	traced = out_pos >= 0;
	switch (hs_find(skb, &rec, &seq)) {
	case HS_NOMETA:
		if (traced)
			hs_count(HS_C_OUT_NOMETA);
		return 0;
	case HS_STALE:
		hs_count(HS_C_STALE);
		return 0;
	case HS_UNSAMPLED:	/* left out at t1 (--sample): no loss */
		return 0;
	case HS_FOUND:
		break;
	}
	if (hs_tun_xmit(dev, rec, seq, now))
		return 0;
	if (!traced) {
		out_pos = hs_tun_traced(rec, seq, &out_if);
		traced = out_pos >= 0;
	}
	if (traced) {
		bool t2 = rec->t[HS_T2], t3 = rec->t[HS_T3];

		status = t2 == t3 ? HS_ST_COMPLETE : HS_ST_PARTIAL;
		path = hs_tun_path(rec, t2 || t3 ? HS_PATH_STACK : HS_PATH_NO_NF);
	}
	/* what t4 adds goes into the copy: the slot may change hands meanwhile */
	out = hs_emit_begin(rec, status, now);
	if (out) {
		out->t[HS_T4] = now;
		out->out_ifindex = out_if;
		out->cpu_out = bpf_get_smp_processor_id();
		out->path = path;
	}
	/* read before the release below: after it the slot may be another's */
	if (cfg_hist && status == HS_ST_COMPLETE) {
		const struct hs_record *src = out ? out : rec;

		__builtin_memcpy(t, src->t, sizeof(t));
		t[HS_T4] = now;
		tos = src->tos;
	}
	hs_unfile(skb);
	if (!hs_emit_commit(rec, seq, out, status)) {
		/* evicted while it left: recorded once, as evicted */
		hs_count(HS_C_RACE);
		return 0;
	}
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
	/* after t4: in no delay, but what the probe costs the packet's sender */
	if (hs_cost_sampled(seq)) {
		hs_cost_settle(seq);
		hs_cost_add(HS_T4, now);
	}
	return 0;
}
