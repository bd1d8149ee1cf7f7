// SPDX-License-Identifier: GPL-2.0
/*
 * cca_yeah — YeAH-TCP (Yet Another Highspeed TCP), written from
 *   A. Baiocchi, A. P. Castellani, F. Vacirca, "YeAH-TCP: Yet Another Highspeed TCP",
 *   PFLDnet 2007 (§2: fast and slow modes, precautionary decongestion, Reno
 *   detection, loss reaction).
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
 * Competition with Reno (§2): a flow that competes with greedy (Reno) flows cannot
 * drain the queue by decongesting, so it stays in slow mode; the paper counts the
 * consecutive rounds in slow mode, and rho = 16 of them mean a Reno peer: the flow
 * stops decongesting (it would only hand its share to the Reno flows) and halves at a
 * loss. Fast mode (the queue drained) resets the count.
 * Loss: competing with Reno -> cwnd / 2; otherwise cwnd - max(cwnd / 8, Q)
 * (never below cwnd / 2).
 * Q_max = 80 packets, phi = 8, rho = 16.
 *
 * One deviation from the paper, and why: the count of slow-mode rounds starts at a
 * reduction that would drain the flow's queue were it alone — a precautionary
 * decongestion or a loss cut after which the Q - red packets left would wait at most
 * RTT_base / phi at the flow's rate cwnd / RTT (fast mode) — not at the flow's entry
 * into slow mode. Alone, the next rounds are then in fast mode and the count ends
 * there; when Reno flows keep the queue full, the flow stays in slow mode and rho
 * rounds later it is Reno-friendly. Counted from the entry into slow mode, a lone flow's own
 * climb counts too: in slow mode its queue grows by one segment per round (Reno's
 * increase) from BDP/phi to Q_max or the buffer, tens of rounds (60 at 100 Mbit/s,
 * 20 ms), so a lone flow whose buffer is smaller than Q_max reaches rho before every
 * loss and halves: at 100 Mbit/s, 20 ms, 60 packets of buffer it cuts 226 -> 113
 * (the link idles for part of each cycle) where the cut by Q gives 165, the BDP
 * (crates/cc-harness/tests/yeah.rs). What this rule cannot see: a Reno peer before
 * the flow's first reduction by Q.
 * The round after a decongestion still carries packets sent before it, so a flow
 * decongests at most every other round.
 */
#include "cca_common.h"

#define YEAH_QMAX   80u
#define YEAH_PHI    8u
#define YEAH_RHO    16u    /* slow-mode rounds after a reduction by Q that mean Reno */
#define YEAH_STCP_INV_A 100u

struct yeah {
	u32 base_rtt;
	u32 round_min_rtt;
	u32 round_cnt;
	u32 round_end;
	u32 queue;        /* Q of the last round, packets */
	u32 rtt;          /* RTT_min of the last round, us */
	u32 slow_rounds;  /* slow-mode rounds since a reduction by Q (counted when armed) */
	u8  armed;        /* a reduction by Q was made in this slow-mode period */
	u8  dec_wait;     /* rounds until the next decongestion is allowed */
	u8  fast;         /* fast mode */
};
CCA_PRIV_CHECK(struct yeah);

static __always_inline int yeah_reno(const struct yeah *ca)
{
	return ca->slow_rounds >= YEAH_RHO;
}

/*
 * Would cutting `red` of `cwnd` drain the queue of a flow that is alone, i.e. bring
 * it back to fast mode? Alone, the flow's rate is cwnd / RTT, so the Q - red packets
 * left queued wait (Q - red) RTT / cwnd: fast mode needs that <= RTT_base / phi.
 */
static __always_inline int yeah_drains(const struct yeah *ca, u32 cwnd, u32 red)
{
	u32 left = ca->queue > red ? ca->queue - red : 0;

	return (u64)YEAH_PHI * left * ca->rtt <= (u64)ca->base_rtt * cwnd;
}

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
	ca->rtt = 0;
	ca->slow_rounds = 0;
	ca->armed = 0;
	ca->dec_wait = 0;
	ca->fast = 1;
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
	ca->rtt = rtt;
	ca->queue = (u32)((u64)qdelay * cwnd / rtt);
	/* L <= 1/phi  <=>  phi * (RTT_min - RTT_base) <= RTT_base */
	ca->fast = ca->queue < YEAH_QMAX && (u64)YEAH_PHI * qdelay <= ca->base_rtt;
	if (ca->dec_wait)
		ca->dec_wait--;
	if (ca->fast) {
		ca->slow_rounds = 0;
		ca->armed = 0;
		return;
	}
	if (ca->armed && ca->slow_rounds < 0xffff)
		ca->slow_rounds++;
	if (!yeah_reno(ca) && !ca->dec_wait && ca->queue > YEAH_QMAX && !cca_in_slow_start(tp)) {
		/* precautionary decongestion */
		u32 red = cca_min(ca->queue, cwnd >> 1);

		cca_set_cwnd(tp, cca_max(cwnd - red, 2));
		tp->snd_ssthresh = tp->snd_cwnd;
		if (yeah_drains(ca, cwnd, red))
			ca->armed = 1;
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

	if (yeah_reno(ca))
		return cca_rfc5681_ssthresh(cwnd);
	red = cca_min(cca_max(cwnd >> 3, ca->queue), cwnd >> 1);
	if (yeah_drains(ca, cwnd, red))
		ca->armed = 1;
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
