/* SPDX-License-Identifier: GPL-2.0 */
/*
 * cca_vegas.h — the RTT bookkeeping of Linux's TCP Vegas (Linux 6.12, net/ipv4/tcp_vegas.c
 * and tcp_vegas.h), which Linux's Vegas and YeAH share (tcp_yeah.c calls tcp_vegas's
 * pkts_acked, set_state and cwnd_event ops on the same state). Written for ccarena; the
 * default variants of cca_vegas and cca_yeah include it first in their private state.
 *
 *   - base_rtt: the smallest RTT sample since init or since the last restart after idle
 *     or start of transmission (CA_EVENT_CWND_RESTART, CA_EVENT_TX_START reset it);
 *   - min_rtt, cnt_rtt: the smallest sample and the number of samples of this round;
 *     a round ends on the first ACK beyond beg_snd_nxt, snd_nxt when it began;
 *   - every sample is the ACK's RTT plus 1 us (never 0); an ACK without one counts none;
 *   - doing_now: Vegas is on in Open only (set_state); entering Open starts a round.
 */
#ifndef CCA_VEGAS_H
#define CCA_VEGAS_H

#define CCA_VEGAS_NO_RTT 0x7fffffffu

struct cca_vegas {
	u32 beg_snd_nxt;   /* the right edge of the round */
	u32 beg_snd_una;   /* the left edge (YeAH keeps it, nothing reads it) */
	u32 beg_snd_cwnd;
	u8  doing_now;
	u16 cnt_rtt;
	u32 min_rtt;       /* us + 1, this round */
	u32 base_rtt;      /* us + 1 */
};

/* a new round, with Vegas on */
static __always_inline void cca_vegas_enable(struct cca_vegas *v, const struct tcp_sock *tp)
{
	v->doing_now = 1;
	v->beg_snd_nxt = tp->snd_nxt;
	v->cnt_rtt = 0;
	v->min_rtt = CCA_VEGAS_NO_RTT;
}

static __always_inline void cca_vegas_reset(struct cca_vegas *v, const struct tcp_sock *tp)
{
	v->base_rtt = CCA_VEGAS_NO_RTT;
	cca_vegas_enable(v, tp);
}

static __always_inline void cca_vegas_sample(struct cca_vegas *v, s32 rtt_us)
{
	u32 rtt;

	if (rtt_us < 0)
		return;
	rtt = (u32)rtt_us + 1;
	if (rtt < v->base_rtt)
		v->base_rtt = rtt;
	if (rtt < v->min_rtt)
		v->min_rtt = rtt;
	v->cnt_rtt++;
}

static __always_inline void cca_vegas_state(struct cca_vegas *v, const struct tcp_sock *tp,
					    u8 new_state)
{
	if (new_state == TCP_CA_Open)
		cca_vegas_enable(v, tp);
	else
		v->doing_now = 0;
}

static __always_inline void cca_vegas_event(struct cca_vegas *v, const struct tcp_sock *tp,
					    enum tcp_ca_event ev)
{
	if (ev == CA_EVENT_CWND_RESTART || ev == CA_EVENT_TX_START)
		cca_vegas_reset(v, tp);
}

/* the round's samples cleared, for the next one */
static __always_inline void cca_vegas_next_round(struct cca_vegas *v)
{
	v->cnt_rtt = 0;
	v->min_rtt = CCA_VEGAS_NO_RTT;
}

/*
 * Reno's cong_avoid as Linux's tcp_reno_cong_avoid (net/ipv4/tcp_cong.c): only when
 * cwnd-limited; slow start, with the segments past ssthresh spent in congestion avoidance.
 */
static __always_inline void cca_reno_cong_avoid(struct sock *sk, u32 acked)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!cca_grow_prologue(sk, &acked))
		return;
	cca_cong_avoid_ai(tp, tp->snd_cwnd, acked);
}

/* tcp_current_ssthresh (include/net/tcp.h): ssthresh in CWR and Recovery, else at least
 * three quarters of cwnd */
static __always_inline u32 cca_current_ssthresh(const struct sock *sk)
{
	const struct tcp_sock *tp = tcp_sk(sk);
	u8 st = cca_ca_state(sk);

	if (st == TCP_CA_CWR || st == TCP_CA_Recovery)
		return tp->snd_ssthresh;
	return cca_max(tp->snd_ssthresh, (tp->snd_cwnd >> 1) + (tp->snd_cwnd >> 2));
}

#endif /* CCA_VEGAS_H */
