// SPDX-License-Identifier: GPL-2.0
/*
 * cca_veno — TCP Veno, written from
 *   C. P. Fu, S. C. Liew, "TCP Veno: TCP Enhancement for Transmission over Wireless
 *   Access Networks", IEEE JSAC 21(2), 2003 (§II-A backlog estimate, §II-B
 *   multiplicative decrease, §II-C additive increase).
 *
 * Backlog at the bottleneck, once per RTT (Vegas' estimate):
 *   N = (cwnd / BaseRTT - cwnd / RTT) * BaseRTT = cwnd (RTT - BaseRTT) / RTT
 * with BaseRTT the smallest RTT seen and RTT the smallest sample of the last round
 * in the Open state (congestion avoidance, where the paper measures it): a round in
 * CWR/Recovery/Loss is not a backlog sample — the sender sends little, the queue
 * drains and N would read ~0, so a loss right after a recovery (the window has refilled
 * the queue) would be taken for a random one.
 * Loss with N < beta (= 3 segments): probably a random (wireless) loss, not
 * congestion -> cwnd * 4/5; otherwise -> cwnd / 2.
 * Congestion avoidance: N < beta -> Reno (+1 per RTT); otherwise +1 every
 * other RTT (the link is fully used: stay there longer).
 */
#include "cca_common.h"

#define VENO_BETA 3u
#define VENO_FP   16u

struct veno {
	u32 base_rtt;
	u32 round_min_rtt;
	u32 round_cnt;
	u32 round_end;
	u32 backlog;     /* N of the last round, 1/16 segments */
	u8  congested;   /* N >= beta */
};
CCA_PRIV_CHECK(struct veno);

SEC("struct_ops")
void BPF_PROG(cca_veno_init, struct sock *sk)
{
	struct veno *ca = inet_csk_ca(sk);

	ca->base_rtt = 0;
	ca->round_min_rtt = 0xffffffff;
	ca->round_cnt = 0;
	ca->round_end = tcp_sk(sk)->snd_nxt;
	ca->backlog = 0;
	ca->congested = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_veno_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct veno *ca = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;

	if (rtt > 0) {
		if (!ca->base_rtt || (u32)rtt < ca->base_rtt)
			ca->base_rtt = rtt;
		if ((u32)rtt < ca->round_min_rtt)
			ca->round_min_rtt = rtt;
		ca->round_cnt++;
	}
	if (cca_seq_before(tp->snd_una, ca->round_end))
		return;
	/* a round ended; judged only in Open */
	if (ca->round_cnt && ca->base_rtt && cca_ca_state(sk) == TCP_CA_Open) {
		u32 r = cca_max(ca->round_min_rtt, ca->base_rtt);

		ca->backlog = (u32)((u64)tp->snd_cwnd * (r - ca->base_rtt) * VENO_FP / r);
		ca->congested = ca->backlog >= VENO_BETA * VENO_FP;
	}
	ca->round_end = tp->snd_nxt;
	ca->round_min_rtt = 0xffffffff;
	ca->round_cnt = 0;
}

/* growth rule, run by cca_veno_cong_control (cca_common.h) */
static __always_inline void veno_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct veno *ca = inet_csk_ca(sk);

	if (!cca_grow_prologue(sk, &acked))
		return;
	/* +1 per RTT, or per two RTTs when the backlog says the link is full */
	cca_cong_avoid_ai(tp, ca->congested ? 2 * tp->snd_cwnd : tp->snd_cwnd, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 veno_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct veno *ca = inet_csk_ca(sk);

	if (!ca->congested)
		return cca_max((u32)((u64)cwnd * 4 / 5), 2);   /* random loss */
	return cca_rfc5681_ssthresh(cwnd);
}

CCA_SSTHRESH_OP(cca_veno, veno_ssthresh_for)

CCA_UNDO_PRIOR_OP(cca_veno)

CCA_STATE_GUARD_OP(cca_veno, veno_ssthresh_for)

CCA_CONG_CONTROL_OP(cca_veno, veno_ssthresh_for, veno_cong_avoid)

CCA_OPS(cca_veno) = {
	.set_state  = (void *)cca_veno_state_guard,
	.init       = (void *)cca_veno_init,
	.ssthresh   = (void *)cca_veno_ssthresh,
	.cong_control = (void *)cca_veno_cong_control,
	.pkts_acked = (void *)cca_veno_pkts_acked,
	.undo_cwnd  = (void *)cca_veno_undo_cwnd,
	.name       = "cca_veno",
};
