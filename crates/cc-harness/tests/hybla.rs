//! cca_hybla (bpf/cc/hybla.bpf.c): the default variant against the rules of Linux 6.12's
//! tcp_hybla (also replayed call by call against it: tests/replay.rs), the paper variant
//! ("hybla:paper") against Caini & Firrincieli, "TCP Hybla", IJSCN 2004.
use ccarena_cc_harness::*;

// ---- Linux's Hybla ------------------------------------------------------------------------

/// A connection whose handshake measured `srtt_us`, with Linux's Hybla's init run then
fn linux(srtt_us: u64) -> Conn {
    let c = Conn::bare("hybla");
    c.set(Field::SrttUs, srtt_us);
    c.init();
    c
}

/// ACKs of `segs` segments whose RTT keeps srtt where it is; returns the window after each
fn acks(c: &Conn, n: u32, segs: u32) -> Vec<u32> {
    let rtt = c.srtt_us();
    (0..n)
        .map(|_| {
            c.transmit();
            advance_us(100);
            c.ack(Ack::new(segs, rtt));
            c.cwnd()
        })
        .collect()
}

#[test]
fn linux_hybla_starts_with_rho_segments_and_stays_within_65535() {
    // rho = srtt / 25 ms, at least 1: 1 below 50 ms, 4 at 100 ms
    for (srtt, w) in [(10_000u64, 1u32), (40_000, 1), (49_999, 1), (50_000, 2), (100_000, 4)] {
        let c = linux(srtt);
        assert_eq!(c.cwnd(), w, "srtt {srtt}");
    }
    // Linux's clamp of 65535 (set at init), kept by the growth itself: rho 16 (400 ms)
    // adds 2^16 - 1 per ACK in slow start; in Reno's growth outside Open too
    let c = linux(400_000);
    c.set(Field::CwndClamp, u32::MAX as u64);
    c.set_ssthresh(INFINITE_SSTHRESH);
    assert_eq!(acks(&c, 2, 1), vec![65535, 65535]);
    c.set_cwnd(65535);
    c.set_ca_state(DISORDER);
    acks(&c, 70_000, 1);
    assert_eq!(c.cwnd(), 65535);
}

#[test]
fn linux_hybla_slow_start_adds_two_to_the_rho_minus_one_per_ack() {
    // rho 4: 2^4 * 128 - 128 = 1920/128 = 15 segments per ACK, of one segment or of three
    for segs in [1u32, 3] {
        let c = linux(100_000);
        assert_eq!(acks(&c, 2, segs), vec![19, 34], "ACKs of {segs}");
    }
    // rho 12/8: 2 * 181 - 128 = 234/128 per ACK: +1 (106/128 carried), then +1 +1
    let c = linux(40_000);
    assert_eq!(acks(&c, 2, 1), vec![2, 4]);
    // at most ssthresh
    let c = linux(100_000);
    c.set_ssthresh(25);
    assert_eq!(acks(&c, 2, 1), vec![19, 25]);
}

#[test]
fn linux_hybla_congestion_avoidance_adds_rho_squared_over_cwnd_per_ack() {
    // rho 4: rho^2 * 128 / 100 = 20/128 per ACK: the segment after ceil(128 / 20) = 7 ACKs
    let c = linux(100_000);
    c.start_in_ca(100);
    let w = acks(&c, 7, 1);
    assert_eq!(w[5], 100);
    assert_eq!(w[6], 101);
    // at 10 segments: 2048/10 = 204/128 per ACK: +1 (76 carried), then 186/128: +1 +1
    let c = linux(100_000);
    c.start_in_ca(10);
    assert_eq!(acks(&c, 2, 1), vec![11, 13]);
}

#[test]
fn linux_hybla_counts_acks_when_the_increment_is_nothing() {
    // rho 1 at 300 segments: 128 / 300 = 0 in 1/128: one segment per cwnd ACKs counted
    let c = linux(30_000);
    c.start_in_ca(300);
    let w = acks(&c, 300, 1);
    assert_eq!((w[298], w[299]), (300, 301));
}

#[test]
fn linux_hybla_takes_rho_from_a_smaller_srtt_only() {
    let c = linux(100_000);
    c.start_in_ca(1000);
    // srtt up: rho stays 4 (16 * 128 / 1000 = 2/128 per ACK)
    c.set(Field::SrttUs, 200_000);
    acks(&c, 1, 1);
    assert_eq!(c.cwnd(), 1000);
    // srtt down to 50 ms: rho 2 from then on (4 * 128 / 1000 = 0: counted ACKs; the ACK
    // above, an increment below one segment, counted one already)
    c.set(Field::SrttUs, 50_000);
    let w = acks(&c, 1000, 1);
    assert_eq!((w[997], w[998]), (1000, 1001), "one per cwnd ACKs at rho 2");
}

#[test]
fn linux_hybla_is_reno_outside_open() {
    let c = linux(100_000);
    c.start_in_ca(100);
    c.set_ca_state(DISORDER);
    let w = acks(&c, 100, 1);
    assert_eq!((w[98], w[99]), (100, 101), "Reno's one per cwnd acked");
    c.set_ca_state(OPEN);
    assert_eq!(acks(&c, 1, 1), vec![101], "Hybla again: 20/128 carried");
}

// ---- the paper's Hybla (hybla:paper) --------------------------------------------------------

#[test]
fn hybla_paper_slow_start_adds_at_most_65535_segments_per_ack() {
    // rho capped at 16 (RTT 400 ms and more): 2^16 - 1 per acked segment, so an ACK of two
    // segments would add 131070; one ACK adds at most 65535 (the burst bound)
    let c = Conn::new("hybla:paper");
    c.set(Field::CwndClamp, u32::MAX as u64);
    c.set_ssthresh(INFINITE_SSTHRESH);
    c.ack_segments(1, 1000, 800_000);
    let w = c.cwnd();
    assert_eq!(w, 10 + 65535, "one segment: 2^16 - 1");
    c.transmit();
    c.ack(Ack::new(2, 800_000));
    assert_eq!(c.cwnd(), w + 65535, "two segments: bounded");
}

// ---- Hybla ------------------------------------------------------------------------------
#[test]
fn hybla_scales_growth_by_rho() {
    // RTT 200 ms: rho = 8. Slow start: +2^rho - 1 = 255 per acked segment
    let c = Conn::new("hybla:paper");
    c.set_ssthresh(100_000);
    c.ack_segments(1, 1000, 200_000);
    assert!((c.cwnd() as i64 - (10 + 255)).abs() <= 1, "cwnd {}", c.cwnd());
    // congestion avoidance: rho^2 / cwnd per acked segment = 64 per RTT
    c.start_in_ca(2000);
    let w = c.cwnd();
    c.ack_segments(2000, 100, 200_000);
    assert!((c.cwnd() as i64 - (w as i64 + 64)).abs() <= 1, "cwnd {}", c.cwnd());
    // RTT <= RTT0 = 25 ms: rho = 1, Reno
    let c = Conn::new("hybla:paper");
    c.start_in_ca(50);
    c.ack_segments(50, 100, 10_000);
    assert_eq!(c.cwnd(), 51);
}

// ---- Hybla, exact ------------------------------------------------------------------------
#[test]
fn hybla_slow_start_adds_two_to_the_rho_minus_one_per_ack() {
    // §3: slow start cwnd += 2^rho - 1 per acked segment, for fractional rho too (rho in
    // 1/1024, rounded down; 2^rho from a Taylor series to 0.2 %; the fraction carried
    // between ACKs)
    for rtt in [31_250u32, 37_500, 43_750, 49_999, 60_000] {
        let rho = (rtt as u64 * 1024 / 25_000) as f64 / 1024.0;
        let c = Conn::new("hybla:paper");
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
    let c = Conn::new("hybla:paper");
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
    let c = Conn::new("hybla:paper");
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
    let c = Conn::new("hybla:paper");
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
    let c = Conn::new("hybla:paper");
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
    let c = Conn::new("hybla:paper");
    c.set_ssthresh(1_000_000);
    let w = c.cwnd();
    hybla_slow_start_acks(&c, 2048, 1, 25_000);
    assert_eq!(c.cwnd(), w + 2048);
    // rho = 2 (50 ms): 3 per segment, here on ACKs of two segments
    let c = Conn::new("hybla:paper");
    c.set_ssthresh(1_000_000);
    let w = c.cwnd();
    hybla_slow_start_acks(&c, 1024, 2, 50_000);
    assert_eq!(c.cwnd(), w + 1024 * 2 * 3);
    // rho = 16 (400 ms), the largest rho (bpf/cc/hybla.bpf.c): 2^16 - 1 for one segment
    let c = Conn::new("hybla:paper");
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
        let c = Conn::new("hybla:paper");
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
    let c = Conn::new("hybla:paper");
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
    let c = Conn::new("hybla:paper");
    c.ack_segments(1, 1000, 1);
    c.ack_segments(1, 1000, 200_000);
    c.start_in_ca(2000);
    c.ack_segments(2000, 100, 200_000);
    assert_eq!(c.cwnd(), 2001, "rho 1");
    // a sample of 0 us (below the clock's resolution), read as no sample or as an RTT of
    // 0 (rho 1), leaves rho at most that of the 200 ms minimum (8, 64 per RTT): a longer
    // sample after it (400 ms, rho 16, 256 per RTT) does not raise it
    let c = Conn::new("hybla:paper");
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
    let c = Conn::new("hybla:paper");
    c.start_in_ca(w as u32);
    assert_eq!(acks_until_growth(&c), want, "new connection, cwnd {w}");
    let c = Conn::new("hybla:paper");
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
    let c = Conn::new("hybla:paper");
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
    let c = Conn::new("hybla:paper");
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
