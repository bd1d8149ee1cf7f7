// SPDX-License-Identifier: GPL-2.0
/*
 * cca_yeah — YeAH-TCP (Yet Another Highspeed TCP), written from
 *   A. Baiocchi, A. P. Castellani, F. Vacirca, "YeAH-TCP: Yet Another Highspeed TCP",
 *   PFLDnet 2007 (§2: fast and slow modes, precautionary decongestion, loss reaction).
 *
 * Once per RTT, with RTT_base the smallest RTT seen and RTT_min the smallest of
 * the last round (§2):
 *   Q = (RTT_min - RTT_base) * cwnd / RTT_min     packets queued by this flow
 *   L = (RTT_min - RTT_base) / RTT_base           network congestion level
 * Fast mode when Q < Q_max and L <= 1/phi, i.e. queueing delay <= RTT_base / phi:
 * Scalable TCP increase (a = 0.01 per ACK, never slower than Reno). Slow mode
 * otherwise: Reno increase, and — unless the flow competes with Reno flows —
 * precautionary decongestion when Q > Q_max: cwnd -= Q (at most cwnd / 2),
 * ssthresh = cwnd.
 * Competition with Reno (§2 asks the flow to detect it and then stop decongesting, or
 * Reno flows would take the whole buffer): a decongestion by R segments shortens a lone
 * flow's queueing delay by R / rate = R * RTT_min / cwnd; when other flows share the
 * queue it shortens it only by YeAH's share of that. Two rounds after each
 * decongestion (the first round still carries packets sent before it) the drop
 * measured is compared with the drop expected: less than half of it is a failed
 * decongestion, and two failed ones in a row mean the queue belongs to others: the
 * flow competes with Reno, decongests no more and halves at a loss. Fast mode (a
 * drained queue) clears that. This replaces the paper's count of rho = 16 slow-mode
 * rounds, which a lone flow also reaches: in slow mode its own queue rises at Reno's
 * one segment per round from RTT_base/phi to Q_max, tens of rounds with no competitor.
 * Loss: competing with Reno -> cwnd / 2; otherwise cwnd - max(cwnd / 8, Q)
 * (never below cwnd / 2).
 * Q_max = 80 packets, phi = 8.
 */
#include "cca_common.h"

#define YEAH_QMAX   80u
#define YEAH_PHI    8u
#define YEAH_FAILS  2u     /* failed decongestions in a row that mean Reno */
#define YEAH_STCP_INV_A 100u

struct yeah {
	u32 base_rtt;
	u32 round_min_rtt;
	u32 round_cnt;
	u32 round_end;
	u32 queue;        /* Q of the last round, packets */
	u32 dec_qdelay;   /* queueing delay when the last decongestion was made, us */
	u32 dec_expect;   /* the drop of queueing delay it should bring if alone, us */
	u8  dec_wait;     /* rounds until the last decongestion is judged (0: none) */
	u8  dec_fails;    /* failed decongestions in a row */
	u8  fast;         /* fast mode */
	u8  reno_peer;    /* competing with Reno-like flows */
};
CCA_PRIV_CHECK(struct yeah);

static __always_inline void yeah_round_reset(struct yeah *ca, const struct tcp_sock *tp)
{
	ca->round_end = tp->snd_nxt;
	ca->round_min_rtt = 0xffffffff;
	ca->round_cnt = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_yeah_init, struct sock *sk)
{
	struct yeah *ca = inet_csk_ca(sk);

	ca->base_rtt = 0;
	ca->queue = 0;
	ca->dec_qdelay = 0;
	ca->dec_expect = 0;
	ca->dec_wait = 0;
	ca->dec_fails = 0;
	ca->fast = 1;
	ca->reno_peer = 0;
	yeah_round_reset(ca, tcp_sk(sk));
}

SEC("struct_ops")
void BPF_PROG(cca_yeah_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct yeah *ca = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;

	if (rtt <= 0)
		return;
	if (!ca->base_rtt || (u32)rtt < ca->base_rtt)
		ca->base_rtt = rtt;
	if ((u32)rtt < ca->round_min_rtt)
		ca->round_min_rtt = rtt;
	ca->round_cnt++;
}

static __always_inline void yeah_round_end(struct yeah *ca, struct tcp_sock *tp)
{
	u32 rtt, qdelay, cwnd = tp->snd_cwnd;

	if (!ca->round_cnt || !ca->base_rtt)
		return;
	rtt = cca_max(ca->round_min_rtt, ca->base_rtt);
	qdelay = rtt - ca->base_rtt;
	ca->queue = (u32)((u64)qdelay * cwnd / rtt);
	/* L <= 1/phi  <=>  phi * (RTT_min - RTT_base) <= RTT_base */
	ca->fast = ca->queue < YEAH_QMAX && (u64)YEAH_PHI * qdelay <= ca->base_rtt;
	if (ca->dec_wait && !--ca->dec_wait) {
		/* judge the last decongestion: did the queueing delay drop as it would alone? */
		u32 drop = ca->dec_qdelay > qdelay ? ca->dec_qdelay - qdelay : 0;

		if (2 * (u64)drop < ca->dec_expect) {
			if (++ca->dec_fails >= YEAH_FAILS)
				ca->reno_peer = 1;
		} else {
			ca->dec_fails = 0;
		}
	}
	if (ca->fast) {
		ca->dec_fails = 0;
		ca->reno_peer = 0;
		return;
	}
	if (!ca->reno_peer && !ca->dec_wait && ca->queue > YEAH_QMAX && !cca_in_slow_start(tp)) {
		/* precautionary decongestion */
		u32 red = cca_min(ca->queue, cwnd >> 1);

		cca_set_cwnd(tp, cca_max(cwnd - red, 2));
		tp->snd_ssthresh = tp->snd_cwnd;
		ca->dec_qdelay = qdelay;
		ca->dec_expect = (u32)((u64)red * rtt / cca_max(cwnd, 1));
		ca->dec_wait = 2;
	}
}

/* growth rule, run by cca_yeah_cong_control (cca_common.h) */
static __always_inline void yeah_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct yeah *ca = inet_csk_ca(sk);

	if (!cca_seq_before(tp->snd_una, ca->round_end)) {
		yeah_round_end(ca, tp);
		yeah_round_reset(ca, tp);
	}
	if (!cca_grow_prologue(sk, &acked))
		return;
	if (ca->fast)
		cca_cong_avoid_ai(tp, cca_min(tp->snd_cwnd, YEAH_STCP_INV_A), acked);
	else
		cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 yeah_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct yeah *ca = inet_csk_ca(sk);
	u32 red;

	if (ca->reno_peer)
		return cca_rfc5681_ssthresh(cwnd);
	red = cca_max(cwnd >> 3, ca->queue);
	red = cca_min(red, cwnd >> 1);
	return cca_max(cwnd - red, 2);
}

CCA_SSTHRESH_OP(cca_yeah, yeah_ssthresh_for)

CCA_UNDO_PRIOR_OP(cca_yeah)

CCA_STATE_GUARD_OP(cca_yeah, yeah_ssthresh_for)

CCA_CONG_CONTROL_OP(cca_yeah, yeah_ssthresh_for, yeah_cong_avoid)

CCA_OPS(cca_yeah) = {
	.set_state  = (void *)cca_yeah_state_guard,
	.init       = (void *)cca_yeah_init,
	.ssthresh   = (void *)cca_yeah_ssthresh,
	.cong_control = (void *)cca_yeah_cong_control,
	.pkts_acked = (void *)cca_yeah_pkts_acked,
	.undo_cwnd  = (void *)cca_yeah_undo_cwnd,
	.name       = "cca_yeah",
};
