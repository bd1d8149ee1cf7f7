// SPDX-License-Identifier: GPL-2.0
/*
 * cca_htcp — H-TCP, written from
 *   D. Leith, R. Shorten, "H-TCP: TCP for high-speed and long-distance networks",
 *   PFLDnet 2004, and D. Leith, R. Shorten, "H-TCP: TCP Congestion Control for High
 *   Bandwidth-Delay Product Paths", IETF draft-leith-tcp-htcp-06, 2008
 *   (§3 increase function, §4 adaptive backoff).
 *
 * Delta = time since the last congestion event, Delta_L = 1 s:
 *   alpha(Delta) = 1                                              Delta <= Delta_L
 *                = 1 + 10 (Delta - Delta_L) + ((Delta - Delta_L) / 2)^2   otherwise
 *   alpha <- 2 (1 - beta) alpha(Delta)   (keeps the average rate when beta != 0.5)
 * Per RTT cwnd grows by alpha segments. At a congestion event:
 *   beta = RTT_min / RTT_max (of the epoch that ends), within [0.5, 0.8];
 *   adaptive backoff: beta = 0.5 when the throughput before this event differs by
 *   more than 20 % from the one before the previous event (the path changed);
 *   cwnd <- beta cwnd.
 * Throughput before an event = data delivered per second over the last RTT.
 * The optional RTT scaling of alpha (draft §3.2) is not applied.
 */
#include "cca_common.h"

#define HTCP_DELTA_L_US  1000000ull
#define HTCP_BETA_MIN    512u    /* 0.5, 1/1024 */
#define HTCP_BETA_MAX    819u    /* 0.8 */

struct htcp {
	u64 acc;
	u64 last_cong_us;     /* start of the current epoch */
	u64 rate_start_us;    /* throughput sampling */
	u32 rate_delivered;   /* tp->delivered at rate_start_us */
	u32 rate;             /* segments per second over the last RTT */
	u32 rate_prev_event;  /* throughput before the previous congestion event */
	u32 rtt_min_us;
	u32 rtt_max_us;       /* of the current epoch */
	u32 beta;             /* 1/1024 */
};
CCA_PRIV_CHECK(struct htcp);

SEC("struct_ops")
void BPF_PROG(cca_htcp_init, struct sock *sk)
{
	struct htcp *ca = inet_csk_ca(sk);
	u64 now = cca_now_us();

	ca->acc = 0;
	ca->last_cong_us = now;
	ca->rate_start_us = now;
	ca->rate_delivered = tcp_sk(sk)->delivered;
	ca->rate = 0;
	ca->rate_prev_event = 0;
	ca->rtt_min_us = 0;
	ca->rtt_max_us = 0;
	ca->beta = HTCP_BETA_MIN;
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
	cca_cong_avoid_frac(tp, &ca->acc, htcp_alpha(ca), acked);
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
	ca->beta = beta;
	ca->rate_prev_event = now_rate;
	ca->last_cong_us = cca_now_us();
	ca->rtt_max_us = 0;
	ca->acc = 0;
	return cca_max((u32)((u64)cwnd * beta >> 10), 2);
}

CCA_SSTHRESH_OP(cca_htcp, htcp_ssthresh_for)

CCA_UNDO_PRIOR_OP(cca_htcp)

CCA_STATE_GUARD_OP(cca_htcp, htcp_ssthresh_for)

CCA_CONG_CONTROL_OP(cca_htcp, htcp_ssthresh_for, htcp_cong_avoid)

CCA_OPS(cca_htcp) = {
	.set_state  = (void *)cca_htcp_state_guard,
	.init       = (void *)cca_htcp_init,
	.ssthresh   = (void *)cca_htcp_ssthresh,
	.cong_control = (void *)cca_htcp_cong_control,
	.pkts_acked = (void *)cca_htcp_pkts_acked,
	.undo_cwnd  = (void *)cca_htcp_undo_cwnd,
	.name       = "cca_htcp",
};
