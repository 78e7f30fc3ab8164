// SPDX-License-Identifier: GPL-2.0
/*
 * A router's tc fast path, as Cilium's host routing does it: UDP to PORT
 * arriving on the device it is attached to goes by bpf_redirect_neigh
 * straight to OUT_IFINDEX's transmit, past every netfilter IP hook
 * (tests/e2e/test_fast_paths.py builds it with both set by -D).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/in.h>
#include <linux/udp.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
SEC("tc")
int redirect_neigh(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip = (void *)(eth + 1);
	struct udphdr *udp = (void *)(ip + 1);
	if ((void *)(udp + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP) || ip->ihl != 5 || ip->protocol != IPPROTO_UDP || udp->dest != bpf_htons(PORT))
		return TC_ACT_OK;
	return bpf_redirect_neigh(OUT_IFINDEX, NULL, 0, 0);
}
char LICENSE[] SEC("license") = "GPL";
