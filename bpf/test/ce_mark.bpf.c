// SPDX-License-Identifier: GPL-2.0
/*
 * ce_mark — a test aid, not an algorithm: marks CE (RFC 3168) on a fixed fraction
 * of the ECN-capable IPv4 packets leaving an interface (tcx egress), so that ECN
 * reactions (DCTCP's alpha, RFC 8257 §3.3) can be checked on a kernel without an
 * ECN-marking qdisc. Attached by `ccarena-cc mark` (crates/cc); the fraction is
 * `mark_per_mille` (rodata, set before load).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define ETH_HLEN     14
#define ETH_P_IP     0x0800
#define IP_TOS_OFF   (ETH_HLEN + 1)
#define IP_CSUM_OFF  (ETH_HLEN + 10)
#define ECN_MASK     3
#define ECN_CE       3

char _license[] SEC("license") = "GPL";

const volatile __u32 mark_per_mille = 100;

SEC("tcx/egress")
int ce_mark(struct __sk_buff *skb)
{
	void *data = (void *)(long)skb->data;
	void *end = (void *)(long)skb->data_end;
	struct ethhdr *eth = data;
	struct iphdr *ip;
	__u8 tos, ntos;

	if ((void *)(eth + 1) > end || eth->h_proto != bpf_htons(ETH_P_IP))
		return TCX_NEXT;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end)
		return TCX_NEXT;
	tos = ip->tos;
	if ((tos & ECN_MASK) == 0 || (tos & ECN_MASK) == ECN_CE)
		return TCX_NEXT;   /* not ECN-capable, or already marked */
	if (bpf_get_prandom_u32() % 1000 >= mark_per_mille)
		return TCX_NEXT;
	ntos = tos | ECN_CE;
	/* tos is the low byte of the header's first 16-bit word: adjust the checksum by it */
	bpf_l3_csum_replace(skb, IP_CSUM_OFF, bpf_htons(tos), bpf_htons(ntos), 2);
	bpf_skb_store_bytes(skb, IP_TOS_OFF, &ntos, 1, 0);
	return TCX_NEXT;
}
