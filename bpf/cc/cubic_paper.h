/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cubic_paper.h — cca_cubic's paper variant (cubic:paper, object cca_cubic_p), included
 * by cubic.bpf.c when built with -DCCA_PAPER; the default there follows Linux's tcp_cubic.
 */
#ifndef CUBIC_PAPER_H
#define CUBIC_PAPER_H

/*
 * The paper variant, written from
 *   L. Xu, S. Ha, I. Rhee, V. Goel, L. Eggert (Ed.), "CUBIC for Fast and Long-Distance
 *   Networks", RFC 9438, 2023 (§4.2 window increase function, §4.3 Reno-friendly
 *   region, §4.6 multiplicative decrease, §4.7 fast convergence, §4.9 undo of a spurious
 *   reduction), and
 *   S. Ha, I. Rhee, L. Xu, "CUBIC: A New TCP-Friendly High-Speed TCP Variant",
 *   ACM SIGOPS OSR 42(5), 2008;
 * with slow-start exit by HyStart++: P. Balasubramanian, Y. Huang, M. Olson,
 *   "HyStart++: Modified Slow Start for TCP", RFC 9406, 2023 (§4.2, §4.3 constants).
 *
 *   W_cubic(t) = C (t - K)^3 + W_max,   K = cbrt((W_max - cwnd_epoch) / C)
 *   C = 0.4, beta_cubic = 0.7, alpha_cubic = 3 (1 - beta) / (1 + beta)
 *
 * Target for the next RTT: W_cubic(t + RTT) (RTT = smoothed RTT), clamped to
 * [cwnd, 1.5 cwnd] (§4.2); cwnd rises by (target - cwnd) / cwnd per acked segment.
 * Reno-friendly estimate W_est grows by alpha_cubic per RTT (alpha becomes 1 once
 * W_est reaches the cwnd of the last reduction, §4.3) and wins when larger.
 *
 * Fixed point: times in units of 100 us; windows in segments, W_est scaled by 2^20
 * (its per-ACK increment alpha/cwnd must not truncate: at 1/1024 it lost 10-20 %).
 * 0.4 (t [s])^3 with t = u * 1e-4 s  =  4 u^3 / 1e13 segments.
 */

#define BETA_1024          717u     /* 0.7 */
#define FAST_CONV_1024     870u     /* (1 + beta) / 2 = 0.85 */
#define ALPHA_1024         542u     /* 3 * 0.3 / 1.7 = 0.5294 */
#define K_SCALE            2500000000000ull /* 1/C in (100 us)^3 per segment: 1e12 / 0.4 */
#define MAX_OFFS           1000000ull       /* |t - K| capped at 100 s to stay in u64 */

/* HyStart++ (RFC 9406 §4.3) */
#define HS_MIN_RTT_THRESH  4000u   /* us */
#define HS_MAX_RTT_THRESH  16000u  /* us */
#define HS_MIN_RTT_DIVISOR 8u
#define HS_N_RTT_SAMPLE    8u
#define HS_CSS_GROWTH_DIV  4u
#define HS_CSS_ROUNDS      5u
#define HS_INF             0xffffffffu

struct cubic {
	u64 epoch_start_us;   /* 0: no epoch (after a reduction, until the next CA ACK) */
	u32 w_max;            /* segments */
	u32 cwnd_prior;       /* cwnd at the last reduction (alpha -> 1 when W_est reaches it);
			       * 0 before the first */
	u32 origin;           /* W_max of the epoch, or cwnd when above W_max */
	u32 k;                /* K in 100 us units */
	u64 w_est;            /* Reno-friendly window, segments * 2^20 */
	/* §4.9.2: the state above as it was before the last reduction, for its undo
	 * (written by every reduction before an undo can follow it; zero, the state of
	 * init, in the icsk_ca_priv the kernel clears before init) */
	u64 undo_epoch_start_us;
	u32 undo_w_max;
	u32 undo_cwnd_prior;
	u32 undo_origin;
	u32 undo_k;
	u64 undo_w_est;
	/* HyStart++ */
	u32 round_end;        /* snd_nxt when the round started */
	u32 last_round_min_rtt;
	u32 cur_round_min_rtt;
	u32 rtt_samples;
	u32 css_baseline;     /* 0: not in conservative slow start */
	u32 css_rounds;
	u32 css_cnt;          /* acked segments not yet turned into cwnd in CSS */
	u8  hystart_done;
	bool after_rto;       /* the next epoch is the first congestion avoidance after an RTO */
};
CCA_PRIV_CHECK(struct cubic);

static __always_inline void cubic_reset(struct cubic *ca)
{
	ca->epoch_start_us = 0;
	ca->w_max = 0;
	ca->cwnd_prior = 0;
	ca->origin = 0;
	ca->k = 0;
	ca->w_est = 0;
}

static __always_inline void hystart_reset(struct cubic *ca, const struct tcp_sock *tp)
{
	ca->round_end = tp->snd_nxt;
	ca->last_round_min_rtt = HS_INF;
	ca->cur_round_min_rtt = HS_INF;
	ca->rtt_samples = 0;
	ca->css_baseline = 0;
	ca->css_rounds = 0;
	ca->css_cnt = 0;
	ca->hystart_done = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_cubic_init, struct sock *sk)
{
	struct cubic *ca = inet_csk_ca(sk);

	cubic_reset(ca);
	hystart_reset(ca, tcp_sk(sk));
}

/* HyStart++ RTT bookkeeping, once per RTT sample (RFC 9406 §4.2). */
SEC("struct_ops")
void BPF_PROG(cca_cubic_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cubic *ca = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;

	if (rtt <= 0 || ca->hystart_done || !cca_in_slow_start(tp))
		return;
	if (ca->cur_round_min_rtt > (u32)rtt)
		ca->cur_round_min_rtt = rtt;
	ca->rtt_samples++;
}

/* Start of a new round: snd_una passed the snd_nxt recorded at the last round start. */
static __always_inline bool hystart_new_round(struct cubic *ca, const struct tcp_sock *tp)
{
	if (cca_seq_before(tp->snd_una, ca->round_end))
		return false;
	ca->round_end = tp->snd_nxt;
	ca->last_round_min_rtt = ca->cur_round_min_rtt;
	ca->cur_round_min_rtt = HS_INF;
	ca->rtt_samples = 0;
	return true;
}

/* Slow start with HyStart++; returns acked segments left for congestion avoidance. */
static __always_inline u32 cubic_slow_start(struct sock *sk, struct cubic *ca, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	bool new_round = hystart_new_round(ca, tp);

	if (ca->hystart_done)
		return cca_slow_start(tp, acked);

	if (ca->css_baseline) {
		/* Conservative slow start: growth divided by CSS_GROWTH_DIVISOR */
		if (new_round && ++ca->css_rounds >= HS_CSS_ROUNDS) {
			tp->snd_ssthresh = tp->snd_cwnd;
			ca->hystart_done = 1;
			return acked;
		}
		/* §4.2, per ACK in CSS: the growth first, then the check of the round's
		 * samples, so the ACK that finds the rise spurious still grows by a quarter */
		ca->css_cnt += acked;
		if (ca->css_cnt >= HS_CSS_GROWTH_DIV) {
			u32 inc = ca->css_cnt / HS_CSS_GROWTH_DIV;

			ca->css_cnt -= inc * HS_CSS_GROWTH_DIV;
			cca_slow_start(tp, inc);
		}
		if (ca->rtt_samples >= HS_N_RTT_SAMPLE && ca->cur_round_min_rtt < ca->css_baseline) {
			ca->css_baseline = 0;   /* the RTT rise was spurious: back to slow start */
			ca->css_rounds = 0;
		}
		return 0;
	}

	acked = cca_slow_start(tp, acked);
	if (ca->rtt_samples >= HS_N_RTT_SAMPLE && ca->cur_round_min_rtt != HS_INF &&
	    ca->last_round_min_rtt != HS_INF) {
		u32 thresh = ca->last_round_min_rtt / HS_MIN_RTT_DIVISOR;

		thresh = cca_max(HS_MIN_RTT_THRESH, cca_min(thresh, HS_MAX_RTT_THRESH));
		if (ca->cur_round_min_rtt >= ca->last_round_min_rtt + thresh) {
			ca->css_baseline = ca->cur_round_min_rtt;
			ca->css_rounds = 0;
			ca->css_cnt = 0;
		}
	}
	return acked;
}

/* cnt: acked segments per one-segment increase, from W_cubic(t + RTT) and W_est. */
static __always_inline u32 cubic_cnt(struct cubic *ca, const struct tcp_sock *tp, u32 acked)
{
	u32 cwnd = tp->snd_cwnd;
	u64 now = cca_now_us();
	u64 t, offs, delta;
	u32 target, cnt, alpha;

	if (!ca->epoch_start_us) {
		ca->epoch_start_us = now ? now : 1;
		/* §4.8: the first congestion avoidance after an RTO starts from its own window:
		 * W_max = cwnd there, K = 0 (the loss response kept the W_max of the RTO) */
		if (ca->after_rto) {
			ca->w_max = cwnd;
			ca->after_rto = false;
		}
		if (cwnd < ca->w_max) {
			ca->k = cca_cbrt((u64)(ca->w_max - cwnd) * K_SCALE);
			ca->origin = ca->w_max;
		} else {
			ca->k = 0;
			ca->origin = cwnd;
		}
		ca->w_est = (u64)cwnd << 20;
	}

	t = (now - ca->epoch_start_us + cca_srtt_us(tp)) / 100;   /* t + RTT, 100 us units */
	if (t < ca->k) {
		offs = cca_min64(ca->k - t, MAX_OFFS);
		delta = 4 * offs * offs * offs / 10000000000000ull;
		target = delta < ca->origin ? ca->origin - (u32)delta : 1;
	} else {
		offs = cca_min64(t - ca->k, MAX_OFFS);
		delta = 4 * offs * offs * offs / 10000000000000ull;
		target = ca->origin + (u32)cca_min64(delta, 0x3fffffff);
	}

	/* §4.2: target within [cwnd, 1.5 cwnd] */
	if (target > cwnd + (cwnd >> 1))
		target = cwnd + (cwnd >> 1);
	if (target > cwnd)
		cnt = cwnd / (target - cwnd);
	else
		cnt = 100 * cwnd;   /* on the plateau: almost no growth */

	/* §4.3: Reno-friendly region. Without a reduction yet, §4.10 sets cwnd_prior to the
	 * window congestion avoidance began at, ssthresh (slow start stops there, CSS sets it
	 * to cwnd); every later epoch starts at cwnd >= ssthresh, which only a reduction
	 * lowers: W_est >= cwnd_prior, alpha = 1, as with cwnd_prior = 0 here */
	alpha = (ca->w_est >> 20) >= ca->cwnd_prior ? 1024 : ALPHA_1024;
	ca->w_est += ((u64)alpha << 10) * acked / cca_max(cwnd, 1);
	if ((ca->w_est >> 20) > cwnd) {
		u32 reno_cnt = cwnd / (u32)((ca->w_est >> 20) - cwnd);

		if (reno_cnt < cnt)
			cnt = reno_cnt;
	}
	return cca_max(cnt, 1);
}

/* growth rule, run by cca_cubic_cong_control (cca_common.h) */
static __always_inline void cubic_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cubic *ca = inet_csk_ca(sk);

	if (!cca_is_cwnd_limited(sk))
		return;
	if (cca_in_slow_start(tp)) {
		acked = cubic_slow_start(sk, ca, acked);
		if (!acked)
			return;
	}
	cca_cong_avoid_ai(tp, cubic_cnt(ca, tp, acked), acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 cubic_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct cubic *ca = inet_csk_ca(sk);

	/* §4.9.2: saved before the reduction changes them; undo_cwnd restores them */
	ca->undo_epoch_start_us = ca->epoch_start_us;
	ca->undo_w_max = ca->w_max;
	ca->undo_cwnd_prior = ca->cwnd_prior;
	ca->undo_origin = ca->origin;
	ca->undo_k = ca->k;
	ca->undo_w_est = ca->w_est;

	ca->epoch_start_us = 0;
	/* §4.7 fast convergence: a flow whose W_max shrinks releases bandwidth */
	if (cwnd < ca->w_max)
		ca->w_max = (u32)((u64)cwnd * FAST_CONV_1024 >> 10);
	else
		ca->w_max = cwnd;
	ca->cwnd_prior = cwnd;
	ca->hystart_done = 1;
	return cca_max((u32)((u64)cwnd * BETA_1024 >> 10), 2);
}

CCA_SSTHRESH_OP(cca_cubic, cubic_ssthresh_for)

SEC("struct_ops")
void BPF_PROG(cca_cubic_set_state, struct sock *sk, u8 new_state)
{
	CCA_STATE_GUARD(sk, new_state, cubic_ssthresh_for);
	/* RTO (§4.8): forget the epoch, the next one convex from where it starts; slow start
	 * again, HyStart++ off (RFC 9406 §4.2) */
	if (new_state == TCP_CA_Loss) {
		struct cubic *ca = inet_csk_ca(sk);

		ca->epoch_start_us = 0;
		ca->after_rto = true;
		ca->hystart_done = 1;
	}
}

SEC("struct_ops")
void BPF_PROG(cca_cubic_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	/* §5.8: an application-limited pause must not count as time in the epoch;
	 * restart the epoch (cwnd is where the pause left it). */
	if (ev == CA_EVENT_TX_START) {
		struct cubic *ca = inet_csk_ca(sk);

		ca->epoch_start_us = 0;
	}
}

/*
 * A reduction found spurious (RFC 9438 §4.9): the window before it (tp->prior_cwnd, the
 * kernel restores ssthresh), and with it, if cwnd is not already higher than that window,
 * the state the reduction changed: W_max, cwnd_prior, the epoch (t_epoch, K and its
 * origin) and W_est (§4.9.2), so growth continues as if the event had not happened
 * (after an RTO too: the epoch resumed is not the first after an RTO, §4.8). A cwnd
 * already above it keeps the current state (§4.9.2, "in rare cases"). HyStart++ stays
 * off: it is for the initial slow start only (RFC 9406 §4.2).
 */
SEC("struct_ops")
u32 BPF_PROG(cca_cubic_undo_cwnd, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct cubic *ca = inet_csk_ca(sk);

	if (tp->snd_cwnd <= tp->prior_cwnd) {
		ca->epoch_start_us = ca->undo_epoch_start_us;
		ca->w_max = ca->undo_w_max;
		ca->cwnd_prior = ca->undo_cwnd_prior;
		ca->origin = ca->undo_origin;
		ca->k = ca->undo_k;
		ca->w_est = ca->undo_w_est;
		ca->after_rto = false;
	}
	return cca_max(tp->snd_cwnd, tp->prior_cwnd);
}

CCA_CONG_CONTROL_OP(cca_cubic, cubic_ssthresh_for, cubic_cong_avoid)

CCA_OPS(cca_cubic) = {
	.init        = (void *)cca_cubic_init,
	.ssthresh    = (void *)cca_cubic_ssthresh,
	.cong_control  = (void *)cca_cubic_cong_control,
	.set_state   = (void *)cca_cubic_set_state,
	.cwnd_event  = (void *)cca_cubic_cwnd_event,
	.pkts_acked  = (void *)cca_cubic_pkts_acked,
	.undo_cwnd   = (void *)cca_cubic_undo_cwnd,
	.name        = CCA_NAME("cca_cubic"),
};


#endif /* CUBIC_PAPER_H */
