//! Jitter: a random term added to the one-way delay per packet. Uniform jitter J is ±J
//! around the delay (as netem's `delay D J`), and a flow's packets keep their order unless
//! reordering is asked for.

use super::*;
use ccarena_link::impair::{JitterModel, JitterSpec};

/// Send `n` packets, one every 100 µs, packet i of flow `sport_of(i)`, through an
/// unlimited-rate link with `delay_ns` and `jitter`; return (arrival, flow, due) of each
/// in release order.
fn delays(
    delay_ns: u64,
    jitter: JitterModel,
    reorder: bool,
    n: u64,
    sport_of: impl Fn(u64) -> u16,
) -> Vec<(u64, u16, u64)> {
    let mut dp = DirParams::simple(RateSpec::Unlimited, delay_ns, Limit::packets(100));
    dp.jitter = Some(JitterSpec::new(jitter, reorder));
    let mut link = Link::new(&params(dp), 0);
    let mut out = Vec::new();
    for i in 0..n {
        let t = i * 100_000;
        link.poll(t, &mut out);
        link.enqueue(t, W2E, pkt(100, sport_of(i)));
    }
    run_until(&mut link, n * 100_000, u64::MAX / 2, &mut out);
    assert_eq!(out.len() as u64, n);
    out.iter()
        .map(|r| (r.pkt.arrival_ns, r.pkt.ip.unwrap().sport, r.due_ns))
        .collect()
}

#[test]
fn uniform_jitter_spreads_delays_over_plus_minus_j() {
    // Every packet its own flow, reordering allowed: the raw distribution U(D − J, D + J).
    let (d, j) = (10_000_000u64, 2_000_000u64);
    let n = 20_000;
    let r = delays(d, JitterModel::Uniform { ns: j as f64 }, true, n, |i| {
        i as u16
    });
    let delay: Vec<u64> = r.iter().map(|&(a, _, due)| due - a).collect();
    let (lo, hi) = (*delay.iter().min().unwrap(), *delay.iter().max().unwrap());
    assert!(lo >= d - j && hi <= d + j, "delays {lo}..{hi}");
    // Both ends are reached: 20 000 draws leave gaps of about 2J/20 000 at the ends.
    assert!(lo < d - j + j / 100, "lowest {lo}");
    assert!(hi > d + j - j / 100, "highest {hi}");
    let below = delay.iter().filter(|&&x| x < d).count() as f64 / n as f64;
    assert!(
        (below - 0.5).abs() < 4.0 * (0.25 / n as f64).sqrt(),
        "below D: {below}"
    );
}

#[test]
fn without_reordering_a_flow_keeps_its_order_and_its_bounds() {
    let (d, j) = (10_000_000u64, 2_000_000u64);
    let r = delays(
        d,
        JitterModel::Uniform { ns: j as f64 },
        false,
        5_000,
        |i| (i % 3) as u16 + 1,
    );
    let mut last: std::collections::HashMap<u16, (u64, u64)> = Default::default();
    let mut held_back = 0;
    for &(arr, f, due) in &r {
        assert!(
            due >= arr + d - j && due <= arr + d + j,
            "delay {}",
            due - arr
        );
        if let Some(&(a0, d0)) = last.get(&f) {
            assert!(arr > a0, "flow {f} reordered");
            held_back += (due == d0) as u32;
        }
        last.insert(f, (arr, due));
    }
    assert!(
        held_back > 0,
        "some packets waited for an earlier one of their flow"
    );
}

#[test]
fn jitter_larger_than_the_delay_never_releases_before_arrival() {
    let r = delays(
        1_000_000,
        JitterModel::Uniform { ns: 2_000_000.0 },
        true,
        4_000,
        |i| i as u16,
    );
    assert!(r
        .iter()
        .all(|&(a, _, due)| due >= a && due <= a + 3_000_000));
    // P(D + U(−J, J) ≤ 0) = (J − D)/(2J) = 1/4: those leave on arrival.
    let at_arrival = r.iter().filter(|&&(a, _, due)| due == a).count();
    let frac = at_arrival as f64 / r.len() as f64;
    assert!(
        (frac - 0.25).abs() < 4.0 * (0.25 * 0.75 / r.len() as f64).sqrt(),
        "{frac}"
    );
}

#[test]
fn normal_and_exponential_jitter_stay_within_their_cuts() {
    let d = 50_000_000u64;
    let sd = 2_000_000.0;
    let r = delays(d, JitterModel::Normal { sd_ns: sd }, true, 4_000, |i| {
        i as u16
    });
    let dev: Vec<f64> = r
        .iter()
        .map(|&(a, _, due)| due as f64 - (a + d) as f64)
        .collect();
    assert!(dev.iter().all(|x| x.abs() <= 4.0 * sd + 1.0));
    let mean = dev.iter().sum::<f64>() / dev.len() as f64;
    assert!(
        mean.abs() < 4.0 * sd / (dev.len() as f64).sqrt(),
        "mean {mean}"
    );
    let var = dev.iter().map(|x| x * x).sum::<f64>() / dev.len() as f64;
    assert!((var.sqrt() / sd - 1.0).abs() < 0.05, "sd {}", var.sqrt());
    let m = 1_000_000.0;
    let r = delays(
        d,
        JitterModel::Exponential { mean_ns: m },
        true,
        4_000,
        |i| i as u16,
    );
    let extra: Vec<f64> = r
        .iter()
        .map(|&(a, _, due)| due as f64 - (a + d) as f64)
        .collect();
    assert!(extra.iter().all(|&x| (0.0..=40.0 * m + 1.0).contains(&x)));
    let mean = extra.iter().sum::<f64>() / extra.len() as f64;
    assert!(
        (mean - m).abs() < 4.0 * m / (extra.len() as f64).sqrt(),
        "mean {mean}"
    );
}

#[test]
fn following_its_deadlines_the_link_releases_every_packet_at_its_due_time() {
    // With reordering, later packets may be due first (the delay line keeps them apart
    // from the in-order ones): next_deadline() must still be the earliest due time, and
    // poll() must release exactly the packets due by then.
    for reorder in [true, false] {
        let mut dp = DirParams::simple(
            RateSpec::Constant(100_000_000),
            5_000_000,
            Limit::packets(1000),
        );
        dp.jitter = Some(JitterSpec::new(JitterModel::Uniform { ns: 3_000_000.0 }, reorder));
        let mut link = Link::new(&params(dp), 0);
        let mut released = 0;
        let mut next_arrival = Some(0u64);
        let mut sent = 0u64;
        // An event loop over arrivals (every 50 µs) and the link's own deadlines.
        loop {
            let now = match (next_arrival, link.next_deadline()) {
                (Some(a), Some(d)) => a.min(d),
                (a, d) => match a.or(d) {
                    Some(t) => t,
                    None => break,
                },
            };
            let mut out = Vec::new();
            link.poll(now, &mut out);
            for r in &out {
                assert_eq!(
                    r.due_ns, now,
                    "released at its due time (reorder {reorder})"
                );
            }
            released += out.len();
            if next_arrival == Some(now) {
                link.enqueue(now, W2E, pkt(1000, (sent % 7) as u16));
                sent += 1;
                next_arrival = (sent < 2_000).then_some(sent * 50_000);
            }
        }
        assert_eq!(released, 2_000);
    }
}

#[test]
fn a_late_poll_hands_out_the_packets_in_due_order() {
    // Link::poll's contract: everything due by `now`, in due order per direction, also
    // when the shell polls late and packets that overtook others (reordering jitter) are
    // due together with packets in order.
    let mut dp = DirParams::simple(
        RateSpec::Constant(100_000_000),
        5_000_000,
        Limit::packets(1000),
    );
    dp.jitter = Some(JitterSpec::new(JitterModel::Uniform { ns: 3_000_000.0 }, true));
    let mut link = Link::new(&params(dp), 0);
    for i in 0..500u64 {
        link.enqueue(i * 20_000, W2E, pkt(1000, (i % 5) as u16));
    }
    let mut out = Vec::new();
    link.poll(1_000_000_000, &mut out);
    assert_eq!(out.len(), 500);
    let due: Vec<u64> = out.iter().map(|r| r.due_ns).collect();
    let arrivals: Vec<u64> = out.iter().map(|r| r.pkt.arrival_ns).collect();
    assert!(due.windows(2).all(|w| w[0] <= w[1]), "due order");
    assert!(
        arrivals.windows(2).any(|w| w[0] > w[1]),
        "some packets did overtake"
    );
}
