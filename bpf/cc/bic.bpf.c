// SPDX-License-Identifier: GPL-2.0
/*
 * cca_bic — BIC-TCP (Binary Increase Congestion control).
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_bic.c), whose rules differ from the
 * paper's in constants and in form. Per ACK in congestion avoidance the window grows one
 * segment per `cnt` acked segments (the kernel's additive-increase counter), with cnt
 * recomputed from the window when it changed or 1/32 s (HZ/32 jiffies) has passed:
 *   cwnd <= low_window (14):                 cnt = cwnd (Reno)
 *   below W_max, dist = (W_max - cwnd) / B (B = 4):
 *       dist > max_increment (16):           cnt = cwnd / 16      (16 segments per RTT)
 *       dist <= 1:                           cnt = cwnd * 20 / 4  (smooth_part 20)
 *       else:                                cnt = cwnd / dist    (binary search)
 *   at or above W_max:
 *       cwnd < W_max + 4:                    cnt = cwnd * 20 / 4
 *       cwnd < W_max + 16 * 3:               cnt = cwnd * 3 / (cwnd - W_max)  (max probing)
 *       else:                                cnt = cwnd / 16
 *   W_max = 0 (no loss yet, or after an RTO): cnt at most 20 (at least 5 % per RTT);
 *   then cnt is divided by the measured segments per ACK (an EWMA with gain 1/16 of the
 *   segments each ACK acknowledged in Open, starting at 2): with delayed ACKs the
 *   window grows by the rule per ACK, i.e. twice the nominal rule per RTT.
 * On a loss: W_max = cwnd (1024 + 819) / 2048 if cwnd < W_max (fast convergence), else
 * cwnd; ssthresh = max(cwnd 819/1024, 2), or Reno's halving at cwnd <= 14. An RTO resets
 * everything (W_max 0, the ACK ratio back to 2). Undo: the window before the reduction.
 *
 * CCA_PAPER (cca_bic_p): the paper, L. Xu, K. Harfoush, I. Rhee, "Binary Increase
 * Congestion Control (BIC) for Fast Long-Distance Networks", IEEE INFOCOM 2004 (§3:
 * binary search increase, additive increase, max probing, fast convergence).
 *
 * Per RTT, with W_max the window at the last loss:
 *   cwnd < W_max: inc = (W_max - cwnd) / 2   (binary search toward the midpoint)
 *   cwnd >= W_max: inc = cwnd - W_max         (max probing: the binary search's mirror,
 *                                              the distance past W_max doubles per RTT)
 *   inc clamped to [S_min, S_max] = [0.01, 32] segments (additive increase when far)
 * cwnd here is the window with its fraction (the increase is spread over the ACKs of a
 * round in 1/1024 segments): at cwnd = W_max max probing starts at S_min and doubles,
 * one segment past W_max after ~7 RTTs; with the whole-segment window it would stay at
 * S_min until a whole segment had been added, 1/S_min = 100 RTTs.
 * On loss: fast convergence W_max = cwnd (2 - beta) / 2 if cwnd < W_max else cwnd;
 *   cwnd = cwnd (1 - beta), beta = 0.125. On an RTO (also a repeated one) the whole
 *   search starts over: W_max = 0, and the step and its round are recomputed.
 * Below low_window = 14 segments: standard TCP (RFC 5681). The per-RTT increase is
 * fixed at the start of each round (from the window then: the midpoint is one RTT
 * away) and spread over the ACKs of the round (inc / cwnd per acked segment);
 * recomputing it per ACK from the growing window would fall short of the midpoint.
 */
#include "cca_common.h"

#ifndef CCA_PAPER

#define BIC_LOW_WINDOW     14u
#define BIC_B              4u     /* binary search: towards (max + min) / B */
#define BIC_MAX_INCREMENT  16u
#define BIC_SMOOTH_PART    20u
#define BIC_BETA           819u   /* / 1024 */
#define BIC_BETA_SCALE     1024u
#define BIC_ACK_RATIO_SHIFT 4
#define BIC_CNT_NO_LOSS    20u    /* cnt's ceiling while W_max = 0: 5 % per RTT */

struct bic {
	u32 cnt;          /* one segment per cnt acked segments */
	u32 w_max;        /* the window at the last loss (0: none since the start or an RTO) */
	u32 last_cwnd;    /* the window cnt was computed for */
	u32 last_time;    /* jiffies when it was */
	u32 epoch_start;  /* jiffies of the first computation since the last loss */
	u32 ack_ratio;    /* acked segments per ACK, << BIC_ACK_RATIO_SHIFT */
};
CCA_PRIV_CHECK(struct bic);

static __always_inline void bic_reset(struct bic *ca)
{
	ca->cnt = 0;
	ca->w_max = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->epoch_start = 0;
	ca->ack_ratio = 2 << BIC_ACK_RATIO_SHIFT;
}

SEC("struct_ops")
void BPF_PROG(cca_bic_init, struct sock *sk)
{
	bic_reset(inet_csk_ca(sk));
}

/* cnt for the window `cwnd` (see the rules above) */
static __always_inline void bic_update(struct sock *sk, struct bic *ca, u32 cwnd)
{
	u32 now = cca_jiffies32(), cnt;

	if (ca->last_cwnd == cwnd && (s32)(now - ca->last_time) <= (s32)(cca_hz(sk) / 32))
		return;
	ca->last_cwnd = cwnd;
	ca->last_time = now;
	if (!ca->epoch_start)
		ca->epoch_start = now;
	if (cwnd <= BIC_LOW_WINDOW) {
		ca->cnt = cwnd;
		return;
	}
	if (cwnd < ca->w_max) {
		u32 dist = (ca->w_max - cwnd) / BIC_B;

		if (dist > BIC_MAX_INCREMENT)
			cnt = cwnd / BIC_MAX_INCREMENT;
		else if (dist <= 1)
			cnt = cwnd * BIC_SMOOTH_PART / BIC_B;
		else
			cnt = cwnd / dist;
	} else if (cwnd < ca->w_max + BIC_B) {
		cnt = cwnd * BIC_SMOOTH_PART / BIC_B;
	} else if (cwnd < ca->w_max + BIC_MAX_INCREMENT * (BIC_B - 1)) {
		cnt = cwnd * (BIC_B - 1) / (cwnd - ca->w_max);
	} else {
		cnt = cwnd / BIC_MAX_INCREMENT;
	}
	if (!ca->w_max && cnt > BIC_CNT_NO_LOSS)
		cnt = BIC_CNT_NO_LOSS;
	/* per ACK, not per segment: divided by the segments an ACK acknowledges */
	cnt = (cnt << BIC_ACK_RATIO_SHIFT) / ca->ack_ratio;
	ca->cnt = cnt ? cnt : 1;
}

/* growth rule, run by cca_bic_cong_control (cca_common.h) */
static __always_inline void bic_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bic *ca = inet_csk_ca(sk);

	if (!cca_grow_prologue(sk, &acked))
		return;
	bic_update(sk, ca, tp->snd_cwnd);
	cca_cong_avoid_ai(tp, ca->cnt, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 bic_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct bic *ca = inet_csk_ca(sk);

	ca->epoch_start = 0;
	if (cwnd < ca->w_max)           /* fast convergence */
		ca->w_max = cwnd * (BIC_BETA_SCALE + BIC_BETA) / (2 * BIC_BETA_SCALE);
	else
		ca->w_max = cwnd;
	if (cwnd <= BIC_LOW_WINDOW)
		return cca_rfc5681_ssthresh(cwnd);
	return cca_max(cwnd * BIC_BETA / BIC_BETA_SCALE, 2);
}

CCA_SSTHRESH_OP(cca_bic, bic_ssthresh_for)

SEC("struct_ops")
void BPF_PROG(cca_bic_set_state, struct sock *sk, u8 new_state)
{
	CCA_STATE_GUARD(sk, new_state, bic_ssthresh_for);
	if (new_state == TCP_CA_Loss)
		bic_reset(inet_csk_ca(sk));
}

/* the ACK ratio, from every ACK in Open (also a duplicate ACK, which acknowledges 0) */
SEC("struct_ops")
void BPF_PROG(cca_bic_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct bic *ca = inet_csk_ca(sk);

	if (cca_ca_state(sk) == TCP_CA_Open)
		ca->ack_ratio += sample->pkts_acked - (ca->ack_ratio >> BIC_ACK_RATIO_SHIFT);
}

CCA_UNDO_PRIOR_OP(cca_bic)

CCA_CONG_CONTROL_OP(cca_bic, bic_ssthresh_for, bic_cong_avoid)

CCA_OPS(cca_bic) = {
	.init       = (void *)cca_bic_init,
	.ssthresh   = (void *)cca_bic_ssthresh,
	.cong_control = (void *)cca_bic_cong_control,
	.set_state  = (void *)cca_bic_set_state,
	.undo_cwnd  = (void *)cca_bic_undo_cwnd,
	.pkts_acked = (void *)cca_bic_pkts_acked,
	.name       = CCA_NAME("cca_bic"),
};

#else /* CCA_PAPER */

#define BIC_LOW_WINDOW 14u
#define BIC_SMAX_FP    (32u << 10)   /* 32 segments, 1/1024 */
#define BIC_SMIN_FP    10u           /* 0.01 segment */
#define BIC_BETA_SHIFT 3             /* beta = 1/8 */

struct bic {
	struct cca_frac frac;
	u64 inc;        /* this round's increase, 1/1024 segments per RTT */
	u32 w_max;
	u32 round_end;  /* snd_nxt when the round began */
};
CCA_PRIV_CHECK(struct bic);

SEC("struct_ops")
void BPF_PROG(cca_bic_init, struct sock *sk)
{
	struct bic *ca = inet_csk_ca(sk);

	ca->frac.acc = 0;
	ca->inc = 0;
	ca->w_max = 0;
	ca->round_end = tcp_sk(sk)->snd_una;
}

/* growth rule, run by cca_bic_cong_control (cca_common.h) */
static __always_inline void bic_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bic *ca = inet_csk_ca(sk);
	u32 cwnd;
	u64 inc;

	if (!cca_grow_prologue(sk, &acked))
		return;
	cwnd = tp->snd_cwnd;
	if (cwnd < BIC_LOW_WINDOW) {
		cca_cong_avoid_ai(tp, cwnd, acked);
		return;
	}
	if (!cca_seq_before(tp->snd_una, ca->round_end) || !ca->inc) {
		/* the window with its fraction, 1/1024 segments (see cca_cong_avoid_frac) */
		u64 pos = ((u64)cwnd << 10) + cca_frac_credit(tp, &ca->frac) / cwnd;
		u64 w_max = (u64)ca->w_max << 10;

		if (pos < w_max)
			inc = (w_max - pos) >> 1;             /* half the distance */
		else
			inc = pos - w_max;
		ca->inc = cca_max64(BIC_SMIN_FP, cca_min64(inc, BIC_SMAX_FP));
		ca->round_end = tp->snd_nxt;
	}
	cca_cong_avoid_frac(tp, &ca->frac, ca->inc, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 bic_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct bic *ca = inet_csk_ca(sk);

	ca->frac.acc = 0;
	ca->inc = 0;          /* the next round recomputes it */
	/* fast convergence: (2 - beta) / 2 = 15/16 */
	if (cwnd < ca->w_max)
		ca->w_max = cwnd - (cwnd >> (BIC_BETA_SHIFT + 1));
	else
		ca->w_max = cwnd;
	if (cwnd < BIC_LOW_WINDOW)
		return cca_rfc5681_ssthresh(cwnd);
	return cca_max(cwnd - (cwnd >> BIC_BETA_SHIFT), 2);
}

CCA_SSTHRESH_OP(cca_bic, bic_ssthresh_for)

SEC("struct_ops")
void BPF_PROG(cca_bic_set_state, struct sock *sk, u8 new_state)
{
	CCA_STATE_GUARD(sk, new_state, bic_ssthresh_for);
	/*
	 * RTO: the search starts over, as on a new connection (slow start, then the search
	 * from the window reached). All of its state goes: W_max, the fraction, and the
	 * round's step (inc 0: the next ACK in congestion avoidance begins a new round,
	 * round_end included, and computes the step from the window then). On a repeated
	 * time-out the kernel calls no ssthresh op (tcp_enter_loss, already in Loss), only
	 * this state change: a step computed in Loss at the larger window before it would
	 * otherwise be spent at the new one.
	 */
	if (new_state == TCP_CA_Loss) {
		struct bic *ca = inet_csk_ca(sk);

		ca->w_max = 0;
		ca->frac.acc = 0;
		ca->inc = 0;
	}
}

CCA_UNDO_PRIOR_OP(cca_bic)

CCA_CONG_CONTROL_OP(cca_bic, bic_ssthresh_for, bic_cong_avoid)

CCA_OPS(cca_bic) = {
	.init       = (void *)cca_bic_init,
	.ssthresh   = (void *)cca_bic_ssthresh,
	.cong_control = (void *)cca_bic_cong_control,
	.set_state  = (void *)cca_bic_set_state,
	.undo_cwnd  = (void *)cca_bic_undo_cwnd,
	.name       = CCA_NAME("cca_bic"),
};

#endif /* CCA_PAPER */
