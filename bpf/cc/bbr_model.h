/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bbr_model.h — the network path model shared by ccarena's BBRv3 (bbr3.bpf.c) and
 * BBRv2 (bbr2.bpf.c): the per-connection state, the units, the rate sample as the
 * model reads it, and the estimators (round counting, BBR.max_bw, BBR.min_rtt,
 * BBR.extra_acked, the short-term model and the per-round delivery signals).
 *
 * Written from the specifications, cited as
 *   [v3] draft-ietf-ccwg-bbr-06, "BBR Congestion Control" (N. Cardwell, I. Swett,
 *        J. Beshay, July 2026), which specifies BBRv3;
 *   [v2] draft-cardwell-iccrg-bbr-congestion-control-02 (N. Cardwell, Y. Cheng,
 *        S. Hassas Yeganeh, I. Swett, V. Jacobson, March 2022), which specifies BBRv2.
 * Section numbers are theirs. Where the two differ, the code branches on BBR_V (2 or
 * 3), which the including .bpf.c defines with the version's parameters (BBR_P_*).
 *
 * Units (the drafts count bytes and seconds; both allow packets, §2 Terminology):
 *   volumes in segments (tp->snd_cwnd's unit); times in µs of CLOCK_MONOTONIC;
 *   bandwidth in segments per µs << BBR_BW_SHIFT; gains in 1/1000 (BBR_UNIT).
 *
 * The state lives in socket storage (map bbr_state_map, named per version by the
 * .bpf.c), not in icsk_ca_priv: the model needs about 300 bytes, icsk_ca_priv has 104.
 */
#ifndef BBR_MODEL_H
#define BBR_MODEL_H

#include "bbr_state.h"

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct bbr_conn);
} bbr_state_map SEC(".maps");

static __always_inline struct bbr_conn *bbr_of(struct sock *sk, bool create)
{
	return bpf_sk_storage_get(&bbr_state_map, sk, 0,
				  create ? BPF_SK_STORAGE_GET_F_CREATE : 0);
}

/*
 * What one ACK tells the model: the kernel's rate sample (struct rate_sample, filled by
 * tcp_rate_gen() as [v3] §4.1.2.3 describes) read into the drafts' names, and the two
 * per-packet quantities the kernel does not record (RS.lost, RS.tx_in_flight),
 * estimated by bbr_loss_sample().
 */
struct bbr_ack {
	u64 now;                 /* µs */
	u64 delivery_rate;       /* RS.delivery_rate, bw units; 0: no sample */
	u32 delivered;           /* RS.delivered; 0 if the ACK carries no sample */
	u32 prior_delivered;     /* RS.prior_delivered (P.delivered of the newest packet) */
	u32 newly_acked;         /* RS.newly_acked */
	u32 newly_lost;          /* RS.newly_lost */
	u32 delivered_ce;        /* RS.delivered_ce */
	u32 inflight;            /* C.inflight after the ACK */
	u32 lost;                /* RS.lost (estimate) */
	u32 tx_in_flight;        /* RS.tx_in_flight (estimate) */
	s64 rtt;                 /* RS.rtt, µs; -1: none */
	u8 has_sample;           /* RS.prior_delivered is valid */
	u8 app_limited;          /* RS.is_app_limited */
};

/* --- arithmetic --- */
static __always_inline u64 bbr_min64(u64 a, u64 b) { return a < b ? a : b; }
static __always_inline u64 bbr_max64(u64 a, u64 b) { return a > b ? a : b; }

/* a >= b in the delivered counter's modulo-2^32 order */
static __always_inline bool bbr_after_eq(u32 a, u32 b)
{
	return (s32)(a - b) >= 0;
}

/* x * gain, gain in 1/1000, for volumes (floor) */
static __always_inline u32 bbr_scale(u32 x, u32 gain)
{
	return (u32)((u64)x * gain / BBR_UNIT);
}

static __always_inline u64 bbr_scale64(u64 x, u32 gain)
{
	if (x == BBR_INF64)
		return x;
	return x / BBR_UNIT * gain + x % BBR_UNIT * gain / BBR_UNIT;
}

/* C.has_selective_acks: the connection negotiated SACK. The bitfield is read through a
 * pointer to its own struct: CO-RE relocates a bitfield from the root of the access, so
 * &tp->rx_opt would count rx_opt's offset twice. */
static __always_inline bool bbr_has_sack(const struct tcp_sock *tp)
{
#ifdef __bpf__
	const struct tcp_options_received *rx =
		(const void *)tp + bpf_core_field_offset(struct tcp_sock, rx_opt);

	return CCA_BITFIELD(rx, sack_ok) != 0;
#else
	return tp->rx_opt.sack_ok != 0;
#endif
}

static __always_inline bool bbr_in_probe_bw(const struct bbr_conn *bbr)
{
	return bbr->state >= ST_PROBE_BW_DOWN && bbr->state <= ST_PROBE_BW_UP;
}

/* IsProbingBW(), [v3] §5.3.3.9 */
static __always_inline bool bbr_is_probing_bw(const struct bbr_conn *bbr)
{
	return bbr->state == ST_STARTUP || bbr->state == ST_PROBE_BW_REFILL ||
	       bbr->state == ST_PROBE_BW_UP;
}

/*
 * BDPMultiple(bw, gain), [v3] §5.6.4.2: gain × bw × min_rtt, rounded up to whole
 * segments (a BDP rounded down would shrink the window it is measured through), or
 * C.InitialCwnd before any RTT sample. bw × min_rtt stays below 2^52 for paths up to
 * 2^28 units (~1 Tbit/s) and 2^24 µs; it is shifted by 10 so the gain fits beside it.
 */
static __always_inline u32 bbr_bdp_multiple(const struct bbr_conn *bbr, u64 bw, u32 gain)
{
	u64 w;

	if (bbr->min_rtt == BBR_INF)
		return bbr->init_cwnd;
	w = (bw * bbr->min_rtt) >> 10;
	w = w * gain;
	return (u32)((w + ((u64)BBR_UNIT << (BBR_BW_SHIFT - 10)) - 1) /
		     ((u64)BBR_UNIT << (BBR_BW_SHIFT - 10)));
}

/* BBR.bdp = BBR.bw × BBR.min_rtt */
static __always_inline u32 bbr_bdp(const struct bbr_conn *bbr)
{
	return bbr_bdp_multiple(bbr, bbr->bw, BBR_UNIT);
}

/* TargetInflight(), [v3] §5.3.3.8.3: the BDP, unless congestion cut cwnd */
static __always_inline u32 bbr_target_inflight(const struct bbr_conn *bbr, const struct tcp_sock *tp)
{
	return cca_min(bbr_bdp(bbr), tp->snd_cwnd);
}

/*
 * UpdateWindowedMaxFilter() for BBR.extra_acked ([v3] §5.5.9): sample v in round t;
 * returns the largest sample of rounds t - win + 1 .. t (win <= BBR_ROUND_SLOTS).
 */
static __always_inline u32 bbr_round_max_update(struct bbr_round_max *f, u32 t, u32 win, u32 v)
{
	u32 slot = t & (BBR_ROUND_SLOTS - 1), best = 0;
	int i;

	if (f->round[slot] != t) {
		f->round[slot] = t;
		f->v[slot] = 0;
	}
	f->v[slot] = cca_max(f->v[slot], v);
#pragma unroll
	for (i = 0; i < BBR_ROUND_SLOTS; i++) {
		if (t - f->round[i] < win)
			best = cca_max(best, f->v[i]);
	}
	return best;
}

/* --- reading the ACK --- */

/*
 * RS.lost and RS.tx_in_flight ([v3] §2.3), which the kernel's rate sample lacks: the
 * data marked lost, and the data in flight, between the transmission of the newest
 * packet this ACK delivered and now. The model keeps C.delivered and C.lost at the
 * start of the current and of the previous round; the newest packet was sent when
 * C.delivered was P.delivered (RS.prior_delivered), and C.lost then is interpolated
 * between the two starts (losses taken as spread evenly over a round). Everything in
 * flight at that send is delivered or marked lost by the time it is acknowledged, so
 * RS.tx_in_flight = RS.delivered + RS.lost. An ACK without a delivery sample is read
 * as if its packet had been sent at the start of the previous round.
 */
static __always_inline void bbr_loss_sample(const struct bbr_conn *bbr, const struct tcp_sock *tp,
					    struct bbr_ack *a)
{
	u32 d0 = bbr->rnd_delivered[1], d1 = bbr->rnd_delivered[0];
	u32 l0 = bbr->rnd_lost[1], l1 = bbr->rnd_lost[0];
	u32 p = a->has_sample ? a->prior_delivered : d0;
	u32 lost_at_send;

	if (bbr_after_eq(p, d1))
		lost_at_send = l1;
	else if (!bbr_after_eq(p, d0) || d1 == d0)
		lost_at_send = l0;
	else
		lost_at_send = l0 + (u32)((u64)(l1 - l0) * (p - d0) / (d1 - d0));
	a->lost = tp->lost - lost_at_send;
	a->tx_in_flight = (tp->delivered - p) + a->lost;
}

/*
 * ProbeRTT's MarkConnectionAppLimited() ([v3] §5.3.4.3) marks the data sent while the
 * window is cut, so its low rate samples do not enter the model. The kernel's marker
 * (tp->app_limited) is not writable from BPF on every kernel, so the model keeps its
 * own with the kernel's semantics: the packets sent from the first marking on, until
 * C.delivered passes C.delivered + C.inflight at the last marking.
 */
static __always_inline void bbr_mark_app_limited(struct bbr_conn *bbr, const struct tcp_sock *tp,
						 u32 inflight)
{
	if (!bbr->app_limited_until)
		bbr->app_limited_from = tp->delivered;
	bbr->app_limited_until = cca_max(tp->delivered + inflight, 1);
}

static __always_inline bool bbr_sample_app_limited(struct bbr_conn *bbr, const struct tcp_sock *tp,
						   const struct bbr_ack *a)
{
	if (bbr->app_limited_until && !bbr_after_eq(bbr->app_limited_until, tp->delivered))
		bbr->app_limited_until = 0;          /* the marked data is delivered */
	return bbr->app_limited_until && a->has_sample &&
	       bbr_after_eq(a->prior_delivered, bbr->app_limited_from) &&
	       bbr_after_eq(bbr->app_limited_until, a->prior_delivered);
}

/* The kernel's rate sample into the drafts' names ([v3] §4.1.2.3, GenerateRateSample) */
static __always_inline void bbr_read_ack(struct bbr_conn *bbr, struct sock *sk,
					 const struct rate_sample *rs, struct bbr_ack *a)
{
	struct tcp_sock *tp = tcp_sk(sk);
	s32 delivered = rs->delivered;
	long interval = rs->interval_us;
	int losses = rs->losses;

	a->now = cca_now_us();
	a->has_sample = delivered > 0;
	a->delivered = delivered > 0 ? (u32)delivered : 0;
	a->prior_delivered = rs->prior_delivered;
	a->delivery_rate = 0;
	if (delivered > 0 && interval > 0)
		a->delivery_rate = ((u64)delivered << BBR_BW_SHIFT) / (u64)interval;
	a->newly_acked = rs->acked_sacked;
	a->newly_lost = losses > 0 ? (u32)losses : 0;
	a->delivered_ce = rs->delivered_ce > 0 ? (u32)rs->delivered_ce : 0;
	a->rtt = rs->rtt_us;
	a->inflight = cca_packets_in_flight(tp);
	a->app_limited = rs->is_app_limited || bbr_sample_app_limited(bbr, tp, a);
	bbr_loss_sample(bbr, tp, a);
}

/* --- the estimators --- */

/* StartRound(), [v3] §5.5.1 */
static __always_inline void bbr_start_round(struct bbr_conn *bbr, const struct tcp_sock *tp)
{
	bbr->next_round_delivered = tp->delivered;
}

/* UpdateRound(), [v3] §5.5.1: a round ends with the ACK of a packet sent after the
 * round began. At each round start the loss samples move on. */
static __always_inline void bbr_update_round(struct bbr_conn *bbr, const struct tcp_sock *tp,
					     const struct bbr_ack *a)
{
	if (a->has_sample && bbr_after_eq(a->prior_delivered, bbr->next_round_delivered)) {
		bbr_start_round(bbr, tp);
		bbr->round_count++;
		bbr->rounds_since_probe_up++;
		bbr->round_start = 1;
		bbr->rnd_delivered[1] = bbr->rnd_delivered[0];
		bbr->rnd_lost[1] = bbr->rnd_lost[0];
		bbr->rnd_delivered[0] = tp->delivered;
		bbr->rnd_lost[0] = tp->lost;
	} else {
		bbr->round_start = 0;
	}
}

static __always_inline u64 bbr_max_bw(const struct bbr_conn *bbr)
{
	return bbr_max64(bbr->max_bw[0], bbr->max_bw[1]);
}

/* UpdateMaxBw(), [v3] §5.5.5: application-limited samples enter only if they raise the
 * estimate. The filter's window is this ProbeBW cycle and the previous one. */
static __always_inline void bbr_update_max_bw(struct bbr_conn *bbr, const struct tcp_sock *tp,
					      const struct bbr_ack *a)
{
	u32 slot = bbr->cycle_count & 1;

	bbr_update_round(bbr, tp, a);
	if (a->delivery_rate > 0 &&
	    (a->delivery_rate >= bbr_max_bw(bbr) || !a->app_limited))
		bbr->max_bw[slot] = bbr_max64(bbr->max_bw[slot], a->delivery_rate);
}

/* AdvanceMaxBwFilter(), [v3] §5.5.6: a new cycle's slot starts empty */
static __always_inline void bbr_advance_max_bw_filter(struct bbr_conn *bbr)
{
	bbr->cycle_count++;
	bbr->max_bw[bbr->cycle_count & 1] = 0;
}

/* UpdateMinRTT(), [v3] §5.3.4.3: min_rtt integrated with ProbeRTT's schedule */
static __always_inline void bbr_update_min_rtt(struct bbr_conn *bbr, const struct bbr_ack *a)
{
	bool min_rtt_expired;

	bbr->probe_rtt_expired = a->now > bbr->probe_rtt_min_stamp + BBR_PROBE_RTT_INTERVAL_US;
	if (a->rtt >= 0 && ((u64)a->rtt < bbr->probe_rtt_min_delay || bbr->probe_rtt_expired)) {
		bbr->probe_rtt_min_delay = (u32)a->rtt;
		bbr->probe_rtt_min_stamp = a->now;
	}
	min_rtt_expired = a->now > bbr->min_rtt_stamp + BBR_MIN_RTT_WIN_US;
	if (bbr->probe_rtt_min_delay < bbr->min_rtt || min_rtt_expired) {
		bbr->min_rtt = bbr->probe_rtt_min_delay;
		bbr->min_rtt_stamp = bbr->probe_rtt_min_stamp;
	}
}

/* UpdateACKAggregation(), [v3] §5.5.9: data acknowledged beyond what bw explains since
 * the aggregation epoch began; windowed max over 10 rounds (1 in Startup) */
static __always_inline void bbr_update_ack_aggregation(struct bbr_conn *bbr, const struct tcp_sock *tp,
						       const struct bbr_ack *a)
{
	u64 interval = a->now - bbr->extra_acked_interval_start;
	u64 expected = (bbr->bw * interval) >> BBR_BW_SHIFT;
	u64 extra;

	if (bbr->extra_acked_delivered <= expected) {
		bbr->extra_acked_delivered = 0;
		bbr->extra_acked_interval_start = a->now;
		expected = 0;
	}
	bbr->extra_acked_delivered += a->newly_acked;
	extra = bbr->extra_acked_delivered - expected;
	extra = bbr_min64(extra, tp->snd_cwnd);
	bbr->extra_acked = bbr_round_max_update(&bbr->extra_acked_filter, bbr->round_count,
						bbr->full_bw_reached ? BBR_EXTRA_ACKED_WIN : 1,
						(u32)extra);
}

#endif /* BBR_MODEL_H */
