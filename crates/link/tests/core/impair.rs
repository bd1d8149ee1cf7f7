//! netem's impairments through the link core, measured as a user would measure them: the
//! delay histogram against its distribution, loss bursts against the model's mean length,
//! the fraction of packets reordered, duplicated and corrupted. Fixed seeds; tolerances
//! are several standard errors of what is measured.

use super::*;
use ccarena_link::impair::{quantile, JitterModel, JitterSpec, ReorderSpec};
use ccarena_link::params::ChanceSpec;

const N: u64 = 20_000;
const GAP_NS: u64 = 100_000; // one packet every 100 µs

/// Send N packets, one every GAP_NS, each its own flow, through direction w2e configured
/// by `f` (unlimited rate); -> (the link, every release). A packet is known by its
/// arrival time, which it keeps.
fn send(f: impl FnOnce(&mut DirParams)) -> (Link, Vec<Released>) {
    let mut dp = DirParams::simple(RateSpec::Unlimited, 0, Limit::packets(1000));
    f(&mut dp);
    let mut link = Link::new(&params(dp), 0);
    let mut out = Vec::new();
    for i in 0..N {
        let t = i * GAP_NS;
        link.poll(t, &mut out);
        link.enqueue(t, W2E, pkt(100, i as u16));
    }
    run_until(&mut link, N * GAP_NS, u64::MAX / 2, &mut out);
    (link, out)
}

fn within(k: u64, n: u64, p: f64, sds: f64) -> bool {
    let se = (p * (1.0 - p) / n as f64).sqrt();
    (k as f64 / n as f64 - p).abs() <= sds * se
}

/// Pearson's χ² of `x` against the law with quantile function `q`, over k equiprobable
/// bins (edges at q(i/k)).
fn chi2(x: &[f64], q: impl Fn(f64) -> f64, k: usize) -> f64 {
    let edges: Vec<f64> = (1..k).map(|i| q(i as f64 / k as f64)).collect();
    let mut count = vec![0u64; k];
    for &v in x {
        count[edges.partition_point(|&e| e <= v)] += 1;
    }
    let e = x.len() as f64 / k as f64;
    count.iter().map(|&c| (c as f64 - e).powi(2) / e).sum()
}

#[test]
fn delays_follow_each_distribution_and_no_other() {
    let (d, j) = (50_000_000u64, 5_000_000.0);
    type Law = (&'static str, JitterModel, fn(f64) -> f64);
    let laws: [Law; 4] = [
        ("uniform", JitterModel::Uniform { ns: j }, |u| 2.0 * u - 1.0),
        ("normal", JitterModel::Normal { sd_ns: j }, quantile::normal),
        ("pareto", JitterModel::Pareto { ns: j }, quantile::pareto),
        ("paretonormal", JitterModel::ParetoNormal { ns: j }, quantile::paretonormal),
    ];
    // 20 bins: χ² with 19 degrees of freedom has mean 19 and sd √38 ≈ 6.2
    let (k, bound) = (20, 19.0 + 5.0 * 38f64.sqrt());
    for (name, model, _) in laws {
        let (_, out) = send(|dp| {
            dp.delay_ns = d;
            dp.jitter = Some(JitterSpec::new(model, true));
        });
        assert_eq!(out.len() as u64, N);
        // the offset from the delay, in units of J
        let x: Vec<f64> = out
            .iter()
            .map(|r| (r.due_ns as f64 - r.pkt.arrival_ns as f64 - d as f64) / j)
            .collect();
        for (other, _, q) in laws {
            let c = chi2(&x, q, k);
            if other == name {
                assert!(c < bound, "{name}: χ² {c:.1} against its own law");
            } else {
                assert!(c > 4.0 * bound, "{name} passes for {other}: χ² {c:.1}");
            }
        }
    }
}

#[test]
fn correlated_delays_follow_the_previous_one() {
    let (d, j, rho) = (50_000_000u64, 5_000_000.0, 0.5);
    let (_, out) = send(|dp| {
        dp.delay_ns = d;
        dp.jitter = Some(JitterSpec {
            model: JitterModel::Uniform { ns: j },
            correlation: rho,
            reorder: true,
        });
    });
    let mut by_arrival: Vec<(u64, f64)> = out
        .iter()
        .map(|r| (r.pkt.arrival_ns, (r.due_ns - r.pkt.arrival_ns) as f64))
        .collect();
    by_arrival.sort_by_key(|x| x.0);
    let x: Vec<f64> = by_arrival.iter().map(|x| x.1).collect();
    let n = x.len() as f64;
    let m = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / n;
    let r1 = x.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / (n - 1.0) / var;
    // the lag-1 correlation of an AR(1) estimate has standard error about (1 − ρ²)/√n
    assert!((r1 - rho).abs() < 5.0 * (1.0 - rho * rho) / n.sqrt(), "lag-1 {r1}");
    // the mean stays the delay; its standard error is inflated by √((1 + ρ)/(1 − ρ))
    let se = (var / n * (1.0 + rho) / (1.0 - rho)).sqrt();
    assert!((m - d as f64).abs() < 5.0 * se, "mean {m} ± {se}");
}

/// Indices (by arrival) of the packets that never left.
fn lost(out: &[Released]) -> Vec<bool> {
    let mut gone = vec![true; N as usize];
    for r in out {
        gone[(r.pkt.arrival_ns / GAP_NS) as usize] = false;
    }
    gone
}

fn bursts(gone: &[bool]) -> Vec<u64> {
    let mut v = Vec::new();
    let mut cur = 0;
    for &g in gone {
        if g {
            cur += 1;
        } else if cur > 0 {
            v.push(cur);
            cur = 0;
        }
    }
    v
}

/// The fraction lost and its standard error by batch means (20 batches: losses in bursts
/// are not independent, whole batches nearly are).
fn loss_fraction(gone: &[bool]) -> (f64, f64) {
    let b: Vec<f64> = gone
        .chunks(gone.len() / 20)
        .map(|c| c.iter().filter(|&&g| g).count() as f64 / c.len() as f64)
        .collect();
    let n = b.len() as f64;
    let m = b.iter().sum::<f64>() / n;
    let var = b.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

fn mean_se(v: &[u64]) -> (f64, f64) {
    let n = v.len() as f64;
    let m = v.iter().sum::<u64>() as f64 / n;
    let var = v.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / (n - 1.0);
    (m, (var / n).sqrt())
}

#[test]
fn gilbert_elliott_losses_come_in_bursts_of_mean_one_over_r() {
    let m = LossModel::GilbertElliott { p: 0.02, r: 0.25, loss_good: 0.0, loss_bad: 1.0 };
    let (link, out) = send(|dp| dp.loss = Some(m));
    let gone = lost(&out);
    let k = gone.iter().filter(|&&g| g).count() as u64;
    assert_eq!(link.totals(W2E).drops_loss, k);
    // a burst is a stay in the bad state: geometric, mean 1/r
    let (b, se) = mean_se(&bursts(&gone));
    assert!((b - 4.0).abs() < 4.0 * se, "mean burst {b} ± {se}");
    // the mean loss p/(p + r) = 7.4 %
    let (f, se) = loss_fraction(&gone);
    assert!((f - m.mean_loss()).abs() < 4.0 * se, "loss {f} ± {se}");
}

#[test]
fn four_state_losses_match_the_model() {
    let m = LossModel::FourState { p13: 0.01, p31: 0.3, p32: 0.2, p23: 0.1, p14: 0.005 };
    let (_, out) = send(|dp| dp.loss = Some(m));
    let gone = lost(&out);
    let (f, se) = loss_fraction(&gone);
    assert!((f - m.mean_loss()).abs() < 4.0 * se, "loss {f} ± {se} vs {}", m.mean_loss());
    // runs longer than one are stays in state 3: geometric with mean 1/(p31 + p32), so
    // their length beyond the first packet has mean (1 − s)/s, s = p31 + p32
    let long: Vec<u64> = bursts(&gone).into_iter().filter(|&b| b > 1).map(|b| b - 2).collect();
    let (b, se) = mean_se(&long);
    let s = 0.5f64;
    assert!((b - (1.0 - s) / s).abs() < 4.0 * se, "{b} ± {se}");
}

#[test]
fn reordering_sends_its_fraction_at_once_past_the_delayed_ones() {
    let (d, p, g) = (20_000_000u64, 0.2, 3u32);
    let (link, out) = send(|dp| {
        dp.delay_ns = d;
        dp.reorder = Some(ReorderSpec { p, correlation: 0.0, gap: g });
    });
    assert_eq!(out.len() as u64, N);
    let at_once = out.iter().filter(|r| r.due_ns == r.pkt.arrival_ns).count() as u64;
    assert!(out.iter().all(|r| r.due_ns == r.pkt.arrival_ns || r.due_ns == r.pkt.arrival_ns + d));
    assert_eq!(link.totals(W2E).reordered, at_once);
    // after each, G − 1 delayed for sure, then each at once with p: p/(1 + (G − 1)p)
    let want = p / (1.0 + (g - 1) as f64 * p);
    assert!(within(at_once, N, want, 5.0), "{at_once} of {N}, want {want}");
    // they overtake: released before packets that arrived earlier
    let arr: Vec<u64> = out.iter().map(|r| r.pkt.arrival_ns).collect();
    assert!(arr.windows(2).filter(|w| w[0] > w[1]).count() as u64 >= at_once / 2);
}

#[test]
fn duplication_releases_a_second_identical_copy() {
    let p = 0.05;
    let (link, out) = send(|dp| {
        dp.delay_ns = 1_000_000;
        dp.duplicate = Some(ChanceSpec { p, correlation: 0.0 });
    });
    let extra = out.len() as u64 - N;
    assert_eq!(link.totals(W2E).duplicated, extra);
    assert_eq!(link.totals(W2E).released, out.len() as u64);
    assert!(within(extra, N, p, 4.0), "{extra} copies of {N}");
    let mut seen: std::collections::HashMap<u64, Vec<u8>> = Default::default();
    for r in &out {
        if let Some(f) = seen.insert(r.pkt.arrival_ns, r.pkt.frame().to_vec()) {
            assert_eq!(f, r.pkt.frame(), "a copy differs from its original");
        }
    }
    assert_eq!(seen.len() as u64, N, "every packet left at least once");
}

#[test]
fn corruption_flips_one_bit_in_its_fraction_of_packets() {
    let p = 0.03;
    let (link, out) = send(|dp| dp.corrupt = Some(ChanceSpec { p, correlation: 0.0 }));
    // UDP without a checksum: nothing is completed, only the flipped bit differs
    let mut flipped = 0;
    for r in &out {
        let sent = build_ipv4_frame(100, [10, 1, 1, 2], [10, 2, 1, 2], 17, r.pkt.ip.unwrap().sport, 5000, 0);
        let bits: u32 = sent.iter().zip(r.pkt.frame()).map(|(a, b)| (a ^ b).count_ones()).sum();
        assert!(bits <= 1 && (bits == 1) == r.pkt.corrupted);
        flipped += bits as u64;
    }
    assert_eq!(link.totals(W2E).corrupted, flipped);
    assert!(within(flipped, N, p, 4.0), "{flipped} of {N}");
}

#[test]
fn each_direction_keeps_its_own_delay() {
    let mut p = params(DirParams::simple(RateSpec::Unlimited, 30_000_000, Limit::packets(10)));
    p.dirs[1] = DirParams::simple(RateSpec::Unlimited, 5_000_000, Limit::packets(10));
    let mut link = Link::new(&p, 0);
    link.enqueue(0, W2E, pkt(100, 1));
    link.enqueue(0, E2W, pkt(100, 2));
    let mut out = Vec::new();
    run_until(&mut link, 0, u64::MAX / 2, &mut out);
    let due: Vec<(usize, u64)> = out.iter().map(|r| (r.dir, r.due_ns)).collect();
    assert_eq!(due, vec![(E2W, 5_000_000), (W2E, 30_000_000)]);
}
