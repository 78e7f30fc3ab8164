/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Receiver-side sink for rate benchmarks (testbed.sh up --sink): drops UDP
 * data at XDP so the receiving process is never the bottleneck, and counts
 * what it drops so a benchmark can read the received rate (testbed.sh sink).
 *
 * Passes everything that is not UDP over IPv4 or IPv6 (ARP, ICMP, TCP: the
 * iperf3 control connection), UDP behind IPv6 extension headers, and UDP
 * datagrams with exactly 4 bytes of payload: iperf3's UDP connect message
 * and its reply, without which an iperf3 UDP test never starts.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_P_IP_BE	bpf_htons(0x0800)
#define ETH_P_IPV6_BE	bpf_htons(0x86DD)
#define IP_OFFSET_MASK	bpf_htons(0x1fff)
#define HANDSHAKE_LEN	bpf_htons(sizeof(struct udphdr) + 4)

struct sink_count {
	__u64 packets;
	__u64 bytes;	/* whole frames, Ethernet header included */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct sink_count);
} sink_drops SEC(".maps");

/* the UDP header at off, or NULL if it is not in the frame */
static __always_inline struct udphdr *udp_at(void *data, void *end, __u64 off)
{
	struct udphdr *udp = data + off;

	if ((void *)(udp + 1) > end)
		return NULL;
	return udp;
}

SEC("xdp")
int xdp_sink(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct ethhdr *eth = data;
	struct sink_count *c;
	struct udphdr *udp;
	__u32 zero = 0;

	if ((void *)(eth + 1) > end)
		return XDP_PASS;

	if (eth->h_proto == ETH_P_IP_BE) {
		struct iphdr *ip = (void *)(eth + 1);

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP)
			return XDP_PASS;
		/* later fragments carry no UDP header: they are data */
		if (ip->frag_off & IP_OFFSET_MASK)
			goto drop;
		udp = udp_at(data, end, sizeof(*eth) + ip->ihl * 4);
	} else if (eth->h_proto == ETH_P_IPV6_BE) {
		struct ipv6hdr *ip6 = (void *)(eth + 1);

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return XDP_PASS;
		udp = udp_at(data, end, sizeof(*eth) + sizeof(*ip6));
	} else {
		return XDP_PASS;
	}
	if (udp && udp->len == HANDSHAKE_LEN)
		return XDP_PASS;
drop:
	c = bpf_map_lookup_elem(&sink_drops, &zero);
	if (c) {
		c->packets++;
		c->bytes += end - data;
	}
	return XDP_DROP;
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
