//! Drop-tail: a FIFO whose arrivals are dropped when they do not fit the buffer limit,
//! in packets, in bytes, or both (whichever is hit first).

use super::*;
use ccarena_link::queue::droptail::DropTail;
use ccarena_link::queue::Limit;

#[test]
fn packet_limit_holds_exactly_n_packets() {
    let mut h = Harness::new(1);
    let mut q = DropTail::new(Limit::packets(10));
    for i in 0..10 {
        h.enq(&mut q, i, pkt(1514, 1, NOT_ECT));
    }
    assert_eq!((q.len_pkts(), h.totals().drops_queue), (10, 0));
    h.enq(&mut q, 10, pkt(60, 2, NOT_ECT));
    assert_eq!((q.len_pkts(), h.totals().drops_queue), (10, 1));
    assert_eq!(sport(&h.deq(&mut q, 11).unwrap()), 1);
    h.enq(&mut q, 12, pkt(60, 3, NOT_ECT));
    assert_eq!(q.len_pkts(), 10);
}

#[test]
fn byte_limit_admits_a_packet_that_fills_it_exactly() {
    let run = |last: usize| {
        let mut h = Harness::new(1);
        let mut q = DropTail::new(Limit::bytes(10_000));
        for _ in 0..9 {
            h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT));
        }
        h.enq(&mut q, 0, pkt(last, 2, NOT_ECT));
        (q.len_bytes(), h.totals().drops_queue)
    };
    assert_eq!(run(1000), (10_000, 0));
    assert_eq!(run(1001), (9_000, 1));
}

#[test]
fn with_both_limits_the_first_one_reached_applies() {
    let mut h = Harness::new(1);
    let both = Limit {
        packets: Some(5),
        bytes: Some(3_000),
    };
    let mut q = DropTail::new(both);
    for _ in 0..10 {
        h.enq(&mut q, 0, pkt(100, 1, NOT_ECT));
    }
    assert_eq!((q.len_pkts(), q.len_bytes()), (5, 500), "packets first");
    let mut q = DropTail::new(both);
    for _ in 0..10 {
        h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT));
    }
    assert_eq!((q.len_pkts(), q.len_bytes()), (3, 3_000), "bytes first");
}

#[test]
fn packets_leave_in_arrival_order() {
    let mut h = Harness::new(1);
    let mut q = DropTail::new(Limit::packets(100));
    for s in 1..=20 {
        h.enq(&mut q, s as u64, pkt(100 + s as usize, s, NOT_ECT));
    }
    let got: Vec<u16> = h.drain(&mut q, 100).iter().map(sport).collect();
    assert_eq!(got, (1..=20).collect::<Vec<u16>>());
    assert_eq!((q.len_pkts(), q.len_bytes()), (0, 0));
}
