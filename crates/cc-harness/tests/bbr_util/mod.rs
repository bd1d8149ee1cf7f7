//! What the BBR tests share: the drafts' formulas, computed here from the model's view
//! in floating point (the code's integer arithmetic is held to them within its
//! rounding), and small drivers.
//!   [v3] draft-ietf-ccwg-bbr-06; [v2] draft-cardwell-iccrg-bbr-congestion-control-02.
#![allow(dead_code)]
use ccarena_cc_harness::bbr::{State, View, BW_SHIFT, INF};
use ccarena_cc_harness::rate::RateSample;
use ccarena_cc_harness::sim::{Net, Sim};
use ccarena_cc_harness::*;

pub const MSS: f64 = 1448.0;

/// The parameters a version sets (bbr3.bpf.c, bbr2.bpf.c), as the drafts and the v2
/// release give them, in 1/1000.
pub struct Params {
    pub startup_pacing: u64,
    pub startup_cwnd: u64,
    pub drain_pacing: u64,
    pub down_pacing: u64,
    pub up_cwnd: u64,
    pub full_loss_cnt: u32,
}

pub fn params(algo: &str) -> Params {
    match algo {
        // [v3] §2.5, §2.6, §5.3.3.1, §5.3.3.5, §5.3.1.3
        "bbr3" => Params { startup_pacing: 2770, startup_cwnd: 2000, drain_pacing: 500, down_pacing: 900,
                           up_cwnd: 2250, full_loss_cnt: 6 },
        // the v2 release's constants (bbr2.bpf.c)
        "bbr2" => Params { startup_pacing: 2885, startup_cwnd: 2885, drain_pacing: 347, down_pacing: 750,
                           up_cwnd: 2000, full_loss_cnt: 8 },
        _ => panic!("{algo}"),
    }
}

/// The pacing gain and cwnd gain of a state ([v3] §5.6.1's table; [v2] §4.6.1 with the
/// release's constants).
pub fn gains(algo: &str, st: State) -> (u64, u64) {
    let p = params(algo);
    match st {
        State::Startup => (p.startup_pacing, p.startup_cwnd),
        State::Drain => (p.drain_pacing, p.startup_cwnd),
        State::Down => (p.down_pacing, 2000),
        State::Cruise | State::Refill => (1000, 2000),
        State::Up => (1250, p.up_cwnd),
        State::ProbeRtt => (1000, 500),
        State::None => panic!("no state"),
    }
}

/// segments per second of the model's bw
pub fn pps(bw: u64) -> f64 {
    bw as f64 * 1e6 / (1u64 << BW_SHIFT) as f64
}

/// SetPacingRateWithGain(): gain × bw × (100 − 1) / 100, in bytes per second
pub fn pacing_of(v: &View, gain: u64) -> f64 {
    gain as f64 / 1000.0 * pps(v.bw) * MSS * 0.99
}

/// BDPMultiple(bw, gain) in segments, rounded up; InitialCwnd before any RTT sample
pub fn bdp_multiple(v: &View, bw: u64, gain: u64, init_cwnd: u64) -> u64 {
    if v.min_rtt == INF {
        return init_cwnd;
    }
    (pps(bw) * v.min_rtt as f64 / 1e6 * gain as f64 / 1000.0 - 1e-9).ceil().max(0.0) as u64
}

/// the send quantum in segments: pacing rate × 1 ms, between 2 segments and 64 KB
pub fn send_quantum(pacing_rate: u64) -> u64 {
    ((pacing_rate / 1000).min(65536) / MSS as u64).max(2)
}

/// QuantizationBudget(): at least 3 send quanta and 4 segments; 2 more in ProbeBW_UP
pub fn quantize(v: &View, cap: u64, pacing_rate: u64) -> u64 {
    let c = cap.max(3 * send_quantum(pacing_rate)).max(4);
    if v.state == State::Up { c + 2 } else { c }
}

/// UpdateMaxInflight(): cwnd_gain × BDP + extra_acked, quantized
pub fn max_inflight(v: &View, pacing_rate: u64, init_cwnd: u64) -> u64 {
    quantize(v, bdp_multiple(v, v.bw, v.cwnd_gain, init_cwnd) + v.extra_acked, pacing_rate)
}

/// InflightWithHeadroom()
pub fn with_headroom(v: &View) -> u64 {
    if v.inflight_longterm == INF {
        return INF;
    }
    let h = ((v.inflight_longterm as f64 * 0.15) as u64).max(1);
    v.inflight_longterm.saturating_sub(h).max(4)
}

/// A connection in ProbeBW_UP on a path of `bw` segments/s and 20 ms, rounds of
/// `per_round` ACKs.
pub fn in_up(algo: &str, bw: f64, per_round: u32) -> Drv {
    let mut d = Drv::new(algo, bw, 20_000);
    d.to_probe_bw();
    d.per_round = per_round;
    d.acks_until(State::Refill, true, 2000);
    d.acks_until(State::Up, true, 10);
    d
}

/// A bbr3 connection in ProbeBW_UP on a path of 20 000 segments/s and 20 ms (BDP 400,
/// rounds of 400 ACKs), BBR begun on a connection that had delivered 100 000 segments and
/// lost 1 000, so no count is near 0.
pub fn in_up_of_400() -> Drv {
    let c = Conn::bare("bbr3");
    c.set(Field::SrttUs, 20_000);
    c.set(Field::Delivered, 100_000);
    c.set(Field::Lost, 1_000);
    c.init();
    let mut d = Drv::with_conn(c, 20_000.0, 20_000);
    d.to_probe_bw();
    d.per_round = 400;
    d.acks_until(State::Refill, true, 5000);
    d.acks_until(State::Up, true, 10);
    d
}

/// A connection in ProbeBW_CRUISE on a path of `bw` segments/s and 20 ms.
pub fn in_cruise_at(algo: &str, bw: f64) -> Drv {
    let mut d = Drv::new(algo, bw, 20_000);
    d.to_probe_bw();
    d.acks_until(State::Cruise, false, 50);
    d
}

/// A simulation of one flow of `algo` on `rate_bps`, RTT `rtt_us`, a buffer of
/// `buffer` packets.
pub fn one_flow(algo: &str, rate_bps: f64, rtt_us: u64, buffer: usize) -> Sim {
    let mut s = Sim::new(Net::new(rate_bps, buffer));
    s.add_flow(algo, rtt_us);
    s
}

/// Run until flow 0's model is in `st` (false after `max_us`).
pub fn run_to_state(s: &mut Sim, st: State, max_us: u64) -> bool {
    let end = s.now_ns() + max_us * 1000;
    !s.run_checked(end, |s| s.conn(0).bbr().state != st)
}

/// A connection of `algo` after the handshake with an RTT sample of `srtt_us`, init run.
pub fn fresh(algo: &str, srtt_us: u64) -> Conn {
    let c = Conn::bare(algo);
    c.set(Field::SrttUs, srtt_us);
    c.init();
    c
}

/// One ACK of `acked` segments, given to cong_control with a delivery sample of `bw_pps`
/// over `interval_us` (the newest packet sent when C.delivered was `prior`), an RTT
/// sample `rtt_us`; C.delivered advances by `acked` first, as the kernel's does.
pub fn feed(c: &Conn, prior: u32, bw_pps: f64, interval_us: u64, acked: u32, rtt_us: u64) {
    c.set(Field::Delivered, c.get(Field::Delivered) + acked as u64);
    let delivered = (bw_pps * interval_us as f64 / 1e6).round() as u32;
    c.cong_control_rs(FLAG_DATA_ACKED, &RateSample::of(prior, delivered, interval_us, acked, rtt_us));
}

/// Rounds of ACKs fed to `c`: each round `per_round` ACKs of one segment `gap_us`
/// apart, the first ACK of each round carrying a packet sent after the round began
/// (it ends the model's round), samples of `bw_pps` over one RTT.
pub fn feed_rounds(c: &Conn, rounds: u32, per_round: u32, bw_pps: f64, rtt_us: u64) {
    let gap = rtt_us / per_round as u64;
    for _ in 0..rounds {
        let start = c.get(Field::Delivered) as u32;
        for k in 0..per_round {
            advance_us(gap);
            // the first ACK of the round acknowledges data sent at the previous round's
            // end (C.delivered = start); the rest, data sent before it
            let prior = if k == 0 { start } else { start.wrapping_sub(1) };
            feed(c, prior, bw_pps, rtt_us, 1, rtt_us);
        }
    }
}

/// A connection driven ACK by ACK on a synthetic path: every delivery sample is
/// `bw_pps` (one RTT's data over one RTT), every RTT sample `rtt_us`; a round is `per_round`
/// ACKs of one segment, evenly spaced over the RTT, the first of which acknowledges a
/// packet sent after the previous round began (so it ends the model's round). C.inflight
/// is `inflight` (the test sets it), the flow is cwnd-limited when it reaches cwnd.
pub struct Drv {
    pub c: Conn,
    pub bw_pps: f64,
    pub rtt_us: u64,
    pub per_round: u32,
    pub inflight: Option<u32>,
    pub app_limited: bool,
    /// RS.delivered_ce of every sample
    pub ce: i32,
    round_start_delivered: u32,
}

impl Drv {
    pub fn new(algo: &str, bw_pps: f64, rtt_us: u64) -> Drv {
        Drv::with_conn(fresh(algo, rtt_us), bw_pps, rtt_us)
    }

    /// The same driver for a connection made elsewhere (e.g. BBR set on an established one).
    pub fn with_conn(c: Conn, bw_pps: f64, rtt_us: u64) -> Drv {
        let d = c.get(Field::Delivered) as u32;
        Drv { c, bw_pps, rtt_us, per_round: 10, inflight: None, app_limited: false, ce: 0, round_start_delivered: d }
    }

    pub fn v(&self) -> View {
        self.c.bbr()
    }

    /// The sample of this path for an ACK whose newest packet left at C.delivered = prior.
    pub fn sample(&self, prior: u32, acked: u32, losses: i32) -> RateSample {
        let delivered = (self.bw_pps * self.rtt_us as f64 / 1e6).round() as u32;
        let mut rs = RateSample::of(prior, delivered.max(1), self.rtt_us, acked, self.rtt_us);
        rs.losses = losses;
        rs.is_app_limited = self.app_limited as u8;
        rs.delivered_ce = self.ce;
        rs
    }

    /// One ACK of `acked` segments, `losses` newly lost (C.lost grows by them), ending a
    /// round if `new_round`; the clock moves one ACK gap first.
    pub fn ack(&mut self, acked: u32, new_round: bool, losses: u32) {
        self.ack_in(self.rtt_us / self.per_round as u64, acked, new_round, losses)
    }

    /// The same ACK `dt_us` after the last one (timers tested to the microsecond).
    pub fn ack_in(&mut self, dt_us: u64, acked: u32, new_round: bool, losses: u32) {
        self.ack_with(dt_us, acked, new_round, losses, |_| ())
    }

    /// The same ACK with its rate sample changed by `edit` before the op sees it (an
    /// older packet, no RTT sample, another rate).
    pub fn ack_with(&mut self, dt_us: u64, acked: u32, new_round: bool, losses: u32,
                    edit: impl FnOnce(&mut RateSample)) {
        advance_us(dt_us);
        let c = &self.c;
        let before = c.get(Field::Delivered) as u32;
        let prior = if new_round { before } else { self.round_start_delivered.wrapping_sub(1) };
        c.set(Field::Delivered, (before + acked) as u64);
        c.set(Field::Lost, c.get(Field::Lost) + losses as u64);
        let inflight = self.inflight.unwrap_or(c.cwnd());
        c.set(Field::PacketsOut, inflight as u64);
        c.set(Field::IsCwndLimited, (inflight >= c.cwnd()) as u64);
        let mut rs = self.sample(prior, acked, losses as i32);
        edit(&mut rs);
        c.cong_control_rs(FLAG_DATA_ACKED, &rs);
        if new_round {
            self.round_start_delivered = before + acked;
        }
    }

    /// ACKs of one segment at the usual spacing (each ending a round if `new_round`) until
    /// the next would come within a spacing of `t_us`, then one exactly at `t_us`.
    pub fn acks_up_to(&mut self, t_us: u64, new_round: bool) {
        let gap = self.rtt_us / self.per_round as u64;
        while now_us() + 2 * gap < t_us {
            self.ack(1, new_round, 0);
        }
        self.ack_in(t_us - now_us(), 1, new_round, 0);
    }

    /// A round's first ACK, `acks` more, then one that marks `lost` segments lost (in UP:
    /// the probe's excess-loss test sees RS.lost = `lost` of RS.tx_in_flight = `acks` +
    /// 2 + `lost`: the round's first ACK, these, and this one).
    pub fn round_then_loss(&mut self, acks: u32, lost: u32) {
        self.ack(1, true, 0);
        for _ in 0..acks {
            self.ack(1, false, 0);
        }
        self.ack(1, false, lost);
    }

    /// `n` ACKs of one segment within the round.
    pub fn acks(&mut self, n: u32) {
        for _ in 0..n {
            self.ack(1, false, 0);
        }
    }

    /// One round of `per_round` ACKs of one segment.
    pub fn round(&mut self) {
        for k in 0..self.per_round {
            self.ack(1, k == 0, 0);
        }
    }

    pub fn rounds(&mut self, n: u32) {
        for _ in 0..n {
            self.round();
        }
    }

    /// ACKs of one segment until the model is in `st`, each ending a round if `rounds`;
    /// panics after `max`.
    pub fn acks_until(&mut self, st: State, rounds: bool, max: u32) {
        for _ in 0..max {
            if self.v().state == st {
                return;
            }
            self.ack(1, rounds, 0);
        }
        assert_eq!(self.v().state, st, "{}: not in {st:?} after {max} ACKs", self.c.algo);
    }

    /// Rounds until the model is in `st`; panics after `max` rounds.
    pub fn rounds_until(&mut self, st: State, max: u32) -> u32 {
        for n in 0..max {
            if self.v().state == st {
                return n;
            }
            self.round();
        }
        assert_eq!(self.v().state, st, "{}: not in {st:?} after {max} rounds", self.c.algo);
        max
    }

    /// Through Startup and Drain into ProbeBW on this path (Startup ends on its plateau;
    /// C.inflight falls to the BDP for Drain to end).
    pub fn to_probe_bw(&mut self) {
        for _ in 0..20 {
            if self.v().state != State::Startup {
                break;
            }
            self.round();
        }
        let bdp = (self.bw_pps * self.rtt_us as f64 / 1e6).ceil() as u32;
        if self.v().state == State::Drain {
            self.inflight = Some(bdp);
            self.round();
        }
        assert!(self.v().state.in_probe_bw(), "{}: {:?} after Drain", self.c.algo, self.v().state);
        self.inflight = None;
    }
}
