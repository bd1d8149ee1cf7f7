/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bbr_control.h — the control parameters of ccarena's BBRv3 and BBRv2 (pacing rate,
 * send quantum, cwnd), the per-ACK driver and the bodies of the struct
 * tcp_congestion_ops ops, after [v3] §5.2 and §5.6 (citations: bbr_model.h). The
 * including .bpf.c wraps them as struct_ops programs.
 *
 * BBR is a cong_control algorithm in the kernel's sense: on each ACK the kernel leaves
 * the whole update to it (no PRR, no cong_avoid, no pacing rate of its own), with the
 * rate sample of net/ipv4/tcp_rate.c. Pacing needs sk_pacing_status = SK_PACING_NEEDED
 * (set at init): TCP then paces in the stack when the qdisc does not.
 */
#ifndef BBR_CONTROL_H
#define BBR_CONTROL_H

/* pacing rate in bytes per second for bw × gain, less margin_pct percent:
 * bw × mss × 10^6 >> BBR_BW_SHIFT, ordered to stay inside u64 */
static __always_inline u64 bbr_rate_bytes(const struct sock *sk, u64 bw, u32 gain, u32 margin_pct)
{
	u64 r = (bw * tcp_sk(sk)->mss_cache) >> 8;

	r = r * gain / BBR_UNIT;
	r = r * (100 - margin_pct) / 100;
	return (r * 1000000) >> (BBR_BW_SHIFT - 8);
}

static __always_inline void bbr_set_pacing_rate_bytes(struct sock *sk, u64 rate)
{
	if (rate > sk->sk_max_pacing_rate)
		rate = sk->sk_max_pacing_rate;
	sk->sk_pacing_rate = rate;
}

/* InitPacingRate(), [v3] §5.6.2: StartupPacingGain × InitialCwnd / (srtt or 1 ms).
 * "The initial C.srtt after the first non-zero RTT sample": a connection initialised
 * before any RTT sample (no handshake RTT) sets it again at the first. */
static __always_inline void bbr_init_pacing_rate(struct bbr_conn *bbr, struct sock *sk)
{
	u32 srtt = cca_srtt_us(tcp_sk(sk));
	u64 bw = ((u64)bbr->init_cwnd << BBR_BW_SHIFT) / (srtt ? srtt : 1000);

	bbr->has_seen_rtt = srtt != 0;
	bbr_set_pacing_rate_bytes(sk, bbr_rate_bytes(sk, bw, BBR_P_STARTUP_PACING, 0));
}

/* SetPacingRateWithGain(), [v3] §5.6.2: never lowered before the pipe is full */
static __always_inline void bbr_set_pacing_rate_with_gain(struct bbr_conn *bbr, struct sock *sk,
							  u32 gain)
{
	u64 rate = bbr_rate_bytes(sk, bbr->bw, gain, BBR_PACING_MARGIN_PCT);

	if (!bbr->has_seen_rtt && cca_srtt_us(tcp_sk(sk)))
		bbr_init_pacing_rate(bbr, sk);

	if (bbr->full_bw_reached || rate > sk->sk_pacing_rate)
		bbr_set_pacing_rate_bytes(sk, rate);
}

/* UpdateMaxInflight(), [v3] §5.6.4.2: cwnd_gain × BDP + extra_acked, quantized */
static __always_inline u32 bbr_max_inflight(const struct bbr_conn *bbr, const struct sock *sk)
{
	u32 cap = bbr_bdp_multiple(bbr, bbr->bw, bbr->cwnd_gain) + bbr->extra_acked;

	return bbr_quantization_budget(bbr, sk, cap);
}

/* BoundCwndForModel(), [v3] §5.6.4.7 */
static __always_inline u32 bbr_bound_cwnd_for_model(const struct bbr_conn *bbr, u32 cwnd)
{
	u32 cap = BBR_INF;

	if (bbr_in_probe_bw(bbr) && bbr->state != ST_PROBE_BW_CRUISE)
		cap = bbr->inflight_longterm;
	else if (bbr->state == ST_PROBE_RTT || bbr->state == ST_PROBE_BW_CRUISE)
		cap = bbr_inflight_with_headroom(bbr);
	cap = cca_min(cap, bbr->inflight_shortterm);
	cap = cca_max(cap, BBR_MIN_PIPE_CWND);
	return cca_min(cwnd, cap);
}

/*
 * SetCwnd(), [v3] §5.6.4.6: toward max_inflight by at most the data acknowledged,
 * straight down to it once the pipe was full; then the ProbeRTT and model bounds.
 * [v2] §4.6.4.4 adds packet conservation in the first round of fast recovery: cwnd
 * drops by the data newly marked lost and stays at least in-flight + newly acked.
 */
static __always_inline void bbr_set_cwnd(struct bbr_conn *bbr, struct sock *sk, const struct bbr_ack *a)
{
	struct tcp_sock *tp = tcp_sk(sk);
	u32 max_inflight = bbr_max_inflight(bbr, sk);
	u32 cwnd = tp->snd_cwnd;

	if (BBR_V == 2 && bbr->in_recovery) {
		if (a->newly_lost)
			cwnd = cwnd > a->newly_lost ? cwnd - a->newly_lost : 1;
		if (bbr->packet_conservation)
			cwnd = cca_max(cwnd, a->inflight + a->newly_acked);
	}
	if (BBR_V >= 3 || !bbr->packet_conservation) {
		if (bbr->full_bw_reached)
			cwnd = cca_min(cwnd + a->newly_acked, max_inflight);
		else if (cwnd < max_inflight || tp->delivered - bbr->delivered_at_init < bbr->init_cwnd)
			cwnd = cwnd + a->newly_acked;
		cwnd = cca_max(cwnd, BBR_MIN_PIPE_CWND);
	}
	if (bbr->state == ST_PROBE_RTT)                 /* BoundCwndForProbeRTT() */
		cwnd = cca_min(cwnd, bbr_probe_rtt_cwnd(bbr));
	cca_set_cwnd(tp, bbr_bound_cwnd_for_model(bbr, cwnd));
}

/* UpdateOnACK(), [v3] §5.2.3, after the ACK's losses (§5.2.4) */
static __always_inline void bbr_update_on_ack(struct bbr_conn *bbr, struct sock *sk,
					      const struct rate_sample *rs)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr_ack a = {};

	bbr_read_ack(bbr, sk, rs, &a);
	if (a.newly_lost)
		bbr_handle_lost(bbr, tp, &a);
	/* UpdateModelAndState() */
	bbr_update_latest_delivery_signals(bbr, tp, &a);
	bbr_update_congestion_signals(bbr, tp, &a);
	bbr_update_ack_aggregation(bbr, tp, &a);
	bbr_check_full_bw_reached(bbr, &a);
	bbr_check_startup_done(bbr, tp);
	bbr_check_drain_done(bbr, sk, &a);
	if (a.newly_acked)
		bbr_update_probe_bw_cycle_phase(bbr, sk, &a);
	bbr_update_min_rtt(bbr, &a);
	bbr_check_probe_rtt(bbr, tp, &a);
	bbr_advance_latest_delivery_signals(bbr, tp, &a);
	bbr_bound_bw_for_model(bbr);
	/* UpdateControlParameters(); the send quantum is the kernel's TSO autosizing */
	bbr_set_pacing_rate_with_gain(bbr, sk, bbr->pacing_gain);
	bbr_set_cwnd(bbr, sk, &a);
	/* [v2] §4.6.4.4: packet conservation lasts one round of recovery */
	if (BBR_V == 2 && bbr->packet_conservation && bbr->round_start &&
	    bbr->round_count != bbr->recovery_round)
		bbr->packet_conservation = 0;
}

/* OnInit(), [v3] §5.2.1. The first round ends with the ACK of data sent after init
 * (next_round_delivered = C.delivered): the counters need not start at 0, as when
 * TCP_CONGESTION selects BBR on an established connection. */
static __always_inline void bbr_on_init(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr_conn *bbr = bbr_of(sk, true);
	u32 srtt = cca_srtt_us(tp);
	u64 now = cca_now_us();

	if (!bbr)
		return;
	__builtin_memset(bbr, 0, sizeof(*bbr));
	bbr->min_rtt = srtt ? srtt : BBR_INF;
	bbr->min_rtt_stamp = now;
	/* the ProbeRTT schedule starts with min_rtt ([v3] leaves its start implicit) */
	bbr->probe_rtt_min_delay = bbr->min_rtt;
	bbr->probe_rtt_min_stamp = now;
	bbr->undo_state = ST_NONE;
	bbr->extra_acked_interval_start = now;
	bbr->inflight_longterm = BBR_INF;
	bbr->probe_up_acked_per_inc = BBR_INF;
	bbr->ack_phase = ACKS_INIT;
	bbr->init_cwnd = tp->snd_cwnd;
	bbr->delivered_at_init = tp->delivered;
	bbr->next_round_delivered = tp->delivered;
	bbr->loss_round_delivered = tp->delivered;
	bbr->rnd_delivered[0] = bbr->rnd_delivered[1] = tp->delivered;
	bbr->rnd_lost[0] = bbr->rnd_lost[1] = tp->lost;
	bbr->lr_delivered = tp->delivered;
	bbr->lr_lost = tp->lost;
	bbr->ecn_alpha = BBR_ECN_ONE;
	bbr->alpha_delivered = tp->delivered;
	bbr->alpha_delivered_ce = tp->delivered_ce;
	bbr->in_recovery = cca_ca_state(sk) >= TCP_CA_Recovery;
	bbr_reset_congestion_signals(bbr);
	bbr_reset_short_term_model(bbr);
	bbr_reset_full_bw(bbr);
	bbr_init_pacing_rate(bbr, sk);
	bbr_enter_startup(bbr);
	if (sk->sk_pacing_status == SK_PACING_NONE)
		sk->sk_pacing_status = SK_PACING_NEEDED;
}

/*
 * ssthresh has no part in BBR's control (the kernel reads it only for its slow-start
 * tests and TCP_INFO, see bbr_enter_drain): the ssthresh op keeps it, and a corrupted
 * value (cca_common.h's guard) is repaired to what BBR holds: infinite before the pipe
 * was full, the estimated BDP after.
 */
static __always_inline u32 bbr_ssthresh_for(struct sock *sk, u32 cwnd)
{
	struct bbr_conn *bbr = bbr_of(sk, false);

	if (!bbr || !bbr->full_bw_reached)
		return CCA_INFINITE_SSTHRESH;
	return cca_max(bbr_bdp(bbr), BBR_MIN_PIPE_CWND);
}

static __always_inline u32 bbr_on_ssthresh(struct sock *sk)
{
	u32 ss = tcp_sk(sk)->snd_ssthresh;

	return cca_insane_ssthresh(ss) ? bbr_ssthresh_for(sk, ss) : ss;
}

/* The per-ACK op: the guard's check of ssthresh and cwnd first (cca_common.h) */
static __always_inline void bbr_on_cong_control(struct sock *sk, const struct rate_sample *rs)
{
	struct bbr_conn *bbr = bbr_of(sk, false);

	CCA_CHECK(sk, bbr_ssthresh_for);
	if (bbr)
		bbr_update_on_ack(bbr, sk, rs);
}

/*
 * Loss recovery ([v3] §5.6.4.4): entering fast recovery saves cwnd and the model
 * (OnEnterFastRecovery: SaveCwnd, SaveStateUponLoss), as an RTO does (OnEnterRTO, at
 * CA_EVENT_LOSS, before the kernel sets cwnd = in-flight + 1: bbr_on_cwnd_event);
 * leaving recovery restores the last good cwnd, which the model then bounds on the same
 * ACK. [v2] also starts packet conservation (cwnd = in-flight + 1).
 */
static __always_inline void bbr_on_set_state(struct sock *sk, u8 new_state)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr_conn *bbr = bbr_of(sk, false);
	u8 old = cca_ca_state(sk);

	if (new_state >= TCP_CA_CWR && cca_insane_ssthresh(tp->snd_ssthresh)) {
		tp->snd_ssthresh = bbr_ssthresh_for(sk, cca_sane_prior_cwnd(tp));
		cca_count_guard(sk, false, true, false);
	}
	if (!bbr)
		return;
	if (new_state >= TCP_CA_Recovery && old < TCP_CA_Recovery) {
		if (new_state == TCP_CA_Recovery)
			bbr_save_state_upon_loss(bbr, tp);
		bbr->in_recovery = 1;
		bbr->recovery_round = bbr->round_count;
		if (BBR_V == 2 && new_state == TCP_CA_Recovery) {
			bbr->packet_conservation = 1;
			cca_set_cwnd(tp, cca_packets_in_flight(tp) + 1);
		}
	} else if (new_state < TCP_CA_Recovery && old >= TCP_CA_Recovery) {
		bbr->in_recovery = 0;
		bbr->packet_conservation = 0;
		bbr_restore_cwnd(bbr, tp);
	}
}

/*
 * A loss recovery found spurious (the kernel's undo, on DSACK or timestamps):
 * HandleSpuriousLossDetection(), [v3] §5.5.11.2: the cwnd and the model come back, and
 * a probe that the losses ended resumes. [v2] restores cwnd only.
 */
static __always_inline u32 bbr_on_undo_cwnd(struct sock *sk)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr_conn *bbr = bbr_of(sk, false);

	if (!bbr)
		return tp->snd_cwnd;
	if (BBR_V >= 3) {
		bbr->is_loss_in_round = 0;
		bbr_reset_full_bw(bbr);
		bbr->bw_shortterm = bbr_max64(bbr->bw_shortterm, bbr->undo_bw_shortterm);
		bbr->inflight_shortterm = cca_max(bbr->inflight_shortterm,
						  bbr->undo_inflight_shortterm);
		bbr->inflight_longterm = cca_max(bbr->inflight_longterm,
						 bbr->undo_inflight_longterm);
		if (bbr->undo_state == ST_STARTUP && bbr->state != ST_STARTUP) {
			bbr->full_bw_reached = 0;
			if (bbr->state != ST_PROBE_RTT)
				bbr_enter_startup(bbr);
		} else if (bbr->undo_state == ST_PROBE_BW_UP && bbr->state != ST_PROBE_BW_UP) {
			if (bbr->state != ST_PROBE_RTT)
				bbr_start_probe_bw_refill(bbr, tp);
		}
		bbr->undo_state = ST_NONE;
	}
	return cca_max(tp->snd_cwnd, bbr->prior_cwnd);
}

/* HandleRestartFromIdle(), [v3] §5.4.1: the first transmission after the flow had
 * nothing in flight and nothing to send (the kernel's CA_EVENT_TX_START); and the RTO's
 * saving of cwnd and the model (CA_EVENT_LOSS, see bbr_on_set_state) */
static __always_inline void bbr_on_cwnd_event(struct sock *sk, enum tcp_ca_event ev)
{
	struct tcp_sock *tp = tcp_sk(sk);
	struct bbr_conn *bbr = bbr_of(sk, false);
	u64 now;

	if (!bbr)
		return;
	if (ev == CA_EVENT_LOSS) {
		bbr_save_state_upon_loss(bbr, tp);
		return;
	}
	if (ev != CA_EVENT_TX_START || !tp->app_limited)
		return;
	now = cca_now_us();
	bbr->idle_restart = 1;
	bbr->extra_acked_interval_start = now;
	bbr->extra_acked_delivered = 0;
	if (bbr_in_probe_bw(bbr))
		bbr_set_pacing_rate_with_gain(bbr, sk, BBR_UNIT);
	else if (bbr->state == ST_PROBE_RTT)
		bbr_check_probe_rtt_done(bbr, tp, now);
}

/* the send quantum's floor ([v3] §5.6.3: 2 segments; [v2] §4.6.3: 1 below 1.2 Mbit/s),
 * for the kernel's TSO autosizing (tcp_tso_autosize) */
static __always_inline u32 bbr_on_min_tso_segs(struct sock *sk)
{
	if (BBR_V == 2 && sk->sk_pacing_rate < 1200000 / 8)
		return 1;
	return 2;
}

/* The struct_ops programs of one version: CCA_BBR_OPS(cca_bbr3) defines cca_bbr3_init,
 * ..., and the ops struct with the name "cca_bbr3". */
#define CCA_BBR_OPS(algo)                                                              \
	SEC("struct_ops")                                                              \
	void BPF_PROG(algo##_init, struct sock *sk) { bbr_on_init(sk); }              \
	SEC("struct_ops")                                                              \
	u32 BPF_PROG(algo##_ssthresh, struct sock *sk) { return bbr_on_ssthresh(sk); } \
	SEC("struct_ops")                                                              \
	void BPF_PROG(algo##_cong_control, struct sock *sk, u32 ack, int flag,         \
		      const struct rate_sample *rs) { bbr_on_cong_control(sk, rs); }   \
	SEC("struct_ops")                                                              \
	void BPF_PROG(algo##_set_state, struct sock *sk, u8 new_state)                 \
	{ bbr_on_set_state(sk, new_state); }                                           \
	SEC("struct_ops")                                                              \
	u32 BPF_PROG(algo##_undo_cwnd, struct sock *sk) { return bbr_on_undo_cwnd(sk); } \
	SEC("struct_ops")                                                              \
	void BPF_PROG(algo##_cwnd_event, struct sock *sk, enum tcp_ca_event ev)        \
	{ bbr_on_cwnd_event(sk, ev); }                                                 \
	SEC("struct_ops")                                                              \
	u32 BPF_PROG(algo##_min_tso_segs, struct sock *sk) { return bbr_on_min_tso_segs(sk); } \
	CCA_OPS(algo) = {                                                              \
		.init         = (void *)algo##_init,                                   \
		.ssthresh     = (void *)algo##_ssthresh,                               \
		.cong_control = (void *)algo##_cong_control,                           \
		.set_state    = (void *)algo##_set_state,                              \
		.undo_cwnd    = (void *)algo##_undo_cwnd,                              \
		.cwnd_event   = (void *)algo##_cwnd_event,                             \
		.min_tso_segs = (void *)algo##_min_tso_segs,                           \
		.name         = #algo,                                                 \
	}

#endif /* BBR_CONTROL_H */
