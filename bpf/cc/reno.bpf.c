// SPDX-License-Identifier: GPL-2.0
/*
 * cca_reno — TCP Reno / NewReno congestion avoidance, written from
 *   M. Allman, V. Paxson, E. Blanton, "TCP Congestion Control", RFC 5681, 2009
 *   (§3.1 slow start and congestion avoidance, eq. (4) for ssthresh), with
 *   byte-counted (here: segment-counted) increase from RFC 3465 (L=∞ in
 *   slow start is not used: the kernel hands us the segments acked per ACK).
 * Loss recovery itself (fast retransmit, NewReno partial ACKs, RFC 6582, PRR
 * RFC 6937) is done by the kernel's TCP; an algorithm only chooses ssthresh and
 * how cwnd grows. Undo after a spurious reduction (RFC 3522 / 2883) restores
 * the cwnd the kernel remembered before the reduction (tp->prior_cwnd).
 *
 * This is the project's check on the BPF path: it should behave like the
 * kernel's built-in "reno".
 */
#include "cca_common.h"

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 reno_ssthresh_for(struct sock *sk, u32 cwnd)
{
	return cca_rfc5681_ssthresh(cwnd);
}

CCA_SSTHRESH_OP(cca_reno, reno_ssthresh_for)

/* growth rule, run by cca_reno_cong_control (cca_common.h) */
static __always_inline void reno_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!cca_grow_prologue(sk, &acked))
		return;
	cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

CCA_UNDO_PRIOR_OP(cca_reno)

CCA_STATE_GUARD_OP(cca_reno, reno_ssthresh_for)

CCA_CONG_CONTROL_OP(cca_reno, reno_ssthresh_for, reno_cong_avoid)

CCA_OPS(cca_reno) = {
	.set_state  = (void *)cca_reno_state_guard,
	.ssthresh   = (void *)cca_reno_ssthresh,
	.cong_control = (void *)cca_reno_cong_control,
	.undo_cwnd  = (void *)cca_reno_undo_cwnd,
	.name       = "cca_reno",
};
