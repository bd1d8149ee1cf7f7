//! cca_illinois against Liu, Başar, Srikant, "TCP-Illinois", VALUETOOLS 2006 / Perf.
//! Eval. 2008 (bpf/cc/illinois.bpf.c): per RTT cwnd += α, at a loss cwnd ← (1 − β)cwnd,
//! α = f1(d_a), β = f2(d_a) of the average queueing delay d_a; α_max = 10, α_min = 0.3,
//! β_min = 1/8, β_max = 1/2, d_1 = 0.01 d_m, d_2 = 0.1 d_m, d_3 = 0.8 d_m; α_max only
//! after θ = 5 rounds with d_a ≤ d_1.
use ccarena_cc_harness::*;

const BASE: u32 = 20_000;
const DM: f64 = 100_000.0; // max RTT 120 ms: d_m = 100 ms

fn f1(da: f64) -> f64 {
    let d1 = DM / 100.0;
    if da <= d1 {
        return 10.0;
    }
    let (amax, amin) = (10.0, 0.3);
    let k1 = (DM - d1) * amin * amax / (amax - amin);
    let k2 = (DM - d1) * amin / (amax - amin) - d1;
    k1 / (k2 + da)
}

fn f2(da: f64) -> f64 {
    let (d2, d3) = (DM / 10.0, DM * 0.8);
    if da <= d2 {
        0.125
    } else if da >= d3 {
        0.5
    } else {
        0.125 + 0.375 * (da - d2) / (d3 - d2)
    }
}

/// an Illinois flow at cwnd 400 that has seen base 20 ms and max 120 ms, then rounds
/// whose every RTT is base + `da_us`
fn flow_at(da_us: u32, rounds: u32) -> Conn {
    let c = Conn::new("illinois");
    c.start_in_ca(400);
    c.round(BASE);
    c.round(BASE + DM as u32);
    for _ in 0..rounds {
        c.round(BASE + da_us);
    }
    c
}

#[test]
fn alpha_is_k1_over_k2_plus_queueing_delay() {
    for da in [5_000u32, 20_000, 50_000, 100_000] {
        let c = flow_at(da, 2);
        let w = c.cwnd();
        for _ in 0..5 {
            c.round(BASE + da);
        }
        let g = (c.cwnd() - w) as f64 / 5.0;
        let want = f1(da as f64);
        assert!((g - want).abs() <= 0.05 * want + 0.2, "d_a {da}: +{g} per RTT, alpha {want:.2}");
    }
    // alpha(d_1) = alpha_max and alpha(d_m) = alpha_min: the curve's ends
    assert!((f1(1_000.0001) - 10.0).abs() < 0.01 && (f1(DM) - 0.3).abs() < 1e-9);
}

#[test]
fn beta_rises_from_an_eighth_to_a_half_with_queueing_delay() {
    for da in [5_000u32, 10_000, 30_000, 45_000, 70_000, 90_000] {
        let c = flow_at(da, 2);
        let w = c.cwnd();
        c.enter_recovery();
        let beta = 1.0 - c.ssthresh() as f64 / w as f64;
        let want = f2(da as f64);
        assert!((beta - want).abs() <= 0.004, "d_a {da}: beta {beta:.4}, want {want:.4}");
    }
}

#[test]
fn alpha_max_only_after_five_low_delay_rounds() {
    let c = flow_at(50_000, 3); // alpha ~ 0.59
    let slow = f1(50_000.0);
    for k in 1..=4 {
        let w = c.cwnd();
        c.round(BASE); // d_a = 0 <= d_1
        let g = (c.cwnd() - w) as f64;
        assert!(g <= slow + 1.0, "low round {k}: +{g}, alpha jumped before theta = 5");
    }
    c.round(BASE); // the fifth low round ends: alpha_max from the next
    let w = c.cwnd();
    c.round(BASE);
    let g = c.cwnd() - w;
    assert!((9..=11).contains(&g), "after 5 low rounds: +{g} per RTT, want 10");
}

#[test]
fn below_w_thresh_it_is_reno() {
    let c = Conn::new("illinois");
    c.start_in_ca(8);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 4);
}
