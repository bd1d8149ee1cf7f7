// SPDX-License-Identifier: GPL-2.0
/*
 * cca_lp — TCP-LP (Low Priority), written from
 *   A. Kuzmanovic, E. W. Knightly, "TCP-LP: A Distributed Algorithm for Low Priority
 *   Data Transfer", IEEE INFOCOM 2003 (§III-A early congestion indication,
 *   §III-B reaction: inference time-out, cwnd = 1 on a second indication).
 *
 * TCP-LP yields to ordinary TCP: it backs off on a *delay* signal that fires
 * before the queue overflows.
 *   delay d: a smoothed estimate, sd <- 7/8 sd + 1/8 d
 *   early congestion indication (ECI):  sd > d_min + delta (d_max - d_min), delta = 0.15
 *   first ECI: cwnd <- cwnd / 2, start the inference time-out (itt) during which
 *     cwnd does not grow; a second ECI within itt: cwnd <- 1;
 *   itt expired without ECI: Reno's additive increase resumes.
 * The paper measures one-way delay from TCP timestamps; ccarena uses the RTT
 * sample of each ACK instead (same clock at both ends is not assumed, and on an
 * emulated path the reverse direction carries no queue, so RTT - RTT_min is the
 * forward queueing delay). itt = 3 smoothed RTTs; at most one ECI per RTT;
 * ECIs are only believed once d_max - d_min exceeds 1 ms (timer noise).
 * The second-ECI window is 2 segments, not the paper's 1: with one segment in
 * flight the receiver holds every ACK for its delayed-ACK timer (40 ms on Linux),
 * which both throttles the flow and reads as a 40 ms queue — the flow would never
 * leave cwnd = 1. For the same reason RTT samples taken with fewer than 2
 * segments outstanding are not used. Loss: standard halving.
 * ECIs are believed only after the first loss: the threshold is a fraction of
 * d_max - d_min, and d_max means something only once the buffer has been full.
 * Before that, the range is made of the flow's own few-packet bursts, the
 * threshold sits below the delay of its own window, and the flow never leaves
 * cwnd = 2 (seen on a 20 Mbit/s, 20 ms path: 1 Mbit/s alone). So TCP-LP starts with
 * Reno's slow start until the first loss, as the paper's flows effectively do.
 */
#include "cca_common.h"

#define LP_DELTA_1024    154u     /* 0.15 */
#define LP_ITT_RTTS      3u
#define LP_MIN_RANGE_US  1000u
#define LP_MIN_CWND      2u

struct lp {
	u64 itt_end_us;     /* 0: not in an inference time-out */
	u32 calibrated;     /* a loss was seen: d_max reflects a full buffer */
	u64 last_eci_us;
	u32 d_min;
	u32 d_max;
	u32 sd;             /* smoothed delay, us */
};
CCA_PRIV_CHECK(struct lp);

SEC("struct_ops")
void BPF_PROG(cca_lp_init, struct sock *sk)
{
	struct lp *ca = inet_csk_ca(sk);

	ca->itt_end_us = 0;
	ca->calibrated = 0;
	ca->last_eci_us = 0;
	ca->d_min = 0;
	ca->d_max = 0;
	ca->sd = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_lp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct lp *ca = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;
	u64 now;
	u32 srtt, thresh;

	if (rtt <= 0 || sample->pkts_acked + tp->packets_out < 2)
		return;
	if (!ca->d_min || (u32)rtt < ca->d_min)
		ca->d_min = rtt;
	if ((u32)rtt > ca->d_max)
		ca->d_max = rtt;
	ca->sd = ca->sd ? ca->sd - (ca->sd >> 3) + ((u32)rtt >> 3) : (u32)rtt;

	now = cca_now_us();
	if (ca->itt_end_us && now >= ca->itt_end_us)
		ca->itt_end_us = 0;
	if (!ca->calibrated || ca->d_max - ca->d_min < LP_MIN_RANGE_US)
		return;
	thresh = ca->d_min + (u32)((u64)(ca->d_max - ca->d_min) * LP_DELTA_1024 >> 10);
	if (ca->sd <= thresh)
		return;
	srtt = cca_max(cca_srtt_us(tp), 1);
	if (now - ca->last_eci_us < srtt)
		return;                       /* one indication per RTT */
	ca->last_eci_us = now;
	if (ca->itt_end_us) {
		/* second indication inside the inference time-out */
		cca_set_cwnd(tp, LP_MIN_CWND);
	} else {
		cca_set_cwnd(tp, cca_max(tp->snd_cwnd >> 1, LP_MIN_CWND));
	}
	tp->snd_ssthresh = cca_max(tp->snd_cwnd, 2);
	ca->itt_end_us = now + (u64)LP_ITT_RTTS * srtt;
}

/* growth rule, run by cca_lp_cong_control (cca_common.h) */
static __always_inline void lp_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct lp *ca = inet_csk_ca(sk);

	if (ca->itt_end_us)
		return;                       /* no growth during the inference time-out */
	if (!cca_grow_prologue(sk, &acked))
		return;
	cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 lp_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct lp *ca = inet_csk_ca(sk);

	ca->calibrated = 1;
	return cca_rfc5681_ssthresh(cwnd);
}

CCA_SSTHRESH_OP(cca_lp, lp_ssthresh_for)

CCA_UNDO_PRIOR_OP(cca_lp)

CCA_STATE_GUARD_OP(cca_lp, lp_ssthresh_for)

CCA_CONG_CONTROL_OP(cca_lp, lp_ssthresh_for, lp_cong_avoid)

CCA_OPS(cca_lp) = {
	.set_state  = (void *)cca_lp_state_guard,
	.init       = (void *)cca_lp_init,
	.ssthresh   = (void *)cca_lp_ssthresh,
	.cong_control = (void *)cca_lp_cong_control,
	.pkts_acked = (void *)cca_lp_pkts_acked,
	.undo_cwnd  = (void *)cca_lp_undo_cwnd,
	.name       = "cca_lp",
};
