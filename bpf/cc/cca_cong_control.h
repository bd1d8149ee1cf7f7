/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cca_cong_control.h — the per-ACK window update of ccarena's BPF congestion controls,
 * included by cca_common.h (include that, not this). It relies on cca_common.h's
 * accessors, building blocks and guard.
 */
#ifndef CCA_CONG_CONTROL_H
#define CCA_CONG_CONTROL_H

/*
 * The per-ACK window update, done here instead of by the kernel (the cong_control op).
 *
 * Why (docs/algorithms.md, "Known issue"): on this kernel a struct_ops op is now and
 * then not run at all. Measured with the kernel's tcp:tcp_cong_state_set tracepoint
 * against our programs' own counters and bpf_stats: 6 of 1542 entries into Recovery
 * ran neither the set_state nor the ssthresh program (their run_cnt did not move, no
 * recursion_misses), and the ssthresh the kernel stored was 0x81104110, the low half
 * of a stale return address on the stack, every time. The kernel's own per-ACK code
 * then used it at once: PRR turned it into a cwnd of ~1e8 and the sender burst out
 * everything the receiver window allowed before any later op could repair it.
 *
 * With a cong_control op the kernel leaves the whole per-ACK update to us (no PRR, no
 * cong_avoid call, no pacing-rate update of its own), so we check ssthresh and cwnd
 * before anything uses them. If this op is the one skipped, cwnd simply stays as it
 * was for that ACK. What follows does what the kernel does without the op:
 *   - in CWR and Recovery: Proportional Rate Reduction, RFC 6937 §3 (PRR-SSRB), with
 *     the "safe ACK" rule of draft-ietf-tcpm-prr-rfc6937bis (one extra segment only
 *     when snd.una advanced and no new loss was seen), RecoverFS = the window before
 *     the reduction (tp->prior_cwnd), and at least one segment for the fast retransmit;
 *   - otherwise the algorithm's growth rule, on ACKs that acknowledge new data
 *     (RFC 5681 §3.1: do not grow on duplicate ACKs), or on any forward progress once
 *     the path is known to reorder more than net.ipv4.tcp_reordering;
 *   - the pacing rate the stack keeps for TSO sizing and TCP small queues:
 *     cwnd·mss/srtt times net.ipv4.tcp_pacing_ss_ratio in slow start (cwnd below half
 *     of ssthresh), tcp_pacing_ca_ratio after (Documentation/networking/ip-sysctl).
 */
#define CCA_FLAG_DATA_ACKED        0x04
#define CCA_FLAG_SYN_ACKED         0x10
#define CCA_FLAG_DATA_SACKED       0x20
#define CCA_FLAG_SND_UNA_ADVANCED  0x400
#define CCA_FLAG_FORWARD_PROGRESS  (CCA_FLAG_DATA_ACKED | CCA_FLAG_SYN_ACKED | CCA_FLAG_DATA_SACKED)

/* PRR's per-episode count of delivered segments (the kernel keeps its own only when it
 * runs PRR itself, which it no longer does for us) */
struct cca_prr {
	u32 high_seq;    /* tp->high_seq when the episode began (snd_nxt at its start) */
	u32 prior_cwnd;  /* tp->prior_cwnd of the episode */
	u32 prr_out;     /* tp->prr_out at the last ACK (it only grows within an episode) */
	u32 delivered;   /* prr_delivered */
	u32 in_reduction;
	u32 entered;     /* set_state entered Recovery, at tcp_mstamp entry_mstamp */
	u64 entry_mstamp;
};

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct cca_prr);
} cca_prr_state SEC(".maps");

static __always_inline u32 cca_packets_in_flight(const struct tcp_sock *tp)
{
	return tp->packets_out - (tp->sacked_out + tp->lost_out) + tp->retrans_out;
}

/* RFC 6937 §3 for one ACK that delivered `delivered` segments, `lost` newly marked lost */
static __always_inline void cca_prr(struct sock *sk, int flag, u32 delivered, u32 lost)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cca_prr *st;
	u32 pipe = cca_packets_in_flight(tp), ss = tp->snd_ssthresh, fs = tp->prior_cwnd;
	s64 sndcnt;

	st = bpf_sk_storage_get(&cca_prr_state, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!st)
		return;
	/* a new episode: on entering one the kernel set high_seq = snd_nxt, prior_cwnd = cwnd
	 * and prr_out = 0 (an episode can begin with the same snd_nxt, after an undo) */
	if (!st->in_reduction || st->high_seq != tp->high_seq || st->prior_cwnd != fs ||
	    tp->prr_out < st->prr_out) {
		st->in_reduction = 1;
		st->high_seq = tp->high_seq;
		st->prior_cwnd = fs;
		/* Recovery entered by the RACK reordering timer, not by an ACK: the kernel then
		 * runs one PRR step of its own, tcp_cwnd_reduction(sk, 1, ...) (Linux 6.12,
		 * tcp_rack_reo_timeout), which counts one delivered segment. An entry on this
		 * ACK's own processing has this ACK's tcp_mstamp. */
		st->delivered = st->entered && st->entry_mstamp != tp->tcp_mstamp ? 1 : 0;
	}
	st->entered = 0;
	st->prr_out = tp->prr_out;
	if (!delivered || !fs)
		return;
	st->delivered += delivered;
	if (pipe > ss) {
		/* proportional part: send ssthresh/RecoverFS of what was delivered, rounded up */
		sndcnt = (s64)(((u64)ss * st->delivered + fs - 1) / fs) - (s64)tp->prr_out;
	} else {
		/* slow-start reduction bound: back towards ssthresh, at most as fast as
		 * delivered (plus one segment on a safe ACK) */
		s64 limit = (s64)st->delivered - (s64)tp->prr_out;

		if (limit < (s64)delivered)
			limit = delivered;
		if ((flag & CCA_FLAG_SND_UNA_ADVANCED) && !lost)
			limit += 1;
		sndcnt = (s64)ss - (s64)pipe;
		if (sndcnt > limit)
			sndcnt = limit;
	}
	if (sndcnt < 0)
		sndcnt = 0;
	if (!tp->prr_out && sndcnt < 1)
		sndcnt = 1;          /* the fast retransmit itself */
	tp->snd_cwnd = pipe + (u32)sndcnt;
}

static __always_inline void cca_update_pacing_rate(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct net *net = sk->__sk_common.skc_net.net;
	u64 rate;

	/* the kernel's own arithmetic (tcp_update_pacing_rate), so the rate is the same to the
	 * byte: mss * 8 * 10^4 * ratio * max(cwnd, packets_out) / (srtt << 3), i.e.
	 * ratio % of cwnd * mss / srtt; not divided while there is no RTT sample yet */
	rate = (u64)tp->mss_cache * ((CCA_USEC_PER_SEC / 100) << 3);
	rate *= tp->snd_cwnd < tp->snd_ssthresh / 2 ? net->ipv4.sysctl_tcp_pacing_ss_ratio
						    : net->ipv4.sysctl_tcp_pacing_ca_ratio;
	rate *= cca_max(tp->snd_cwnd, tp->packets_out);
	if (tp->srtt_us)
		rate /= tp->srtt_us;
	if (rate > sk->sk_max_pacing_rate)
		rate = sk->sk_max_pacing_rate;
	sk->sk_pacing_rate = rate;
}

/*
 * At a state change, what the kernel leaves out for an algorithm with a cong_control op
 * (it returns early from its own end-of-reduction step, and runs no PRR from timers):
 * - leaving CWR or Recovery for Open/Disorder: cwnd = ssthresh, as at the end of a
 *   reduction in RFC 6937 §3 ("cwnd = ssthresh" on exiting recovery), unless the
 *   reduction was undone (the kernel's rule: always after CWR, after Recovery only while
 *   undo_marker is still set, i.e. nothing was undone). This is also the whole window
 *   reduction of a loss repaired by a tail loss probe, which enters and leaves CWR
 *   within one ACK, before any cong_control call.
 * - entering Recovery: cwnd = pipe + 1, PRR's first step (the fast retransmit). On the
 *   ACK path our PRR replaces it on the same ACK; when the RACK reordering timer enters
 *   Recovery, it is what the kernel's own step there gives (tcp_rack_reo_timeout runs
 *   tcp_cwnd_reduction(sk, 1, ...) for a module: always pipe + 1), and the step's one
 *   delivered segment is counted when PRR's episode starts (cca_prr).
 * - entering CWR or Recovery from another state: a new PRR episode (the kernel's
 *   tcp_init_cwnd_reduction starts prr_delivered at 0), also when it begins on the ACK
 *   that undid the last one, with the same snd_nxt, prior window and nothing sent since
 *   (which cca_prr alone could not tell from the episode going on).
 * If the kernel skips set_state (the fault above), cwnd just stays as PRR left it.
 */
static __always_inline void cca_state_change(struct sock *sk, u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u8 old = cca_ca_state(sk);     /* the kernel stores the new state after set_state */

	if ((old == TCP_CA_CWR || old == TCP_CA_Recovery) && new_state < TCP_CA_CWR) {
		if (tp->snd_ssthresh < CCA_INFINITE_SSTHRESH &&
		    (old == TCP_CA_CWR || tp->undo_marker)) {
			tp->snd_cwnd = tp->snd_ssthresh;
			tp->snd_cwnd_stamp = (u32)bpf_jiffies64();
		}
	} else if (new_state == TCP_CA_Recovery && old != TCP_CA_Recovery && old != TCP_CA_CWR) {
		struct cca_prr *st = bpf_sk_storage_get(&cca_prr_state, sk, 0,
							BPF_SK_STORAGE_GET_F_CREATE);

		if (st) {
			st->entered = 1;
			st->entry_mstamp = tp->tcp_mstamp;
			st->in_reduction = 0;
		}
		tp->snd_cwnd = cca_packets_in_flight(tp) + 1;
	} else if (new_state == TCP_CA_CWR && old != TCP_CA_Recovery && old != TCP_CA_CWR) {
		struct cca_prr *st = bpf_sk_storage_get(&cca_prr_state, sk, 0, 0);

		if (st)
			st->in_reduction = 0;
	}
}

/*
 * CCA_CONG_CONTROL_OP(cca_x, x_ssthresh_for, x_cong_avoid) defines the op
 * cca_x_cong_control around the algorithm's growth rule
 * `static void x_cong_avoid(struct sock *sk, u32 ack, u32 acked)`. The check on
 * ssthresh and cwnd comes first (CCA_CHECK, below), so nothing of ours or of PRR
 * uses a value the kernel stored from an op that did not run.
 */
#define CCA_CONG_CONTROL_OP(algo, ssthresh_for, cong_avoid_fn)                          \
	SEC("struct_ops")                                                              \
	void BPF_PROG(algo##_cong_control, struct sock *sk, u32 ack, int flag,         \
		      const struct rate_sample *rs)                                    \
	{                                                                              \
		struct tcp_sock *__tp = tcp_sk(sk);                                    \
		u32 __delivered = rs->acked_sacked;                                    \
		int __lost = rs->losses;                                               \
		u8 __state = cca_ca_state(sk);                                         \
		CCA_CHECK(sk, ssthresh_for);                                           \
		if (__state == TCP_CA_CWR || __state == TCP_CA_Recovery) {             \
			cca_prr(sk, flag, __delivered, __lost > 0 ? (u32)__lost : 0);  \
		} else {                                                               \
			struct cca_prr *__st = bpf_sk_storage_get(&cca_prr_state, sk, 0, 0); \
			struct net *__net = sk->__sk_common.skc_net.net;               \
			int __need = __tp->reordering > (u32)__net->ipv4.sysctl_tcp_reordering \
				     ? CCA_FLAG_FORWARD_PROGRESS : CCA_FLAG_DATA_ACKED;       \
			if (__st)                                                      \
				__st->in_reduction = 0;                                \
			if (flag & __need) {                                           \
				cong_avoid_fn(sk, ack, __delivered);                   \
				__tp->snd_cwnd_stamp = (u32)bpf_jiffies64();           \
			}                                                              \
		}                                                                      \
		cca_update_pacing_rate(sk);                                            \
	}

#endif /* CCA_CONG_CONTROL_H */
