//! cca_westwood against Mascolo et al. 2001 / Grieco & Mascolo 2004 (Westwood+)
//! (bpf/cc/westwood.bpf.c): BWE = the delivery rate, one sample per RTT, low-pass
//! filtered; at a loss ssthresh = BWE·RTT_min/MSS, never above the window at the loss.
use ccarena_cc_harness::*;

/// `rounds` rounds of a window of `w` segments every `rtt_us`: delivery rate w/rtt
fn steady(c: &Conn, w: u32, rtt_us: u32, rounds: u32) {
    for _ in 0..rounds {
        c.set_cwnd(w);
        c.round(rtt_us);
    }
    c.set_cwnd(w);
}

#[test]
fn ssthresh_is_bandwidth_times_min_rtt() {
    // rate 100 segments / 50 ms = 2000 segments/s; RTT_min 40 ms: 80 segments
    let c = Conn::new("westwood");
    c.start_in_ca(100);
    c.round(40_000);
    steady(&c, 100, 50_000, 40);
    c.enter_recovery();
    let want = 2000.0 * 0.040;
    let got = c.ssthresh() as f64;
    assert!((got - want).abs() <= 0.05 * want, "ssthresh {got}, BWE*RTT_min/MSS {want}");
}

#[test]
fn ssthresh_never_exceeds_the_window_at_the_loss() {
    // BWE*RTT_min = 100 segments, but the window is 60 when the loss comes (it shrank
    // after the estimate was made): a loss must not raise the window
    let c = Conn::new("westwood");
    c.start_in_ca(100);
    steady(&c, 100, 50_000, 40);
    c.set_cwnd(60);
    c.enter_recovery();
    assert!(c.ssthresh() <= 60, "ssthresh {} above the pre-loss cwnd 60", c.ssthresh());
    assert_eq!(c.ssthresh(), 60);
    c.exit_reduction();
    assert_eq!(c.cwnd(), 60);
}

#[test]
fn without_an_estimate_the_loss_response_is_reno_s() {
    let c = Conn::new("westwood");
    c.start_in_ca(50);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 25);
}

#[test]
fn growth_is_reno_s() {
    let c = Conn::new("westwood");
    c.start_in_ca(40);
    for k in 1..=5 {
        c.ack_segments(40 + k - 1, 500, 20_000);
        assert_eq!(c.cwnd(), 40 + k);
    }
}

#[test]
fn the_first_bandwidth_sample_is_the_estimate() {
    // Westwood+ starts BWE at its first sample (as Linux's tcp_westwood), then filters:
    // 100 segments in the first 50 ms interval (RTT 50 ms): 2000 segments/s; a loss right
    // then gives 2000/s · 50 ms = 100 segments
    let c = Conn::new("westwood");
    c.start_in_ca(120);
    c.ack_segments(100, 500, 50_000);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 100);
}

#[test]
fn ack_compression_does_not_change_the_estimate() {
    // one sample per RTT (Westwood+, Grieco & Mascolo 2004) is what makes BWE robust to
    // ACK compression: ten ACKs at once every 5 ms are still 2000 segments/s, and with
    // RTT_min 50 ms ssthresh is 100, below the window of ~150
    let c = Conn::new("westwood");
    c.start_in_ca(150);
    for _ in 0..400 {
        c.ack_segments(1, 4_991, 50_000);
        c.ack_segments(9, 1, 50_000);
    }
    c.enter_recovery();
    assert!(c.ssthresh().abs_diff(100) <= 5, "ssthresh {}", c.ssthresh());
}

#[test]
fn a_loss_before_the_first_bandwidth_sample_halves() {
    // RTT samples but no bandwidth sample yet (5 ms of a 50 ms interval): nothing to size
    // ssthresh with: Reno's halving (bpf/cc/westwood.bpf.c)
    let c = Conn::new("westwood");
    c.start_in_ca(50);
    c.ack_segments(5, 1_000, 50_000);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 25);
}

#[test]
fn on_short_paths_the_sampling_interval_is_ten_milliseconds() {
    // RTT 1 ms: one sample per 10 ms (bpf/cc/westwood.bpf.c), so after 30 ms at half the
    // rate (ACKs every 200 instead of 100 us) BWE has taken two or three filter steps of
    // 1/8: between 5000 + 5000 (7/8)^3 = 8350 and 8828 segments/s; times RTT_min 1 ms: 8
    let c = Conn::new("westwood");
    c.start_in_ca(20);
    c.ack_segments(10_000, 100, 1_000);
    c.ack_segments(150, 200, 1_000);
    c.set_cwnd(20);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 8);
}

/// A flow whose first bandwidth sample spans exactly the interval from the connection's
/// start, with ACKs of 500 segments at 9.999 ms and at 10 ms, RTT 1 ms
fn ten_ms_sample() -> Conn {
    let c = Conn::new("westwood");
    c.start_in_ca(1000);
    advance_us(9_999);
    c.ack(Ack::new(500, 1_000));
    advance_us(1);
    c.ack(Ack::new(500, 1_000));
    c
}

#[test]
fn the_ten_millisecond_interval_closes_at_exactly_ten_milliseconds() {
    // bpf/cc/westwood.bpf.c: a sample per max(RTT, 10 ms); at RTT 1 ms the first one is
    // taken by the first ACK at least 10 ms after the start, the one at exactly 10 ms
    // (not at 9.999 ms): 1000 segments in 10 ms, 100000 segments/s; at a loss
    // ssthresh = BWE·RTT_min/MSS = 100000/s · 1 ms = 100, below the window of 1000
    let c = ten_ms_sample();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 100);
}

#[test]
fn rtt_min_is_the_smallest_rtt_reading() {
    // Mascolo et al. 2001: ssthresh = BWE·RTT_min/MSS, RTT_min the smallest RTT
    // measured (100 segments here, from 1 ms and 100000 segments/s). A reading of 1 us
    // (the clock's resolution) is a new minimum: 0.1 segments, the floor of 2.
    let c = ten_ms_sample();
    c.pkts_acked(1, 1, 1000);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 2);
    // A reading of 0 us (below that resolution) can only lower the minimum, never make
    // it unknown: ssthresh stays at most 100 (not Reno's 500)
    let c = ten_ms_sample();
    c.pkts_acked(1, 0, 1000);
    c.enter_recovery();
    assert!(c.ssthresh() <= 100, "ssthresh {} after a 0 us reading", c.ssthresh());
}
