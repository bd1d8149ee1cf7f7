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
    let mut rounds = 0;
    while c.cwnd() < 100 {
        c.round(50_000);
        rounds += 1;
        assert!(rounds < 30, "binary search did not reach W_max: {}", c.cwnd());
    }
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
