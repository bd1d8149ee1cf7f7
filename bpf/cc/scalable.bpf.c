// SPDX-License-Identifier: GPL-2.0
/*
 * cca_scalable — Scalable TCP.
 *
 * Multiplicative increase, multiplicative decrease (T. Kelly, "Scalable TCP: Improving
 * Performance in Highspeed Wide Area Networks", ACM SIGCOMM CCR 33(2), 2003):
 *   each ACK in congestion avoidance:  cwnd <- cwnd + a        (a = 0.01)
 *   on congestion:                     cwnd <- cwnd - b * cwnd (b = 0.125)
 * so the time to recover from a reduction is a constant number of RTTs, independent of
 * the window. Both variants grow one segment per min(cwnd, 1/a = 100) acked segments
 * (never slower than Reno below 100 segments) after Reno's slow start.
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_scalable.c). The cut is the whole
 * segments of cwnd/8, rounded down: ssthresh = max(cwnd - floor(cwnd/8), 2), at every
 * window — none at all up to 7 segments. Undo: the window before the reduction.
 *
 * CCA_PAPER (cca_scalable_p): Kelly's legacy window. Up to lwnd = 16 segments the
 * algorithm is standard TCP, halving (RFC 5681 eq. 4); above it the cut is b·cwnd
 * rounded up to whole segments, cwnd - ceil(cwnd/8).
 */
#include "cca_common.h"

#define SCALABLE_INV_A  100u  /* 1 / a */
#define SCALABLE_B_SHIFT 3    /* b = 1/8 */
#define SCALABLE_LWND   16u   /* the paper's legacy window, segments */

/* growth rule, run by cca_scalable_cong_control (cca_common.h) */
static __always_inline void scalable_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!cca_grow_prologue(sk, &acked))
		return;
	/* one segment per min(cwnd, 1/a) acked segments */
	cca_cong_avoid_ai(tp, cca_min(tp->snd_cwnd, SCALABLE_INV_A), acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 scalable_ssthresh_for(struct sock *sk, u32 cwnd)
{
#ifdef CCA_PAPER
	if (cwnd <= SCALABLE_LWND)
		return cca_rfc5681_ssthresh(cwnd);
	/* cwnd - ceil(b * cwnd) */
	return cca_max(cwnd - ((cwnd + (1u << SCALABLE_B_SHIFT) - 1) >> SCALABLE_B_SHIFT), 2);
#else
	/* cwnd - floor(b * cwnd) */
	return cca_max(cwnd - (cwnd >> SCALABLE_B_SHIFT), 2);
#endif
}

CCA_SSTHRESH_OP(cca_scalable, scalable_ssthresh_for)

CCA_UNDO_PRIOR_OP(cca_scalable)

CCA_STATE_GUARD_OP(cca_scalable, scalable_ssthresh_for)

CCA_CONG_CONTROL_OP(cca_scalable, scalable_ssthresh_for, scalable_cong_avoid)

CCA_OPS(cca_scalable) = {
	.set_state  = (void *)cca_scalable_state_guard,
	.ssthresh   = (void *)cca_scalable_ssthresh,
	.cong_control = (void *)cca_scalable_cong_control,
	.undo_cwnd  = (void *)cca_scalable_undo_cwnd,
	.name       = CCA_NAME("cca_scalable"),
};
