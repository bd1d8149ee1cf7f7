//! cca_cubic (bpf/cc/cubic.bpf.c): the default variant against the rules of Linux 6.12's
//! tcp_cubic with HyStart (also replayed call by call against it: tests/replay.rs), the
//! paper variant ("cubic:paper") against RFC 9438 (CUBIC) and RFC 9406 (HyStart++).
use ccarena_cc_harness::*;

// ---- Linux's CUBIC ------------------------------------------------------------------------

/// struct cubic of the default variant, read from icsk_ca_priv
#[derive(Debug)]
#[allow(dead_code)]
struct LinuxCubic {
    cnt: u32,
    w_max: u32,
    last_cwnd: u32,
    last_time: u32,
    origin: u32,
    k: u32,
    delay_min: u32,
    epoch_start: u32,
    ack_cnt: u32,
    tcp_cwnd: u32,
    sample_cnt: u8,
    found: u8,
    round_start: u32,
    end_seq: u32,
    curr_rtt: u32,
}

fn cubic_state(c: &Conn) -> LinuxCubic {
    let p = c.private();
    let w = |o: usize| u32::from_le_bytes(p[o..o + 4].try_into().unwrap());
    LinuxCubic {
        cnt: w(0), w_max: w(4), last_cwnd: w(8), last_time: w(12), origin: w(16), k: w(20),
        delay_min: w(24), epoch_start: w(28), ack_cnt: w(32), tcp_cwnd: w(36), sample_cnt: p[40],
        found: p[41], round_start: w(44), end_seq: w(48), curr_rtt: w(56),
    }
}

/// one ACK of one segment in congestion avoidance, `gap_us` after the last
fn ca_ack(c: &Conn, gap_us: u64, rtt: i32) {
    c.transmit();
    advance_us(gap_us);
    c.ack(Ack { segs: 1, rtt_us: rtt, ece: false, ce_segs: 0 });
}

#[test]
fn linux_cubic_cuts_to_717_1024_and_fast_convergence_keeps_1741_2048() {
    let c = Conn::new("cubic");
    c.start_in_ca(100);
    c.enter_recovery();
    assert_eq!((c.ssthresh(), cubic_state(&c).w_max), (70, 100), "100 x 717 / 1024 = 70.02");
    c.exit_reduction();
    c.start_in_ca(80);
    c.enter_recovery();
    // 80 x 717 / 1024 = 56.02; below W_max: 80 x 1741 / 2048 = 68.01
    assert_eq!((c.ssthresh(), cubic_state(&c).w_max), (56, 68));
    c.exit_reduction();
    c.start_in_ca(2);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 2);
}

#[test]
fn linux_cubic_k_is_the_module_s_cube_root_of_the_distance_to_w_max() {
    // W_max 100, the epoch starts at 70: K = cbrt(2^40 / 410 x 30) = 4316.6 (1/1024 s,
    // i.e. cbrt(30 / 0.4) s); the module's root (table + one Newton step) is within 0.2 %
    let c = Conn::new("cubic");
    c.start_in_ca(100);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(70);
    ca_ack(&c, 1000, 20_000);
    let s = cubic_state(&c);
    let exact = (((1u64 << 40) / 410 * 30) as f64).cbrt();
    assert_eq!(s.origin, 100, "{s:?}");
    assert!((s.k as f64 - exact).abs() <= 0.002 * exact, "K {} vs {exact:.1} {s:?}", s.k);
    // t = 20 ms of delay_min = 20 jiffies, 20 x 1024 / 1000 = 20 (1/1024 s); offs =
    // K - t = 4296; 410 x 4296^3 >> 40 = 29.56, truncated: target 100 - 29 = 71, one
    // above cwnd: cnt = 70 / 1 (rounded, 30, it would be at cwnd: 100 cwnd)
    assert_eq!((s.k, s.cnt), (4316, 70), "{s:?}");
}

#[test]
fn linux_cubic_grows_at_most_one_segment_per_20_acked_before_any_loss() {
    // W_max 0 (no loss yet): the curve starts at cwnd with K 0, cnt capped at 20
    let c = Conn::new("cubic");
    c.start_in_ca(100);
    let mut n = 0;
    while c.cwnd() == 100 {
        ca_ack(&c, 1000, 20_000);
        n += 1;
        assert!(n < 1000);
    }
    assert_eq!((n, cubic_state(&c).cnt), (20, 20));
}

#[test]
fn linux_cubic_reno_friendly_estimate_gains_a_segment_per_15_8_windows() {
    // tcp_cwnd gains one segment per (15 cwnd) >> 3 acked segments: 187 at cwnd 100
    let c = Conn::new("cubic");
    c.start_in_ca(100);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(100);
    for _ in 0..187 {
        ca_ack(&c, 10, 20_000);
        c.set_cwnd(100);
    }
    let s = cubic_state(&c);
    assert_eq!((s.tcp_cwnd, s.ack_cnt), (100, 187), "{s:?}");
    ca_ack(&c, 10, 20_000);
    c.set_cwnd(100);
    // cnt is recomputed only every HZ/32: the 188th ACK needs a new computation
    advance_us(40_000);
    ca_ack(&c, 10, 20_000);
    let s = cubic_state(&c);
    assert_eq!((s.tcp_cwnd, s.ack_cnt), (101, 2), "{s:?}");
    assert_eq!(s.cnt, 100, "capped at cwnd / (tcp_cwnd - cwnd)");
}

/// A connection in slow start at cwnd `w` whose HyStart round began at the current
/// sequence numbers (snd_una does not pass its end in the calls below), delay_min
/// `base` us from a first sample taken below the low window
fn hystart_at(w: u32, base: i32) -> Conn {
    let c = Conn::new("cubic");
    c.set(Field::TcpMstamp, 5_000_000);
    c.set_ca_state(LOSS);
    c.set_ca_state(OPEN);   // HyStart's round restarts here (Loss resets it)
    c.set_cwnd(8);
    c.pkts_acked(1, base, 8);
    c.set_cwnd(w);
    c
}

#[test]
fn linux_cubic_hystart_delay_exit_is_above_delay_min_plus_an_eighth_clamped_to_4_16_ms() {
    // delay_min 40 ms: threshold 40 + 5 ms; the round's minimum over 8 samples first,
    // judged from the ninth on
    for (rtt, exits) in [(45_000, false), (45_001, true)] {
        let c = hystart_at(20, 40_000);
        for i in 0..9 {
            c.pkts_acked(1, rtt, 20);
            assert_eq!(c.ssthresh() == 20, exits && i == 8, "rtt {rtt}, sample {i}: {:?}", cubic_state(&c));
        }
    }
    // delay_min 10 ms: the eighth is 1.25 ms, below the 4 ms floor
    for (rtt, exits) in [(14_000, false), (14_001, true)] {
        let c = hystart_at(20, 10_000);
        for _ in 0..9 {
            c.pkts_acked(1, rtt, 20);
        }
        assert_eq!(c.ssthresh() == 20, exits, "rtt {rtt}");
    }
    // below the low window of 16: nothing
    let c = hystart_at(15, 10_000);
    for _ in 0..9 {
        c.pkts_acked(1, 50_000, 15);
    }
    assert_eq!(c.ssthresh(), INFINITE_SSTHRESH);
}

#[test]
fn linux_cubic_hystart_ack_train_exits_after_half_of_delay_min() {
    // ACKs 1 ms apart (within the 2 ms of a train) from the round's start; delay_min
    // 40 ms; no pacing rate, so no TSO allowance: the train is judged against 20 ms,
    // or 40 ms when fq paces the socket (no halving)
    for (pacing_status, limit_us) in [(0u64, 20_000u64), (2, 40_000)] {
        let c = hystart_at(20, 40_000);
        c.set(Field::PacingRate, 0);
        c.set(Field::PacingStatus, pacing_status);
        let start = c.get(Field::TcpMstamp);
        let mut t = start;
        while c.ssthresh() != 20 {
            t += 1000;
            c.set(Field::TcpMstamp, t);
            c.pkts_acked(1, 40_000, 20);
            assert!(t - start <= limit_us + 1000, "no exit by {} us", t - start);
        }
        assert_eq!(t - start, limit_us + 1000, "pacing status {pacing_status}");
    }
    // the TSO allowance: 4 GSO packets at the pacing rate, at most 1 ms: 4 x 2500 B at
    // 20 MB/s is 500 us, (40 000 + 500) / 2 = 20 250 us
    let c = hystart_at(20, 40_000);
    c.set(Field::GsoMaxSize, 2500);
    c.set(Field::PacingRate, 20_000_000);
    let start = c.get(Field::TcpMstamp);
    let mut t = start;
    while c.ssthresh() != 20 {
        t += 250;
        c.set(Field::TcpMstamp, t);
        c.pkts_acked(1, 40_000, 20);
        assert!(t - start <= 30_000);
    }
    assert_eq!(t - start, 20_500);
    // ACKs more than 2 ms apart are no train
    let c = hystart_at(20, 40_000);
    let mut t = c.get(Field::TcpMstamp);
    for _ in 0..8 {
        t += 2001;
        c.set(Field::TcpMstamp, t);
        c.pkts_acked(1, 40_000, 20);
    }
    assert_eq!(c.ssthresh(), INFINITE_SSTHRESH);
}

#[test]
fn linux_cubic_takes_no_delay_sample_within_a_second_of_the_epoch_start() {
    let c = Conn::new("cubic");
    c.start_in_ca(100);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(70);
    ca_ack(&c, 1000, 30_000);     // the epoch starts on this ACK (its sample comes first)
    let s = cubic_state(&c);
    assert_ne!(s.epoch_start, 0);
    let start = s.epoch_start as u64;
    let j0 = now_us() / 1000;      // jiffies at 1000 Hz in the harness
    advance_us((start + 999 - j0) * 1000);
    c.pkts_acked(1, 10_000, 70);
    assert_ne!(cubic_state(&c).delay_min, 10_000, "999 jiffies after the epoch's start");
    advance_us(1000);
    c.pkts_acked(1, 10_000, 70);
    assert_eq!(cubic_state(&c).delay_min, 10_000, "a second after it");
}

#[test]
fn linux_cubic_an_idle_period_moves_the_epoch_start_by_the_idle_time() {
    let c = Conn::new("cubic");
    c.start_in_ca(100);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(70);
    ca_ack(&c, 1000, 20_000);
    let e0 = cubic_state(&c).epoch_start;
    advance_us(1_000_000);
    let now = (now_us() / 1000) as u32;
    c.set(Field::Lsndtime, (now - 300) as u64);
    c.cwnd_event(CA_EVENT_TX_START);
    assert_eq!(cubic_state(&c).epoch_start, e0 + 300);
    // never past now
    c.set(Field::Lsndtime, (now - 1500) as u64);
    c.cwnd_event(CA_EVENT_TX_START);
    assert_eq!(cubic_state(&c).epoch_start, now);
}

#[test]
fn linux_cubic_an_rto_forgets_w_max_and_delay_min() {
    let c = Conn::new("cubic");
    c.start_in_ca(100);
    ca_ack(&c, 1000, 20_000);
    c.enter_recovery();
    c.exit_reduction();
    assert_eq!(cubic_state(&c).w_max, 100);
    c.enter_loss();
    let s = cubic_state(&c);
    assert_eq!((s.w_max, s.delay_min, s.epoch_start, s.found), (0, 0, 0, 0), "{s:?}");
    assert_eq!(c.ssthresh(), 49, "the loss response itself: 70 x 717 / 1024");
}

// ---- the paper's CUBIC --------------------------------------------------------------------
// RFC 9438 (CUBIC) and RFC 9406 (HyStart++): "cubic:paper".

// ---- CUBIC, RFC 9438 ------------------------------------------------------------------
fn w_cubic(t: f64, w_max: f64) -> f64 {
    let k = (w_max * (1.0 - 0.7) / 0.4).cbrt(); // §4.2 eq. 2 with cwnd_epoch = beta W_max
    0.4 * (t - k).powi(3) + w_max
}

#[test]
fn cubic_cuts_to_beta_0_7_and_follows_w_cubic_through_k() {
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
    c.start_in_ca(1024);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 717);
}

// ---- CUBIC's slow start: HyStart++, RFC 9406 ----------------------------------------------

/// A new CUBIC flow in its initial slow start after two rounds at `base` (the last
/// round's minimum RTT is `base`)
fn hystart_flow(base: u32) -> Conn {
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
        let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
fn cubic_w_cubic_past_a_hundred_seconds_never_falls_back() {
    // RFC 9438 §4.2: W_cubic rises for ever past K. The code holds C (t - K)^3 at its value
    // at 100 s beyond that (4 (t - K)^3 in 100 us units would leave u64 soon after); an
    // epoch of 2^21 units (209.7 s), where 4 (t - K)^3 is 2^65 and wraps to 0, still aims at
    // least where it aimed at 100 s, W + 400000, not back at W
    assert!(cubic_target_above(None, 1000, 1 << 21, 400_999), "target below W + 400000");
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
        let c = Conn::bare("cubic:paper");
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
    let c = Conn::bare("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::bare("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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

#[test]
fn cubic_fast_convergence_only_below_the_last_w_max() {
    // RFC 9438 §4.7: W_max is lowered only for a loss below it; one exactly at W_max
    // keeps W_max = cwnd, so the next epoch's plateau (t = K) is at 200, not 170
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
    let c = Conn::new("cubic:paper");
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
