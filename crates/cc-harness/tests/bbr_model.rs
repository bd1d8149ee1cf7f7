//! The model's estimators of BBRv3 and BBRv2 (bpf/cc/bbr_model.h) at their edges: which
//! delivery samples enter the max-bw filter, which are application-limited, the loss
//! estimate of an old packet, extra_acked's epoch and window, min_rtt's 10 s window, and
//! the BDP before any RTT sample. The mechanisms themselves are in tests/bbr3.rs and
//! tests/bbr_signals.rs.
//!   [v3] draft-ietf-ccwg-bbr-06; [v2] draft-cardwell-iccrg-bbr-congestion-control-02.
mod bbr_util;

use bbr_util::*;
use ccarena_cc_harness::bbr::{bw_of, State, ACKS_INIT, ACKS_PROBE_STOPPING, INF};
use ccarena_cc_harness::rate::RateSample;
use ccarena_cc_harness::*;

const BOTH: [&str; 2] = ["bbr3", "bbr2"];

/// One ACK of `acked` segments to a bare connection with the rate sample `rs`, C.delivered
/// advancing first (as the kernel counts the ACK before cong_control).
fn give(c: &Conn, acked: u32, rs: RateSample) {
    c.set(Field::Delivered, c.get(Field::Delivered) + acked as u64);
    c.cong_control_rs(FLAG_DATA_ACKED, &rs);
}

/// [v3] §4.1.2.3, §5.5.5: every delivery sample with a rate enters the filter, however
/// small or short: one segment (it also ends a round), two segments over 1 µs, one
/// segment over 2^24 µs (the smallest rate the model can hold); an ACK without a sample
/// (RS.delivered = −1) leaves the filter as it was.
#[test]
fn every_delivery_sample_enters_the_max_bw_filter() {
    for algo in BOTH {
        let c = fresh(algo, 20_000);
        assert_eq!(c.bbr().max_bw, 0, "{algo}: the filter starts empty");
        give(&c, 1, RateSample::no_sample(1, 0, 20_000));
        assert_eq!(c.bbr().max_bw, 0, "{algo}: an ACK without a delivery sample");
        let d = c.get(Field::Delivered) as u32;
        give(&c, 1, RateSample::of(d, 1, 20_000, 1, 20_000));
        let v = c.bbr();
        assert_eq!(v.max_bw, bw_of(1, 20_000), "{algo}: one segment over an RTT");
        assert_eq!(v.round_count, 1, "{algo}: a sample of one segment ends the round");

        let c = fresh(algo, 20_000);
        give(&c, 2, RateSample::of(c.get(Field::Delivered) as u32, 2, 1, 2, 20_000));
        assert_eq!(c.bbr().max_bw, 2 << 24, "{algo}: two segments over 1 µs");

        let c = fresh(algo, 20_000);
        give(&c, 1, RateSample::of(c.get(Field::Delivered) as u32, 1, 1 << 24, 1, 20_000));
        assert_eq!(c.bbr().max_bw, 1, "{algo}: one segment over 2^24 µs");
    }
}

/// [v3] §5.3.4.3: an ACK that delivered data (one segment is enough) ends the restart
/// from idle; one without a delivery sample (RS.delivered = −1) does not.
#[test]
fn one_delivered_segment_ends_the_idle_restart() {
    for algo in BOTH {
        let c = fresh(algo, 20_000);
        c.set(Field::AppLimited, 5);
        c.cwnd_event(CA_EVENT_TX_START);
        assert!(c.bbr().idle_restart, "{algo}");
        advance_us(10_000);
        give(&c, 0, RateSample::no_sample(0, 0, -1));
        assert!(c.bbr().idle_restart, "{algo}: an ACK without a delivery sample ended the restart");
        advance_us(10_000);
        let d = c.get(Field::Delivered) as u32;
        give(&c, 1, RateSample::of(d, 1, 20_000, 1, 20_000));
        assert!(!c.bbr().idle_restart, "{algo}: the restart outlived a delivery");
    }
}

/// [v3] §5.5.5 UpdateMaxBw: an application-limited sample enters the filter when it is
/// at least the current estimate, so one equal to it (and above the cycle's own slot)
/// raises that slot.
#[test]
fn an_app_limited_sample_equal_to_max_bw_enters_the_filter() {
    for algo in BOTH {
        let mut d = in_cruise_at(algo, 2000.0);
        // a new cycle's slot: rounds of UP until the probe ends, then DOWN's round start
        d.acks_until(State::Refill, true, 5000);
        d.acks_until(State::Up, true, 10);
        d.rounds_until(State::Down, 50);
        let c0 = d.v().cycle_count;
        d.ack(1, true, 0);
        let v = d.v();
        assert_eq!(v.cycle_count, c0.wrapping_add(1) & 0xff, "{algo}: the filter advanced");
        let slot = (v.cycle_count & 1) as usize;
        let max = v.max_bw;
        assert_eq!(v.max_bw_slot[1 - slot], max, "{algo}");
        // this cycle at half the rate, then one application-limited sample at the max
        d.bw_pps = 1000.0;
        d.acks(3);
        assert!(d.v().max_bw_slot[slot] < max, "{algo}");
        d.bw_pps = 2000.0;
        d.app_limited = true;
        d.ack(1, false, 0);
        assert_eq!(d.v().max_bw_slot[slot], max, "{algo}: an app-limited sample at max_bw");
    }
}

/// [v3] §5.5.6 and §5.3.3.9: the max-bw filter advances at the round start that ends a
/// probe's feedback (ACK phase PROBE_STOPPING), unless that round's sample is
/// application-limited; the kernel's marker (RS.is_app_limited) is enough for that.
#[test]
fn an_app_limited_round_does_not_advance_the_max_bw_filter() {
    for algo in BOTH {
        for app_limited in [false, true] {
            let mut d = in_cruise_at(algo, 2000.0);
            d.acks_until(State::Refill, true, 5000);
            d.acks_until(State::Up, true, 10);
            d.rounds_until(State::Down, 50);
            let v = d.v();
            assert_eq!(v.ack_phase, ACKS_PROBE_STOPPING, "{algo}");
            d.app_limited = app_limited;
            d.ack(1, true, 0);
            let w = d.v();
            assert_eq!(w.ack_phase, ACKS_INIT, "{algo}");
            let advanced = w.cycle_count != v.cycle_count;
            assert_eq!(advanced, !app_limited, "{algo}: app-limited {app_limited}, advanced {advanced}");
        }
    }
}

/// [v3] §5.3.4.3 MarkConnectionAppLimited: the data sent in ProbeRTT is
/// application-limited, so the round after ProbeRTT (its ACKs are of that data) does not
/// advance the max-bw filter, though leaving ProbeRTT asks for it (PROBE_STOPPING).
#[test]
fn probe_rtt_s_data_does_not_advance_the_max_bw_filter() {
    for algo in BOTH {
        let mut d = Drv::new(algo, 2000.0, 20_000);
        d.to_probe_bw();
        d.acks_until(State::ProbeRtt, false, 5000);
        let v = d.v();
        d.inflight = Some(bdp_multiple(&v, v.bw, 500, 10).max(4) as u32);
        d.acks_until(State::Cruise, true, 500);
        d.inflight = None;
        let v = d.v();
        assert_eq!(v.ack_phase, ACKS_PROBE_STOPPING, "{algo}");
        d.ack(1, true, 0);
        let w = d.v();
        assert_eq!(w.ack_phase, ACKS_INIT, "{algo}");
        assert_eq!(w.cycle_count, v.cycle_count, "{algo}: ProbeRTT's data advanced the filter");
    }
}

/// [v3] §2.3: RS.lost for a packet sent before the previous round began is the loss since
/// that round's start (the oldest the model keeps), not an interpolation beyond it. Seen
/// through [v3]'s excess-loss test in UP (as in tests/bbr3.rs).
#[test]
fn an_older_packet_counts_the_losses_since_the_previous_round() {
    let mut d = in_up_of_400();
    // the previous round (2 losses in 400), then 300 ACKs of this one
    d.ack(1, true, 0);
    let d0 = d.c.get(Field::Delivered) as u32;
    for k in 1..400 {
        d.ack(1, false, (k == 199 || k == 399) as u32);
    }
    d.ack(1, true, 0);
    d.acks(299);
    assert_eq!(d.v().state, State::Up);
    // an ACK of a packet sent 100 segments before that round began: 7 lost of ~807
    d.ack_with(50, 1, false, 5, |rs| rs.prior_delivered = d0 - 100);
    assert_eq!(d.v().state, State::Up, "7 lost of 807 in flight taken for an excess");
    assert_eq!(d.v().inflight_longterm, INF);
}

/// [v3] §5.5.9 UpdateACKAggregation: an epoch whose delivery equals what bw explains
/// (extra_acked_delivered <= expected) starts a new one. On a path of 10^6 segments/s
/// (bw exact): 1 segment, then 5 at +1 µs (1 expected: a new epoch), the rate doubling,
/// then 10 at +2 µs: 15 since the new epoch began, 4 expected at the doubled rate.
#[test]
fn an_epoch_that_delivered_what_bw_explains_starts_again() {
    for algo in BOTH {
        let mut d = in_cruise_at(algo, 1e6);
        assert_eq!(d.v().bw, 1 << 24, "{algo}");
        d.ack(1, false, 0);
        d.bw_pps = 2e6;
        d.ack_in(1, 5, false, 0);
        assert_eq!(d.v().bw, 2 << 24, "{algo}");
        assert!(d.c.cwnd() > 20, "{algo}: cwnd {} would cap extra_acked", d.c.cwnd());
        d.ack_in(2, 10, false, 0);
        assert_eq!(d.v().extra_acked, 11, "{algo}");
    }
}

/// [v3] §5.5.9: extra_acked is at most cwnd, however much one ACK acknowledges at once.
#[test]
fn extra_acked_is_at_most_cwnd() {
    for algo in BOTH {
        let mut d = in_cruise_at(algo, 1000.0);
        d.rounds(11);
        let w = d.c.cwnd();
        d.ack_in(0, 3 * w, false, 0);
        assert_eq!(d.v().extra_acked, w as u64, "{algo}: three windows at once");
    }
}

/// [v3] §5.5.9: the extra_acked filter forgets a round's sample 10 rounds on, also when
/// the round's slot is used again (the model keeps 16 rounds' slots).
#[test]
fn a_burst_stays_forgotten_when_its_slot_is_used_again() {
    for algo in BOTH {
        let mut d = in_cruise_at(algo, 1000.0);
        d.rounds(2);
        d.ack(16, false, 0);
        let r = d.v().round_count;
        assert_eq!(d.v().extra_acked, 16, "{algo}");
        advance_us(100_000);
        while d.v().round_count < r + 20 {
            d.round();
            let v = d.v();
            if v.round_count >= r + 10 {
                assert!(v.extra_acked <= 1, "{algo}: extra_acked {} {} rounds on", v.extra_acked, v.round_count - r);
            }
        }
    }
}

/// [v3] §5.3.4.3 UpdateMinRTT: min_rtt keeps its value for 10 s from its own sample,
/// though ProbeRTT's 5 s estimate rose meanwhile. min_rtt falls to 10 ms at 7 s; ProbeRTT's
/// estimate expires after 12 s and takes 15 ms; min_rtt stays 10 ms until after 17 s.
#[test]
fn min_rtt_lasts_ten_seconds_from_its_sample() {
    for algo in BOTH {
        set_now_us(1_000_000);
        let t0 = now_us();
        let mut d = Drv::new(algo, 2000.0, 20_000);
        d.to_probe_bw();
        d.acks_up_to(t0 + 7_000_000, false);
        d.ack_with(d.rtt_us / d.per_round as u64, 1, false, 0, |rs| rs.rtt_us = 10_000);
        let v = d.v();
        let s = now_us();
        assert_eq!((v.min_rtt, v.min_rtt_stamp), (10_000, s), "{algo}");
        while now_us() < s + 5_200_000 {
            d.ack_with(d.rtt_us / d.per_round as u64, 1, false, 0, |rs| rs.rtt_us = 15_000);
        }
        let v = d.v();
        assert_eq!(v.probe_rtt_min_delay, 15_000, "{algo}: ProbeRTT's estimate expired");
        assert_eq!((v.min_rtt, v.min_rtt_stamp), (10_000, s), "{algo}: min_rtt left before its 10 s");
    }
}

/// [v3] §5.3.4.3: an RTT sample of 0 µs is a sample (RS.rtt >= 0), and the lowest.
#[test]
fn an_rtt_sample_of_zero_is_the_min_rtt() {
    for algo in BOTH {
        let c = fresh(algo, 20_000);
        give(&c, 1, RateSample::of(c.get(Field::Delivered) as u32, 1, 20_000, 1, 0));
        let v = c.bbr();
        assert_eq!((v.min_rtt, v.probe_rtt_min_delay), (0, 0), "{algo}");
    }
}

/// [v3] §5.6.4.2 BDPMultiple: before any RTT sample the BDP is the initial window, which
/// Drain's ssthresh (the estimated BDP) shows for a Startup without RTT samples (Drain
/// ends at once: in-flight is within that BDP).
#[test]
fn the_bdp_is_the_initial_window_before_any_rtt_sample() {
    for algo in BOTH {
        let c = Conn::bare(algo);
        c.init();
        let init = c.cwnd();
        assert_eq!(c.bbr().min_rtt, INF, "{algo}");
        let mut d = Drv::with_conn(c, 2000.0, 20_000);
        for k in 0..2000 {
            if d.v().state != State::Startup {
                break;
            }
            d.ack_with(2_000, 1, k % 10 == 0, 0, |rs| rs.rtt_us = -1);
        }
        let v = d.v();
        assert!(v.full_bw_reached && v.state != State::Startup, "{algo}");
        assert_eq!(v.min_rtt, INF, "{algo}");
        assert_eq!(d.c.ssthresh(), init.max(4), "{algo}: Drain's ssthresh");
    }
}

/// [v3] §5.5.9: an ACK that acknowledges nothing new, before any round began, adds no
/// extra_acked (the filter holds no sample above 0).
#[test]
fn an_ack_of_nothing_adds_no_extra_acked() {
    for algo in BOTH {
        let c = fresh(algo, 20_000);
        advance_us(1_000);
        give(&c, 0, RateSample::no_sample(0, 0, 20_000));
        let v = c.bbr();
        assert_eq!((v.round_count, v.extra_acked), (0, 0), "{algo}");
    }
}

/// [v3] §2.3, §5.5.10.2: RS.tx_in_flight = RS.delivered + RS.lost, RS.lost the losses
/// since the packet was sent: counted from the previous round's start for a packet older
/// than it, interpolated within that round. Seen exactly where inflight_longterm (finite
/// after a probe's cut) rises to an ACK's tx_in_flight. Rounds of 100 ACKs in DOWN with
/// 2 losses in the previous round and 1 in this one (each under the loss threshold).
#[test]
fn tx_in_flight_counts_the_losses_since_the_packet_was_sent() {
    let mut d = in_up("bbr3", 5000.0, 100);
    d.round_then_loss(89, 5);
    let cut = d.v().inflight_longterm;
    assert!(cut != INF && d.v().state == State::Down, "a probe's cut");
    let at = |d: &Drv| (d.c.get(Field::Delivered) as u32, d.c.get(Field::Lost) as u32);
    d.ack(1, true, 0);
    let (d0, l0) = at(&d);
    for k in 1..100 {
        d.ack(1, false, (k == 70 || k == 90) as u32);
    }
    d.ack(1, true, 0);
    let (d1, l1) = at(&d);
    assert_eq!((d1 - d0, l1 - l0), (100, 2));
    for k in 1..60 {
        d.ack(1, false, (k == 50) as u32);
    }
    assert_eq!(d.v().state, State::Down);
    let before = d.v().inflight_longterm;
    // a packet sent halfway through the previous round: 1 of its 2 losses, and this one's
    let p = d0 + 50;
    d.ack_with(50, 1, false, 0, |rs| rs.prior_delivered = p);
    let (dn, ln) = at(&d);
    let tx = dn - p + (ln - (l0 + 1));
    assert!(tx as u64 > before, "{tx} in flight would not raise {before}");
    assert_eq!(d.v().inflight_longterm, tx as u64, "a packet sent within the previous round");
    // a packet sent before the previous round began: all 3 losses since its start
    let p = d0 - 10;
    d.ack_with(50, 1, false, 0, |rs| rs.prior_delivered = p);
    let (dn, ln) = at(&d);
    assert_eq!(d.v().inflight_longterm, (dn - p + (ln - l0)) as u64, "a packet sent before the previous round");
}
