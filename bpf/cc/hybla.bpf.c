// SPDX-License-Identifier: GPL-2.0
/*
 * cca_hybla — TCP Hybla, written from
 *   C. Caini, R. Firrincieli, "TCP Hybla: a TCP enhancement for heterogeneous
 *   networks", International Journal of Satellite Communications and Networking
 *   22(5), 2004 (§3, the modified increase rules).
 *
 * Normalised RTT  rho = RTT / RTT0,  RTT0 = 25 ms,  rho >= 1.
 * Per acked segment:  slow start          cwnd += 2^rho - 1
 *                     congestion avoidance cwnd += rho^2 / cwnd
 * so a long-RTT flow gains window per unit of *time* like a flow with RTT0.
 * Loss: standard halving. RTT here is the smallest RTT seen (the path's
 * propagation delay; queueing would otherwise feed back into rho). rho is capped
 * at 16 so that slow start stays finite (2^16 per ACK is already a burst).
 * Fixed point: rho in 1/1024; 2^frac from its Taylor series to the 4th term
 * (error < 0.2 %).
 */
#include "cca_common.h"

#define HYBLA_RTT0_US  25000u
#define HYBLA_RHO_MAX  (16u << 10)

struct hybla {
	struct cca_frac frac; /* congestion avoidance's credit (see cca_cong_avoid_frac):
			       * up to a window's worth, not slow-start growth */
	u32 ss_frac;      /* slow start's fraction carried between ACKs (1/1024 segment) */
	u32 rho;          /* 1/1024 */
	u32 min_rtt_us;   /* 0 = no sample yet */
};
CCA_PRIV_CHECK(struct hybla);

/* 2^(x / 1024) * 1024 for x < 17 * 1024 */
static __always_inline u64 hybla_pow2(u32 x)
{
	u64 f = x & 1023, i = x >> 10;
	/* ln2^k / k! * 1024: 709.8, 246.0, 56.8, 9.8 */
	u64 frac = 1024 + (710 * f >> 10) + (246 * f * f >> 20) + (57 * f * f * f >> 30) +
		   (10 * f * f * f * f >> 40);

	return frac << i;
}

SEC("struct_ops")
void BPF_PROG(cca_hybla_init, struct sock *sk)
{
	struct hybla *ca = inet_csk_ca(sk);

	ca->frac.acc = 0;
	ca->ss_frac = 0;
	ca->rho = 1024;
	ca->min_rtt_us = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_hybla_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct hybla *ca = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;

	if (rtt <= 0)
		return;
	if (!ca->min_rtt_us || (u32)rtt < ca->min_rtt_us) {
		u64 rho;

		ca->min_rtt_us = rtt;
		rho = ((u64)(u32)rtt << 10) / HYBLA_RTT0_US;
		ca->rho = (u32)cca_max64(1024, cca_min64(rho, HYBLA_RHO_MAX));
	}
}

/* growth rule, run by cca_hybla_cong_control (cca_common.h) */
static __always_inline void hybla_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hybla *ca = inet_csk_ca(sk);

	if (!cca_is_cwnd_limited(sk))
		return;
	if (cca_in_slow_start(tp)) {
		u64 inc = (hybla_pow2(ca->rho) - 1024) * acked + ca->ss_frac;
		u64 n = inc >> 10;
		u32 room = tp->snd_ssthresh - tp->snd_cwnd;

		ca->ss_frac = inc & 1023;
		if (n > room)
			n = room;
		cca_set_cwnd(tp, tp->snd_cwnd + (u32)cca_min64(n, 0xffff));
		return;
	}
	/* rho^2 segments per RTT */
	cca_cong_avoid_frac(tp, &ca->frac, (u64)ca->rho * ca->rho >> 10, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 hybla_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct hybla *ca = inet_csk_ca(sk);

	ca->frac.acc = 0;
	return cca_rfc5681_ssthresh(cwnd);
}

CCA_SSTHRESH_OP(cca_hybla, hybla_ssthresh_for)

CCA_UNDO_PRIOR_OP(cca_hybla)

CCA_STATE_GUARD_OP(cca_hybla, hybla_ssthresh_for)

CCA_CONG_CONTROL_OP(cca_hybla, hybla_ssthresh_for, hybla_cong_avoid)

CCA_OPS(cca_hybla) = {
	.set_state  = (void *)cca_hybla_state_guard,
	.init       = (void *)cca_hybla_init,
	.ssthresh   = (void *)cca_hybla_ssthresh,
	.cong_control = (void *)cca_hybla_cong_control,
	.pkts_acked = (void *)cca_hybla_pkts_acked,
	.undo_cwnd  = (void *)cca_hybla_undo_cwnd,
	.name       = "cca_hybla",
};
