//! cca_yeah against Baiocchi, Castellani, Vacirca, "YeAH-TCP", PFLDnet 2007
//! (bpf/cc/yeah.bpf.c): Q = (RTT_min − RTT_base)·cwnd/RTT_min, L = (RTT_min −
//! RTT_base)/RTT_base; fast mode (Scalable increase) iff Q < Q_max = 80 and L ≤ 1/φ,
//! φ = 8; slow mode: Reno increase and precautionary decongestion (cwnd −= Q) unless
//! competing with Reno (a decongestion that does not drain the queue, bpf/cc/yeah.bpf.c);
//! loss: cwnd − max(cwnd/8, Q) (at most half), cwnd/2 with Reno.
use ccarena_cc_harness::*;

const BASE: u32 = 20_000;

/// growth over 4 rounds at a constant queueing delay `q_us`, from cwnd 200
fn growth_at_queueing_delay(q_us: u32) -> u32 {
    let c = Conn::new("yeah");
    c.start_in_ca(200);
    c.round(BASE); // RTT_base
    c.round(BASE + q_us); // the mode is judged at the end of each round
    let w = c.cwnd();
    for _ in 0..4 {
        c.round(BASE + q_us);
    }
    c.cwnd() - w
}

#[test]
fn fast_mode_while_queueing_delay_is_at_most_base_rtt_over_phi() {
    // 2.4 ms <= 20 ms / 8: Scalable's a = 0.01 per ACK, ~2 segments per round at 200
    let fast = growth_at_queueing_delay(2_400);
    assert!((7..=9).contains(&fast), "fast mode: {fast} in 4 rounds");
    assert!(growth_at_queueing_delay(0) >= 7);
}

#[test]
fn slow_mode_once_queueing_delay_exceeds_base_rtt_over_phi() {
    // 3 ms > 20 ms / 8 (but far below phi * base = 160 ms, the inverted rule): Reno
    // (Q = q * 200 / (20 ms + q) stays below Q_max = 80: no decongestion here)
    for q in [2_600, 3_000, 10_000] {
        let slow = growth_at_queueing_delay(q);
        assert!((4..=5).contains(&slow), "slow mode at {q} us: Reno's +1 per round, got {slow}");
    }
}

#[test]
fn a_lone_flow_decongests_and_never_takes_itself_for_a_reno_peer() {
    // 100 Mbit/s, 20 ms (BDP 165), 300-packet buffer: YeAH's own queue only
    let path = Path::new(100e6, BASE, 300);
    let c = Conn::new("yeah");
    c.start_in_ca(100);
    let mut q_max = 0.0f64;
    let mut decongestions = 0;
    for i in 0.. {
        let w = c.cwnd();
        assert!(!c.round_on(&path, 0.0), "loss at cwnd {}", c.cwnd());
        q_max = q_max.max(path.queue(w as f64));
        if c.cwnd() < w {
            decongestions += 1;
        }
        // stop after many cycles, at a queue below half the window
        let q = path.queue(c.cwnd() as f64);
        if i >= 600 && (30.0..60.0).contains(&q) {
            break;
        }
    }
    assert!(decongestions >= 5, "{decongestions}");
    assert!(q_max <= 80.0 + 2.0, "queue {q_max}: held at Q_max by decongestion");
    // not in Reno mode: a loss cuts max(cwnd/8, Q) (Q < cwnd/2 here), not half
    let w = c.cwnd();
    let q = path.queue(w as f64 - 1.0).round() as u32; // the last round's Q
    c.enter_recovery();
    let cut = w - c.ssthresh();
    assert!(cut < w / 2, "cut {cut} of {w}: Reno mode");
    assert!(cut.abs_diff((w / 8).max(q)) <= 1, "cut {cut} of {w} (Q {q})");
}

#[test]
fn a_reno_peer_that_keeps_the_queue_full_is_detected_and_yeah_halves() {
    // 150 segments of someone else's queue that decongestion cannot drain
    let path = Path::new(20e6, BASE, 300);
    let c = Conn::new("yeah");
    c.start_in_ca(150);
    c.round(BASE); // RTT_base
    let other = path.bdp() + 100.0;
    c.round_on(&path, other);
    let w = c.cwnd();
    assert!(w <= 80, "precautionary decongestion from 150: {w}");
    for _ in 0..150 {
        c.round_on(&path, other);
    }
    let w = c.cwnd();
    assert!(w > 20, "Reno growth after the peer was detected: {w}");
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w / 2, "competing with Reno: halve");
}

#[test]
fn a_loss_in_fast_mode_cuts_an_eighth() {
    let c = Conn::new("yeah");
    c.start_in_ca(400);
    c.round(BASE);
    c.round(BASE + 500);
    let w = c.cwnd();
    c.enter_recovery();
    // Q = 0.5 ms * w / 20.5 ms ~ 10 < w/8 = 50
    assert_eq!(c.ssthresh(), w - w / 8);
}
