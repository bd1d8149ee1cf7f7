// SPDX-License-Identifier: GPL-2.0
/*
 * ccrecord.bpf.c — what Linux's own congestion control sees and does, call by call, for
 * the recorder crates/cc-record (docs/dev/cc-replay.md).
 *
 * Every program below fires for one connection only: the socket whose remote port is
 * cfg.port (the data sender of a recorded scenario). Each writes one struct ccr_rec to
 * the ring buffer `events`: the kind, the call's arguments, the return value where
 * there is one, and a snapshot of the socket (struct ccr_snap).
 *
 * Hooks, all fentry/fexit (BTF-typed, detached when the recorder's links close):
 *   - the kernel's own functions that surround the module's ops (Linux 6.12,
 *     net/ipv4/tcp_input.c, tcp_cong.c, tcp_output.c): tcp_init_congestion_control,
 *     tcp_set_ca_state, tcp_in_ack_event, tcp_cwnd_reduction, tcp_cwnd_restart,
 *     tcp_enter_loss, tcp_undo_cwnd_reduction;
 *   - the per-ACK congestion update. tcp_cong_control() and tcp_cong_avoid() are inlined
 *     into tcp_ack(), so the update is bracketed by the out-of-line functions tcp_ack()
 *     calls around it: tcp_newly_delivered(sk, prior_delivered, flag) receives the
 *     ACK's final flag, tcp_rate_gen(sk, delivered, lost, ..., rs) then completes the
 *     rate sample (its exit is CCR_CC_PRE: the socket as tcp_cong_control() finds it),
 *     and tcp_update_pacing_rate(sk), the last call of tcp_cong_control() for a module
 *     without a cong_control op, ends it (its exit is CCR_CC_POST). A pending record per
 *     socket pairs them: tcp_update_pacing_rate from elsewhere emits nothing;
 *   - the module's ops (op_*): generic programs whose attach target (the module's
 *     function, e.g. bictcp_cong_avoid) the recorder sets before load.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include "ccrecord.h"

char _license[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 4 * 1024 * 1024);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ccr_cfg);
} cfg SEC(".maps");

/* [0] records written, [1] records lost (ring buffer full) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 2);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* per socket: the flag of the ACK being processed, and whether CC_PRE awaits its POST */
struct pending {
	__s64 flag;
	__s64 prior_delivered;
	__u32 cc_open;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 64);
	__type(key, __u64);
	__type(value, struct pending);
} pend SEC(".maps");

static __always_inline void count(__u32 i)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &i);

	if (v)
		__sync_fetch_and_add(v, 1);
}

static __always_inline bool traced(struct sock *sk)
{
	__u32 zero = 0;
	struct ccr_cfg *c = bpf_map_lookup_elem(&cfg, &zero);

	if (!c || !sk)
		return false;
	return bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport)) == c->port;
}

static __always_inline void snap(struct sock *sk, struct ccr_snap *s)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	struct inet_connection_sock *icsk = (struct inet_connection_sock *)sk;

	s->cwnd = BPF_CORE_READ(tp, snd_cwnd);
	s->ssthresh = BPF_CORE_READ(tp, snd_ssthresh);
	s->cwnd_cnt = BPF_CORE_READ(tp, snd_cwnd_cnt);
	s->cwnd_clamp = BPF_CORE_READ(tp, snd_cwnd_clamp);
	s->srtt_us = BPF_CORE_READ(tp, srtt_us);
	s->mdev_us = BPF_CORE_READ(tp, mdev_us);
	s->min_rtt_us = BPF_CORE_READ(tp, rtt_min.s[0].v);
	s->packets_out = BPF_CORE_READ(tp, packets_out);
	s->sacked_out = BPF_CORE_READ(tp, sacked_out);
	s->lost_out = BPF_CORE_READ(tp, lost_out);
	s->retrans_out = BPF_CORE_READ(tp, retrans_out);
	s->max_packets_out = BPF_CORE_READ(tp, max_packets_out);
	s->delivered = BPF_CORE_READ(tp, delivered);
	s->delivered_ce = BPF_CORE_READ(tp, delivered_ce);
	s->lost = BPF_CORE_READ(tp, lost);
	s->snd_una = BPF_CORE_READ(tp, snd_una);
	s->snd_nxt = BPF_CORE_READ(tp, snd_nxt);
	s->high_seq = BPF_CORE_READ(tp, high_seq);
	s->rcv_nxt = BPF_CORE_READ(tp, rcv_nxt);
	s->prior_cwnd = BPF_CORE_READ(tp, prior_cwnd);
	s->prior_ssthresh = BPF_CORE_READ(tp, prior_ssthresh);
	s->prr_delivered = BPF_CORE_READ(tp, prr_delivered);
	s->prr_out = BPF_CORE_READ(tp, prr_out);
	s->undo_marker = BPF_CORE_READ(tp, undo_marker);
	s->undo_retrans = BPF_CORE_READ(tp, undo_retrans);
	s->reordering = BPF_CORE_READ(tp, reordering);
	s->cwnd_stamp = BPF_CORE_READ(tp, snd_cwnd_stamp);
	s->lsndtime = BPF_CORE_READ(tp, lsndtime);
	s->cwnd_used = BPF_CORE_READ(tp, snd_cwnd_used);
	s->app_limited = BPF_CORE_READ(tp, app_limited);
	s->rcv_tsval = BPF_CORE_READ(tp, rx_opt.rcv_tsval);
	s->rcv_tsecr = BPF_CORE_READ(tp, rx_opt.rcv_tsecr);
	s->mss_cache = BPF_CORE_READ(tp, mss_cache);
	s->icsk_rto = BPF_CORE_READ(icsk, icsk_rto);
	s->delack_max = BPF_CORE_READ(icsk, icsk_delack_max);
	s->ca_state = BPF_CORE_READ_BITFIELD_PROBED(icsk, icsk_ca_state);
	s->is_cwnd_limited = BPF_CORE_READ_BITFIELD_PROBED(tp, is_cwnd_limited);
	s->ecn_flags = BPF_CORE_READ(tp, ecn_flags);
	s->saw_tstamp = BPF_CORE_READ_BITFIELD_PROBED(&tp->rx_opt, saw_tstamp);
	s->tcp_mstamp = BPF_CORE_READ(tp, tcp_mstamp);
	s->pacing_rate = BPF_CORE_READ(sk, sk_pacing_rate);
	s->max_pacing_rate = BPF_CORE_READ(sk, sk_max_pacing_rate);
}

/* a record of `kind` with up to four arguments; the caller may fill more before submit */
static __always_inline struct ccr_rec *start(struct sock *sk, __u32 kind, __s64 a0, __s64 a1,
					     __s64 a2, __s64 a3)
{
	struct ccr_rec *r = bpf_ringbuf_reserve(&events, sizeof(*r), 0);

	if (!r) {
		count(1);
		return 0;
	}
	__builtin_memset(r, 0, sizeof(*r));
	r->t_ns = bpf_ktime_get_ns();
	r->jiffies = bpf_jiffies64();
	r->sk = (__u64)sk;
	r->kind = kind;
	r->arg[0] = a0;
	r->arg[1] = a1;
	r->arg[2] = a2;
	r->arg[3] = a3;
	snap(sk, &r->s);
	return r;
}

static __always_inline void emit(struct sock *sk, __u32 kind, __s64 a0, __s64 a1, __s64 a2,
				 __s64 a3, __s64 ret)
{
	struct ccr_rec *r;

	if (!traced(sk))
		return;
	r = start(sk, kind, a0, a1, a2, a3);
	if (!r)
		return;
	r->ret = ret;
	count(0);
	bpf_ringbuf_submit(r, 0);
}

/* ---- the kernel's functions around the ops */
SEC("fentry/tcp_init_congestion_control")
int BPF_PROG(init_in, struct sock *sk) { emit(sk, CCR_INIT_IN, 0, 0, 0, 0, 0); return 0; }
SEC("fexit/tcp_init_congestion_control")
int BPF_PROG(init_out, struct sock *sk) { emit(sk, CCR_INIT_OUT, 0, 0, 0, 0, 0); return 0; }

SEC("fentry/tcp_set_ca_state")
int BPF_PROG(set_state_in, struct sock *sk, u8 st) { emit(sk, CCR_SET_STATE_IN, st, 0, 0, 0, 0); return 0; }
SEC("fexit/tcp_set_ca_state")
int BPF_PROG(set_state_out, struct sock *sk, u8 st) { emit(sk, CCR_SET_STATE_OUT, st, 0, 0, 0, 0); return 0; }

SEC("fentry/tcp_in_ack_event")
int BPF_PROG(in_ack_event, struct sock *sk, int flag) { emit(sk, CCR_IN_ACK_EVENT, flag, 0, 0, 0, 0); return 0; }

SEC("fentry/tcp_cwnd_reduction")
int BPF_PROG(cwnd_reduction, struct sock *sk, int acked_sacked, int lost, int flag)
{
	emit(sk, CCR_CWND_REDUCTION, acked_sacked, lost, flag, 0, 0);
	return 0;
}

SEC("fentry/tcp_cwnd_restart")
int BPF_PROG(restart_in, struct sock *sk, s32 delta) { emit(sk, CCR_CWND_RESTART_IN, delta, 0, 0, 0, 0); return 0; }
SEC("fexit/tcp_cwnd_restart")
int BPF_PROG(restart_out, struct sock *sk, s32 delta) { emit(sk, CCR_CWND_RESTART_OUT, delta, 0, 0, 0, 0); return 0; }

SEC("fentry/tcp_enter_loss")
int BPF_PROG(loss_in, struct sock *sk) { emit(sk, CCR_ENTER_LOSS_IN, 0, 0, 0, 0, 0); return 0; }
SEC("fexit/tcp_enter_loss")
int BPF_PROG(loss_out, struct sock *sk) { emit(sk, CCR_ENTER_LOSS_OUT, 0, 0, 0, 0, 0); return 0; }

SEC("fentry/tcp_undo_cwnd_reduction")
int BPF_PROG(undo_in, struct sock *sk, bool unmark) { emit(sk, CCR_UNDO_IN, unmark, 0, 0, 0, 0); return 0; }
SEC("fexit/tcp_undo_cwnd_reduction")
int BPF_PROG(undo_out, struct sock *sk, bool unmark) { emit(sk, CCR_UNDO_OUT, unmark, 0, 0, 0, 0); return 0; }

/* ---- the ACK's congestion update */
SEC("fentry/tcp_newly_delivered")
int BPF_PROG(newly_delivered, struct sock *sk, u32 prior_delivered, int flag)
{
	__u64 key = (__u64)sk;
	struct pending p = { .flag = flag, .prior_delivered = prior_delivered };

	if (!traced(sk))
		return 0;
	bpf_map_update_elem(&pend, &key, &p, BPF_ANY);
	return 0;
}

SEC("fexit/tcp_rate_gen")
int BPF_PROG(rate_gen, struct sock *sk, u32 delivered, u32 lost, bool is_sack_reneg,
	     struct rate_sample *rs)
{
	__u64 key = (__u64)sk;
	struct pending *p;
	struct ccr_rec *r;

	if (!traced(sk))
		return 0;
	p = bpf_map_lookup_elem(&pend, &key);
	if (!p)
		return 0;
	/* arg: flag, acked_sacked, losses, rtt_us, rs.delivered, interval_us, is_app_limited,
	 * prior_in_flight */
	r = start(sk, CCR_CC_PRE, p->flag, delivered, (__s64)lost, BPF_CORE_READ(rs, rtt_us));
	if (!r)
		return 0;
	r->arg[4] = BPF_CORE_READ(rs, delivered);
	r->arg[5] = BPF_CORE_READ(rs, interval_us);
	r->arg[6] = BPF_CORE_READ(rs, is_app_limited);
	r->arg[7] = BPF_CORE_READ(rs, prior_in_flight);
	r->ret = p->prior_delivered;
	p->cc_open = 1;
	count(0);
	bpf_ringbuf_submit(r, 0);
	return 0;
}

SEC("fexit/tcp_update_pacing_rate")
int BPF_PROG(pacing_rate, struct sock *sk)
{
	__u64 key = (__u64)sk;
	struct pending *p;

	if (!traced(sk))
		return 0;
	p = bpf_map_lookup_elem(&pend, &key);
	if (!p || !p->cc_open)
		return 0;
	p->cc_open = 0;
	emit(sk, CCR_CC_POST, 0, 0, 0, 0, 0);
	return 0;
}

/* ---- the module's ops: attach targets set by the recorder, autoload off when unused */
SEC("fentry")
int BPF_PROG(op_ssthresh_in, struct sock *sk) { emit(sk, CCR_OP_SSTHRESH_IN, 0, 0, 0, 0, 0); return 0; }
SEC("fexit")
int BPF_PROG(op_ssthresh_out, struct sock *sk, u32 ret) { emit(sk, CCR_OP_SSTHRESH_OUT, 0, 0, 0, 0, ret); return 0; }

SEC("fentry")
int BPF_PROG(op_cong_avoid_in, struct sock *sk, u32 ack, u32 acked)
{
	emit(sk, CCR_OP_CONG_AVOID_IN, ack, acked, 0, 0, 0);
	return 0;
}
SEC("fexit")
int BPF_PROG(op_cong_avoid_out, struct sock *sk, u32 ack, u32 acked)
{
	emit(sk, CCR_OP_CONG_AVOID_OUT, ack, acked, 0, 0, 0);
	return 0;
}

SEC("fentry")
int BPF_PROG(op_undo_cwnd_in, struct sock *sk) { emit(sk, CCR_OP_UNDO_CWND_IN, 0, 0, 0, 0, 0); return 0; }
SEC("fexit")
int BPF_PROG(op_undo_cwnd_out, struct sock *sk, u32 ret) { emit(sk, CCR_OP_UNDO_CWND_OUT, 0, 0, 0, 0, ret); return 0; }

SEC("fentry")
int BPF_PROG(op_pkts_acked_in, struct sock *sk, const struct ack_sample *a)
{
	emit(sk, CCR_OP_PKTS_ACKED_IN, BPF_CORE_READ(a, pkts_acked), BPF_CORE_READ(a, rtt_us),
	     BPF_CORE_READ(a, in_flight), 0, 0);
	return 0;
}
SEC("fexit")
int BPF_PROG(op_pkts_acked_out, struct sock *sk, const struct ack_sample *a)
{
	emit(sk, CCR_OP_PKTS_ACKED_OUT, BPF_CORE_READ(a, pkts_acked), BPF_CORE_READ(a, rtt_us),
	     BPF_CORE_READ(a, in_flight), 0, 0);
	return 0;
}

SEC("fentry")
int BPF_PROG(op_cwnd_event_in, struct sock *sk, int ev) { emit(sk, CCR_OP_CWND_EVENT_IN, ev, 0, 0, 0, 0); return 0; }
SEC("fexit")
int BPF_PROG(op_cwnd_event_out, struct sock *sk, int ev) { emit(sk, CCR_OP_CWND_EVENT_OUT, ev, 0, 0, 0, 0); return 0; }

SEC("fentry")
int BPF_PROG(op_in_ack_event_in, struct sock *sk, u32 f) { emit(sk, CCR_OP_IN_ACK_EVENT_IN, f, 0, 0, 0, 0); return 0; }
SEC("fexit")
int BPF_PROG(op_in_ack_event_out, struct sock *sk, u32 f) { emit(sk, CCR_OP_IN_ACK_EVENT_OUT, f, 0, 0, 0, 0); return 0; }
