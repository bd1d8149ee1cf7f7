/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bbr_machine.h — the state machine of ccarena's BBRv3 and BBRv2 (Startup, Drain, the
 * ProbeBW cycle, ProbeRTT) and the long-term model it adapts while probing
 * (BBR.inflight_longterm), after [v3] §5.3 and [v2] §4.3 (citations: bbr_model.h).
 * The per-ACK driver and the control parameters are in bbr_control.h.
 *
 * Parameters the versions set differently come from the including .bpf.c:
 *   BBR_V                    2 or 3
 *   BBR_P_STARTUP_PACING     Startup pacing gain (1/1000)
 *   BBR_P_STARTUP_CWND       Startup (and Drain) cwnd gain
 *   BBR_P_DRAIN_PACING       Drain pacing gain
 *   BBR_P_DOWN_PACING        ProbeBW_DOWN pacing gain
 *   BBR_P_UP_CWND            ProbeBW_UP cwnd gain
 *   BBR_P_FULL_LOSS_CNT      loss events in a round that end Startup
 */
#ifndef BBR_MACHINE_H
#define BBR_MACHINE_H

static __always_inline void bbr_set_gains(struct bbr_conn *bbr, u32 pacing, u32 cwnd)
{
	bbr->pacing_gain = pacing;
	bbr->cwnd_gain = cwnd;
}

/* EnterStartup(), [v3] §5.3.1.1 */
static __always_inline void bbr_enter_startup(struct bbr_conn *bbr)
{
	bbr->state = ST_STARTUP;
	bbr_set_gains(bbr, BBR_P_STARTUP_PACING, BBR_P_STARTUP_CWND);
}

/*
 * EnterDrain(), [v3] §5.3.2. ssthresh has no part in BBR's control; it is set here to
 * the estimated BDP, as Linux's BBR does, so that the kernel's slow-start tests
 * (tcp_in_slow_start(): the cwnd-limited check, TCP_INFO) see the flow past Startup.
 */
static __always_inline void bbr_enter_drain(struct bbr_conn *bbr, struct tcp_sock *tp)
{
	bbr->state = ST_DRAIN;
	bbr_set_gains(bbr, BBR_P_DRAIN_PACING, BBR_P_STARTUP_CWND);
	bbr->drain_start_round = bbr->round_count;
	tp->snd_ssthresh = cca_max(bbr_bdp(bbr), BBR_MIN_PIPE_CWND);
}

/* PickProbeWait(), [v3] §5.3.3.8.3: the randomised round and wall-clock bounds of the
 * wait before the next bandwidth probe: 0 or 1 rounds counted already, 2–3 s */
static __always_inline void bbr_pick_probe_wait(struct bbr_conn *bbr)
{
	bbr->rounds_since_probe_up = bpf_get_prandom_u32() % 2;
	bbr->bw_probe_wait = BBR_PROBE_WAIT_BASE_US +
			     bpf_get_prandom_u32() % (BBR_PROBE_WAIT_RAND_US + 1);
}

/* RaiseInflightLongtermSlope(), [v3] §5.3.3.9: the growth of inflight_longterm doubles
 * each round of ProbeBW_UP: 1, 2, 4, ... segments per round, spread over the round */
static __always_inline void bbr_raise_inflight_longterm_slope(struct bbr_conn *bbr,
							      const struct tcp_sock *tp)
{
	u32 growth_this_round = 1u << bbr->bw_probe_up_rounds;

	bbr->bw_probe_up_rounds = cca_min(bbr->bw_probe_up_rounds + 1, BBR_PROBE_UP_MAX_ROUNDS);
	bbr->probe_up_acked_per_inc = cca_max(tp->snd_cwnd / growth_this_round, 1);
}

/* StartProbeBW_DOWN(), [v3] §5.3.3.9 */
static __always_inline void bbr_start_probe_bw_down(struct bbr_conn *bbr, const struct tcp_sock *tp,
						    u64 now)
{
	bbr_reset_congestion_signals(bbr);
	bbr->probe_up_acked_per_inc = BBR_INF;
	bbr_pick_probe_wait(bbr);
	bbr->cycle_stamp = now;
	bbr->ack_phase = ACKS_PROBE_STOPPING;
	bbr_start_round(bbr, tp);
	bbr->state = ST_PROBE_BW_DOWN;
	bbr_set_gains(bbr, BBR_P_DOWN_PACING, BBR_CWND_GAIN);
}

static __always_inline void bbr_start_probe_bw_cruise(struct bbr_conn *bbr)
{
	bbr->state = ST_PROBE_BW_CRUISE;
	bbr_set_gains(bbr, BBR_UNIT, BBR_CWND_GAIN);
}

static __always_inline void bbr_start_probe_bw_refill(struct bbr_conn *bbr, const struct tcp_sock *tp)
{
	bbr_reset_short_term_model(bbr);
	bbr->bw_probe_up_rounds = 0;
	bbr->bw_probe_up_acked = 0;
	bbr->prev_probe_precautionary = 0;
	bbr->ack_phase = ACKS_REFILLING;
	bbr_start_round(bbr, tp);
	bbr->state = ST_PROBE_BW_REFILL;
	bbr_set_gains(bbr, BBR_UNIT, BBR_CWND_GAIN);
}

static __always_inline void bbr_start_probe_bw_up(struct bbr_conn *bbr, const struct tcp_sock *tp,
						  const struct bbr_ack *a)
{
	bbr->ack_phase = ACKS_PROBE_STARTING;
	bbr_start_round(bbr, tp);
	if (BBR_V >= 3) {
		bbr_reset_full_bw(bbr);
		bbr->full_bw = a->delivery_rate;
	} else {
		bbr->cycle_stamp = a->now;    /* [v2] §4.3.3.6: UP's time in phase */
	}
	bbr->state = ST_PROBE_BW_UP;
	bbr_set_gains(bbr, BBR_UP_PACING_GAIN, BBR_P_UP_CWND);
	bbr_raise_inflight_longterm_slope(bbr, tp);
}

/* EnterProbeBW(), [v3] §5.3.3.9 */
static __always_inline void bbr_enter_probe_bw(struct bbr_conn *bbr, const struct tcp_sock *tp, u64 now)
{
	bbr->cwnd_gain = BBR_CWND_GAIN;
	bbr_start_probe_bw_down(bbr, tp, now);
}

/*
 * QuantizationBudget() and Inflight(), [v3] §5.6.4.2, with the TCP offload budget of
 * §5.5.8.1: 3 send quanta. The send quantum is the data of 1 ms at the pacing rate,
 * between 2 segments (v2: 1 below 1.2 Mbit/s, [v2] §4.6.3) and 64 KB: the size the
 * kernel's TSO autosizing gives (the pacing rate >> sk_pacing_shift, at least the
 * min_tso_segs op's segments).
 */
static __always_inline u32 bbr_send_quantum(const struct sock *sk)
{
	u32 mss = cca_max(tcp_sk(sk)->mss_cache, 1);
	u64 bytes = sk->sk_pacing_rate / 1000;
	u32 floor = 2;

	if (BBR_V == 2 && sk->sk_pacing_rate < 1200000 / 8)
		floor = 1;
	bytes = bbr_min64(bytes, BBR_SEND_QUANTUM_BYTES);
	return cca_max((u32)(bytes / mss), floor);
}

static __always_inline u32 bbr_quantization_budget(const struct bbr_conn *bbr, const struct sock *sk,
						   u32 inflight_cap)
{
	inflight_cap = cca_max(inflight_cap, 3 * bbr_send_quantum(sk));
	inflight_cap = cca_max(inflight_cap, BBR_MIN_PIPE_CWND);
	if (bbr->state == ST_PROBE_BW_UP)
		inflight_cap += 2;
	return inflight_cap;
}

/* Inflight(bw, gain) */
static __always_inline u32 bbr_inflight(const struct bbr_conn *bbr, const struct sock *sk, u64 bw,
					u32 gain)
{
	return bbr_quantization_budget(bbr, sk, bbr_bdp_multiple(bbr, bw, gain));
}

/* InflightWithHeadroom(), [v3] §5.3.3.9: leave 15 % of inflight_longterm free */
static __always_inline u32 bbr_inflight_with_headroom(const struct bbr_conn *bbr)
{
	u32 headroom;

	if (bbr->inflight_longterm == BBR_INF)
		return BBR_INF;
	headroom = cca_max(1, bbr_scale(bbr->inflight_longterm, BBR_HEADROOM));
	return cca_max(bbr->inflight_longterm > headroom ? bbr->inflight_longterm - headroom : 0,
		       BBR_MIN_PIPE_CWND);
}

/* IsRenoCoexistenceProbeTime(), [v3] §5.3.3.8.3: T_reno = min(BDP, cwnd, 63) rounds */
static __always_inline bool bbr_is_reno_coexistence_probe_time(const struct bbr_conn *bbr,
							       const struct tcp_sock *tp)
{
	u32 rounds = cca_min(bbr_target_inflight(bbr, tp), BBR_RENO_MAX_ROUNDS);

	return bbr->rounds_since_probe_up >= rounds;
}

/* IsTimeToProbeBW(): from DOWN or CRUISE to REFILL after T_probe = min(T_bbr, T_reno) */
static __always_inline bool bbr_is_time_to_probe_bw(struct bbr_conn *bbr, const struct tcp_sock *tp,
						    u64 now)
{
	if (now > bbr->cycle_stamp + bbr->bw_probe_wait ||
	    bbr_is_reno_coexistence_probe_time(bbr, tp)) {
		bbr_start_probe_bw_refill(bbr, tp);
		return true;
	}
	return false;
}

/* IsTimeToCruise(): DOWN ends once the queue is drained and headroom is left */
static __always_inline bool bbr_is_time_to_cruise(const struct bbr_conn *bbr, const struct sock *sk,
						  u32 inflight)
{
	if (inflight > bbr_inflight_with_headroom(bbr))
		return false;
	return inflight <= bbr_inflight(bbr, sk, bbr_max_bw(bbr), BBR_UNIT);
}

/* IsTimeToGoDown(), [v3] §5.3.3.7 and §5.3.3.9: UP ends on a bandwidth plateau, or at
 * once when the previous probe went too high and in-flight data reaches its limit */
static __always_inline bool bbr_is_time_to_go_down(struct bbr_conn *bbr, const struct tcp_sock *tp,
						   const struct bbr_ack *a)
{
	if (bbr->prev_probe_too_high && a->inflight >= bbr->inflight_longterm) {
		bbr->prev_probe_precautionary = 1;
		return true;
	}
	if (CCA_BITFIELD(tp, is_cwnd_limited) && tp->snd_cwnd >= bbr->inflight_longterm) {
		/* bw is limited by inflight_longterm: no plateau can be judged */
		bbr_reset_full_bw(bbr);
		bbr->full_bw = a->delivery_rate;
	} else if (bbr->full_bw_now) {
		return true;
	}
	return false;
}

/* ProbeInflightLongtermUpward(), [v3] §5.3.3.9: while cwnd-limited at the limit, add
 * one segment per probe_up_acked_per_inc segments acknowledged */
static __always_inline void bbr_probe_inflight_longterm_upward(struct bbr_conn *bbr,
							       const struct tcp_sock *tp,
							       const struct bbr_ack *a)
{
	u32 delta;

	if (!CCA_BITFIELD(tp, is_cwnd_limited) || tp->snd_cwnd < bbr->inflight_longterm)
		return;
	bbr->bw_probe_up_acked += a->newly_acked;
	if (bbr->bw_probe_up_acked >= bbr->probe_up_acked_per_inc) {
		delta = bbr->bw_probe_up_acked / bbr->probe_up_acked_per_inc;
		bbr->bw_probe_up_acked -= delta * bbr->probe_up_acked_per_inc;
		bbr->inflight_longterm += delta;
	}
	if (bbr->round_start)
		bbr_raise_inflight_longterm_slope(bbr, tp);
}

/* IsInflightTooHigh(), [v3] §5.5.10.2: more than 2 % of the data in flight lost (any
 * loss without SACK) */
static __always_inline bool bbr_is_inflight_too_high(const struct tcp_sock *tp,
						     const struct bbr_ack *a)
{
	if ((u64)a->lost * BBR_UNIT > (u64)a->tx_in_flight * BBR_LOSS_THRESH)
		return true;
	return a->lost > 0 && !bbr_has_sack(tp);
}

/* InflightAtLoss(), [v3] §5.5.10.2: the in-flight volume at which the loss rate
 * crossed LossThresh within the last segment: inflight_prev + lost_prefix, with
 * lost_prefix = (LossThresh × inflight_prev − lost_prev) / (1 − LossThresh) */
static __always_inline u32 bbr_inflight_at_loss(const struct bbr_ack *a)
{
	u64 inflight_prev = a->tx_in_flight > 0 ? a->tx_in_flight - 1 : 0;
	u64 lost_prev = a->lost > 0 ? a->lost - 1 : 0;
	u64 up = inflight_prev * BBR_LOSS_THRESH, down = lost_prev * BBR_UNIT;
	u64 den = BBR_UNIT - BBR_LOSS_THRESH;

	if (up >= down)
		return (u32)(inflight_prev + (up - down) / den);
	down = (down - up) / den;
	return down < inflight_prev ? (u32)(inflight_prev - down) : 0;
}

/* HandleInflightTooHigh(), [v3] §5.5.10.2: the probe put too much in flight;
 * inflight_longterm falls to it (at least Beta × the target), UP ends */
static __always_inline void bbr_handle_inflight_too_high(struct bbr_conn *bbr, const struct tcp_sock *tp,
							 const struct bbr_ack *a, u32 tx_in_flight)
{
	bbr->prev_probe_too_high = 1;
	bbr->is_bw_probe_sample = 0;
	if (!a->app_limited)
		bbr->inflight_longterm = cca_max(tx_in_flight,
						 bbr_scale(bbr_target_inflight(bbr, tp), BBR_BETA));
	if (bbr->state == ST_PROBE_BW_UP) {
		if (BBR_V >= 3)
			bbr->undo_state = ST_PROBE_BW_UP;
		bbr_start_probe_bw_down(bbr, tp, a->now);
	}
}

/* NoteLoss() and HandleLostPacket(), [v3] §5.5.10.2, once per ACK for the segments it
 * marks lost (the kernel reports them together in rs->losses) */
static __always_inline void bbr_handle_lost(struct bbr_conn *bbr, const struct tcp_sock *tp,
					    const struct bbr_ack *a)
{
	if (!bbr->is_loss_in_round) {
		bbr->loss_round_delivered = tp->delivered;
		bbr_save_state_upon_loss(bbr, tp);
	}
	bbr->is_loss_in_round = 1;
	bbr->lr_loss_events++;
	if (!bbr->is_bw_probe_sample)
		return;
	if (bbr_is_inflight_too_high(tp, a))
		bbr_handle_inflight_too_high(bbr, tp, a, bbr_inflight_at_loss(a));
}

/*
 * AdaptLongTermModel(), [v3] §5.3.3.9 ([v2] BBRAdaptUpperBounds, §4.3.3.6): follow the
 * meaning of the ACKs (probe feedback, end of it: the max_bw filter's cycle advances),
 * and while losses stay below the threshold raise inflight_longterm to what was in
 * flight, growing it in UP. Returns true if it decided a state transition.
 * [v2] keeps the ACK phase at PROBE_STOPPING after advancing the filter, which would
 * advance it again every round; ccarena follows [v3] and returns to ACKS_INIT. [v2]
 * also bounds the rate by bw_hi, which its text never sets below Infinity (and then
 * never raises inflight_hi either); ccarena leaves bw_hi out and raises inflight_hi as
 * [v3] raises inflight_longterm.
 */
static __always_inline bool bbr_adapt_long_term_model(struct bbr_conn *bbr, const struct tcp_sock *tp,
						      const struct bbr_ack *a)
{
	bool loss_high, ecn_high;

	if (bbr->ack_phase == ACKS_PROBE_STARTING && bbr->round_start)
		bbr->ack_phase = ACKS_PROBE_FEEDBACK;
	if (bbr->ack_phase == ACKS_PROBE_STOPPING && bbr->round_start) {
		bbr->is_bw_probe_sample = 0;
		bbr->ack_phase = ACKS_INIT;
		if (bbr_in_probe_bw(bbr) && !a->app_limited)
			bbr_advance_max_bw_filter(bbr);
		/* Precautionary Bandwidth Probing: Acceleration, [v3] §5.3.3.6 */
		if (BBR_V >= 3 && bbr_in_probe_bw(bbr) && bbr->prev_probe_precautionary &&
		    !bbr->prev_probe_too_high) {
			bbr_start_probe_bw_refill(bbr, tp);
			return true;
		}
	}
	loss_high = bbr_is_inflight_too_high(tp, a);
	ecn_high = bbr_ecn_too_high(bbr, tp, a);
	/* [v2] CheckInflightTooHigh() reacts to a probe's losses on any ACK; [v3] on the
	 * ACKs that mark them (bbr_handle_lost), and here to CE marks */
	if (bbr->is_bw_probe_sample && (ecn_high || (BBR_V == 2 && loss_high))) {
		u8 state = bbr->state;

		bbr_handle_inflight_too_high(bbr, tp, a, a->tx_in_flight);
		return bbr->state != state;
	}
	if (loss_high || ecn_high)
		return false;       /* no upper bound is raised on a lossy ACK */
	if (bbr->inflight_longterm == BBR_INF)
		return false;
	if (a->tx_in_flight > bbr->inflight_longterm)
		bbr->inflight_longterm = a->tx_in_flight;
	if (bbr->state == ST_PROBE_BW_UP)
		bbr_probe_inflight_longterm_upward(bbr, tp, a);
	return false;
}

/* UpdateProbeBWCyclePhase(), [v3] §5.3.3.9, on ACKs of new data */
static __always_inline void bbr_update_probe_bw_cycle_phase(struct bbr_conn *bbr, struct sock *sk,
							    const struct bbr_ack *a)
{
	struct tcp_sock *tp = tcp_sk(sk);

	if (!bbr->full_bw_reached)
		return;
	if (bbr_adapt_long_term_model(bbr, tp, a))
		return;
	switch (bbr->state) {
	case ST_PROBE_BW_DOWN:
		if (bbr_is_time_to_probe_bw(bbr, tp, a->now))
			return;
		if (bbr_is_time_to_cruise(bbr, sk, a->inflight))
			bbr_start_probe_bw_cruise(bbr);
		break;
	case ST_PROBE_BW_CRUISE:
		bbr_is_time_to_probe_bw(bbr, tp, a->now);
		break;
	case ST_PROBE_BW_REFILL:
		/* after one round of REFILL, UP */
		if (bbr->round_start) {
			bbr->is_bw_probe_sample = 1;
			bbr_start_probe_bw_up(bbr, tp, a);
		}
		break;
	case ST_PROBE_BW_UP:
		if (BBR_V >= 3) {
			if (bbr_is_time_to_go_down(bbr, tp, a)) {
				bbr->prev_probe_too_high = 0;
				bbr_start_probe_bw_down(bbr, tp, a->now);
			}
		} else if (a->now > bbr->cycle_stamp + bbr->min_rtt &&
			   a->inflight > bbr_inflight(bbr, sk, bbr_max_bw(bbr), BBR_UP_PACING_GAIN)) {
			/* [v2] §4.3.3.4: an estimated queue of 0.25 BDP after a min_rtt in UP */
			bbr_start_probe_bw_down(bbr, tp, a->now);
		}
		break;
	}
}

/* CheckFullBWReached(), [v3] §5.3.1.2: three rounds in a row without 25 % more
 * delivery rate fill the pipe ([v2] §4.3.1.2 judges BBR.max_bw, in Startup only) */
static __always_inline void bbr_check_full_bw_reached(struct bbr_conn *bbr, const struct bbr_ack *a)
{
	u64 bw = BBR_V >= 3 ? a->delivery_rate : bbr_max_bw(bbr);

	if (bbr->full_bw_now || !bbr->round_start || a->app_limited)
		return;
	if (BBR_V == 2 && bbr->full_bw_reached)
		return;
	if (bw >= bbr_scale64(bbr->full_bw, BBR_FULL_BW_GROWTH)) {
		bbr_reset_full_bw(bbr);
		bbr->full_bw = bw;
		return;
	}
	bbr->full_bw_count++;
	bbr->full_bw_now = bbr->full_bw_count >= BBR_FULL_BW_COUNT;
	if (bbr->full_bw_now)
		bbr->full_bw_reached = 1;
}

/*
 * CheckStartupHighLoss(), [v3] §5.3.1.3, judged at the end of each loss round: in loss
 * recovery for a full round, more than 2 % of the round's data lost, in at least
 * BBR_P_FULL_LOSS_CNT loss events (the ACKs that marked losses: each reports the
 * ranges one SACK block uncovers); without SACK any loss in recovery. [v3] then sets
 * inflight_longterm from the round ([v2] §4.3.1.3 only ends Startup).
 */
static __always_inline void bbr_check_startup_high_loss(struct bbr_conn *bbr, const struct tcp_sock *tp)
{
	u32 lost = tp->lost - bbr->lr_lost, delivered = tp->delivered - bbr->lr_delivered;
	bool high;

	if (bbr->state != ST_STARTUP || bbr->full_bw_reached || !bbr->loss_round_start)
		return;
	if (!bbr->in_recovery || bbr->round_count == bbr->recovery_round)
		return;
	if (bbr_has_sack(tp))
		high = (u64)lost * BBR_UNIT > (u64)(lost + delivered) * BBR_LOSS_THRESH &&
		       bbr->lr_loss_events >= BBR_P_FULL_LOSS_CNT;
	else
		high = lost > 0;
	if (!high)
		return;
	bbr->full_bw_reached = 1;
	if (BBR_V >= 3) {
		bbr->undo_state = ST_STARTUP;
		bbr->inflight_longterm = cca_max(bbr_bdp(bbr), bbr->inflight_latest);
	}
}

/* CheckStartupDone(), [v3] §5.3.1.1 */
static __always_inline void bbr_check_startup_done(struct bbr_conn *bbr, struct tcp_sock *tp)
{
	bbr_check_startup_high_loss(bbr, tp);
	if (bbr->state == ST_STARTUP && bbr->full_bw_reached)
		bbr_enter_drain(bbr, tp);
}

/* CheckDrainDone(), [v3] §5.3.2: Drain ends when in-flight data fits the BDP, or ([v3]
 * only) after 3 rounds */
static __always_inline void bbr_check_drain_done(struct bbr_conn *bbr, struct sock *sk,
						 const struct bbr_ack *a)
{
	if (bbr->state != ST_DRAIN)
		return;
	if (a->inflight <= bbr_inflight(bbr, sk, bbr->bw, BBR_UNIT) ||
	    (BBR_V >= 3 && bbr->round_count > bbr->drain_start_round + 3))
		bbr_enter_probe_bw(bbr, tcp_sk(sk), a->now);
}

/* ProbeRTTCwnd(), [v3] §5.6.4.5: half the BDP, at least MinPipeCwnd */
static __always_inline u32 bbr_probe_rtt_cwnd(const struct bbr_conn *bbr)
{
	return cca_max(bbr_bdp_multiple(bbr, bbr->bw, BBR_PROBE_RTT_CWND_GAIN), BBR_MIN_PIPE_CWND);
}

/* ExitProbeRTT(), [v3] §5.3.4.4 */
static __always_inline void bbr_exit_probe_rtt(struct bbr_conn *bbr, const struct tcp_sock *tp, u64 now)
{
	bbr_reset_short_term_model(bbr);
	if (bbr->full_bw_reached) {
		bbr_start_probe_bw_down(bbr, tp, now);
		bbr_start_probe_bw_cruise(bbr);
	} else {
		bbr_enter_startup(bbr);
	}
}

/* CheckProbeRTTDone(), [v3] §5.3.4.3 */
static __always_inline void bbr_check_probe_rtt_done(struct bbr_conn *bbr, struct tcp_sock *tp, u64 now)
{
	if (bbr->probe_rtt_done_stamp && now > bbr->probe_rtt_done_stamp) {
		bbr->probe_rtt_min_stamp = now;      /* the next ProbeRTT in 5 s */
		bbr_restore_cwnd(bbr, tp);
		bbr_exit_probe_rtt(bbr, tp, now);
	}
}

/* HandleProbeRTT(), [v3] §5.3.4.3: once in-flight data is down to ProbeRTTCwnd, hold
 * it for ProbeRTTDuration and at least one round */
static __always_inline void bbr_handle_probe_rtt(struct bbr_conn *bbr, struct tcp_sock *tp,
						 const struct bbr_ack *a)
{
	bbr_mark_app_limited(bbr, tp, a->inflight);
	if (!bbr->probe_rtt_done_stamp && a->inflight <= bbr_probe_rtt_cwnd(bbr)) {
		bbr->probe_rtt_done_stamp = a->now + BBR_PROBE_RTT_DURATION_US;
		bbr->probe_rtt_round_done = 0;
		bbr_start_round(bbr, tp);
	} else if (bbr->probe_rtt_done_stamp) {
		if (bbr->round_start)
			bbr->probe_rtt_round_done = 1;
		if (bbr->probe_rtt_round_done)
			bbr_check_probe_rtt_done(bbr, tp, a->now);
	}
}

/* CheckProbeRTT(), [v3] §5.3.4.3: ProbeRTT when min_rtt was not refreshed for 5 s
 * (unless the flow restarts from idle: the idle time drained the queue already) */
static __always_inline void bbr_check_probe_rtt(struct bbr_conn *bbr, struct tcp_sock *tp,
						const struct bbr_ack *a)
{
	if (bbr->state != ST_PROBE_RTT && bbr->probe_rtt_expired && !bbr->idle_restart) {
		bbr->state = ST_PROBE_RTT;
		bbr_set_gains(bbr, BBR_UNIT, BBR_PROBE_RTT_CWND_GAIN);
		bbr_save_cwnd(bbr, tp);
		bbr->probe_rtt_done_stamp = 0;
		bbr->ack_phase = ACKS_PROBE_STOPPING;
		bbr_start_round(bbr, tp);
	}
	if (bbr->state == ST_PROBE_RTT)
		bbr_handle_probe_rtt(bbr, tp, a);
	if (a->delivered > 0)
		bbr->idle_restart = 0;
}

#endif /* BBR_MACHINE_H */
