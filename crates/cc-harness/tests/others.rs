//! The defining rule of each remaining algorithm of bpf/cc, on the harness: CUBIC
//! (RFC 9438), Scalable (Kelly 2003), Vegas (Brakmo & Peterson 1995), Hybla (Caini &
//! Firrincieli 2004), BIC (Xu, Harfoush, Rhee 2004), Veno (Fu & Liew 2003).
use ccarena_cc_harness::*;

// ---- CUBIC, RFC 9438 ------------------------------------------------------------------
fn w_cubic(t: f64, w_max: f64) -> f64 {
    let k = (w_max * (1.0 - 0.7) / 0.4).cbrt(); // §4.2 eq. 2 with cwnd_epoch = beta W_max
    0.4 * (t - k).powi(3) + w_max
}

#[test]
fn cubic_cuts_to_beta_0_7_and_follows_w_cubic_through_k() {
    let c = Conn::new("cubic");
    c.start_in_ca(100);
    c.round(100_000);
    let w_max = c.cwnd() as f64;
    c.enter_recovery();
    assert_eq!(c.ssthresh(), (w_max * 0.7) as u32, "§4.6: beta_cubic = 0.7");
    c.exit_reduction();
    let t0 = now_us();
    let k = (w_max * 0.3 / 0.4).cbrt();
    for t in [1.0, 2.0, k, k + 1.5] {
        while ((now_us() - t0) as f64) / 1e6 < t {
            c.round(100_000);
        }
        let t_now = (now_us() - t0) as f64 / 1e6;
        // cwnd aims at W_cubic(t + RTT) (§4.2), one RTT ahead
        let want = w_cubic(t_now + 0.1, w_max);
        let got = c.cwnd() as f64;
        assert!((got - want).abs() <= 0.02 * want + 1.5, "t {t_now:.2}: cwnd {got}, W_cubic {want:.1}");
    }
}

#[test]
fn cubic_grows_like_reno_friendly_w_est_on_short_rtts() {
    // §4.3: at RTT 1 ms the cubic curve hardly moves; W_est = beta W_max +
    // alpha_cubic t/RTT, alpha_cubic = 3(1 - 0.7)/(1 + 0.7) = 0.529 per RTT, wins
    let c = Conn::new("cubic");
    c.start_in_ca(200);
    c.round(1_000);
    let w_max = c.cwnd() as f64;
    c.enter_recovery();
    c.exit_reduction();
    let w0 = c.cwnd() as f64;
    for _ in 0..40 {
        c.round(1_000);
    }
    let want = w0 + 0.529 * 40.0;
    assert!((c.cwnd() as f64 - want).abs() <= 2.0, "cwnd {}, W_est {want:.1}", c.cwnd());
    assert!(w_cubic(0.041, w_max) < want - 10.0, "the cubic curve would be far lower");
}

#[test]
fn cubic_fast_convergence_lowers_w_max() {
    // §4.7: a loss below the previous W_max sets W_max = cwnd (1 + beta)/2; the next
    // epoch's plateau (t = K) is there
    let c = Conn::new("cubic");
    c.start_in_ca(200);
    c.round(100_000);
    c.enter_recovery();
    c.exit_reduction();
    let w = c.cwnd(); // 140 < W_max 200
    c.enter_recovery();
    c.exit_reduction();
    let w_max = w as f64 * 0.85;
    let k = (w_max * 0.3 / 0.4).cbrt();
    let t0 = now_us();
    while ((now_us() - t0) as f64) / 1e6 < k {
        c.round(100_000);
    }
    assert!((c.cwnd() as f64 - w_max).abs() <= 0.02 * w_max + 1.5, "cwnd {} at K, W_max {w_max}", c.cwnd());
}

/// CUBIC after a loss at `w` (W_max = w, β = 0.7), then `t` seconds of rounds of `rtt`
fn cubic_epoch(w: u32, rtt: u32, t: f64) -> Conn {
    let c = Conn::new("cubic");
    c.start_in_ca(w);
    c.round(rtt);
    c.set_cwnd(w);
    c.enter_recovery();
    c.exit_reduction();
    let t0 = now_us();
    while ((now_us() - t0) as f64) / 1e6 < t {
        c.round(rtt);
    }
    c
}

#[test]
fn cubic_follows_w_cubic_in_the_concave_and_convex_regions_on_a_long_rtt() {
    // RFC 9438 §4.2, W_cubic(t) = C (t - K)^3 + W_max with C = 0.4, at RTT 500 ms (where
    // the Reno-friendly estimate, 0.53 segments per RTT, stays far below): W_max 200,
    // K = cbrt(200 * 0.3 / 0.4) = 5.3 s; cwnd aims at W_cubic(t + RTT)
    for t in [1.0, 2.0, 9.0, 11.0] {
        let c = cubic_epoch(200, 500_000, t);
        let want = w_cubic(t + 0.5, 200.0);
        let got = c.cwnd() as f64;
        assert!((got - want).abs() <= 0.01 * want + 2.0, "t {t}: cwnd {got}, W_cubic {want:.1}");
    }
}

#[test]
fn cubic_the_first_epoch_without_a_loss_is_convex_from_the_window_it_starts_at() {
    // RFC 9438 §4.2/§4.8: with no W_max yet (slow start ended without a loss) the epoch
    // starts at the current window with K = 0: W = cwnd_epoch + C t^3 (RTT 500 ms)
    // (cwnd closes most of the gap to its target W(t + RTT) within each RTT: it lies
    // between W(t) and W(t + RTT))
    let c = Conn::new("cubic");
    c.start_in_ca(100);
    let t0 = now_us();
    while now_us() - t0 < 8_000_000 {
        c.round(500_000);
    }
    let t = (now_us() - t0) as f64 / 1e6;
    let w = |t: f64| 100.0 + 0.4 * t.powi(3);
    let got = c.cwnd() as f64;
    assert!(got >= w(t) - 2.0 && got <= w(t + 0.5) + 2.0,
            "t {t:.2}: cwnd {got}, W {:.1} .. {:.1}", w(t), w(t + 0.5));
}

#[test]
fn cubic_the_target_is_at_most_one_and_a_half_windows() {
    // RFC 9438 §4.2: target = min(W_cubic(t + RTT), 1.5 cwnd): a window held at 140 until
    // W_cubic is far above it (t = 10 s, W_cubic 258) grows by one segment per two ACKs,
    // half of itself per RTT
    let c = Conn::new("cubic");
    c.start_in_ca(200);
    c.round(500_000);
    c.set_cwnd(200);
    c.enter_recovery();
    c.exit_reduction();
    let t0 = now_us();
    while now_us() - t0 < 10_000_000 {
        c.set_cwnd(140);
        c.round(500_000);
    }
    c.set_cwnd(140);
    c.set(Field::CwndCnt, 0);
    let seen = std::cell::RefCell::new(vec![]);
    c.round_with(500_000, |_| {
        seen.borrow_mut().push(c.cwnd() - 140);
        500_000
    });
    // growth after 0, 1, ... 20 ACKs (W_cubic is above 1.5 cwnd until cwnd is 170)
    let want: Vec<u32> = (0..=20).map(|i| i / 2).collect();
    assert_eq!(&seen.into_inner()[..21], &want[..]);
}

#[test]
fn cubic_on_the_plateau_the_window_hardly_grows() {
    // RFC 9438 §4.2: around t = K, W_cubic(t + RTT) is W_max: cwnd at W_max stays there
    // (the rounds within half a second of K grow by at most one segment each)
    let k = (200.0f64 * 0.3 / 0.4).cbrt();
    let c = cubic_epoch(200, 100_000, k - 0.5);
    for _ in 0..10 {
        let w = c.cwnd();
        c.round(100_000);
        assert!(c.cwnd() <= w + 1, "{w} -> {} on the plateau", c.cwnd());
    }
    assert!(c.cwnd().abs_diff(200) <= 3, "cwnd {} at K, W_max 200", c.cwnd());
}

#[test]
fn cubic_the_reno_friendly_estimate_grows_one_segment_per_rtt_once_past_the_prior_window() {
    // RFC 9438 §4.3: W_est grows by alpha_cubic = 0.53 per RTT until it reaches the cwnd
    // of the last reduction (cwnd_prior), then by 1 (RTT 1 ms: the cubic curve is flat)
    let c = cubic_epoch(100, 1_000, 0.0);
    let w = c.cwnd();
    for _ in 0..30 {
        c.round(1_000);
    }
    let slow = c.cwnd() - w;
    assert!(slow.abs_diff(16) <= 2, "+{slow} in 30 RTTs below cwnd_prior, want 0.53 * 30");
    c.rounds_until(105, 1_000, 1000);
    let w = c.cwnd();
    for _ in 0..30 {
        c.round(1_000);
    }
    let fast = c.cwnd() - w;
    assert!(fast.abs_diff(30) <= 2, "+{fast} in 30 RTTs past cwnd_prior, want 30");
}

#[test]
fn cubic_duplicate_acks_without_a_loss_do_not_restart_the_epoch() {
    // the epoch (t in W_cubic) runs from the last reduction; a Disorder episode that ends
    // without one changes nothing: the window follows the same trajectory
    let run = |disorder: bool| {
        let c = cubic_epoch(200, 100_000, 1.0);
        if disorder {
            c.set_ca_state(DISORDER);
            c.set_ca_state(OPEN);
        }
        for _ in 0..20 {
            c.round(100_000);
        }
        c.cwnd()
    };
    assert_eq!(run(true), run(false));
}

#[test]
fn cubic_an_idle_period_does_not_count_as_time_in_the_epoch() {
    // RFC 9438 §5.8: after an application-limited pause (CA_EVENT_TX_START) the epoch
    // restarts at the current window: no jump to 1.5 cwnd per RTT for the idle time. In
    // the concave region (W_max 200, 1 s into the epoch) ...
    let c = cubic_epoch(200, 500_000, 1.0);
    advance_us(10_000_000);
    c.cwnd_event(CA_EVENT_TX_START);
    let w = c.cwnd();
    c.round(500_000);
    assert!(c.cwnd() - w <= 20, "{w} -> {} in the RTT after 10 s idle", c.cwnd());
    // ... and in the convex one (past W_max): the new epoch starts there with K = 0,
    // W = cwnd + C t^3: after 3 s, +0.4 * 3.5^3 = 17
    let c = cubic_epoch(200, 500_000, 9.0);
    advance_us(10_000_000);
    c.cwnd_event(CA_EVENT_TX_START);
    let w = c.cwnd() as f64;
    let t0 = now_us();
    while now_us() - t0 < 3_000_000 {
        c.round(500_000);
    }
    let want = w + 0.4 * 3.5f64.powi(3);
    assert!((c.cwnd() as f64 - want).abs() <= 3.0, "cwnd {} 3 s after the pause, want {want:.1}", c.cwnd());
}

#[test]
fn cubic_cut_is_beta_to_a_1024th() {
    // RFC 9438 §4.6: ssthresh = cwnd * 0.7, with beta in 1/1024 (717): exact at 1024
    let c = Conn::new("cubic");
    c.start_in_ca(1024);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 717);
}

// ---- CUBIC's slow start: HyStart++, RFC 9406 ----------------------------------------------

/// A new CUBIC flow in its initial slow start after two rounds at `base` (the last
/// round's minimum RTT is `base`)
fn hystart_flow(base: u32) -> Conn {
    let c = Conn::new("cubic");
    c.set_ssthresh(100_000);
    c.round(base);
    c.round(base);
    c
}

/// Growth in one round whose every sample is `rtt`, and the round's ACK count
fn round_growth(c: &Conn, rtt: u32) -> (u32, u32) {
    let (n, w) = (c.next_round_acks(), c.cwnd());
    c.round(rtt);
    (c.cwnd() - w, n)
}

/// Whether the flow is in conservative slow start (CSS: a quarter of slow start's growth)
/// after a round at `rtt` following `hystart_flow(base)`; judged by the next round, at
/// `rtt` too (no further rise; in CSS, no fall below the CSS baseline)
fn css_after(base: u32, rtt: u32) -> bool {
    let c = hystart_flow(base);
    c.round(rtt);
    let (g, n) = round_growth(&c, rtt);
    assert!(g <= n / 4 + 1 || g >= n - 2, "growth {g} of {n} ACKs: neither CSS nor slow start");
    g <= n / 4 + 1
}

#[test]
fn cubic_hystart_leaves_slow_start_when_the_round_s_minimum_rtt_rises_by_the_threshold() {
    // RFC 9406 §4.2: after N_RTT_SAMPLE = 8 samples of a round, currentRoundMinRTT >=
    // lastRoundMinRTT + RttThresh, RttThresh = clamp(lastRoundMinRTT / 8, 4 ms, 16 ms),
    // enters CSS. 40 ms: 5 ms; 20 ms: 2.5 -> 4 ms; 200 ms: 25 -> 16 ms
    for (base, thresh) in [(40_000, 5_000), (20_000, 4_000), (200_000, 16_000)] {
        assert!(css_after(base, base + thresh), "base {base}: +{thresh} us");
        assert!(!css_after(base, base + thresh - 1), "base {base}: +{} us", thresh - 1);
    }
}

/// A HyStart++ flow's next round with every RTT sample risen (40 → 45 ms): the growth of
/// cwnd since the round began, seen at each ACK (seen[i]: after i ACKs)
fn growth_by_ack_in_a_risen_round() -> Vec<u32> {
    let c = hystart_flow(40_000);
    let w0 = c.cwnd();
    let seen = std::cell::RefCell::new(vec![]);
    c.round_with(45_000, |_| {
        seen.borrow_mut().push(c.cwnd() - w0);
        45_000
    });
    seen.into_inner()
}

#[test]
fn cubic_hystart_judges_the_rise_from_the_eighth_sample_of_the_round_on() {
    // RFC 9406 §4.2: the rise is judged once rttSampleCount >= N_RTT_SAMPLE = 8: a round
    // whose samples all rose grows by one segment per ACK up to its eighth ACK (slow
    // start's increase comes first), then by a quarter (CSS)
    let seen = growth_by_ack_in_a_risen_round();
    // seen[i]: growth after i ACKs
    assert_eq!(&seen[..10], &[0, 1, 2, 3, 4, 5, 6, 7, 8, 8], "growth per ACK");
    // ACKs without an RTT sample are no samples: seven risen samples and the rest
    // without any do not make eight
    let c = hystart_flow(40_000);
    c.round_with(45_000, |i| if i < 7 { 45_000 } else { u32::MAX });
    let (g, n) = round_growth(&c, 45_000);
    assert!(g >= n - 2, "no CSS from seven samples: +{g} for {n} ACKs");
}

#[test]
fn cubic_conservative_slow_start_grows_a_quarter_and_lasts_five_rounds() {
    // RFC 9406 §4.3: in CSS cwnd grows by acked/CSS_GROWTH_DIVISOR (4); after CSS_ROUNDS
    // (5) rounds, congestion avoidance: ssthresh = cwnd. CSS begins within the round
    // whose rise it saw; that round ends the first of the five
    let c = hystart_flow(40_000);
    c.round(45_000);
    let (mut total, mut acks) = (0, 0);
    for k in 1..=3 {
        let (g, n) = round_growth(&c, 45_000);
        assert!(g.abs_diff(n / 4) <= 1, "CSS round {k}: +{g} for {n} ACKs");
        assert_eq!(c.ssthresh(), 100_000, "CSS round {k}");
        total += g;
        acks += n;
    }
    // (over the three rounds: a quarter of the ACKs, the carry at most one segment)
    assert!(total.abs_diff(acks / 4) <= 1, "+{total} for {acks} ACKs in CSS");
    c.round(45_000);
    assert!(c.ssthresh() < 100_000 && c.cwnd() - c.ssthresh() <= 1,
            "after five rounds of CSS: cwnd {}, ssthresh {}", c.cwnd(), c.ssthresh());
}

#[test]
fn cubic_conservative_slow_start_returns_to_slow_start_when_the_rise_was_spurious() {
    // RFC 9406 §4.3: in CSS, a round whose minimum RTT (after 8 samples) falls below
    // cssBaselineMinRtt goes back to slow start: from its eighth ACK on, not before
    let c = hystart_flow(40_000);
    c.round(45_000);
    let (g, n) = round_growth(&c, 45_000);
    assert!(g <= n / 4 + 1, "CSS");
    let w0 = c.cwnd();
    let seen = std::cell::RefCell::new(vec![]);
    c.round_with(40_000, |_| {
        seen.borrow_mut().push(c.cwnd() - w0);
        40_000
    });
    let seen = seen.into_inner();
    assert!(seen[7] <= 2, "CSS for the first seven ACKs: {:?}", &seen[..12]);
    assert_eq!(seen[11] - seen[8], 3, "slow start from the eighth: {:?}", &seen[..12]);
    let (g, n) = round_growth(&c, 40_000);
    assert!(g >= n - 2, "slow start again: +{g} for {n} ACKs");
    // a later rise enters CSS anew, for five whole rounds again
    c.round(45_000);
    for k in 1..=3 {
        c.round(45_000);
        assert_eq!(c.ssthresh(), 100_000, "second CSS, round {k}");
    }
    c.round(45_000);
    assert!(c.ssthresh() < 100_000, "five rounds of the second CSS");
}

#[test]
fn cubic_hystart_is_used_in_the_initial_slow_start_only() {
    // RFC 9406 §4.2: HyStart++ only in the initial slow start; later slow starts (after
    // an undone reduction, after an RTO) are standard ones, rises in RTT or not
    let c = hystart_flow(40_000);
    c.enter_recovery();
    c.undo();
    c.set_ssthresh(100_000);
    c.round(40_000);
    let (g, n) = round_growth(&c, 60_000);
    assert!(g >= n - 2, "after an undone reduction: +{g} for {n} ACKs");
    let c = hystart_flow(40_000);
    c.enter_loss();
    c.exit_reduction();
    c.set_ssthresh(100_000);
    c.round(40_000);
    c.round(40_000);
    let (g, n) = round_growth(&c, 60_000);
    assert!(g >= n - 2, "after an RTO: +{g} for {n} ACKs");
    // nor after HyStart++ ended by itself (five rounds of CSS, ssthresh = cwnd): an idle
    // restart (the kernel lowers cwnd below ssthresh, RFC 5681 §4.1) is a standard slow
    // start up to that ssthresh, however the RTT moves
    let c = hystart_flow(40_000);
    c.round(45_000);
    for _ in 0..4 {
        c.round(45_000);
    }
    let ss = c.ssthresh();
    assert!(ss < 100_000, "HyStart++ ended: ssthresh {ss}");
    c.cwnd_event(CA_EVENT_CWND_RESTART);
    c.set_cwnd(ss / 4);
    // a round of more ACKs than the gap: slow start climbs all the way back to ssthresh
    let n = c.next_round_acks();
    assert!(n >= ss - ss / 4, "{n} ACKs for a gap of {}", ss - ss / 4);
    c.round(50_000);
    assert_eq!((c.cwnd(), c.ssthresh()), (ss, ss), "slow start after an idle restart");
    // duplicate ACKs without a loss (Disorder) are no reason to stop using it
    let c = hystart_flow(40_000);
    c.set_ca_state(DISORDER);
    c.set_ca_state(OPEN);
    c.round(45_000);
    let (g, n) = round_growth(&c, 45_000);
    assert!(g <= n / 4 + 1, "CSS after a Disorder episode: +{g} for {n} ACKs");
}

// ---- CUBIC, exact ---------------------------------------------------------------------------

/// ACKs of one segment each (10 us apart, RTT sample `rtt`) until cwnd grows: their count,
/// or None within `max`
fn acks_until_growth(c: &Conn, rtt: u32, max: u32) -> Option<u32> {
    let w = c.cwnd();
    for i in 1..=max {
        advance_us(10);
        c.ack(Ack::new(1, rtt));
        if c.cwnd() != w {
            return Some(i);
        }
    }
    None
}

/// RFC 9438 §4.3: alpha_cubic = 3 (1 - beta) / (1 + beta), beta = 0.7
const ALPHA_CUBIC: f64 = 3.0 * (1.0 - 0.7) / (1.0 + 0.7);

/// Segments acked in congestion avoidance until W_est = cwnd_epoch + alpha * acked / cwnd
/// (RFC 9438 §4.3) is one segment above cwnd_epoch = `cwnd`. At cwnd 1024 the fixed point
/// (alpha to 1/1024, W_est to 2^-20 segment) is exact per segment, and ceil(1024 / alpha)
/// is the same for alpha = 0.5294 and its 1024th, 542/1024.
fn reno_segments(cwnd: u32, alpha: f64) -> u32 {
    (cwnd as f64 / alpha).ceil() as u32
}

#[test]
fn cubic_the_reno_friendly_estimate_gains_a_segment_after_cwnd_over_alpha_acked_segments() {
    // RFC 9438 §4.3: below cwnd_prior, W_est grows by alpha_cubic / cwnd per acked segment;
    // cwnd follows it once it is a segment above: at cwnd 1024, after ceil(1024 / 0.5294) =
    // 1935 segments. Losses at 2000 and then 1100 (fast convergence, §4.7: W_max = 1100 *
    // 0.85 = 935, cwnd_prior 1100), the epoch starting at 1024: above W_max, K = 0 and the
    // curve flat at RTT 10 ms; W_est (from 1024) below cwnd_prior throughout
    let c = Conn::new("cubic");
    c.start_in_ca(2000);
    c.round(10_000);
    c.set_cwnd(2000);
    c.enter_recovery();
    c.exit_reduction();
    c.set_cwnd(1100);
    c.enter_recovery();
    c.exit_reduction();
    c.set_cwnd(1024);
    assert_eq!(reno_segments(1024, ALPHA_CUBIC), 1935);
    assert_eq!(acks_until_growth(&c, 10_000, 4_000), Some(1935));
}

#[test]
fn cubic_at_one_segment_w_est_grows_alpha_per_acked_segment() {
    // RFC 9438 §4.3: W_est += alpha_cubic * segments_acked / cwnd, at cwnd 1 too (congestion
    // avoidance at one segment: an initial ssthresh of 1 from the route's metrics; no loss
    // yet, so alpha_cubic = 1, §4.10): W_est passes 2 on the first ACK, and cwnd grows on it
    let c = Conn::new("cubic");
    c.set_cwnd(1);
    c.set_ssthresh(1);
    assert_eq!(acks_until_growth(&c, 10_000, 10), Some(reno_segments(1, 1.0)));
}

#[test]
fn cubic_alpha_is_one_from_the_moment_w_est_equals_cwnd_prior() {
    // RFC 9438 §4.3: alpha_cubic becomes 1 once W_est >= cwnd_prior, equality included: an
    // epoch that starts at the window of the last reduction (1000 = cwnd_prior = W_max: K = 0,
    // flat curve at RTT 10 ms) grows W_est by 1/1000 per acked segment from its first ACK.
    // Kept to 2^-20 segment (floor(2^20 / 1000) = 1048 per segment), a whole segment takes
    // ceil(2^20 / 1048) = 1001 segments (alpha 0.53 would take 1890)
    let c = Conn::new("cubic");
    c.start_in_ca(1000);
    c.round(10_000);
    c.set_cwnd(1000);
    c.enter_recovery();
    c.exit_reduction();
    c.set_cwnd(1000);
    let per_segment = (1u64 << 20) / 1000;
    let want = ((1u64 << 20) + per_segment - 1) / per_segment;
    assert_eq!(want, 1001);
    assert_eq!(acks_until_growth(&c, 10_000, 4_000), Some(want as u32));
}

#[test]
fn cubic_fast_convergence_sets_w_max_to_0_85_of_the_window() {
    // RFC 9438 §4.7: a loss at cwnd 1024 below the last W_max (2000) sets W_max = 1024 (1 +
    // 0.7) / 2 = 870.4, 870 in whole segments (beta / 2 + 1/2 to a 1024th: exact at 1024).
    // Around t = K = cbrt((870 - 717) / 0.4) = 7.3 s, W_cubic(t + RTT) is W_max (C (t - K)^3
    // < 1 segment within 1.3 s of K): a window held at 869 grows by one segment per 869 acked
    // (cwnd += (target - cwnd) / cwnd), one at 870 not at all
    let w_max = (1024.0f64 * (1.0 + 0.7) / 2.0).floor() as u32;
    assert_eq!(w_max, 870);
    let k = ((w_max as f64 - 717.0) / 0.4).cbrt();
    for (hold, want) in [(w_max - 1, Some(w_max - 1)), (w_max, None)] {
        let c = Conn::new("cubic");
        c.start_in_ca(2000);
        c.round(100_000);
        c.set_cwnd(2000);
        c.enter_recovery();
        c.exit_reduction();
        c.set_cwnd(1024);
        c.enter_recovery();
        c.exit_reduction();
        assert_eq!((c.cwnd(), c.ssthresh()), (717, 717));
        let t0 = now_us();
        while ((now_us() - t0) as f64) / 1e6 + 0.1 < k {
            c.round(100_000);
        }
        c.set_cwnd(hold);
        c.set(Field::CwndCnt, 0);
        assert_eq!(acks_until_growth(&c, 100_000, 2 * w_max), want, "held at {hold}");
    }
}

/// Whether a window held at `hold` grows on one ACK when t + RTT is `t_units` x 100 us into
/// the epoch (RTT 500 ms), i.e. whether CUBIC's target W_cubic(t + RTT) exceeds `hold`
/// (RFC 9438 §4.2: cwnd += (target - cwnd) / cwnd per ACK; snd_cwnd_cnt is one ACK short of
/// a segment at cwnd / 1, and the target is at most 1.5 hold). The epoch follows a loss at
/// `loss_at` (W_max = loss_at, cwnd_epoch = 0.7 loss_at), or with None is the first one, from
/// `w0` without a W_max (K = 0). Rounds at a window held at `w0` (W_est stays far below the
/// target) until a second or so before, then the clock is set.
fn cubic_target_above(loss_at: Option<u32>, w0: u32, t_units: u64, hold: u32) -> bool {
    let c = Conn::new("cubic");
    match loss_at {
        Some(w) => {
            c.start_in_ca(w);
            c.round(500_000);
            c.set_cwnd(w);
            c.enter_recovery();
            c.exit_reduction();
            assert_eq!(c.cwnd(), w0);
        }
        None => c.start_in_ca(w0),
    }
    c.ack(Ack::new(1, 500_000)); // the epoch starts
    let start = now_us();
    assert_eq!(c.srtt_us(), 500_000);
    let at = start + t_units * 100 - 500_000;
    while now_us() + 1_500_000 < at {
        c.set_cwnd(w0);
        c.round(500_000);
    }
    set_now_us(at);
    c.set_cwnd(hold);
    c.set(Field::CwndCnt, hold as u64 - 1);
    c.ack(Ack::new(1, u32::MAX)); // no RTT sample: srtt stays 500 ms
    c.cwnd() > hold
}

#[test]
fn cubic_a_window_at_w_max_on_the_plateau_holds_for_99_rtts() {
    // RFC 9438 §4.2: where W_cubic(t + RTT) = cwnd, (target - cwnd) / cwnd = 0: no growth.
    // (The code lets such a window grow one segment per 100 RTTs, as Linux does, so that
    // one stuck there still probes.) After a loss at 1000 (RTT 20 ms; K = cbrt(300 / 0.4)
    // = 9.1 s), W_cubic is 1000 to the segment while |t - K| < 1.36 s (C |t - K|^3 < 1),
    // and W_est (0.53 per RTT from 700) stays below 1000: a window held at 1000 from K - 1 s
    // does not grow in the next 99 RTTs (99000 ACKs)
    let c = Conn::new("cubic");
    c.start_in_ca(1000);
    c.round(20_000);
    c.set_cwnd(1000);
    c.enter_recovery();
    c.exit_reduction();
    assert_eq!(c.cwnd(), 700);
    let k = (300.0f64 / 0.4).cbrt();
    let t0 = now_us();
    while ((now_us() - t0) as f64) / 1e6 + 0.02 < k - 1.0 {
        c.round(20_000);
    }
    c.set_cwnd(1000);
    c.set(Field::CwndCnt, 0);
    c.ack_segments(99_000, 20, 20_000);
    assert_eq!(c.cwnd(), 1000);
}

#[test]
fn cubic_w_cubic_is_exact_to_a_segment_where_it_is_a_whole_number() {
    // RFC 9438 §4.2, W_cubic(t) = C (t - K)^3 + W_max, C = 0.4: at |t - K| = 5 s, C (t - K)^3
    // = 50 segments exactly (time kept in 100 us units: t + RTT = 50000 units); the target
    // is W_cubic, so a window one below it grows and one at it does not.
    // The first epoch from 500 (K = 0): 500 + 50 at t + RTT = 5 s
    assert!(cubic_target_above(None, 500, 50_000, 549), "first epoch: target 550");
    assert!(!cubic_target_above(None, 500, 50_000, 550), "first epoch: target 550");
    // after a loss at 1333 (cwnd_epoch 933, 1333 * 0.7 to a 1024th): K = cbrt(400 / 0.4) =
    // 10 s exactly; at t + RTT = 5 s, concave: 1333 - 50
    assert_eq!(1333 * 717 / 1024, 933);
    assert!(cubic_target_above(Some(1333), 933, 50_000, 1282), "concave: target 1283");
    assert!(!cubic_target_above(Some(1333), 933, 50_000, 1283), "concave: target 1283");
    // and at t + RTT = 15 s, convex: 1333 + 50
    assert!(cubic_target_above(Some(1333), 933, 150_000, 1382), "convex: target 1383");
    assert!(!cubic_target_above(Some(1333), 933, 150_000, 1383), "convex: target 1383");
}

#[test]
fn cubic_w_cubic_is_exact_a_hundred_seconds_past_k() {
    // RFC 9438 §4.2: 100 s into the first epoch (K = 0), W_cubic = W + 0.4 * 100^3 = W + 400000
    // (a window of 401000 segments, 580 MB: 100 Gbit/s at 46 ms), the window held at 1000
    // until then
    assert!(cubic_target_above(None, 1000, 1_000_000, 400_999), "target 401000");
    assert!(!cubic_target_above(None, 1000, 1_000_000, 401_000), "target 401000");
}

#[test]
fn cubic_hystart_s_threshold_is_4_ms_down_to_the_clock_s_resolution() {
    // RFC 9406 §4.2: RttThresh = clamp(lastRoundMinRTT / 8, MIN_RTT_THRESH = 4 ms, 16 ms);
    // every RTT sample counts, down to the 1 us the kernel measures in (a loopback path's
    // RTT is a few us): from 1 us and 10 us, a rise to base + 4 ms enters CSS, one to
    // base + 4 ms - 1 us does not
    for base in [1, 10] {
        assert!(css_after(base, base + 4_000), "base {base} us: +4 ms");
        assert!(!css_after(base, base + 3_999), "base {base} us: +3.999 ms");
    }
}

#[test]
fn cubic_hystart_counts_rounds_wherever_the_sequence_numbers_start() {
    // RFC 9406 §4.2: a round ends when the ACK passes windowEnd, the SND.NXT recorded at its
    // start (from the start: windowEnd = SND.NXT at init); sequence numbers are compared
    // modulo 2^32, and an ISN in the upper half of the space changes nothing: a round
    // whose minimum RTT rose by the threshold enters CSS
    for isn in [1_000u64, 0x9000_0000] {
        let c = Conn::bare("cubic");
        c.set(Field::SndUna, isn);
        c.set(Field::SndNxt, isn);
        c.init();
        c.set_ssthresh(100_000);
        c.round(40_000);
        c.round(40_000);
        c.round(45_000);
        let (g, n) = round_growth(&c, 45_000);
        assert!(g <= n / 4 + 1, "ISN {isn:#x}: +{g} for {n} ACKs, want CSS");
    }
}

#[test]
fn cubic_hystart_judges_no_rise_before_a_whole_round_was_measured() {
    // RFC 9406 §4.2: lastRoundMinRTT starts at infinity, so the round under way when CUBIC
    // takes over (TCP_CONGESTION on an established connection, 20 segments in flight)
    // cannot be compared with anything: at a constant RTT of 40 ms the flow stays in slow
    // start, one segment per ACK
    let c = Conn::bare("cubic");
    c.set_cwnd(20);
    c.set(Field::PacketsOut, 20);
    c.set(Field::SndNxt, c.get(Field::SndUna) + 20 * c.mss() as u64);
    c.init();
    let w = c.cwnd();
    c.ack_segments(20, 2_000, 40_000);
    assert_eq!(c.cwnd() - w, 20, "slow start in the round under way");
    let (g, n) = round_growth(&c, 40_000);
    assert_eq!(g, n, "slow start in the next round");
}

#[test]
fn cubic_conservative_slow_start_adds_one_segment_per_four_acked_from_its_start() {
    // RFC 9406 §4.3: in CSS, cwnd += acked / CSS_GROWTH_DIVISOR (4). The round whose samples
    // rose grows one segment per ACK up to its eighth (the rise is judged there), then one
    // per four ACKs counted from there: after i ACKs, 8 + (i - 8) / 4
    let seen = growth_by_ack_in_a_risen_round();
    assert!(seen.len() >= 24, "{} ACKs", seen.len());
    let want: Vec<u32> = (0..seen.len() as u32).map(|i| if i <= 8 { i } else { 8 + (i - 8) / 4 }).collect();
    assert_eq!(seen, want);
}

#[test]
fn cubic_conservative_slow_start_grows_a_quarter_on_the_ack_that_finds_the_rise_spurious() {
    // RFC 9406 §4.2, per ACK in CSS: first cwnd += N / CSS_GROWTH_DIVISOR (4), then the RTT
    // sample is counted, then "if currentRoundMinRTT < cssBaselineMinRtt" (once
    // rttSampleCount >= N_RTT_SAMPLE = 8) slow start resumes. So the ACK that brings the
    // eighth sample still grows by a quarter; one segment per ACK starts with the next.
    let c = hystart_flow(40_000);
    let n = c.next_round_acks();
    c.round(45_000);
    // CSS from the eighth ACK of the risen round on: n - 8 ACKs counted at a quarter
    let carry = (n - 8) % 4;
    // the next round: two ACKs without an RTT sample, then samples at the base RTT (below
    // the baseline of 45 ms): the eighth sample comes with the tenth ACK
    let w0 = c.cwnd();
    let seen = std::cell::RefCell::new(vec![]);
    c.round_with(40_000, |i| {
        seen.borrow_mut().push(c.cwnd() - w0);
        if i < 2 { u32::MAX } else { 40_000 }
    });
    let seen = seen.into_inner();
    // growth after i ACKs: a quarter of min(i, 10) with the carry, then one per ACK
    let want: Vec<u32> = (0..seen.len() as u32).map(|i| (carry + i.min(10)) / 4 + i.saturating_sub(10)).collect();
    assert!(seen.len() > 14, "{} ACKs", seen.len());
    assert_eq!(seen, want);
}

#[test]
fn cubic_conservative_slow_start_judges_the_eighth_sample_whatever_acks_carry_none() {
    // RFC 9406 §4.3: in CSS, once rttSampleCount >= N_RTT_SAMPLE (8) and currentRoundMinRTT <
    // cssBaselineMinRtt, slow start resumes: a round whose only samples are eight at the base
    // RTT, on its last ACKs but the one that ends it, is enough; the next round is slow
    // start from its first ACK
    let c = hystart_flow(40_000);
    c.round(45_000);
    let (g, n) = round_growth(&c, 45_000);
    assert!(g <= n / 4 + 1, "CSS: +{g} for {n} ACKs");
    let n = c.next_round_acks();
    c.round_with(40_000, |i| if i + 9 >= n && i + 1 < n { 40_000 } else { u32::MAX });
    let w = c.cwnd();
    c.ack_segments(7, 1_000, 40_000);
    assert_eq!(c.cwnd() - w, 7, "slow start again");
}

#[test]
fn cubic_the_ack_that_ends_slow_start_counts_its_leftover_in_congestion_avoidance() {
    // RFC 9438 §4.3 with RFC 5681 §3.1: the segments an ACK acknowledges beyond ssthresh are
    // acked in congestion avoidance, where W_est starts (cwnd_epoch = 1024) and grows by
    // alpha_cubic / cwnd per segment, alpha_cubic = 1 without a loss yet (§4.10: cwnd_prior
    // = cwnd): cwnd follows it after 1024 segments in all, the ACK's leftover 2 included.
    // A finite initial ssthresh (1024) reached by an ACK of 3 segments at cwnd 1023 ...
    let want = reno_segments(1024, 1.0) - 2;
    let c = Conn::new("cubic");
    c.set_ssthresh(1024);
    while c.cwnd() < 1023 {
        advance_us(50);
        c.ack(Ack::new(1, 40_000));
    }
    c.ack(Ack::new(3, 40_000));
    assert_eq!((c.cwnd(), c.ssthresh()), (1024, 1024));
    assert_eq!(acks_until_growth(&c, 40_000, 4_000), Some(want), "from standard slow start");
    // ... also in the slow start resumed from CSS (RFC 9406 §4.2: the RTT fell back below
    // the baseline at the round's eighth sample; that ACK still grew in CSS, the next is
    // slow start's) ...
    let c = Conn::new("cubic");
    c.set_ssthresh(1024);
    c.round(40_000);
    c.round(40_000);
    c.round(45_000);
    let (g, n) = round_growth(&c, 45_000);
    assert!(g <= n / 4 + 1, "CSS: +{g} for {n} ACKs");
    c.ack_segments(8, 1_000, 40_000);
    c.set_cwnd(1023);
    c.ack(Ack::new(3, 40_000));
    assert_eq!((c.cwnd(), c.ssthresh()), (1024, 1024));
    assert_eq!(acks_until_growth(&c, 40_000, 4_000), Some(want), "from CSS");
    // ... and the ACK that ends CSS after CSS_ROUNDS (5) rounds (ssthresh = cwnd, here 1024)
    let c = hystart_flow(40_000);
    for _ in 0..4 {
        c.round(45_000);
    }
    assert_eq!(c.ssthresh(), 100_000, "still in CSS");
    let n = c.next_round_acks();
    c.ack_segments(n - 2, 1_000, 45_000);
    c.set_cwnd(1024);
    c.ack(Ack::new(2, 45_000));
    assert_eq!((c.cwnd(), c.ssthresh()), (1024, 1024));
    assert_eq!(acks_until_growth(&c, 45_000, 4_000), Some(want), "from CSS's end");
}

#[test]
fn cubic_hystart_takes_no_rtt_samples_outside_slow_start() {
    // RFC 9406 §4.2: the minimum RTT of a round is kept "for each arriving ACK in slow start";
    // congestion avoidance is no round of it. A flow that reached a finite initial ssthresh
    // (1000) at 45 ms without a rise (HyStart++ still armed), then had rounds of congestion
    // avoidance at 40 ms, restarts slow start after an idle period (RFC 5681 §4.1: cwnd
    // lowered below ssthresh). Its first round, at 49 ms, is judged against the last
    // slow-start round, 45 ms: no rise by the threshold (45 + 45/8 = 50.6 ms; from 40 ms it
    // would be one, 40 + 5), so slow start climbs back to ssthresh
    let c = Conn::new("cubic");
    c.set_ssthresh(1000);
    c.rounds_until(1000, 45_000, 1000);
    for _ in 0..3 {
        c.round(40_000);
    }
    c.cwnd_event(CA_EVENT_CWND_RESTART);
    c.set_cwnd(250);
    let n = c.next_round_acks();
    assert!(n >= 750, "{n} ACKs for a gap of 750");
    c.round(49_000);
    // (the ACKs beyond the gap are congestion avoidance's)
    assert!(c.cwnd() >= 1000 && c.ssthresh() == 1000, "slow start after the idle restart: cwnd {}", c.cwnd());
}

#[test]
fn cubic_hystart_is_off_after_a_timeout_that_keeps_ssthresh() {
    // RFC 9406 §4.2: HyStart++ in the initial slow start only, standard slow start for the
    // rest of the connection: not after an RTO, nor after an idle period later (RFC 5681
    // §4.1). tcp_enter_loss leaves ssthresh alone (no ssthresh op) for an RTO in Recovery
    // before high_seq is acked; there the Loss state itself must turn HyStart++ off. CUBIC
    // chosen during such a Recovery (TCP_CONGESTION: init, private state zeroed), then the
    // RTO, slow start back to ssthresh (700) at 40 ms, a round of congestion avoidance, an
    // idle restart at 175: slow start climbs back to ssthresh though the RTT rose to 60 ms
    let c = Conn::bare("cubic");
    let una = c.get(Field::SndUna);
    c.set_cwnd(1000);
    c.set_ssthresh(700);
    c.set(Field::PacketsOut, 1000);
    c.set(Field::SndNxt, una + 1000 * c.mss() as u64);
    c.set(Field::HighSeq, una + 500 * c.mss() as u64);
    c.set(Field::CaState, RECOVERY as u64);
    c.init();
    // tcp_enter_loss without the ssthresh op: all in flight lost (the model sends anew from
    // snd_una), cwnd = in flight + 1, then Loss
    c.set(Field::HighSeq, c.get(Field::SndNxt));
    c.set(Field::PacketsOut, 0);
    c.set(Field::SndNxt, una);
    c.set_cwnd(1);
    c.set_ca_state(LOSS);
    assert_eq!(c.ssthresh(), 700);
    c.exit_reduction();
    c.rounds_until(700, 40_000, 1000);
    c.round(40_000);
    c.cwnd_event(CA_EVENT_CWND_RESTART);
    c.set_cwnd(175);
    let n = c.next_round_acks();
    assert!(n >= 525, "{n} ACKs for a gap of 525");
    c.round(60_000);
    assert!(c.cwnd() >= 700 && c.ssthresh() == 700, "slow start after the idle restart: cwnd {}", c.cwnd());
}

#[test]
fn cubic_far_below_w_est_the_window_grows_a_segment_per_ack() {
    // RFC 9438 §4.3: when W_est > cwnd, cwnd is set to W_est; growing by (W_est - cwnd) /
    // cwnd per ACK, a window more than half itself below W_est grows by a whole segment on
    // each ACK. Held at 70 for 80 RTTs of 1 ms, W_est = 70 + 0.53 * 80 = 112: the next ACKs
    // add one segment each while W_est - cwnd > cwnd / 2 (to cwnd 74)
    let c = cubic_epoch(100, 1_000, 0.0);
    for _ in 0..80 {
        c.set_cwnd(70);
        c.round(1_000);
    }
    c.set_cwnd(70);
    c.set(Field::CwndCnt, 0);
    let mut seen = vec![];
    for _ in 0..4 {
        advance_us(10);
        c.ack(Ack::new(1, 1_000));
        seen.push(c.cwnd());
    }
    assert_eq!(seen, [71, 72, 73, 74]);
}

#[test]
fn cubic_after_a_timeout_the_first_epoch_is_convex_from_its_start() {
    // RFC 9438 §4.8: in the first congestion avoidance after a timeout, K = 0 and W_max is
    // the window at its start: W = cwnd_ca + C t^3. An RTO at 200 (ssthresh 140, and W_max
    // 200 for the loss response), slow start back to 140 at RTT 500 ms, then 8 s: 140 + 0.4
    // t^3 = 345, where the concave approach to the 200 of before the RTO would be at 213
    let c = Conn::new("cubic");
    c.start_in_ca(200);
    c.round(500_000);
    c.set_cwnd(200);
    c.enter_loss();
    c.exit_reduction();
    assert_eq!((c.cwnd(), c.ssthresh()), (1, 140));
    c.rounds_until(140, 500_000, 1000);
    let t0 = now_us();
    while now_us() - t0 < 8_000_000 {
        c.round(500_000);
    }
    let t = (now_us() - t0) as f64 / 1e6;
    let w = |t: f64| 140.0 + 0.4 * t.powi(3);
    let got = c.cwnd() as f64;
    assert!(got >= w(t - 0.5) - 2.0 && got <= w(t + 0.5) + 2.0,
            "t {t:.2}: cwnd {got}, W {:.1} .. {:.1}", w(t - 0.5), w(t + 0.5));
    // only the first: after the next loss (at W, above the W_max of 140: W_max = W), the
    // epoch is concave again (§4.2), K = cbrt(0.3 W / 0.4); 2 s in, cwnd aims at W_cubic(2.5 s)
    let w_loss = c.cwnd();
    c.enter_recovery();
    c.exit_reduction();
    let t0 = now_us();
    while now_us() - t0 < 2_000_000 {
        c.round(500_000);
    }
    let t = (now_us() - t0) as f64 / 1e6;
    let want = w_cubic(t + 0.5, w_loss as f64);
    let got = c.cwnd() as f64;
    assert!((got - want).abs() <= 0.02 * want + 2.0, "t {t:.2} after the loss at {w_loss}: cwnd {got}, W_cubic {want:.1}");
}

/// cwnd after each of `rounds` rounds at RTT 100 ms of a CUBIC flow 1 s into the concave
/// epoch after a loss at 200 (W_max 200, K = 5.3 s), where `event` happens first (at no
/// cost in time). The AI counter snd_cwnd_cnt is zeroed after it in every run: the kernel
/// zeroes it at a reduction and an undo does not bring it back, and it is no CUBIC state.
fn cubic_rounds_after(event: impl FnOnce(&Conn), rounds: u32) -> Vec<u32> {
    let c = cubic_epoch(200, 100_000, 1.0);
    event(&c);
    c.set(Field::CwndCnt, 0);
    (0..rounds).map(|_| {
        c.round(100_000);
        c.cwnd()
    }).collect()
}

#[test]
fn cubic_an_undone_reduction_leaves_growth_as_if_it_had_not_happened() {
    // RFC 9438 §4.9.2: a reduction found spurious restores cwnd and, if cwnd is lower than
    // cwnd_prior, ssthresh, W_max, K, t_epoch and W_est as they were before it ("CUBIC's
    // performance is similar to what it would be without spurious losses"). 1 s into the
    // epoch after a loss at 200, cwnd is about 170: the reduction sets W_max = 0.85 * 170
    // (§4.7) and ends the epoch; the undo must give them back, so the window keeps the
    // concave curve toward 200, round for round.
    let without = cubic_rounds_after(|_| (), 20);
    assert!(without[19] > without[0] + 10, "the reference climbs the curve: {without:?}");
    // a loss detected by ACKs, undone once PRR brought cwnd to ssthresh
    let undone = cubic_rounds_after(|c| {
        c.enter_recovery();
        c.set_cwnd(c.ssthresh());
        c.undo();
    }, 20);
    assert_eq!(undone, without, "recovery undone below cwnd_prior");
    // undone before cwnd went below cwnd_prior: not "already higher" (§4.9.2), restored too
    let undone = cubic_rounds_after(|c| {
        c.enter_recovery();
        c.undo();
    }, 20);
    assert_eq!(undone, without, "recovery undone at cwnd_prior");
    // a timeout undone (§4.9.1: restore the congestion control state): the epoch resumed
    // is not a first one after an RTO (§4.8). The model's outstanding data is put back
    // as it was: it was delivered, the RTO was spurious.
    let undone = cubic_rounds_after(|c| {
        let out = c.get(Field::PacketsOut);
        c.enter_loss();
        c.undo();
        c.set(Field::PacketsOut, out);
    }, 20);
    assert_eq!(undone, without, "RTO undone");
}

/// cwnd after each of `n` one-segment ACKs (`gap` µs apart, RTT sample `rtt`) of a CUBIC
/// flow `t` s into the epoch after a loss at `w`, where `event` happens first; a loss
/// (recovery, then back to Open) comes after the first half of the ACKs. snd_cwnd_cnt is
/// zeroed after `event` (as in `cubic_rounds_after`).
fn cubic_acks_after(w: u32, rtt: u32, t: f64, event: impl FnOnce(&Conn), n: u32, gap: u64) -> Vec<u32> {
    let c = cubic_epoch(w, rtt, t);
    event(&c);
    c.set(Field::CwndCnt, 0);
    (0..n).map(|i| {
        if i == n / 2 {
            c.enter_recovery();
            c.exit_reduction();
        }
        c.ack_segments(1, gap, rtt);
        c.cwnd()
    }).collect()
}

#[test]
fn cubic_an_undo_after_congestion_avoidance_resumed_restores_the_state_before_the_reduction() {
    // RFC 9438 §4.9.2: detection may come after the recovery ended (a D-SACK, in Open):
    // while cwnd is still below cwnd_prior, cwnd, W_max, K, t_epoch, cwnd_prior and W_est
    // all return to their values before the reduction, whatever the new epoch set them
    // to. So the flow continues as one that kept its window and state and only saw time
    // pass (no ACKs, so W_est and the epoch stand still), and the next loss finds the
    // W_max of before (§4.7 fast convergence compares with it).
    let undone_after = |w, rtt, t, rounds, n, gap| {
        let elapsed = std::cell::Cell::new(0);
        let undone = cubic_acks_after(w, rtt, t, |c| {
            let t0 = now_us();
            let prior = c.cwnd();
            c.enter_recovery();
            c.exit_reduction();
            for _ in 0..rounds {
                c.round(rtt);
            }
            assert!(c.cwnd() < prior, "cwnd {} regrew to cwnd_prior {prior}", c.cwnd());
            c.undo();
            elapsed.set(now_us() - t0);
        }, n, gap);
        let idle = cubic_acks_after(w, rtt, t, |_| advance_us(elapsed.get()), n, gap);
        (undone, idle)
    };
    // the cubic region (RTT 100 ms, 1 s after a loss at 200): the new epoch's K and
    // origin, and the fast-convergence W_max, must give way to those of before
    let (undone, idle) = undone_after(200, 100_000, 1.0, 5, 600, 600);
    assert_eq!(undone, idle, "RTT 100 ms");
    // the Reno-friendly region (RTT 1 ms, W_est wins): W_est and cwnd_prior of before
    // (alpha_cubic = 0.53 until W_est reaches the cwnd_prior of the loss at 100, §4.3)
    let (undone, idle) = undone_after(100, 1_000, 0.02, 5, 2000, 12);
    assert_eq!(undone, idle, "RTT 1 ms");
    // an RTO undone: the later loss's epoch is concave as after any loss, not the convex
    // first one after an RTO (§4.8)
    let undone = cubic_acks_after(200, 100_000, 1.0, |c| {
        let out = c.get(Field::PacketsOut);
        c.enter_loss();
        c.undo();
        c.set(Field::PacketsOut, out);
    }, 600, 600);
    assert_eq!(undone, cubic_acks_after(200, 100_000, 1.0, |_| (), 600, 600), "RTO undone");
}

#[test]
fn cubic_an_undo_after_cwnd_regrew_past_the_prior_window_keeps_the_current_state() {
    // RFC 9438 §4.9.2: "when the detection happens long after a spurious loss event and
    // the current cwnd is already higher than cwnd_prior, CUBIC SHOULD continue to use the
    // current and the most recent values": an undo at cwnd_prior + 5 leaves cwnd and the
    // epoch the reduction began, as a run whose reduction was never undone
    let regrown = |c: &Conn| c.get(Field::PriorCwnd) as u32 + 5;
    let kept = cubic_rounds_after(|c| {
        c.enter_recovery();
        c.exit_reduction();
        c.set_cwnd(regrown(c));
    }, 20);
    let undone = cubic_rounds_after(|c| {
        c.enter_recovery();
        c.set_cwnd(regrown(c));
        c.undo();
    }, 20);
    assert_eq!(undone, kept);
}

// ---- Scalable ---------------------------------------------------------------------------
#[test]
fn scalable_adds_one_segment_per_hundred_acked_and_cuts_an_eighth() {
    let c = Conn::new("scalable");
    c.start_in_ca(500);
    c.ack_segments(1000, 100, 50_000);
    assert_eq!(c.cwnd(), 510, "a = 0.01 per ACK");
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w - (w + 7) / 8, "b = 0.125");
    let c = Conn::new("scalable");
    c.start_in_ca(16);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 8, "legacy window: halving");
}

// ---- Vegas ------------------------------------------------------------------------------
fn vegas_step(rtt: u32) -> i64 {
    let c = Conn::new("vegas");
    c.start_in_ca(100);
    c.round(20_000); // BaseRTT
    c.round(rtt);
    let w = c.cwnd() as i64;
    c.round(rtt);
    c.cwnd() as i64 - w
}

#[test]
fn vegas_keeps_diff_between_alpha_and_beta() {
    // Diff = cwnd (1 - BaseRTT/RTT) at cwnd 100, BaseRTT 20 ms
    assert_eq!(vegas_step(20_100), 1, "Diff 0.5 < alpha = 1: +1");
    assert_eq!(vegas_step(20_500), 0, "Diff 2.4 in [alpha, beta]: hold");
    assert_eq!(vegas_step(21_000), -1, "Diff 4.8 > beta = 3: -1");
}

#[test]
fn vegas_slow_start_grows_only_every_other_rtt() {
    // §3.3: "allow exponential growth only every other RTT. In between, the congestion
    // window stays fixed" (Linux's tcp_vegas grows every RTT instead; cca_vegas follows
    // the paper). A growing round doubles cwnd, but for the ACK that ends the round
    // (judged, not counted) and the segment that ACK releases (it belongs to the next
    // round): from w to between 2w - 2 and 2w.
    let c = Conn::new("vegas");
    c.set_ssthresh(10_000);
    let mut w = c.cwnd();
    for k in 0..6 {
        c.round(20_000); // no queue: Diff = 0
        let n = c.cwnd();
        if k % 2 == 0 {
            assert!((2 * w - 2..=2 * w).contains(&n), "round {k}: growing round {w} -> {n}");
        } else {
            assert_eq!(n, w, "round {k}: the round between two growing ones holds cwnd");
        }
        w = n;
    }
}

/// A Vegas flow in slow start whose BaseRTT is `base` (a growing round), then a round
/// at cwnd `w` (the round between two growing ones, where cwnd stays fixed) whose every
/// RTT sample is `rtt`.
fn vegas_slow_start_round(base: u32, w: u32, rtt: u32) -> Conn {
    let c = Conn::new("vegas");
    c.set_ssthresh(10_000);
    c.round(base);
    c.set_cwnd(w);
    c.round(rtt);
    c
}

#[test]
fn vegas_leaves_slow_start_when_diff_exceeds_gamma() {
    // §3.3: slow start ends when Diff = cwnd (1 - BaseRTT/RTT) exceeds gamma = 1 segment;
    // cwnd is then set to the Actual rate times BaseRTT, cwnd·BaseRTT/RTT, plus one
    // segment (the integer truncation would rob the path of its last segment: Linux's
    // tcp_vegas), and congestion avoidance begins (ssthresh = cwnd)
    let c = vegas_slow_start_round(19_000, 20, 20_100); // Diff = 20 * 1.1/20.1 = 1.09
    let fit = 20 * 19_000 / 20_100 + 1; // 18.9 -> 19
    assert_eq!((c.cwnd(), c.ssthresh()), (fit, fit), "Diff 1.09 > gamma: out of slow start");
    // from there the linear rules: Diff = 19 * 1.1/20.1 = 1.04 in [alpha, beta]: hold
    c.round(20_100);
    assert_eq!(c.cwnd(), fit, "congestion avoidance, Diff between alpha and beta: hold");

    // Diff = 20 * 1/20 = 1 exactly is not above gamma: slow start goes on, the next
    // round (without a queue) grows
    let c = vegas_slow_start_round(19_000, 20, 20_000);
    assert_eq!((c.cwnd(), c.ssthresh()), (20, 10_000), "Diff = gamma: still slow start");
    c.round(19_000);
    assert!(c.cwnd() >= 2 * 20 - 2, "the next round doubles: {}", c.cwnd());

    // a large Diff: cwnd falls to what the path carries, Actual * BaseRTT + 1
    let c = vegas_slow_start_round(19_000, 20, 38_000); // Diff = 10
    assert_eq!((c.cwnd(), c.ssthresh()), (11, 11));
}

// ---- Hybla ------------------------------------------------------------------------------
#[test]
fn hybla_scales_growth_by_rho() {
    // RTT 200 ms: rho = 8. Slow start: +2^rho - 1 = 255 per acked segment
    let c = Conn::new("hybla");
    c.set_ssthresh(100_000);
    c.ack_segments(1, 1000, 200_000);
    assert!((c.cwnd() as i64 - (10 + 255)).abs() <= 1, "cwnd {}", c.cwnd());
    // congestion avoidance: rho^2 / cwnd per acked segment = 64 per RTT
    c.start_in_ca(2000);
    let w = c.cwnd();
    c.ack_segments(2000, 100, 200_000);
    assert!((c.cwnd() as i64 - (w as i64 + 64)).abs() <= 1, "cwnd {}", c.cwnd());
    // RTT <= RTT0 = 25 ms: rho = 1, Reno
    let c = Conn::new("hybla");
    c.start_in_ca(50);
    c.ack_segments(50, 100, 10_000);
    assert_eq!(c.cwnd(), 51);
}

// ---- BIC --------------------------------------------------------------------------------
#[test]
fn bic_searches_half_the_distance_to_w_max() {
    let c = Conn::new("bic");
    c.start_in_ca(200);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 175, "beta = 1/8");
    c.exit_reduction();
    // per RTT: (W_max - cwnd)/2 = 12.5, then ~6, ~3 ...
    let mut w = c.cwnd() as f64;
    for k in 0..3 {
        c.ack_segments(c.cwnd(), 100, 50_000);
        let want = (200.0 - w) / 2.0;
        let got = c.cwnd() as f64 - w;
        assert!((got - want).abs() <= 1.0, "step {k}: +{got}, want {want}");
        w = c.cwnd() as f64;
    }
    // far below W_max the step is capped at S_max = 32
    let c = Conn::new("bic");
    c.start_in_ca(1000);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(500);
    let w = c.cwnd();
    c.ack_segments(500, 100, 50_000);
    assert!((c.cwnd() as i64 - (w as i64 + 32)).abs() <= 1, "cwnd {}", c.cwnd());
}

#[test]
fn bic_max_probing_past_w_max_mirrors_the_binary_search() {
    // §3 max probing: past W_max the increase is the binary search's mirror — it starts
    // at S_min = 0.01 and doubles each RTT (the distance travelled past W_max), so the
    // window is one segment past W_max after log2(1/0.01) ~ 7 RTTs and then
    // accelerates; it must not creep at S_min for 1/S_min = 100 RTTs
    let c = Conn::new("bic");
    c.start_in_ca(100);
    c.enter_recovery(); // W_max = 100
    c.exit_reduction();
    c.rounds_until(100, 50_000, 30); // the binary search reaches W_max
    let mut past = vec![];
    for _ in 0..14 {
        c.round(50_000);
        past.push(c.cwnd() - 100);
    }
    let first = past.iter().position(|&d| d >= 1).expect("never past W_max");
    assert!((5..=9).contains(&first), "one segment past W_max after {} RTTs: {past:?}", first + 1);
    // then each RTT adds about the distance already travelled (the window doubles its
    // distance from W_max), until the step reaches S_max = 32
    let (a, b) = (past[first + 2] as f64, past[first + 4] as f64);
    assert!(b >= 3.0 * a, "exponential past W_max: {past:?}");
}

#[test]
fn bic_is_reno_below_low_window() {
    let c = Conn::new("bic");
    c.start_in_ca(10);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 5);
}

// ---- Veno -------------------------------------------------------------------------------
fn veno_loss_at(rtt: u32) -> (u32, u32) {
    let c = Conn::new("veno");
    c.start_in_ca(100);
    c.round(20_000);
    c.round(rtt);
    c.round(rtt);
    let w = c.cwnd();
    c.enter_recovery();
    (w, c.ssthresh())
}

#[test]
fn veno_tells_random_from_congestive_loss_by_the_backlog() {
    // N = cwnd (RTT - BaseRTT)/RTT, beta = 3
    let (w, ss) = veno_loss_at(20_500); // N = 2.4
    assert_eq!(ss, w * 4 / 5, "random loss: 4/5");
    let (w, ss) = veno_loss_at(21_000); // N = 4.8
    assert_eq!(ss, w / 2, "congestive loss: 1/2");
}

#[test]
fn veno_judges_the_backlog_in_open_rounds_only() {
    // §II: N is the backlog of the flow's window in congestion avoidance. During a
    // recovery the sender sends little and the queue drains (RTT samples near BaseRTT):
    // that round says nothing about the next loss, which comes when the window has
    // refilled the queue; a loss right after the recovery is congestive
    let c = Conn::new("veno");
    c.start_in_ca(100);
    c.round(20_000);
    c.round(30_000); // N = 100 * 10/30 = 33: congestive
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 50);
    c.round(20_000); // a round in Recovery with the queue drained
    c.exit_reduction();
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w / 2, "a loss right after the recovery: congestive, 1/2");
}

#[test]
fn veno_grows_every_other_rtt_when_the_link_is_full() {
    let grow = |rtt: u32| {
        let c = Conn::new("veno");
        c.start_in_ca(100);
        c.round(20_000);
        c.round(rtt);
        let w = c.cwnd();
        for _ in 0..8 {
            c.round(rtt);
        }
        c.cwnd() - w
    };
    assert!((7..=9).contains(&grow(20_200)), "N < beta: +1 per RTT");
    assert!((3..=5).contains(&grow(21_000)), "N >= beta: +1 per 2 RTTs");
}

// ---- Scalable, exact ---------------------------------------------------------------------
#[test]
fn scalable_grows_one_segment_per_hundred_acked_and_cuts_an_eighth_rounded_up() {
    // Kelly 2003: a = 0.01 per ACK (one segment per 100 acked above cwnd 100), b = 0.125
    // of the window (rounded up: the cut is at least an eighth); at or below the legacy
    // window of 16, standard TCP (RFC 5681's floor(w/2))
    let c = Conn::new("scalable");
    c.start_in_ca(500);
    c.ack_segments(99, 100, 50_000);
    assert_eq!(c.cwnd(), 500, "not before 100 acked");
    c.ack_segments(1, 100, 50_000);
    assert_eq!(c.cwnd(), 501);
    for w in [16u32, 17, 23, 24, 25, 31, 32, 1000] {
        let c = Conn::new("scalable");
        c.start_in_ca(w);
        c.enter_recovery();
        let want = if w <= 16 { w / 2 } else { w - w.div_ceil(8) };
        assert_eq!(c.ssthresh(), want, "w {w}");
    }
}

// ---- Vegas, exact ------------------------------------------------------------------------
/// cwnd after a Vegas round (congestion avoidance, BaseRTT 20 ms) judged at cwnd `w`
/// whose every sample is `rtt` (`rtt_of` for each ACK)
fn vegas_judged(w: u32, rtt_of: impl FnMut(u32) -> u32) -> Conn {
    let c = Conn::new("vegas");
    c.start_in_ca(100);
    c.round(20_000);
    c.round_then(20_000, rtt_of, |c| c.set_cwnd(w));
    c
}

#[test]
fn vegas_thresholds_are_exact() {
    // §3.2: Diff < alpha = 1: +1; Diff > beta = 3: -1; else hold. Diff = cwnd (RTT -
    // BaseRTT)/RTT: 1 exactly at cwnd 101 and RTT 20.2 ms, 3 exactly at cwnd 103 and
    // 20.6 ms (both hold); 3.5 at cwnd 100 and 20.7254 ms (-1)
    assert_eq!(vegas_judged(101, |_| 20_200).cwnd(), 101, "Diff = alpha: hold");
    assert_eq!(vegas_judged(103, |_| 20_600).cwnd(), 103, "Diff = beta: hold");
    let c = vegas_judged(100, |_| 20_726);
    assert_eq!(c.cwnd(), 99, "Diff 3.5 > beta: -1");
    // (Linux's tcp_vegas: a decrease also lowers ssthresh to the window)
    assert_eq!(c.ssthresh(), 99);
}

#[test]
fn vegas_judges_a_round_only_with_two_rtt_samples() {
    // bpf/cc/vegas.bpf.c (as Linux's tcp_vegas): with fewer than 2 samples in a round
    // Vegas cannot judge and does Reno's step for the ACK that ends the round instead.
    // Samples of 23 ms (Diff 13 > beta): two of them are a -1; one is not
    let rtt = |k: u32| move |i: u32| if i < k { 23_000 } else { u32::MAX }; // -1: none
    assert_eq!(vegas_judged(100, rtt(2)).cwnd(), 99, "two samples: judged");
    assert_eq!(vegas_judged(100, rtt(1)).cwnd(), 100, "one sample: not judged");
    assert_eq!(vegas_judged(100, rtt(0)).cwnd(), 100, "no samples: not judged");
    // Reno's step: the round's last ACK counts one acked segment towards the next
    // increase, here the one that completes it
    let c = Conn::new("vegas");
    c.start_in_ca(100);
    c.round(20_000);
    let w = c.cwnd();
    c.round_then(20_000, |_| u32::MAX, |c| c.set(Field::CwndCnt, w as u64 - 1));
    assert_eq!(c.cwnd(), w + 1, "Reno's step completes a segment");
    // a judged round restarts that count (Vegas sets the window itself): a count left
    // one short before it does not complete a segment in a later sampleless round
    let c = Conn::new("vegas");
    c.start_in_ca(100);
    c.round(20_000);
    let w0 = c.cwnd();
    c.set(Field::CwndCnt, w0 as u64);
    c.round(20_000); // judged: Diff 0, +1
    let w = c.cwnd();
    assert_eq!(w, w0 + 1);
    c.round_with(20_000, |_| u32::MAX);
    assert_eq!(c.cwnd(), w, "the count restarted at the judged round");
    // ... but not while the application limits the flow (RFC 7661)
    let c = Conn::new("vegas");
    c.start_in_ca(100);
    c.round(20_000);
    let w = c.cwnd();
    c.round_then(20_000, |_| u32::MAX, |c| {
        c.set(Field::CwndCnt, w as u64 - 1);
        c.set_app_unlimited(false);
        c.set(Field::IsCwndLimited, 0);
    });
    assert_eq!(c.cwnd(), w, "no growth while application-limited");
}

#[test]
fn vegas_starts_a_new_round_after_an_idle_period() {
    // Linux's tcp_vegas: after an idle period the sender waits for a whole flight of new
    // data before judging; a round begun before the pause is not mixed with the one after
    // (here: 20 ms samples before it, 23 ms after: Diff 13 > beta, -1)
    // (CWND_RESTART, the restart of an idle window, likewise; another event, e.g. the
    // end of a CWR episode, does not start a round)
    for (ev, restart) in [(CA_EVENT_TX_START, true), (CA_EVENT_CWND_RESTART, true), (CA_EVENT_COMPLETE_CWR, false)] {
        let c = Conn::new("vegas");
        c.start_in_ca(100);
        c.round(20_000);
        c.ack_segments(20, 200, 20_000);
        advance_us(5_000_000);
        c.cwnd_event(ev);
        let w = c.cwnd();
        c.set(Field::PacketsOut, 0);
        c.round(23_000);
        c.round(23_000);
        if restart {
            assert!(c.cwnd() < w, "event {ev}: the rounds after the pause judged on their own: {w} -> {}", c.cwnd());
        } else {
            assert!(c.cwnd() >= w, "event {ev}: the round goes on: {w} -> {}", c.cwnd());
        }
    }
}

#[test]
fn vegas_slow_start_exit_never_goes_below_two_segments() {
    // a window of 4 whose RTT rose tenfold: Actual * BaseRTT + 1 = 1.4 -> the floor of 2
    let c = vegas_slow_start_round(20_000, 4, 200_000);
    assert_eq!((c.cwnd(), c.ssthresh()), (2, 2));
}

#[test]
fn vegas_a_diff_just_above_beta_decreases() {
    // §3.2: Diff > beta = 3: -1. cwnd 100, BaseRTT 20 ms, RTT 20.632 ms: Diff = 100 ·
    // 632/20632 = 3.063; RTT 20.62 ms: Diff = 100 · 620/20620 = 3.007, just above 3
    assert_eq!(vegas_judged(100, |_| 20_632).cwnd(), 99);
    assert_eq!(vegas_judged(100, |_| 20_620).cwnd(), 99);
    // and just below alpha = 1: cwnd 100, RTT 20.2 ms: Diff = 100 · 200/20200 = 0.990
    assert_eq!(vegas_judged(100, |_| 20_200).cwnd(), 101);
}

#[test]
fn vegas_leaves_slow_start_at_a_diff_just_above_gamma() {
    // §3.3: slow start ends when Diff > gamma = 1. cwnd 30, BaseRTT 20 ms, RTT 20.7 ms:
    // Diff = 30 · 700/20700 = 1.014
    let c = vegas_slow_start_round(20_000, 30, 20_700);
    let fit = 30 * 20_000 / 20_700 + 1; // 28.98 -> 29
    assert_eq!((c.cwnd(), c.ssthresh()), (fit, fit));
}

#[test]
fn vegas_base_rtt_is_the_smallest_rtt_reading() {
    // §3.2: BaseRTT is the minimum of all measured RTTs, so a reading can only lower it.
    // A reading of 0 us (below the clock's resolution) in a round of 21 ms: judged
    // against 20 ms (or less): Diff >= 100 · 1000/21000 = 4.8 > beta: -1
    assert_eq!(vegas_judged(100, |i| if i == 0 { 0 } else { 21_000 }).cwnd(), 99);
    // a reading of 1 us (the clock's resolution) is the new BaseRTT: a later round of
    // 20 ms has Diff = cwnd · (20000 - 1)/20000, nearly the whole window: -1
    let c = Conn::new("vegas");
    c.start_in_ca(100);
    c.round(20_000);
    c.round_with(20_000, |i| if i == 0 { 1 } else { 20_000 });
    let w = c.cwnd();
    c.round(20_000);
    assert_eq!(c.cwnd(), w - 1);
}

#[test]
fn vegas_a_judged_round_restarts_reno_s_count_at_zero() {
    // bpf/cc/vegas.bpf.c: a round Vegas cannot judge does Reno's step (RFC 5681: one
    // segment per cwnd acknowledged) for its last ACK; a judged round sets the window
    // itself and restarts that count. At cwnd 101 after a judged +1, sampleless rounds
    // count 1 each: the window grows at the 101st, not before
    let c = vegas_judged(100, |_| 20_000);
    assert_eq!(c.cwnd(), 101, "Diff 0 < alpha: +1");
    for k in 1..=100 {
        c.round_with(20_000, |_| u32::MAX);
        assert_eq!(c.cwnd(), 101, "sampleless round {k}");
    }
    c.round_with(20_000, |_| u32::MAX);
    assert_eq!(c.cwnd(), 102, "the 101st sampleless round completes a segment");
}

// ---- Veno, exact -------------------------------------------------------------------------
/// ssthresh at a loss after a round judged at cwnd `w` with samples `rtt_of(i)` (BaseRTT
/// 20 ms); and the window at the loss
fn veno_loss_after(w: u32, rtt_of: impl FnMut(u32) -> u32) -> (u32, u32) {
    let c = Conn::new("veno");
    c.start_in_ca(100);
    c.round(20_000);
    c.round_then(20_000, rtt_of, |c| c.set_cwnd(w));
    let w = c.cwnd();
    c.enter_recovery();
    (w, c.ssthresh())
}

#[test]
fn veno_s_beta_boundary_is_exact() {
    // §II-B: N >= beta = 3 segments is congestive (1/2), below random (4/5). N = cwnd (RTT
    // - BaseRTT)/RTT = 3 exactly at cwnd 103 and 20.6 ms; 3.5 at cwnd 100 and 20.7254 ms
    let (w, ss) = veno_loss_after(103, |_| 20_600);
    assert_eq!(ss, w / 2, "N = 3: congestive");
    let (w, ss) = veno_loss_after(100, |_| 20_726);
    assert_eq!(ss, w / 2, "N = 3.5: congestive");
    let (w, ss) = veno_loss_after(100, |_| 20_500);
    assert_eq!(ss, w * 4 / 5, "N = 2.4: random");
}

#[test]
fn veno_takes_the_backlog_from_the_round_s_smallest_rtt() {
    // §II-A, Vegas' estimate once per round from its minimum RTT: one early ACK at
    // BaseRTT in a round of 21 ms samples says there is no queue (N = 0: random loss)
    let (w, ss) = veno_loss_after(100, |i| if i == 3 { 20_000 } else { 21_000 });
    assert_eq!(ss, w * 4 / 5);
    // and a round without RTT samples keeps the last round's verdict (random here)
    let c = Conn::new("veno");
    c.start_in_ca(100);
    c.round(20_000);
    c.round(20_500); // N = 2.4
    c.round_with(20_000, |_| u32::MAX);
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w * 4 / 5);
}

#[test]
fn veno_treats_a_loss_before_any_backlog_measurement_as_random() {
    // N is unknown (0) before the first judged round: N < beta
    let c = Conn::new("veno");
    c.start_in_ca(100);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 80);
}

#[test]
fn veno_s_base_rtt_is_the_smallest_rtt_reading() {
    // §II-A: BaseRTT is the minimum of all measured RTTs, so a reading can only lower it.
    // A reading of 0 us (below the clock's resolution) in a round of 21 ms: N is judged
    // against 20 ms (or less): N >= 100 · 1000/21000 = 4.8 >= beta: congestive, 1/2
    let (w, ss) = veno_loss_after(100, |i| if i == 0 { 0 } else { 21_000 });
    assert_eq!(ss, w / 2);
    // a reading of 1 us (the clock's resolution) is the new BaseRTT: a later round of
    // 20 ms has N = cwnd · (20000 - 1)/20000, nearly the whole window: congestive
    let c = Conn::new("veno");
    c.start_in_ca(100);
    c.round(20_000);
    c.round_with(20_000, |i| if i == 0 { 1 } else { 20_000 });
    c.round(20_000);
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w / 2);
}

// ---- Hybla, exact ------------------------------------------------------------------------
#[test]
fn hybla_slow_start_adds_two_to_the_rho_minus_one_per_ack() {
    // §3: slow start cwnd += 2^rho - 1 per acked segment, for fractional rho too (rho in
    // 1/1024, rounded down; 2^rho from a Taylor series to 0.2 %; the fraction carried
    // between ACKs)
    for rtt in [31_250u32, 37_500, 43_750, 49_999, 60_000] {
        let rho = (rtt as u64 * 1024 / 25_000) as f64 / 1024.0;
        let c = Conn::new("hybla");
        c.set_ssthresh(1_000_000);
        let w = c.cwnd();
        c.set_app_unlimited(false);
        c.set(Field::MaxPacketsOut, 1_000_000);
        for _ in 0..1000 {
            c.set(Field::PacketsOut, 1_000);
            c.set(Field::SndNxt, c.get(Field::SndUna) + 1_000 * 1448);
            c.ack(Ack::new(1, rtt));
        }
        let want = 1000.0 * (2f64.powf(rho) - 1.0);
        let got = (c.cwnd() - w) as f64;
        assert!((got - want).abs() <= 0.002 * 1000.0 * 2f64.powf(rho) + 1.0,
                "rho {rho}: +{got} in 1000 ACKs, want {want:.1}");
    }
}

#[test]
fn hybla_slow_start_counts_acked_segments() {
    // §3: the increase is per acked segment: a delayed ACK of two segments adds
    // 2 (2^rho - 1) (rho 1.5: 3.66)
    let c = Conn::new("hybla");
    c.set_ssthresh(1_000_000);
    c.set_app_unlimited(false);
    c.set(Field::MaxPacketsOut, 1_000_000);
    let w = c.cwnd();
    for _ in 0..500 {
        c.set(Field::PacketsOut, 1_000);
        c.set(Field::SndNxt, c.get(Field::SndUna) + 1_000 * 1448);
        c.ack(Ack::new(2, 37_500));
    }
    let want = 500.0 * 2.0 * (2f64.powf(1.5) - 1.0);
    let got = (c.cwnd() - w) as f64;
    assert!((got - want).abs() <= 0.002 * 1000.0 * 2f64.powf(1.5) + 1.0, "+{got}, want {want:.1}");
}

#[test]
fn hybla_slow_start_stops_at_ssthresh() {
    // RFC 5681 §3.1 (Hybla keeps it): slow start ends at ssthresh, however large the
    // per-ACK increase (rho 8: 255 per ACK)
    let c = Conn::new("hybla");
    c.set_ssthresh(300);
    c.ack_segments(1, 1000, 200_000);
    assert_eq!(c.cwnd(), 265);
    c.ack_segments(1, 1000, 200_000);
    assert_eq!(c.cwnd(), 300);
}

#[test]
fn hybla_s_rho_comes_from_the_smallest_rtt() {
    // bpf/cc/hybla.bpf.c: rho from the smallest RTT seen; a later, longer sample does not
    // raise it (RTT 200 ms: rho 8, 64 segments per RTT in congestion avoidance)
    let c = Conn::new("hybla");
    c.ack_segments(1, 1000, 200_000);
    c.start_in_ca(2000);
    c.ack_segments(1, 100, 400_000);
    let w = c.cwnd();
    c.ack_segments(2000, 100, 400_000);
    assert!((c.cwnd() as i64 - (w as i64 + 64)).abs() <= 1, "cwnd {} from {w}", c.cwnd());
}

#[test]
fn hybla_is_reno_until_it_has_an_rtt_sample() {
    // rho = 1 until measured: ACKs without an RTT sample grow slow start by one each
    let c = Conn::new("hybla");
    c.set_ssthresh(1000);
    for _ in 0..10 {
        advance_us(100);
        c.ack(Ack { segs: 1, rtt_us: -1, ece: false, ce_segs: 0 });
    }
    assert_eq!(c.cwnd(), 20);
}

/// `n` slow-start ACKs of `segs` segments each carrying `rtt_us`, the sender
/// cwnd-limited throughout (1000 segments out whatever the window)
fn hybla_slow_start_acks(c: &Conn, n: u32, segs: u32, rtt_us: u32) {
    c.set_app_unlimited(false);
    c.set(Field::MaxPacketsOut, 1_000_000);
    for _ in 0..n {
        c.set(Field::PacketsOut, 1_000);
        c.set(Field::SndNxt, c.get(Field::SndUna) + 1_000 * 1448);
        c.ack(Ack::new(segs, rtt_us));
    }
}

#[test]
fn hybla_slow_start_at_an_integer_rho_adds_exactly_two_to_the_rho_minus_one() {
    // §3: cwnd += 2^rho - 1 per acked segment; for an integer rho that is an integer, and
    // the fixed point (1/1024) represents it exactly: no fraction to carry, no
    // approximation of 2^rho. rho = 1 (RTT = RTT0 = 25 ms): one per segment, Reno's slow
    // start, over 2048 ACKs (where an error of 1/1024 per ACK would show)
    let c = Conn::new("hybla");
    c.set_ssthresh(1_000_000);
    let w = c.cwnd();
    hybla_slow_start_acks(&c, 2048, 1, 25_000);
    assert_eq!(c.cwnd(), w + 2048);
    // rho = 2 (50 ms): 3 per segment, here on ACKs of two segments
    let c = Conn::new("hybla");
    c.set_ssthresh(1_000_000);
    let w = c.cwnd();
    hybla_slow_start_acks(&c, 1024, 2, 50_000);
    assert_eq!(c.cwnd(), w + 1024 * 2 * 3);
    // rho = 16 (400 ms), the largest rho (bpf/cc/hybla.bpf.c): 2^16 - 1 for one segment
    let c = Conn::new("hybla");
    c.set_ssthresh(1_000_000);
    let w = c.cwnd();
    hybla_slow_start_acks(&c, 1, 1, 400_000);
    assert_eq!(c.cwnd(), w + 65_535);
}

#[test]
fn hybla_congestion_avoidance_at_rho_one_is_exactly_reno() {
    // §3: rho = max(RTT / RTT0, 1) (below RTT0 a flow is not slowed down), and rho = 1
    // until an RTT is measured; cwnd += rho^2 / cwnd per acked segment is then Reno's
    // 1 / cwnd: one segment after exactly cwnd acked segments, not one ACK earlier
    for rtt in [10_000u32, u32::MAX] {
        let c = Conn::new("hybla");
        c.start_in_ca(600);
        c.ack_segments(599, 100, rtt);
        assert_eq!(c.cwnd(), 600, "RTT sample {}", rtt as i32);
        c.ack_segments(1, 100, rtt);
        assert_eq!(c.cwnd(), 601, "RTT sample {}", rtt as i32);
    }
}

#[test]
fn hybla_counts_congestion_avoidance_anew_after_a_loss() {
    // the acked segments of congestion avoidance are counted from the reduction, as after
    // any window reduction (tcp_init_cwnd_reduction: snd_cwnd_cnt = 0): credit of the
    // window before the loss does not grow the halved one (rho = 1, Reno's 1 / cwnd)
    let c = Conn::new("hybla");
    c.start_in_ca(100);
    c.ack_segments(99, 100, 10_000); // 99 of the 100 segments of the next increase
    assert_eq!(c.cwnd(), 100);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 50);
    c.exit_reduction();
    c.start_in_ca(50);
    c.ack_segments(49, 100, 10_000);
    assert_eq!(c.cwnd(), 50, "not before 50 segments acked after the loss");
    c.ack_segments(1, 100, 10_000);
    assert_eq!(c.cwnd(), 51);
}

#[test]
fn hybla_s_rho_is_never_above_that_of_the_smallest_rtt_sample() {
    // bpf/cc/hybla.bpf.c: rho from the smallest RTT seen. A 1 us sample is the smallest
    // the kernel's clock gives: rho = max(1 us / 25 ms, 1) = 1 from then on, Reno's
    // +1 per cwnd acked however long later RTTs are
    let c = Conn::new("hybla");
    c.ack_segments(1, 1000, 1);
    c.ack_segments(1, 1000, 200_000);
    c.start_in_ca(2000);
    c.ack_segments(2000, 100, 200_000);
    assert_eq!(c.cwnd(), 2001, "rho 1");
    // a sample of 0 us (below the clock's resolution), read as no sample or as an RTT of
    // 0 (rho 1), leaves rho at most that of the 200 ms minimum (8, 64 per RTT): a longer
    // sample after it (400 ms, rho 16, 256 per RTT) does not raise it
    let c = Conn::new("hybla");
    c.ack_segments(1, 1000, 200_000);
    c.ack_segments(1, 1000, 0);
    c.ack_segments(1, 1000, 400_000);
    c.start_in_ca(2000);
    c.ack_segments(2000, 100, 400_000);
    assert!(c.cwnd() <= 2000 + 64 + 1, "cwnd {}: rho above 8", c.cwnd());
}

#[test]
fn hybla_congestion_avoidance_adds_rho_squared_over_cwnd_to_a_1024th() {
    // §3: cwnd += rho^2 / cwnd per acked segment, rho = RTT / RTT0 and rho^2 in 1/1024
    // (each rounded down): one segment after exactly ceil(1024 cwnd / (1024 rho^2)) ACKs,
    // counted from nothing on a new connection and again after a loss. RTT 30.006 ms:
    // rho = 1229/1024, rho^2 = 1475/1024; the window is one where a single 1/1024 carried
    // in would make the count one ACK shorter (1024 cwnd = 1 mod 1475)
    let rtt = 30_006u32;
    let rho = rtt as u64 * 1024 / 25_000;
    let inc = rho * rho >> 10;
    assert_eq!((rho, inc), (1229, 1475));
    let w = (50..).find(|w| w * 1024 % inc == 1).unwrap();
    let want = (w * 1024).div_ceil(inc) as u32;
    let acks_until_growth = |c: &Conn| {
        let w0 = c.cwnd();
        (1..=100_000).find(|_| {
            c.ack_segments(1, 100, rtt);
            c.cwnd() > w0
        }).unwrap()
    };
    let c = Conn::new("hybla");
    c.start_in_ca(w as u32);
    assert_eq!(acks_until_growth(&c), want, "new connection, cwnd {w}");
    let c = Conn::new("hybla");
    c.start_in_ca(100);
    c.ack_segments(70, 100, rtt); // a fraction of the next segment carried
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(w as u32);
    assert_eq!(acks_until_growth(&c), want, "after a loss, cwnd {w}");
    // RTT0 is 25 ms exactly: 30.004 ms is rho = 1228.96/1024, rounded down 1228, rho^2 =
    // 1472/1024: at cwnd 1000, ceil(1024000 / 1472) = 696 ACKs (rho 1229: 695)
    let rtt = 30_004u32;
    let rho = rtt as u64 * 1024 / 25_000;
    assert_eq!((rho, rho * rho >> 10), (1228, 1472));
    let c = Conn::new("hybla");
    c.start_in_ca(1000);
    let w0 = c.cwnd();
    let n = (1..=100_000).find(|_| {
        c.ack_segments(1, 100, rtt);
        c.cwnd() > w0
    });
    assert_eq!(n, Some(696));
}

#[test]
fn hybla_slow_start_after_an_idle_restart_adds_two_to_the_rho_minus_one() {
    // an idle restart (RFC 5681 §4.1: the kernel lowers cwnd below ssthresh) is slow
    // start again, §3: 2^rho - 1 per acked segment (rho 1: one). What congestion
    // avoidance had counted towards its next segment (999 of the 1000 acks of a window of
    // 1000) is not slow-start growth
    let c = Conn::new("hybla");
    c.start_in_ca(1000);
    c.ack_segments(999, 10, 10_000);
    assert_eq!(c.cwnd(), 1000);
    c.cwnd_event(CA_EVENT_CWND_RESTART);
    c.set_cwnd(10);
    c.ack_segments(1, 10, 10_000);
    assert_eq!(c.cwnd(), 11, "one acked segment in slow start at rho 1");
    c.ack_segments(9, 10, 10_000);
    assert_eq!(c.cwnd(), 20);
}

// ---- BIC, exact --------------------------------------------------------------------------
/// growth of a BIC window over `cwnd` acked segments (about one RTT)
fn bic_rtt_growth(c: &Conn) -> f64 {
    let w = c.cwnd();
    c.ack_segments(w, 100, 50_000);
    (c.cwnd() - w) as f64
}

#[test]
fn bic_is_reno_below_fourteen_segments_and_bic_from_there() {
    // §3: low_window = 14: below, standard TCP (+1 per RTT, cut 1/2); from 14 on, BIC
    // (here far below W_max = 100: +S_max = 32 per RTT, cut 1/8)
    for (w, bic) in [(13u32, false), (14, true)] {
        let c = Conn::new("bic");
        c.start_in_ca(100);
        c.enter_recovery(); // W_max = 100
        c.exit_reduction();
        c.start_in_ca(w);
        let g = bic_rtt_growth(&c);
        if bic {
            assert!(g >= 10.0, "cwnd {w}: +{g} per RTT");
        } else {
            assert_eq!(g, 1.0, "cwnd {w}");
        }
        let c = Conn::new("bic");
        c.start_in_ca(w);
        c.enter_recovery();
        assert_eq!(c.ssthresh(), if bic { w - w / 8 } else { w / 2 }, "cwnd {w}");
    }
}

#[test]
fn bic_fast_convergence_lowers_w_max_only_below_the_last_one() {
    // §3 fast convergence: a loss below W_max sets W_max = cwnd (2 - beta)/2 = 15/16 cwnd;
    // at or above it, W_max = cwnd. Seen in the next RTT's binary-search step (W_max -
    // cwnd)/2. Loss at 400, then at 320 < 400: W_max 300, cwnd 280, step 10
    let c = Conn::new("bic");
    c.start_in_ca(400);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(320);
    c.enter_recovery();
    c.exit_reduction();
    let g = bic_rtt_growth(&c);
    assert!((g - 10.0).abs() <= 1.0, "+{g} per RTT, want (300 - 280)/2");
    // a loss exactly at W_max (400): W_max stays 400, cwnd 350, step 25
    let c = Conn::new("bic");
    c.start_in_ca(400);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(400);
    c.enter_recovery();
    c.exit_reduction();
    let g = bic_rtt_growth(&c);
    assert!((g - 25.0).abs() <= 1.0, "+{g} per RTT, want (400 - 350)/2");
}

#[test]
fn bic_starts_its_search_over_after_a_time_out() {
    // bpf/cc/bic.bpf.c: after an RTO W_max is forgotten: from ssthresh on the window
    // probes upward at S_max = 32 per RTT, not by the binary search towards the old
    // W_max (400: (400 - 350)/2 = 25)
    let c = Conn::new("bic");
    c.start_in_ca(400);
    c.enter_loss();
    c.exit_reduction();
    c.start_in_ca(350);
    // (32 per RTT spread over the ACKs of a growing window: a little less over cwnd ACKs)
    let g = bic_rtt_growth(&c);
    assert!((29.0..=32.0).contains(&g), "+{g} per RTT after an RTO");
}

#[test]
fn bic_recomputes_its_step_at_a_loss() {
    // the per-RTT increase is fixed at the start of a round from the window then; a loss
    // changes both window and W_max, so the next RTT's step is the new binary-search
    // step: past W_max at 32 per RTT, then a loss at 400: W_max 400, cwnd 350, step 25
    let c = Conn::new("bic");
    c.start_in_ca(200);
    c.enter_recovery(); // W_max 200
    c.exit_reduction();
    c.start_in_ca(300); // far past W_max: max probing at S_max
    bic_rtt_growth(&c);
    c.ack_segments(7, 100, 50_000); // into the next round
    c.set_cwnd(400);
    c.enter_recovery();
    c.exit_reduction();
    let g = bic_rtt_growth(&c);
    assert!((g - 25.0).abs() <= 1.0, "+{g} per RTT after the loss, want 25");
}

/// ACKs of one segment each until the window grows: how many it took
fn bic_acks_to_grow(c: &Conn) -> u32 {
    let w = c.cwnd();
    for k in 1..=1000 {
        advance_us(100);
        c.ack(Ack::new(1, 50_000));
        if c.cwnd() != w {
            return k;
        }
    }
    panic!("no growth from {w} in 1000 ACKs");
}

#[test]
fn bic_probes_from_w_max_zero_before_a_loss_and_after_a_time_out() {
    // bpf/cc/bic.bpf.c: W_max is the window at the last loss; before any loss, and after
    // an RTO (the search starts over), there is none (0): cwnd >= W_max, max probing with
    // inc = min(cwnd - 0, S_max). At cwnd 20 that is 20 segments per RTT, 20/20 = one
    // segment at the round's first ACK
    let c = Conn::new("bic");
    c.start_in_ca(20);
    assert_eq!(bic_acks_to_grow(&c), 1, "before any loss");
    let c = Conn::new("bic");
    c.start_in_ca(400);
    c.enter_loss();
    c.exit_reduction();
    c.start_in_ca(20);
    assert_eq!(bic_acks_to_grow(&c), 1, "after an RTO");
}

#[test]
fn bic_restarts_at_the_reduced_window_without_a_fraction() {
    // §3: a loss sets cwnd = (1 - beta) cwnd: the window after it starts at a whole
    // (1 - beta) cwnd, without the fraction of a segment the window had grown by before.
    // Here 12 ACKs of max probing at S_max (32 per RTT at cwnd 400: 12 · 32/400 = 0.96
    // segment) before a loss at 400: W_max 400, cwnd 350, binary-search step (400 -
    // 350)/2 = 25 per RTT, 25/350 per ACK: the first segment at ACK 350/25 = 14
    let c = Conn::new("bic");
    c.start_in_ca(400);
    c.ack_segments(12, 100, 50_000);
    assert_eq!(c.cwnd(), 400);
    c.enter_recovery();
    c.exit_reduction();
    assert_eq!(c.cwnd(), 350);
    assert_eq!(bic_acks_to_grow(&c), 14);
    // likewise after a repeated time-out, for which the kernel does not ask the ssthresh
    // op again (tcp_enter_loss: already in Loss, the retransmission timed out again),
    // only the state change: the fraction grown in Loss (SACKs kept the window growing
    // past ssthresh) is gone; at cwnd 20 the first ACK adds one segment, not more
    let c = Conn::new("bic");
    c.start_in_ca(400);
    c.enter_loss();
    c.start_in_ca(300);
    c.ack_segments(9, 100, 50_000); // 9 · 32/300 = 0.96 segment
    assert_eq!(c.cwnd(), 300);
    c.set_cwnd(1);
    c.set(Field::PacketsOut, 0);
    c.set_ca_state(LOSS);
    c.exit_reduction();
    c.start_in_ca(20);
    c.ack(Ack::new(1, 50_000));
    assert_eq!(c.cwnd(), 21);
}

/// The windows after each of `acks` ACKs of one segment in a round of BIC whose increase
/// is `inc_fp`/1024 segments per RTT, spread over the round's ACKs (inc / cwnd per acked
/// segment, the remainder carried in 1/1024 segment-acks as bpf/cc/bic.bpf.c counts it),
/// from a window `w` and no fraction
fn bic_round_windows(mut w: u32, inc_fp: u64, acks: u32) -> Vec<u32> {
    let mut acc = 0u64;
    (0..acks)
        .map(|_| {
            acc += inc_fp;
            let unit = (w as u64) << 10;
            w += (acc / unit) as u32;
            acc %= unit;
            w
        })
        .collect()
}

#[test]
fn bic_a_repeated_time_out_starts_the_search_over_from_the_new_window() {
    // after an RTO the search starts over (bpf/cc/bic.bpf.c): W_max is forgotten (0), and
    // from ssthresh on the step is the rule at that window: max probing from W_max 0,
    // min(cwnd - 0, S_max) per RTT. A repeated time-out (the retransmission timed out
    // again: tcp_enter_loss asks no ssthresh op, only the state change) starts it over as
    // well; a step computed in Loss at a larger window must not outlive it.
    // RTO at 18: ssthresh 18 - 18/8 = 16. In Loss the window climbs back (slow start to
    // 16, then max probing) past S_max = 32, where the step is 32 per RTT
    let c = Conn::new("bic");
    c.start_in_ca(18);
    c.enter_loss();
    assert_eq!((c.cwnd(), c.ssthresh()), (1, 16));
    c.ack_segments(15, 100, 50_000);
    assert_eq!(c.cwnd(), 16, "slow start up to ssthresh");
    c.rounds_until(33, 50_000, 10);
    c.ack_segments(3, 100, 50_000); // into a round whose step is S_max
    let w = c.cwnd();
    assert!(w > 32, "the step was computed at {w}");
    // the retransmission times out again, mid-round
    c.set_cwnd(1);
    c.set(Field::PacketsOut, 0);
    c.set_ca_state(LOSS);
    c.ack_segments(15, 100, 50_000);
    assert_eq!((c.cwnd(), c.ssthresh()), (16, 16), "slow start up to ssthresh");
    // from 16 on: min(16, 32) = 16 segments per RTT, one segment at the first ACK, not
    // the 32/16 = 2 of the old step
    let mut got = vec![];
    for _ in 0..10 {
        c.ack(Ack::new(1, 50_000));
        got.push(c.cwnd());
    }
    assert_eq!(got, bic_round_windows(16, 16 << 10, 10), "after the repeated time-out");
    // the same as a connection that never saw a loss (W_max 0) at that window
    let fresh = Conn::new("bic");
    fresh.start_in_ca(16);
    let mut want = vec![];
    for _ in 0..10 {
        fresh.ack(Ack::new(1, 50_000));
        want.push(fresh.cwnd());
    }
    assert_eq!(got, want, "a fresh connection at 16");
}

/// `n` ACKs of one segment each; the windows after each
fn bic_windows_of_acks(c: &Conn, n: u32) -> Vec<u32> {
    (0..n)
        .map(|_| {
            advance_us(100);
            c.ack(Ack::new(1, 50_000));
            c.cwnd()
        })
        .collect()
}

#[test]
fn bic_the_first_round_after_an_idle_restart_is_the_search_step_of_the_new_window() {
    // §3: the step of a round is (W_max - cwnd)/2 from the window at the round's start,
    // spread over its ACKs. A loss at 200 (W_max 200, cwnd 175); the window is at 190
    // (step (200 - 190)/2 = 5 per RTT, 5/190 per ACK: a segment at ACK 38), and has
    // counted 37 more ACKs (37/38 of a segment) when the application stops sending; the
    // flight is acknowledged without growth (not cwnd-limited, RFC 7661), the connection
    // sits idle, and RFC 5681 §4.1's restart (tcp_cwnd_restart: ssthresh max(175, 3/4 ·
    // 191) = 175, cwnd halved for one RTO of idle: 95; no loss, no ssthresh op) is
    // followed by slow start back to 175. From there the round's step is the rule at 175,
    // (200 - 175)/2 = 12.5 per RTT from no fraction: the fraction counted at 191 is
    // neither part of the window the step is computed from nor spent at 175
    let c = Conn::new("bic");
    c.start_in_ca(200);
    c.enter_recovery();
    c.exit_reduction();
    assert_eq!((c.cwnd(), c.ssthresh()), (175, 175));
    c.set_cwnd(190);
    let w = bic_windows_of_acks(&c, 38 + 37);
    assert_eq!((w[36], w[37], w[74]), (190, 191, 191), "5/190 per ACK");
    c.set_app_unlimited(false);
    c.set(Field::IsCwndLimited, 0);
    let rest = c.get(Field::PacketsOut) as u32;
    c.ack_segments(rest, 100, 50_000);
    assert_eq!((c.cwnd(), c.get(Field::PacketsOut)), (191, 0), "the flight acknowledged, no growth");
    advance_us(1_000_000);
    c.cwnd_event(CA_EVENT_CWND_RESTART);
    c.set_cwnd(95);
    c.set_app_unlimited(true);
    c.ack_segments(80, 100, 50_000);
    assert_eq!((c.cwnd(), c.ssthresh()), (175, 175), "slow start up to ssthresh");
    let got = bic_windows_of_acks(&c, 100);
    let want = bic_round_windows(175, (200 - 175) << 10 >> 1, 100);
    assert_eq!(want[13], 176, "the first segment at ACK 175/12.5 = 14");
    assert_eq!(got, want, "the first round after the restart");
    // the same as a connection at that window and W_max that never went idle
    let fresh = Conn::new("bic");
    fresh.start_in_ca(200);
    fresh.enter_recovery();
    fresh.exit_reduction();
    assert_eq!(bic_windows_of_acks(&fresh, 100), want, "without the idle period");
}

#[test]
fn cubic_fast_convergence_only_below_the_last_w_max() {
    // RFC 9438 §4.7: W_max is lowered only for a loss below it; one exactly at W_max
    // keeps W_max = cwnd, so the next epoch's plateau (t = K) is at 200, not 170
    let c = Conn::new("cubic");
    c.start_in_ca(200);
    c.round(100_000);
    c.set_cwnd(200);
    c.enter_recovery();
    c.exit_reduction();
    c.set_cwnd(200);
    c.enter_recovery(); // exactly at W_max
    c.exit_reduction();
    let k = (200.0f64 * 0.3 / 0.4).cbrt();
    let t0 = now_us();
    while ((now_us() - t0) as f64) / 1e6 < k {
        c.round(100_000);
    }
    assert!(c.cwnd().abs_diff(200) <= 5, "cwnd {} at K, W_max 200", c.cwnd());
}

#[test]
fn cubic_the_first_epoch_starts_when_slow_start_ends() {
    // RFC 9438 §4.2: t counts from the start of congestion avoidance; slow start (here
    // 10 -> 100 over 2 s at RTT 500 ms) is not part of the epoch, which then starts at
    // the window it reached: W = 100 + C t^3
    let c = Conn::new("cubic");
    c.set_ssthresh(100);
    c.rounds_until(100, 500_000, 1000);
    let t0 = now_us();
    while now_us() - t0 < 6_000_000 {
        c.round(500_000);
    }
    let t = (now_us() - t0) as f64 / 1e6;
    let w = |t: f64| 100.0 + 0.4 * t.powi(3);
    let got = c.cwnd() as f64;
    assert!(got >= w(t - 0.5) - 2.0 && got <= w(t + 0.5) + 2.0,
            "t {t:.2}: cwnd {got}, W {:.1} .. {:.1}", w(t - 0.5), w(t + 0.5));
}

#[test]
fn cubic_reno_friendly_growth_counts_acked_segments() {
    // RFC 9438 §4.3: W_est += alpha_cubic * segments_acked / cwnd: with delayed ACKs (two
    // segments each) the same 0.53 per RTT
    let c = cubic_epoch(100, 1_000, 0.0);
    let w = c.cwnd();
    for _ in 0..30 {
        c.transmit();
        let n = (c.get(Field::PacketsOut) / 2).max(1) as u32;
        for _ in 0..n {
            advance_us((1_000 / n).max(1) as u64);
            c.ack(Ack::new(2, 1_000));
        }
    }
    let g = c.cwnd() - w;
    assert!(g.abs_diff(16) <= 2, "+{g} in 30 RTTs of delayed ACKs, want 0.53 * 30");
}

#[test]
fn cubic_without_a_loss_yet_the_reno_friendly_estimate_grows_one_segment_per_rtt() {
    // RFC 9438 §4.10: congestion avoidance reached without a loss (W_max undefined) sets
    // cwnd_prior = cwnd, so W_est >= cwnd_prior from the start and alpha_cubic = 1 (§4.3):
    // a new flow's first epoch at 70 (RTT 1 ms: the cubic curve is flat) grows by one
    // segment per RTT, 30 in 30 RTTs
    let c = Conn::new("cubic");
    c.start_in_ca(70);
    for _ in 0..30 {
        c.round(1_000);
    }
    assert!((c.cwnd() - 70).abs_diff(30) <= 2, "first epoch: +{} in 30 RTTs", c.cwnd() - 70);
}

#[test]
fn cubic_catches_up_with_the_reno_friendly_estimate() {
    // RFC 9438 §4.3: when W_est > cwnd, cwnd grows by (W_est - cwnd)/cwnd per ACK: a window
    // held at 70 for 20 RTTs (W_est 70 + 0.53 * 20 = 80.6, RTT 1 ms) closes most of the gap
    // of 10 in the next RTT (the gap shrinks as cwnd grows: 10 (1 - 1/e) ~ 6.5)
    let c = cubic_epoch(100, 1_000, 0.0);
    for _ in 0..20 {
        c.set_cwnd(70);
        c.round(1_000);
    }
    c.set_cwnd(70);
    c.set(Field::CwndCnt, 0);
    let n = c.next_round_acks();
    c.round(1_000);
    let g = c.cwnd() - 70;
    assert!((5..=9).contains(&g), "+{g} in {n} ACKs, want about 6.5");
}

#[test]
fn cubic_below_the_cap_the_increase_is_target_minus_cwnd_per_rtt() {
    // RFC 9438 §4.2: cwnd += (target - cwnd)/cwnd per ACK: held at 200 until W_cubic(t +
    // RTT) = 260 (1.3 cwnd, below the 1.5 cap): one segment per 200/60 -> 3 ACKs
    let c = Conn::new("cubic");
    c.start_in_ca(200);
    c.round(500_000);
    c.set_cwnd(200);
    c.enter_recovery();
    c.exit_reduction();
    let k = (200.0f64 * 0.3 / 0.4).cbrt();
    let t_hold = k + (60.0f64 / 0.4).cbrt() - 0.5; // W_cubic(t + 0.5) = 260
    let t0 = now_us();
    c.round(500_000); // the epoch starts at 140 (W_max 200, K 5.3 s)
    while ((now_us() - t0) as f64) / 1e6 < t_hold - 0.5 {
        c.set_cwnd(200);
        c.round(500_000);
    }
    set_now_us(t0 + (t_hold * 1e6) as u64);
    c.set_cwnd(200);
    c.set(Field::CwndCnt, 0);
    let mut seen = vec![];
    for _ in 0..=12 {
        seen.push(c.cwnd() - 200);
        c.ack(Ack::new(1, 500_000));
    }
    let want: Vec<u32> = (0..=12).map(|i| i / 3).collect();
    assert_eq!(seen, want);
}
