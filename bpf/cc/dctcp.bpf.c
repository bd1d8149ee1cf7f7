// SPDX-License-Identifier: GPL-2.0
/*
 * cca_dctcp — Data Center TCP (M. Alizadeh et al., "Data Center TCP (DCTCP)", ACM
 * SIGCOMM 2010; S. Bensley et al., RFC 8257, 2017).
 *
 * Default: Linux's module (Linux 6.12, net/ipv4/tcp_dctcp.c and tcp_dctcp.h, with its
 * defaults dctcp_shift_g = 4 and dctcp_alpha_on_init = 1024). Its rules:
 *   - alpha in 1/1024, 1024 at the start; once per observation window (it ends when
 *     snd_una reaches the snd_nxt recorded at its start), on any ACK:
 *     alpha -= alpha >> 4 (all of alpha once that is 0, so it decays to exactly 0), then,
 *     if the window delivered CE-marked segments, alpha += (CE << 6) / delivered (the
 *     segments delivered in the window, at least 1), at most 1024;
 *   - the ssthresh op: max(cwnd - (cwnd alpha >> 11), 2), in 32 bits — on every call,
 *     an ECN echo or a loss; entering Recovery (from any other state) and at a time-out
 *     (CA_EVENT_LOSS, after the op) ssthresh is then max(cwnd / 2, 2) of the cwnd of
 *     that moment;
 *   - the window each of these saw is kept; undo: the larger of cwnd and it;
 *   - growth: Reno's;
 *   - receiver: ECE reflects the CE state of the last data segment exactly; when it
 *     changes while an ACK is delayed, that ACK goes out first with the old state's ECE
 *     and acknowledging the data before the change, and the change is ACKed at once;
 *   - a connection that did not negotiate ECN (init sees no TCP_ECN_OK; the module
 *     then switches to its dctcp-reno ops) follows Reno: halving, undo to the window
 *     before the reduction, no alpha, no receiver rule. The module also stops marking
 *     the connection's packets ECT there (INET_ECN_dontxmit), which a BPF program
 *     cannot do: such a sender's packets keep ECT(0).
 * Needs ECN on both ends: the ops carry TCP_CONG_NEEDS_ECN, and the receiving socket
 * runs DCTCP as well for the exact echo.
 *
 * CCA_PAPER (cca_dctcp_p): RFC 8257 (below).
 */
#include "cca_common.h"

#ifndef CCA_PAPER

#define DCTCP_SHIFT_G    4u
#define DCTCP_MAX_ALPHA  1024u

struct dctcp {
	u32 old_delivered;      /* tp->delivered at the window start */
	u32 old_delivered_ce;   /* tp->delivered_ce at the window start */
	u32 prior_rcv_nxt;      /* receiver: rcv_nxt at the last data segment */
	u32 alpha;              /* 1/1024 */
	u32 next_seq;           /* the window ends when snd_una reaches it */
	u32 ce_state;           /* receiver: the last data segment was CE-marked */
	u32 loss_cwnd;          /* the window at the last reduction */
	u32 reno;               /* ECN not negotiated: Reno's rules */
};
CCA_PRIV_CHECK(struct dctcp);

static __always_inline void dctcp_window_start(struct dctcp *ca, const struct tcp_sock *tp)
{
	ca->next_seq = tp->snd_nxt;
	ca->old_delivered = tp->delivered;
	ca->old_delivered_ce = tp->delivered_ce;
}

SEC("struct_ops")
void BPF_PROG(cca_dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);
	u8 st = sk->__sk_common.skc_state;

	if ((tp->ecn_flags & CCA_TCP_ECN_OK) || st == TCP_LISTEN || st == TCP_CLOSE) {
		ca->prior_rcv_nxt = tp->rcv_nxt;
		ca->alpha = DCTCP_MAX_ALPHA;
		ca->loss_cwnd = 0;
		ca->ce_state = 0;
		ca->reno = 0;
		dctcp_window_start(ca, tp);
		return;
	}
	ca->reno = 1;
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h); keeps the
 * window for undo, as the module's op does */
static __always_inline u32 dctcp_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct dctcp *ca = inet_csk_ca(sk);

	if (ca->reno)
		return cca_rfc5681_ssthresh(cwnd);
	ca->loss_cwnd = cwnd;
	return cca_max(cwnd - ((cwnd * ca->alpha) >> 11), 2);
}

CCA_SSTHRESH_OP(cca_dctcp, dctcp_ssthresh_for)

/* Sender: per ACK; the window's marks folded into alpha when it ends. */
SEC("struct_ops")
void BPF_PROG(cca_dctcp_in_ack_event, struct sock *sk, u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);
	u32 alpha, ce, delivered, decay;

	if (ca->reno || cca_seq_before(tp->snd_una, ca->next_seq))
		return;
	ce = tp->delivered_ce - ca->old_delivered_ce;
	alpha = ca->alpha;
	/* alpha (1 - g), and all of it once alpha g is 0 */
	decay = alpha >> DCTCP_SHIFT_G;
	alpha -= decay ? decay : alpha;
	if (ce) {
		delivered = tp->delivered - ca->old_delivered;
		/* + g F, in 1/1024 */
		ce = (ce << (10 - DCTCP_SHIFT_G)) / cca_max(delivered, 1);
		alpha = cca_min(alpha + ce, DCTCP_MAX_ALPHA);
	}
	ca->alpha = alpha;
	dctcp_window_start(ca, tp);
}

/* a loss: halve the window of this moment */
static __always_inline void dctcp_react_to_loss(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);

	ca->loss_cwnd = tp->snd_cwnd;
	tp->snd_ssthresh = cca_max(tp->snd_cwnd >> 1, 2);
}

/* Receiver side: ECE set while the last data segment was CE-marked. */
static __always_inline void dctcp_demand_cwr(struct sock *sk, u32 ce)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (ce)
		tp->ecn_flags |= CCA_TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~CCA_TCP_ECN_DEMAND_CWR;
}

static __always_inline void dctcp_ce_update(struct sock *sk, struct dctcp *ca, u32 ce)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (ca->ce_state != ce) {
		/* a delayed ACK for the data before the change goes out first, with the
		 * ECE those segments deserve; the change itself is ACKed at once */
		if (inet_csk(sk)->icsk_ack.pending & ICSK_ACK_TIMER) {
			dctcp_demand_cwr(sk, ca->ce_state);
			bpf_tcp_send_ack(tp, ca->prior_rcv_nxt);
		}
		inet_csk(sk)->icsk_ack.pending |= ICSK_ACK_NOW;
	}
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->ce_state = ce;
	dctcp_demand_cwr(sk, ce);
}

SEC("struct_ops")
void BPF_PROG(cca_dctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct dctcp *ca = inet_csk_ca(sk);

	if (ca->reno)
		return;
	if (ev == CA_EVENT_ECN_IS_CE || ev == CA_EVENT_ECN_NO_CE)
		dctcp_ce_update(sk, ca, ev == CA_EVENT_ECN_IS_CE);
	else if (ev == CA_EVENT_LOSS)
		dctcp_react_to_loss(sk);
}

SEC("struct_ops")
void BPF_PROG(cca_dctcp_set_state, struct sock *sk, u8 new_state)
{
	struct dctcp *ca = inet_csk_ca(sk);

	/* entering Recovery: halve the window of this moment (before the pack's own step
	 * below sets cwnd to PRR's first one) */
	if (!ca->reno && new_state == TCP_CA_Recovery && cca_ca_state(sk) != TCP_CA_Recovery)
		dctcp_react_to_loss(sk);
	CCA_STATE_GUARD(sk, new_state, dctcp_ssthresh_for);
}

SEC("struct_ops")
u32 BPF_PROG(cca_dctcp_undo_cwnd, struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	const struct dctcp *ca = inet_csk_ca(sk);

	return cca_max(tp->snd_cwnd, ca->reno ? tp->prior_cwnd : ca->loss_cwnd);
}

/* growth rule, run by cca_dctcp_cong_control (cca_common.h): Reno's */
static __always_inline void dctcp_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!cca_grow_prologue(sk, &acked))
		return;
	cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

#else /* CCA_PAPER */

/*
 * The paper variant, written from
 *   S. Bensley, D. Thaler, P. Balasubramanian, L. Eggert, G. Judd, "Data Center TCP
 *   (DCTCP): TCP Congestion Control for Data Centers", RFC 8257, 2017
 *   (§3.2 receiver, §3.3 sender estimate of alpha, §3.4 reaction, §3.5 loss), and
 *   M. Alizadeh et al., "Data Center TCP (DCTCP)", ACM SIGCOMM 2010.
 *
 * Sender, once per observation window (about one RTT, ends when snd_una passes
 * the snd_nxt recorded at its start):
 *   M     = marked / acked in the window          (segments whose ACK carried ECE)
 *   alpha = (1 - g) alpha + g M,  g = 1/16,  alpha starts at 1 (§3.3, conservative)
 * On ECE (the kernel enters CWR and asks for ssthresh): cwnd * (1 - alpha/2).
 * On loss, by duplicate ACKs or a retransmission time-out: standard halving (§3.5),
 * also when the ACK that reveals it carries ECE and when a CWR reduction is under way:
 * the set_state op sets ssthresh = max(prior_cwnd / 2, 2) on entering Recovery or Loss
 * (the kernel does not ask the ssthresh op again in those cases). Growth: Reno's
 * (RFC 5681). alpha is kept in 1/2^20 so that it decays all the way to (nearly) 0
 * without marks; in 1/1024 the term alpha*g truncates to 0 below alpha = 16/1024.
 * After an RTO alpha restarts at 1 (nothing is known about the path; §3.3's
 * conservative start) — a ccarena choice, not in RFC 8257.
 * Receiver (§3.2): ECE mirrors the CE state of the data exactly; when the CE
 * state flips while an ACK is delayed, the ACK for the data before the flip is
 * sent at once (so the sender can count marks per segment).
 * Needs ECN on both ends: the ops carry TCP_CONG_NEEDS_ECN, and the receiving
 * socket must use cca_dctcp as well.
 */

#define DCTCP_G_SHIFT   4          /* g = 1/16 */
#define DCTCP_ALPHA_SHIFT 20
#define DCTCP_ALPHA_ONE (1u << DCTCP_ALPHA_SHIFT)   /* alpha in 1/2^20 */

struct dctcp {
	u32 alpha;              /* 0..2^20 */
	u32 win_end;            /* snd_nxt at the start of the observation window */
	u32 delivered_start;    /* tp->delivered at the window start */
	u32 ce_start;           /* tp->delivered_ce at the window start */
	u32 prior_rcv_nxt;      /* receiver: rcv_nxt before the packet being handled */
	u8  ce_state;           /* receiver: last data packet was CE-marked */
	u8  ece_seen;           /* sender: the ACK that triggers a reduction carried ECE */
};
CCA_PRIV_CHECK(struct dctcp);

static __always_inline void dctcp_window_start(struct dctcp *ca, const struct tcp_sock *tp)
{
	ca->win_end = tp->snd_nxt;
	ca->delivered_start = tp->delivered;
	ca->ce_start = tp->delivered_ce;
}

SEC("struct_ops")
void BPF_PROG(cca_dctcp_init, struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);

	ca->alpha = DCTCP_ALPHA_ONE;
	ca->prior_rcv_nxt = tp->rcv_nxt;
	ca->ce_state = 0;
	ca->ece_seen = 0;
	dctcp_window_start(ca, tp);
}

static __always_inline u32 dctcp_ssthresh_for(struct sock *sk, u32 cwnd);

/* Sender: per ACK; fold the window into alpha when it ends (§3.3). */
SEC("struct_ops")
void BPF_PROG(cca_dctcp_in_ack_event, struct sock *sk, u32 flags)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct dctcp *ca = inet_csk_ca(sk);

	ca->ece_seen = (flags & CA_ACK_ECE) ? 1 : 0;
	if (cca_seq_before(tp->snd_una, ca->win_end))
		return;
	{
		u32 acked = tp->delivered - ca->delivered_start;
		u32 marked = tp->delivered_ce - ca->ce_start;
		u32 alpha = ca->alpha;
		u32 m = 0;

		if (acked) {
			marked = cca_min(marked, acked);
			m = (u32)((u64)marked * DCTCP_ALPHA_ONE / acked);
		}
		/* alpha = alpha - alpha*g + M*g, in 1/2^20 */
		alpha = alpha - (alpha >> DCTCP_G_SHIFT) + (m >> DCTCP_G_SHIFT);
		ca->alpha = cca_min(alpha, DCTCP_ALPHA_ONE);
	}
	dctcp_window_start(ca, tp);
}

/* ssthresh for a window of `cwnd` (also used by the guard, see cca_common.h) */
static __always_inline u32 dctcp_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct dctcp *ca = inet_csk_ca(sk);

	if (!ca->ece_seen)
		return cca_rfc5681_ssthresh(cwnd);           /* loss: §3.5 */
	/* §3.4: cwnd * (1 - alpha / 2) */
	return cca_max(cwnd - (u32)((u64)cwnd * ca->alpha >> (DCTCP_ALPHA_SHIFT + 1)), 2);
}

CCA_SSTHRESH_OP(cca_dctcp, dctcp_ssthresh_for)

/* Receiver side: exact ECE echo (§3.2). */
static __always_inline void dctcp_ce_flip(struct sock *sk, struct dctcp *ca, u8 ce)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (ca->ce_state != ce) {
		/* an ACK delayed for the packets before the flip goes out now,
		 * with the ECE value those packets deserve */
		if (inet_csk(sk)->icsk_ack.pending & ICSK_ACK_TIMER)
			bpf_tcp_send_ack(tp, ca->prior_rcv_nxt);
		inet_csk(sk)->icsk_ack.pending |= ICSK_ACK_NOW;
		ca->ce_state = ce;
	}
	ca->prior_rcv_nxt = tp->rcv_nxt;
	if (ce)
		tp->ecn_flags |= CCA_TCP_ECN_DEMAND_CWR;
	else
		tp->ecn_flags &= ~CCA_TCP_ECN_DEMAND_CWR;
}

SEC("struct_ops")
void BPF_PROG(cca_dctcp_cwnd_event, struct sock *sk, enum tcp_ca_event ev)
{
	struct dctcp *ca = inet_csk_ca(sk);

	if (ev == CA_EVENT_ECN_IS_CE)
		dctcp_ce_flip(sk, ca, 1);
	else if (ev == CA_EVENT_ECN_NO_CE)
		dctcp_ce_flip(sk, ca, 0);
}

SEC("struct_ops")
void BPF_PROG(cca_dctcp_set_state, struct sock *sk, u8 new_state)
{
	CCA_STATE_GUARD(sk, new_state, dctcp_ssthresh_for);
	/* §3.5: a loss halves, whatever the ECE state of the ACK that showed it */
	if ((new_state == TCP_CA_Recovery || new_state == TCP_CA_Loss) &&
	    cca_ca_state(sk) != new_state) {
		struct tcp_sock *tp = tcp_sk(sk);

		tp->snd_ssthresh = cca_rfc5681_ssthresh(cca_sane_prior_cwnd(tp));
	}
	/* after an RTO nothing is known about the path: alpha back to 1 (conservative) */
	if (new_state == TCP_CA_Loss) {
		struct dctcp *ca = inet_csk_ca(sk);

		ca->alpha = DCTCP_ALPHA_ONE;
		dctcp_window_start(ca, tcp_sk(sk));
	}
}

/* growth rule, run by cca_dctcp_cong_control (cca_common.h) */
static __always_inline void dctcp_cong_avoid(struct sock *sk, u32 ack, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!cca_grow_prologue(sk, &acked))
		return;
	cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

CCA_UNDO_PRIOR_OP(cca_dctcp)

#endif /* CCA_PAPER */

/* the same registration for both variants */
CCA_CONG_CONTROL_OP(cca_dctcp, dctcp_ssthresh_for, dctcp_cong_avoid)

CCA_OPS(cca_dctcp) = {
	.init         = (void *)cca_dctcp_init,
	.ssthresh     = (void *)cca_dctcp_ssthresh,
	.cong_control   = (void *)cca_dctcp_cong_control,
	.in_ack_event = (void *)cca_dctcp_in_ack_event,
	.cwnd_event   = (void *)cca_dctcp_cwnd_event,
	.set_state    = (void *)cca_dctcp_set_state,
	.undo_cwnd    = (void *)cca_dctcp_undo_cwnd,
	.flags        = CCA_TCP_CONG_NEEDS_ECN,
	.name         = CCA_NAME("cca_dctcp"),
};
