// SPDX-License-Identifier: GPL-2.0
/*
 * cca_westwood — TCP Westwood+, written from
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
#include "cca_common.h"

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
	.name         = "cca_westwood",
};
