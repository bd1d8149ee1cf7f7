//! BBRv2 (bpf/cc/bbr2.bpf.c) where it differs from BBRv3: draft-cardwell-iccrg-bbr-
//! congestion-control-02 ([v2]) with the constants of the v2 release (bbr2.bpf.c's
//! header). What the versions share is checked for both in tests/bbr3.rs,
//! tests/bbr_signals.rs and tests/bbr_sim.rs.
mod bbr_util;

use bbr_util::*;
use ccarena_cc_harness::bbr::{State, INF};
use ccarena_cc_harness::*;

/// The v2 release's gains: Startup 2.885 for pacing and cwnd, Drain 1/2.885,
/// ProbeBW_DOWN 0.75, ProbeBW_UP cwnd gain 2 (v3: 2.77, 2, 0.5, 0.9, 2.25).
#[test]
fn bbr2_has_the_v2_gains() {
    let mut d = Drv::new("bbr2", 1000.0, 20_000);
    let v = d.v();
    assert_eq!((v.pacing_gain, v.cwnd_gain), (2885, 2885));
    d.inflight = Some(60);
    d.rounds_until(State::Drain, 10);
    assert_eq!((d.v().pacing_gain, d.v().cwnd_gain), (347, 2885));
    d.inflight = Some(20);
    d.ack(1, false, 0);
    assert!(d.v().state.in_probe_bw());
    d.inflight = None;
    d.acks_until(State::Up, true, 2000);
    assert_eq!((d.v().pacing_gain, d.v().cwnd_gain), (1250, 2000));
    d.acks_until(State::Down, true, 2000);
    assert_eq!((d.v().pacing_gain, d.v().cwnd_gain), (750, 2000));
}

/// [v2] §4.3.1.2 BBRCheckStartupFullBandwidth judges BBR.max_bw, not the round's sample
/// ([v3] §5.3.1.2 judges RS.delivery_rate): a round whose samples raised max_bw by 25 %
/// starts the count again even if the round-start sample is low.
#[test]
fn bbr2_full_pipe_judges_max_bw() {
    for algo in ["bbr2", "bbr3"] {
        let mut d = Drv::new(algo, 1000.0, 20_000);
        d.round();
        assert_eq!(d.v().full_bw_count, 0);
        // a mid-round sample of 2000 raises max_bw; the next round starts at 1100
        d.ack(1, true, 0);
        d.bw_pps = 2000.0;
        d.ack(1, false, 0);
        d.bw_pps = 1100.0;
        d.acks(8);
        d.ack(1, true, 0);
        let v = d.v();
        if algo == "bbr2" {
            assert_eq!(v.full_bw_count, 0, "bbr2: max_bw grew 100 %");
            assert!((pps(v.full_bw) - 2000.0).abs() < 2.0, "bbr2: the baseline is max_bw");
        } else {
            assert!(v.full_bw_count >= 1, "bbr3: the round-start sample did not grow 25 %");
        }
    }
}

/// [v2] Startup ends on loss after 8 loss events (the release's count; v3: 6) in a round
/// of recovery with more than 2 % lost, and leaves inflight_hi unset.
#[test]
fn bbr2_startup_loss_exit_takes_eight_events_and_sets_no_inflight_hi() {
    for (events, left) in [(7u32, false), (8, true)] {
        let mut d = Drv::new("bbr2", 1000.0, 20_000);
        d.per_round = 12;
        for _ in 0..3 {
            d.round();
            d.bw_pps *= 1.3;
        }
        d.c.set_ca_state(RECOVERY);
        for k in 0..d.per_round {
            d.ack(1, k == 0, (k >= 1 && k <= events) as u32);
        }
        d.bw_pps *= 1.3;
        d.ack(1, true, 0);
        let v = d.v();
        assert_eq!(v.full_bw_reached, left, "bbr2: {events} loss events");
        if left {
            assert_ne!(v.state, State::Startup);
            assert_eq!(v.inflight_longterm, INF, "bbr2 sets no inflight_hi on the loss exit");
        }
    }
}

/// [v2] §4.3.2: Drain has no round limit (v3: 3 rounds): it waits for in-flight data to
/// fit the BDP.
#[test]
fn bbr2_drain_has_no_round_limit() {
    let mut d = Drv::new("bbr2", 1000.0, 20_000);
    d.inflight = Some(60);
    d.rounds_until(State::Drain, 10);
    d.rounds(10);
    assert_eq!(d.v().state, State::Drain, "bbr2 left Drain with 60 in flight, BDP 20");
}

/// [v2] §4.3.3.6: ProbeBW_UP ends after at least min_rtt in the phase once in-flight
/// exceeds 1.25 × BDP (an estimated queue), not on a bandwidth plateau.
#[test]
fn bbr2_up_ends_on_a_quarter_bdp_of_queue_after_min_rtt() {
    let mut d = Drv::new("bbr2", 1000.0, 20_000);
    d.to_probe_bw();
    d.acks_until(State::Refill, true, 2000);
    d.acks_until(State::Up, true, 5);
    let v = d.v();
    let q = quantize(&v, bdp_multiple(&v, v.max_bw, 1250, 10), d.c.get(Field::PacingRate));
    // in-flight below 1.25 BDP: UP holds, also through three flat rounds (v3 would end)
    d.inflight = Some(q as u32);
    d.rounds(4);
    assert_eq!(d.v().state, State::Up, "bbr2: UP ended at in-flight 1.25 BDP");
    // above it, but within min_rtt of UP's start: holds
    let mut d2 = Drv::new("bbr2", 1000.0, 20_000);
    d2.to_probe_bw();
    d2.acks_until(State::Refill, true, 2000);
    d2.acks_until(State::Up, true, 5);
    d2.inflight = Some(q as u32 + 1);
    let t0 = d2.v().cycle_stamp;
    while now_us() + 2_000 <= t0 + d2.v().min_rtt {
        d2.ack(1, false, 0);
        assert_eq!(d2.v().state, State::Up, "bbr2: UP ended before min_rtt");
    }
    d2.ack(1, false, 0);
    d2.ack(1, false, 0);
    assert_eq!(d2.v().state, State::Down, "bbr2: UP held with a queue after min_rtt");
}

/// [v2] §4.6.4.4: entering fast recovery cwnd = in-flight + 1 (packet conservation);
/// each ACK in the first round takes off what it marks lost and keeps at least in-flight
/// + acked; after a round of recovery the model's growth resumes.
#[test]
fn bbr2_packet_conservation_for_the_first_round_of_recovery() {
    let mut d = Drv::new("bbr2", 1000.0, 20_000);
    d.to_probe_bw();
    d.acks_until(State::Cruise, false, 50);
    d.inflight = Some(30);
    d.c.set(Field::PacketsOut, 30);
    d.c.set_ca_state(RECOVERY);
    assert_eq!(d.c.cwnd(), 31, "bbr2: cwnd = in-flight + 1");
    assert!(d.v().packet_conservation);
    d.ack(2, false, 3);
    assert_eq!(d.c.cwnd(), 32, "bbr2: max(cwnd − lost, in-flight + acked)");
    d.inflight = Some(20);
    d.ack(2, false, 6);
    assert_eq!(d.c.cwnd(), 26, "bbr2: cwnd − lost");
    d.ack(1, true, 0);
    d.ack(1, true, 0);
    assert!(!d.v().packet_conservation, "bbr2: conservation past a round");
    // (the lossy round cut inflight_lo to the round's delivered data: room below it)
    d.c.set_cwnd(10);
    d.ack(3, false, 0);
    assert_eq!(d.c.cwnd(), 13, "bbr2: growth by the acked data again");
}

/// [v3] keeps no packet conservation: its cwnd in recovery is the model's.
#[test]
fn bbr3_has_no_packet_conservation() {
    let mut d = Drv::new("bbr3", 1000.0, 20_000);
    d.to_probe_bw();
    d.acks_until(State::Cruise, false, 50);
    let w = d.c.cwnd();
    d.inflight = Some(10);
    d.c.set_ca_state(RECOVERY);
    assert_eq!(d.c.cwnd(), w);
    d.ack(2, false, 3);
    assert!(d.c.cwnd() >= w, "bbr3: cwnd {} in recovery from {w}", d.c.cwnd());
}

/// [v2] §4.6.3: the send quantum's floor is one segment below 1.2 Mbit/s (v3: always 2).
#[test]
fn bbr2_send_quantum_floor_is_one_segment_below_1_2_mbit() {
    let c = fresh("bbr2", 20_000);
    for (rate, segs) in [(10_000u64, 1), (149_999, 1), (150_000, 2), (10_000_000, 2)] {
        c.set(Field::PacingRate, rate);
        assert_eq!(c.min_tso_segs(), segs, "bbr2 at {rate} B/s");
    }
}

/// [v2] has no precautionary probing: after a probe that went too high, the next UP does
/// not end the moment in-flight reaches inflight_hi.
#[test]
fn bbr2_next_probe_is_not_cut_short() {
    let mut d = Drv::new("bbr2", 5000.0, 20_000);
    d.to_probe_bw();
    d.per_round = 100;
    d.acks_until(State::Refill, true, 5000);
    d.acks_until(State::Up, true, 5);
    d.ack(1, true, 0);
    d.acks(89);
    d.ack(1, false, 5);
    let cut = d.v().inflight_longterm;
    assert!(cut != INF && d.v().state == State::Down, "bbr2");
    d.acks_until(State::Refill, true, 5000);
    d.acks_until(State::Up, true, 5);
    d.inflight = Some(cut as u32);
    d.ack(1, false, 0);
    assert_eq!(d.v().state, State::Up, "bbr2 ended the probe at inflight_hi");
}

/// [v2] §4.3.3.4 CheckInflightTooHigh runs on every ACK of a probe, [v3] §5.5.10.2 only
/// on the ACKs that mark losses: 2 losses marked on an ACK of an old packet (1.3 % of
/// what was in flight at its send) are no excess there; the next ACK, of a packet sent
/// in this round (2 lost of ~65), is one for v2 and not for v3.
#[test]
fn v2_judges_a_probe_s_losses_on_every_ack() {
    for algo in ["bbr2", "bbr3"] {
        let mut d = in_up(algo, 5000.0, 100);
        d.ack(1, true, 0);
        d.acks(60);
        let at = d.c.get(Field::Delivered) as u32;
        assert!(at > 150, "{algo}: {at} delivered");
        d.ack_with(50, 1, false, 2, |rs| rs.prior_delivered = at - 150);
        assert_eq!(d.v().inflight_longterm, INF, "{algo}: 2 of ~150 taken for an excess");
        // (few segments in flight: v2's cut ends UP, and DOWN's own exits wait for the
        // next ACK)
        d.inflight = Some(5);
        d.ack(1, false, 0);
        let v = d.v();
        assert_eq!(v.inflight_longterm != INF, algo == "bbr2", "{algo}: inflight_longterm {}", v.inflight_longterm);
        let want = if algo == "bbr2" { State::Down } else { State::Up };
        assert_eq!(v.state, want, "{algo}");
    }
}
