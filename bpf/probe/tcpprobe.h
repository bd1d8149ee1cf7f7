/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tcpprobe.h — the record shared by tcpprobe.bpf.c (kernel side) and ccarena-trace
 * (crates/trace, user side). One record per tcp:tcp_probe event that passed the
 * in-kernel filter; user space writes the bytes unchanged to tcpprobe.bin, so this
 * struct IS the file format of docs/dev/contracts.md §6 (packed, little-endian,
 * 64 bytes, every field naturally aligned, no implicit padding).
 */
#ifndef CCARENA_TCPPROBE_H
#define CCARENA_TCPPROBE_H

struct tcpprobe_rec {
	__u64 t_ns;      /* bpf_ktime_get_ns(): CLOCK_MONOTONIC                          */
	__u32 netns;     /* inode number of the socket's network namespace (ns.inum)     */
	__u32 saddr;     /* local IPv4 address, host byte order (10.1.1.2 = 0x0a010102)  */
	__u32 daddr;     /* remote IPv4 address, host byte order                         */
	__u16 sport;     /* local port                                                   */
	__u16 dport;     /* remote port                                                  */
	__u32 snd_cwnd;  /* packets (tcp_snd_cwnd(tp))                                   */
	__u32 ssthresh;  /* packets, tp->snd_ssthresh as TCP_INFO reports it            */
	__u32 snd_wnd;   /* bytes, peer's advertised window (tp->snd_wnd)                */
	__u32 rcv_wnd;   /* bytes, our advertised window (tp->rcv_wnd)                   */
	__u32 srtt_us;   /* smoothed RTT, microseconds (tp->srtt_us >> 3)                */
	__u32 snd_nxt;   /* sequence numbers (raw, wrap at 2^32)                         */
	__u32 snd_una;
	__u32 data_len;  /* payload bytes of the arriving segment (0 = pure ACK)         */
	__u32 mark;      /* skb->mark                                                    */
	__u8  ca_state;  /* icsk_ca_state: 0 Open 1 Disorder 2 CWR 3 Recovery 4 Loss     */
	__u8  _pad[3];
};

struct tcpprobe_cfg {
	__u16 port_lo;   /* keep an event when sport or dport is in [port_lo, port_hi]  */
	__u16 port_hi;   /* (0, 65535) = all ports                                       */
	__u32 _pad;
};

#define TCPPROBE_MAX_NETNS 256

_Static_assert(sizeof(struct tcpprobe_rec) == 64, "tcpprobe_rec is 64 bytes (contracts §6)");

#endif
