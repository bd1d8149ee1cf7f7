//! cca_htcp against Leith & Shorten, "H-TCP", PFLDnet 2004 and draft-leith-tcp-htcp-06
//! (bpf/cc/htcp.bpf.c): per RTT cwnd += 2(1 − β)·α(Δ), α(Δ) = 1 for Δ ≤ Δ_L = 1 s, else
//! 1 + 10(Δ − Δ_L) + ((Δ − Δ_L)/2)², Δ the time since the end of the last congestion
//! event; at an event cwnd ← β·cwnd, β = RTT_min/RTT_max within [0.5, 0.8].
use ccarena_cc_harness::*;

const RTT: u32 = 50_000;

fn alpha(delta_s: f64) -> f64 {
    if delta_s <= 1.0 {
        1.0
    } else {
        let d = delta_s - 1.0;
        1.0 + 10.0 * d + (d / 2.0) * (d / 2.0)
    }
}

/// A flow at cwnd 400 whose RTT ranged from `rtt_min` to `rtt_max` (Open state), then a
/// congestion event lasting `recovery_us`; returns the connection at the end of the
/// event (back in Open) and β·1024 as the ssthresh shows it.
fn after_event(rtt_min: u32, rtt_max: u32, recovery_us: u64) -> (Conn, f64) {
    let c = Conn::new("htcp");
    c.start_in_ca(400);
    c.round(rtt_min);
    c.round(rtt_max);
    for _ in 0..4 {
        c.round(rtt_min); // the throughput before the event: cwnd / RTT_min
    }
    let w = c.cwnd();
    c.enter_recovery();
    let beta = c.ssthresh() as f64 / w as f64;
    advance_us(recovery_us);
    c.exit_reduction();
    (c, beta)
}

/// mean growth per RTT over the rounds that cover delta ± 0.1 s after the event's end
fn growth_per_rtt_at(c: &Conn, t_end: u64, delta_s: f64) -> f64 {
    while (now_us() - t_end) as f64 / 1e6 < delta_s - 0.1 {
        c.round(RTT);
    }
    let w0 = c.cwnd();
    let mut n = 0;
    while (now_us() - t_end) as f64 / 1e6 < delta_s + 0.1 {
        c.round(RTT);
        n += 1;
    }
    (c.cwnd() - w0) as f64 / n as f64
}

#[test]
fn increase_follows_alpha_of_the_time_since_the_end_of_the_congestion_event() {
    // RTT_max = 2 RTT_min: beta = 0.5, so 2(1 - beta) = 1 and the growth is alpha itself
    for (delta, expect) in [(0.5, 1.0), (2.0, 11.25), (3.0, 22.0), (5.0, 45.0)] {
        assert_eq!(alpha(delta), expect);
        // the event lasts 0.8 s: measured from its start, Delta would be 0.8 s larger
        let (c, beta) = after_event(RTT, 2 * RTT, 800_000);
        assert!((beta - 0.5).abs() < 0.01, "beta {beta}");
        let t_end = now_us();
        let g = growth_per_rtt_at(&c, t_end, delta);
        assert!((g - expect).abs() <= 0.04 * expect + 0.1, "Delta {delta}: {g:.2} per RTT, want {expect}");
    }
}

#[test]
fn increase_is_scaled_by_two_times_one_minus_beta() {
    // RTT_max = 1.25 RTT_min: beta = 0.8, 2(1 - beta) = 0.4
    let (c, beta) = after_event(RTT, RTT * 5 / 4, 0);
    assert!((beta - 0.8).abs() < 0.01, "beta {beta}");
    let t_end = now_us();
    let g = growth_per_rtt_at(&c, t_end, 3.0);
    assert!((g - 0.4 * 22.0).abs() <= 0.04 * 8.8 + 0.1, "{g:.2} per RTT, want 8.8");
}

#[test]
fn beta_is_rtt_min_over_rtt_max_within_half_and_four_fifths() {
    for (max, want) in [(RTT * 4 / 3, 0.75), (RTT * 3 / 2, 2.0 / 3.0), (RTT, 0.8), (3 * RTT, 0.5)] {
        let (_c, beta) = after_event(RTT, max, 0);
        assert!((beta - want).abs() < 0.006, "RTT_max {max}: beta {beta:.3}, want {want:.3}");
    }
}

#[test]
fn rtt_max_survives_a_congestion_event() {
    // RTT_max = 1.5 RTT_min: beta = 2/3 at the first event; the next event, at about the
    // same throughput (no adaptive backoff), must still know that RTT_max although the
    // new epoch saw only RTT_min
    let (c, beta) = after_event(RTT, RTT * 3 / 2, 0);
    assert!((beta - 2.0 / 3.0).abs() < 0.006, "beta {beta}");
    while c.cwnd() < 400 {
        c.round(RTT);
    }
    let w = c.cwnd();
    c.enter_recovery();
    let b2 = c.ssthresh() as f64 / w as f64;
    assert!((b2 - 2.0 / 3.0).abs() < 0.006, "beta {b2}: RTT_max was forgotten at the event");
}

#[test]
fn a_throughput_change_of_more_than_a_fifth_backs_off_by_half() {
    // adaptive backoff (draft §4): the throughput before this event differs from the one
    // before the previous event by > 20 %: beta = 0.5 whatever the RTTs say
    let (c, beta) = after_event(RTT, RTT * 3 / 2, 0);
    assert!((beta - 2.0 / 3.0).abs() < 0.006);
    for _ in 0..10 {
        c.round(RTT); // cwnd ~ 270 of 400: throughput -33 %
    }
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w / 2);
}

#[test]
fn an_undone_event_restores_the_epoch() {
    // a spurious reduction undone: cwnd back, and Delta counts from the real event
    let (c, _) = after_event(RTT, 2 * RTT, 0);
    let t_end = now_us();
    while now_us() - t_end < 2_500_000 {
        c.round(RTT);
    }
    let w = c.cwnd();
    c.enter_recovery();
    c.undo();
    assert_eq!(c.cwnd(), w);
    let g = growth_per_rtt_at(&c, t_end, 3.0);
    assert!((g - 22.0).abs() <= 0.04 * 22.0 + 0.1, "{g:.2} per RTT after undo, want 22");
}

#[test]
fn alpha_restarts_when_an_event_begins() {
    // 10 s without a loss (alpha(10 s) = 111), then a time-out: the window climbs back
    // from 1 in the Loss state. Its increase beyond ssthresh must be alpha's minimum
    // (Delta counts from the event's start), not 111 segments per RTT.
    let c = Conn::new("htcp");
    c.start_in_ca(100);
    for _ in 0..(10_000_000 / RTT) {
        c.round(RTT);
    }
    c.enter_loss();
    let ss = c.ssthresh();
    while c.cwnd() < ss {
        c.round(RTT);
    }
    let w0 = c.cwnd();
    for _ in 0..5 {
        c.round(RTT);
    }
    let per_rtt = (c.cwnd() - w0) as f64 / 5.0;
    assert!(per_rtt <= 2.0, "grew {per_rtt} segments per RTT right after a time-out");
}
