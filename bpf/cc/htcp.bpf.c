// SPDX-License-Identifier: GPL-2.0
/*
 * cca_htcp — H-TCP (D. Leith, R. Shorten, "H-TCP: TCP for high-speed and long-distance
 * networks", PFLDnet 2004; IETF draft-leith-tcp-htcp-06, 2008).
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_htcp.c, with its defaults: RTT
 * scaling and the bandwidth switch on). Times are jiffies (cca_jiffies32, cca_hz):
 *   - RTT: minRTT the smallest sample (rounded up to jiffies); maxRTT, in Open only, at
 *     least minRTT and raised to a sample at most 20 ms above it; at every congestion
 *     event it fades to minRTT + 95 % of the difference;
 *   - throughput: in Open and Disorder the acked segments are counted; once they reach
 *     cwnd - alpha and at least minRTT has passed, a sample segments * HZ / elapsed; the
 *     first rounds after an event (up to 3 minRTT) take it as it is, later an EWMA of
 *     gain 1/4 whose maximum is maxB;
 *   - beta at an event: 0.5 when maxB moved by more than a fifth since the last event
 *     (the mode switch, then off until the next event) and at the first event or when
 *     minRTT <= 10 ms; else minRTT / maxRTT in [0.5, 0.8] (in 1/128, truncated to 8 bits);
 *   - alpha = 2 (1 - beta) factor, factor = 1 + (10 d + (d/2)^2 / HZ) / HZ for d = the
 *     time since the last event beyond 1 s, scaled by minRTT / 100 ms (the scale within
 *     [0.5, 10] in eighths: alpha within 0.1x to 2x), at least 1; recomputed at each
 *     event and each segment of growth;
 *   - growth: slow start up to ssthresh (nothing beyond it); then one segment once the
 *     counter times alpha reaches cwnd, the counter advancing by the segments the last
 *     ACK in Open acknowledged, per ACK;
 *   - loss: ssthresh = max(cwnd beta, 2); the time since the last event restarts when an
 *     event begins, and again when Open is reached after it; undo restores the event
 *     time, maxRTT and the throughput memory, and the window before the reduction.
 *
 * CCA_PAPER (cca_htcp_p): the paper (below).
 */
#include "cca_common.h"

#ifndef CCA_PAPER

#define HTCP_ONE       128u   /* 1.0 in 1/128 */
#define HTCP_BETA_MIN  64u
#define HTCP_BETA_MAX  102u

struct htcp {
	u32 alpha;          /* 1/128 */
	u8  beta;           /* 1/128 */
	u8  modeswitch;     /* beta from the RTTs allowed (not at the first event) */
	u16 pkts_acked;     /* segments of the last ACK in Open */
	u32 packetcount;
	u32 min_rtt;        /* jiffies */
	u32 max_rtt;
	u32 last_cong;      /* jiffies */
	u32 undo_last_cong;
	u32 undo_max_rtt;
	u32 undo_old_maxb;
	u32 minb;
	u32 maxb;
	u32 old_maxb;
	u32 bi;
	u32 lasttime;
};
CCA_PRIV_CHECK(struct htcp);

/* msecs_to_jiffies / usecs_to_jiffies, rounded up */
static __always_inline u32 htcp_ms_to_j(const struct sock *sk, u32 ms)
{
	u32 per = 1000 / cca_hz(sk);

	return (ms + per - 1) / per;
}

static __always_inline u32 htcp_us_to_j(const struct sock *sk, u32 us)
{
	u32 per = 1000000 / cca_hz(sk);

	return (us + per - 1) / per;
}

SEC("struct_ops")
void BPF_PROG(cca_htcp_init, struct sock *sk)
{
	struct htcp *ca = inet_csk_ca(sk);

	__builtin_memset(ca, 0, sizeof(*ca));
	ca->alpha = HTCP_ONE;
	ca->beta = HTCP_BETA_MIN;
	ca->pkts_acked = 1;
	ca->last_cong = cca_jiffies32();
}

static __always_inline void htcp_alpha_update(const struct sock *sk, struct htcp *ca)
{
	u32 hz = cca_hz(sk), since = cca_jiffies32() - ca->last_cong, factor = 1;

	if (since > hz) {
		u32 d = since - hz;

		factor = 1 + (10 * d + (d / 2) * (d / 2) / hz) / hz;
	}
	if (ca->min_rtt) {
		u32 scale = (hz << 3) / (10 * ca->min_rtt);

		scale = cca_min(cca_max(scale, 4), 80);
		factor = (factor << 3) / scale;
		if (!factor)
			factor = 1;
	}
	ca->alpha = 2 * factor * (HTCP_ONE - ca->beta);
	if (!ca->alpha)
		ca->alpha = HTCP_ONE;
}

SEC("struct_ops")
void BPF_PROG(cca_htcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *ca = inet_csk_ca(sk);
	u32 now = cca_jiffies32(), hz = cca_hz(sk);
	u8 st = cca_ca_state(sk);

	if (st == TCP_CA_Open)
		ca->pkts_acked = (u16)sample->pkts_acked;
	if (sample->rtt_us > 0) {
		u32 rtt = htcp_us_to_j(sk, sample->rtt_us);

		if (ca->min_rtt > rtt || !ca->min_rtt)
			ca->min_rtt = rtt;
		if (st == TCP_CA_Open) {
			if (ca->max_rtt < ca->min_rtt)
				ca->max_rtt = ca->min_rtt;
			if (ca->max_rtt < rtt && rtt <= ca->max_rtt + htcp_ms_to_j(sk, 20))
				ca->max_rtt = rtt;
		}
	}
	if (st != TCP_CA_Open && st != TCP_CA_Disorder) {
		ca->packetcount = 0;
		ca->lasttime = now;
		return;
	}
	ca->packetcount += sample->pkts_acked;
	if (ca->packetcount >= tp->snd_cwnd - ((ca->alpha >> 7) ? (ca->alpha >> 7) : 1) &&
	    now - ca->lasttime >= ca->min_rtt && ca->min_rtt > 0) {
		u32 cur = ca->packetcount * hz / (now - ca->lasttime);

		if ((now - ca->last_cong) / ca->min_rtt <= 3) {
			ca->minb = cur;
			ca->maxb = cur;
			ca->bi = cur;
		} else {
			ca->bi = (3 * ca->bi + cur) / 4;
			if (ca->bi > ca->maxb)
				ca->maxb = ca->bi;
			if (ca->minb > ca->maxb)
				ca->minb = ca->maxb;
		}
		ca->packetcount = 0;
		ca->lasttime = now;
	}
}

/* growth rule, run by cca_htcp_cong_control (cca_common.h) */
static __always_inline void htcp_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *ca = inet_csk_ca(sk);

	if (!cca_is_cwnd_limited(sk))
		return;
	if (cca_in_slow_start(tp)) {
		cca_slow_start(tp, acked);
		return;
	}
	if ((tp->snd_cwnd_cnt * ca->alpha) >> 7 >= tp->snd_cwnd) {
		if (tp->snd_cwnd < tp->snd_cwnd_clamp)
			tp->snd_cwnd++;
		tp->snd_cwnd_cnt = 0;
		htcp_alpha_update(sk, ca);
	} else {
		tp->snd_cwnd_cnt += ca->pkts_acked;
	}
	ca->pkts_acked = 1;
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 htcp_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct htcp *ca = inet_csk_ca(sk);
	u32 min_rtt = ca->min_rtt, max_rtt = ca->max_rtt, maxb = ca->maxb, old = ca->old_maxb;

	/* beta: 0.5 at a mode switch (maxB outside [4/5, 6/5] of the last event's) */
	ca->old_maxb = maxb;
	if (6 * old - 4 * old < 5 * maxb - 4 * old) {
		ca->beta = HTCP_BETA_MIN;
		ca->modeswitch = 0;
	} else if (ca->modeswitch && min_rtt > htcp_ms_to_j(sk, 10) && max_rtt) {
		u8 b = (u8)((min_rtt << 7) / max_rtt);

		ca->beta = b < HTCP_BETA_MIN ? HTCP_BETA_MIN : b > HTCP_BETA_MAX ? HTCP_BETA_MAX : b;
	} else {
		ca->beta = HTCP_BETA_MIN;
		ca->modeswitch = 1;
	}
	htcp_alpha_update(sk, ca);
	if (min_rtt > 0 && max_rtt > min_rtt)
		ca->max_rtt = min_rtt + (max_rtt - min_rtt) * 95 / 100;
	return cca_max((cwnd * ca->beta) >> 7, 2);
}

CCA_SSTHRESH_OP(cca_htcp, htcp_ssthresh_for)

SEC("struct_ops")
u32 BPF_PROG(cca_htcp_undo_cwnd, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *ca = inet_csk_ca(sk);

	if (ca->undo_last_cong) {
		ca->last_cong = ca->undo_last_cong;
		ca->max_rtt = ca->undo_max_rtt;
		ca->old_maxb = ca->undo_old_maxb;
		ca->undo_last_cong = 0;
	}
	return cca_max(tp->snd_cwnd, tp->prior_cwnd);
}

SEC("struct_ops")
void BPF_PROG(cca_htcp_set_state, struct sock *sk, u8 new_state)
{
	struct htcp *ca = inet_csk_ca(sk);

	CCA_STATE_GUARD(sk, new_state, htcp_ssthresh_for);
	if (new_state == TCP_CA_Open) {
		if (ca->undo_last_cong) {
			ca->last_cong = cca_jiffies32();
			ca->undo_last_cong = 0;
		}
	} else if (new_state != TCP_CA_Disorder) {
		/* CWR, Recovery, Loss: an event begins (its undo remembers what it changes) */
		ca->undo_last_cong = ca->last_cong;
		ca->undo_max_rtt = ca->max_rtt;
		ca->undo_old_maxb = ca->old_maxb;
		ca->last_cong = cca_jiffies32();
	}
}

CCA_CONG_CONTROL_OP(cca_htcp, htcp_ssthresh_for, htcp_cong_avoid)

CCA_OPS(cca_htcp) = {
	.set_state  = (void *)cca_htcp_set_state,
	.init       = (void *)cca_htcp_init,
	.ssthresh   = (void *)cca_htcp_ssthresh,
	.cong_control = (void *)cca_htcp_cong_control,
	.pkts_acked = (void *)cca_htcp_pkts_acked,
	.undo_cwnd  = (void *)cca_htcp_undo_cwnd,
	.name       = CCA_NAME("cca_htcp"),
};

#else /* CCA_PAPER */

/*
 * The paper variant, written from
 *   D. Leith, R. Shorten, "H-TCP: TCP for high-speed and long-distance networks",
 *   PFLDnet 2004, and D. Leith, R. Shorten, "H-TCP: TCP Congestion Control for High
 *   Bandwidth-Delay Product Paths", IETF draft-leith-tcp-htcp-06, 2008
 *   (§3 increase function, §4 adaptive backoff).
 *
 * Delta = time since the last congestion event, Delta_L = 1 s. An event restarts the
 * clock when it begins (the window grows from its new, reduced value: during a long
 * recovery, e.g. after a time-out in slow start, alpha stays at its minimum) and again
 * when it ends (the return to the Open state: draft §3, "the time elapsed since the
 * last congestion event" counts from when the window stops being reduced):
 *   alpha(Delta) = 1                                              Delta <= Delta_L
 *                = 1 + 10 (Delta - Delta_L) + ((Delta - Delta_L) / 2)^2   otherwise
 *   alpha <- 2 (1 - beta) alpha(Delta)   (keeps the average rate when beta != 0.5)
 * Per RTT cwnd grows by alpha segments (alpha/cwnd per acked segment, at most one
 * segment per ACK as in Linux's tcp_htcp: a stretch ACK after a time-out without SACK
 * does not become a window of thousands). At a congestion event:
 *   beta = RTT_min / RTT_max, within [0.5, 0.8] (draft §4.1); RTT_min and RTT_max are
 *   the smallest and largest RTT samples of the connection, RTT_max from the Open state
 *   only (recovery inflates RTTs) and kept across events (an epoch that starts at a
 *   drained queue has not seen the full one yet); an RTO forgets RTT_max;
 *   adaptive backoff (§4.2): beta = 0.5 when the throughput before this event differs
 *   by more than 20 % from the one before the previous event (the path changed);
 *   cwnd <- beta cwnd.
 * Throughput before an event = data delivered per second over the last RTT of the
 * Open state (no sample spans a recovery).
 * Undo of a spurious event (RFC 3522 / 2883): the window, the epoch start, beta and
 * the throughput memory are restored as they were before it.
 * The optional RTT scaling of alpha (draft §3.2) is not applied.
 */

#define HTCP_DELTA_L_US  1000000ull
#define HTCP_BETA_MIN    512u    /* 0.5, 1/1024 */
#define HTCP_BETA_MAX    819u    /* 0.8 */

struct htcp {
	struct cca_frac frac; /* the increase's remainder */
	u64 last_cong_us;     /* start, then end, of the last congestion event: Delta's origin */
	u64 undo_last_cong_us;
	u64 rate_start_us;    /* throughput sampling */
	u32 rate_delivered;   /* tp->delivered at rate_start_us */
	u32 rate;             /* segments per second over the last RTT */
	u32 rate_prev_event;  /* throughput before the previous congestion event */
	u32 rtt_min_us;
	u32 rtt_max_us;       /* largest Open-state sample */
	u32 beta;             /* 1/1024 */
	u32 undo_beta;
	u32 undo_rate_prev;
	u8  in_event;         /* a reduction is under way: Delta restarts when it ends */
};
CCA_PRIV_CHECK(struct htcp);

SEC("struct_ops")
void BPF_PROG(cca_htcp_init, struct sock *sk)
{
	struct htcp *ca = inet_csk_ca(sk);
	u64 now = cca_now_us();

	ca->frac.acc = 0;
	ca->last_cong_us = now;
	ca->rate_start_us = now;
	ca->rate_delivered = tcp_sk(sk)->delivered;
	ca->rate = 0;
	ca->rate_prev_event = 0;
	ca->rtt_min_us = 0;
	ca->rtt_max_us = 0;
	ca->beta = HTCP_BETA_MIN;
	ca->undo_last_cong_us = now;
	ca->undo_beta = HTCP_BETA_MIN;
	ca->undo_rate_prev = 0;
	ca->in_event = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_htcp_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *ca = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;
	u64 now, dt;

	if (rtt > 0) {
		if (!ca->rtt_min_us || (u32)rtt < ca->rtt_min_us)
			ca->rtt_min_us = rtt;
		/* RTTs measured during recovery are inflated by the episode itself */
		if (cca_ca_state(sk) == TCP_CA_Open && (u32)rtt > ca->rtt_max_us)
			ca->rtt_max_us = rtt;
	}
	now = cca_now_us();
	if (cca_ca_state(sk) != TCP_CA_Open) {
		/* throughput is sampled in Open only: restart the sample after recovery */
		ca->rate_start_us = now;
		ca->rate_delivered = tp->delivered;
		return;
	}
	dt = now - ca->rate_start_us;
	if (dt >= cca_max(cca_srtt_us(tp), 1000)) {
		ca->rate = (u32)cca_min64((u64)(tp->delivered - ca->rate_delivered) * CCA_USEC_PER_SEC / dt,
					  0xffffffff);
		ca->rate_start_us = now;
		ca->rate_delivered = tp->delivered;
	}
}

/* alpha in 1/1024 segments per RTT */
static __always_inline u64 htcp_alpha(struct htcp *ca)
{
	u64 delta = cca_now_us() - ca->last_cong_us;
	u64 a = 1024, d;

	if (delta > HTCP_DELTA_L_US) {
		d = cca_min64(delta - HTCP_DELTA_L_US, 3600ull * CCA_USEC_PER_SEC) / 1000;   /* ms */
		/* 1 + 10 d/1000 + (d/2000)^2, scaled by 1024 */
		a = 1024 + d * 10240 / 1000 + d * d * 1024 / 4000000;
	}
	/* 2 (1 - beta) */
	return cca_max64(a * 2 * (1024 - ca->beta) >> 10, 1);
}

/* growth rule, run by cca_htcp_cong_control (cca_common.h) */
static __always_inline void htcp_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *ca = inet_csk_ca(sk);

	if (!cca_grow_prologue(sk, &acked))
		return;
	/* alpha/cwnd per acked segment, at most one segment per ACK (Linux's tcp_htcp) */
	cca_cong_avoid_frac_one(tp, &ca->frac, htcp_alpha(ca), acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 htcp_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct htcp *ca = inet_csk_ca(sk);
	u32 beta = HTCP_BETA_MIN;
	u32 prev = ca->rate_prev_event, now_rate = ca->rate;

	if (ca->rtt_min_us && ca->rtt_max_us) {
		beta = (u32)((u64)ca->rtt_min_us * 1024 / ca->rtt_max_us);
		beta = cca_max(HTCP_BETA_MIN, cca_min(beta, HTCP_BETA_MAX));
	}
	/* adaptive backoff: |B(k+1) - B(k)| / B(k) > 0.2 -> beta = 0.5 */
	if (prev) {
		u32 diff = now_rate > prev ? now_rate - prev : prev - now_rate;

		if ((u64)diff * 5 > prev)
			beta = HTCP_BETA_MIN;
	}
	if (!ca->in_event) {
		ca->undo_last_cong_us = ca->last_cong_us;
		ca->undo_beta = ca->beta;
		ca->undo_rate_prev = ca->rate_prev_event;
		ca->last_cong_us = cca_now_us();    /* the event begins: Delta restarts */
	}
	ca->in_event = 1;
	ca->beta = beta;
	ca->rate_prev_event = now_rate;
	ca->frac.acc = 0;
	return cca_max((u32)((u64)cwnd * beta >> 10), 2);
}

CCA_SSTHRESH_OP(cca_htcp, htcp_ssthresh_for)

/* undo_cwnd: a spurious event: the epoch goes on as if it had not happened (the kernel
 * then sets the Open state, which must not restart Delta) */
SEC("struct_ops")
u32 BPF_PROG(cca_htcp_undo_cwnd, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	struct htcp *ca = inet_csk_ca(sk);

	if (ca->in_event) {
		ca->last_cong_us = ca->undo_last_cong_us;
		ca->beta = ca->undo_beta;
		ca->rate_prev_event = ca->undo_rate_prev;
		ca->in_event = 0;
	}
	return cca_max(tp->snd_cwnd, tp->prior_cwnd);
}

SEC("struct_ops")
void BPF_PROG(cca_htcp_set_state, struct sock *sk, u8 new_state)
{
	struct htcp *ca = inet_csk_ca(sk);

	CCA_STATE_GUARD(sk, new_state, htcp_ssthresh_for);
	if (new_state == TCP_CA_Loss)
		ca->rtt_max_us = 0;        /* RTO: nothing is known about the path any more */
	if (new_state == TCP_CA_Open && ca->in_event) {
		/* the event is over: Delta counts from here (draft §3) */
		ca->last_cong_us = cca_now_us();
		ca->in_event = 0;
	}
}

CCA_CONG_CONTROL_OP(cca_htcp, htcp_ssthresh_for, htcp_cong_avoid)

CCA_OPS(cca_htcp) = {
	.set_state  = (void *)cca_htcp_set_state,
	.init       = (void *)cca_htcp_init,
	.ssthresh   = (void *)cca_htcp_ssthresh,
	.cong_control = (void *)cca_htcp_cong_control,
	.pkts_acked = (void *)cca_htcp_pkts_acked,
	.undo_cwnd  = (void *)cca_htcp_undo_cwnd,
	.name       = CCA_NAME("cca_htcp"),
};

#endif /* CCA_PAPER */
