//! cca_bic (bpf/cc/bic.bpf.c): the default variant against the rules of Linux 6.12's
//! tcp_bic (also replayed call by call against it: tests/replay.rs), the paper variant
//! ("bic:paper") against Xu, Harfoush, Rhee, "BIC TCP", INFOCOM 2004.
use ccarena_cc_harness::*;

// ---- Linux's BIC ------------------------------------------------------------------------
// cnt = the acked segments per one segment of growth, divided by the ACK ratio (acked
// segments per ACK << 4, an EWMA with gain 1/16 starting at 32): after one ACK of one
// segment it is 32 + 1 - 2 = 31, so cnt' = cnt * 16 / 31.

/// acked segments (one per ACK) until cwnd grows by one
fn acks_to_grow(c: &Conn) -> u32 {
    let w = c.cwnd();
    c.transmit();
    for n in 1..=10_000 {
        c.ack(Ack::new(1, 20_000));
        if c.cwnd() > w {
            return n;
        }
    }
    panic!("no growth from {w}")
}

#[test]
fn linux_bic_cuts_to_819_of_1024_and_halves_at_the_low_window() {
    for (w, want) in [(200u32, 159u32), (100, 79), (15, 11), (14, 7), (3, 2)] {
        let c = Conn::new("bic");
        c.start_in_ca(w);
        c.enter_recovery();
        assert_eq!(c.ssthresh(), want, "cwnd {w}: max(w*819/1024, 2), Reno's at <= 14");
    }
}

#[test]
fn linux_bic_grows_by_quarters_of_the_distance_to_w_max() {
    let c = Conn::new("bic");
    c.start_in_ca(200);
    c.enter_recovery();
    c.exit_reduction();
    assert_eq!(c.cwnd(), 159);
    // W_max 200: dist = 41/4 = 10, cnt = 159/10 = 15, 15*16/31 = 7
    assert_eq!(acks_to_grow(&c), 7);
    // near W_max (dist <= 1): cnt = 199*20/4 = 995, *16/31 = 513
    c.set_cwnd(199);
    assert_eq!(acks_to_grow(&c), 513);
    // far below (dist > 16): cnt = cwnd/16 = 6, *16/31 = 3 (in congestion avoidance)
    c.set_ssthresh(100);
    c.set_cwnd(100);
    assert_eq!(acks_to_grow(&c), 3);
    // max probing, W_max + 4 <= cwnd < W_max + 48: cnt = 210*3/10 = 63, *16/31 = 32
    c.set_cwnd(210);
    assert_eq!(acks_to_grow(&c), 32);
}

#[test]
fn linux_bic_grows_at_least_five_percent_per_rtt_before_any_loss_and_after_an_rto() {
    // W_max = 0: cnt = 400/16 = 25 capped at 20, *16/31 = 10
    let c = Conn::new("bic");
    c.start_in_ca(400);
    assert_eq!(acks_to_grow(&c), 10);
    // with W_max = 500 (a loss at 500, then the window set to 400): dist 25 > 16, cnt = 25,
    // *16/31 = 12
    let c = Conn::new("bic");
    c.start_in_ca(500);
    c.enter_recovery();
    c.exit_reduction();
    c.set_cwnd(400);
    assert_eq!(acks_to_grow(&c), 12);
    // an RTO forgets W_max and the ACK ratio: back to the cap
    c.enter_loss();
    c.exit_reduction();
    c.set_ssthresh(400);
    c.set_cwnd(400);
    assert_eq!(acks_to_grow(&c), 10);
}

#[test]
fn linux_bic_counts_growth_per_ack_so_delayed_acks_grow_it_faster_per_segment() {
    // cnt is divided by the measured segments per ACK: with ACKs of four segments the
    // ratio climbs to 64 and the window grows in fewer acked segments. cnt is recomputed
    // at an unchanged window once HZ/32 has passed: 40 ms between ACKs.
    let one = Conn::new("bic");
    one.start_in_ca(100);
    let four = Conn::new("bic");
    four.start_in_ca(100);
    four.transmit();
    for _ in 0..60 {
        advance_us(40_000);
        four.ack(Ack::new(4, 20_000));
        four.set_cwnd(100);
        four.transmit();
    }
    // ratio: 32 -> 64 (the fixed point of r += 4 - r/16 in integers); cnt = 6*16/64 = 1
    let before = four.cwnd();
    advance_us(40_000);
    four.ack(Ack::new(4, 20_000));
    assert_eq!(four.cwnd(), before + 4, "one segment per acked segment");
    assert_eq!(acks_to_grow(&one), 3);
}

#[test]
fn linux_bic_is_reno_up_to_the_low_window() {
    let c = Conn::new("bic");
    c.start_in_ca(14);
    assert_eq!(acks_to_grow(&c), 14, "cnt = cwnd, not divided by the ACK ratio");
}

// ---- the paper's BIC (bic:paper) ---------------------------------------------------------

#[test]
fn bic_searches_half_the_distance_to_w_max() {
    let c = Conn::new("bic:paper");
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
    let c = Conn::new("bic:paper");
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
    let c = Conn::new("bic:paper");
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
    let c = Conn::new("bic:paper");
    c.start_in_ca(10);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 5);
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
        let c = Conn::new("bic:paper");
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
        let c = Conn::new("bic:paper");
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
    let c = Conn::new("bic:paper");
    c.start_in_ca(400);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(320);
    c.enter_recovery();
    c.exit_reduction();
    let g = bic_rtt_growth(&c);
    assert!((g - 10.0).abs() <= 1.0, "+{g} per RTT, want (300 - 280)/2");
    // a loss exactly at W_max (400): W_max stays 400, cwnd 350, step 25
    let c = Conn::new("bic:paper");
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
    let c = Conn::new("bic:paper");
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
    let c = Conn::new("bic:paper");
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
    let c = Conn::new("bic:paper");
    c.start_in_ca(20);
    assert_eq!(bic_acks_to_grow(&c), 1, "before any loss");
    let c = Conn::new("bic:paper");
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
    let c = Conn::new("bic:paper");
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
    let c = Conn::new("bic:paper");
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
    let c = Conn::new("bic:paper");
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
    let fresh = Conn::new("bic:paper");
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
    let c = Conn::new("bic:paper");
    c.start_in_ca(200);
    c.enter_recovery();
    c.exit_reduction();
    assert_eq!((c.cwnd(), c.ssthresh()), (175, 175));
    c.set_cwnd(190);
    let w = bic_windows_of_acks(&c, 38 + 37);
    assert_eq!((w[36], w[37], w[74]), (190, 191, 191), "5/190 per ACK");
    assert_eq!(c.idle_restart(50_000, 1_000_000, None, 95), 191, "the flight acknowledged, no growth");
    c.ack_segments(80, 100, 50_000);
    assert_eq!((c.cwnd(), c.ssthresh()), (175, 175), "slow start up to ssthresh");
    let got = bic_windows_of_acks(&c, 100);
    let want = bic_round_windows(175, (200 - 175) << 10 >> 1, 100);
    assert_eq!(want[13], 176, "the first segment at ACK 175/12.5 = 14");
    assert_eq!(got, want, "the first round after the restart");
    // the same as a connection at that window and W_max that never went idle
    let fresh = Conn::new("bic:paper");
    fresh.start_in_ca(200);
    fresh.enter_recovery();
    fresh.exit_reduction();
    assert_eq!(bic_windows_of_acks(&fresh, 100), want, "without the idle period");
}
