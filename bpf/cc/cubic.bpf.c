// SPDX-License-Identifier: GPL-2.0
/*
 * cca_cubic — CUBIC (S. Ha, I. Rhee, L. Xu, "CUBIC: A New TCP-Friendly High-Speed TCP
 * Variant", ACM SIGOPS OSR 42(5), 2008; RFC 9438) with HyStart (S. Ha, I. Rhee, "Taming
 * the Elephants: New TCP Slow Start", NCSU tech report, 2008).
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_cubic.c), with its constants and
 * integer arithmetic. Its rules:
 *   - per ACK in congestion avoidance (cwnd-limited; after slow start's share) one
 *     segment per `cnt` acked segments, cnt recomputed when cwnd changed or more than
 *     HZ/32 jiffies passed (at most once per jiffy; a changed window in the same jiffy
 *     keeps cnt and only runs the Reno-friendly part):
 *       an epoch starts at the first computation after a reduction: K = cubic_root(
 *       cube_factor (W_max - cwnd)) (cube_factor = 2^40 / 410, K in 1/1024 s) and the
 *       origin W_max, or K = 0 and the origin cwnd when cwnd >= W_max; the Reno-friendly
 *       count starts with tcp_cwnd = cwnd;
 *       t = jiffies since the epoch + delay_min in jiffies (rounded up), in 1/1024 s;
 *       target = origin -/+ 410 |t - K|^3 >> 40 (u64 arithmetic, u32 result);
 *       cnt = cwnd / (target - cwnd) above cwnd, else 100 cwnd; at most 20 while
 *       W_max = 0; Reno-friendly: tcp_cwnd gains one segment per (15 cwnd) >> 3 acked
 *       segments and, when above cwnd, caps cnt at cwnd / (tcp_cwnd - cwnd); cnt >= 2;
 *     cube roots by the module's table and one Newton-Raphson step (not exact);
 *   - loss: epoch ends; W_max = cwnd 1741/2048 when cwnd < W_max (fast convergence), else
 *     cwnd; ssthresh = max(cwnd 717/1024, 2). Loss state (RTO): everything reset, HyStart
 *     again. Undo: Reno's (the window before the reduction);
 *   - an application-limited pause (CA_EVENT_TX_START) moves the epoch's start by the
 *     idle time (not past now);
 *   - RTT samples (us, 0 counted as 1), not within 1 s (HZ jiffies) of the epoch's start:
 *     delay_min = the smallest; in slow start from cwnd 16 on, until found, HyStart
 *     (its clock: tcp_mstamp in us, 32 bits), whose round restarts when snd_una passes
 *     the snd_nxt of its start:
 *       ACK train: ACKs within 2 ms of the last close one extend the train; a train
 *       longer than (delay_min + min(1 ms, 4 sk_gso_max_size / pacing rate)) / 2 (the
 *       halving only without pacing by fq or the stack) from the round's start exits;
 *       delay: after 8 samples of the round, its minimum above delay_min +
 *       clamp(delay_min / 8, 4 ms, 16 ms) exits;
 *     exit: ssthresh = cwnd.
 *
 * CCA_PAPER (cca_cubic_p): RFC 9438 and HyStart++ (below).
 */
#include "cca_common.h"

#ifndef CCA_PAPER

#define CUBIC_BETA          717u    /* / 1024 */
#define CUBIC_BETA_SCALE    1024u
#define CUBIC_HZ_SHIFT      10      /* t and K in 1/1024 s */
#define CUBIC_RTT_SCALE     410u    /* bic_scale 41 * 10: 1024 C / (0.1 s) */
#define CUBIC_CUBE_FACTOR   (((u64)1 << 40) / 410)
#define CUBIC_BETA_FRIENDLY 15u     /* 8 (1024 + 717) / 3 / (1024 - 717), truncated */
#define CUBIC_CNT_NO_LOSS   20u
#define HYSTART_LOW_WINDOW  16u
#define HYSTART_ACK_DELTA_US 2000
#define HYSTART_MIN_SAMPLES 8u
#define HYSTART_DELAY_MIN   4000u
#define HYSTART_DELAY_MAX   16000u

struct cubic {
	/* reset as one block at init and on entering Loss */
	u32 cnt;            /* one segment per cnt acked segments */
	u32 last_max_cwnd;  /* W_max */
	u32 last_cwnd;      /* the window cnt was computed for */
	u32 last_time;      /* jiffies when it was */
	u32 origin;         /* the curve's origin point */
	u32 k;              /* K, 1/1024 s */
	u32 delay_min;      /* us */
	u32 epoch_start;    /* jiffies, 0: no epoch */
	u32 ack_cnt;        /* acked segments, for the Reno-friendly estimate */
	u32 tcp_cwnd;       /* the Reno-friendly estimate */
	/* HyStart */
	u8  sample_cnt;
	u8  found;
	u32 round_start;    /* HyStart's clock (us, 32 bits) at the round's start */
	u32 end_seq;        /* snd_nxt at the round's start */
	u32 last_ack;       /* the clock at the last ACK of the train */
	u32 curr_rtt;       /* the round's smallest RTT sample */
};
CCA_PRIV_CHECK(struct cubic);

static __always_inline void cubic_reset(struct cubic *ca)
{
	ca->cnt = 0;
	ca->last_max_cwnd = 0;
	ca->last_cwnd = 0;
	ca->last_time = 0;
	ca->origin = 0;
	ca->k = 0;
	ca->delay_min = 0;
	ca->epoch_start = 0;
	ca->ack_cnt = 0;
	ca->tcp_cwnd = 0;
	ca->found = 0;
}

/* HyStart's clock: tcp_mstamp (us), 32 bits (bictcp_clock_us) */
static __always_inline u32 cubic_clock_us(const struct tcp_sock *tp)
{
	return (u32)tp->tcp_mstamp;
}

static __always_inline void hystart_reset(struct cubic *ca, const struct tcp_sock *tp)
{
	ca->round_start = ca->last_ack = cubic_clock_us(tp);
	ca->end_seq = tp->snd_nxt;
	ca->curr_rtt = ~0u;
	ca->sample_cnt = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_cubic_init, struct sock *sk)
{
	struct cubic *ca = inet_csk_ca(sk);

	cubic_reset(ca);
	hystart_reset(ca, tcp_sk(sk));
}

SEC("struct_ops")
void BPF_PROG(cca_cubic_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct cubic *ca = inet_csk_ca(sk);
	u32 now = cca_jiffies32();
	s32 idle;

	if (ev != CA_EVENT_TX_START)
		return;
	/* the idle time does not count in the epoch */
	idle = (s32)(now - tcp_sk(sk)->lsndtime);
	if (ca->epoch_start && idle > 0) {
		ca->epoch_start += idle;
		if (cca_seq_after(ca->epoch_start, now))
			ca->epoch_start = now;
	}
}

/* The module's cube root (cubic_root): the top bits through a table of
 * cbrt(x << 18) - 1 for x < 64, then one Newton-Raphson step; not exact. */
static const u8 cubic_cbrt_tab[64] = {
	0,   54,  54,  54,  118, 118, 118, 118,
	123, 129, 134, 138, 143, 147, 151, 156,
	157, 161, 164, 168, 170, 173, 176, 179,
	181, 185, 187, 190, 192, 194, 197, 199,
	200, 202, 204, 206, 209, 211, 213, 215,
	217, 219, 221, 222, 224, 225, 227, 229,
	231, 232, 234, 236, 237, 239, 240, 242,
	244, 245, 246, 248, 250, 251, 252, 254,
};

static __always_inline u32 cubic_root(u64 a)
{
	u32 bits = a ? cca_ilog2(a) + 1 : 0;   /* fls64 */
	u32 x, sh;
	u64 d;

	if (bits < 7)
		return ((u32)cubic_cbrt_tab[(u32)a & 63] + 35) >> 6;
	bits = ((bits * 84) >> 8) - 1;
	sh = (u32)(a >> (bits * 3)) & 63;
	x = ((u32)(((u32)cubic_cbrt_tab[sh] + 10) << bits)) >> 6;
	d = (u64)x * (u64)(x - 1);
	x = 2 * x + (u32)(d ? a / d : 0);
	return (x * 341) >> 10;
}

/* usecs_to_jiffies for an HZ that divides 10^6 (100, 250, 1000): rounded up */
static __always_inline u32 cubic_us_to_jiffies(u32 us, u32 hz)
{
	u32 per = 1000000u / hz;

	return (u32)(((u64)us + per - 1) / per);
}

/* cnt for the window `cwnd` (bictcp_update) */
static __always_inline void cubic_update(struct sock *sk, struct cubic *ca, u32 cwnd, u32 acked)
{
	u32 now = cca_jiffies32(), hz = cca_hz(sk);
	u32 delta, target;
	u64 t, offs;

	ca->ack_cnt += acked;
	if (ca->last_cwnd == cwnd && (s32)(now - ca->last_time) <= (s32)(hz / 32))
		return;
	/* at most once per jiffy; an epoch's reset (epoch_start 0) forces it */
	if (!(ca->epoch_start && now == ca->last_time)) {
		ca->last_cwnd = cwnd;
		ca->last_time = now;
		if (!ca->epoch_start) {
			ca->epoch_start = now;
			ca->ack_cnt = acked;
			ca->tcp_cwnd = cwnd;
			if (ca->last_max_cwnd <= cwnd) {
				ca->k = 0;
				ca->origin = cwnd;
			} else {
				ca->k = cubic_root(CUBIC_CUBE_FACTOR * (ca->last_max_cwnd - cwnd));
				ca->origin = ca->last_max_cwnd;
			}
		}
		/* jiffies since the epoch (signed, widened) + delay_min, in 1/1024 s */
		t = (u64)(s64)(s32)(now - ca->epoch_start);
		t += cubic_us_to_jiffies(ca->delay_min, hz);
		t = (t << CUBIC_HZ_SHIFT) / hz;
		offs = t < ca->k ? ca->k - t : t - ca->k;
		delta = (u32)((CUBIC_RTT_SCALE * offs * offs * offs) >> (10 + 3 * CUBIC_HZ_SHIFT));
		target = t < ca->k ? ca->origin - delta : ca->origin + delta;
		if (target > cwnd)
			ca->cnt = cwnd / (target - cwnd);
		else
			ca->cnt = 100 * cwnd;
		if (!ca->last_max_cwnd && ca->cnt > CUBIC_CNT_NO_LOSS)
			ca->cnt = CUBIC_CNT_NO_LOSS;
	}
	/* Reno-friendly: tcp_cwnd gains a segment per (15 cwnd) >> 3 acked segments */
	delta = (cwnd * CUBIC_BETA_FRIENDLY) >> 3;
	if (delta && ca->ack_cnt > delta) {
		u32 n = (ca->ack_cnt - 1) / delta;

		ca->ack_cnt -= n * delta;
		ca->tcp_cwnd += n;
	}
	if (ca->tcp_cwnd > cwnd) {
		u32 max_cnt = cwnd / (ca->tcp_cwnd - cwnd);

		if (ca->cnt > max_cnt)
			ca->cnt = max_cnt;
	}
	/* at most one segment per two acked: 1.5 cwnd per RTT */
	ca->cnt = cca_max(ca->cnt, 2);
}

/* growth rule, run by cca_cubic_cong_control (cca_common.h) */
static __always_inline void cubic_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cubic *ca = inet_csk_ca(sk);

	if (!cca_grow_prologue(sk, &acked))
		return;
	cubic_update(sk, ca, tp->snd_cwnd, acked);
	cca_cong_avoid_ai(tp, ca->cnt, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 cubic_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct cubic *ca = inet_csk_ca(sk);

	ca->epoch_start = 0;
	if (cwnd < ca->last_max_cwnd)       /* fast convergence */
		ca->last_max_cwnd = cwnd * (CUBIC_BETA_SCALE + CUBIC_BETA) / (2 * CUBIC_BETA_SCALE);
	else
		ca->last_max_cwnd = cwnd;
	return cca_max(cwnd * CUBIC_BETA / CUBIC_BETA_SCALE, 2);
}

CCA_SSTHRESH_OP(cca_cubic, cubic_ssthresh_for)

SEC("struct_ops")
void BPF_PROG(cca_cubic_set_state, struct sock *sk, u8 new_state)
{
	CCA_STATE_GUARD(sk, new_state, cubic_ssthresh_for);
	if (new_state == TCP_CA_Loss) {
		struct cubic *ca = inet_csk_ca(sk);

		cubic_reset(ca);
		hystart_reset(ca, tcp_sk(sk));
	}
}

/* HyStart's allowance for TSO/GRO batching (hystart_ack_delay): 4 GSO-sized packets at
 * the pacing rate, at most 1 ms */
static __always_inline u32 hystart_ack_delay(const struct sock *sk)
{
	u64 rate = sk->sk_pacing_rate;

	if (!rate)
		return 0;
	return (u32)cca_min64(1000, (u64)sk->sk_gso_max_size * 4 * CCA_USEC_PER_SEC / rate);
}

static __always_inline void hystart_update(struct sock *sk, struct cubic *ca, u32 delay)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 now, threshold;

	if (cca_seq_after(tp->snd_una, ca->end_seq))
		hystart_reset(ca, tp);
	if (tp->snd_cwnd < HYSTART_LOW_WINDOW)
		return;

	/* ACK train */
	now = cubic_clock_us(tp);
	if ((s32)(now - ca->last_ack) <= HYSTART_ACK_DELTA_US) {
		ca->last_ack = now;
		threshold = ca->delay_min + hystart_ack_delay(sk);
		if (sk->sk_pacing_status == SK_PACING_NONE)
			threshold >>= 1;
		/* (the module compares the signed difference with an unsigned threshold) */
		if (now - ca->round_start > threshold) {
			ca->found = 1;
			tp->snd_ssthresh = tp->snd_cwnd;
		}
	}

	/* delay increase */
	if (ca->curr_rtt > delay)
		ca->curr_rtt = delay;
	if (ca->sample_cnt < HYSTART_MIN_SAMPLES) {
		ca->sample_cnt++;
	} else {
		u32 d = ca->delay_min >> 3;

		d = d < HYSTART_DELAY_MIN ? HYSTART_DELAY_MIN : d > HYSTART_DELAY_MAX ? HYSTART_DELAY_MAX : d;
		if (ca->curr_rtt > ca->delay_min + d) {
			ca->found = 1;
			tp->snd_ssthresh = tp->snd_cwnd;
		}
	}
}

SEC("struct_ops")
void BPF_PROG(cca_cubic_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct cubic *ca = inet_csk_ca(sk);
	u32 delay;

	if (sample->rtt_us < 0)
		return;
	/* no delay samples within a second of the epoch's start (just after a recovery) */
	if (ca->epoch_start && (s32)(cca_jiffies32() - ca->epoch_start) < (s32)cca_hz(sk))
		return;
	delay = sample->rtt_us ? (u32)sample->rtt_us : 1;
	if (!ca->delay_min || ca->delay_min > delay)
		ca->delay_min = delay;
	if (!ca->found && cca_in_slow_start(tp))
		hystart_update(sk, ca, delay);
}

CCA_UNDO_PRIOR_OP(cca_cubic)

CCA_CONG_CONTROL_OP(cca_cubic, cubic_ssthresh_for, cubic_cong_avoid)

CCA_OPS(cca_cubic) = {
	.init         = (void *)cca_cubic_init,
	.ssthresh     = (void *)cca_cubic_ssthresh,
	.cong_control = (void *)cca_cubic_cong_control,
	.set_state    = (void *)cca_cubic_set_state,
	.undo_cwnd    = (void *)cca_cubic_undo_cwnd,
	.cwnd_event   = (void *)cca_cubic_cwnd_event,
	.pkts_acked   = (void *)cca_cubic_pkts_acked,
	.name         = CCA_NAME("cca_cubic"),
};

#else /* CCA_PAPER */

/* RFC 9438 with HyStart++ (cubic:paper) */
#include "cubic_paper.h"

#endif /* CCA_PAPER */
