//! cca_illinois against Liu, Başar, Srikant, "TCP-Illinois", VALUETOOLS 2006 / Perf.
//! Eval. 2008 (bpf/cc/illinois.bpf.c): per RTT cwnd += α, at a loss cwnd ← (1 − β)cwnd,
//! α = f1(d_a), β = f2(d_a) of the average queueing delay d_a; α_max = 10, α_min = 0.3,
//! β_min = 1/8, β_max = 1/2, d_1 = 0.01 d_m, d_2 = 0.1 d_m, d_3 = 0.8 d_m; α_max only
//! after θ = 5 rounds with d_a ≤ d_1; α and β change only with a new measurement (a loss
//! or a round without RTT samples leaves them), and the delay range outlives a time-out.
use ccarena_cc_harness::*;

// ---- Linux's Illinois -----------------------------------------------------------------------

/// One of tcp_illinois's rounds: ACKs of one segment with the RTTs of `rtts` (cycled)
/// until the first ACK beyond `edge`, where the last round's delays set alpha and beta.
/// Returns the next edge (snd_nxt as that ACK found it).
fn linux_round(c: &Conn, edge: u64, rtts: &[u32]) -> u64 {
    let mut i = 0;
    loop {
        let nxt = c.get(Field::SndNxt);
        advance_us(100);
        c.ack(Ack::new(1, rtts[i % rtts.len()]));
        i += 1;
        if c.get(Field::SndUna) > edge {
            return nxt;
        }
    }
}

/// A connection at `w` in congestion avoidance whose samples so far made base RTT 20 ms
/// and max RTT 120 ms (d_m = 100 ms); returns it with the next round's edge
fn linux_with_range(w: u32) -> (Conn, u64) {
    let c = Conn::new("illinois");
    let edge = c.get(Field::SndNxt);
    c.start_in_ca(w);
    let edge = linux_round(&c, edge, &[20_000]);
    let edge = linux_round(&c, edge, &[20_000, 120_000]);
    c.set_cwnd(w);
    (c, edge)
}

#[test]
fn linux_illinois_beta_follows_the_average_delay_of_the_round() {
    // d_m = 100 ms: beta 1/8 up to d_a = 10 ms, 1/2 from 80 ms, linear in 1/64 between
    for (rtt, beta64) in [(25_000u32, 8u32), (30_000, 8), (60_000, (8 * 80_000 - 32 * 10_000 + 24 * 40_000) / 70_000), (100_000, 32), (110_000, 32)] {
        let (c, edge) = linux_with_range(200);
        let edge = linux_round(&c, edge, &[rtt]);
        linux_round(&c, edge, &[rtt]);
        c.set_cwnd(200);
        c.enter_recovery();
        assert_eq!(c.ssthresh(), 200 - (200 * beta64 >> 6), "RTT {rtt}");
    }
}

#[test]
fn linux_illinois_is_reno_below_fifteen_segments() {
    // alpha 1, beta 1/2 below W_thresh = 15 (whatever the delay)
    let (c, edge) = linux_with_range(14);
    linux_round(&c, edge, &[25_000]);
    c.set_cwnd(14);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 7);
    let (c, edge) = linux_with_range(15);
    linux_round(&c, edge, &[25_000]);
    c.set_cwnd(15);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 15 - (15 * 8 >> 6), "beta 1/8 at 15");
}

#[test]
fn linux_illinois_base_rtt_is_the_smallest_sample() {
    // a later, larger minimum does not raise base RTT: d_a of a round at 25 ms stays 5 ms
    // (beta 1/8) after samples of 30 ms; a smaller one lowers it: 10 ms makes d_a 15 ms
    // of d_m 110 ms, beta (8 * 88 - 32 * 11 + 24 * 15) / 77 = 9
    let (c, edge) = linux_with_range(200);
    let edge = linux_round(&c, edge, &[30_000]);
    let edge = linux_round(&c, edge, &[25_000]);
    let edge = linux_round(&c, edge, &[10_000]);
    let edge = linux_round(&c, edge, &[25_000]);
    linux_round(&c, edge, &[25_000]);
    c.set_cwnd(200);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 200 - (200 * 9 >> 6));
}

#[test]
fn linux_illinois_grows_alpha_per_window_counting_acked_segments_and_drops_the_rest() {
    // alpha 10 (no delay): one segment per cwnd / 10 segments counted, the counter
    // restarting at 0; counted per ACK from the segments it acknowledged
    // (a new connection: alpha 10 from init, and d_a = d_m = 0 keeps it)
    let c = Conn::new("illinois");
    c.start_in_ca(200);
    let w = c.cwnd();
    for n in 1..=40u32 {
        c.transmit();
        c.ack(Ack::new(1, 20_000));
        if c.cwnd() > w {
            assert_eq!(n, 20, "cnt 20: 20 * 1280 / 128 = 200 >= 200");
            break;
        }
    }
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (201, 0));
    // an ACK of 3 segments counts 3; delta 230 at 201: one segment, the 29 left dropped
    c.set(Field::CwndCnt, 20);
    c.transmit();
    c.ack(Ack::new(3, 20_000));
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (202, 0));
}

#[test]
fn linux_illinois_a_time_out_resets_alpha_and_beta() {
    let (c, edge) = linux_with_range(200);
    let edge = linux_round(&c, edge, &[100_000]);
    linux_round(&c, edge, &[100_000]);
    c.enter_loss();
    c.exit_reduction();
    c.set_cwnd(200);
    c.set_ssthresh(200);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 100, "beta 1/2 after the RTO");
}

// ---- the paper's Illinois (illinois:paper) --------------------------------------------------

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
    let c = Conn::new("illinois:paper");
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
    let c = Conn::new("illinois:paper");
    c.start_in_ca(8);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 4);
}

/// α·1024 at the resolution bpf/cc/illinois.bpf.c keeps it: (d_m − d_1)·α_min·α_max /
/// ((d_m − d_1)·α_min + (d_a − d_1)(α_max − α_min)), α in 1/1024 (α_min = 0.3: 307),
/// delays in µs, d_1 = ⌊d_m/100⌋, rounded down; α_max at d_a ≤ d_1
fn alpha_fp(dm: u64, da: u64) -> u64 {
    let d1 = dm / 100;
    if da <= d1 {
        return 10_240;
    }
    (dm - d1) * 307 * 10_240 / ((dm - d1) * 307 + (da - d1) * (10_240 - 307))
}

#[test]
fn alpha_is_exact_to_a_1024th() {
    // a loss cuts the window and drops the increase carried before it; α stays as
    // measured (bpf/cc/illinois.bpf.c). At a window of 2^16 nothing grows for a while, so
    // the count of ACKs to the first new segment tells α exactly: every ACK adds α/cwnd
    for da in [5_000u64, 20_000, 50_000, 100_000] {
        let a = alpha_fp(DM as u64, da);
        assert!((a as f64 / 1024.0 - f1(da as f64)).abs() < 0.01, "d_a {da}: {a}/1024");
        let c = flow_at(da as u32, 2);
        c.ack_segments(37, 10, BASE + da as u32); // a fraction before the loss
        c.enter_recovery();
        c.exit_reduction();
        c.set_cwnd(1 << 16);
        let n = c.next_round_acks() as u64;
        c.round(BASE + da as u32);
        assert_eq!(c.cwnd(), 1 << 16);
        let mut k = 0u64;
        while c.cwnd() == 1 << 16 {
            c.ack(Ack::new(1, BASE + da as u32));
            k += 1;
        }
        assert_eq!(k, (1u64 << 26).div_ceil(a) - n, "d_a {da}: alpha {a}/1024");
    }
}

/// ACKs of one segment each at `rtt` on a window of 2^16 after a loss (nothing carried)
/// until the window grows: with α constant, ⌈2^26 / α⌉ in all (α in 1/1024)
fn acks_to_first_segment(c: &Conn, first_round: impl FnMut(u32) -> u32, rtt: u32) -> u64 {
    c.enter_recovery();
    c.exit_reduction();
    c.set_cwnd(1 << 16);
    let n = c.next_round_acks() as u64;
    c.round_with(rtt, first_round);
    assert_eq!(c.cwnd(), 1 << 16);
    let mut k = n;
    while c.cwnd() == 1 << 16 {
        c.ack(Ack::new(1, rtt));
        k += 1;
    }
    k
}

#[test]
fn a_loss_leaves_alpha_as_measured() {
    // §3: α = f1(d_a) of the last measured round; a loss changes the window, not α. Here
    // the rounds after the loss have d_a = 0 ≤ d_1 after a delay above d_1, so α may not
    // jump to α_max for θ rounds and keeps its value: α(50 ms), not Reno's 1
    let a = alpha_fp(DM as u64, 50_000);
    let c = flow_at(50_000, 3);
    let k = acks_to_first_segment(&c, |_| BASE, BASE);
    assert_eq!(k, (1u64 << 26).div_ceil(a), "alpha {a}/1024 through the loss");
}

#[test]
fn beta_is_exact_in_each_zone() {
    // β = 1/8 (128/1024) for d_a ≤ d_2 = 10 ms, 1/2 (512) for d_a ≥ d_3 = 80 ms, linear
    // between (128 + 384 (d_a − d_2)/(d_3 − d_2), rounded down); cut of a window of 1024
    for da in [5_000u32, 10_000, 10_001, 30_000, 45_000, 79_999, 80_000, 90_000] {
        let want = if da <= 10_000 {
            128
        } else if da >= 80_000 {
            512
        } else {
            128 + 384 * (da - 10_000) / 70_000
        };
        let c = flow_at(da, 2);
        c.set_cwnd(1024);
        c.enter_recovery();
        assert_eq!(1024 - c.ssthresh(), want, "d_a {da}");
    }
}

/// growth in one round at base RTT (d_a = 0)
fn low_round(c: &Conn) -> u32 {
    let w = c.cwnd();
    c.round(BASE);
    c.cwnd() - w
}

#[test]
fn alpha_max_needs_five_consecutive_low_delay_rounds() {
    // §3 (θ = 5, as Linux's module): the fifth low round's measurement switches α to
    // α_max, so the rounds up to and including the fifth still grow by the old α (~0.6)
    let c = flow_at(50_000, 3);
    for k in 1..=5 {
        assert!(low_round(&c) <= 2, "low round {k}");
    }
    assert!(low_round(&c) >= 9, "after five low rounds: alpha_max");
    // a high-delay round in between starts the count again
    let c = flow_at(50_000, 3);
    for _ in 0..3 {
        low_round(&c);
    }
    c.round(BASE + 50_000);
    for k in 1..=5 {
        assert!(low_round(&c) <= 2, "low round {k} after a high one");
    }
    // d_a = d_1 exactly (1 ms of d_m = 100 ms) is low delay: counted, not a jump
    let c = flow_at(50_000, 3);
    for k in 1..=5 {
        let w = c.cwnd();
        c.round(BASE + 1_000);
        assert!(c.cwnd() - w <= 2, "round {k} at d_a = d_1");
    }
}

#[test]
fn a_flow_whose_delay_stays_low_uses_alpha_max_from_the_start() {
    // §3: α = α_max while d_a ≤ d_1, and a flow that never saw more needs no θ rounds
    let c = Conn::new("illinois:paper");
    c.start_in_ca(100);
    for _ in 0..3 {
        c.round(BASE);
    }
    assert!(c.cwnd() >= 125, "cwnd {} after 3 rounds from 100", c.cwnd());
}

#[test]
fn without_a_delay_measurement_it_is_reno() {
    // until the delay is measured (bpf/cc/illinois.bpf.c) α = 1, β = 1/2: a loss before
    // any ACK halves
    let c = Conn::new("illinois:paper");
    c.start_in_ca(100);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 50);
}

#[test]
fn the_delay_rules_start_at_a_window_of_ten() {
    // W_thresh = 10: a window of 9 is Reno's (β = 1/2), one of 10 uses β from the delay
    // (here 1/8), both where the round is judged and at the loss
    for (w, want) in [(9u32, 9 - 9 * 512 / 1024), (10, 10 - 10 * 128 / 1024)] {
        let c = flow_at(5_000, 2);
        c.round_then(BASE + 5_000, |_| BASE + 5_000, |c| c.set_cwnd(w));
        c.set_cwnd(w);
        c.enter_recovery();
        assert_eq!(c.ssthresh(), want, "cwnd {w}");
    }
}

#[test]
fn recoveries_and_time_outs_keep_the_delay_range() {
    // d_m and the base RTT are the path's (bpf/cc/illinois.bpf.c): a fast-retransmit
    // recovery and a time-out keep them. Two rounds of 30 and 40 ms after either: with
    // base 20 ms and max 120 ms kept, d_m = 100 ms and d_a = 15 ms, in the linear zone:
    // β = 128 + 384 (15 - 10)/(80 - 10) = 155/1024 (a range measured anew would be base
    // 30, max 40 ms: d_a = 5 of d_m = 10 ms, β = 347/1024)
    let mixed = |i: u32| if i % 2 == 0 { BASE + 10_000 } else { BASE + 20_000 };
    for rto in [false, true] {
        let c = flow_at(5_000, 2);
        if rto {
            c.enter_loss();
        } else {
            c.enter_recovery();
        }
        c.exit_reduction();
        c.start_in_ca(400);
        for _ in 0..2 {
            c.round_with(BASE, mixed);
        }
        c.set_cwnd(1024);
        c.enter_recovery();
        assert_eq!(1024 - c.ssthresh(), 128 + 384 * 5_000 / 70_000, "after an RTO: {rto}");
    }
    // right after an RTO, until a round has measured: Reno's α = 1 and β = 1/2, as the
    // flow starts over from slow start
    let c = flow_at(5_000, 2);
    c.enter_loss();
    c.exit_reduction();
    c.start_in_ca(100);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 50, "beta 1/2 right after an RTO");
    let c = flow_at(5_000, 2);
    c.enter_loss();
    c.exit_reduction();
    c.start_in_ca(400);
    let w = c.cwnd();
    c.round(BASE + 5_000);
    assert!(c.cwnd() - w <= 1, "alpha 1 right after an RTO: +{}", c.cwnd() - w);
}

#[test]
fn a_round_without_rtt_samples_leaves_alpha_and_beta() {
    // α and β are functions of the measured d_a (§3); a round whose ACKs carried no RTT
    // sample measured nothing, so both stay as the last round set them
    // (bpf/cc/illinois.bpf.c): here d_a = 5 ms, α = f1(5 ms), β = 1/8
    let a = alpha_fp(DM as u64, 5_000);
    let c = flow_at(5_000, 2);
    let k = acks_to_first_segment(&c, |_| u32::MAX, BASE + 5_000);
    assert_eq!(k, (1u64 << 26).div_ceil(a), "alpha {a}/1024 after a round without samples");
    let c = flow_at(5_000, 2);
    c.round_with(BASE, |_| u32::MAX); // rtt_us -1: no samples
    c.set_cwnd(1024);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 1024 - 128, "beta 1/8 after a round without samples");
}

#[test]
fn after_a_time_out_the_first_round_is_judged_on_its_own_samples() {
    // the round in progress at the RTO is dropped (bpf/cc/illinois.bpf.c): the first round
    // after it ends when everything outstanding at the RTO is acknowledged, and is judged
    // on its own samples: all at 25 ms, d_a = 5 ms of the kept d_m = 100 ms (β = 1/8),
    // whatever the 100 samples of 70 ms taken before the RTO (with them the round would
    // average over 10 ms: β above 1/8)
    let c = flow_at(50_000, 2);
    c.ack_segments(100, 100, BASE + 50_000);
    c.enter_loss();
    let out = (c.get(Field::HighSeq) + (1 << 32) - c.get(Field::SndUna)) % (1 << 32);
    let n = (out / c.mss() as u64) as u32;
    assert!(n > 200, "{n} segments outstanding at the RTO");
    c.exit_reduction();
    c.start_in_ca(400);
    c.ack_segments(n, 100, BASE + 5_000);
    c.set_cwnd(1024);
    c.enter_recovery();
    assert_eq!(1024 - c.ssthresh(), 128);
}

#[test]
fn until_the_delay_is_measured_alpha_is_exactly_one() {
    // Reno's α = 1 until a round has measured the delay (bpf/cc/illinois.bpf.c), from
    // init on: the algorithm may be set on a connection with data in flight, whose first
    // round ends only when that is acknowledged. ACKs without RTT samples on a window of
    // 2^16: exactly 2^16 of them to the first new segment
    let c = Conn::new("illinois:paper");
    c.start_in_ca(1 << 16);
    c.init(); // TCP_CONGESTION on an established connection
    let mut k = 0u32;
    while c.cwnd() == 1 << 16 && k <= 1 << 17 {
        c.ack(Ack::new(1, u32::MAX));
        k += 1;
    }
    assert_eq!(k, 1 << 16);
}

#[test]
fn a_round_judged_below_w_thresh_sets_reno_alpha_and_beta() {
    // W_thresh = 10: a round that ends with the window below 10 sets α = 1 and β = 1/2,
    // whatever the delay (here d_a = 5 ms: α = f1 = 6.4, β = 1/8)
    let c = flow_at(5_000, 2);
    c.round_then(BASE + 5_000, |_| BASE + 5_000, |c| c.set_cwnd(9));
    c.set_cwnd(1 << 16);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 1 << 15, "beta 1/2 (512/1024)");
    // α = 1 until the next round is judged (~400 ACKs on): a window of 300 grows after
    // 300 ACKs (the loss dropped what was carried)
    c.exit_reduction();
    c.start_in_ca(300);
    let mut k = 0;
    while c.cwnd() == 300 {
        c.ack(Ack::new(1, BASE + 5_000));
        k += 1;
    }
    assert_eq!(k, 300, "alpha 1");
}

#[test]
fn a_loss_drops_the_increase_carried_to_the_last_1024th() {
    // the fraction of a segment carried before a loss belonged to the window before the
    // cut (bpf/cc/illinois.bpf.c): afterwards the count starts from nothing. At d_a = d_m,
    // α = α_min = 307/1024 exactly; a window of 155 then grows after ⌈155·1024/307⌉ = 518
    // ACKs (155·1024 = 517·307 + 1: a single unit carried would save an ACK)
    assert_eq!(alpha_fp(DM as u64, DM as u64), 307);
    let c = flow_at(DM as u32, 2);
    c.ack_segments(37, 10, BASE + DM as u32);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(155);
    let mut k = 0u64;
    while c.cwnd() == 155 {
        c.ack(Ack::new(1, BASE + DM as u32));
        k += 1;
    }
    assert_eq!(k, (155u64 * 1024).div_ceil(307));
}

#[test]
fn alpha_max_holds_to_d1_inclusive_to_the_microsecond() {
    // f1: α = α_max for d_a ≤ d_1, k1/(k2 + d_a) above. A flow whose delay never left the
    // low zone, d_m = 100 ms (one sample at 120 ms among 400 at 20 ms: the round averages
    // 0.25 ms), then a round with a single sample of d_a = d_1 = 1 ms exactly: still
    // α_max (10240/1024; 1 µs more would give alpha_fp = 10236). Measured at a window of
    // 2^16 after a loss: ⌈2^26/10240⌉ ACKs to the first new segment
    let c = Conn::new("illinois:paper");
    c.start_in_ca(400);
    c.round(BASE);
    c.round_with(BASE, |i| if i == 0 { BASE + DM as u32 } else { BASE });
    c.round_with(BASE, |i| if i == 0 { BASE + 1_000 } else { u32::MAX });
    assert_eq!(alpha_fp(DM as u64, 1_001), 10_236);
    let k = acks_to_first_segment(&c, |_| BASE, BASE);
    assert_eq!(k, (1u64 << 26).div_ceil(10_240));
}

/// a flow at cwnd 100 whose delay range is 1 µs (one sample 1 µs above the base), then
/// rounds at base + `da_us`
fn one_microsecond_range(da_us: u32) -> Conn {
    let c = Conn::new("illinois:paper");
    c.start_in_ca(100);
    c.round_with(BASE, |i| if i == 0 { BASE + 1 } else { BASE });
    c.round(BASE + da_us);
    c
}

#[test]
fn on_a_delay_range_of_one_microsecond_f1_and_f2_keep_their_ends() {
    // f1's and f2's ends hold whatever d_m: d_a = 0 gives α_max and β_min, d_a = d_m
    // gives α_min and β_max, also when d_m is 1 µs (d_1, d_2 and d_3 round to 0)
    let c = one_microsecond_range(0);
    let w = c.cwnd();
    c.round(BASE);
    assert!(c.cwnd() - w >= 9, "d_a = 0: alpha_max, +{}", c.cwnd() - w);
    let c = one_microsecond_range(1);
    let w = c.cwnd();
    c.round(BASE + 1);
    assert!(c.cwnd() - w <= 1, "d_a = d_m: alpha_min, +{}", c.cwnd() - w);
    for (da, beta) in [(0u32, 128u32), (1, 512)] {
        let c = one_microsecond_range(da);
        c.set_cwnd(1024);
        c.enter_recovery();
        assert_eq!(1024 - c.ssthresh(), beta, "d_a {da} us of d_m = 1 us");
    }
}

#[test]
fn after_theta_low_rounds_alpha_max_needs_no_new_wait() {
    // §3's θ rule holds α below α_max only once the delay has been above d_1; after θ low
    // rounds it has not been, so a round judged with Reno's values (a window below
    // W_thresh) is followed by α_max at the next low round, not by θ more rounds
    let c = flow_at(50_000, 3);
    for _ in 0..5 {
        c.round(BASE); // the fifth ends the wait: α_max
    }
    c.round_then(BASE, |_| BASE, |c| c.set_cwnd(9)); // below W_thresh: α = 1
    c.start_in_ca(400);
    c.round(BASE); // low: α_max at its end
    let w = c.cwnd();
    c.round(BASE);
    assert!(c.cwnd() - w >= 9, "+{} after theta rounds and a Reno round", c.cwnd() - w);
}

#[test]
fn acks_of_two_segments_add_alpha_over_w_per_segment() {
    // §3: W += α/W for each acknowledged segment, so after S segments W² = W0² + 2αS
    // (the continuous form; the window is whole segments, the remainder carried). Delayed
    // ACKs acknowledge two at a time, which must not lose any of it: at α_max = 10 from a
    // window of 15, 60 segments in 30 ACKs give √(225 + 1200) = 37.7 (a rule that adds one
    // segment once the count reaches W/α and drops the rest reaches 33)
    let c = Conn::new("illinois:paper");
    c.start_in_ca(100);
    for _ in 0..3 {
        c.round(BASE); // d_a = 0 from the start: α_max
    }
    c.enter_recovery(); // nothing carried from the window of 100
    c.exit_reduction();
    c.set_cwnd(15);
    c.set_ssthresh(15);
    for _ in 0..30 {
        c.transmit();
        c.ack(Ack::new(2, BASE));
    }
    let want = (15.0f64 * 15.0 + 2.0 * 10.0 * 60.0).sqrt();
    assert!((c.cwnd() as f64 - want).abs() <= 1.0, "cwnd {} after 60 segments, want {want:.1}", c.cwnd());
}
