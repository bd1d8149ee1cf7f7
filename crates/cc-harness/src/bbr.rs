//! The harness's read-only view of a BBR connection's model (bpf/cc/bbr_state.h, read
//! by csrc/bbr_view.c): what Linux's BBR reports in TCP_CC_INFO (bandwidth, min_rtt,
//! the gains) and the rest of the model the definitional tests of tests/bbr*.rs check.
//! Units as in the model: volumes in segments, times in µs, gains in 1/1000, bandwidth
//! in segments per µs << [`BW_SHIFT`].
use crate::Conn;

pub const BW_SHIFT: u32 = 24;
pub const UNIT: u64 = 1000;
pub const INF: u64 = 0xffff_ffff;
pub const INF64: u64 = u64::MAX;

/// enum bbr_st
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Startup,
    Drain,
    Down,
    Cruise,
    Refill,
    Up,
    ProbeRtt,
    None,
}

impl State {
    fn of(v: u64) -> State {
        match v {
            0 => State::Startup,
            1 => State::Drain,
            2 => State::Down,
            3 => State::Cruise,
            4 => State::Refill,
            5 => State::Up,
            6 => State::ProbeRtt,
            _ => State::None,
        }
    }
    pub fn in_probe_bw(self) -> bool {
        matches!(self, State::Down | State::Cruise | State::Refill | State::Up)
    }
}

/// enum bbr_acks
pub const ACKS_INIT: u64 = 0;
pub const ACKS_REFILLING: u64 = 1;
pub const ACKS_PROBE_STARTING: u64 = 2;
pub const ACKS_PROBE_FEEDBACK: u64 = 3;
pub const ACKS_PROBE_STOPPING: u64 = 4;

/// One reading of the model (the order is csrc/bbr_view.c's enum cch_bbr_field).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct View {
    pub state: State,
    pub pacing_gain: u64,
    pub cwnd_gain: u64,
    pub max_bw: u64,
    pub bw: u64,
    pub bw_shortterm: u64,
    pub min_rtt: u64,
    pub inflight_longterm: u64,
    pub inflight_shortterm: u64,
    pub extra_acked: u64,
    pub full_bw_reached: bool,
    pub full_bw_now: bool,
    pub full_bw: u64,
    pub full_bw_count: u64,
    pub round_count: u64,
    pub cycle_count: u64,
    pub ack_phase: u64,
    pub prior_cwnd: u64,
    pub bw_probe_wait: u64,
    pub cycle_stamp: u64,
    pub rounds_since_probe_up: u64,
    pub ecn_alpha: u64,
    pub probe_rtt_min_delay: u64,
    pub probe_rtt_min_stamp: u64,
    pub probe_rtt_done_stamp: u64,
    pub undo_state: State,
    pub prev_probe_too_high: bool,
    pub prev_probe_precautionary: bool,
    pub is_bw_probe_sample: bool,
    pub bw_probe_up_rounds: u64,
    pub probe_up_acked_per_inc: u64,
    pub bw_latest: u64,
    pub inflight_latest: u64,
    pub idle_restart: bool,
    pub packet_conservation: bool,
    pub min_rtt_stamp: u64,
    pub drain_start_round: u64,
    pub max_bw_slot: [u64; 2],
    pub is_loss_in_round: bool,
    pub in_recovery: bool,
}

/// segments per second of a model bandwidth
pub fn pps(bw: u64) -> f64 {
    bw as f64 * 1e6 / (1u64 << BW_SHIFT) as f64
}

/// the model bandwidth of `segs` segments per `us` µs
pub fn bw_of(segs: u64, us: u64) -> u64 {
    (segs << BW_SHIFT) / us
}

impl Conn {
    /// The BBR model of this connection (panics if it has none: not bbr2/bbr3, or init
    /// not run).
    pub fn bbr(&self) -> View {
        let o = self.s.bbr_view().unwrap_or_else(|| panic!("{}: no BBR model on this socket", self.algo));
        View {
            state: State::of(o[0]),
            pacing_gain: o[1],
            cwnd_gain: o[2],
            max_bw: o[3],
            bw: o[4],
            bw_shortterm: o[5],
            min_rtt: o[6],
            inflight_longterm: o[7],
            inflight_shortterm: o[8],
            extra_acked: o[9],
            full_bw_reached: o[10] != 0,
            full_bw_now: o[11] != 0,
            full_bw: o[12],
            full_bw_count: o[13],
            round_count: o[14],
            cycle_count: o[15],
            ack_phase: o[16],
            prior_cwnd: o[17],
            bw_probe_wait: o[18],
            cycle_stamp: o[19],
            rounds_since_probe_up: o[20],
            ecn_alpha: o[21],
            probe_rtt_min_delay: o[22],
            probe_rtt_min_stamp: o[23],
            probe_rtt_done_stamp: o[24],
            undo_state: State::of(o[25]),
            prev_probe_too_high: o[26] != 0,
            prev_probe_precautionary: o[27] != 0,
            is_bw_probe_sample: o[28] != 0,
            bw_probe_up_rounds: o[29],
            probe_up_acked_per_inc: o[30],
            bw_latest: o[31],
            inflight_latest: o[32],
            idle_restart: o[33] != 0,
            packet_conservation: o[34] != 0,
            min_rtt_stamp: o[35],
            drain_start_round: o[36],
            max_bw_slot: [o[37], o[38]],
            is_loss_in_round: o[39] != 0,
            in_recovery: o[40] != 0,
        }
    }
}
