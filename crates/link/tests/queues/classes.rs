//! Strict-priority classes: the first matching class takes a packet, unmatched packets go
//! to the default class, each class is a drop-tail FIFO with its own limit, and dequeue
//! serves the lowest-numbered non-empty class.

use super::*;
use ccarena_link::packet::Packet;
use ccarena_link::queue::classes::{ClassMatch, Classes};
use ccarena_link::queue::Limit;

#[test]
fn priority_class_is_served_first_and_limits_are_per_class() {
    let mut h = Harness::new(1);
    let hi = ClassMatch {
        ports: vec![7],
        ..Default::default()
    };
    let mut q = Classes::new(
        vec![
            (hi, Limit::packets(5)),
            (ClassMatch::default(), Limit::packets(3)),
        ],
        None,
    );
    for i in 0..10 {
        h.enq(&mut q, i, pkt(1000, 1, NOT_ECT)); // sport 1: default class
        h.enq(&mut q, i, pkt(500, 7, NOT_ECT)); // sport 7: priority class
    }
    assert_eq!((q.class_len(0), q.class_len(1)), (5, 3));
    assert_eq!((q.len_pkts(), q.len_bytes()), (8, 5 * 500 + 3 * 1000));
    let sizes: Vec<usize> = h.drain(&mut q, 100).iter().map(|p| p.len()).collect();
    assert_eq!(sizes, vec![500, 500, 500, 500, 500, 1000, 1000, 1000]);
}

#[test]
fn protocols_filter_and_default_class() {
    let mut h = Harness::new(1);
    // Class 0: TCP port 7; class 1: UDP (the test packets are UDP); default: class 0.
    let udp = ClassMatch {
        protocols: vec![17],
        ..Default::default()
    };
    let tcp_port7 = ClassMatch {
        ports: vec![7],
        protocols: vec![6],
        ..Default::default()
    };
    let mut q = Classes::new(
        vec![
            (tcp_port7, Limit::packets(10)),
            (udp, Limit::packets(10)),
            (ClassMatch::default(), Limit::packets(10)),
        ],
        Some(0),
    );
    h.enq(&mut q, 0, pkt(500, 7, NOT_ECT)); // UDP port 7: not class 0 (TCP only) -> 1
    assert_eq!((q.class_len(0), q.class_len(1)), (0, 1));
    let mut arp = vec![0u8; 60];
    arp[12] = 0x08;
    arp[13] = 0x06;
    h.enq(&mut q, 0, Packet::from_frame(&arp)); // non-IP: default class 0
    assert_eq!((q.class_len(0), q.class_len(2)), (1, 0));
}

#[test]
fn addresses_match_source_or_destination() {
    let mut h = Harness::new(1);
    let by_ip = |ip: [u8; 4]| ClassMatch {
        ips: vec![u32::from_be_bytes(ip)],
        ..Default::default()
    };
    let mut q = Classes::new(
        vec![
            (by_ip([10, 2, 1, 2]), Limit::packets(10)), // the test packets' destination
            (ClassMatch::default(), Limit::packets(10)),
        ],
        None,
    );
    h.enq(&mut q, 0, pkt(500, 1, NOT_ECT));
    assert_eq!(q.class_len(0), 1);
    let mut q = Classes::new(
        vec![
            (by_ip([10, 1, 1, 2]), Limit::packets(10)), // their source
            (by_ip([10, 9, 9, 9]), Limit::packets(10)),
            (ClassMatch::default(), Limit::packets(10)),
        ],
        None,
    );
    h.enq(&mut q, 0, pkt(500, 1, NOT_ECT));
    assert_eq!((q.class_len(0), q.class_len(1), q.class_len(2)), (1, 0, 0));
}
