// SPDX-License-Identifier: GPL-2.0
/*
 * cca_yeah — YeAH-TCP (A. Baiocchi, A. P. Castellani, F. Vacirca, "YeAH-TCP: Yet Another
 * Highspeed TCP", PFLDnet 2007).
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_yeah.c), on Linux's Vegas RTT
 * bookkeeping (cca_vegas.h: samples + 1 us, BaseRTT forgotten at a restart after idle or
 * the start of transmission, a round started at every entry into Open). Its rules:
 *   - per ACK, when cwnd-limited: slow start; the segments left over (if any) grow the
 *     window as Scalable TCP (one segment per min(cwnd, 100) acked) in fast mode, as
 *     Reno in slow mode;
 *   - on every ACK beyond the round's end (also in slow start, whatever the ACK grew),
 *     with more than 2 samples in the round and RTT the round's smallest:
 *       Q = cwnd (RTT - BaseRTT) / RTT (truncated)
 *       slow mode when Q > 80 or RTT - BaseRTT > BaseRTT / 8; then, if Q > 80 and cwnd is
 *       above reno_count, precautionary decongestion: cwnd -= min(Q, cwnd / 2), not below
 *       reno_count, and ssthresh = cwnd; reno_count = max(cwnd / 2, 2) if it was at most
 *       2, else one more; one more slow-mode round counted;
 *       fast mode otherwise: the slow-mode count cleared, and every 51st fast round
 *       reno_count back to 2;
 *     Q is kept for the loss response;
 *   - loss: after fewer than 16 slow-mode rounds in a row, cwnd - max(min(Q, max(cwnd/2,
 *     2)), cwnd / 8), else Reno's halving; at least 2; reno_count halved (at least 2) and
 *     the fast-round count cleared;
 *   - undo: the window before the reduction (init's cap of snd_cwnd_clamp at 2^32 / 128
 *     is left out: see the init op).
 *
 * CCA_PAPER (cca_yeah_p): the paper (below).
 */
#include "cca_common.h"

#ifndef CCA_PAPER

#include "cca_vegas.h"

#define YEAH_ALPHA    80u     /* packets queued at the bottleneck */
#define YEAH_EPSILON  1       /* at most cwnd >> 1 removed by a decongestion */
#define YEAH_DELTA    3       /* at least cwnd >> 3 removed at a loss */
#define YEAH_PHY      8u      /* slow mode beyond BaseRTT / 8 of queueing delay */
#define YEAH_RHO      16u     /* slow-mode rounds that mean competition with Reno */
#define YEAH_ZETA     50u     /* fast rounds that reset reno_count */
#define YEAH_STCP_CNT 100u    /* Scalable TCP's 1 / a */

struct yeah {
	struct cca_vegas v;
	u32 last_q;
	u32 reno_rounds;   /* slow-mode rounds in a row (0: fast mode) */
	u32 reno_count;
	u32 fast_count;
};
CCA_PRIV_CHECK(struct yeah);

SEC("struct_ops")
void BPF_PROG(cca_yeah_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct yeah *ca = inet_csk_ca(sk);

	cca_vegas_reset(&ca->v, tp);
	ca->reno_rounds = 0;
	ca->last_q = 0;
	ca->reno_count = 2;
	/* Linux's init also caps snd_cwnd_clamp at 2^32 / 128; a struct_ops program may not
	 * write the clamp, and a window of 2^25 segments is beyond any real one */
}

SEC("struct_ops")
void BPF_PROG(cca_yeah_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct yeah *ca = inet_csk_ca(sk);

	cca_vegas_sample(&ca->v, sample->rtt_us);
}

SEC("struct_ops")
void BPF_PROG(cca_yeah_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct yeah *ca = inet_csk_ca(sk);

	cca_vegas_event(&ca->v, tcp_sk(sk), ev);
}

/* the round that ended, judged */
static __always_inline void yeah_round(struct tcp_sock *tp, struct yeah *ca)
{
	u32 rtt = ca->v.min_rtt, base = ca->v.base_rtt, q;

	q = (u32)((u64)tp->snd_cwnd * (rtt - base) / rtt);
	if (q > YEAH_ALPHA || rtt - base > base / YEAH_PHY) {
		if (q > YEAH_ALPHA && tp->snd_cwnd > ca->reno_count) {
			u32 red = cca_min(q, tp->snd_cwnd >> YEAH_EPSILON);

			tp->snd_cwnd = cca_max(tp->snd_cwnd - red, ca->reno_count);
			tp->snd_ssthresh = tp->snd_cwnd;
		}
		if (ca->reno_count <= 2)
			ca->reno_count = cca_max(tp->snd_cwnd >> 1, 2);
		else
			ca->reno_count++;
		ca->reno_rounds = cca_min(ca->reno_rounds + 1, 0xffffff);
	} else {
		if (++ca->fast_count > YEAH_ZETA) {
			ca->reno_count = 2;
			ca->fast_count = 0;
		}
		ca->reno_rounds = 0;
	}
	ca->last_q = q;
}

/* growth rule, run by cca_yeah_cong_control (cca_common.h) */
static __always_inline void yeah_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct yeah *ca = inet_csk_ca(sk);

	if (!cca_is_cwnd_limited(sk))
		return;
	if (cca_in_slow_start(tp))
		acked = cca_slow_start(tp, acked);
	if (acked)
		cca_cong_avoid_ai(tp, ca->reno_rounds ? tp->snd_cwnd
					: cca_min(tp->snd_cwnd, YEAH_STCP_CNT), acked);
	if (cca_seq_after(ack, ca->v.beg_snd_nxt)) {
		if (ca->v.cnt_rtt > 2)
			yeah_round(tp, ca);
		ca->v.beg_snd_una = ca->v.beg_snd_nxt;
		ca->v.beg_snd_nxt = tp->snd_nxt;
		ca->v.beg_snd_cwnd = tp->snd_cwnd;
		cca_vegas_next_round(&ca->v);
	}
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 yeah_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct yeah *ca = inet_csk_ca(sk);
	u32 half = cca_max(cwnd >> 1, 2), red;

	if (ca->reno_rounds < YEAH_RHO)
		red = cca_max(cca_min(ca->last_q, half), cwnd >> YEAH_DELTA);
	else
		red = half;
	ca->fast_count = 0;
	ca->reno_count = cca_max(ca->reno_count >> 1, 2);
	return (s32)(cwnd - red) > 2 ? cwnd - red : 2;
}

CCA_SSTHRESH_OP(cca_yeah, yeah_ssthresh_for)

SEC("struct_ops")
void BPF_PROG(cca_yeah_set_state, struct sock *sk, u8 new_state)
{
	struct yeah *ca = inet_csk_ca(sk);

	CCA_STATE_GUARD(sk, new_state, yeah_ssthresh_for);
	cca_vegas_state(&ca->v, tcp_sk(sk), new_state);
}

CCA_UNDO_PRIOR_OP(cca_yeah)

CCA_CONG_CONTROL_OP(cca_yeah, yeah_ssthresh_for, yeah_cong_avoid)

CCA_OPS(cca_yeah) = {
	.set_state  = (void *)cca_yeah_set_state,
	.init       = (void *)cca_yeah_init,
	.ssthresh   = (void *)cca_yeah_ssthresh,
	.cong_control = (void *)cca_yeah_cong_control,
	.pkts_acked = (void *)cca_yeah_pkts_acked,
	.cwnd_event = (void *)cca_yeah_cwnd_event,
	.undo_cwnd  = (void *)cca_yeah_undo_cwnd,
	.name       = CCA_NAME("cca_yeah"),
};

#else /* CCA_PAPER */

/*
 * The paper variant, written from
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
	.name       = CCA_NAME("cca_yeah"),
};

#endif /* CCA_PAPER */
