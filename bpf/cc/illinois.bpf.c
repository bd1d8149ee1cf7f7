// SPDX-License-Identifier: GPL-2.0
/*
 * cca_illinois — TCP-Illinois (S. Liu, T. Başar, R. Srikant, "TCP-Illinois: A Loss and
 * Delay-Based Congestion Control Algorithm for High-Speed Networks", VALUETOOLS 2006).
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_illinois.c). Its rules:
 *   - RTT samples (capped at 2^32 / alpha_max us) feed base RTT (the smallest), max RTT
 *     (the largest; neither is ever forgotten) and the round's sum and count; every ACK
 *     also records how many segments it acknowledged (SACKed ones included);
 *   - on the first ACK beyond the round's end (snd_nxt when it began), in any state:
 *     below W_thresh = 15 segments alpha = 1 and beta = 1/2; else, with samples in the
 *     round, d_a = their mean - base, d_m = max - base:
 *       alpha = 10 (alpha_max) while d_a <= d_m / 100 (after a rise, only from the 5th
 *       such round on: until then the last alpha), else d_m' 10 / (d_m' + d_a' (10 -
 *       0.3) / 0.3) with d_m' and d_a' less d_m / 100 (in 1/128: alpha_min = 38/128);
 *       beta = 1/8 up to d_m / 10, 1/2 from 8 d_m / 10, linear between (in 1/64);
 *     and a new round;
 *   - growth, when cwnd-limited: slow start up to ssthresh (nothing beyond it); then the
 *     counter advances by the segments the last ACK acknowledged (one for an ACK whose
 *     op saw none since) and once counter x alpha reaches cwnd, cwnd grows by its whole
 *     segments and the counter starts again from 0 (the remainder dropped);
 *   - loss: ssthresh = max(cwnd - cwnd beta, 2); an RTO (Loss) resets alpha, beta, the
 *     count of low-delay rounds and the round; undo: the window before the reduction.
 *
 * CCA_PAPER (cca_illinois_p): the paper (below).
 */
#include "cca_common.h"

#ifndef CCA_PAPER

#define ILL_ALPHA_SHIFT 7
#define ILL_ALPHA_ONE   (1u << ILL_ALPHA_SHIFT)
#define ILL_ALPHA_MIN   (3 * ILL_ALPHA_ONE / 10)
#define ILL_ALPHA_MAX   (10 * ILL_ALPHA_ONE)
#define ILL_RTT_CAP     (0xffffffffu / ILL_ALPHA_MAX)
#define ILL_BETA_SHIFT  6
#define ILL_BETA_MIN    ((1u << ILL_BETA_SHIFT) / 8)
#define ILL_BETA_MAX    ((1u << ILL_BETA_SHIFT) / 2)
#define ILL_WIN_THRESH  15u
#define ILL_THETA       5u

struct illinois {
	u64 sum_rtt;     /* us, this round */
	u16 cnt_rtt;
	u32 base_rtt;    /* us */
	u32 max_rtt;
	u32 end_seq;     /* snd_nxt when the round began */
	u32 alpha;       /* 1/128 */
	u32 beta;        /* 1/64 */
	u16 acked;       /* segments of the last ACK */
	u8  rtt_above;   /* the delay rose above d_m / 100 */
	u8  rtt_low;     /* low-delay rounds since */
};
CCA_PRIV_CHECK(struct illinois);

static __always_inline void ill_new_round(struct illinois *ca, const struct tcp_sock *tp)
{
	ca->end_seq = tp->snd_nxt;
	ca->cnt_rtt = 0;
	ca->sum_rtt = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_illinois_init, struct sock *sk)
{
	struct illinois *ca = inet_csk_ca(sk);

	ca->alpha = ILL_ALPHA_MAX;
	ca->beta = ILL_BETA_MAX;
	ca->base_rtt = 0x7fffffff;
	ca->max_rtt = 0;
	ca->acked = 0;
	ca->rtt_low = 0;
	ca->rtt_above = 0;
	ill_new_round(ca, tcp_sk(sk));
}

SEC("struct_ops")
void BPF_PROG(cca_illinois_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct illinois *ca = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;

	ca->acked = (u16)sample->pkts_acked;
	if (rtt < 0)
		return;
	if ((u32)rtt > ILL_RTT_CAP)
		rtt = ILL_RTT_CAP;
	if (ca->base_rtt > (u32)rtt)
		ca->base_rtt = rtt;
	if (ca->max_rtt < (u32)rtt)
		ca->max_rtt = rtt;
	ca->cnt_rtt++;
	ca->sum_rtt += (u32)rtt;
}

static __always_inline u32 ill_alpha(struct illinois *ca, u32 da, u32 dm)
{
	u32 d1 = dm / 100;

	if (da <= d1) {
		if (!ca->rtt_above)
			return ILL_ALPHA_MAX;
		if (++ca->rtt_low < ILL_THETA)
			return ca->alpha;
		ca->rtt_low = 0;
		ca->rtt_above = 0;
		return ILL_ALPHA_MAX;
	}
	ca->rtt_above = 1;
	dm -= d1;
	da -= d1;
	return dm * ILL_ALPHA_MAX / (dm + da * (ILL_ALPHA_MAX - ILL_ALPHA_MIN) / ILL_ALPHA_MIN);
}

static __always_inline u32 ill_beta(u32 da, u32 dm)
{
	u32 d2 = dm / 10, d3;

	if (da <= d2)
		return ILL_BETA_MIN;
	d3 = 8 * dm / 10;
	if (da >= d3 || d3 <= d2)
		return ILL_BETA_MAX;
	return (ILL_BETA_MIN * d3 - ILL_BETA_MAX * d2 + (ILL_BETA_MAX - ILL_BETA_MIN) * da) /
	       (d3 - d2);
}

/* growth rule, run by cca_illinois_cong_control (cca_common.h) */
static __always_inline void illinois_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct illinois *ca = inet_csk_ca(sk);
	u32 delta;

	if (cca_seq_after(ack, ca->end_seq)) {
		if (tp->snd_cwnd < ILL_WIN_THRESH) {
			ca->alpha = ILL_ALPHA_ONE;
			ca->beta = ILL_BETA_MAX;
		} else if (ca->cnt_rtt > 0) {
			u32 dm = ca->max_rtt - ca->base_rtt;
			u32 da = (u32)(ca->sum_rtt / ca->cnt_rtt) - ca->base_rtt;

			ca->alpha = ill_alpha(ca, da, dm);
			ca->beta = ill_beta(da, dm);
		}
		ill_new_round(ca, tp);
	}
	if (!cca_is_cwnd_limited(sk))
		return;
	if (cca_in_slow_start(tp)) {
		cca_slow_start(tp, acked);
		return;
	}
	tp->snd_cwnd_cnt += ca->acked;
	ca->acked = 1;
	delta = (tp->snd_cwnd_cnt * ca->alpha) >> ILL_ALPHA_SHIFT;
	if (delta >= tp->snd_cwnd) {
		tp->snd_cwnd = cca_min(tp->snd_cwnd + delta / tp->snd_cwnd, tp->snd_cwnd_clamp);
		tp->snd_cwnd_cnt = 0;
	}
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 illinois_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct illinois *ca = inet_csk_ca(sk);

	return cca_max(cwnd - ((cwnd * ca->beta) >> ILL_BETA_SHIFT), 2);
}

CCA_SSTHRESH_OP(cca_illinois, illinois_ssthresh_for)

SEC("struct_ops")
void BPF_PROG(cca_illinois_set_state, struct sock *sk, u8 new_state)
{
	struct illinois *ca = inet_csk_ca(sk);

	CCA_STATE_GUARD(sk, new_state, illinois_ssthresh_for);
	if (new_state == TCP_CA_Loss) {
		ca->alpha = ILL_ALPHA_ONE;
		ca->beta = ILL_BETA_MAX;
		ca->rtt_low = 0;
		ca->rtt_above = 0;
		ill_new_round(ca, tcp_sk(sk));
	}
}

CCA_UNDO_PRIOR_OP(cca_illinois)

CCA_CONG_CONTROL_OP(cca_illinois, illinois_ssthresh_for, illinois_cong_avoid)

CCA_OPS(cca_illinois) = {
	.set_state  = (void *)cca_illinois_set_state,
	.init       = (void *)cca_illinois_init,
	.ssthresh   = (void *)cca_illinois_ssthresh,
	.cong_control = (void *)cca_illinois_cong_control,
	.pkts_acked = (void *)cca_illinois_pkts_acked,
	.undo_cwnd  = (void *)cca_illinois_undo_cwnd,
	.name       = CCA_NAME("cca_illinois"),
};

#else /* CCA_PAPER */

/*
 * The paper variant, written from
 *   S. Liu, T. Başar, R. Srikant, "TCP-Illinois: A Loss and Delay-Based Congestion
 *   Control Algorithm for High-Speed Networks", VALUETOOLS 2006 / Performance
 *   Evaluation 65(6-7), 2008 (§3: alpha = f1(d_a), beta = f2(d_a)).
 *
 * Loss decides *when* to back off, queueing delay decides *how much*:
 *   d_a = average RTT of the last round - base RTT,  d_m = max RTT - base RTT
 *   alpha = alpha_max                                   d_a <= d_1
 *         = k1 / (k2 + d_a)                             otherwise,
 *     k1 = (d_m - d_1) a_min a_max / (a_max - a_min),  k2 = (d_m - d_1) a_min / (a_max - a_min) - d_1
 *     (so alpha(d_1) = a_max and alpha(d_m) = a_min); here in the equivalent form
 *     alpha = (d_m - d_1) a_min a_max / ((d_m - d_1) a_min + (d_a - d_1)(a_max - a_min))
 *   beta  = b_min                    d_a <= d_2
 *         = linear b_min -> b_max    d_2 < d_a < d_3
 *         = b_max                    d_a >= d_3
 *   d_1 = 0.01 d_m, d_2 = 0.1 d_m, d_3 = 0.8 d_m;  a in [0.3, 10], b in [0.125, 0.5].
 * Per RTT cwnd grows by alpha (alpha/cwnd per acknowledged segment, the remainder
 * carried); a loss sets cwnd to (1 - beta) cwnd. Below W_thresh = 10 segments (and until
 * the delay is measured): alpha = 1, beta = 0.5. alpha and beta are functions of the
 * measured d_a and change only when a round measures it: a loss cuts the window and
 * leaves them as measured, and a round without RTT samples leaves them too. alpha
 * reaches alpha_max only after d_a has stayed at or below d_1 for theta = 5 consecutive
 * rounds once the delay had been above d_1 (§3: one low-delay RTT must not make the
 * window jump); until then it keeps its last value. A flow whose delay never left the
 * low zone uses alpha_max. The base RTT and the max RTT (hence d_m, the largest
 * queueing delay seen) belong to the path: a time-out keeps them; it only sets
 * alpha = 1, beta = 0.5 and starts a new round, as the flow starts over in slow start.
 *
 * Where Linux's tcp_illinois differs (docs/algorithms.md, "Against Linux's own
 * modules"), this keeps to the paper's W += alpha/W per acknowledged segment: Linux
 * adds a whole segment once its count reaches cwnd/alpha and drops the remainder (with
 * delayed ACKs up to a quarter of the increase when alpha is several segments per RTT),
 * and it counts the ACK that ends a recovery with every segment that ACK removes, those
 * SACKed during the recovery included (its window starts 1-2 segments above ssthresh).
 * Its window threshold is 15 segments, this one the 10 of §3.
 */

#define IL_ALPHA_MAX  (10u << 10)
#define IL_ALPHA_MIN  307u           /* 0.3 * 1024 */
#define IL_ALPHA_BASE 1024u
#define IL_BETA_MIN   128u           /* 0.125 * 1024 */
#define IL_BETA_MAX   512u           /* 0.5 */
#define IL_BETA_BASE  512u
#define IL_WIN_THRESH 10u
#define IL_THETA      5u             /* low-delay rounds before alpha_max */

struct illinois {
	struct cca_frac frac;
	u64 sum_rtt;        /* this round */
	u32 cnt_rtt;
	u32 base_rtt;       /* us */
	u32 max_rtt;        /* us */
	u32 round_end;
	u32 alpha;          /* 1/1024 */
	u32 beta;           /* 1/1024 */
	u8  low_rounds;     /* consecutive rounds with d_a <= d_1 */
	u8  above;          /* d_a has been above d_1 since alpha was last alpha_max */
};
CCA_PRIV_CHECK(struct illinois);

static __always_inline void il_round_reset(struct illinois *ca, const struct tcp_sock *tp)
{
	ca->round_end = tp->snd_nxt;
	ca->sum_rtt = 0;
	ca->cnt_rtt = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_illinois_init, struct sock *sk)
{
	struct illinois *ca = inet_csk_ca(sk);

	ca->frac.acc = 0;
	ca->base_rtt = 0;
	ca->max_rtt = 0;
	ca->alpha = IL_ALPHA_BASE;
	ca->beta = IL_BETA_BASE;
	ca->low_rounds = 0;
	ca->above = 0;
	il_round_reset(ca, tcp_sk(sk));
}

SEC("struct_ops")
void BPF_PROG(cca_illinois_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct illinois *ca = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;

	if (rtt <= 0)
		return;
	if (!ca->base_rtt || (u32)rtt < ca->base_rtt)
		ca->base_rtt = rtt;
	if ((u32)rtt > ca->max_rtt)
		ca->max_rtt = rtt;
	ca->sum_rtt += (u32)rtt;
	ca->cnt_rtt++;
}

/* once per round: alpha and beta from the queueing delay */
static __always_inline void il_update(struct illinois *ca, const struct tcp_sock *tp)
{
	u64 dm, da, d1, d2, d3;

	if (tp->snd_cwnd < IL_WIN_THRESH || !ca->base_rtt) {
		ca->alpha = IL_ALPHA_BASE;
		ca->beta = IL_BETA_BASE;
		return;
	}
	if (!ca->cnt_rtt)       /* nothing measured this round: alpha and beta stay */
		return;
	dm = ca->max_rtt - ca->base_rtt;
	da = ca->sum_rtt / ca->cnt_rtt;
	da = da > ca->base_rtt ? da - ca->base_rtt : 0;
	d1 = dm / 100;
	d2 = dm / 10;
	d3 = dm * 8 / 10;

	if (da <= d1 || dm == 0) {
		if (!ca->above) {
			ca->alpha = IL_ALPHA_MAX;
		} else if (++ca->low_rounds >= IL_THETA) {
			ca->alpha = IL_ALPHA_MAX;
			ca->low_rounds = 0;
			ca->above = 0;
		}
		/* else: alpha keeps its value until theta low rounds have passed */
	} else {
		ca->above = 1;
		ca->low_rounds = 0;
		u64 num = (dm - d1) * IL_ALPHA_MIN * IL_ALPHA_MAX;             /* 1/1024^2 */
		u64 den = (dm - d1) * IL_ALPHA_MIN + (da - d1) * (IL_ALPHA_MAX - IL_ALPHA_MIN);

		ca->alpha = den ? (u32)cca_max64(IL_ALPHA_MIN, cca_min64(num / den, IL_ALPHA_MAX))
				: IL_ALPHA_MAX;
	}

	if (da <= d2)
		ca->beta = IL_BETA_MIN;
	else if (da >= d3 || d3 <= d2)
		ca->beta = IL_BETA_MAX;
	else
		ca->beta = IL_BETA_MIN + (u32)((IL_BETA_MAX - IL_BETA_MIN) * (da - d2) / (d3 - d2));
}

/* growth rule, run by cca_illinois_cong_control (cca_common.h) */
static __always_inline void illinois_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct illinois *ca = inet_csk_ca(sk);

	if (!cca_seq_before(tp->snd_una, ca->round_end)) {
		il_update(ca, tp);
		il_round_reset(ca, tp);
	}
	if (!cca_grow_prologue(sk, &acked))
		return;
	cca_cong_avoid_frac(tp, &ca->frac, ca->alpha, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 illinois_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct illinois *ca = inet_csk_ca(sk);
	u32 beta = cwnd < IL_WIN_THRESH ? IL_BETA_BASE : ca->beta;

	ca->frac.acc = 0;            /* the fraction carried belonged to the window before the cut */
	return cca_max(cwnd - (u32)((u64)cwnd * beta >> 10), 2);
}

CCA_SSTHRESH_OP(cca_illinois, illinois_ssthresh_for)

SEC("struct_ops")
void BPF_PROG(cca_illinois_set_state, struct sock *sk, u8 new_state)
{
	CCA_STATE_GUARD(sk, new_state, illinois_ssthresh_for);
	if (new_state == TCP_CA_Loss) {   /* RTO: Reno values until a round measures again */
		struct illinois *ca = inet_csk_ca(sk);

		ca->alpha = IL_ALPHA_BASE;
		ca->beta = IL_BETA_BASE;
		il_round_reset(ca, tcp_sk(sk));
	}
}

CCA_UNDO_PRIOR_OP(cca_illinois)

CCA_CONG_CONTROL_OP(cca_illinois, illinois_ssthresh_for, illinois_cong_avoid)

CCA_OPS(cca_illinois) = {
	.init       = (void *)cca_illinois_init,
	.ssthresh   = (void *)cca_illinois_ssthresh,
	.cong_control = (void *)cca_illinois_cong_control,
	.pkts_acked = (void *)cca_illinois_pkts_acked,
	.set_state  = (void *)cca_illinois_set_state,
	.undo_cwnd  = (void *)cca_illinois_undo_cwnd,
	.name       = CCA_NAME("cca_illinois"),
};

#endif /* CCA_PAPER */
