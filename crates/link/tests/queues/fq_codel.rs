//! FQ-CoDel: RFC 8290 (T. Høiland-Jørgensen, P. McKenney, D. Täht, J. Gettys,
//! E. Dumazet): §4.1 enqueue (classification, new flows, overflow from the fattest
//! queue), §4.2 dequeue (new flows first, deficit round robin with a byte quantum, the
//! detour of emptied new queues through the old list), CoDel per queue (RFC 8289).

use super::*;
use ccarena_link::queue::codel::CodelParams;
use ccarena_link::queue::fq_codel::{FqCodel, FqCodelParams};
use ccarena_link::queue::Limit;

const MS: u64 = 1_000_000;

/// FQ-CoDel with `quantum`; `quiet`: a CoDel target no test reaches (scheduling only).
fn fq(quantum: u32, limit: Limit, quiet: bool) -> FqCodel {
    fq_perturbed(quantum, limit, quiet, 7)
}

fn fq_perturbed(quantum: u32, limit: Limit, quiet: bool, perturb: u32) -> FqCodel {
    let mut codel = CodelParams::default();
    if quiet {
        codel.target_ns = 1_000_000 * MS;
    }
    FqCodel::new(
        FqCodelParams {
            flows: 1024,
            quantum,
            codel,
            perturb,
        },
        limit,
    )
}

fn order(h: &mut Harness, q: &mut FqCodel, n: usize) -> Vec<u16> {
    (0..n)
        .map(|_| sport(&h.deq(q, 0).expect("a packet")))
        .collect()
}

#[test]
fn drr_gives_backlogged_flows_equal_bytes_whatever_their_packet_sizes() {
    // §4.2: each round a queue may send `quantum` bytes; a flow of small packets sends
    // more of them, not more bytes.
    let mut h = Harness::new(1);
    let mut q = fq(1514, Limit::packets(10_000), true);
    for _ in 0..400 {
        h.enq(&mut q, 0, pkt(1500, 1, NOT_ECT));
    }
    for _ in 0..2000 {
        h.enq(&mut q, 0, pkt(300, 2, NOT_ECT));
    }
    let (mut a, mut b) = (0u64, 0u64);
    for _ in 0..1500 {
        let p = h.deq(&mut q, 0).unwrap();
        match sport(&p) {
            1 => a += p.len() as u64,
            _ => b += p.len() as u64,
        }
        assert!(a.abs_diff(b) <= 1514 + 1500, "bytes {a} vs {b}");
    }
    assert!(a > 100_000 && b > 100_000);
}

#[test]
fn a_queue_sends_a_quantum_then_moves_behind_the_others() {
    // §4.2: a queue whose deficit is spent (≤ 0) gets another quantum and goes to the
    // tail of the old list. Quantum 3000, 1000-byte packets: three per turn.
    let mut h = Harness::new(1);
    let mut q = fq(3000, Limit::packets(100), true);
    for _ in 0..9 {
        h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT));
    }
    for _ in 0..9 {
        h.enq(&mut q, 0, pkt(1000, 2, NOT_ECT));
    }
    assert_eq!(
        order(&mut h, &mut q, 12),
        vec![1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2]
    );
}

#[test]
fn a_new_flow_is_served_before_old_flows() {
    let mut h = Harness::new(1);
    let mut q = fq(1514, Limit::packets(100), true);
    for _ in 0..20 {
        h.enq(&mut q, 0, pkt(1514, 1, NOT_ECT));
    }
    order(&mut h, &mut q, 5); // flow 1 is old now
    h.enq(&mut q, 0, pkt(100, 2, NOT_ECT));
    assert_eq!(order(&mut h, &mut q, 2), vec![2, 1]);
}

#[test]
fn an_emptied_new_flow_waits_in_the_old_list() {
    // §4.2: an empty queue taken from the new list goes to the end of the old list, so
    // its next packet waits for the old queues' turn instead of being new again.
    let mut h = Harness::new(1);
    let mut q = fq(3 * 1514, Limit::packets(100), true);
    for _ in 0..20 {
        h.enq(&mut q, 0, pkt(1514, 1, NOT_ECT));
    }
    order(&mut h, &mut q, 4); // flow 1: old, two packets of its quantum left
    h.enq(&mut q, 0, pkt(100, 2, NOT_ECT));
    assert_eq!(
        order(&mut h, &mut q, 2),
        vec![2, 1],
        "new flow 2 first, then empties"
    );
    h.enq(&mut q, 0, pkt(100, 2, NOT_ECT));
    assert_eq!(
        order(&mut h, &mut q, 2),
        vec![1, 2],
        "flow 2 waits behind flow 1 now"
    );
}

#[test]
fn an_emptied_old_flow_leaves_the_lists_and_comes_back_new() {
    // §4.2: an empty queue from the old list is removed; its next packet makes it new.
    let mut h = Harness::new(1);
    let mut q = fq(1514, Limit::packets(100), true);
    for _ in 0..2 {
        h.enq(&mut q, 0, pkt(1514, 1, NOT_ECT));
    }
    for _ in 0..10 {
        h.enq(&mut q, 0, pkt(1514, 3, NOT_ECT));
    }
    assert_eq!(order(&mut h, &mut q, 5), vec![1, 3, 1, 3, 3]);
    h.enq(&mut q, 0, pkt(1514, 1, NOT_ECT));
    assert_eq!(order(&mut h, &mut q, 2), vec![1, 3]);
}

#[test]
fn an_empty_discipline_returns_nothing_and_forgets_its_flows() {
    let mut h = Harness::new(1);
    let mut q = fq(1514, Limit::packets(100), true);
    h.enq(&mut q, 0, pkt(500, 1, NOT_ECT));
    assert!(h.deq(&mut q, 0).is_some());
    assert!(h.deq(&mut q, 0).is_none());
    assert!(h.deq(&mut q, 0).is_none());
    assert_eq!((q.len_pkts(), q.len_bytes()), (0, 0));
    h.enq(&mut q, 0, pkt(500, 4, NOT_ECT));
    assert_eq!(order(&mut h, &mut q, 1), vec![4]);
}

#[test]
fn codel_backlog_test_counts_every_flow_queue() {
    // 50 flows of 4 full-size packets, all queued at 0 and served one per ms: each flow
    // is visited every 50 ms, and its sojourn is far above target. A flow queue alone
    // holds at most one MTU behind its third packet, but the link holds much more, so
    // CoDel (whose backlog test keeps the link busy, RFC 8289 §5 dodequeue) drops.
    let mut h = Harness::new(1);
    let mut q = fq(1514, Limit::packets(1000), false);
    for _ in 0..4 {
        for f in 0..50 {
            h.enq(&mut q, 0, pkt(1514, 100 + f, NOT_ECT));
        }
    }
    let mut t = 0;
    while q.len_pkts() > 0 {
        t += MS;
        h.deq(&mut q, t);
    }
    assert!(h.totals().drops_aqm > 0);
}

#[test]
fn sparse_flow_stays_fast_next_to_a_bulk_flow() {
    // Bulk flow at twice the service rate (one 1514-byte packet per 1.2 ms is served),
    // sparse flow one 100-byte packet per 50 ms: the sparse flow is new at every arrival
    // and waits at most for the packet being served.
    let mut h = Harness::new(1);
    let mut q = fq(1514, Limit::packets(1000), false);
    let (mut ta, mut ts, mut tsv) = (0u64, MS, 0u64);
    let (mut sparse_max, mut bulk_max, mut sparse_n) = (0, 0, 0);
    let end = 5_000 * MS;
    while tsv < end {
        let next = ta.min(ts).min(tsv);
        if next == ta {
            h.enq(&mut q, ta, pkt(1514, 1, NOT_ECT));
            ta += 600_000;
        } else if next == ts {
            h.enq(&mut q, ts, pkt(100, 2, NOT_ECT));
            ts += 50 * MS;
        } else {
            if let Some(p) = h.deq(&mut q, tsv) {
                let soj = tsv - p.enq_ns;
                if sport(&p) == 2 {
                    sparse_max = sparse_max.max(soj);
                    sparse_n += 1;
                } else if tsv > 1_000 * MS {
                    bulk_max = bulk_max.max(soj);
                }
            }
            tsv += 1_200_000;
        }
        assert!(q.len_pkts() <= 1000);
    }
    assert_eq!(sparse_n, 100, "every sparse packet delivered");
    assert!(
        sparse_max <= 1_200_000,
        "sparse flow sojourn {sparse_max} ns"
    );
    assert!(bulk_max > 5 * MS, "bulk flow does queue ({bulk_max} ns)");
    assert!(h.totals().drops_aqm > 0, "CoDel acts on the bulk flow");
}

#[test]
fn overflow_drops_from_the_fattest_flow() {
    // §4.1: over the limit, packets are dropped from the queue with the most bytes.
    let mut h = Harness::new(1);
    let mut q = fq(1514, Limit::packets(100), true);
    for i in 0..10 {
        h.enq(&mut q, i, pkt(1514, 9, NOT_ECT));
    }
    for i in 0..200 {
        h.enq(&mut q, 100 + i, pkt(1514, 1, NOT_ECT));
        assert!(q.len_pkts() <= 100);
    }
    // Every packet is queued or counted as dropped (drops come in batches, §4.1 note).
    assert_eq!(h.totals().drops_queue + q.len_pkts() as u64, 210);
    let small = h
        .drain(&mut q, 1000)
        .iter()
        .filter(|p| sport(p) == 9)
        .count();
    assert_eq!(small, 10, "the small flow kept all its packets");
    assert_eq!((q.len_pkts(), q.len_bytes()), (0, 0));
}

#[test]
fn byte_limit_holds_and_oversized_packets_are_refused() {
    let mut h = Harness::new(1);
    let mut q = fq(1514, Limit::bytes(10_000), true);
    for i in 0..50 {
        h.enq(&mut q, 0, pkt(1000, 1 + (i % 3), NOT_ECT));
        assert!(q.len_bytes() <= 10_000);
    }
    assert_eq!(q.len_bytes(), 10_000);
    let mut h2 = Harness::new(1);
    let mut q2 = fq(1514, Limit::bytes(1_500), true);
    h2.enq(&mut q2, 0, pkt(1501, 1, NOT_ECT));
    assert_eq!(
        (q2.len_pkts(), h2.totals().drops_queue),
        (0, 1),
        "larger than the limit"
    );
    h2.enq(&mut q2, 0, pkt(1500, 1, NOT_ECT));
    assert_eq!(
        (q2.len_pkts(), h2.totals().drops_queue),
        (1, 1),
        "exactly the limit fits"
    );
}

#[test]
fn an_overflow_drops_at_most_64_packets_at_once() {
    // §4.1 (as Linux): drop from the fattest queue until half its bytes are gone, but no
    // more than 64 packets per overflow.
    let mut h = Harness::new(1);
    let mut q = fq(1514, Limit::packets(200), true);
    for _ in 0..201 {
        h.enq(&mut q, 0, pkt(100, 1, NOT_ECT));
    }
    assert_eq!((q.len_pkts(), h.totals().drops_queue), (201 - 64, 64));
    let mut h = Harness::new(1);
    let mut q = fq(1514, Limit::packets(20), true);
    for _ in 0..21 {
        h.enq(&mut q, 0, pkt(100, 1, NOT_ECT));
    }
    assert_eq!(
        q.len_pkts(),
        10,
        "half of the 21 packets' bytes, rounded down, stays"
    );
}

#[test]
fn flows_get_their_own_queues_whatever_the_perturbation() {
    // §4.1.1: the hash is perturbed, never collapsed: two flows land in two queues (and
    // are served in turn) for any perturbation value.
    for perturb in [0, 7, 0x8000_0001, u32::MAX] {
        let mut h = Harness::new(1);
        let mut q = fq_perturbed(1514, Limit::packets(100), true, perturb);
        for f in [1, 2] {
            for _ in 0..3 {
                h.enq(&mut q, 0, pkt(1514, f, NOT_ECT));
            }
        }
        assert_eq!(
            order(&mut h, &mut q, 6),
            vec![1, 2, 1, 2, 1, 2],
            "perturb {perturb:#x}"
        );
    }
}

#[test]
fn at_most_one_mtu_queued_in_all_is_never_dropped() {
    // The backlog test of RFC 8289 dodequeue, with the bytes of all queues: 1514 bytes
    // left after the dequeue is not "above" (CoDel's MTU is 1514 bytes).
    let run = |sizes: &[usize]| {
        let mut h = Harness::new(1);
        let mut q = fq(1_000_000, Limit::packets(100), false);
        for &s in sizes {
            h.enq(&mut q, 0, pkt(s, 1, NOT_ECT));
        }
        h.deq(&mut q, 5 * MS); // sojourn = target: first_above_time = 105 ms
        h.deq(&mut q, 105 * MS);
        h.totals().drops_aqm
    };
    assert_eq!(run(&[100, 100, 1414, 100]), 0);
    assert_eq!(run(&[100, 100, 100, 1515]), 1);
}
