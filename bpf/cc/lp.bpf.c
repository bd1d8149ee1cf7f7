// SPDX-License-Identifier: GPL-2.0
/*
 * cca_lp — TCP-LP (Low Priority), written from
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
#include "cca_common.h"

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
	.name       = "cca_lp",
};
