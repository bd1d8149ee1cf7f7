//! BBRv3 and BBRv2 outside bandwidth probing: the short-term model's response to loss,
//! ECN (v3), ACK aggregation, the cwnd rule, loss recovery and its undo, restarting from
//! idle, ProbeRTT, the send quantum and the guard of ssthresh; held to
//! draft-ietf-ccwg-bbr-06 ([v3]) and draft-cardwell-iccrg-bbr-congestion-control-02
//! ([v2]) as tests/bbr3.rs does.
mod bbr_util;

use bbr_util::*;
use ccarena_cc_harness::bbr::{State, INF, INF64};
use ccarena_cc_harness::rate::RateSample;
use ccarena_cc_harness::*;

const BOTH: [&str; 2] = ["bbr3", "bbr2"];

/// A connection in ProbeBW_CRUISE on a 1000 segments/s, 20 ms path (BDP 20).
fn in_cruise(algo: &str) -> Drv {
    in_cruise_at(algo, 1000.0)
}

/// A bbr3 connection (5000 segments/s, 20 ms) in the UP that §5.3.3.6 starts at once
/// after a precautionary probe: a probe cut inflight_longterm (5 of 96 lost), the next
/// UP ended as in-flight data reached it, and its feedback showed no excess. Returns the
/// driver, at the first ACK of that UP, and the cut.
fn in_accelerated_up() -> (Drv, u64) {
    let mut d = in_up("bbr3", 5000.0, 100);
    d.round_then_loss(89, 5);
    let cut = d.v().inflight_longterm;
    assert!(cut != INF && d.v().state == State::Down);
    d.acks_until(State::Refill, true, 5000);
    d.acks_until(State::Up, true, 5);
    d.inflight = Some(cut as u32);
    d.ack(1, false, 0);
    d.inflight = None;
    d.ack(1, true, 0);
    d.acks_until(State::Up, true, 5);
    (d, cut)
}


/// A round of ten ACKs, the second marking one segment lost, judged (as a loss round) by
/// the first ACK of the next round.
fn lossy_round_judged(d: &mut Drv) {
    d.ack(1, true, 0);
    d.ack(1, false, 1);
    d.acks(8);
    d.ack(1, true, 0);
}

/// §5.5.10.3 AdaptLowerBoundsFromCongestion: outside probing, at the end of each round
/// with loss, bw_shortterm = max(bw_latest, 0.7 × bw_shortterm) and inflight_shortterm =
/// max(inflight_latest, 0.7 × inflight_shortterm), starting from max_bw and cwnd; a round
/// without loss leaves them; REFILL forgets them (tests/bbr3.rs).
#[test]
fn each_lossy_round_outside_probing_cuts_the_short_term_model_by_beta() {
    for algo in BOTH {
        let mut d = in_cruise(algo);
        let v0 = d.v();
        let cwnd0 = d.c.cwnd() as u64;
        // a round at half the rate with a loss; judged at the next round's start
        d.bw_pps = 500.0;
        lossy_round_judged(&mut d);
        let v = d.v();
        let want_bw = 0.7 * pps(v0.max_bw);
        assert!((pps(v.bw_shortterm) - want_bw).abs() < 2.0, "{algo}: bw_shortterm {:.1}, want {want_bw:.1}", pps(v.bw_shortterm));
        assert_eq!(v.inflight_shortterm, cwnd0 * 7 / 10, "{algo}: inflight_shortterm after one lossy round");
        assert!((pps(v.bw) - want_bw).abs() < 2.0, "{algo}: BBR.bw is bounded by bw_shortterm");
        // a round without loss changes nothing
        d.bw_pps = 300.0;
        d.round();
        assert_eq!(d.v().inflight_shortterm, cwnd0 * 7 / 10, "{algo}");
        // another lossy round at 0.3: 0.7 × 0.7 = 0.49 of max_bw beats the latest 0.3
        d.ack(1, true, 1);
        d.acks(9);
        d.ack(1, true, 0);
        let v = d.v();
        assert!((pps(v.bw_shortterm) - 0.49 * pps(v0.max_bw)).abs() < 2.0, "{algo}: {:.1}", pps(v.bw_shortterm));
        assert!(d.c.cwnd() as u64 <= v.inflight_shortterm.max(4), "{algo}: cwnd above inflight_shortterm");
    }
}

/// §5.5.10.3 LossLowerBounds: inflight_shortterm = max(inflight_latest, Beta ×
/// inflight_shortterm), inflight_latest being the most one sample delivered in the loss
/// round just ended: its maximum over that round, restarted at each loss round's start.
/// A longer sample interval at the same rate delivers more (38 segments against Beta ×
/// cwnd ≈ 28) without moving max_bw or min_rtt.
#[test]
fn the_short_term_cut_keeps_the_round_s_largest_delivery() {
    for algo in BOTH {
        // (a) the largest sample after the round's first ACK
        let mut d = in_cruise(algo);
        let cwnd0 = d.c.cwnd() as u64;
        assert!(cwnd0 * 7 / 10 < 38, "{algo}: cwnd {cwnd0}");
        d.ack(1, true, 0);
        d.rtt_us = 38_000;
        d.ack(1, false, 1);
        d.acks(8);
        d.rtt_us = 20_000;
        d.ack(1, true, 0);
        assert_eq!(d.v().inflight_shortterm, 38, "{algo}: the round's largest delivery");
        // (b) a round without loss delivering 38, then a lossy one delivering 20: the earlier
        // round's samples do not count
        let mut d = in_cruise(algo);
        let cwnd0 = d.c.cwnd() as u64;
        d.rtt_us = 38_000;
        d.round();
        d.rtt_us = 20_000;
        lossy_round_judged(&mut d);
        assert_eq!(d.v().inflight_shortterm as u64, cwnd0 * 7 / 10, "{algo}: an earlier round's delivery counted");
    }
}

/// The same cut on a window of about 2000 segments, where 0.699 or 0.701 in place of
/// Beta = 0.7 would change both bounds by whole segments and tens of segments/s.
#[test]
fn the_short_term_cut_is_beta_exactly_on_a_large_window() {
    for algo in BOTH {
        let mut d = in_cruise_at(algo, 50_000.0);
        // ACKs 20 µs apart grow cwnd towards twice the BDP (1000) within CRUISE
        d.per_round = 1000;
        d.acks(2500);
        assert_eq!(d.v().state, State::Cruise, "{algo}");
        let v0 = d.v();
        let cwnd0 = d.c.cwnd() as u64;
        assert!(cwnd0 >= 1000, "{algo}: cwnd {cwnd0}");
        d.bw_pps = 25_000.0;
        lossy_round_judged(&mut d);
        let v = d.v();
        assert_eq!(v.inflight_shortterm as u64, cwnd0 * 700 / 1000, "{algo}: inflight_shortterm of cwnd {cwnd0}");
        let want = 0.7 * pps(v0.max_bw);
        assert!((pps(v.bw_shortterm) - want).abs() < 5.0, "{algo}: bw_shortterm {:.1}, want {want:.1}", pps(v.bw_shortterm));
    }
}

/// The same losses while probing (UP) leave the short-term model alone (IsProbingBW).
#[test]
fn losses_while_probing_leave_the_short_term_model() {
    for algo in BOTH {
        let mut d = in_cruise(algo);
        d.acks_until(State::Refill, true, 2000);
        d.ack(1, false, 1);
        d.acks(8);
        d.ack(1, true, 0);
        assert_eq!(d.v().inflight_shortterm, INF, "{algo}");
        assert_eq!(d.v().bw_shortterm, INF64, "{algo}");
    }
}

/// §5.6.4.6 SetCwnd: once the pipe was full, cwnd = min(cwnd + acked, max_inflight),
/// max_inflight = cwnd_gain × BDP + extra_acked (§5.6.4.2): growth by at most the data
/// acknowledged, a cut to the model at once.
#[test]
fn cwnd_grows_by_the_acked_data_up_to_gain_times_bdp_plus_extra_acked() {
    for algo in BOTH {
        let mut d = in_cruise(algo);
        d.c.set_cwnd(10);
        d.inflight = Some(10);
        d.ack(3, false, 0);
        assert_eq!(d.c.cwnd(), 13, "{algo}: cwnd + acked");
        for _ in 0..40 {
            d.ack(3, false, 0);
        }
        let v = d.v();
        let cap = max_inflight(&v, d.c.get(Field::PacingRate), 10);
        assert_eq!(d.c.cwnd() as u64, cap, "{algo}: cwnd settles at max_inflight");
        assert_eq!(cap, (2 * bdp_multiple(&v, v.bw, 1000, 10) + v.extra_acked).max(6), "{algo}");
        d.c.set_cwnd(500);
        d.ack(1, false, 0);
        assert_eq!(d.c.cwnd() as u64, max_inflight(&d.v(), d.c.get(Field::PacingRate), 10), "{algo}: cut at once");
    }
}

/// §5.5.9 UpdateACKAggregation: data acknowledged beyond bw × the epoch's time is
/// extra_acked (at most cwnd), kept as a windowed max over 10 rounds after Startup, and
/// added to the cwnd cap.
#[test]
fn an_aggregated_ack_raises_extra_acked_for_ten_rounds() {
    // the burst in an even and in an odd round: the filter keeps one slot per round
    for (algo, parity) in [("bbr3", 0), ("bbr3", 1), ("bbr2", 0), ("bbr2", 1)] {
        let mut d = in_cruise(algo);
        d.rounds(2);
        if d.v().round_count % 2 != parity {
            d.round();
        }
        let before = d.v().extra_acked;
        assert!(before <= 1, "{algo}: extra_acked {before} on an even ACK stream");
        // ACKs of one segment every 2 ms, slower than bw (1 per ms): each restarts the
        // epoch; then one ACK carries 16 segments, all of them beyond what bw explains
        d.ack(16, false, 0);
        let v = d.v();
        assert_eq!(v.extra_acked, 16, "{algo}: 16 segments at once");
        // a pause long enough for bw to explain the burst: the next ACK starts a new
        // epoch, and later rounds' samples are a segment or less; the burst's round stays
        // in the window for 10 rounds, then is forgotten
        advance_us(100_000);
        let r = v.round_count;
        while d.v().round_count < r + 9 {
            d.round();
            assert_eq!(d.v().extra_acked, 16, "{algo}: forgotten {} rounds on", d.v().round_count - r);
        }
        d.round();
        assert_eq!(d.v().round_count, r + 10, "{algo}");
        assert!(d.v().extra_acked <= 1, "{algo}: extra_acked {} 10 rounds on", d.v().extra_acked);
    }
}

/// §5.6.4.4: entering fast recovery saves cwnd, leaving it restores the larger of that
/// and the current cwnd (then bounded by the model).
#[test]
fn recovery_saves_cwnd_and_its_end_restores_it() {
    for algo in BOTH {
        let d = in_cruise(algo);
        let w = d.c.cwnd();
        d.c.set_ca_state(RECOVERY);
        assert_eq!(d.v().prior_cwnd, w as u64, "{algo}");
        assert!(d.v().in_recovery);
        d.c.set_cwnd(5);
        d.c.set_ca_state(OPEN);
        assert_eq!(d.c.cwnd(), w, "{algo}: cwnd after recovery");
        // an RTO saves it too (tcp_enter_loss then sets cwnd = in-flight + 1)
        d.c.enter_loss();
        assert_eq!(d.v().prior_cwnd, w as u64, "{algo}");
        d.c.exit_reduction();
        assert_eq!(d.c.cwnd(), w, "{algo}: cwnd after the RTO's recovery");
    }
}

/// §5.5.11 (v3): a loss recovery found spurious restores cwnd and the model and resumes
/// the probe it ended (REFILL); [v2] restores cwnd only.
#[test]
fn a_spurious_recovery_is_undone() {
    for algo in BOTH {
        let mut d = in_cruise(algo);
        d.per_round = 100;
        d.bw_pps = 5000.0;
        d.acks_until(State::Refill, true, 5000);
        d.acks_until(State::Up, true, 5);
        d.ack(1, true, 0);
        for _ in 0..89 {
            d.ack(1, false, 0);
        }
        let w = d.c.cwnd();
        d.c.set_ca_state(RECOVERY);
        d.ack(1, false, 5);
        assert_eq!(d.v().state, State::Down, "{algo}");
        assert_ne!(d.v().inflight_longterm, INF, "{algo}");
        d.c.set_cwnd(4);
        let back = d.c.op_undo_cwnd();
        assert_eq!(back, w, "{algo}: undo_cwnd gives back the window before the recovery");
        let v = d.v();
        if algo == "bbr3" {
            assert_eq!(v.state, State::Refill, "bbr3: the probe resumes");
            assert_eq!(v.inflight_longterm, INF, "bbr3: inflight_longterm as before the losses");
            assert_eq!(v.undo_state, State::None);
        } else {
            assert_eq!(v.state, State::Down, "bbr2: only cwnd is undone");
            assert_ne!(v.inflight_longterm, INF, "bbr2");
        }
    }
}

/// §5.4 HandleRestartFromIdle: sending after an idle, application-limited period paces
/// at exactly BBR.bw (gain 1) in ProbeBW, and the idleness counts as ProbeRTT's
/// draining: an expired min_rtt is refreshed without entering ProbeRTT.
#[test]
fn a_restart_from_idle_paces_at_bw_and_skips_probe_rtt() {
    for algo in BOTH {
        for idle in [false, true] {
            let mut d = in_cruise(algo);
            d.acks_until(State::Down, true, 5000);
            advance_us(6_000_000);
            if idle {
                d.c.set(Field::AppLimited, 1);
                d.c.cwnd_event(CA_EVENT_TX_START);
                let v = d.v();
                assert!(v.idle_restart, "{algo}");
                let want = pacing_of(&v, 1000);
                let got = d.c.get(Field::PacingRate) as f64;
                assert!((got - want).abs() <= want * 1e-3, "{algo}: pacing {got} after idle, want bw × 0.99 = {want}");
            }
            d.ack(1, false, 0);
            d.ack(1, false, 0);
            let st = d.v().state;
            assert_eq!(st == State::ProbeRtt, !idle, "{algo}, idle {idle}: {st:?}");
        }
    }
}

/// §5.3.4.3 CheckProbeRTT/HandleProbeRTT: without a lower RTT sample for 5 s, ProbeRTT:
/// cwnd max(BDP/2, 4) (gains 1.0 and 0.5), held 200 ms after in-flight fell to it and a
/// round; then CRUISE with cwnd restored (§5.3.4.4).
#[test]
fn probe_rtt_holds_half_the_bdp_for_200_ms_and_a_round() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 2000.0, 20_000);
        d.to_probe_bw();
        let v0 = d.v();
        let stamp = v0.probe_rtt_min_stamp;
        while now_us() + d.rtt_us / d.per_round as u64 <= stamp + 5_000_000 {
            d.ack(1, false, 0);
            assert_ne!(d.v().state, State::ProbeRtt, "{algo}: ProbeRTT {} µs early", stamp + 5_000_000 - now_us());
        }
        d.ack(1, false, 0);
        let v = d.v();
        assert_eq!(v.state, State::ProbeRtt, "{algo}: no ProbeRTT 5 s after the last min RTT");
        assert_eq!((v.pacing_gain, v.cwnd_gain), (1000, 500));
        let w = d.c.cwnd() as u64;
        let half = bdp_multiple(&v, v.bw, 500, 10).max(4);
        assert_eq!(w, half, "{algo}: ProbeRTT's cwnd");
        // in-flight falls to the cut: the 200 ms start
        d.inflight = Some(half as u32);
        d.ack(1, false, 0);
        let t0 = now_us();
        while now_us() < t0 + 200_000 {
            d.ack(1, true, 0);
            assert_eq!(d.v().state, State::ProbeRtt, "{algo}: ProbeRTT left after {} µs", now_us() - t0);
        }
        d.inflight = None;
        d.ack(1, true, 0);
        let v = d.v();
        assert_eq!(v.state, State::Cruise, "{algo}: {:?} after ProbeRTT", v.state);
        assert!(d.c.cwnd() as u64 > half, "{algo}: cwnd restored");
        assert!(v.probe_rtt_min_stamp >= t0 + 200_000, "{algo}: the next ProbeRTT is 5 s from now");
    }
}

/// [v3] §5.3.4.3: the RTT timers fire strictly after their intervals, to the
/// microsecond: ProbeRTT 1 µs after 5 s without a lower RTT sample (not at 5 s), and
/// ProbeRTT left 1 µs after its 200 ms once its round is done.
#[test]
fn probe_rtt_starts_and_ends_one_microsecond_after_its_intervals() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 2000.0, 20_000);
        d.to_probe_bw();
        let stamp = d.v().probe_rtt_min_stamp;
        d.acks_up_to(stamp + 5_000_000, false);
        assert_ne!(d.v().state, State::ProbeRtt, "{algo}: ProbeRTT at exactly 5 s");
        d.ack_in(1, 1, false, 0);
        assert_eq!(d.v().state, State::ProbeRtt, "{algo}: no ProbeRTT 1 µs after 5 s");
        let v = d.v();
        d.inflight = Some(bdp_multiple(&v, v.bw, 500, 10).max(4) as u32);
        d.ack(1, false, 0);
        let t0 = now_us();
        d.acks_up_to(t0 + 200_000, true);
        assert_eq!(d.v().state, State::ProbeRtt, "{algo}: ProbeRTT left at exactly 200 ms");
        d.ack_in(1, 1, true, 0);
        assert_ne!(d.v().state, State::ProbeRtt, "{algo}: still in ProbeRTT 1 µs after 200 ms");
    }
}

/// [v3] §5.3.4.3 UpdateMinRTT: a higher RTT replaces min_rtt 1 µs after its 10 s window,
/// not at 10 s.
#[test]
fn min_rtt_rises_one_microsecond_after_ten_seconds() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 1000.0, 30_000);
        d.rtt_us = 20_000;
        d.ack(1, true, 0);
        let t0 = d.v().min_rtt_stamp;
        d.rtt_us = 25_000;
        d.acks_up_to(t0 + 10_000_000, true);
        assert_eq!(d.v().min_rtt, 20_000, "{algo}: min_rtt rose at exactly 10 s");
        d.ack_in(1, 1, true, 0);
        assert_eq!(d.v().min_rtt, 25_000, "{algo}: min_rtt 1 µs after 10 s");
    }
}

/// [v3] §5.6.3 send quantum: at least 2 segments; the min_tso_segs op gives the floor.
#[test]
fn bbr3_send_quantum_floor_is_two_segments() {
    let c = fresh("bbr3", 20_000);
    for rate in [10_000u64, 149_999, 150_001, 10_000_000] {
        c.set(Field::PacingRate, rate);
        assert_eq!(c.min_tso_segs(), 2, "at {rate} B/s");
    }
}

/// ssthresh plays no part in BBR: the op returns it unchanged; a corrupted value (the
/// kernel fault cca_common.h's guard repairs) is replaced before use by what BBR holds
/// (infinite in Startup) and counted.
#[test]
fn ssthresh_is_kept_and_a_corrupted_one_repaired() {
    for algo in BOTH {
        let c = fresh(algo, 20_000);
        c.set_ssthresh(77);
        assert_eq!(c.op_ssthresh(), 77, "{algo}");
        c.set_ssthresh(0x8110_4110);
        c.set(Field::Delivered, 1);
        c.cong_control_rs(FLAG_DATA_ACKED, &RateSample::no_sample(1, 0, 20_000));
        assert_eq!(c.ssthresh(), INFINITE_SSTHRESH, "{algo}");
        assert_eq!(c.guard_counts()[1], 1, "{algo}: counted at entry");
        c.set_ssthresh(0x8110_4110);
        c.set_ca_state(RECOVERY);
        assert_eq!(c.ssthresh(), INFINITE_SSTHRESH, "{algo}: repaired at the state change");
    }
}

/// One round of ACKs that starts a round, then `marked` ACKs whose segments carry CE
/// (C.delivered_ce grows, the samples report it in RS.delivered_ce), then unmarked
/// ones. The model judges the round at the next round's first ACK.
fn marked_round(d: &mut Drv, marked: u32) {
    for k in 0..d.per_round {
        let mark = k >= 1 && k <= marked;
        if mark {
            d.c.set(Field::DeliveredCe, d.c.get(Field::DeliveredCe) + 1);
        }
        d.ce = if mark { 2 } else { 0 };
        d.ack(1, k == 0, 0);
    }
    d.ce = 0;
}

/// ECN (bbr_signals.h, after Google's BBRv2/v3 design; [v3] §3.8 asks only that CE count
/// as congestion): alpha is an EWMA of the marked fraction per round, gain 1/16, from 1;
/// a round with marks outside probing cuts inflight_shortterm to cwnd × (1 − alpha/3).
/// Only on a connection that negotiated ECN; bbr2 has no ECN response.
#[test]
fn ecn_alpha_follows_the_marked_fraction_and_cuts_inflight_shortterm() {
    for algo in BOTH {
        let mut d = in_cruise(algo);
        assert_eq!(d.v().ecn_alpha, 1024, "{algo}: alpha does not move without ECN");
        d.c.set(Field::EcnFlags, 1);
        marked_round(&mut d, 0);
        let a1 = d.v().ecn_alpha;
        marked_round(&mut d, 5);
        let a2 = d.v().ecn_alpha;
        let cwnd = d.c.cwnd() as u64;
        d.ack(1, true, 0);
        let v = d.v();
        if algo == "bbr2" {
            assert_eq!((a1, a2, v.ecn_alpha), (1024, 1024, 1024), "bbr2 computes no alpha");
            assert_eq!(v.inflight_shortterm, INF, "bbr2 reacted to CE marks");
            continue;
        }
        assert_eq!(a2, a1 - a1 / 16, "bbr3: a round without marks");
        // half the round marked: alpha − alpha/16 + (1024/2)/16
        let a3 = a2 - a2 / 16 + 512 / 16;
        assert_eq!(v.ecn_alpha, a3, "bbr3: alpha after a half-marked round");
        let cut = cwnd - cwnd * a3 * 333 / (1024 * 1000);
        assert_eq!(v.inflight_shortterm, cut, "bbr3: inflight_shortterm after marks (alpha {a3}, cwnd {cwnd})");
    }
}

/// ECN in Startup (v3): two rounds in a row with more than half the data marked end it,
/// as excess loss does (inflight_longterm from the round); one such round does not.
#[test]
fn bbr3_startup_ends_after_two_rounds_mostly_marked() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 1000.0, 20_000);
        d.c.set(Field::EcnFlags, 1);
        let grow = |d: &mut Drv, marked| {
            d.bw_pps *= 1.3;
            marked_round(d, marked);
        };
        grow(&mut d, 0);
        grow(&mut d, 6);
        grow(&mut d, 0);
        grow(&mut d, 6);
        // a round is judged at the next round's start
        d.ack(1, true, 0);
        assert_eq!(d.v().state, State::Startup, "{algo}: a marked round between clean ones ended Startup");
        // (that ACK began a round without marks) then two marked rounds, judged by the
        // next two round starts
        grow(&mut d, 6);
        grow(&mut d, 6);
        grow(&mut d, 0);
        let v = d.v();
        if algo == "bbr2" {
            assert_eq!(v.state, State::Startup, "bbr2 left Startup on CE marks");
        } else {
            assert!(v.full_bw_reached && v.state != State::Startup, "bbr3: {:?} after two marked rounds", v.state);
            assert_ne!(v.inflight_longterm, INF, "bbr3");
        }
    }
}

/// ECN while probing (v3): a sample with more than half its data marked ends UP as excess
/// loss would.
#[test]
fn bbr3_a_mostly_marked_sample_ends_the_probe() {
    for algo in BOTH {
        let mut d = in_cruise(algo);
        d.c.set(Field::EcnFlags, 1);
        d.acks_until(State::Refill, true, 2000);
        d.acks_until(State::Up, true, 5);
        d.ack(1, true, 0);
        d.ce = 10; // of RS.delivered = 20
        d.ack(1, false, 0);
        assert_eq!(d.v().state, State::Up, "{algo}: half marked ended the probe");
        d.ce = 11;
        d.ack(1, false, 0);
        let v = d.v();
        if algo == "bbr2" {
            assert_eq!(v.state, State::Up, "bbr2 reacted to CE marks");
        } else {
            assert_eq!(v.state, State::Down, "bbr3: UP with 55 % marked");
            assert!(v.prev_probe_too_high && v.inflight_longterm != INF);
        }
    }
}

/// [v3] §5.3.3.9 InflightWithHeadroom, §5.6.4.7 BoundCwndForModel: in CRUISE the cwnd is
/// held 15 % below inflight_longterm (at least one segment, never below 4), so that
/// other flows find room. inflight_longterm ≈ 1150 here, where 0.149, 0.15 and 0.151 of
/// it are three different whole numbers.
#[test]
fn cruise_leaves_fifteen_percent_of_inflight_longterm_free() {
    for algo in BOTH {
        let mut d = in_up(algo, 50_000.0, 1200);
        d.round_then_loss(1149, 40);
        let ilt = d.v().inflight_longterm as u64;
        assert!(ilt != INF as u64 && ilt >= 1000, "{algo}: inflight_longterm {ilt} after excess loss in UP");
        assert_eq!(d.v().state, State::Down, "{algo}");
        // in-flight falls below the headroom and the BDP: CRUISE
        d.inflight = Some(100);
        d.acks_until(State::Cruise, false, 200);
        d.inflight = None;
        d.ack(1, false, 0);
        let v = d.v();
        assert_eq!(v.state, State::Cruise, "{algo}");
        let want = ilt - (ilt * 150 / 1000).max(1);
        assert!(want < v.inflight_shortterm as u64, "{algo}: the short-term bound {} binds first", v.inflight_shortterm);
        assert!(want < max_inflight(&v, d.c.get(Field::PacingRate), 10), "{algo}: max_inflight binds first");
        assert_eq!(d.c.cwnd() as u64, want, "{algo}: cwnd in CRUISE, inflight_longterm {ilt}");
        assert_eq!(want, with_headroom(&v), "{algo}: the helper's headroom");
    }
}

/// [v3] §2.13 MinPipeCwnd: no bound of the model takes cwnd below 4 segments; ProbeRTT's
/// cwnd is max(BDP/2, 4) (§5.6.4.5), here on a path whose BDP is 2 segments.
#[test]
fn probe_rtt_on_a_tiny_bdp_keeps_four_segments() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 100.0, 20_000);
        d.to_probe_bw();
        let stamp = d.v().probe_rtt_min_stamp;
        while d.v().state != State::ProbeRtt {
            d.ack(1, false, 0);
            assert!(now_us() <= stamp + 5_000_000 + 2 * d.rtt_us, "{algo}: no ProbeRTT");
        }
        let v = d.v();
        assert_eq!(bdp_multiple(&v, v.bw, 500, 10), 1, "{algo}: half the BDP");
        assert_eq!(d.c.cwnd(), 4, "{algo}: ProbeRTT's cwnd on a 2-segment BDP");
        d.ack(1, false, 0);
        assert_eq!(d.c.cwnd(), 4, "{algo}");
    }
}

/// [v3] §5.6.3 send quantum: one millisecond of the pacing rate, at most 64 KB; the
/// quantization budget holds three quanta in flight (§5.6.4.2). At ~100 MB/s with a
/// 1024-byte MSS the cap gives 64 segments, so cwnd rests at 192 where twice the BDP is 40.
#[test]
fn the_send_quantum_is_capped_at_64_kb() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 100_000.0, 200);
        d.c.set(Field::Mss, 1024);
        d.to_probe_bw();
        d.inflight = Some(10);
        d.acks_until(State::Cruise, false, 500);
        d.inflight = None;
        d.acks(400);
        let v = d.v();
        assert_eq!(v.state, State::Cruise, "{algo}");
        let pacing = d.c.get(Field::PacingRate);
        assert!(pacing / 1000 > 65_536, "{algo}: pacing {pacing} B/s is under the cap");
        let cap = bdp_multiple(&v, v.bw, v.cwnd_gain, 10) + v.extra_acked as u64;
        assert!(cap < 192, "{algo}: gain × BDP + extra_acked {cap}");
        assert_eq!(d.c.cwnd(), 3 * 64, "{algo}: three quanta of 64 KB / 1024 B");
    }
}

/// ECN while probing (v3): a sample is mostly marked when strictly more than half of
/// what it delivered carries CE: 500 of 1000 is not, 501 is, and so is a one-segment
/// sample that was marked.
#[test]
fn bbr3_a_sample_is_mostly_marked_above_half() {
    for (delivered, ce, ends) in [(1000u32, 500, false), (1000, 501, true), (1, 1, true)] {
        let mut d = in_cruise("bbr3");
        d.c.set(Field::EcnFlags, 1);
        d.acks_until(State::Refill, true, 2000);
        d.acks_until(State::Up, true, 5);
        d.ack(1, true, 0);
        d.bw_pps = delivered as f64 * 1e6 / d.rtt_us as f64;
        d.ce = ce as i32;
        d.ack(1, false, 0);
        let st = d.v().state;
        assert_eq!(st == State::Down, ends, "bbr3: {ce} of {delivered} marked: {st:?}");
    }
}

/// The ECN cut, inflight_shortterm × (1 − alpha/3), on a window of about 2000 segments,
/// where 332/1000 or 334/1000 in place of 1/3 would move it by whole segments.
#[test]
fn bbr3_the_ecn_cut_is_a_third_of_alpha_on_a_large_window() {
    let mut d = in_cruise_at("bbr3", 50_000.0);
    d.per_round = 1000;
    d.acks(2500);
    d.c.set(Field::EcnFlags, 1);
    d.per_round = 10;
    assert_eq!(d.v().state, State::Cruise);
    marked_round(&mut d, 0);
    marked_round(&mut d, 5);
    let cwnd = d.c.cwnd() as u64;
    assert!(cwnd >= 1000, "bbr3: cwnd {cwnd}");
    d.ack(1, true, 0);
    let v = d.v();
    let a = v.ecn_alpha as u64;
    assert_eq!(v.inflight_shortterm as u64, cwnd - cwnd * a * 333 / (1024 * 1000), "bbr3: alpha {a}, cwnd {cwnd}");
}

/// After Startup, marked rounds move only the short-term model (v3): inflight_longterm
/// stays unset however many rounds are mostly marked, and a round without marks after
/// a marked one cuts nothing more.
#[test]
fn bbr3_marks_after_startup_cut_only_the_short_term_model_and_only_once() {
    let mut d = in_cruise("bbr3");
    d.c.set(Field::EcnFlags, 1);
    marked_round(&mut d, 8);
    marked_round(&mut d, 8);
    marked_round(&mut d, 8);
    d.ack(1, true, 0);
    let v = d.v();
    assert_eq!(v.inflight_longterm, INF, "bbr3: marked rounds in CRUISE set inflight_longterm");
    let cut = v.inflight_shortterm;
    assert_ne!(cut, INF);
    marked_round(&mut d, 0);
    d.ack(1, true, 0);
    assert_eq!(d.v().inflight_shortterm, cut, "bbr3: a round without marks cut inflight_shortterm");
}

/// ECN in Startup (v3): a round counts towards the exit only with strictly more than half
/// of its data marked; two rounds at exactly half, or at 30 %, do not end Startup.
#[test]
fn bbr3_startup_counts_only_rounds_more_than_half_marked() {
    for marked in [5u32, 3] {
        let mut d = Drv::new("bbr3", 1000.0, 20_000);
        d.c.set(Field::EcnFlags, 1);
        for _ in 0..4 {
            d.bw_pps *= 1.3;
            marked_round(&mut d, marked);
        }
        assert_eq!(d.v().state, State::Startup, "bbr3: rounds {marked} of 10 marked ended Startup");
    }
}

/// [v3] §5.5.11.1 SaveStateUponLoss, §5.5.11.2: entering recovery saves the short-term
/// model; a spurious recovery brings it back after further cuts.
#[test]
fn bbr3_an_undo_restores_the_short_term_model_saved_at_the_loss() {
    let mut d = in_cruise("bbr3");
    // a lossy round sets the short-term model
    d.bw_pps = 500.0;
    lossy_round_judged(&mut d);
    let saved = d.v();
    assert!(saved.inflight_shortterm != INF && saved.bw_shortterm != INF64);
    // recovery, and another lossy round cuts both again
    d.c.set_ca_state(RECOVERY);
    d.ack(1, false, 1);
    d.acks(8);
    d.ack(1, true, 0);
    let cut = d.v();
    assert!(cut.inflight_shortterm < saved.inflight_shortterm && cut.bw_shortterm < saved.bw_shortterm,
            "bbr3: the second lossy round cut nothing");
    d.c.op_undo_cwnd();
    let v = d.v();
    assert_eq!(v.inflight_shortterm, saved.inflight_shortterm, "bbr3: inflight_shortterm after the undo");
    assert_eq!(v.bw_shortterm, saved.bw_shortterm, "bbr3: bw_shortterm after the undo");
    assert_eq!(v.state, State::Cruise, "bbr3: an undo outside a probe changes no state");
}

/// [v3] §5.5.10.2 IsInflightTooHigh: a probe's losses are excessive strictly above 2 % of
/// the data in flight when the lost packet was sent (2 of 100 are not, 3 of 100 are), and
/// any loss is without SACK (its losses are seen one per round). RS.tx_in_flight is 100
/// in each case.
#[test]
fn up_s_loss_is_excessive_strictly_above_two_percent_or_any_without_sack() {
    for algo in BOTH {
        for (acks, lost, sack, excess) in [(96, 2, true, false), (95, 3, true, true), (96, 1, false, true), (96, 0, false, false)] {
            let mut d = in_up(algo, 5000.0, 100);
            d.c.set(Field::SackOk, sack as u64);
            d.round_then_loss(acks, lost);
            let v = d.v();
            assert_eq!(v.inflight_longterm != INF, excess,
                       "{algo}: {lost} lost of 100, SACK {sack}: inflight_longterm {}", v.inflight_longterm);
            if algo == "bbr3" {
                // ([v2] also ends UP on its estimated queue after min_rtt)
                assert_eq!(v.state == State::Down, excess, "{algo}: {:?}", v.state);
            }
        }
    }
}

/// [v3] §5.3.3.9 ProbeInflightLongtermUpward: inflight_longterm grows in UP only while the
/// flow is cwnd-limited with cwnd at it; with in-flight data below cwnd it stays.
#[test]
fn inflight_longterm_grows_only_while_cwnd_limited_at_it() {
    let (mut d, cut) = in_accelerated_up();
    d.per_round = cut as u32;
    d.round();
    let l = d.v().inflight_longterm;
    assert!(l > cut, "growing while cwnd-limited: {l} after {cut}");
    assert!(d.c.cwnd() as u64 >= l, "cwnd {} at inflight_longterm {l}", d.c.cwnd());
    d.inflight = Some(10);
    d.round();
    assert_eq!(d.v().state, State::Up);
    assert_eq!(d.v().inflight_longterm, l, "grown with 10 segments in flight, cwnd {}", d.c.cwnd());
}

/// [v3] §5.3.3.9 the ACK phases of a probe cycle: CRUISE's ACKs are ACKS_INIT; REFILL
/// starts a round (ACKs of data sent before it do not end it) and is ACKS_REFILLING; UP,
/// from REFILL's round end, is ACKS_PROBE_STARTING, and its first round end brings the
/// probe's feedback (ACKS_PROBE_FEEDBACK).
#[test]
fn the_ack_phase_follows_the_probe_cycle() {
    use ccarena_cc_harness::bbr::{ACKS_INIT, ACKS_PROBE_FEEDBACK, ACKS_PROBE_STARTING, ACKS_REFILLING};
    for algo in BOTH {
        let mut d = in_cruise_at(algo, 2000.0);
        assert_eq!(d.v().ack_phase, ACKS_INIT, "{algo}");
        d.acks_until(State::Refill, false, 5000);
        assert_eq!(d.v().ack_phase, ACKS_REFILLING, "{algo}");
        let at = d.c.get(Field::Delivered) as u32;
        d.ack_with(d.rtt_us / d.per_round as u64, 1, false, 0, |rs| rs.prior_delivered = at - 1);
        assert_eq!(d.v().state, State::Refill, "{algo}: data sent before REFILL ended its round");
        d.ack(1, true, 0);
        assert_eq!((d.v().state, d.v().ack_phase), (State::Up, ACKS_PROBE_STARTING), "{algo}");
        d.ack(1, true, 0);
        assert_eq!(d.v().ack_phase, ACKS_PROBE_FEEDBACK, "{algo}");
    }
}

/// [v3] §5.3.3.9: DOWN starts a round of its own, so a DOWN begun mid-round by a probe's
/// excess loss ends its round (advancing the max-bw filter) only with data sent after it
/// began.
#[test]
fn down_begun_mid_round_waits_a_round_of_its_own() {
    use ccarena_cc_harness::bbr::ACKS_PROBE_STOPPING;
    for algo in BOTH {
        let mut d = in_up(algo, 5000.0, 100);
        d.round_then_loss(89, 5);
        let v = d.v();
        assert_eq!((v.state, v.ack_phase), (State::Down, ACKS_PROBE_STOPPING), "{algo}");
        let at = d.c.get(Field::Delivered) as u32;
        d.ack_with(50, 1, false, 0, |rs| rs.prior_delivered = at - 1);
        let w = d.v();
        assert_eq!((w.ack_phase, w.cycle_count), (ACKS_PROBE_STOPPING, v.cycle_count),
                   "{algo}: data sent before DOWN ended its round");
        d.ack(1, true, 0);
        assert_eq!(d.v().cycle_count, (v.cycle_count + 1) & 0xff, "{algo}: DOWN's round end");
    }
}

/// [v3] §5.3.3.9: a REFILL begun from DOWN (the probe wait passed while in-flight data
/// stayed above what CRUISE allows) paces at 1.0, not at DOWN's gain.
#[test]
fn refill_from_down_paces_at_one() {
    for algo in BOTH {
        let mut d = in_up(algo, 2000.0, 10);
        d.rounds_until(State::Down, 50);
        d.inflight = Some(10_000);
        d.acks_until(State::Refill, false, 5000);
        let v = d.v();
        assert_eq!((v.pacing_gain, v.cwnd_gain), (1000, 2000), "{algo}");
    }
}

/// [v3] §5.3.3.9 IsTimeToCruise: DOWN ends once in-flight data is at most
/// InflightWithHeadroom() (here below the BDP: inflight_longterm was cut by a probe's
/// loss): one segment above it DOWN goes on, at it DOWN ends.
#[test]
fn down_ends_at_inflight_with_headroom() {
    for algo in BOTH {
        let mut d = in_up(algo, 5000.0, 100);
        d.round_then_loss(89, 5);
        let v = d.v();
        assert_eq!(v.state, State::Down, "{algo}");
        let h = with_headroom(&v);
        assert!(h < bdp_multiple(&v, v.max_bw, 1000, 10), "{algo}: headroom {h} not below the BDP");
        d.inflight = Some(h as u32 + 1);
        d.ack(1, false, 0);
        assert_eq!(d.v().state, State::Down, "{algo}: {} in flight", h + 1);
        d.inflight = Some(h as u32);
        d.ack(1, false, 0);
        assert_eq!(d.v().state, State::Cruise, "{algo}: {h} in flight");
    }
}

/// [v3] §5.5.10.2 InflightAtLoss, HandleInflightTooHigh: a probe's excess loss cuts
/// inflight_longterm to the volume in flight at which the loss rate crossed 2 % within
/// the lost segment, inflight_prev + (0.02 × inflight_prev − lost_prev) / 0.98 (rounded
/// down; inflight_prev = RS.tx_in_flight − 1, lost_prev = RS.lost − 1), and not below
/// Beta × the target (min(BDP, cwnd)). The rounds end with 5 of 96, 3 of 101, 30 of 92,
/// 12 of 113 and 3 of 120 lost on a BDP of 100, 4 of 51 on a BDP of 40, and (without
/// SACK, where any loss is an excess) 1 of 100.
#[test]
fn a_probe_s_excess_loss_cuts_inflight_longterm_to_the_inflight_at_loss() {
    fn at_loss(tx: u64, lost: u64) -> u64 {
        let (ip, lp) = (tx - 1, lost - 1);
        let (up, down) = (ip * 20, lp * 1000);
        if up >= down { ip + (up - down) / 980 } else { ip.saturating_sub((down - up) / 980) }
    }
    for (bw, acks, lost, sack) in [(5000.0, 89u32, 5u32, true), (5000.0, 96, 3, true), (5000.0, 60, 30, true),
                                   (5000.0, 99, 12, true), (5000.0, 115, 3, true), (2000.0, 45, 4, true),
                                   (5000.0, 97, 1, false)] {
        let mut d = in_up("bbr3", bw, 100);
        d.c.set(Field::SackOk, sack as u64);
        d.ack(1, true, 0);
        d.acks(acks);
        let v = d.v();
        let target = bdp_multiple(&v, v.bw, 1000, 10).min(d.c.cwnd() as u64);
        d.ack(1, false, lost);
        let tx = (acks + 2 + lost) as u64;
        let want = at_loss(tx, lost as u64).max(target * 700 / 1000);
        assert_eq!(d.v().inflight_longterm, want, "{lost} of {tx} lost, target {target}, SACK {sack}");
    }
}

/// [v3] §5.3.3.9: a probe's feedback ends with the round that ends in DOWN (the ACK
/// phase PROBE_STOPPING): excess loss after it belongs to no probe and leaves
/// inflight_longterm unset; within that round it still cuts it.
#[test]
fn a_probe_s_feedback_ends_with_down_s_first_round() {
    for algo in BOTH {
        for after in [false, true] {
            let mut d = in_up(algo, 2000.0, 10);
            d.rounds_until(State::Down, 50);
            d.per_round = 100;
            if after {
                d.ack(1, true, 0);
                assert!(!d.v().is_bw_probe_sample, "{algo}");
            }
            d.acks(80);
            d.ack(1, false, 10);
            let cut = d.v().inflight_longterm != INF;
            assert_eq!(cut, !after, "{algo}: excess loss {} DOWN's first round: cut {cut}",
                       if after { "after" } else { "within" });
        }
    }
}

/// [v3] §5.3.4.4 ExitProbeRTT: leaving ProbeRTT resets the short-term model (a lossy
/// round in ProbeRTT had cut bw_shortterm and inflight_shortterm).
#[test]
fn leaving_probe_rtt_resets_the_short_term_model() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 2000.0, 20_000);
        d.to_probe_bw();
        d.acks_until(State::ProbeRtt, false, 5000);
        let v = d.v();
        d.inflight = Some(bdp_multiple(&v, v.bw, 500, 10).max(4) as u32);
        lossy_round_judged(&mut d);
        let v = d.v();
        assert_eq!(v.state, State::ProbeRtt, "{algo}");
        assert!(v.bw_shortterm != INF64 && v.inflight_shortterm != INF, "{algo}: a lossy round");
        d.acks_until(State::Cruise, true, 500);
        let v = d.v();
        assert_eq!((v.bw_shortterm, v.inflight_shortterm), (INF64, INF), "{algo}");
    }
}

/// [v3] §5.3.4.3-4: ProbeRTT can come before the pipe is full (a Startup of
/// application-limited samples, which judge no plateau, lasting 5 s); leaving it
/// returns to Startup with Startup's gains.
#[test]
fn probe_rtt_from_startup_returns_to_startup() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 2000.0, 20_000);
        d.app_limited = true;
        d.acks_until(State::ProbeRtt, true, 5000);
        assert!(!d.v().full_bw_reached, "{algo}");
        let v = d.v();
        d.inflight = Some(bdp_multiple(&v, v.bw, 500, 10).max(4) as u32);
        d.acks_until(State::Startup, true, 500);
        let v = d.v();
        assert_eq!((v.pacing_gain, v.cwnd_gain), gains(algo, State::Startup), "{algo}");
    }
}

/// [v3] §5.3.4.3 HandleProbeRTT: ProbeRTT lasts 200 ms and a round counted from when
/// in-flight data fell to its cwnd: on a 300 ms path it waits for that round (an ACK of
/// data sent before the 200 ms began does not end it), at the second ProbeRTT as at the
/// first.
#[test]
fn probe_rtt_waits_a_round_from_its_start_each_time() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 200.0, 300_000);
        d.to_probe_bw();
        for nth in 1..=2 {
            d.acks_until(State::ProbeRtt, false, 100_000);
            let v = d.v();
            d.inflight = Some(bdp_multiple(&v, v.bw, 500, 10).max(4) as u32);
            d.ack(1, false, 0);
            let t0 = now_us();
            let at = d.c.get(Field::Delivered) as u32;
            // past 200 ms, ACKs of data sent before the 200 ms began
            while now_us() < t0 + 250_000 {
                d.ack_with(d.rtt_us / d.per_round as u64, 1, false, 0, |rs| rs.prior_delivered = at - 1);
            }
            assert_eq!(d.v().state, State::ProbeRtt, "{algo}: ProbeRTT {nth} left before its round");
            d.ack(1, true, 0);
            d.ack(1, false, 0);
            assert_ne!(d.v().state, State::ProbeRtt, "{algo}: ProbeRTT {nth} after its round");
            d.inflight = None;
        }
    }
}

/// [v3] §5.3.3.7 IsTimeToGoDown: while UP is cwnd-limited at inflight_longterm its
/// plateau estimator restarts from each ACK's rate (no plateau can be judged); once the
/// window stops limiting, three rounds at that rate make the plateau, and UP ends.
/// (The probe is the one §5.3.3.6 starts at once after a precautionary probe.)
#[test]
fn up_judges_its_plateau_from_when_the_window_stopped_limiting() {
    let (mut d, cut) = in_accelerated_up();
    d.per_round = cut as u32;
    d.rounds(2);
    assert_eq!(d.v().state, State::Up);
    d.inflight = Some(10);
    let mut n = 0;
    while d.v().state == State::Up && n < 10 {
        d.round();
        n += 1;
    }
    assert_eq!(n, 3, "UP ended {n} rounds after the window stopped limiting ({:?})", d.v().state);
    // that probe (begun by acceleration after a precautionary one) was no precautionary
    // probe itself: the end of its feedback leads to no new REFILL
    d.round();
    assert_eq!(d.v().state, State::Cruise, "a second accelerated probe");
}

/// [v3] §5.5.10.2 NoteLoss: the first loss of a round starts the loss round that judges
/// it (loss_round_delivered = C.delivered there), a second loss does not move it: the ACK
/// of data sent right after the first loss ends that loss round and cuts the short-term
/// model.
#[test]
fn the_first_loss_starts_the_loss_round() {
    for algo in BOTH {
        let mut d = in_cruise(algo);
        d.ack(1, true, 0);
        d.acks(3);
        d.ack(1, false, 1);
        let first = d.c.get(Field::Delivered) as u32;
        d.acks(3);
        d.ack(1, false, 1);
        assert_eq!(d.v().bw_shortterm, INF64, "{algo}");
        d.ack_with(2_000, 1, false, 0, |rs| rs.prior_delivered = first);
        assert_ne!(d.v().bw_shortterm, INF64, "{algo}: the loss round begun at the first loss did not end");
    }
}

/// [v3] §5.5.11.1: the state an undo restores is saved again at the first loss of each
/// round (NoteLoss), not only at recovery's entry: after two lossy rounds in one
/// recovery, an undo brings back the short-term model of the second round's start (the
/// first cut), not the unbounded one recovery began with.
#[test]
fn bbr3_each_loss_round_saves_the_state_an_undo_restores() {
    let mut d = in_cruise("bbr3");
    d.c.set_ca_state(RECOVERY);
    lossy_round_judged(&mut d);
    let first = d.v();
    assert!(first.inflight_shortterm != INF, "bbr3: the first lossy round cut nothing");
    d.ack(1, false, 1);
    d.acks(8);
    d.ack(1, true, 0);
    assert!(d.v().inflight_shortterm < first.inflight_shortterm, "bbr3: the second lossy round cut nothing");
    d.c.op_undo_cwnd();
    let v = d.v();
    assert_eq!((v.inflight_shortterm, v.bw_shortterm), (first.inflight_shortterm, first.bw_shortterm), "bbr3");
}

/// [v3] §5.3.3.9 InflightWithHeadroom: the headroom is 15 % of inflight_longterm but at
/// least one segment, and the result at least 4: after a probe's cut to 6 segments (2
/// of 7 lost on a 6-segment BDP), DOWN ends at 5 in flight, not at 6.
#[test]
fn the_headroom_is_at_least_one_segment() {
    for algo in BOTH {
        let mut d = in_up(algo, 300.0, 3);
        d.round_then_loss(3, 2);
        let v = d.v();
        assert_eq!((v.state, v.inflight_longterm), (State::Down, 6), "{algo}");
        d.inflight = Some(6);
        d.ack(1, false, 0);
        assert_eq!(d.v().state, State::Down, "{algo}: 6 in flight");
        d.inflight = Some(5);
        d.ack(1, false, 0);
        assert_eq!(d.v().state, State::Cruise, "{algo}: 5 in flight");
    }
}

/// [v3] §5.3.3.9 ProbeInflightLongtermUpward: inflight_longterm grows by one segment each
/// time probe_up_acked_per_inc segments are acknowledged (cwnd-limited at it), at that
/// count exactly (RS.tx_in_flight, which also raises inflight_longterm, stays at it).
#[test]
fn inflight_longterm_grows_one_segment_per_probe_up_acked_per_inc() {
    let (mut d, _) = in_accelerated_up();
    let v = d.v();
    let (l, per) = (v.inflight_longterm, v.probe_up_acked_per_inc);
    assert!(per > 1 && per < 1000, "probe_up_acked_per_inc {per}");
    // each ACK's packet left inflight_longterm segments before it: RS.tx_in_flight equals
    // it, and the round ends with the ACK of the first packet sent in it
    let recent = |d: &mut Drv| {
        let at = d.c.get(Field::Delivered) as u32;
        d.ack_with(50, 1, false, 0, |rs| rs.prior_delivered = at + 1 - l as u32);
    };
    for _ in 1..per {
        recent(&mut d);
    }
    assert_eq!(d.v().inflight_longterm, l, "grown before {per} segments");
    recent(&mut d);
    assert_eq!(d.v().inflight_longterm, l + 1, "not grown at {per} segments");
}

/// [v3] §5.3.1.3 CheckStartupHighLoss judges Startup only: in a ProbeRTT entered from
/// Startup, a round in recovery with excess loss does not fill the pipe, and ProbeRTT
/// returns to Startup.
#[test]
fn loss_in_a_probe_rtt_from_startup_ends_no_startup() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 2000.0, 20_000);
        d.app_limited = true;
        d.acks_until(State::ProbeRtt, true, 5000);
        let v = d.v();
        d.inflight = Some(bdp_multiple(&v, v.bw, 500, 10).max(4) as u32);
        d.c.set_ca_state(RECOVERY);
        d.round();
        d.ack(1, true, 0);
        for _ in 0..9 {
            d.ack(1, false, 1);
        }
        d.ack(1, true, 0);
        assert_eq!(d.v().state, State::ProbeRtt, "{algo}");
        assert!(!d.v().full_bw_reached, "{algo}: a loss round in ProbeRTT filled the pipe");
        d.c.set_ca_state(OPEN);
        d.acks_until(State::Startup, true, 500);
    }
}
