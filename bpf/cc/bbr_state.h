/* SPDX-License-Identifier: GPL-2.0 */
/*
 * bbr_state.h — the per-connection state of ccarena's BBRv3 and BBRv2 (struct
 * bbr_conn), its units and constants; included by bbr_model.h, and by the user-space
 * harness for its read-only view of the model (crates/cc-harness/csrc/bbr_view.c).
 * Only declarations here: no code, no maps.
 */
#ifndef BBR_STATE_H
#define BBR_STATE_H

#define BBR_UNIT          1000u          /* gains: 1000 = 1.0 */
#define BBR_BW_SHIFT      24             /* bw: segments/µs << 24 (1 unit ~ 0.7 bit/s) */
#define BBR_INF           0xffffffffu    /* "Infinity" for volumes and RTTs */
#define BBR_INF64         (~0ull)        /* "Infinity" for bandwidths */
#define BBR_ECN_ONE       1024u          /* ECN alpha: 1024 = 1.0 */

/* [v3] §2.8, §2.16, §5.6.1; [v2] §2.8, §2.14 (the same in both) */
#define BBR_LOSS_THRESH        20u       /* 2 % per round trip, in 1/1000 */
#define BBR_BETA               700u      /* 0.7: the multiplicative decrease */
#define BBR_HEADROOM           150u      /* 0.15 of inflight_longterm left free */
#define BBR_MIN_PIPE_CWND      4u        /* segments */
#define BBR_PACING_MARGIN_PCT  1u        /* pace 1 % below bw */
#define BBR_UP_PACING_GAIN     1250u
#define BBR_CWND_GAIN          2000u     /* DefaultCwndGain */
#define BBR_PROBE_RTT_CWND_GAIN 500u
#define BBR_FULL_BW_GROWTH     1250u     /* a round grows bw by 25 % or more */
#define BBR_FULL_BW_COUNT      3u        /* rounds without that growth: full pipe */
#define BBR_MIN_RTT_WIN_US     10000000u /* MinRTTFilterLen, 10 s */
#define BBR_PROBE_RTT_INTERVAL_US 5000000u /* ProbeRTTInterval, 5 s */
#define BBR_PROBE_RTT_DURATION_US 200000u  /* ProbeRTTDuration, 200 ms */
#define BBR_EXTRA_ACKED_WIN    10u       /* ExtraAckedFilterLen, round trips */
#define BBR_PROBE_WAIT_BASE_US 2000000u  /* T_bbr = 2 s + uniform(0, 1 s) */
#define BBR_PROBE_WAIT_RAND_US 1000000u
#define BBR_RENO_MAX_ROUNDS    63u       /* T_reno bound */
#define BBR_PROBE_UP_MAX_ROUNDS 30u      /* bound of bw_probe_up_rounds */
#define BBR_SEND_QUANTUM_BYTES 65536u    /* send quantum cap, 64 KB */

enum bbr_st {
	ST_STARTUP,
	ST_DRAIN,
	ST_PROBE_BW_DOWN,
	ST_PROBE_BW_CRUISE,
	ST_PROBE_BW_REFILL,
	ST_PROBE_BW_UP,
	ST_PROBE_RTT,
	ST_NONE,          /* BBR.undo_state "None" */
};

/* BBR.ack_phase, [v3] §2.14 */
enum bbr_acks {
	ACKS_INIT,
	ACKS_REFILLING,
	ACKS_PROBE_STARTING,
	ACKS_PROBE_FEEDBACK,
	ACKS_PROBE_STOPPING,
};

/* BBR.extra_acked_filter ([v3] §5.5.9): the largest extra_acked sample of each of the
 * last BBR_ROUND_SLOTS rounds (slot = round mod BBR_ROUND_SLOTS, a power of two the
 * verifier can bound), with the round each slot holds; the windowed max is the largest
 * slot inside the window. */
#define BBR_ROUND_SLOTS 16u
struct bbr_round_max {
	u32 v[BBR_ROUND_SLOTS];
	u32 round[BBR_ROUND_SLOTS];
};

/* The per-connection state: the drafts' BBR.* variables, plus what stands in for the
 * per-packet state the kernel's rate sample does not carry (below, "loss samples"). */
struct bbr_conn {
	/* data rate model, bw units */
	u64 max_bw[2];               /* BBR.max_bw_filter: one slot per ProbeBW cycle */
	u64 bw;                      /* BBR.bw = min(max_bw, bw_shortterm) */
	u64 bw_shortterm;            /* BBR_INF64: none */
	u64 bw_latest;
	u64 full_bw;
	u64 undo_bw_shortterm;
	/* times, µs */
	u64 min_rtt_stamp;
	u64 probe_rtt_min_stamp;
	u64 probe_rtt_done_stamp;    /* 0: not set */
	u64 cycle_stamp;
	u64 extra_acked_interval_start;
	u32 bw_probe_wait;           /* µs */
	u32 min_rtt;                 /* µs; BBR_INF: no sample yet */
	u32 probe_rtt_min_delay;     /* µs */
	/* data volume model, segments */
	u32 inflight_longterm;       /* BBR_INF: none ([v2] inflight_hi) */
	u32 inflight_shortterm;      /* BBR_INF: none ([v2] inflight_lo) */
	u32 inflight_latest;
	u32 undo_inflight_shortterm;
	u32 undo_inflight_longterm;
	u32 extra_acked;
	u32 extra_acked_delivered;
	struct bbr_round_max extra_acked_filter;
	u32 prior_cwnd;
	u32 init_cwnd;               /* C.InitialCwnd */
	u32 delivered_at_init;
	u32 bw_probe_up_acked;
	u32 probe_up_acked_per_inc;  /* BBR_INF: not growing inflight_longterm */
	/* round counting ([v3] §5.5.1), in delivered segments */
	u32 next_round_delivered;
	u32 loss_round_delivered;
	u32 round_count;
	u32 rounds_since_probe_up;
	u32 drain_start_round;
	u32 recovery_round;          /* round_count when loss recovery began */
	/* loss samples: C.delivered and C.lost at the start of the current round [0] and
	 * of the previous one [1] (see bbr_loss_sample) */
	u32 rnd_delivered[2];
	u32 rnd_lost[2];
	/* the current loss round, for Startup's loss exit ([v3] §5.3.1.3) */
	u32 lr_delivered;
	u32 lr_lost;
	u32 lr_loss_events;
	/* ProbeRTT's MarkConnectionAppLimited, kept here (see bbr_mark_app_limited) */
	u32 app_limited_from;
	u32 app_limited_until;
	/* ECN ([v3] §3.8 requires CE to count as congestion; see bbr_ecn_*) */
	u32 ecn_alpha;               /* 1/1024 */
	u32 alpha_delivered;
	u32 alpha_delivered_ce;
	/* gains, 1/1000 */
	u32 pacing_gain;
	u32 cwnd_gain;
	u8 state;
	u8 ack_phase;
	u8 undo_state;
	u8 cycle_count;              /* BBR.cycle_count (its low bit picks the slot) */
	u8 full_bw_count;
	u8 full_bw_now;
	u8 full_bw_reached;
	u8 round_start;
	u8 loss_round_start;
	u8 is_loss_in_round;
	u8 ecn_in_round;
	u8 startup_ecn_rounds;
	u8 idle_restart;
	u8 prev_probe_too_high;
	u8 prev_probe_precautionary;
	u8 is_bw_probe_sample;
	u8 probe_rtt_round_done;
	u8 probe_rtt_expired;
	u8 bw_probe_up_rounds;
	u8 packet_conservation;      /* [v2] §4.6.4.4 */
	u8 in_recovery;
	u8 has_seen_rtt;             /* the pacing rate was set from an RTT sample */
};

#endif /* BBR_STATE_H */
