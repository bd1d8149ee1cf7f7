//! cca_westwood (bpf/cc/westwood.bpf.c): the default variant against the rules of Linux
//! 6.12's tcp_westwood (also replayed call by call against it: tests/replay.rs), the
//! paper variant ("westwood:paper") against Mascolo et al. 2001 / Grieco & Mascolo 2004
//! (Westwood+): BWE = the delivery rate, one sample per RTT, low-pass filtered; at a
//! loss ssthresh = BWE·RTT_min/MSS, never above the window at the loss.
use ccarena_cc_harness::*;

// ---- Linux's Westwood+ ----------------------------------------------------------------------
// The model's tick rate is 1000 Hz: one jiffy per millisecond of the fake clock.

const MSS: u64 = 1448;

/// A connection started at 1 s (jiffy 1000) in congestion avoidance at 100 segments, then
/// one ACK of one segment per millisecond from jiffy 1001 to 1051, each with an RTT of
/// 40 ms (40 jiffies). The first ACK starts the byte count at its snd_una; the next 49
/// acknowledge 49·1448 bytes; the one at 1051 is the first more than max(RTT, HZ/20 = 50)
/// jiffies after the window began (at 1000): a sample of 70952 / 51 = 1391 bytes per
/// jiffy, which fills both filters. RTT_min = 40: BWE·RTT_min/MSS = 55640 / 1448 = 38.
fn linux_one_sample() -> Conn {
    set_now_us(1_000_000);
    let c = Conn::new("westwood");
    c.start_in_ca(100);
    for k in 1..=51 {
        set_now_us(1_000_000 + k * 1000);
        c.ack(Ack::new(1, 40_000));
    }
    c
}

#[test]
fn linux_westwood_halves_in_its_ssthresh_op_and_sets_bwe_times_rtt_min_at_a_time_out() {
    let c = linux_one_sample();
    assert_eq!(c.cwnd(), 100);
    assert_eq!(c.op_ssthresh(), 50, "the module's ssthresh op is tcp_reno_ssthresh");
    c.enter_loss(); // the op, then CA_EVENT_LOSS
    assert_eq!(c.ssthresh(), 38);
}

#[test]
fn linux_westwood_filters_every_sample_twice() {
    // the next window: ACKs of 4 segments per millisecond from 1052, the one at 1102 closes
    // it (51 jiffies after 1051) with 1448 + 50·4·1448 = 291048 bytes: a sample of 5706;
    // the first filter (7·1391 + 5706) >> 3 = 1930, BWE = (7·1391 + 1930) >> 3 = 1458;
    // 1458·40/1448 = 40 (the first filter's 1930 would give 53)
    let c = linux_one_sample();
    for t in 1052..=1102u64 {
        set_now_us(t * 1000);
        c.ack(Ack::new(4, 40_000));
    }
    c.enter_loss();
    assert_eq!(c.ssthresh(), 40);
}

#[test]
fn linux_westwood_ends_every_reduction_at_bwe_times_rtt_min() {
    // CA_EVENT_COMPLETE_CWR: ssthresh = cwnd = BWE·RTT_min/MSS (38), whether it is below
    // the halved window (Recovery from 100: 50) or above it (CWR from 60: 30)
    let c = linux_one_sample();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 50);
    c.set(Field::SndUna, c.get(Field::HighSeq));
    c.exit_reduction();
    assert_eq!((c.cwnd(), c.ssthresh()), (38, 38), "Recovery ended");
    let c = linux_one_sample();
    c.set_cwnd(60);
    c.enter_cwr();
    assert_eq!(c.ssthresh(), 30);
    c.exit_reduction();
    assert_eq!((c.cwnd(), c.ssthresh()), (38, 38), "CWR ended");
}

#[test]
fn linux_westwood_ends_an_undone_recovery_at_bwe_times_rtt_min_too() {
    // tcp_try_undo_recovery restores the window (100), then tcp_end_cwnd_reduction sends
    // CA_EVENT_COMPLETE_CWR all the same: 38
    let c = linux_one_sample();
    c.enter_recovery();
    c.set(Field::SndUna, c.get(Field::HighSeq));
    c.undo();
    assert_eq!((c.cwnd(), c.ssthresh()), (38, 38));
    // a partial undo leaves Recovery before snd_una reaches high_seq (tcp_try_undo_partial,
    // tcp_try_keep_open): no end of the reduction, the window stays restored
    let c = linux_one_sample();
    c.enter_recovery();
    c.undo();
    assert_eq!((c.cwnd(), c.ssthresh()), (100, 100));
}

#[test]
fn linux_westwood_restarts_rtt_min_after_a_time_out() {
    // after CA_EVENT_LOSS the next ACK's RTT (100 ms) is RTT_min, though 40 ms was seen
    // before: 1391·100/1448 = 96 at the end of the next reduction (not 38)
    let c = linux_one_sample();
    c.enter_loss();
    set_now_us(1_060_000);
    c.ack(Ack::new(1, 100_000));
    c.exit_reduction();
    c.set_cwnd(100);
    c.enter_cwr();
    c.exit_reduction();
    assert_eq!(c.cwnd(), 96);
}

#[test]
fn linux_westwood_counts_duplicate_acks_once() {
    // on the slow path a duplicate ACK counts one MSS, and a cumulative ACK only what the
    // duplicates did not count already: 40 duplicates (40 MSS), an ACK of 10 segments
    // (1 MSS: 30 left to discount), one of 30 (1 MSS: all 30 discounted), one of 100
    // (100): 142 MSS = 205616 bytes; the window closes 52 jiffies after it began: 3954
    // bytes per jiffy; RTT_min 50: 136 (counting each ACK in full, 180 MSS, would give 173)
    set_now_us(1_000_000);
    let c = Conn::new("westwood");
    c.start_in_ca(200);
    c.pkts_acked(1, 50_000, 200);
    set_now_us(1_001_000);
    c.in_ack_event(CA_ACK_WIN_UPDATE);
    for t in 1002..=1041u64 {
        set_now_us(t * 1000);
        c.in_ack_event(CA_ACK_SLOWPATH);
    }
    for (t, segs) in [(1042u64, 10u64), (1043, 30), (1044, 100)] {
        set_now_us(t * 1000);
        c.set(Field::SndUna, c.get(Field::SndUna) + segs * MSS);
        c.in_ack_event(CA_ACK_SLOWPATH);
    }
    set_now_us(1_052_000);
    c.in_ack_event(CA_ACK_WIN_UPDATE);
    c.enter_cwr();
    c.exit_reduction();
    assert_eq!(c.cwnd(), 136);
}

#[test]
fn linux_westwood_takes_rtt_samples_above_zero_microseconds() {
    // a sample of 1 us is one jiffy (rounded up): the first window closes at 51 jiffies
    // (max(1, HZ/20) = 50), with a sample of 1391 (see linux_one_sample); one of 0 us is no
    // sample. After a time-out RTT_min restarts at 40 ms: 1391·40/1448 = 38
    set_now_us(1_000_000);
    let c = Conn::new("westwood");
    c.start_in_ca(100);
    set_now_us(1_001_000);
    c.ack(Ack::new(1, 1));
    c.pkts_acked(1, 0, 100);
    for t in 1002..=1051u64 {
        set_now_us(t * 1000);
        c.ack(Ack { segs: 1, rtt_us: -1, ece: false, ce_segs: 0 });
    }
    c.enter_loss();
    set_now_us(1_060_000);
    c.ack(Ack::new(1, 40_000));
    c.exit_reduction();
    c.set_cwnd(100);
    c.enter_cwr();
    c.exit_reduction();
    assert_eq!(c.cwnd(), 38);
}

#[test]
fn linux_westwood_has_no_estimate_before_its_first_window_closes() {
    // 50 jiffies after the start no window has closed (it needs more than 50): BWE 0,
    // and the end of a reduction sets the floor of 2
    set_now_us(1_000_000);
    let c = Conn::new("westwood");
    c.start_in_ca(100);
    for k in 1..=50 {
        set_now_us(1_000_000 + k * 1000);
        c.ack(Ack::new(1, 40_000));
    }
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 50);
    c.set(Field::SndUna, c.get(Field::HighSeq));
    c.exit_reduction();
    assert_eq!(c.cwnd(), 2);
}

#[test]
fn linux_westwood_starts_with_an_rtt_of_twenty_seconds() {
    // without an RTT sample the RTT (and RTT_min, taken from it on the first ACK) is
    // 20·HZ jiffies, so the first window closes only after more than 20 s: at jiffy 21001,
    // not at 21000, with the 10 segments ACKed at 11000 and 21000: 28960 / 20001 = 1 byte
    // per jiffy; 1·20000 / 1448 = 13 segments at the end of the next reduction
    set_now_us(1_000_000);
    let c = Conn::new("westwood");
    c.start_in_ca(100);
    for (t, segs) in [(1001u64, 1u32), (11_000, 10), (21_000, 10), (21_001, 0)] {
        set_now_us(t * 1000);
        if segs > 0 {
            c.ack(Ack { segs, rtt_us: -1, ece: false, ce_segs: 0 });
        } else {
            c.in_ack_event(CA_ACK_WIN_UPDATE);
        }
    }
    c.enter_cwr();
    c.exit_reduction();
    assert_eq!(c.cwnd(), 13);
}

#[test]
fn linux_westwood_takes_the_first_ack_s_rtt_as_rtt_min_whatever_it_is() {
    // RTT_min starts from the first ACK's RTT, not from the smaller of it and the initial
    // 20 s: a first sample of 30 s is RTT_min. 4000 segments ACKed in a window that
    // closes 30002 jiffies after it began: 5792000 / 30002 = 193 bytes per jiffy;
    // 193·30000 / 1448 = 3998 (with RTT_min 20 s: 2665)
    set_now_us(1_000_000);
    let c = Conn::new("westwood");
    c.start_in_ca(5000);
    set_now_us(1_001_000);
    c.ack(Ack::new(1, 30_000_000));
    for t in [20_000u64, 31_000] {
        set_now_us(t * 1000);
        c.ack(Ack { segs: 2000, rtt_us: -1, ece: false, ce_segs: 0 });
    }
    set_now_us(31_002_000);
    c.in_ack_event(CA_ACK_WIN_UPDATE);
    c.enter_cwr();
    c.exit_reduction();
    assert_eq!(c.cwnd(), 3998);
}

#[test]
fn linux_westwood_grows_as_reno() {
    let c = Conn::new("westwood");
    c.start_in_ca(40);
    for k in 1..=5 {
        c.ack_segments(40 + k - 1, 500, 20_000);
        assert_eq!(c.cwnd(), 40 + k);
    }
}

// ---- the papers' Westwood+ (westwood:paper) ------------------------------------------------

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
    let c = Conn::new("westwood:paper");
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
    let c = Conn::new("westwood:paper");
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
    let c = Conn::new("westwood:paper");
    c.start_in_ca(50);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 25);
}

#[test]
fn growth_is_reno_s() {
    let c = Conn::new("westwood:paper");
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
    let c = Conn::new("westwood:paper");
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
    let c = Conn::new("westwood:paper");
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
    let c = Conn::new("westwood:paper");
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
    let c = Conn::new("westwood:paper");
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
    let c = Conn::new("westwood:paper");
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
