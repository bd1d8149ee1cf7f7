// SPDX-License-Identifier: GPL-2.0
/*
 * cca_westwood — TCP Westwood+ (S. Mascolo, C. Casetti, M. Gerla, M. Y. Sanadidi, R. Wang,
 * "TCP Westwood: Bandwidth Estimation for Enhanced Transport over Wireless Links", ACM
 * MobiCom 2001; L. A. Grieco, S. Mascolo, "Performance evaluation and comparison of
 * Westwood+, New Reno, and Vegas TCP congestion control", ACM CCR 34(2), 2004).
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_westwood.c). Times are jiffies
 * (cca_jiffies32, cca_hz). Its rules:
 *   - RTT: each ACK's sample (when positive) rounded up to jiffies is the last RTT;
 *     RTT_min is the smallest of them, read on every ACK (before that ACK's own sample),
 *     and restarts from the last RTT on the first ACK after a time-out; both start at
 *     20 s;
 *   - bandwidth: bytes acknowledged are summed; once more than max(RTT, HZ/20) jiffies
 *     have passed since the window began, a sample bytes / jiffies feeds two filters
 *     (7/8 old + 1/8 new, in integers, the second filtering the first; the first sample
 *     fills both), and a new window begins. On an ACK that took the fast path the bytes
 *     are those snd_una advanced by; on the slow path a duplicate ACK counts one MSS
 *     and a cumulative ACK of more than one MSS only what duplicate ACKs did not count
 *     already. The first ACK starts the byte count at its snd_una;
 *   - loss: ssthresh is Reno's halving (the module's ssthresh op is tcp_reno_ssthresh),
 *     but at a time-out (CA_EVENT_LOSS) and at the end of a CWR or Recovery episode
 *     (CA_EVENT_COMPLETE_CWR, even after an undo) ssthresh = max(BWE·RTT_min / MSS, 2)
 *     in 32-bit arithmetic, and at the end of an episode cwnd = ssthresh too;
 *   - growth: Reno's; undo: the window before the reduction.
 * The kernel sends CA_EVENT_COMPLETE_CWR only to a module without cong_control
 * (tcp_end_cwnd_reduction returns first for one): ours does its work in set_state, on
 * the state changes that follow tcp_end_cwnd_reduction — leaving CWR, and leaving
 * Recovery for Open once snd_una reached high_seq (tcp_try_undo_recovery); a partial
 * undo leaves Recovery before high_seq without it.
 *
 * CCA_PAPER (cca_westwood_p): the papers (below).
 */
#include "cca_common.h"

#ifndef CCA_PAPER

struct westwood {
	u32 bw_first;        /* the first filter: bytes per jiffy */
	u32 bw_est;          /* the second: BWE */
	u32 win_start;       /* jiffies */
	u32 bytes;           /* acknowledged in this window */
	u32 snd_una;         /* snd_una at the last ACK */
	u32 dup_bytes;       /* counted for duplicate ACKs, not yet cumulatively acked */
	u32 rtt;             /* jiffies */
	u32 rtt_min;         /* jiffies */
	u8  first_ack;
	u8  reset_rtt_min;
};
CCA_PRIV_CHECK(struct westwood);

#define WW_INIT_RTT_S  20u   /* RTT and RTT_min before any sample: 20 s */

SEC("struct_ops")
void BPF_PROG(cca_westwood_init, struct sock *sk)
{
	struct westwood *w = inet_csk_ca(sk);

	w->bw_first = 0;
	w->bw_est = 0;
	w->bytes = 0;
	w->dup_bytes = 0;
	w->rtt = WW_INIT_RTT_S * cca_hz(sk);
	w->rtt_min = w->rtt;
	w->reset_rtt_min = 1;
	w->win_start = cca_jiffies32();
	w->snd_una = tcp_sk(sk)->snd_una;
	w->first_ack = 1;
}

/* microseconds to jiffies, rounded up (usecs_to_jiffies) */
static __always_inline u32 ww_us_to_jiffies(const struct sock *sk, u32 us)
{
	return (u32)(((u64)us * cca_hz(sk) + CCA_USEC_PER_SEC - 1) / CCA_USEC_PER_SEC);
}

SEC("struct_ops")
void BPF_PROG(cca_westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct westwood *w = inet_csk_ca(sk);

	if (sample->rtt_us > 0)
		w->rtt = ww_us_to_jiffies(sk, (u32)sample->rtt_us);
}

/* 7/8 old + 1/8 new, in 32 bits */
static __always_inline u32 ww_filter(u32 old, u32 sample)
{
	return (7 * old + sample) >> 3;
}

/* close the window when more than max(RTT, 50 ms) has passed: one bandwidth sample */
static __always_inline void ww_update_window(struct sock *sk, struct westwood *w)
{
	u32 now = cca_jiffies32();
	u32 delta = now - w->win_start;

	if (w->first_ack) {
		w->snd_una = tcp_sk(sk)->snd_una;
		w->first_ack = 0;
	}
	/* (the module compares its signed difference as unsigned) */
	if (w->rtt && delta > cca_max(w->rtt, cca_hz(sk) / 20)) {
		u32 sample = w->bytes / delta;

		if (!w->bw_first && !w->bw_est) {
			w->bw_first = sample;
			w->bw_est = sample;
		} else {
			w->bw_first = ww_filter(w->bw_first, sample);
			w->bw_est = ww_filter(w->bw_est, w->bw_first);
		}
		w->bytes = 0;
		w->win_start = now;
	}
}

static __always_inline void ww_update_rtt_min(struct westwood *w)
{
	if (w->reset_rtt_min) {
		w->rtt_min = w->rtt;
		w->reset_rtt_min = 0;
	} else {
		w->rtt_min = cca_min(w->rtt, w->rtt_min);
	}
}

/* the bytes a slow-path ACK stands for */
static __always_inline u32 ww_acked_bytes(const struct tcp_sock *tp, struct westwood *w)
{
	u32 mss = tp->mss_cache;
	u32 acked = tp->snd_una - w->snd_una;

	if (!acked) {
		/* a duplicate ACK: one segment arrived */
		w->dup_bytes += mss;
		acked = mss;
	}
	if (acked > mss) {
		/* a cumulative ACK: what duplicate ACKs counted already is not counted again */
		if (w->dup_bytes >= acked) {
			w->dup_bytes -= acked;
			acked = mss;
		} else {
			acked -= w->dup_bytes;
			w->dup_bytes = 0;
		}
	}
	w->snd_una = tp->snd_una;
	return acked;
}

SEC("struct_ops")
void BPF_PROG(cca_westwood_in_ack_event, struct sock *sk, u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *w = inet_csk_ca(sk);

	ww_update_window(sk, w);
	if (flags & CA_ACK_SLOWPATH) {
		w->bytes += ww_acked_bytes(tp, w);
	} else {
		w->bytes += tp->snd_una - w->snd_una;
		w->snd_una = tp->snd_una;
	}
	ww_update_rtt_min(w);
}

/* BWE·RTT_min in segments, at least 2 (the module's 32-bit product) */
static __always_inline u32 ww_bw_rttmin(const struct sock *sk)
{
	const struct westwood *w = inet_csk_ca(sk);
	u32 mss = tcp_sk(sk)->mss_cache;

	return cca_max((u32)(w->bw_est * w->rtt_min) / cca_max(mss, 1), 2);
}

SEC("struct_ops")
void BPF_PROG(cca_westwood_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct westwood *w = inet_csk_ca(sk);

	/* a time-out (tcp_enter_loss, after the ssthresh op) */
	if (ev == CA_EVENT_LOSS) {
		tcp_sk(sk)->snd_ssthresh = ww_bw_rttmin(sk);
		w->reset_rtt_min = 1;
	}
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 westwood_ssthresh_for(struct sock *sk, u32 cwnd)
{
	return cca_rfc5681_ssthresh(cwnd);
}

CCA_SSTHRESH_OP(cca_westwood, westwood_ssthresh_for)

SEC("struct_ops")
void BPF_PROG(cca_westwood_set_state, struct sock *sk, u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u8 old = cca_ca_state(sk);

	CCA_STATE_GUARD(sk, new_state, westwood_ssthresh_for);
	/* the end of a reduction: what CA_EVENT_COMPLETE_CWR does in the module */
	if ((old == TCP_CA_CWR && new_state < TCP_CA_CWR) ||
	    (old == TCP_CA_Recovery && new_state == TCP_CA_Open &&
	     !cca_seq_before(tp->snd_una, tp->high_seq))) {
		tp->snd_ssthresh = ww_bw_rttmin(sk);
		tp->snd_cwnd = tp->snd_ssthresh;
	}
}

/* growth rule, run by cca_westwood_cong_control (cca_common.h): Reno's */
static __always_inline void westwood_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!cca_grow_prologue(sk, &acked))
		return;
	cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

CCA_UNDO_PRIOR_OP(cca_westwood)

CCA_CONG_CONTROL_OP(cca_westwood, westwood_ssthresh_for, westwood_cong_avoid)

CCA_OPS(cca_westwood) = {
	.set_state    = (void *)cca_westwood_set_state,
	.init         = (void *)cca_westwood_init,
	.ssthresh     = (void *)cca_westwood_ssthresh,
	.cong_control = (void *)cca_westwood_cong_control,
	.pkts_acked   = (void *)cca_westwood_pkts_acked,
	.in_ack_event = (void *)cca_westwood_in_ack_event,
	.cwnd_event   = (void *)cca_westwood_cwnd_event,
	.undo_cwnd    = (void *)cca_westwood_undo_cwnd,
	.name         = CCA_NAME("cca_westwood"),
};

#else /* CCA_PAPER */

/*
 * The paper variant, written from
 *   S. Mascolo, C. Casetti, M. Gerla, M. Y. Sanadidi, R. Wang, "TCP Westwood:
 *   Bandwidth Estimation for Enhanced Transport over Wireless Links", ACM MobiCom 2001
 *   (faster recovery: ssthresh from the bandwidth estimate), and
 *   L. A. Grieco, S. Mascolo, "Performance evaluation and comparison of Westwood+,
 *   New Reno, and Vegas TCP congestion control", ACM CCR 34(2), 2004
 *   (Westwood+: one bandwidth sample per RTT, low-pass filtered).
 *
 * Bandwidth estimate BWE: once per RTT, sample = data delivered in the interval
 * / interval (delivered counts SACKed and cumulatively ACKed segments, so
 * duplicate ACKs count as the paper asks); BWE <- 7/8 BWE + 1/8 sample.
 * On congestion (3 dupACKs or timeout):  ssthresh = max(BWE * RTTmin / MSS, 2)
 * — the window the path carried without a queue — capped at the window before the
 * loss (a loss never raises the window; the papers' "if cwnd > ssthresh then
 * cwnd = ssthresh" after 3 DUPACKs keeps cwnd at most where it was), and PRR then
 * brings cwnd to ssthresh (fast recovery, cca_common.h's cong_control) or the kernel
 * to 1 (timeout). Growth: Reno's.
 * The sampling interval is max(RTT, 10 ms): on sub-millisecond paths one
 * sample per RTT would feed the filter with a handful of segments.
 */

#define WW_MIN_INTERVAL_US 10000u

struct westwood {
	u64 bwe;             /* bytes per second, 0 = no estimate yet */
	u64 win_start_us;
	u32 delivered_start;
	u32 rtt_min_us;      /* 0 = no sample yet */
};
CCA_PRIV_CHECK(struct westwood);

SEC("struct_ops")
void BPF_PROG(cca_westwood_init, struct sock *sk)
{
	struct westwood *ca = inet_csk_ca(sk);

	ca->bwe = 0;
	ca->win_start_us = cca_now_us();
	ca->delivered_start = tcp_sk(sk)->delivered;
	ca->rtt_min_us = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_westwood_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct westwood *ca = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;

	if (rtt > 0 && (!ca->rtt_min_us || (u32)rtt < ca->rtt_min_us))
		ca->rtt_min_us = rtt;
}

SEC("struct_ops")
void BPF_PROG(cca_westwood_in_ack_event, struct sock *sk, u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *ca = inet_csk_ca(sk);
	u64 now = cca_now_us();
	u64 dt = now - ca->win_start_us;
	u32 interval = cca_max(cca_srtt_us(tp), WW_MIN_INTERVAL_US);
	u64 sample;

	if (dt < interval)
		return;
	sample = (u64)(tp->delivered - ca->delivered_start) * tp->mss_cache * CCA_USEC_PER_SEC / dt;
	if (!ca->bwe)
		ca->bwe = sample;
	else
		ca->bwe = ca->bwe - (ca->bwe >> 3) + (sample >> 3);
	ca->win_start_us = now;
	ca->delivered_start = tp->delivered;
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 westwood_ssthresh_for(struct sock *sk, u32 cwnd)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct westwood *ca = inet_csk_ca(sk);
	u64 w;

	if (!ca->bwe || !ca->rtt_min_us)
		return cca_rfc5681_ssthresh(cwnd);   /* nothing measured yet: Reno */
	w = ca->bwe * ca->rtt_min_us / CCA_USEC_PER_SEC / cca_max(tp->mss_cache, 1);
	w = cca_min64(w, cwnd);
	return (u32)cca_max64(w, 2);
}

CCA_SSTHRESH_OP(cca_westwood, westwood_ssthresh_for)

/* growth rule, run by cca_westwood_cong_control (cca_common.h) */
static __always_inline void westwood_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!cca_grow_prologue(sk, &acked))
		return;
	cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

CCA_UNDO_PRIOR_OP(cca_westwood)

CCA_STATE_GUARD_OP(cca_westwood, westwood_ssthresh_for)

CCA_CONG_CONTROL_OP(cca_westwood, westwood_ssthresh_for, westwood_cong_avoid)

CCA_OPS(cca_westwood) = {
	.set_state    = (void *)cca_westwood_state_guard,
	.init         = (void *)cca_westwood_init,
	.ssthresh     = (void *)cca_westwood_ssthresh,
	.cong_control   = (void *)cca_westwood_cong_control,
	.pkts_acked   = (void *)cca_westwood_pkts_acked,
	.in_ack_event = (void *)cca_westwood_in_ack_event,
	.undo_cwnd    = (void *)cca_westwood_undo_cwnd,
	.name         = CCA_NAME("cca_westwood"),
};

#endif /* CCA_PAPER */
