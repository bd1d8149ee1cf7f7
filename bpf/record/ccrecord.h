/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ccrecord.h — the record ccrecord.bpf.c writes and crates/cc-record reads (one header
 * for both sides, so the layout cannot drift). Plain fixed-width integers only.
 */
#ifndef CCRECORD_H
#define CCRECORD_H

/* what happened (cc_rec.kind); _IN: at the entry of the function, _OUT: at its exit */
enum ccr_kind {
	CCR_INIT_IN = 1, CCR_INIT_OUT,                 /* tcp_init_congestion_control */
	CCR_SET_STATE_IN, CCR_SET_STATE_OUT,           /* tcp_set_ca_state(sk, state) */
	CCR_CC_PRE, CCR_CC_POST,                       /* the ACK's congestion update (see .bpf.c) */
	CCR_IN_ACK_EVENT,                              /* tcp_in_ack_event(sk, flag) */
	CCR_CWND_REDUCTION,                            /* tcp_cwnd_reduction(sk, acked_sacked, lost, flag) */
	CCR_CWND_RESTART_IN, CCR_CWND_RESTART_OUT,     /* tcp_cwnd_restart(sk, delta) */
	CCR_ENTER_LOSS_IN, CCR_ENTER_LOSS_OUT,         /* tcp_enter_loss(sk) */
	CCR_UNDO_IN, CCR_UNDO_OUT,                     /* tcp_undo_cwnd_reduction(sk, unmark_loss) */
	/* the module's own ops (attach targets set by the recorder per algorithm) */
	CCR_OP_SSTHRESH_IN = 20, CCR_OP_SSTHRESH_OUT,
	CCR_OP_CONG_AVOID_IN, CCR_OP_CONG_AVOID_OUT,
	CCR_OP_UNDO_CWND_IN, CCR_OP_UNDO_CWND_OUT,
	CCR_OP_PKTS_ACKED_IN, CCR_OP_PKTS_ACKED_OUT,
	CCR_OP_CWND_EVENT_IN, CCR_OP_CWND_EVENT_OUT,
	CCR_OP_IN_ACK_EVENT_IN, CCR_OP_IN_ACK_EVENT_OUT,
};

/* the socket fields an algorithm or the kernel's per-ACK code reads or writes */
struct ccr_snap {
	__u32 cwnd, ssthresh, cwnd_cnt, cwnd_clamp;
	__u32 srtt_us, mdev_us, min_rtt_us;            /* srtt_us as the kernel keeps it: <<3 */
	__u32 packets_out, sacked_out, lost_out, retrans_out, max_packets_out;
	__u32 delivered, delivered_ce, lost;
	__u32 snd_una, snd_nxt, high_seq, rcv_nxt;
	__u32 prior_cwnd, prior_ssthresh, prr_delivered, prr_out;
	__u32 undo_marker, undo_retrans, reordering;
	__u32 cwnd_stamp, lsndtime, cwnd_used, app_limited;
	__u32 rcv_tsval, rcv_tsecr;
	__u32 mss_cache, icsk_rto, delack_max;
	__u8 ca_state, is_cwnd_limited, ecn_flags, saw_tstamp;
	__u64 tcp_mstamp;
	__u64 pacing_rate, max_pacing_rate;
};

struct ccr_rec {
	__u64 t_ns;        /* bpf_ktime_get_ns() */
	__u64 jiffies;     /* bpf_jiffies64() */
	__u64 sk;          /* the socket (connection id within one trace) */
	__u32 kind;        /* enum ccr_kind */
	__u32 pad;
	__s64 arg[8];      /* the call's arguments / rate sample, per kind (cc-record's docs) */
	__s64 ret;         /* the return value (_OUT of an op that returns) */
	struct ccr_snap s;
};

/* crates/cc-record reads the record by these offsets (src/record.rs) */
_Static_assert(sizeof(struct ccr_snap) == 168, "struct ccr_snap layout");
_Static_assert(sizeof(struct ccr_rec) == 272, "struct ccr_rec layout");

struct ccr_cfg {
	__u16 port;        /* the traced sender's remote port (host order) */
	__u16 pad[3];
};

#endif
