// SPDX-License-Identifier: GPL-2.0
/*
 * cca_htcp — H-TCP, written from
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
#include "cca_common.h"

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
	.name       = "cca_htcp",
};
