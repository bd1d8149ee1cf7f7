//! The control ops of BBRv3 and BBRv2 (bpf/cc/bbr_control.h), one rule per test: init,
//! the repair of a corrupted ssthresh, which state changes are loss recovery, the undo,
//! the restart from idle, and cwnd and pacing at their boundaries. Mechanisms of the
//! model and the state machine are in tests/bbr3.rs and tests/bbr_signals.rs.
//!   [v3] draft-ietf-ccwg-bbr-06; [v2] draft-cardwell-iccrg-bbr-congestion-control-02.
mod bbr_util;

use bbr_util::*;
use ccarena_cc_harness::bbr::{State, ACKS_INIT, INF};
use ccarena_cc_harness::rate::RateSample;
use ccarena_cc_harness::*;

const BOTH: [&str; 2] = ["bbr3", "bbr2"];
/// TCP_INFINITE_SSTHRESH
const INFINITE_SSTHRESH: u32 = 0x7fff_ffff;
/// a corrupted ssthresh: above cca_common.h's sane 2^24 segments, not the infinite value
const GARBAGE: u32 = 0x4000_0000;

/// [v3] §5.2.1 OnInit: the RTT timers start at init (min_rtt expires 10 s after it,
/// ProbeRTT comes 5 s after it), nothing to undo, inflight_longterm not growing, no
/// loss recovery, the full-pipe estimator and the latest delivery signals empty. Init at
/// 50 s on the clock, so a timer left at 0 would already have fired.
#[test]
fn init_starts_the_model_at_the_clock_of_init() {
    for algo in BOTH {
        set_now_us(50_000_000);
        let v = fresh(algo, 20_000).bbr();
        assert_eq!((v.min_rtt_stamp, v.probe_rtt_min_stamp), (50_000_000, 50_000_000), "{algo}: the RTT timers");
        assert_eq!(v.undo_state, State::None, "{algo}: nothing to undo");
        assert_eq!(v.probe_up_acked_per_inc, INF, "{algo}: inflight_longterm not growing");
        assert_eq!(v.ack_phase, ACKS_INIT, "{algo}");
        assert!(!v.in_recovery && !v.full_bw_reached && !v.full_bw_now, "{algo}");
        assert_eq!((v.full_bw, v.full_bw_count, v.bw_latest, v.inflight_latest), (0, 0, 0, 0), "{algo}");
    }
}

/// BBR initialised while the connection is in loss recovery (TCP_CONGESTION set during
/// one) knows it: Recovery and Loss are recovery, Open, Disorder and CWR are not.
#[test]
fn init_during_loss_recovery_starts_in_recovery() {
    for algo in BOTH {
        for (st, rec) in [(OPEN, false), (DISORDER, false), (CWR, false), (RECOVERY, true), (LOSS, true)] {
            let c = Conn::bare(algo);
            c.set(Field::SrttUs, 20_000);
            c.set(Field::CaState, st as u64);
            c.init();
            assert_eq!(c.bbr().in_recovery, rec, "{algo}: init in state {st}");
        }
    }
}

/// The kernel socket's state (the harness model's fields but its namespace), copied from
/// `from` to `to`.
fn copy_socket(from: &Conn, to: &Conn) {
    use Field::*;
    for f in [Cwnd, Ssthresh, SrttUs, PacketsOut, SackedOut, LostOut, RetransOut, IsCwndLimited,
              MaxPacketsOut, CaState, Mss, Delivered, DeliveredCe, SndUna, SndNxt, HighSeq, PriorCwnd,
              PrrOut, CwndClamp, CwndCnt, UndoMarker, Reordering, EcnFlags, PriorSsthresh, RcvNxt,
              PacingRate, MaxPacingRate, MinRttUs, Lost, AppLimited, PacingStatus, SackOk] {
        to.set(f, from.get(f));
    }
}

/// The algorithm selected again on a socket that ran it (TCP_CONGESTION to another and
/// back: init runs again, and the socket's BPF storage is still there): the model starts
/// clean, exactly as on a new connection in the same state, and the two stay identical
/// ACK by ACK, through Startup into ProbeBW. The first life ended after a probe's losses
/// and a recovery, so nothing of it is zero.
#[test]
fn init_again_on_a_used_socket_starts_from_a_clean_model() {
    for algo in BOTH {
        set_now_us(1_000_000);
        let mut d = in_up(algo, 5000.0, 100);
        d.c.set_ca_state(RECOVERY);
        d.round_then_loss(89, 5);
        d.acks(20);
        d.c.set_ca_state(OPEN);
        let used = d.v();
        assert!(used.undo_state != State::None || algo == "bbr2", "{algo}: the first life saved no undo state");
        assert!(used.full_bw_reached && used.inflight_longterm != INF, "{algo}");

        advance_us(1000);
        let old = d.c;
        old.init();
        let new = Conn::bare(algo);
        copy_socket(&old, &new);
        new.init();
        assert_eq!(old.bbr(), new.bbr(), "{algo}: init on the used socket");

        let mut a = Drv::with_conn(old, 5000.0, 20_000);
        let mut b = Drv::with_conn(new, 5000.0, 20_000);
        // rounds of 100 ACKs, 100 segments in flight (the BDP: Drain ends)
        for x in [&mut a, &mut b] {
            x.per_round = 100;
            x.inflight = Some(100);
        }
        for k in 0..3000 {
            // the same clock and the same random draws (ProbeBW's wait) for both
            let t = now_us();
            set_prandom_seed(k + 1);
            a.ack(1, k % 100 == 0, 0);
            set_now_us(t);
            set_prandom_seed(k + 1);
            b.ack(1, k % 100 == 0, 0);
            assert_eq!(a.v(), b.v(), "{algo}: the models differ after {} ACKs", k + 1);
            assert_eq!((a.c.cwnd(), a.c.get(Field::PacingRate)), (b.c.cwnd(), b.c.get(Field::PacingRate)), "{algo}");
        }
        assert!(a.v().state.in_probe_bw(), "{algo}: {:?} after 30 rounds", a.v().state);
    }
}

/// A corrupted ssthresh (the kernel skipped a BPF call: cca_common.h) is repaired to
/// what BBR holds: infinite before the pipe was full, the estimated BDP (at least 4
/// segments) after; by the ssthresh op, by the per-ACK check, and by set_state at
/// entering CWR, which counts the repair at entry.
#[test]
fn a_corrupted_ssthresh_is_repaired_to_infinity_then_to_the_bdp() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 1000.0, 20_000);
        d.acks(3);
        d.c.set_ssthresh(GARBAGE);
        assert_eq!(d.c.op_ssthresh(), INFINITE_SSTHRESH, "{algo}: the op in Startup");
        d.ack(1, false, 0);
        assert_eq!(d.c.ssthresh(), INFINITE_SSTHRESH, "{algo}: the per-ACK check in Startup");

        // BDPs of 20 and of 2 segments (the floor of 4)
        for (bw, floor) in [(1000.0, false), (100.0, true)] {
            let mut d = in_cruise_at(algo, bw);
            let v = d.v();
            let bdp = bdp_multiple(&v, v.bw, 1000, 10);
            assert_eq!(bdp < 4, floor, "{algo}: BDP {bdp}");
            let want = bdp.max(4) as u32;
            d.c.set_ssthresh(GARBAGE);
            assert_eq!(d.c.op_ssthresh(), want, "{algo}: the op in ProbeBW, BDP {bdp}");
            d.ack(1, false, 0);
            assert_eq!(d.c.ssthresh(), want, "{algo}: the per-ACK check in ProbeBW, BDP {bdp}");

            let at_entry = d.c.guard_counts()[1];
            let w = d.c.cwnd();
            d.c.set_ssthresh(GARBAGE);
            d.c.set_ca_state(CWR);
            assert_eq!(d.c.ssthresh(), want, "{algo}: set_state(CWR), BDP {bdp}");
            assert_eq!(d.c.guard_counts()[1], at_entry + 1, "{algo}: the repair at entry is counted");
            assert!(!d.v().in_recovery, "{algo}: CWR is no loss recovery");
            assert_eq!(d.c.cwnd(), w, "{algo}: CWR saves and cuts nothing");
        }
    }
}

/// [v3] §5.6.4.4: only fast recovery and an RTO are loss recovery. Leaving recovery
/// restores the saved window and ends it; CWR, Disorder and their ends touch neither
/// (a window cut since stays cut).
#[test]
fn only_recovery_and_loss_are_loss_recovery() {
    for algo in BOTH {
        let d = in_cruise_at(algo, 1000.0);
        let w = d.c.cwnd();
        d.c.set_ca_state(RECOVERY);
        assert!(d.v().in_recovery, "{algo}");
        d.c.set_cwnd(5);
        d.c.set_ca_state(OPEN);
        assert!(!d.v().in_recovery, "{algo}: recovery ended");
        assert_eq!(d.c.cwnd(), w, "{algo}: the saved window restored");
        for st in [DISORDER, CWR] {
            d.c.set_cwnd(5);
            d.c.set_ca_state(st);
            assert!(!d.v().in_recovery, "{algo}: state {st}");
            assert_eq!(d.c.cwnd(), 5, "{algo}: entering state {st} restored a window");
            d.c.set_ca_state(OPEN);
            assert_eq!(d.c.cwnd(), 5, "{algo}: leaving state {st} restored a window");
            assert!(!d.v().in_recovery, "{algo}");
        }
    }
}

/// [v2] §4.6.4.4 BBRModulateCwndForRecovery: losses take cwnd down by the segments lost,
/// to one segment at least; packet conservation keeps it at in-flight + newly acked,
/// here nothing: an ACK that marks everything outstanding lost leaves one segment. After
/// the first round of recovery (no conservation) the ACK's acknowledged segments grow
/// that one segment (BBRSetCwnd: cwnd + acked, below the target).
#[test]
fn bbr2_losses_in_recovery_take_cwnd_down_to_one_segment_at_least() {
    let mut d = in_cruise_at("bbr2", 1000.0);
    d.c.set_ca_state(RECOVERY);
    d.ack(1, true, 0);
    assert!(!d.v().packet_conservation, "bbr2: conservation past the first round");
    d.c.set_cwnd(8);
    d.ack(10, false, 8);
    assert_eq!(d.c.cwnd(), 11, "bbr2: 8 lost of 8, then 10 acknowledged");
    for extra in [0, 3] {
        let d = in_cruise_at("bbr2", 1000.0);
        d.c.set_ca_state(RECOVERY);
        assert!(d.v().packet_conservation);
        let w = d.c.cwnd();
        d.c.set(Field::PacketsOut, w as u64);
        d.c.set(Field::LostOut, w as u64);
        d.c.set(Field::Lost, d.c.get(Field::Lost) + (w + extra) as u64);
        d.c.cong_control_rs(0, &RateSample::no_sample(0, (w + extra) as i32, -1));
        assert_eq!(d.c.cwnd(), 1, "bbr2: {} lost of a {w}-segment window, nothing in flight", w + extra);
    }
}

/// [v3] §5.6.4.6 SetCwnd: before the pipe is full cwnd grows by the data acknowledged
/// while below max_inflight, and whatever max_inflight while the initial window is not
/// yet delivered (the first InitialCwnd segments); never below MinPipeCwnd (4).
#[test]
fn cwnd_grows_below_max_inflight_or_within_the_initial_window() {
    for algo in BOTH {
        // the initial window: 9 ACKs grow a window far above max_inflight, the 10th not
        let mut d = Drv::new(algo, 1000.0, 20_000);
        d.c.set_cwnd(1000);
        for k in 1..=9 {
            d.ack(1, false, 0);
            assert_eq!(d.c.cwnd(), 1000 + k, "{algo}: {k} of the 10 initial segments delivered");
        }
        d.ack(1, false, 0);
        assert_eq!(d.c.cwnd(), 1009, "{algo}: grew past max_inflight after the initial window");

        // max_inflight itself: one segment below it grows to it, at it no more
        let mut d = Drv::new(algo, 1000.0, 20_000);
        d.acks(12);
        let v = d.v();
        let m = max_inflight(&v, d.c.get(Field::PacingRate), 10) as u32;
        d.c.set_cwnd(m - 1);
        d.ack(1, false, 0);
        let v1 = d.v();
        assert_eq!(max_inflight(&v1, d.c.get(Field::PacingRate), 10) as u32, m, "{algo}: the model moved");
        assert_eq!(d.c.cwnd(), m, "{algo}: from max_inflight − 1");
        d.ack(1, false, 0);
        assert_eq!(d.c.cwnd(), m, "{algo}: grew at max_inflight {m}");
        assert_eq!(d.v().state, State::Startup, "{algo}");

        // the floor, in Startup and after it
        d.c.set_cwnd(1);
        d.ack(1, false, 0);
        assert_eq!(d.c.cwnd(), 4, "{algo}: Startup's window from 1 segment");
        let mut d = in_cruise_at(algo, 1000.0);
        d.c.set_cwnd(2);
        d.ack(1, false, 0);
        assert_eq!(d.c.cwnd(), 4, "{algo}: ProbeBW's window from 2 segments");
    }
}

/// [v3] §5.6.4.7 BoundCwndForModel: the short-term bound (inflight_shortterm) never takes
/// cwnd below MinPipeCwnd. A loss round judged at a 4-segment window on a 3-segment BDP
/// cuts inflight_shortterm to max(3 delivered, Beta × 4 = 2) = 3; cwnd stays 4.
#[test]
fn the_short_term_bound_leaves_at_least_four_segments() {
    for algo in BOTH {
        let mut d = in_cruise_at(algo, 150.0);
        d.ack(1, true, 0);
        d.ack(1, false, 1);
        d.acks(8);
        d.c.set_cwnd(4);
        d.ack(1, true, 0);
        let v = d.v();
        assert_eq!(v.state, State::Cruise, "{algo}");
        assert_eq!(v.inflight_shortterm, 3, "{algo}: the loss round's cut");
        assert_eq!(d.c.cwnd(), 4, "{algo}");
    }
}

/// BBR's pacing rate in bytes per second is gain × bw × MSS × 99 % to the code's integer
/// rounding (its relative error under 10^-8 at 1.4 GB/s): here exactly 10^6 segments/s.
#[test]
fn the_pacing_rate_is_exact_at_a_high_rate() {
    for algo in BOTH {
        let mut d = in_cruise_at(algo, 1_000_000.0);
        d.ack(1, false, 0);
        let v = d.v();
        assert_eq!(v.bw, 1 << 24, "{algo}: 1 segment/µs");
        let want = v.pacing_gain as f64 / 1000.0 * 1e6 * MSS * 0.99;
        let got = d.c.get(Field::PacingRate) as f64;
        assert!((got - want).abs() <= want * 1e-7, "{algo}: pacing {got}, want {want}");
        // BDPMultiple rounds up, and an exact BDP stays as it is: 10^6 segments/s × 20 ms
        d.c.set_ssthresh(GARBAGE);
        assert_eq!(d.c.op_ssthresh(), 20_000, "{algo}: the BDP of 10^6 segments/s over 20 ms");
    }
}

/// [v3] §5.5.9 UpdateACKAggregation: extra_acked is what an aggregation epoch delivered
/// beyond bw × its duration. On a path of 1000 segments/s, after a quiet 10 ms, 30 ACKs
/// of one segment 200 µs apart: the epoch starts at the first (its 1 segment is not above
/// the 9 expected since the last epoch began), and at the 30th it has delivered 30
/// segments in 5.8 ms, where bw explains 5 (floor): 25 extra.
#[test]
fn extra_acked_is_the_delivery_beyond_bw_over_the_epoch() {
    for algo in BOTH {
        let mut d = in_cruise_at(algo, 1000.0);
        d.rounds(11);
        assert_eq!(d.v().extra_acked, 1, "{algo}");
        d.ack_in(10_000, 1, false, 0);
        for _ in 0..29 {
            d.ack_in(200, 1, false, 0);
        }
        assert_eq!(d.v().extra_acked, 25, "{algo}: the epoch's extra delivery");
    }
}

/// [v3] §5.5.9: in Startup the extra_acked filter's window is one round: a burst (the
/// round's first ACK starts an epoch, nine more at the same instant: 10 extra) counts in
/// its own round and is forgotten at the next.
#[test]
fn startup_s_extra_acked_lasts_one_round() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 1000.0, 20_000);
        d.round();
        d.ack(1, true, 0);
        for _ in 0..9 {
            d.ack_in(0, 1, false, 0);
        }
        assert_eq!(d.v().state, State::Startup, "{algo}");
        assert_eq!(d.v().extra_acked, 10, "{algo}: an epoch of ten segments in no time");
        d.ack_in(20_000, 1, true, 0);
        d.ack(1, false, 0);
        assert!(d.v().extra_acked <= 1, "{algo}: extra_acked {} a round after the burst", d.v().extra_acked);
    }
}

/// [v3] §5.6.2: the initial pacing rate is taken from the first RTT sample once only.
/// Startup never lowers its pacing rate afterwards, also when srtt grows (a queue) and a
/// rate taken from it again would be lower.
#[test]
fn startup_pacing_is_not_taken_again_from_a_grown_srtt() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 10.0, 20_000);
        d.round();
        let p0 = d.c.get(Field::PacingRate);
        d.c.set(Field::SrttUs, 40_000);
        d.rtt_us = 40_000;
        d.round();
        assert_eq!(d.c.get(Field::PacingRate), p0, "{algo}: Startup's pacing rate after srtt doubled");
    }
}

/// [v3] §5.4.1 HandleRestartFromIdle: only the first transmission after the flow was
/// application-limited (CA_EVENT_TX_START with tp->app_limited) is a restart from idle;
/// another event, or that one without the marker, changes nothing.
#[test]
fn only_a_transmission_start_after_an_application_limited_idle_is_a_restart() {
    for algo in BOTH {
        let d = in_cruise_at(algo, 1000.0);
        let p = d.c.get(Field::PacingRate);
        d.c.set(Field::AppLimited, 0);
        d.c.cwnd_event(CA_EVENT_TX_START);
        assert!(!d.v().idle_restart, "{algo}: TX_START without the application-limited marker");
        d.c.set(Field::AppLimited, 1);
        for ev in [CA_EVENT_CWND_RESTART, CA_EVENT_COMPLETE_CWR, CA_EVENT_ECN_NO_CE] {
            d.c.cwnd_event(ev);
            assert!(!d.v().idle_restart, "{algo}: event {ev} taken for a restart");
        }
        assert_eq!(d.c.get(Field::PacingRate), p, "{algo}");
        d.c.cwnd_event(CA_EVENT_TX_START);
        assert!(d.v().idle_restart, "{algo}: the restart");
    }
}

/// [v3] §5.4.1 with §5.5.9: a restart from idle begins a new aggregation epoch. The first
/// ACK after it, 100 µs on (a tenth of a segment's time at bw), counts only its own
/// segment as extra, nothing of the epoch before the idle period.
#[test]
fn a_restart_from_idle_begins_a_new_aggregation_epoch() {
    for algo in BOTH {
        let mut d = in_cruise_at(algo, 1000.0);
        d.rounds(11);
        assert_eq!(d.v().extra_acked, 1, "{algo}: ACKs at bw count one segment as extra");
        advance_us(1_000_000);
        d.c.set(Field::AppLimited, 1);
        d.c.cwnd_event(CA_EVENT_TX_START);
        d.ack_in(100, 1, false, 0);
        assert_eq!(d.v().extra_acked, 1, "{algo}: the first ACK after the restart");
    }
}

/// [v3] §5.4.1: a restart from idle in ProbeRTT ends ProbeRTT if its time is up (the idle
/// period drained the queue as ProbeRTT would), back to ProbeBW with the saved window;
/// before its time it stays.
#[test]
fn a_restart_in_probe_rtt_ends_it_once_its_time_is_up() {
    for algo in BOTH {
        for late in [false, true] {
            let mut d = in_cruise_at(algo, 2000.0);
            d.acks_until(State::ProbeRtt, false, 5000);
            let half = d.c.cwnd();
            d.inflight = Some(half);
            d.ack(1, false, 0);
            let done = d.v().probe_rtt_done_stamp;
            assert!(done > now_us(), "{algo}: ProbeRTT's 200 ms not started");
            set_now_us(if late { done + 1 } else { done - 1 });
            d.c.set(Field::AppLimited, 1);
            d.c.cwnd_event(CA_EVENT_TX_START);
            let st = d.v().state;
            if late {
                assert!(st.in_probe_bw(), "{algo}: {st:?} after a restart past ProbeRTT's end");
                assert!(d.c.cwnd() > half, "{algo}: the window before ProbeRTT not restored");
            } else {
                assert_eq!(st, State::ProbeRtt, "{algo}: a restart before ProbeRTT's end ended it");
            }
        }
    }
}

/// [v3] §5.5.11.2: a spurious loss recovery clears the loss seen in the round (the
/// round's losses were not losses); [v2] restores cwnd only.
#[test]
fn an_undo_forgets_the_round_s_loss_in_v3_only() {
    for algo in BOTH {
        let mut d = in_cruise_at(algo, 1000.0);
        d.ack(1, true, 0);
        d.c.set_ca_state(RECOVERY);
        d.ack(1, false, 1);
        assert!(d.v().is_loss_in_round, "{algo}");
        d.c.undo();
        assert_eq!(d.v().is_loss_in_round, algo == "bbr2", "{algo}: the round's loss after the undo");
    }
}

/// Without its model (the socket storage could not be allocated at init) BBR leaves the
/// connection to the kernel: every op runs, none changes cwnd, undo_cwnd gives it back.
#[test]
fn without_its_model_bbr_leaves_the_connection_to_the_kernel() {
    for algo in BOTH {
        let c = Conn::bare(algo);
        c.set(Field::SrttUs, 20_000);
        c.set_cwnd(17);
        set_storage_fails(true);
        c.init();
        set_storage_fails(false);
        c.set(Field::Delivered, 1);
        c.cong_control_rs(FLAG_DATA_ACKED, &RateSample::of(0, 1, 20_000, 1, 20_000));
        c.set_ca_state(RECOVERY);
        c.set_ca_state(OPEN);
        c.cwnd_event(CA_EVENT_LOSS);
        c.set(Field::AppLimited, 1);
        c.cwnd_event(CA_EVENT_TX_START);
        assert_eq!(c.cwnd(), 17, "{algo}");
        assert_eq!(c.op_undo_cwnd(), 17, "{algo}: undo_cwnd");
        assert_eq!(c.op_ssthresh(), c.ssthresh(), "{algo}: the ssthresh op keeps ssthresh");
    }
}

/// The kernel goes from Loss straight to Recovery when retransmissions are lost in Loss
/// (tcp_fastretrans_alert with FLAG_LOST_RETRANS): still loss recovery, nothing restored
/// until it ends.
#[test]
fn from_loss_to_recovery_is_still_loss_recovery() {
    for algo in BOTH {
        let d = in_cruise_at(algo, 1000.0);
        let w = d.c.cwnd();
        d.c.enter_loss();
        assert_eq!(d.c.cwnd(), 1, "{algo}");
        d.c.set_ca_state(RECOVERY);
        assert!(d.v().in_recovery, "{algo}: Loss to Recovery ended the recovery");
        assert_eq!(d.c.cwnd(), 1, "{algo}: Loss to Recovery restored a window");
        d.c.set_ca_state(OPEN);
        assert_eq!(d.c.cwnd(), w, "{algo}: the window before the RTO after the recovery");
    }
}

/// [v3] §5.3.1.3 CheckStartupHighLoss on a connection already in fast recovery when BBR
/// began (TCP_CONGESTION set during one): the losses are counted from init, not the
/// connection's 3 000 lost and 100 000 delivered before. 400 segments acknowledged with
/// BBRStartupFullLossCnt loss events of 1 segment (1.5 %) keep Startup; of 3 (4.3 %) end it.
#[test]
fn init_in_recovery_counts_startup_s_losses_from_init() {
    for algo in BOTH {
        for (per_event, exit) in [(1, false), (3, true)] {
            let c = Conn::bare(algo);
            c.set(Field::SrttUs, 20_000);
            c.set(Field::Delivered, 100_000);
            c.set(Field::Lost, 3_000);
            c.set(Field::CaState, RECOVERY as u64);
            c.init();
            let mut d = Drv::with_conn(c, 1000.0, 20_000);
            let events = params(algo).full_loss_cnt;
            for k in 0..400 {
                d.ack(1, false, if k < events { per_event } else { 0 });
            }
            d.ack(1, true, 0);
            assert_eq!(d.v().full_bw_reached, exit, "{algo}: {events} loss events of {per_event} in 400");
        }
    }
}

/// [v3] §5.6.3, §5.6.4.2 (v2: [v2] §4.6.3): where twice the BDP is small, cwnd rests at
/// the quantization budget, three send quanta (and at least 4 segments); a quantum is one
/// millisecond at the pacing rate in whole segments, at least 2 (v2: 1 below 1.2 Mbit/s,
/// 150 000 B/s). Paths: ~14 MB/s over 200 µs (9-segment quanta), ~1.4 MB/s over 1 ms
/// (the floor of 2), and ~130, ~140 and ~158 KB/s over 11, 10 and 9 ms (v2's floor on
/// either side of its threshold). ACKs come at the path's rate, so extra_acked stays small.
#[test]
fn cwnd_rests_at_three_send_quanta_on_a_small_bdp() {
    for (bw, rtt, per_round) in [(10_000.0, 200, 2), (1000.0, 1000, 1), (90.9, 11_000, 1), (97.7, 10_235, 1), (110.0, 9_091, 1)] {
        for algo in BOTH {
            let mut d = Drv::new(algo, bw, rtt);
            d.per_round = per_round;
            d.to_probe_bw();
            d.acks_until(State::Cruise, false, 500);
            d.acks(400);
            let v = d.v();
            let pacing = d.c.get(Field::PacingRate);
            let floor = if algo == "bbr2" && pacing < 150_000 { 1 } else { 2 };
            let q = ((pacing / 1000).min(65_536) / 1448).max(floor);
            let cap = bdp_multiple(&v, v.bw, v.cwnd_gain, 10) + v.extra_acked;
            // below three quanta, and below three quanta of 2 segments: the budget decides
            assert!(cap < (3 * q).max(6), "{algo} at {pacing} B/s: gain × BDP + extra_acked {cap}");
            assert_eq!(d.c.cwnd() as u64, (3 * q).max(4), "{algo} at {pacing} B/s, quantum {q}");
        }
    }
}

/// [v2] §4.6.3, [v3] §5.6.4.2: with v2's 1-segment quanta, three quanta are 3 segments,
/// and the budget's floor of 4 (MinPipeCwnd) holds: on a BDP of 1 segment Drain ends
/// with 4 segments in flight.
#[test]
fn bbr2_drain_ends_at_four_segments_on_a_tiny_bdp() {
    let mut d = Drv::new("bbr2", 90.9, 11_000);
    d.per_round = 1;
    d.rounds_until(State::Drain, 20);
    assert!(d.c.get(Field::PacingRate) < 150_000);
    d.inflight = Some(5);
    d.ack(1, false, 0);
    assert_eq!(d.v().state, State::Drain, "bbr2: 5 segments in flight");
    d.inflight = Some(4);
    d.ack(1, false, 0);
    assert!(d.v().state.in_probe_bw(), "bbr2: {:?} with 4 segments in flight", d.v().state);
}
