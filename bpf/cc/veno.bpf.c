// SPDX-License-Identifier: GPL-2.0
/*
 * cca_veno — TCP Veno (C. P. Fu, S. C. Liew, "TCP Veno: TCP Enhancement for Transmission
 * over Wireless Access Networks", IEEE JSAC 21(2), 2003).
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_veno.c). Its rules:
 *   - RTT samples (+1 us) feed BaseRTT (the smallest since init or the last restart after
 *     idle or start of transmission) and the smallest sample since the last ACK that ran
 *     Veno's growth (so N comes from the latest ACK's own sample, not a round's), and a
 *     count of samples (16 bits, never reset) that must exceed 2 before Veno acts;
 *   - per ACK in Open, when cwnd-limited: diff = 2 cwnd - 2 cwnd BaseRTT / RTT, i.e. the
 *     backlog N in half segments (truncated), kept for the loss response;
 *       slow start first (the segments left over continue below);
 *       N < beta (3): Reno's additive increase;
 *       otherwise one segment per two windows' worth of ACKs: when snd_cwnd_cnt reaches
 *       cwnd it either adds one (and skips the next time) or only restarts the count;
 *     cwnd kept in [2, clamp]; outside Open, Reno's growth;
 *   - loss: N < beta (from the last ACK that computed it): max(cwnd 4/5, 2), else
 *     Reno's halving; undo: the window before the reduction.
 *
 * CCA_PAPER (cca_veno_p): the paper (below).
 */
#include "cca_common.h"

#ifndef CCA_PAPER

#define VENO_BETA2  6u           /* beta = 3 segments, in half segments */
#define VENO_NO_RTT 0x7fffffffu

struct veno {
	u8  on;          /* Veno in Open */
	u16 samples;     /* RTT samples counted (wraps) */
	u32 min_rtt;     /* the smallest since the last growth step, us + 1 */
	u32 base_rtt;    /* us + 1 */
	u32 inc;         /* the next full count adds a segment */
	u32 diff;        /* N, half segments */
};
CCA_PRIV_CHECK(struct veno);

static __always_inline void veno_reset(struct veno *ca)
{
	ca->base_rtt = VENO_NO_RTT;
	ca->inc = 1;
	ca->on = 1;
	ca->min_rtt = VENO_NO_RTT;
}

SEC("struct_ops")
void BPF_PROG(cca_veno_init, struct sock *sk)
{
	veno_reset(inet_csk_ca(sk));
}

SEC("struct_ops")
void BPF_PROG(cca_veno_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct veno *ca = inet_csk_ca(sk);
	u32 rtt;

	if (sample->rtt_us < 0)
		return;
	rtt = (u32)sample->rtt_us + 1;
	if (rtt < ca->base_rtt)
		ca->base_rtt = rtt;
	if (rtt < ca->min_rtt)
		ca->min_rtt = rtt;
	ca->samples++;
}

SEC("struct_ops")
void BPF_PROG(cca_veno_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_CWND_RESTART || ev == CA_EVENT_TX_START)
		veno_reset(inet_csk_ca(sk));
}

/* growth rule, run by cca_veno_cong_control (cca_common.h) */
static __always_inline void veno_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct veno *ca = inet_csk_ca(sk);

	if (!ca->on) {
		if (cca_grow_prologue(sk, &acked))
			cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		return;
	}
	if (!cca_is_cwnd_limited(sk))
		return;
	if (ca->samples <= 2) {
		if (cca_grow_prologue(sk, &acked))
			cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
	} else {
		u32 cwnd = tp->snd_cwnd;
		u64 expected = ((u64)cwnd * ca->base_rtt << 1) / ca->min_rtt;

		ca->diff = (cwnd << 1) - (u32)expected;
		if (cca_in_slow_start(tp))
			acked = cca_slow_start(tp, acked);
		if (acked) {
			if (ca->diff < VENO_BETA2) {
				cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
			} else if (tp->snd_cwnd_cnt >= tp->snd_cwnd) {
				if (ca->inc && tp->snd_cwnd < tp->snd_cwnd_clamp) {
					tp->snd_cwnd++;
					ca->inc = 0;
				} else {
					ca->inc = 1;
				}
				tp->snd_cwnd_cnt = 0;
			} else {
				tp->snd_cwnd_cnt += acked;
			}
		}
		if (tp->snd_cwnd < 2)
			tp->snd_cwnd = 2;
		else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
			tp->snd_cwnd = tp->snd_cwnd_clamp;
	}
	ca->min_rtt = VENO_NO_RTT;
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 veno_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct veno *ca = inet_csk_ca(sk);

	if (ca->diff < VENO_BETA2)
		return cca_max(cwnd * 4 / 5, 2);
	return cca_rfc5681_ssthresh(cwnd);
}

CCA_SSTHRESH_OP(cca_veno, veno_ssthresh_for)

SEC("struct_ops")
void BPF_PROG(cca_veno_set_state, struct sock *sk, u8 new_state)
{
	struct veno *ca = inet_csk_ca(sk);

	CCA_STATE_GUARD(sk, new_state, veno_ssthresh_for);
	if (new_state == TCP_CA_Open) {
		ca->on = 1;
		ca->min_rtt = VENO_NO_RTT;
	} else {
		ca->on = 0;
	}
}

CCA_UNDO_PRIOR_OP(cca_veno)

CCA_CONG_CONTROL_OP(cca_veno, veno_ssthresh_for, veno_cong_avoid)

CCA_OPS(cca_veno) = {
	.set_state  = (void *)cca_veno_set_state,
	.init       = (void *)cca_veno_init,
	.ssthresh   = (void *)cca_veno_ssthresh,
	.cong_control = (void *)cca_veno_cong_control,
	.pkts_acked = (void *)cca_veno_pkts_acked,
	.cwnd_event = (void *)cca_veno_cwnd_event,
	.undo_cwnd  = (void *)cca_veno_undo_cwnd,
	.name       = CCA_NAME("cca_veno"),
};

#else /* CCA_PAPER */

/*
 * The paper variant, written from
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
	.name       = CCA_NAME("cca_veno"),
};

#endif /* CCA_PAPER */
