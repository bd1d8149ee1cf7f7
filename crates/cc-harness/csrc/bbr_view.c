// SPDX-License-Identifier: GPL-2.0
/*
 * bbr_view.c — the harness's read-only view of a BBR connection's model (bbr2, bbr3:
 * struct bbr_conn of bpf/cc/bbr_state.h, in the socket storage maps bbr2_state and
 * bbr3_state). What Linux's BBR reports in TCP_CC_INFO (bw, min_rtt, the gains), and
 * the rest of the model its definitional tests check (tests/bbr*.rs). The values go out
 * as u64 in the order of enum cch_bbr_field; the Rust side (src/bbr.rs) names them.
 */
#include "vmlinux.h"
#include "bpf/bpf_helpers.h"
#include "bbr_state.h"

const char *cch_algo_of(void *s);
void *cch_sk(void *s);
int strcmp(const char *a, const char *b);

extern char bbr2_state[], bbr3_state[];

enum cch_bbr_field {
	CB_STATE, CB_PACING_GAIN, CB_CWND_GAIN, CB_MAX_BW, CB_BW, CB_BW_SHORTTERM, CB_MIN_RTT,
	CB_INFLIGHT_LONGTERM, CB_INFLIGHT_SHORTTERM, CB_EXTRA_ACKED, CB_FULL_BW_REACHED,
	CB_FULL_BW_NOW, CB_FULL_BW, CB_FULL_BW_COUNT, CB_ROUND_COUNT, CB_CYCLE_COUNT,
	CB_ACK_PHASE, CB_PRIOR_CWND, CB_BW_PROBE_WAIT, CB_CYCLE_STAMP,
	CB_ROUNDS_SINCE_PROBE_UP, CB_ECN_ALPHA, CB_PROBE_RTT_MIN_DELAY,
	CB_PROBE_RTT_MIN_STAMP, CB_PROBE_RTT_DONE_STAMP, CB_UNDO_STATE,
	CB_PREV_PROBE_TOO_HIGH, CB_PREV_PROBE_PRECAUTIONARY, CB_IS_BW_PROBE_SAMPLE,
	CB_BW_PROBE_UP_ROUNDS, CB_PROBE_UP_ACKED_PER_INC, CB_BW_LATEST, CB_INFLIGHT_LATEST,
	CB_IDLE_RESTART, CB_PACKET_CONSERVATION, CB_MIN_RTT_STAMP, CB_DRAIN_START_ROUND,
	CB_MAX_BW_SLOT0, CB_MAX_BW_SLOT1, CB_LOSS_IN_ROUND, CB_IN_RECOVERY,
	CB_FIELDS,
};

/* fills out[CB_FIELDS] (`n`: the caller's length of out, which must be CB_FIELDS);
 * returns 0, -1 when the socket has no BBR model, -2 when n is not CB_FIELDS */
int cch_bbr_view(void *s, u64 *out, u32 n)
{
	const char *name = cch_algo_of(s);
	void *map = !strcmp(name, "bbr2") ? (void *)bbr2_state
		  : !strcmp(name, "bbr3") ? (void *)bbr3_state : 0;
	const struct bbr_conn *b;

	if (n != CB_FIELDS)
		return -2;
	if (!map)
		return -1;
	b = cch_sk_storage_get(map, cch_sk(s), 0, 0, sizeof(struct bbr_conn));
	if (!b)
		return -1;
	out[CB_STATE] = b->state;
	out[CB_PACING_GAIN] = b->pacing_gain;
	out[CB_CWND_GAIN] = b->cwnd_gain;
	out[CB_MAX_BW] = b->max_bw[0] > b->max_bw[1] ? b->max_bw[0] : b->max_bw[1];
	out[CB_BW] = b->bw;
	out[CB_BW_SHORTTERM] = b->bw_shortterm;
	out[CB_MIN_RTT] = b->min_rtt;
	out[CB_INFLIGHT_LONGTERM] = b->inflight_longterm;
	out[CB_INFLIGHT_SHORTTERM] = b->inflight_shortterm;
	out[CB_EXTRA_ACKED] = b->extra_acked;
	out[CB_FULL_BW_REACHED] = b->full_bw_reached;
	out[CB_FULL_BW_NOW] = b->full_bw_now;
	out[CB_FULL_BW] = b->full_bw;
	out[CB_FULL_BW_COUNT] = b->full_bw_count;
	out[CB_ROUND_COUNT] = b->round_count;
	out[CB_CYCLE_COUNT] = b->cycle_count;
	out[CB_ACK_PHASE] = b->ack_phase;
	out[CB_PRIOR_CWND] = b->prior_cwnd;
	out[CB_BW_PROBE_WAIT] = b->bw_probe_wait;
	out[CB_CYCLE_STAMP] = b->cycle_stamp;
	out[CB_ROUNDS_SINCE_PROBE_UP] = b->rounds_since_probe_up;
	out[CB_ECN_ALPHA] = b->ecn_alpha;
	out[CB_PROBE_RTT_MIN_DELAY] = b->probe_rtt_min_delay;
	out[CB_PROBE_RTT_MIN_STAMP] = b->probe_rtt_min_stamp;
	out[CB_PROBE_RTT_DONE_STAMP] = b->probe_rtt_done_stamp;
	out[CB_UNDO_STATE] = b->undo_state;
	out[CB_PREV_PROBE_TOO_HIGH] = b->prev_probe_too_high;
	out[CB_PREV_PROBE_PRECAUTIONARY] = b->prev_probe_precautionary;
	out[CB_IS_BW_PROBE_SAMPLE] = b->is_bw_probe_sample;
	out[CB_BW_PROBE_UP_ROUNDS] = b->bw_probe_up_rounds;
	out[CB_PROBE_UP_ACKED_PER_INC] = b->probe_up_acked_per_inc;
	out[CB_BW_LATEST] = b->bw_latest;
	out[CB_INFLIGHT_LATEST] = b->inflight_latest;
	out[CB_IDLE_RESTART] = b->idle_restart;
	out[CB_PACKET_CONSERVATION] = b->packet_conservation;
	out[CB_MIN_RTT_STAMP] = b->min_rtt_stamp;
	out[CB_DRAIN_START_ROUND] = b->drain_start_round;
	out[CB_MAX_BW_SLOT0] = b->max_bw[0];
	out[CB_MAX_BW_SLOT1] = b->max_bw[1];
	out[CB_LOSS_IN_ROUND] = b->is_loss_in_round;
	out[CB_IN_RECOVERY] = b->in_recovery;
	return 0;
}
