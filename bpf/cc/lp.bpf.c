// SPDX-License-Identifier: GPL-2.0
/*
 * cca_lp — TCP-LP (Low Priority): A. Kuzmanovic, E. W. Knightly, "TCP-LP: A Distributed
 * Algorithm for Low Priority Data Transfer", IEEE INFOCOM 2003.
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_lp.c). Its rules:
 *   - loss: Reno's (ssthresh max(cwnd / 2, 2), undo to the window before the reduction);
 *     growth: Reno's (slow start, one segment per window), except while "within
 *     inference" (below), when cwnd does not grow at all;
 *   - per pkts_acked call (every ACK that acknowledges something), first, when the
 *     sample has an RTT (> 0), a one-way delay sample from the ACK's TCP timestamps:
 *       the remote clock's rate (its "HZ") is estimated from the change of the peer's
 *       TSval over the change of the echoed TSecr since the previous call,
 *       rhz = 1000 (dTSval) / (dTSecr) in 32-bit unsigned arithmetic, smoothed with gain
 *       1/64 (kept << 6); valid while > 0;
 *       owd = TSval (1000 / rhz) - TSecr, 32-bit unsigned (so the absolute value of a
 *       difference of two unrelated clocks, including the random offset of our own
 *       timestamps); valid while non-zero;
 *       with both valid: owd_min = the smallest, owd_max = the largest but one
 *       (owd_max_rsv keeps the largest), sowd = the EWMA of owd with gain 1/8 (<< 3;
 *       the first sample taken as is);
 *     then, with now = our timestamp clock (tcp_mstamp in ms, TCP_TS_HZ = 1000):
 *       inference = 3 (now - TSecr) when that difference is positive as an s32;
 *       within inference: a drop happened and now - last_drop < inference (unsigned);
 *       within threshold: sowd < owd_min + 15 (owd_max - owd_min) / 100 (all u32);
 *     outside the threshold (an early congestion indication): owd_min = sowd,
 *     owd_max = owd_max_rsv = 2 sowd, cwnd = 1 within inference, else max(cwnd / 2, 1),
 *     ssthresh unchanged, last_drop = now. In any CA state.
 *   The module's own timestamps are assumed in milliseconds (ccarena sets no route's
 *   usec-timestamp feature).
 *
 * CCA_PAPER (cca_lp_p): the paper (below).
 */
#include "cca_common.h"

#ifndef CCA_PAPER

#define LP_TS_HZ       1000u     /* TCP_TS_HZ: timestamps tick in ms */
#define LP_RESOL       LP_TS_HZ  /* owd resolution */
#define LP_VALID_RHZ   (1u << 0)
#define LP_VALID_OWD   (1u << 1)
#define LP_WITHIN_THR  (1u << 3)
#define LP_WITHIN_INF  (1u << 4)
#define LP_THR_PCT     15u       /* threshold: owd_min + 15 % of the range */

struct lp {
	u32 flag;             /* LP_* */
	u32 sowd;             /* smoothed one-way delay << 3 */
	u32 owd_min;
	u32 owd_max;          /* the largest but one */
	u32 owd_max_rsv;      /* the largest */
	u32 remote_hz;        /* the peer's timestamp rate */
	u32 remote_ref_time;  /* TSval at the previous call */
	u32 local_ref_time;   /* TSecr at the previous call */
	u32 last_drop;        /* our timestamp clock at the last early indication (0: none) */
	u32 inference;        /* 3 (now - TSecr), our timestamp clock (ms) */
};
CCA_PRIV_CHECK(struct lp);

SEC("struct_ops")
void BPF_PROG(cca_lp_init, struct sock *sk)
{
	struct lp *ca = inet_csk_ca(sk);

	ca->flag = 0;
	ca->sowd = 0;
	ca->owd_min = 0xffffffffu;
	ca->owd_max = 0;
	ca->owd_max_rsv = 0;
	ca->remote_hz = 0;
	ca->remote_ref_time = 0;
	ca->local_ref_time = 0;
	ca->last_drop = 0;
	ca->inference = 0;
}

/* the peer's timestamp rate, smoothed (gain 1/64); sets or clears LP_VALID_RHZ and
 * moves the reference timestamps to this ACK's */
static __always_inline u32 lp_remote_hz(const struct tcp_sock *tp, struct lp *ca)
{
	u32 tsval = tp->rx_opt.rcv_tsval, tsecr = tp->rx_opt.rcv_tsecr;
	u64 rhz = (u32)(ca->remote_hz << 6);   /* << 6; never negative, so unsigned here */

	if (ca->remote_ref_time && ca->local_ref_time &&
	    tsval != ca->remote_ref_time && tsecr != ca->local_ref_time) {
		/* 32-bit unsigned, as the module's operands are */
		u32 m = (u32)(LP_TS_HZ * (tsval - ca->remote_ref_time)) /
			(tsecr - ca->local_ref_time);

		if (rhz > 0)
			rhz = rhz - (rhz >> 6) + m;    /* 63/64 old + 1/64 new */
		else
			rhz = (u64)m << 6;
	}
	if (rhz >> 6)
		ca->flag |= LP_VALID_RHZ;
	else
		ca->flag &= ~LP_VALID_RHZ;
	ca->remote_ref_time = tsval;
	ca->local_ref_time = tsecr;
	return (u32)(rhz >> 6);
}

/* the one-way delay, in the module's relative form (u32); sets or clears LP_VALID_OWD */
static __always_inline u32 lp_owd(const struct tcp_sock *tp, struct lp *ca)
{
	u32 owd = 0;

	ca->remote_hz = lp_remote_hz(tp, ca);
	if ((ca->flag & LP_VALID_RHZ) && ca->remote_hz)
		owd = tp->rx_opt.rcv_tsval * (LP_RESOL / ca->remote_hz) -
		      tp->rx_opt.rcv_tsecr * (LP_RESOL / LP_TS_HZ);
	if (owd)
		ca->flag |= LP_VALID_OWD;
	else
		ca->flag &= ~LP_VALID_OWD;
	return owd;
}

static __always_inline void lp_delay_sample(const struct tcp_sock *tp, struct lp *ca)
{
	u32 owd = lp_owd(tp, ca);

	if (!(ca->flag & LP_VALID_RHZ) || !(ca->flag & LP_VALID_OWD))
		return;
	if (owd < ca->owd_min)
		ca->owd_min = owd;
	/* owd_max is the largest but one: the largest is held in owd_max_rsv */
	if (owd > ca->owd_max) {
		if (owd > ca->owd_max_rsv) {
			ca->owd_max = ca->owd_max_rsv ? ca->owd_max_rsv : owd;
			ca->owd_max_rsv = owd;
		} else {
			ca->owd_max = owd;
		}
	}
	if (ca->sowd)
		ca->sowd = ca->sowd - (ca->sowd >> 3) + owd;   /* 7/8 old + 1/8 new */
	else
		ca->sowd = owd << 3;
}

SEC("struct_ops")
void BPF_PROG(cca_lp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct lp *ca = inet_csk_ca(sk);
	u32 now = (u32)(tp->tcp_mstamp / 1000);   /* tcp_time_stamp_ts: ms */
	u32 delta;

	if (sample->rtt_us > 0)
		lp_delay_sample(tp, ca);

	delta = now - tp->rx_opt.rcv_tsecr;
	if ((s32)delta > 0)
		ca->inference = 3 * delta;

	if (ca->last_drop && now - ca->last_drop < ca->inference)
		ca->flag |= LP_WITHIN_INF;
	else
		ca->flag &= ~LP_WITHIN_INF;

	if ((ca->sowd >> 3) < ca->owd_min + LP_THR_PCT * (ca->owd_max - ca->owd_min) / 100)
		ca->flag |= LP_WITHIN_THR;
	else
		ca->flag &= ~LP_WITHIN_THR;
	if (ca->flag & LP_WITHIN_THR)
		return;

	/* an early congestion indication: the range starts again from sowd */
	ca->owd_min = ca->sowd >> 3;
	ca->owd_max = ca->sowd >> 2;
	ca->owd_max_rsv = ca->sowd >> 2;
	if (ca->flag & LP_WITHIN_INF)
		tp->snd_cwnd = 1;
	else
		tp->snd_cwnd = cca_max(tp->snd_cwnd >> 1, 1);
	ca->last_drop = now;
}

/* growth rule, run by cca_lp_cong_control (cca_common.h): Reno's, none within inference */
static __always_inline void lp_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct lp *ca = inet_csk_ca(sk);

	if (ca->flag & LP_WITHIN_INF)
		return;
	if (!cca_grow_prologue(sk, &acked))
		return;
	cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 lp_ssthresh_for(struct sock *sk, u32 cwnd)
{
	return cca_rfc5681_ssthresh(cwnd);
}

#else /* CCA_PAPER */

/*
 * The paper variant, written from
 *   A. Kuzmanovic, E. W. Knightly, "TCP-LP: A Distributed Algorithm for Low Priority
 *   Data Transfer", IEEE INFOCOM 2003 (§III-A early congestion indication,
 *   §III-B reaction: inference time-out, minimum window on a second indication).
 *
 * TCP-LP yields to ordinary TCP: it backs off on a *delay* signal that fires before
 * the queue overflows.
 *   early congestion indication (ECI, §III-A):  d > d_min + delta (d_max - d_min),
 *     delta = 0.15, d the flow's delay, d_min/d_max the smallest/largest delay seen;
 *   reaction (§III-B): the first ECI halves cwnd and starts the inference time-out
 *     (itt), during which cwnd does not grow; a second ECI within itt sets cwnd to the
 *     minimum; itt expired without ECI: the ordinary TCP behaviour resumes (slow start
 *     below ssthresh, then Reno's additive increase).
 *   An ECI changes cwnd only (ssthresh stays: it is not a loss) and is acted on only in
 *   the Open state: during CWR/Recovery/Loss the loss response is in charge.
 *   Loss: Reno's halving (RFC 5681).
 *
 * Deliberate deviations from the paper, and why:
 * - The delay is the RTT, not the one-way delay from TCP timestamps (no assumption
 *   about the receiver's clock; on an emulated path the reverse direction carries no
 *   queue, so RTT - RTT_min is the forward queueing delay).
 * - One delay sample per round trip: the smallest RTT of the round (as Vegas filters
 *   delayed ACKs), instead of the paper's per-packet EWMA (gamma = 1/8). A per-ACK
 *   filter follows single late ACKs and the flow's own bursts, and reads them as
 *   early congestion. The round that follows a reaction is not judged: its packets
 *   left before the reaction and carry the queue it is meant to drain.
 * - d_min is the smallest round sample of the connection and d_max the largest, as the
 *   paper has them ("throughout the connection"), but d_max is taken from each round's
 *   second-largest sample (one late ACK in a round does not stretch the range; a full
 *   buffer delays many). It is not forgotten at a loss: a loss that is not the
 *   buffer's (random loss on the path) ends an epoch whose largest delay is LP's own
 *   early-signal level or the base RTT plus noise, and a range refreshed from such
 *   epochs shrinks, loss after loss, until every noisy round reads as early
 *   congestion and LP, alone on the path, holds a window far below the BDP. d_max
 *   comes from the rounds' top samples, not from their minima: in slow start a round's burst queues at
 *   the bottleneck and drains before the next, so the round's first ACK sees little of
 *   the queue that overflows the buffer; the minima would give a range of a fraction of
 *   the buffer's delay, and 0.15 of it lies within the delay of the flow's own pair of
 *   segments and the host's noise (seen: 1 MB downloads at 100 Mbit/s, 20 ms, 30
 *   packets held at cwnd 2 for up to 1.4 s by "ECIs" of 0.4 ms).
 * - ECIs are believed only after the first loss: before it, the range d_max - d_min is
 *   made of the flow's own slow-start queue, the threshold sits inside it, and the flow
 *   would never leave a small window. TCP-LP starts like Reno until its first loss.
 *   ECIs also need d_max - d_min >= 1 ms (timer noise).
 * - itt = 3 smoothed RTTs; the minimum window is 2 segments, not 1: with one segment in
 *   flight the receiver holds every ACK for its delayed-ACK timer (40 ms on Linux),
 *   which both throttles the flow and reads as a 40 ms queue. For the same reason RTT
 *   samples taken with fewer than 2 segments outstanding are not used.
 * - Delay samples are compared like with like: an RTT sample includes the bottleneck's
 *   transmission of the segments its ACK acknowledges, one frame time more for a
 *   delayed ACK of two segments than for an ACK of one (quick ACKs at the start, a
 *   retransmission). At 10 Mbit/s that is 1.2 ms, more than 0.15 of a small buffer's
 *   delay range (4 packets: 4.8 ms); with d_min from one-segment ACKs every
 *   delayed-ACK round read as congestion and held the window at the minimum for
 *   seconds. So once the receiver is seen to delay its ACKs (an ACK of >= 2 segments),
 *   d_min, d_max and the round samples come from such ACKs only; a round without one
 *   is not judged.
 */

#define LP_DELTA_1024    154u     /* 0.15 */
#define LP_ITT_RTTS      3u
#define LP_MIN_RANGE_US  1000u
#define LP_MIN_CWND      2u
#define LP_NONE          0xffffffffu

struct lp {
	u64 itt_end_us;     /* 0: not in an inference time-out */
	u32 round_end;      /* snd_nxt when the round began */
	u32 round_min;      /* smallest RTT sample of this round from an ACK of >= 2 segments */
	u32 round_min1;     /* the same from ACKs of one segment (LP_NONE: none) */
	u32 d_min;          /* smallest round sample of the connection (0: none) */
	u32 round_max[2];   /* two largest RTT samples of this round, of round_min's class */
	u32 round_max1[2];  /* the same for round_min1 */
	u32 d_max;          /* largest round sample (second-largest RTT) of the connection */
	u8  calibrated;     /* a loss was seen: d_max reflects a full buffer */
	u8  skip_round;     /* the round after a reaction is not judged */
	u8  delayed_acks;   /* an ACK of >= 2 segments was seen: only those are used */
};
CCA_PRIV_CHECK(struct lp);

static __always_inline void lp_round_start(struct lp *ca, const struct tcp_sock *tp)
{
	ca->round_end = tp->snd_nxt;
	ca->round_min = LP_NONE;
	ca->round_min1 = LP_NONE;
	ca->round_max[0] = ca->round_max[1] = 0;
	ca->round_max1[0] = ca->round_max1[1] = 0;
}

/* keep the two largest samples in m[0] >= m[1] */
static __always_inline void lp_top2(u32 *m, u32 rtt)
{
	if (rtt > m[0]) {
		m[1] = m[0];
		m[0] = rtt;
	} else if (rtt > m[1]) {
		m[1] = rtt;
	}
}

SEC("struct_ops")
void BPF_PROG(cca_lp_init, struct sock *sk)
{
	struct lp *ca = inet_csk_ca(sk);

	ca->itt_end_us = 0;
	ca->d_min = 0;
	ca->d_max = 0;
	ca->calibrated = 0;
	ca->skip_round = 0;
	ca->delayed_acks = 0;
	lp_round_start(ca, tcp_sk(sk));
}

/* one round's delay sample d (its smallest RTT) and its largest RTT dm: update the
 * range, then §III-A/B */
static __always_inline void lp_round_end(struct sock *sk, struct lp *ca, u32 d, u32 dm)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u64 now = cca_now_us();
	u32 thresh;

	if (!ca->d_min || d < ca->d_min)
		ca->d_min = d;
	ca->d_max = cca_max(ca->d_max, dm);

	if (ca->itt_end_us && now >= ca->itt_end_us)
		ca->itt_end_us = 0;
	if (ca->skip_round) {
		ca->skip_round = 0;
		return;
	}
	if (!ca->calibrated || ca->d_max - ca->d_min < LP_MIN_RANGE_US ||
	    cca_ca_state(sk) != TCP_CA_Open)
		return;
	thresh = ca->d_min + (u32)((u64)(ca->d_max - ca->d_min) * LP_DELTA_1024 >> 10);
	if (d <= thresh)
		return;
	if (ca->itt_end_us)
		cca_set_cwnd(tp, LP_MIN_CWND);                        /* second ECI within itt */
	else
		cca_set_cwnd(tp, cca_max(tp->snd_cwnd >> 1, LP_MIN_CWND));
	tp->snd_cwnd_cnt = 0;
	ca->itt_end_us = now + (u64)LP_ITT_RTTS * cca_max(cca_srtt_us(tp), 1);
	ca->skip_round = 1;
}

SEC("struct_ops")
void BPF_PROG(cca_lp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct lp *ca = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;

	if (rtt > 0 && sample->pkts_acked + tp->packets_out >= 2) {
		if (sample->pkts_acked >= 2) {
			if (!ca->delayed_acks) {
				ca->delayed_acks = 1;
				ca->d_min = 0;    /* from one-segment ACKs: a frame time short */
			}
			ca->round_min = cca_min(ca->round_min, (u32)rtt);
			lp_top2(ca->round_max, rtt);
		} else {
			ca->round_min1 = cca_min(ca->round_min1, (u32)rtt);
			lp_top2(ca->round_max1, rtt);
		}
	}
	if (cca_seq_before(tp->snd_una, ca->round_end))
		return;
	if (ca->round_min != LP_NONE)
		lp_round_end(sk, ca, ca->round_min, cca_max(ca->round_max[1], ca->round_min));
	else if (!ca->delayed_acks && ca->round_min1 != LP_NONE)
		lp_round_end(sk, ca, ca->round_min1, cca_max(ca->round_max1[1], ca->round_min1));
	lp_round_start(ca, tp);
}

/* growth rule, run by cca_lp_cong_control (cca_common.h) */
static __always_inline void lp_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct lp *ca = inet_csk_ca(sk);

	if (ca->itt_end_us) {
		if (cca_now_us() < ca->itt_end_us)
			return;               /* no growth during the inference time-out */
		ca->itt_end_us = 0;
	}
	if (!cca_grow_prologue(sk, &acked))
		return;
	cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h); the
 * first loss makes the delay range trusted (ECIs are believed from then on) */
static __always_inline u32 lp_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct lp *ca = inet_csk_ca(sk);

	ca->calibrated = 1;
	return cca_rfc5681_ssthresh(cwnd);
}

#endif /* CCA_PAPER */

/* the same registration for both variants */
CCA_SSTHRESH_OP(cca_lp, lp_ssthresh_for)

CCA_UNDO_PRIOR_OP(cca_lp)

CCA_STATE_GUARD_OP(cca_lp, lp_ssthresh_for)

CCA_CONG_CONTROL_OP(cca_lp, lp_ssthresh_for, lp_cong_avoid)

CCA_OPS(cca_lp) = {
	.set_state  = (void *)cca_lp_state_guard,
	.init       = (void *)cca_lp_init,
	.ssthresh   = (void *)cca_lp_ssthresh,
	.cong_control = (void *)cca_lp_cong_control,
	.pkts_acked = (void *)cca_lp_pkts_acked,
	.undo_cwnd  = (void *)cca_lp_undo_cwnd,
	.name       = CCA_NAME("cca_lp"),
};
