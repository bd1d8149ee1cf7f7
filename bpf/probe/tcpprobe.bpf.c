// SPDX-License-Identifier: GPL-2.0
/*
 * tcpprobe.bpf.c — per-ACK TCP state for ccarena-trace (crates/trace).
 *
 * Hook: the tcp:tcp_probe tracepoint, attached as tp_btf (BTF-typed raw tracepoint,
 * TP_PROTO(const struct sock *sk, const struct sk_buff *skb)). The kernel fires it at
 * the top of tcp_rcv_established() (net/ipv4/tcp_input.c), i.e. for every segment an
 * ESTABLISHED socket receives — on a data sender, once per ACK — *before* the ACK is
 * processed. The fields are computed from sk/skb exactly as the tracepoint's
 * TP_fast_assign in include/trace/events/tcp.h does (see the format file
 * /sys/kernel/tracing/events/tcp/tcp_probe/format), with two deliberate differences:
 *   - ssthresh is tp->snd_ssthresh (what TCP_INFO and tcpinfo.bin report), not
 *     tcp_current_ssthresh(sk), which outside a cwnd reduction is
 *     max(snd_ssthresh, 3/4 cwnd) and hides the halving;
 *   - netns (the socket's network-namespace inode) and ca_state are added.
 * tp_btf needs no tracefs mount and no perf event: the link is a bpf_link fd whose
 * close (also when the process dies) detaches the program.
 *
 * Filter (in the kernel, before reserving ring space): IPv4 sockets whose netns inode
 * is a key of `netns_filter` (filled by user space from the run's /run/netns/<name>)
 * and with sport or dport in cfg's port range.
 * Output: struct tcpprobe_rec in the ring buffer `events`; a failed reserve (ring
 * full) is counted in the per-CPU `counters` map ([0] passed the filter, [1] lost).
 * Wakeups are batched: user space is woken only when min(WAKEUP_BYTES, ring/2) bytes
 * wait (it also drains every 50 ms on its own).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "tcpprobe.h"

char _license[] SEC("license") = "GPL";

#define AF_INET 2
#define WAKEUP_BYTES (256 * 1024)

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 16 * 1024 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, TCPPROBE_MAX_NETNS);
	__type(key, __u32);
	__type(value, __u8);
} netns_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tcpprobe_cfg);
} cfg SEC(".maps");

/* [0] = events that passed the filter, [1] = of those, lost (ring buffer full) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &i);
	if (v)
		*v += 1;
}

SEC("tp_btf/tcp_probe")
int BPF_PROG(tcp_probe, struct sock *sk, struct sk_buff *skb)
{
	if (sk->__sk_common.skc_family != AF_INET)
		return 0;
	__u32 inum = sk->__sk_common.skc_net.net->ns.inum;
	if (!bpf_map_lookup_elem(&netns_filter, &inum))
		return 0;

	/* bpf_skc_to_tcp_sock gives a BTF pointer the verifier lets us read tcp_sock,
	 * inet_connection_sock and inet_sock fields through (a plain cast would not). */
	struct tcp_sock *tp = bpf_skc_to_tcp_sock(sk);
	if (!tp)
		return 0;
	__u16 sport = bpf_ntohs(tp->inet_conn.icsk_inet.inet_sport);
	__u16 dport = bpf_ntohs(sk->__sk_common.skc_dport);
	__u32 zero = 0;
	struct tcpprobe_cfg *c = bpf_map_lookup_elem(&cfg, &zero);
	if (c) {
		int in_s = sport >= c->port_lo && sport <= c->port_hi;
		int in_d = dport >= c->port_lo && dport <= c->port_hi;
		if (!in_s && !in_d)
			return 0;
	}
	count(0);

	struct tcpprobe_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);
	if (!r) {
		count(1);
		return 0;
	}
	const struct inet_connection_sock *icsk = &tp->inet_conn;

	/* data_len = skb->len - __tcp_hdrlen(th), th = skb->data (as TP_fast_assign) */
	__u8 doff_byte = 0;
	bpf_probe_read_kernel(&doff_byte, 1, skb->data + 12);
	__u32 hdr = (doff_byte >> 4) * 4;
	__u32 len = skb->len;

	r->t_ns = bpf_ktime_get_ns();
	r->netns = inum;
	r->saddr = bpf_ntohl(sk->__sk_common.skc_rcv_saddr);
	r->daddr = bpf_ntohl(sk->__sk_common.skc_daddr);
	r->sport = sport;
	r->dport = dport;
	r->snd_cwnd = tp->snd_cwnd;
	r->ssthresh = tp->snd_ssthresh;
	r->snd_wnd = tp->snd_wnd;
	r->rcv_wnd = tp->rcv_wnd;
	r->srtt_us = tp->srtt_us >> 3;
	r->snd_nxt = tp->snd_nxt;
	r->snd_una = tp->snd_una;
	r->data_len = len > hdr ? len - hdr : 0;
	r->mark = skb->mark;
	r->ca_state = BPF_CORE_READ_BITFIELD(icsk, icsk_ca_state);
	r->_pad[0] = 0;
	r->_pad[1] = 0;
	r->_pad[2] = 0;

	__u64 wake = bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 2;
	if (wake > WAKEUP_BYTES)
		wake = WAKEUP_BYTES;
	__u64 flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wake
		? BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	bpf_ringbuf_submit(r, flags);
	return 0;
}
