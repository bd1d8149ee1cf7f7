// SPDX-License-Identifier: GPL-2.0
/*
 * cca_vegas — TCP Vegas (L. S. Brakmo, L. L. Peterson, "TCP Vegas: End to End Congestion
 * Avoidance on a Global Internet", IEEE JSAC 13(8), 1995).
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_vegas.c). Its RTT bookkeeping is
 * cca_vegas.h's (every sample + 1 us; BaseRTT forgotten at a restart after idle and at
 * the start of transmission; Vegas on in Open only, else Reno). Once per round (the first
 * ACK beyond the snd_nxt of the round's start), with at least 3 samples in the round and
 * RTT = the round's smallest:
 *   diff = cwnd (RTT - BaseRTT) / BaseRTT, truncated   (queued segments, normalised by
 *                                                       BaseRTT, not by RTT)
 *   slow start and diff > gamma (1): cwnd = min(cwnd, cwnd BaseRTT / RTT + 1),
 *                                    ssthresh = min(ssthresh, cwnd): leave slow start
 *   slow start otherwise:            slow start for this ACK (and every ACK of the round:
 *                                    growth every round, not every other)
 *   diff > beta (4):  cwnd - 1, ssthresh = min(ssthresh, cwnd)
 *   diff < alpha (2): cwnd + 1       (no cwnd-limited check on Vegas's own path)
 *   then cwnd within [2, clamp] and ssthresh = tcp_current_ssthresh (at least 3/4 cwnd);
 * with fewer samples, Reno's step for the ACK. Loss: Reno's halving. Undo: the window
 * before the reduction.
 *
 * CCA_PAPER (cca_vegas_p): the paper itself (below).
 */
#include "cca_common.h"

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 vegas_ssthresh_for(struct sock *sk, u32 cwnd)
{
	return cca_rfc5681_ssthresh(cwnd);
}

#ifndef CCA_PAPER

#include "cca_vegas.h"

#define VEGAS_ALPHA 2u
#define VEGAS_BETA  4u
#define VEGAS_GAMMA 1u

struct vegas {
	struct cca_vegas v;
};
CCA_PRIV_CHECK(struct vegas);

SEC("struct_ops")
void BPF_PROG(cca_vegas_init, struct sock *sk)
{
	struct vegas *ca = inet_csk_ca(sk);

	cca_vegas_reset(&ca->v, tcp_sk(sk));
}

SEC("struct_ops")
void BPF_PROG(cca_vegas_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct vegas *ca = inet_csk_ca(sk);

	cca_vegas_sample(&ca->v, sample->rtt_us);
}

SEC("struct_ops")
void BPF_PROG(cca_vegas_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct vegas *ca = inet_csk_ca(sk);

	cca_vegas_event(&ca->v, tcp_sk(sk), ev);
}

/* Vegas's judgement of the round that ended (at least 3 samples) */
static __always_inline void vegas_adjust(struct sock *sk, struct cca_vegas *v, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 cwnd = tp->snd_cwnd, rtt = v->min_rtt, base = v->base_rtt, diff;

	diff = cwnd * (rtt - base) / base;
	if (diff > VEGAS_GAMMA && cca_in_slow_start(tp)) {
		u32 fit = (u32)((u64)cwnd * base / rtt);

		tp->snd_cwnd = cca_min(cwnd, fit + 1);
		tp->snd_ssthresh = cca_min(tp->snd_ssthresh, tp->snd_cwnd);
	} else if (cca_in_slow_start(tp)) {
		cca_slow_start(tp, acked);
	} else if (diff > VEGAS_BETA) {
		tp->snd_cwnd = cwnd - 1;
		tp->snd_ssthresh = cca_min(tp->snd_ssthresh, tp->snd_cwnd);
	} else if (diff < VEGAS_ALPHA) {
		tp->snd_cwnd = cwnd + 1;
	}
	if (tp->snd_cwnd < 2)
		tp->snd_cwnd = 2;
	else if (tp->snd_cwnd > tp->snd_cwnd_clamp)
		tp->snd_cwnd = tp->snd_cwnd_clamp;
	tp->snd_ssthresh = cca_current_ssthresh(sk);
}

/* growth rule, run by cca_vegas_cong_control (cca_common.h) */
static __always_inline void vegas_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct vegas *ca = inet_csk_ca(sk);
	struct cca_vegas *v = &ca->v;

	if (!v->doing_now) {
		cca_reno_cong_avoid(sk, acked);
		return;
	}
	if (cca_seq_after(ack, v->beg_snd_nxt)) {
		v->beg_snd_nxt = tp->snd_nxt;
		if (v->cnt_rtt <= 2)
			cca_reno_cong_avoid(sk, acked);
		else
			vegas_adjust(sk, v, acked);
		cca_vegas_next_round(v);
	} else if (cca_in_slow_start(tp)) {
		cca_slow_start(tp, acked);
	}
}

SEC("struct_ops")
void BPF_PROG(cca_vegas_set_state, struct sock *sk, u8 new_state)
{
	struct vegas *ca = inet_csk_ca(sk);

	CCA_STATE_GUARD(sk, new_state, vegas_ssthresh_for);
	cca_vegas_state(&ca->v, tcp_sk(sk), new_state);
}

#else /* CCA_PAPER */

/*
 * The paper variant, written from
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

#endif /* CCA_PAPER */

CCA_SSTHRESH_OP(cca_vegas, vegas_ssthresh_for)

CCA_UNDO_PRIOR_OP(cca_vegas)

#ifdef CCA_PAPER
CCA_STATE_GUARD_OP(cca_vegas, vegas_ssthresh_for)
#endif

CCA_CONG_CONTROL_OP(cca_vegas, vegas_ssthresh_for, vegas_cong_avoid)

CCA_OPS(cca_vegas) = {
#ifdef CCA_PAPER
	.set_state    = (void *)cca_vegas_state_guard,
#else
	.set_state    = (void *)cca_vegas_set_state,
#endif
	.init         = (void *)cca_vegas_init,
	.ssthresh     = (void *)cca_vegas_ssthresh,
	.cong_control   = (void *)cca_vegas_cong_control,
	.pkts_acked   = (void *)cca_vegas_pkts_acked,
	.cwnd_event   = (void *)cca_vegas_cwnd_event,
	.undo_cwnd    = (void *)cca_vegas_undo_cwnd,
	.name         = CCA_NAME("cca_vegas"),
};
