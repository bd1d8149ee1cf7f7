//! Step marking (DCTCP, RFC 8257 §3.1; M. Alizadeh et al., "Data Center TCP", SIGCOMM
//! 2010): an arrival is marked when the queue it finds is greater than K, in packets or
//! in bytes; a Not-ECT packet that would be marked is dropped.

use super::*;
use ccarena_link::queue::step::{Step, StepK};
use ccarena_link::queue::Limit;

#[test]
fn marks_arrivals_that_find_more_than_k_packets() {
    let mut h = Harness::new(1);
    let mut q = Step::new(StepK::Packets(20), Limit::packets(100));
    for i in 0..21 {
        h.enq(&mut q, i, pkt(1514, 1, ECT0)); // these find 0..=20 packets
    }
    assert_eq!(h.totals().marks, 0, "a queue of exactly K is not above K");
    for i in 0..10 {
        h.enq(&mut q, 100 + i, pkt(1514, 1, ECT0));
    }
    assert_eq!(h.totals().marks, 10);
    let ce: Vec<bool> = h
        .drain(&mut q, 1000)
        .iter()
        .map(|p| p.ecn() == Some(CE))
        .collect();
    assert_eq!(ce.iter().filter(|&&c| c).count(), 10);
    assert!(ce[..21].iter().all(|&c| !c) && ce[21..].iter().all(|&c| c));
    assert_eq!(h.totals().drops_aqm, 0);
}

#[test]
fn k_in_bytes_compares_the_bytes_queued() {
    let run = |last: usize| {
        let mut h = Harness::new(1);
        let mut q = Step::new(StepK::Bytes(10_000), Limit::packets(100));
        for _ in 0..9 {
            h.enq(&mut q, 0, pkt(1000, 1, ECT0));
        }
        h.enq(&mut q, 0, pkt(last, 1, ECT0));
        assert_eq!(h.totals().marks, 0);
        h.enq(&mut q, 0, pkt(60, 1, ECT0));
        h.totals().marks
    };
    assert_eq!(run(1000), 0, "10 000 bytes queued: not above K");
    assert_eq!(run(1001), 1, "10 001 bytes queued: above K");
}

#[test]
fn not_ect_packets_above_k_are_dropped() {
    let mut h = Harness::new(1);
    let mut q = Step::new(StepK::Packets(5), Limit::packets(100));
    for i in 0..10 {
        h.enq(&mut q, i, pkt(1514, 1, NOT_ECT));
    }
    assert_eq!(q.len_pkts(), 6);
    assert_eq!(h.totals().drops_aqm, 4);
    assert_eq!(h.totals().marks, 0);
}

#[test]
fn a_full_buffer_tail_drops_before_any_marking() {
    let mut h = Harness::new(1);
    let mut q = Step::new(StepK::Packets(2), Limit::packets(5));
    for i in 0..8 {
        h.enq(&mut q, i, pkt(1000, 1, ECT0));
    }
    assert_eq!(q.len_pkts(), 5);
    let t = h.totals();
    assert_eq!((t.drops_queue, t.marks, t.drops_aqm), (3, 2, 0));
    assert_eq!(q.len_bytes(), 5000);
}
