// SPDX-License-Identifier: GPL-2.0
/*
 * cca_vegas — TCP Vegas congestion avoidance, written from
 *   L. S. Brakmo, L. L. Peterson, "TCP Vegas: End to End Congestion Avoidance on
 *   a Global Internet", IEEE JSAC 13(8), 1995 (§3.2 congestion avoidance,
 *   §3.3 modified slow start).
 *
 * Once per RTT:
 *   BaseRTT  = smallest RTT seen on the connection
 *   RTT      = smallest RTT sample of the last round (filters delayed ACKs)
 *   Diff     = (Expected - Actual) * BaseRTT = cwnd * (RTT - BaseRTT) / RTT   [segments]
 *   Diff < alpha  -> cwnd + 1;   Diff > beta -> cwnd - 1;   else hold.
 * Slow start doubles cwnd only every other RTT and ends when Diff > gamma.
 * Diff is compared with alpha, beta, gamma exactly, without a division:
 *   Diff > k  <=>  cwnd * (RTT - BaseRTT) > k * RTT   (u64: no overflow for any real window).
 * alpha = 1, beta = 3, gamma = 1 segments (the paper's values).
 * With fewer than 2 RTT samples in a round Vegas cannot judge, and does Reno's
 * additive step for the ACK that ends the round instead (as Linux's tcp_vegas, which
 * needs 3 samples). On loss: Reno's halving (RFC 5681); the paper's
 * changes to retransmission timing are the kernel's business, not ours.
 */
#include "cca_common.h"

#define VEGAS_ALPHA 1u
#define VEGAS_BETA  3u
#define VEGAS_GAMMA 1u

struct vegas {
	u32 base_rtt;      /* us, 0 = none yet */
	u32 round_min_rtt; /* us, this round */
	u32 round_cnt;     /* RTT samples this round */
	u32 round_end;     /* snd_nxt at the round start */
	u8  ss_grow;       /* slow start grows in this round */
};
CCA_PRIV_CHECK(struct vegas);

static __always_inline void vegas_new_round(struct vegas *v, const struct tcp_sock *tp)
{
	v->round_end = tp->snd_nxt;
	v->round_min_rtt = 0xffffffff;
	v->round_cnt = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_vegas_init, struct sock *sk)
{
	struct vegas *v = inet_csk_ca(sk);

	v->base_rtt = 0;
	v->ss_grow = 1;
	vegas_new_round(v, tcp_sk(sk));
}

SEC("struct_ops")
void BPF_PROG(cca_vegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct vegas *v = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;

	if (rtt <= 0)
		return;
	if (!v->base_rtt || (u32)rtt < v->base_rtt)
		v->base_rtt = rtt;
	if ((u32)rtt < v->round_min_rtt)
		v->round_min_rtt = rtt;
	v->round_cnt++;
}

/* growth rule, run by cca_vegas_cong_control (cca_common.h) */
static __always_inline void vegas_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct vegas *v = inet_csk_ca(sk);
	u32 cwnd = tp->snd_cwnd;
	u32 rtt;
	u64 excess;        /* Diff * RTT, segment-microseconds */

	if (cca_seq_before(tp->snd_una, v->round_end)) {
		/* inside a round: only slow start acts per ACK (in its growing rounds) */
		if (cca_in_slow_start(tp) && v->ss_grow && cca_is_cwnd_limited(sk))
			cca_slow_start(tp, acked);
		return;
	}

	/* a round ended: judge it */
	if (v->round_cnt < 2 || !v->base_rtt) {
		vegas_new_round(v, tp);
		if (!cca_grow_prologue(sk, &acked))
			return;
		cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		return;
	}
	rtt = cca_max(v->round_min_rtt, v->base_rtt);
	excess = (u64)cwnd * (rtt - v->base_rtt);
	vegas_new_round(v, tp);

	if (cca_in_slow_start(tp)) {
		if (excess > (u64)VEGAS_GAMMA * rtt) {
			/* §3.3: leave slow start; bring cwnd down to what the path holds
			 * (the Actual rate times BaseRTT, cwnd BaseRTT / RTT, plus the gamma
			 * allowance: Linux's tcp_vegas adds one segment against truncation) */
			u32 fit = (u32)((u64)cwnd * v->base_rtt / rtt) + VEGAS_GAMMA;

			cca_set_cwnd(tp, cca_max(cca_min(cwnd, fit), 2));
			tp->snd_ssthresh = tp->snd_cwnd;
		} else {
			v->ss_grow = !v->ss_grow;
		}
		return;
	}
	if (excess < (u64)VEGAS_ALPHA * rtt) {
		if (cca_is_cwnd_limited(sk))
			cca_set_cwnd(tp, cwnd + 1);
	} else if (excess > (u64)VEGAS_BETA * rtt) {
		cca_set_cwnd(tp, cca_max(cwnd - 1, 2));
		tp->snd_ssthresh = cca_min(tp->snd_ssthresh, tp->snd_cwnd);
	}
	tp->snd_cwnd_cnt = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_vegas_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_CWND_RESTART || ev == CA_EVENT_TX_START)
		vegas_new_round((struct vegas *)inet_csk_ca(sk), tcp_sk(sk));
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 vegas_ssthresh_for(struct sock *sk, u32 cwnd)
{
	return cca_rfc5681_ssthresh(cwnd);
}

CCA_SSTHRESH_OP(cca_vegas, vegas_ssthresh_for)

CCA_UNDO_PRIOR_OP(cca_vegas)

CCA_STATE_GUARD_OP(cca_vegas, vegas_ssthresh_for)

CCA_CONG_CONTROL_OP(cca_vegas, vegas_ssthresh_for, vegas_cong_avoid)

CCA_OPS(cca_vegas) = {
	.set_state    = (void *)cca_vegas_state_guard,
	.init         = (void *)cca_vegas_init,
	.ssthresh     = (void *)cca_vegas_ssthresh,
	.cong_control   = (void *)cca_vegas_cong_control,
	.pkts_acked   = (void *)cca_vegas_pkts_acked,
	.cwnd_event   = (void *)cca_vegas_cwnd_event,
	.undo_cwnd    = (void *)cca_vegas_undo_cwnd,
	.name         = "cca_vegas",
};
