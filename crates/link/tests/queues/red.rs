//! RED: S. Floyd, V. Jacobson, "Random Early Detection Gateways for Congestion
//! Avoidance", IEEE/ACM ToN 1(4), 1993 (Figure 2; §4 averaging and idle decay; §7
//! spacing of marks). Averages are checked against closed forms of the EWMA, with the
//! default weight's order of magnitude (w = 0.002), not weight 1.

use super::*;
use ccarena_link::queue::red::{Red, RedParams};
use ccarena_link::queue::Limit;

const W: f64 = 0.002;
/// Transmission time of a typical packet, `s` of §4 (ns).
const S: u64 = 1_000_000;

fn params(min_th: f64, max_th: f64) -> RedParams {
    RedParams {
        min_th,
        max_th,
        max_p: 0.1,
        weight: W,
        bytes: false,
        ecn: false,
        idle_pkt_ns: S,
    }
}

/// Average after n arrivals that find 0, 1, …, n−1 packets (the first at an idle queue,
/// whose average is 0): the EWMA of a ramp, Σ_{k=1..N} w(1−w)^(N−k)·k
/// = N − (1−w)/w·(1 − (1−w)^N), N = n − 1.
fn ramp_avg(n: u64, w: f64) -> f64 {
    let big_n = (n - 1) as f64;
    big_n - (1.0 - w) / w * (1.0 - (1.0 - w).powf(big_n))
}

/// Average after m more arrivals that each find q packets, starting from a0:
/// q + (a0 − q)(1−w)^m.
fn held_avg(a0: f64, q: f64, m: u64, w: f64) -> f64 {
    q + (a0 - q) * (1.0 - w).powf(m as f64)
}

/// Offer `n` arrivals made by `mk` at `t`, each finding the queue as it is: an accepted
/// packet is dequeued right away, so the queue holds its length (arrivals see the same
/// queue). Returns the index (0-based) of every arrival that was signalled (dropped or
/// marked) by the AQM.
fn hold(
    h: &mut Harness,
    q: &mut Red,
    t: u64,
    n: usize,
    mut mk: impl FnMut() -> ccarena_link::packet::Packet,
) -> Vec<usize> {
    let mut signalled = Vec::new();
    for i in 0..n {
        let before = h.totals().drops_aqm + h.totals().marks;
        let len = q.len_pkts();
        h.enq(q, t, mk());
        if h.totals().drops_aqm + h.totals().marks > before {
            signalled.push(i);
        }
        if q.len_pkts() > len {
            h.deq(q, t);
        }
    }
    signalled
}

#[test]
fn average_of_a_growing_queue_is_the_ewma_of_what_arrivals_find() {
    // §4: avg ← (1−w)·avg + w·q on every arrival at a non-empty queue.
    let mut h = Harness::new(1);
    let mut q = Red::new(params(1e9, 2e9), Limit::packets(10_000));
    for n in 1..=400u64 {
        h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT));
        let want = if n == 1 { 0.0 } else { ramp_avg(n, W) };
        assert!(
            (q.avg() - want).abs() <= 1e-9 * want.max(1.0),
            "after {n} arrivals avg {} want {want}",
            q.avg()
        );
    }
    assert_eq!(q.len_pkts(), 400);
    assert_eq!(h.totals().drops_aqm, 0);
}

#[test]
fn average_of_a_held_queue_converges_geometrically() {
    let mut h = Harness::new(1);
    let mut q = Red::new(params(1e9, 2e9), Limit::packets(10_000));
    for _ in 0..50 {
        h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT));
    }
    let a0 = q.avg();
    assert!(close(a0, ramp_avg(50, W), 1e-9));
    hold(&mut h, &mut q, 0, 700, || pkt(1000, 1, NOT_ECT));
    let want = held_avg(a0, 50.0, 700, W);
    assert!(close(q.avg(), want, 1e-9), "avg {} want {want}", q.avg());
}

#[test]
fn byte_mode_averages_the_queue_in_bytes() {
    // Thresholds and average in bytes (the queue is measured in bytes, RFC 7141 §2.1).
    let mut h = Harness::new(1);
    let mut p = params(1e12, 2e12);
    p.bytes = true;
    let mut q = Red::new(p, Limit::packets(10_000));
    for _ in 0..300 {
        h.enq(&mut q, 0, pkt(700, 1, NOT_ECT));
    }
    assert!(close(q.avg(), 700.0 * ramp_avg(300, W), 1e-9));
}

#[test]
fn byte_mode_thresholds_compare_bytes_not_packets() {
    // Twenty packets in the queue: 2 000 bytes of small ones stay below min_th = 3 000
    // bytes, 30 000 bytes of large ones go above max_th = 15 000 bytes.
    let mut p = params(3_000.0, 15_000.0);
    p.bytes = true;
    let run = |size: usize| {
        let mut h = Harness::new(2);
        let mut q = Red::new(p, Limit::packets(10_000));
        for _ in 0..20 {
            h.enq(&mut q, 0, pkt(size, 1, NOT_ECT));
        }
        let early = h.totals().drops_aqm;
        let signalled = hold(&mut h, &mut q, 0, 5_000, || pkt(size, 1, NOT_ECT));
        (early, signalled.len(), q.avg())
    };
    let (early, small, avg_small) = run(100);
    assert_eq!((early, small), (0, 0), "avg {avg_small} B below min_th");
    let (_, large, avg_large) = run(1500);
    assert!(avg_large >= 15_000.0, "avg {avg_large}");
    assert!(
        large > 1_000,
        "{large} of 5000 arrivals signalled above max_th"
    );
}

#[test]
fn idle_queue_decays_the_average_by_idle_time_over_packet_time() {
    // §4: after an idle period of length t, avg ← (1−w)^(t/s)·avg; the period starts when
    // the queue becomes empty (Figure 2: q_time), not at an earlier dequeue, and a
    // dequeue that finds the queue already empty does not restart it.
    let mut h = Harness::new(1);
    let mut q = Red::new(params(1e9, 2e9), Limit::packets(10_000));
    for _ in 0..100 {
        h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT));
    }
    let a0 = q.avg();
    h.deq(&mut q, 1_000_000_000);
    let t_empty = 2_000_000_000;
    assert_eq!(h.drain(&mut q, t_empty).len(), 99);
    assert!(h.deq(&mut q, t_empty + 7 * S).is_none());
    let idle = 250 * S + S / 2; // m = 250.5: the exponent is not rounded
    h.enq(&mut q, t_empty + idle, pkt(1000, 1, NOT_ECT));
    let want = a0 * (1.0 - W).powf(250.5);
    assert!(close(q.avg(), want, 1e-9), "avg {} want {want}", q.avg());
    // The arrival was queued: the idle period is over, the next arrival averages again.
    h.enq(&mut q, t_empty + idle + 10 * S, pkt(1000, 1, NOT_ECT));
    let want2 = (1.0 - W) * want + W * 1.0;
    assert!(close(q.avg(), want2, 1e-9), "avg {} want {want2}", q.avg());
}

#[test]
fn idle_decay_continues_after_a_drop_on_an_empty_queue() {
    // A flow in RTO backoff sends one packet per RTO into an empty queue. An arrival
    // that is dropped leaves the queue empty, so q_time stays (Figure 2) and the next
    // arrival's average has decayed over the whole idle time (restarting the EWMA
    // instead, (1−w) per arrival, would lock the flow out for good).
    let mut p = params(5.0, 15.0);
    p.ecn = true;
    let mut h = Harness::new(1);
    let mut q = Red::new(p, Limit::packets(10_000));
    for _ in 0..400 {
        h.enq(&mut q, 0, pkt(1000, 1, ECT0)); // marked, not dropped: the queue ramps
    }
    let a0 = q.avg();
    assert!(close(a0, ramp_avg(400, W), 1e-9));
    let t_empty = 1_000_000_000;
    assert_eq!(h.drain(&mut q, t_empty).len(), 400);

    // 0.5 s later the average is still above max_th: the Not-ECT packet is dropped.
    h.enq(&mut q, t_empty + 500 * S, pkt(1000, 1, NOT_ECT));
    let a1 = a0 * (1.0 - W).powf(500.0);
    assert!(a1 >= 15.0);
    assert!(close(q.avg(), a1, 1e-9), "avg {} want {a1}", q.avg());
    assert_eq!((q.len_pkts(), h.totals().drops_aqm), (0, 1));

    // 2 s after the queue emptied the average is below min_th: the packet is queued.
    h.enq(&mut q, t_empty + 2000 * S, pkt(1000, 1, NOT_ECT));
    let a2 = a0 * (1.0 - W).powf(2000.0);
    assert!(a2 < 5.0);
    assert!(close(q.avg(), a2, 1e-9), "avg {} want {a2}", q.avg());
    assert_eq!((q.len_pkts(), h.totals().drops_aqm), (1, 1));
}

#[test]
fn gaps_between_marks_are_uniform_up_to_one_over_pb() {
    // §7 Method 2: with p_a = p_b/(1 − count·p_b) the number of arrivals from one mark to
    // the next is uniform on 1..1/p_b; the drop fraction is then 2·p_b/(1+p_b).
    // Queue held at 10 packets: avg → 10, p_b = 0.1·(10−5)/(15−5) = 0.05, 1/p_b = 20.
    let mut h = Harness::new(3);
    let mut q = Red::new(params(5.0, 15.0), Limit::packets(1000));
    for _ in 0..10 {
        h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT));
    }
    hold(&mut h, &mut q, 0, 20_000, || pkt(1000, 1, NOT_ECT));
    assert!(close(q.avg(), 10.0, 1e-12), "avg {}", q.avg());
    let n = 400_000;
    let marks = hold(&mut h, &mut q, 0, n, || pkt(1000, 1, NOT_ECT));
    let gaps: Vec<usize> = marks.windows(2).map(|w| w[1] - w[0]).collect();
    let mut hist = [0u64; 22];
    for &g in &gaps {
        hist[g.min(21)] += 1;
    }
    assert_eq!(hist[0], 0);
    assert_eq!(hist[21], 0, "no gap longer than 1/p_b");
    let k = gaps.len() as f64;
    let se = (k * 0.05 * 0.95).sqrt();
    for (g, &c) in hist.iter().enumerate().take(21).skip(1) {
        assert!(
            (c as f64 - k / 20.0).abs() < 4.0 * se,
            "gap {g}: {c} of {k} (histogram {hist:?})"
        );
    }
    let frac = marks.len() as f64 / n as f64;
    let want = 2.0 * 0.05 / 1.05;
    let se_f = (want * (1.0 - want) / n as f64).sqrt();
    assert!(
        (frac - want).abs() < 6.0 * se_f,
        "fraction {frac}, want {want}"
    );
}

#[test]
fn no_signal_below_min_th_and_every_arrival_at_max_th() {
    // Figure 2: avg < min_th: no mark; avg ≥ max_th: mark every arrival. w = 1 makes the
    // average the queue an arrival finds, so the thresholds are met exactly.
    let mut p = params(5.0, 15.0);
    p.weight = 1.0;
    for (held, want) in [(4, 0), (15, 3000)] {
        let mut h = Harness::new(4);
        let mut q = Red::new(p, Limit::packets(1000));
        for _ in 0..10_000 {
            if q.len_pkts() == held {
                break;
            }
            h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT)); // early drops may interleave
        }
        assert_eq!(q.len_pkts(), held);
        let s = hold(&mut h, &mut q, 0, 3000, || pkt(1000, 1, NOT_ECT));
        assert_eq!(s.len(), want, "queue held at {held}");
    }
}

#[test]
fn count_runs_from_the_first_arrival_at_min_th() {
    // Figure 2: count grows on every unmarked arrival with min_th ≤ avg; at avg = min_th
    // p_b = 0, so nothing is marked, but after more than 100 such arrivals the first one
    // at p_b = 0.01 has count·p_b ≥ 1, so p_a = 1.
    let mut p = params(5.0, 15.0);
    p.weight = 1.0;
    let mut h = Harness::new(5);
    let mut q = Red::new(p, Limit::packets(1000));
    for _ in 0..5 {
        h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT));
    }
    assert!(hold(&mut h, &mut q, 0, 100, || pkt(1000, 1, NOT_ECT)).is_empty());
    h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT)); // queued: now 6 packets
    assert_eq!(q.len_pkts(), 6);
    let s = hold(&mut h, &mut q, 0, 1, || pkt(1000, 1, NOT_ECT));
    assert_eq!(s, vec![0], "p_a = 1 after count reached 1/p_b");
}

#[test]
fn ecn_marks_ect_packets_and_drops_not_ect_ones() {
    // Marking is CE for ECN-capable packets when ECN is on (RFC 3168 §5); Not-ECT
    // packets are dropped instead.
    let mut p = params(5.0, 15.0);
    p.ecn = true;
    let mut h = Harness::new(6);
    let mut q = Red::new(p, Limit::packets(1000));
    for _ in 0..20 {
        h.enq(&mut q, 0, pkt(1000, 1, ECT0));
    }
    hold(&mut h, &mut q, 0, 5_000, || pkt(1000, 1, ECT0));
    let t = h.totals();
    assert!(t.marks > 1_000, "avg ≥ max_th marks every ECT arrival");
    assert_eq!(t.drops_aqm, 0);
    assert_eq!(q.len_pkts(), 20);
    let ce = h
        .drain(&mut q, 0)
        .iter()
        .filter(|p| p.ecn() == Some(CE))
        .count();
    assert!(ce > 0, "marked packets carry CE");
    let mut h2 = Harness::new(6);
    let mut q2 = Red::new(p, Limit::packets(1000));
    for _ in 0..20 {
        h2.enq(&mut q2, 0, pkt(1000, 1, NOT_ECT));
    }
    hold(&mut h2, &mut q2, 0, 5_000, || pkt(1000, 1, NOT_ECT));
    assert_eq!(h2.totals().marks, 0);
    assert!(h2.totals().drops_aqm > 1_000);
}

#[test]
fn buffer_limit_is_a_hard_tail_drop_limit() {
    let mut h = Harness::new(7);
    let mut q = Red::new(params(1e9, 2e9), Limit::packets(30));
    for _ in 0..100 {
        h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT));
        assert!(q.len_pkts() <= 30);
    }
    assert_eq!(q.len_pkts(), 30);
    assert_eq!(q.len_bytes(), 30_000);
    assert_eq!(h.totals().drops_queue, 70);
}
