//! CoDel: RFC 8289 (K. Nichols, V. Jacobson, A. McGregor, J. Iyengar), the pseudocode of
//! §5 (`dodequeue`, `dequeue`, `control_law`). Sojourn times are set exactly by choosing
//! when packets are enqueued and when they are dequeued.

use super::*;
use ccarena_link::queue::codel::{Codel, CodelParams};
use ccarena_link::queue::Limit;

const MS: u64 = 1_000_000;
const TARGET: u64 = 5 * MS;
const INTERVAL: u64 = 100 * MS;

fn codel(ecn: bool) -> Codel {
    Codel::new(
        CodelParams {
            ecn,
            ..CodelParams::default()
        },
        Limit::packets(100_000),
    )
}

fn fill(h: &mut Harness, q: &mut Codel, t: u64, n: usize, size: usize, ecn: u8) {
    for _ in 0..n {
        h.enq(q, t, pkt(size, 1, ecn));
    }
}

/// Dequeue at `t`; return the packet and how many AQM signals (drops + marks) it caused.
fn deq(h: &mut Harness, q: &mut Codel, t: u64) -> (Option<ccarena_link::packet::Packet>, u64) {
    let before = h.totals().drops_aqm + h.totals().marks;
    let p = h.deq(q, t);
    (p, h.totals().drops_aqm + h.totals().marks - before)
}

/// Dequeue every `step` ns in (from, to]; the times at which signals happened (one entry
/// per signal).
fn signal_times(h: &mut Harness, q: &mut Codel, from: u64, to: u64, step: u64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut t = from + step;
    while t <= to {
        let (_, n) = deq(h, q, t);
        out.extend(std::iter::repeat_n(t, n as usize));
        t += step;
    }
    out
}

/// The schedule of the control law from a first drop at `first`: drop k+1 is due
/// `interval/√k` after drop k's due time (RFC 8289 `control_law`, whole ns).
fn control_law_schedule(first: u64, n: usize) -> Vec<u64> {
    let mut due = vec![first];
    for k in 1..n {
        let last = due[k - 1];
        due.push(last + (INTERVAL as f64 / (k as f64).sqrt()) as u64);
    }
    due
}

/// The first multiple of `step` at or after `t`.
fn on_grid(t: u64, step: u64) -> u64 {
    t.div_ceil(step) * step
}

#[test]
fn sojourn_at_target_is_above_and_the_first_drop_comes_one_interval_later() {
    // dodequeue: `sojourn < TARGET` is below; the first dequeue above sets
    // first_above_time = now + INTERVAL; ok to drop once now ≥ first_above_time.
    let mut h = Harness::new(1);
    let mut q = codel(false);
    fill(&mut h, &mut q, 0, 20, 1000, NOT_ECT);
    assert_eq!(deq(&mut h, &mut q, TARGET - 1).1, 0);
    assert_eq!(deq(&mut h, &mut q, TARGET).1, 0);
    assert_eq!(deq(&mut h, &mut q, TARGET + INTERVAL - 1).1, 0);
    let (p, n) = deq(&mut h, &mut q, TARGET + INTERVAL);
    assert_eq!(n, 1, "the first drop at first_above_time");
    assert!(p.is_some(), "the packet after the dropped one is delivered");
    assert_eq!(q.len_pkts(), 20 - 5);
}

#[test]
fn a_sojourn_below_target_restarts_the_interval() {
    let mut h = Harness::new(1);
    let mut q = codel(false);
    fill(&mut h, &mut q, 0, 3, 1000, NOT_ECT);
    fill(&mut h, &mut q, 48 * MS, 30, 1000, NOT_ECT);
    deq(&mut h, &mut q, 5 * MS); // above: first_above_time = 105 ms
    deq(&mut h, &mut q, 6 * MS);
    deq(&mut h, &mut q, 7 * MS);
    deq(&mut h, &mut q, 50 * MS); // sojourn 2 ms: below
    deq(&mut h, &mut q, 60 * MS); // above again: first_above_time = 160 ms
    assert_eq!(deq(&mut h, &mut q, 105 * MS).1, 0);
    assert_eq!(deq(&mut h, &mut q, 160 * MS - 1).1, 0);
    assert_eq!(deq(&mut h, &mut q, 160 * MS).1, 1);
}

#[test]
fn an_empty_queue_restarts_the_interval() {
    let mut h = Harness::new(1);
    let mut q = codel(false);
    fill(&mut h, &mut q, 0, 3, 1000, NOT_ECT);
    deq(&mut h, &mut q, 5 * MS); // above: first_above_time = 105 ms
    deq(&mut h, &mut q, 6 * MS);
    deq(&mut h, &mut q, 7 * MS);
    assert!(deq(&mut h, &mut q, 8 * MS).0.is_none());
    fill(&mut h, &mut q, 50 * MS, 30, 1000, NOT_ECT);
    assert_eq!(
        deq(&mut h, &mut q, 106 * MS).1,
        0,
        "first_above_time now 206 ms"
    );
    assert_eq!(deq(&mut h, &mut q, 206 * MS - 1).1, 0);
    assert_eq!(deq(&mut h, &mut q, 206 * MS).1, 1);
}

#[test]
fn at_most_one_mtu_behind_the_packet_is_never_dropped() {
    // dodequeue: `bytes() <= maxpacket` (the queue after the packet left) counts as below,
    // so the link never runs dry for want of a packet. MTU here: 1514 bytes.
    let run = |sizes: &[usize]| {
        let mut h = Harness::new(1);
        let mut q = codel(false);
        for &s in sizes {
            h.enq(&mut q, 0, pkt(s, 1, NOT_ECT));
        }
        deq(&mut h, &mut q, TARGET);
        deq(&mut h, &mut q, TARGET + INTERVAL).1
    };
    assert_eq!(run(&[100, 100, 1414, 100]), 0, "1514 bytes left: below");
    assert_eq!(run(&[100, 100, 100, 1515]), 1, "1615 bytes left: above");
}

#[test]
fn drops_follow_the_control_law_interval_over_sqrt_count() {
    // A backlog that never drains: every sojourn is above target from 5 ms on. The first
    // drop comes at 105 ms; drop k+1 is due interval/√k after drop k was due.
    let step = 250_000;
    let mut h = Harness::new(1);
    let mut q = codel(false);
    fill(&mut h, &mut q, 0, 6000, 200, NOT_ECT);
    let got = signal_times(&mut h, &mut q, 0, 1_300 * MS, step);
    assert!(got.len() >= 20, "{} drops", got.len());
    let want: Vec<u64> = control_law_schedule(TARGET + INTERVAL, got.len())
        .into_iter()
        .map(|d| on_grid(d, step))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn marks_follow_the_same_schedule_and_marked_packets_are_delivered() {
    let step = 250_000;
    let mut h = Harness::new(1);
    let mut q = codel(true);
    fill(&mut h, &mut q, 0, 6000, 200, ECT0);
    let mut got = Vec::new();
    let mut ce = 0;
    let mut t = step;
    while t <= 1_300 * MS {
        let (p, n) = deq(&mut h, &mut q, t);
        let p = p.expect("nothing is dropped");
        assert_eq!(
            p.ecn() == Some(CE),
            n == 1,
            "the signalled packet is the one delivered"
        );
        ce += n;
        got.extend(std::iter::repeat_n(t, n as usize));
        t += step;
    }
    assert_eq!(h.totals().drops_aqm, 0);
    assert_eq!(h.totals().marks, ce);
    let want: Vec<u64> = control_law_schedule(TARGET + INTERVAL, got.len())
        .into_iter()
        .map(|d| on_grid(d, step))
        .collect();
    assert_eq!(got, want);
}

#[test]
fn not_ect_packets_are_dropped_even_with_ecn_on() {
    let mut h = Harness::new(1);
    let mut q = codel(true);
    fill(&mut h, &mut q, 0, 2000, 200, NOT_ECT);
    signal_times(&mut h, &mut q, 0, 500 * MS, MS);
    assert!(h.totals().drops_aqm > 0);
    assert_eq!(h.totals().marks, 0);
}

#[test]
fn a_sojourn_below_target_ends_the_dropping_state() {
    let mut h = Harness::new(1);
    let mut q = codel(false);
    fill(&mut h, &mut q, 0, 11, 1000, NOT_ECT);
    fill(&mut h, &mut q, 110 * MS, 30, 1000, NOT_ECT);
    deq(&mut h, &mut q, 5 * MS);
    assert_eq!(
        deq(&mut h, &mut q, 105 * MS).1,
        1,
        "enters dropping; next due at 205 ms"
    );
    for i in 0..8 {
        assert_eq!(deq(&mut h, &mut q, 106 * MS + i * MS).1, 0);
    }
    deq(&mut h, &mut q, 114 * MS); // sojourn 4 ms: leaves the dropping state
    deq(&mut h, &mut q, 200 * MS); // above: first_above_time = 300 ms
    assert_eq!(
        deq(&mut h, &mut q, 205 * MS).1,
        0,
        "no drop at the old drop_next"
    );
    assert_eq!(deq(&mut h, &mut q, 300 * MS - 1).1, 0);
    assert_eq!(deq(&mut h, &mut q, 300 * MS).1, 1);
}

/// How the first dropping episode of `two_episodes` ends.
#[derive(Clone, Copy)]
enum Exit {
    /// After its 10th drop the backlog is drained at once: the last dequeues leave at
    /// most one MTU queued, which ends the dropping state. count = 10.
    Drained,
    /// At its 11th drop the packet behind the dropped one has a sojourn below target,
    /// which ends the dropping state there. count = 11.
    BelowTarget,
}

/// Episode 1: a backlog at 0, dequeued every 250 µs, ended as `exit` says; lastcount = 1.
/// Episode 2: a backlog at `t2` = (the last drop_next of episode 1) + `t2_after`,
/// dequeued every 250 µs: it enters the dropping state at t2 + 105 ms. Returns the gap
/// between episode 2's first two drops.
fn two_episodes(exit: Exit, t2_after: i64) -> u64 {
    let step = 250_000;
    let mut h = Harness::new(1);
    let mut q = codel(false);
    // 1515-byte packets: even one of them left queued is more than an MTU.
    fill(&mut h, &mut q, 0, 3000, 1515, NOT_ECT);
    let mut drops = 0;
    let mut t = 0;
    while drops < 10 {
        t += step;
        drops += deq(&mut h, &mut q, t).1;
    }
    let due = control_law_schedule(TARGET + INTERVAL, 12);
    assert_eq!(t, on_grid(due[9], step));
    let last_due = match exit {
        Exit::Drained => {
            h.drain(&mut q, t);
            assert_eq!(
                h.totals().drops_aqm,
                10,
                "draining before drop_next drops nothing"
            );
            due[10]
        }
        Exit::BelowTarget => {
            while q.len_pkts() > 1 {
                h.deq(&mut q, t);
            }
            fill(&mut h, &mut q, due[10] - MS, 20, 200, NOT_ECT);
            let (p, n) = deq(&mut h, &mut q, due[10]);
            assert_eq!(
                (p.unwrap().len(), n),
                (200, 1),
                "the 11th drop, then a fresh packet"
            );
            h.drain(&mut q, due[10]);
            assert_eq!(h.totals().drops_aqm, 11);
            // The drop that ended the episode scheduled nothing: drop_next stays due[10].
            due[10]
        }
    };
    let t2 = (last_due as i64 + t2_after) as u64;
    fill(&mut h, &mut q, t2, 3000, 200, NOT_ECT);
    let got = signal_times(&mut h, &mut q, t2, t2 + 400 * MS, step);
    assert_eq!(got[0], t2 + TARGET + INTERVAL);
    got[1] - got[0]
}

/// The gap after a re-entry at count `c`: interval/√c, seen on the 250 µs grid.
fn resumed_gap(c: u64) -> u64 {
    on_grid((INTERVAL as f64 / (c as f64).sqrt()) as u64, 250_000)
}

#[test]
fn reentering_soon_resumes_at_count_minus_lastcount() {
    // dequeue: delta = count − lastcount = 9 > 1 and now − drop_next < 16·interval:
    // count = 9, so the second drop is interval/√9 after the first.
    assert_eq!(two_episodes(Exit::Drained, 10 * MS as i64), resumed_gap(9));
    assert_eq!(
        two_episodes(Exit::BelowTarget, 10 * MS as i64),
        resumed_gap(10)
    );
}

#[test]
fn reentering_16_intervals_after_the_last_drop_due_starts_at_count_1() {
    // now − drop_next = 16·interval exactly is not "< 16·interval": count = 1. The
    // episode that ended below target must not have moved drop_next on.
    let at = 16 * INTERVAL as i64 - (TARGET + INTERVAL) as i64;
    for exit in [Exit::Drained, Exit::BelowTarget] {
        assert_eq!(two_episodes(exit, at), INTERVAL);
    }
    assert_eq!(
        two_episodes(Exit::Drained, at - 1),
        resumed_gap(9),
        "1 ns sooner"
    );
    assert_eq!(
        two_episodes(Exit::BelowTarget, at - 1),
        resumed_gap(10),
        "1 ns sooner"
    );
}

#[test]
fn persistent_overload_keeps_the_sojourn_bounded() {
    // Unresponsive load at 1.25× the service rate: without CoDel the sojourn would grow to
    // 2.5 s over 10 s; the rising drop rate keeps it far below.
    let mut h = Harness::new(1);
    let mut q = codel(false);
    let (mut next_a, mut next_s, mut max_soj, mut late_served) = (0u64, 0u64, 0u64, 0u64);
    let dur = 10_000 * MS;
    while next_a.min(next_s) < dur {
        if next_a <= next_s {
            h.enq(&mut q, next_a, pkt(1514, 1, NOT_ECT));
            next_a += 960_000;
        } else {
            if let Some(p) = h.deq(&mut q, next_s) {
                if next_s > dur / 2 {
                    max_soj = max_soj.max(next_s - p.enq_ns);
                    late_served += 1;
                }
            }
            next_s += 1_200_000;
        }
    }
    assert!(h.totals().drops_aqm > 0);
    // The link stays busy in the second half (≥ 90 % of its 1.2 ms service slots).
    let slots = dur / 2 / 1_200_000;
    assert!(
        late_served * 10 >= slots * 9,
        "{late_served} of {slots} slots"
    );
    assert!(max_soj < 1_000 * MS, "max sojourn {max_soj}");
}

#[test]
fn buffer_limit_is_a_hard_tail_drop_limit() {
    let mut h = Harness::new(1);
    let mut q = Codel::new(CodelParams::default(), Limit::bytes(10_000));
    for _ in 0..20 {
        h.enq(&mut q, 0, pkt(1000, 1, NOT_ECT));
    }
    assert_eq!((q.len_pkts(), q.len_bytes()), (10, 10_000));
    assert_eq!(h.totals().drops_queue, 10);
}
