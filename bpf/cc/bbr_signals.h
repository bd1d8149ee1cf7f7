/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bbr_signals.h — how ccarena's BBRv3 and BBRv2 respond to congestion signals (loss,
 * and for v3 ECN) outside bandwidth probing: the per-round delivery signals, the
 * short-term model (BBR.bw_shortterm, BBR.inflight_shortterm), and the state saved for
 * an undo, after [v3] §5.5.10.3 and §5.5.11 (citations: bbr_model.h). Included after
 * bbr_model.h.
 */
#ifndef BBR_SIGNALS_H
#define BBR_SIGNALS_H

/* ResetCongestionSignals(), [v3] §5.5.10.3 */
static __always_inline void bbr_reset_congestion_signals(struct bbr_conn *bbr)
{
	bbr->is_loss_in_round = 0;
	bbr->ecn_in_round = 0;
	bbr->bw_latest = 0;
	bbr->inflight_latest = 0;
}

/* ResetShortTermModel(), [v3] §5.5.10.3 ([v2] BBRResetLowerBounds) */
static __always_inline void bbr_reset_short_term_model(struct bbr_conn *bbr)
{
	bbr->bw_shortterm = BBR_INF64;
	bbr->inflight_shortterm = BBR_INF;
}

/* UpdateLatestDeliverySignals(), [v3] §5.5.10.3: the per-round maxima of delivery rate
 * and delivered volume, and the loss round (one round from the last loss round start) */
static __always_inline void bbr_update_latest_delivery_signals(struct bbr_conn *bbr,
							       const struct tcp_sock *tp,
							       const struct bbr_ack *a)
{
	bbr->loss_round_start = 0;
	bbr->bw_latest = bbr_max64(bbr->bw_latest, a->delivery_rate);
	bbr->inflight_latest = cca_max(bbr->inflight_latest, a->delivered);
	if (a->has_sample && bbr_after_eq(a->prior_delivered, bbr->loss_round_delivered)) {
		bbr->loss_round_delivered = tp->delivered;
		bbr->loss_round_start = 1;
	}
}

/* AdvanceLatestDeliverySignals(), [v3] §5.5.10.3; a new loss round also restarts the
 * counts Startup's loss exit judges (bbr_check_startup_high_loss) */
static __always_inline void bbr_advance_latest_delivery_signals(struct bbr_conn *bbr,
								const struct tcp_sock *tp,
								const struct bbr_ack *a)
{
	if (!bbr->loss_round_start)
		return;
	bbr->bw_latest = a->delivery_rate;
	bbr->inflight_latest = a->delivered;
	bbr->lr_delivered = tp->delivered;
	bbr->lr_lost = tp->lost;
	bbr->lr_loss_events = 0;
}

/* InitLowerBounds() and LossLowerBounds(), [v3] §5.5.10.3: once per round with loss,
 * the short-term model moves toward the latest delivery, at most by Beta per round */
static __always_inline void bbr_init_lower_bounds(struct bbr_conn *bbr, const struct tcp_sock *tp)
{
	if (bbr->bw_shortterm == BBR_INF64)
		bbr->bw_shortterm = bbr_max_bw(bbr);
	if (bbr->inflight_shortterm == BBR_INF)
		bbr->inflight_shortterm = tp->snd_cwnd;
}

static __always_inline void bbr_loss_lower_bounds(struct bbr_conn *bbr)
{
	bbr->bw_shortterm = bbr_max64(bbr->bw_latest, bbr_scale64(bbr->bw_shortterm, BBR_BETA));
	bbr->inflight_shortterm = cca_max(bbr->inflight_latest,
					  bbr_scale(bbr->inflight_shortterm, BBR_BETA));
}

/*
 * ECN. [v3] §3.8 specifies no particular response but requires CE marks to be treated
 * as congestion when the connection negotiated ECN; [v2] has no ECN. bbr3 follows the
 * design of Google's BBRv2/v3 releases for DCTCP/L4S-style marking (BBR_ECN set):
 *   - alpha, the fraction of delivered data that was CE-marked, as an EWMA over round
 *     trips with gain 1/16, starting at 1 (as DCTCP's, RFC 8257 §3.3);
 *   - when not probing, a round with CE marks cuts the short-term volume bound
 *     inflight_shortterm by alpha / 3 (BBR_ECN_FACTOR), beside the loss response;
 *   - while probing, a rate sample with more than half its data CE-marked counts as
 *     "inflight too high", as excess loss does;
 *   - Startup ends after two rounds in a row with more than half the data marked.
 * Used only when the connection negotiated ECN (TCP_ECN_OK).
 */
#define BBR_ECN_GAIN_SHIFT  4        /* g = 1/16 */
#define BBR_ECN_FACTOR      333u     /* 1/3, in 1/1000 */
#define BBR_ECN_THRESH      500u     /* 50 %, in 1/1000 */
#define BBR_FULL_ECN_CNT    2u

static __always_inline bool bbr_ecn_eligible(const struct tcp_sock *tp)
{
	return BBR_ECN && (tp->ecn_flags & CCA_TCP_ECN_OK);
}

/* a rate sample with more than BBR_ECN_THRESH of its data CE-marked */
static __always_inline bool bbr_ecn_too_high(const struct bbr_conn *bbr, const struct tcp_sock *tp,
					     const struct bbr_ack *a)
{
	return bbr_ecn_eligible(tp) && a->delivered > 0 &&
	       (u64)a->delivered_ce * BBR_UNIT > (u64)a->delivered * BBR_ECN_THRESH;
}

/* At each round start: alpha from the round's marked fraction; Startup's ECN exit. */
static __always_inline void bbr_ecn_update_round(struct bbr_conn *bbr, const struct tcp_sock *tp)
{
	u32 d = tp->delivered - bbr->alpha_delivered;
	u32 ce = tp->delivered_ce - bbr->alpha_delivered_ce;
	u32 frac;

	if (!bbr->round_start)
		return;
	bbr->alpha_delivered = tp->delivered;
	bbr->alpha_delivered_ce = tp->delivered_ce;
	if (!bbr_ecn_eligible(tp) || !d)
		return;
	frac = (u32)((u64)cca_min(ce, d) * BBR_ECN_ONE / d);
	bbr->ecn_alpha = bbr->ecn_alpha - (bbr->ecn_alpha >> BBR_ECN_GAIN_SHIFT) +
			 (frac >> BBR_ECN_GAIN_SHIFT);
	if (bbr->state != ST_STARTUP || bbr->full_bw_reached)
		return;
	if ((u64)frac * BBR_UNIT > (u64)BBR_ECN_THRESH * BBR_ECN_ONE)
		bbr->startup_ecn_rounds++;
	else
		bbr->startup_ecn_rounds = 0;
	if (bbr->startup_ecn_rounds >= BBR_FULL_ECN_CNT) {
		bbr->full_bw_reached = 1;
		bbr->inflight_longterm = cca_max(bbr_bdp(bbr), bbr->inflight_latest);
	}
}

/* inflight_shortterm × (1 − alpha × BBR_ECN_FACTOR) */
static __always_inline u32 bbr_ecn_cut(const struct bbr_conn *bbr, u32 inflight)
{
	u64 cut = (u64)bbr->ecn_alpha * BBR_ECN_FACTOR;   /* 1/(1024·1000) */

	return (u32)((u64)inflight - (u64)inflight * cut / ((u64)BBR_ECN_ONE * BBR_UNIT));
}

/* AdaptLowerBoundsFromCongestion(), [v3] §5.5.10.3, once per loss round: not while
 * probing; after a round with loss (or CE marks) the short-term model adapts */
static __always_inline void bbr_adapt_lower_bounds_from_congestion(struct bbr_conn *bbr,
								   const struct tcp_sock *tp)
{
	u32 ecn_bound;

	if (bbr_is_probing_bw(bbr))
		return;
	if (!bbr->is_loss_in_round && !bbr->ecn_in_round)
		return;
	bbr_init_lower_bounds(bbr, tp);
	ecn_bound = bbr_ecn_cut(bbr, bbr->inflight_shortterm);
	if (bbr->is_loss_in_round)
		bbr_loss_lower_bounds(bbr);
	if (bbr->ecn_in_round)
		bbr->inflight_shortterm = cca_min(bbr->inflight_shortterm, ecn_bound);
}

/* UpdateCongestionSignals(), [v3] §5.5.10.3 */
static __always_inline void bbr_update_congestion_signals(struct bbr_conn *bbr, const struct tcp_sock *tp,
							  const struct bbr_ack *a)
{
	bbr_update_max_bw(bbr, tp, a);
	bbr_ecn_update_round(bbr, tp);
	if (a->delivered_ce && bbr_ecn_eligible(tp))
		bbr->ecn_in_round = 1;
	if (!bbr->loss_round_start)
		return;
	bbr_adapt_lower_bounds_from_congestion(bbr, tp);
	bbr->is_loss_in_round = 0;
	bbr->ecn_in_round = 0;
}

/* BoundBWForModel(), [v3] §5.5.10.3 */
static __always_inline void bbr_bound_bw_for_model(struct bbr_conn *bbr)
{
	bbr->bw = bbr_min64(bbr_max_bw(bbr), bbr->bw_shortterm);
}

/* ResetFullBW(), [v3] §5.3.1.2 */
static __always_inline void bbr_reset_full_bw(struct bbr_conn *bbr)
{
	bbr->full_bw = 0;
	bbr->full_bw_count = 0;
	bbr->full_bw_now = 0;
}

/* SaveCwnd() / RestoreCwnd(), [v3] §5.6.4.4: the last cwnd not cut by loss recovery or
 * ProbeRTT */
static __always_inline void bbr_save_cwnd(struct bbr_conn *bbr, const struct tcp_sock *tp)
{
	if (!bbr->in_recovery && bbr->state != ST_PROBE_RTT)
		bbr->prior_cwnd = tp->snd_cwnd;
	else
		bbr->prior_cwnd = cca_max(bbr->prior_cwnd, tp->snd_cwnd);
}

static __always_inline void bbr_restore_cwnd(const struct bbr_conn *bbr, struct tcp_sock *tp)
{
	cca_set_cwnd(tp, cca_max(tp->snd_cwnd, bbr->prior_cwnd));
}

/* SaveStateUponLoss(), [v3] §5.5.11.1 */
static __always_inline void bbr_save_state_upon_loss(struct bbr_conn *bbr, const struct tcp_sock *tp)
{
	bbr_save_cwnd(bbr, tp);
	bbr->undo_state = ST_NONE;
	bbr->undo_bw_shortterm = bbr->bw_shortterm;
	bbr->undo_inflight_shortterm = bbr->inflight_shortterm;
	bbr->undo_inflight_longterm = bbr->inflight_longterm;
}

#endif /* BBR_SIGNALS_H */
