//! RED inside the link: its idle decay counts idle time in transmission times of a
//! 1500-byte frame at the direction's rate (Floyd & Jacobson 1993, §4: `m = idle/s`).

use super::*;
use ccarena_link::params::QueueKind;

/// A RED link at 10 Mbit/s given as `rate` (w = 0.002, thresholds 5/15, ECN on); 400 ECT
/// packets arrive at 0 (marked, not dropped, so the queue ramps), the link drains them,
/// and one Not-ECT packet arrives `m` typical packet times (1500 bytes at 10 Mbit/s)
/// after the queue emptied. Returns whether that probe was dropped.
fn probe_after_idle(rate: &RateSpec, m: u64) -> bool {
    let mut dp = DirParams::simple(rate.clone(), 0, Limit::packets(1000));
    dp.queue = QueueKind::Red {
        min_th: 5.0,
        max_th: 15.0,
        max_p: 0.1,
        weight: 0.002,
        bytes: false,
        ecn: true,
    };
    let mut link = Link::new(&params(dp), 0);
    for _ in 0..400 {
        let ect0 = build_ipv4_frame(1514, [10, 1, 1, 2], [10, 2, 1, 2], 17, 1, 2, 2);
        link.enqueue(0, W2E, Packet::from_frame(&ect0));
    }
    // Follow the link's deadlines to the moment its queue empties (the last frame starts
    // its transmission).
    let mut out = Vec::new();
    let mut now = 0;
    while link.queue_len(W2E).0 > 0 {
        now = link
            .next_deadline()
            .expect("a backlogged link has a deadline");
        link.poll(now, &mut out);
    }
    assert_eq!(link.totals(W2E).drops_aqm, 0);
    let s = 1500 * 8 * 1_000_000_000 / 10_000_000;
    let t = now + m * s;
    link.poll(t, &mut out);
    link.enqueue(t, W2E, pkt(1514, 9));
    link.totals(W2E).drops_aqm == 1
}

#[test]
fn red_idle_decay_counts_packet_times_at_the_link_rate() {
    // The 400 arrivals find 0, 0, 1, …, 398 packets (the first goes straight to the
    // transmitter): avg ≈ 398 − 499·(1 − 0.998^398) ≈ 124. After m packet times it is
    // 124·0.998^m: ≈ 20 (≥ max_th: dropped) for m = 900, ≈ 4.1 (< min_th: queued) for
    // m = 1700. The packet time comes from the constant rate, a schedule's initial rate,
    // or a trace's mean rate (5 opportunities of 1500 bytes per 6 ms = 10 Mbit/s).
    let rates = [
        RateSpec::Constant(10_000_000),
        RateSpec::Schedule {
            initial: Some(10_000_000),
            steps: vec![(1_000_000_000_000, Some(1_000))],
        },
        RateSpec::Trace {
            opportunities_ms: vec![1, 2, 3, 4, 6],
        },
    ];
    for rate in &rates {
        assert!(probe_after_idle(rate, 900), "{rate:?}");
        assert!(!probe_after_idle(rate, 1700), "{rate:?}");
    }
}
