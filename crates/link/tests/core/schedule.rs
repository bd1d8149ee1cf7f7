//! Rate schedules: the rate in force changes at the scheduled times, and a change during a
//! frame's transmission re-times the bits still to send (as a real link's would).

use super::*;

/// A link whose w2e direction follows `initial` then `steps` ((t_ns, bit/s), from t = 0),
/// with no delay and a large buffer.
fn scheduled(initial: u64, steps: &[(u64, Option<u64>)]) -> Link {
    let dp = DirParams::simple(
        RateSpec::Schedule {
            initial: Some(initial),
            steps: steps.to_vec(),
        },
        0,
        Limit::packets(100_000),
    );
    Link::new(&params(dp), 0)
}

fn dues(link: &mut Link, end: u64) -> Vec<u64> {
    let mut out = Vec::new();
    run_until(link, 0, end, &mut out);
    out.iter().map(|r| r.due_ns).collect()
}

#[test]
fn slowing_down_mid_frame_sends_the_rest_at_the_new_rate() {
    // 1250 bytes = 10 000 bits: 5 000 bits go in the first 0.5 ms at 10 Mbit/s, the other
    // 5 000 at 5 Mbit/s take 1 ms.
    let mut link = scheduled(10_000_000, &[(500_000, Some(5_000_000))]);
    link.enqueue(0, W2E, pkt(1250, 1));
    link.enqueue(0, W2E, pkt(1250, 1));
    assert_eq!(link.next_deadline(), Some(1_500_000));
    assert_eq!(dues(&mut link, u64::MAX / 2), vec![1_500_000, 3_500_000]);
}

#[test]
fn speeding_up_mid_frame_finishes_the_frame_at_the_new_rate() {
    // 10 Mbit/s, 1 kbit/s from 3 s, 10 Mbit/s again from 8 s. The frame that
    // starts at 3 s sends 5 000 of its 10 000 bits by 8 s, the rest in 0.5 ms.
    let mut link = scheduled(
        10_000_000,
        &[
            (3_000_000_000, Some(1_000)),
            (8_000_000_000, Some(10_000_000)),
        ],
    );
    for _ in 0..3_100 {
        link.enqueue(0, W2E, pkt(1250, 1)); // 1 ms each at 10 Mbit/s
    }
    let d = dues(&mut link, 9_000_000_000);
    assert_eq!(
        d[2_999], 3_000_000_000,
        "the 3000th frame ends as the rate drops"
    );
    assert_eq!(d[3_000], 8_000_500_000);
    assert_eq!(d[3_001], 8_001_500_000);
    assert_eq!(d.len(), 3_100);
}

#[test]
fn a_slow_phase_does_not_hold_the_link_after_it_ends() {
    // The run with full-size frames: from 8 s on the backlogged link delivers at
    // its rate again (≤ 10 Mbit/s and not much less), and during the 1 kbit/s phase at
    // most the one frame in transmission finishes.
    let frame = 1514u64;
    let mut link = scheduled(
        10_000_000,
        &[
            (3_000_000_000, Some(1_000)),
            (8_000_000_000, Some(10_000_000)),
        ],
    );
    for _ in 0..5_000 {
        link.enqueue(0, W2E, pkt(frame as usize, 1));
    }
    let d = dues(&mut link, 10_000_000_000);
    let in_window = |a: u64, b: u64| d.iter().filter(|&&t| t > a && t <= b).count() as u64;
    assert!(in_window(3_000_000_000, 8_000_000_000) <= 1);
    let bits = in_window(8_000_000_000, 10_000_000_000) * frame * 8;
    assert!(bits <= 2 * 10_000_000 + frame * 8, "{bits} bits in 2 s");
    assert!(bits >= 2 * 10_000_000 - 2 * frame * 8, "{bits} bits in 2 s");
}

#[test]
fn a_change_to_unlimited_ends_the_frame_in_transmission_at_once() {
    let mut link = scheduled(1_000_000, &[(4_000_000, None)]);
    link.enqueue(0, W2E, pkt(1250, 1)); // 10 ms at 1 Mbit/s
    link.enqueue(0, W2E, pkt(1250, 1));
    assert_eq!(dues(&mut link, u64::MAX / 2), vec![4_000_000, 4_000_000]);
}

#[test]
fn a_frame_ending_on_a_change_is_timed_by_the_old_rate_alone() {
    // The 10th 1250-byte frame at 10 Mbit/s ends at exactly 10 ms, when 20 Mbit/s starts:
    // it is not re-timed; the 11th starts at the new rate.
    let mut link = scheduled(10_000_000, &[(10_000_000, Some(20_000_000))]);
    for _ in 0..12 {
        link.enqueue(0, W2E, pkt(1250, 1));
    }
    let d = dues(&mut link, u64::MAX / 2);
    assert_eq!(&d[8..], &[9_000_000, 10_000_000, 10_500_000, 11_000_000]);
}

#[test]
fn the_schedule_counts_from_t0() {
    // With t0 at 5 ms, the change at 1 ms takes effect at 6 ms.
    let mut p = params(DirParams::simple(
        RateSpec::Schedule {
            initial: Some(10_000_000),
            steps: vec![(1_000_000, Some(5_000_000))],
        },
        0,
        Limit::packets(100),
    ));
    p.t0_ns = Some(5_000_000);
    let mut link = Link::new(&p, 0);
    for _ in 0..8 {
        link.enqueue(0, W2E, pkt(1250, 1));
    }
    let d = dues(&mut link, u64::MAX / 2);
    assert_eq!(&d[4..], &[5_000_000, 6_000_000, 8_000_000, 10_000_000]);
}

#[test]
fn rounding_to_whole_ns_does_not_drift() {
    // 1000-byte frames at 3 Mbit/s take 2 666 666.67 ns: frame k ends at
    // floor(k·8000·10⁹/3·10⁶) exactly, however many frames came before; also across a
    // schedule change (at 9 Mbit/s a frame takes 888 888.89 ns).
    let n = 300u64;
    let exact = |k: u64, start: u64, rate: u64| start + k * 8_000 * 1_000_000_000 / rate;
    let mut link = scheduled(3_000_000, &[(400_000_000, Some(9_000_000))]);
    for _ in 0..n {
        link.enqueue(0, W2E, pkt(1000, 1));
    }
    let d = dues(&mut link, u64::MAX / 2);
    // 150 frames take exactly 400 ms at 3 Mbit/s: the change falls between two frames.
    for k in 1..=150 {
        assert_eq!(d[k as usize - 1], exact(k, 0, 3_000_000), "frame {k}");
    }
    for k in 1..=(n - 150) {
        assert_eq!(
            d[(149 + k) as usize],
            exact(k, 400_000_000, 9_000_000),
            "frame {}",
            150 + k
        );
    }
}

#[test]
fn an_outage_holds_the_queue_and_it_flows_at_the_rate_once_it_ends() {
    // 10 Mbit/s, nothing from 1 ms to 5 ms (a link flap), 10 Mbit/s again: the first
    // frame ends as the outage starts, the others wait and leave 1 ms apart from 5 ms.
    let mut link = scheduled(
        10_000_000,
        &[(1_000_000, Some(0)), (5_000_000, Some(10_000_000))],
    );
    for _ in 0..4 {
        link.enqueue(0, W2E, pkt(1250, 1)); // 1 ms each at 10 Mbit/s
    }
    let mut out = Vec::new();
    link.poll(1_000_000, &mut out);
    assert_eq!(out.len(), 1);
    assert_eq!(link.next_deadline(), Some(5_000_000), "it wakes when the rate returns");
    assert_eq!(
        dues(&mut link, u64::MAX / 2),
        vec![6_000_000, 7_000_000, 8_000_000]
    );
}

#[test]
fn a_frame_in_transmission_when_an_outage_starts_sends_its_rest_after_it() {
    // Half of a 1 ms frame is sent before the outage at 0.5 ms; the other half after it
    // ends at 2 ms.
    let mut link = scheduled(
        10_000_000,
        &[(500_000, Some(0)), (2_000_000, Some(10_000_000))],
    );
    link.enqueue(0, W2E, pkt(1250, 1));
    link.enqueue(0, W2E, pkt(1250, 1));
    assert_eq!(link.next_deadline(), Some(2_500_000));
    assert_eq!(dues(&mut link, u64::MAX / 2), vec![2_500_000, 3_500_000]);
}

#[test]
fn during_an_outage_the_buffer_limit_drops_what_does_not_fit() {
    let dp = DirParams::simple(
        RateSpec::Schedule {
            initial: Some(10_000_000),
            steps: vec![(0, Some(0)), (10_000_000, Some(10_000_000))],
        },
        0,
        Limit::packets(5),
    );
    let mut link = Link::new(&params(dp), 0);
    for _ in 0..8 {
        link.enqueue(1_000_000, W2E, pkt(1250, 1));
    }
    assert_eq!(link.next_deadline(), Some(10_000_000));
    assert_eq!(
        dues(&mut link, u64::MAX / 2),
        vec![11_000_000, 12_000_000, 13_000_000, 14_000_000, 15_000_000]
    );
}

#[test]
fn an_outage_to_the_end_holds_everything_and_never_wakes_the_link() {
    let mut link = scheduled(10_000_000, &[(500_000, Some(0))]);
    link.enqueue(0, W2E, pkt(1250, 1)); // in transmission when the outage starts
    link.enqueue(0, W2E, pkt(1250, 1));
    let mut out = Vec::new();
    link.poll(100_000_000, &mut out);
    assert!(out.is_empty());
    assert_eq!(link.next_deadline(), None);
    // and an arrival during it queues without a deadline either
    let mut link = scheduled(10_000_000, &[(0, Some(0))]);
    link.enqueue(1_000, W2E, pkt(1250, 1));
    link.poll(2_000, &mut out);
    assert!(out.is_empty() && link.next_deadline().is_none());
}
