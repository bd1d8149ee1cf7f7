// SPDX-License-Identifier: GPL-2.0
/*
 * cca_hybla — TCP Hybla (C. Caini, R. Firrincieli, "TCP Hybla: a TCP enhancement for
 * heterogeneous networks", International Journal of Satellite Communications and
 * Networking 22(5), 2004).
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_hybla.c). Its rules:
 *   - rho = srtt / RTT0 (RTT0 = 25 ms), in 1/8 (rho8, from the kernel's srtt, which is
 *     kept << 3), at least 1; recomputed at init and whenever an ACK finds srtt below
 *     the smallest srtt seen (not from RTT samples);
 *   - init: cwnd = the integer part of rho (1 for a handshake RTT below 50 ms), and
 *     cwnd kept within 65535 (Linux sets snd_cwnd_clamp so; see hybla_clamp);
 *   - per ACK (whatever it acknowledges), when cwnd-limited and in Open:
 *       slow start:  + 2^rho - 1 in 1/128 segment: 2^int(rho) * 2^(frac/8) (a table of
 *                    floor(128 * 2^(k/8))) - 128, capped at ssthresh
 *       otherwise:   + rho^2 / cwnd in 1/128 (rho8^2 * 2 / cwnd); an increment below
 *                    one segment also counts the ACK in snd_cwnd_cnt
 *     whole segments at once, the 1/128 fractions carried in cents (a whole segment of
 *     them adds one and clears snd_cwnd_cnt); with nothing to add at all (rho^2 < cwnd
 *     / 128) one segment per cwnd ACKs counted in snd_cwnd_cnt;
 *   - outside Open, Reno's growth (tcp_reno_cong_avoid); loss: Reno's halving; undo: the
 *     window before the reduction.
 *
 * CCA_PAPER (cca_hybla_p): the paper (below).
 */
#include "cca_common.h"

#ifndef CCA_PAPER

#define HYBLA_RTT0_US 25000u

struct hybla {
	u32 cents;      /* growth carried between ACKs, 1/128 segment */
	u32 rho8;       /* rho << 3 */
	u32 rho;        /* its integer part */
	u32 rho2_128;   /* rho^2 << 7 */
	u32 min_srtt;   /* the smallest srtt seen (<< 3, as the kernel keeps it) */
	u8  on;         /* in Open */
};
CCA_PRIV_CHECK(struct hybla);

/*
 * floor(128 * 2^(k/8)) for k = 0..7 (2 to the fractional eighths of rho, in 1/128: 128,
 * 139, 152, 165, 181, 197, 215, 234), one byte each, k-th byte = k-th value (a constant
 * rather than a table: clang folds a small table into code and leaves an empty .rodata
 * that libbpf refuses)
 */
#define HYBLA_POW2_EIGHTHS 0xEAD7C5B5A5988B80ull

static __always_inline u32 hybla_pow2_eighths(u32 k)
{
	return (u32)(HYBLA_POW2_EIGHTHS >> (8 * (k & 7))) & 0xff;
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 hybla_ssthresh_for(struct sock *sk, u32 cwnd)
{
	return cca_rfc5681_ssthresh(cwnd);
}

static __always_inline void hybla_rho(struct sock *sk, struct hybla *ca)
{
	ca->rho8 = cca_max(tcp_sk(sk)->srtt_us / HYBLA_RTT0_US, 8);
	ca->rho = ca->rho8 >> 3;
	ca->rho2_128 = (ca->rho8 * ca->rho8) << 1;
}

/*
 * Linux's init sets snd_cwnd_clamp = 65535; a struct_ops program may not write the clamp,
 * so Hybla's own growth (here, and Reno's outside Open) keeps the window within 65535
 * itself. (The kernel's other uses of the clamp, e.g. the restart after idle, see the
 * socket's own clamp.)
 */
#define HYBLA_CLAMP 65535u

static __always_inline u32 hybla_clamp(const struct tcp_sock *tp)
{
	return cca_min(tp->snd_cwnd_clamp, HYBLA_CLAMP);
}

SEC("struct_ops")
void BPF_PROG(cca_hybla_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hybla *ca = inet_csk_ca(sk);

	ca->cents = 0;
	ca->on = 1;
	hybla_rho(sk, ca);
	ca->min_srtt = tp->srtt_us;
	tp->snd_cwnd = ca->rho;
}

SEC("struct_ops")
void BPF_PROG(cca_hybla_set_state, struct sock *sk, u8 new_state)
{
	struct hybla *ca = inet_csk_ca(sk);

	CCA_STATE_GUARD(sk, new_state, hybla_ssthresh_for);
	ca->on = new_state == TCP_CA_Open;
}

/* growth rule, run by cca_hybla_cong_control (cca_common.h) */
static __always_inline void hybla_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hybla *ca = inet_csk_ca(sk);
	u32 inc, ss;

	if (tp->srtt_us < ca->min_srtt) {
		hybla_rho(sk, ca);
		ca->min_srtt = tp->srtt_us;
	}
	if (!cca_is_cwnd_limited(sk))
		return;
	if (!ca->on) {
		/* Reno's growth (tcp_reno_cong_avoid) */
		if (cca_in_slow_start(tp))
			acked = cca_slow_start(tp, acked);
		if (acked)
			cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
		tp->snd_cwnd = cca_min(tp->snd_cwnd, hybla_clamp(tp));
		return;
	}
	if (!ca->rho)
		hybla_rho(sk, ca);
	ss = cca_in_slow_start(tp);
	if (ss) {
		u32 eighths = ca->rho8 - (ca->rho << 3);

		inc = (1u << cca_min(ca->rho, 16)) * hybla_pow2_eighths(eighths) - 128;
	} else {
		inc = ca->rho2_128 / tp->snd_cwnd;
		if (inc < 128)
			tp->snd_cwnd_cnt++;
	}
	tp->snd_cwnd += inc >> 7;
	ca->cents += inc & 127;
	if (ca->cents >= 128) {
		tp->snd_cwnd++;
		ca->cents -= 128;
		tp->snd_cwnd_cnt = 0;
	}
	if (!inc && tp->snd_cwnd_cnt >= tp->snd_cwnd) {
		tp->snd_cwnd++;
		tp->snd_cwnd_cnt = 0;
	}
	if (ss)
		tp->snd_cwnd = cca_min(tp->snd_cwnd, tp->snd_ssthresh);
	tp->snd_cwnd = cca_min(tp->snd_cwnd, hybla_clamp(tp));
}

#else /* CCA_PAPER */

/*
 * The paper variant, written from
 *   C. Caini, R. Firrincieli, "TCP Hybla: a TCP enhancement for heterogeneous
 *   networks", International Journal of Satellite Communications and Networking
 *   22(5), 2004 (§3, the modified increase rules).
 *
 * Normalised RTT  rho = RTT / RTT0,  RTT0 = 25 ms,  rho >= 1.
 * Per acked segment:  slow start          cwnd += 2^rho - 1
 *                     congestion avoidance cwnd += rho^2 / cwnd
 * so a long-RTT flow gains window per unit of *time* like a flow with RTT0.
 * Loss: standard halving. RTT here is the smallest RTT seen (the path's
 * propagation delay; queueing would otherwise feed back into rho). rho is capped
 * at 16 so that slow start stays finite (2^16 per ACK is already a burst).
 * Fixed point: rho in 1/1024; 2^frac from its Taylor series to the 4th term
 * (error < 0.2 %).
 */

#define HYBLA_RTT0_US  25000u
#define HYBLA_RHO_MAX  (16u << 10)

struct hybla {
	struct cca_frac frac; /* congestion avoidance's credit (see cca_cong_avoid_frac):
			       * up to a window's worth, not slow-start growth */
	u32 ss_frac;      /* slow start's fraction carried between ACKs (1/1024 segment) */
	u32 rho;          /* 1/1024 */
	u32 min_rtt_us;   /* 0 = no sample yet */
};
CCA_PRIV_CHECK(struct hybla);

/* 2^(x / 1024) * 1024 for x < 17 * 1024 */
static __always_inline u64 hybla_pow2(u32 x)
{
	u64 f = x & 1023, i = x >> 10;
	/* ln2^k / k! * 1024: 709.8, 246.0, 56.8, 9.8 */
	u64 frac = 1024 + (710 * f >> 10) + (246 * f * f >> 20) + (57 * f * f * f >> 30) +
		   (10 * f * f * f * f >> 40);

	return frac << i;
}

SEC("struct_ops")
void BPF_PROG(cca_hybla_init, struct sock *sk)
{
	struct hybla *ca = inet_csk_ca(sk);

	ca->frac.acc = 0;
	ca->ss_frac = 0;
	ca->rho = 1024;
	ca->min_rtt_us = 0;
}

SEC("struct_ops")
void BPF_PROG(cca_hybla_pkts_acked, struct sock *sk, const struct ack_sample *sample)
{
	struct hybla *ca = inet_csk_ca(sk);
	s32 rtt = sample->rtt_us;

	if (rtt <= 0)
		return;
	if (!ca->min_rtt_us || (u32)rtt < ca->min_rtt_us) {
		u64 rho;

		ca->min_rtt_us = rtt;
		rho = ((u64)(u32)rtt << 10) / HYBLA_RTT0_US;
		ca->rho = (u32)cca_max64(1024, cca_min64(rho, HYBLA_RHO_MAX));
	}
}

/* growth rule, run by cca_hybla_cong_control (cca_common.h) */
static __always_inline void hybla_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct hybla *ca = inet_csk_ca(sk);

	if (!cca_is_cwnd_limited(sk))
		return;
	if (cca_in_slow_start(tp)) {
		u64 inc = (hybla_pow2(ca->rho) - 1024) * acked + ca->ss_frac;
		u64 n = inc >> 10;
		u32 room = tp->snd_ssthresh - tp->snd_cwnd;

		ca->ss_frac = inc & 1023;
		if (n > room)
			n = room;
		cca_set_cwnd(tp, tp->snd_cwnd + (u32)cca_min64(n, 0xffff));
		return;
	}
	/* rho^2 segments per RTT */
	cca_cong_avoid_frac(tp, &ca->frac, (u64)ca->rho * ca->rho >> 10, acked);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 hybla_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct hybla *ca = inet_csk_ca(sk);

	ca->frac.acc = 0;
	return cca_rfc5681_ssthresh(cwnd);
}

#endif /* CCA_PAPER */

CCA_SSTHRESH_OP(cca_hybla, hybla_ssthresh_for)

CCA_UNDO_PRIOR_OP(cca_hybla)

#ifdef CCA_PAPER
CCA_STATE_GUARD_OP(cca_hybla, hybla_ssthresh_for)
#endif

CCA_CONG_CONTROL_OP(cca_hybla, hybla_ssthresh_for, hybla_cong_avoid)

CCA_OPS(cca_hybla) = {
#ifdef CCA_PAPER
	.set_state  = (void *)cca_hybla_state_guard,
	.pkts_acked = (void *)cca_hybla_pkts_acked,
#else
	.set_state  = (void *)cca_hybla_set_state,
#endif
	.init       = (void *)cca_hybla_init,
	.ssthresh   = (void *)cca_hybla_ssthresh,
	.cong_control = (void *)cca_hybla_cong_control,
	.undo_cwnd  = (void *)cca_hybla_undo_cwnd,
	.name       = CCA_NAME("cca_hybla"),
};
