//! cca_htcp (bpf/cc/htcp.bpf.c): the default variant against the rules of Linux 6.12's
//! tcp_htcp (also replayed call by call against it: tests/replay.rs), the paper variant
//! ("htcp:paper") against Leith & Shorten, "H-TCP", PFLDnet 2004 and draft-leith-tcp-htcp-06
//! (bpf/cc/htcp.bpf.c): per RTT cwnd += 2(1 − β)·α(Δ), α(Δ) = 1 for Δ ≤ Δ_L = 1 s, else
//! 1 + 10(Δ − Δ_L) + ((Δ − Δ_L)/2)², Δ the time since the end of the last congestion
//! event; at an event cwnd ← β·cwnd, β = RTT_min/RTT_max within [0.5, 0.8].
use ccarena_cc_harness::*;

// ---- Linux's H-TCP (the harness's HZ is 1000: one jiffy per ms) ----------------------------

/// ACKs of one segment (no time passing) until cwnd grows, starting with a full counter
/// so that the first ACK grows the window and recomputes alpha now; returns the ACKs from
/// there to the next segment of growth
fn linux_acks_per_segment(c: &Conn, rtt: u32) -> u32 {
    c.set(Field::CwndCnt, c.cwnd() as u64);
    let w = c.cwnd();
    c.transmit();
    c.ack(Ack::new(1, rtt));
    assert_eq!(c.cwnd(), w + 1);
    for n in 1..=100_000 {
        c.transmit();
        c.ack(Ack::new(1, rtt));
        if c.cwnd() > w + 1 {
            return n;
        }
    }
    panic!("no growth")
}

#[test]
fn linux_htcp_alpha_grows_with_the_time_since_the_event_scaled_by_min_rtt() {
    // 3 s after the last event: d = 2000 jiffies, factor 1 + (10 d + (d/2)^2 / HZ) / HZ = 22,
    // times minRTT / 100 ms in eighths clamped to [1/2, 10]: scale = 8 HZ / (10 minRTT);
    // alpha = 2 factor (128 - 64) / 128 segments per RTT; growth after ceil(1001 * 128 /
    // alpha) + 1 ACKs at 1001 segments
    for (rtt_ms, factor) in [(100u32, 22u32), (200, 44), (20, 22 * 8 / 40), (5, 22 * 8 / 80)] {
        set_now_us(10_000_000);
        let c = Conn::new("htcp");
        c.start_in_ca(1000);
        c.ack(Ack::new(1, rtt_ms * 1000));
        set_now_us(13_000_000);
        let alpha = 2 * factor * 64;
        assert_eq!(linux_acks_per_segment(&c, rtt_ms * 1000), (1001 * 128u32).div_ceil(alpha) + 1, "minRTT {rtt_ms} ms");
    }
    // within the first second: factor 1, scaled down but never below 1
    set_now_us(10_000_000);
    let c = Conn::new("htcp");
    c.start_in_ca(100);
    assert_eq!(linux_acks_per_segment(&c, 20_000), 101 + 1, "alpha 1");
}

#[test]
fn linux_htcp_beta_is_min_over_max_rtt_from_the_second_event_on() {
    set_now_us(10_000_000);
    let c = Conn::new("htcp");
    c.start_in_ca(1000);
    c.ack(Ack::new(1, 100_000));
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 500, "the first event: 0.5");
    c.exit_reduction();
    c.set_cwnd(1000);
    // maxRTT rises only to samples at most 20 ms above it: 130 ms ignored, then 115, 130
    for rtt in [130_000u32, 115_000, 130_000] {
        c.transmit();
        c.ack(Ack::new(1, rtt));
    }
    c.set_cwnd(1000);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 1000 * (12_800 / 130) >> 7, "beta = 100/130 in 1/128");
    // maxRTT fades to 100 + 95 % of 30 = 128 at the event
    c.exit_reduction();
    c.set_cwnd(1000);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 1000 * 100 >> 7);
    // at most 0.8
    let c = Conn::new("htcp");
    c.start_in_ca(1000);
    c.ack(Ack::new(1, 100_000));
    c.enter_recovery();
    c.exit_reduction();
    c.set_cwnd(1000);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 1000 * 102 >> 7, "maxRTT = minRTT: 0.8");
}

#[test]
fn linux_htcp_halves_when_min_rtt_is_ten_ms_or_less() {
    for (rtt, want) in [(10_000u32, 500u32), (11_000, 1000 * 102 >> 7)] {
        let c = Conn::new("htcp");
        c.start_in_ca(1000);
        c.ack(Ack::new(1, rtt));
        c.enter_recovery();
        c.exit_reduction();
        c.set_cwnd(1000);
        c.enter_recovery();
        assert_eq!(c.ssthresh(), want, "minRTT {rtt} us");
    }
}

#[test]
fn linux_htcp_slow_start_stops_at_ssthresh_and_spends_nothing_beyond() {
    let c = Conn::new("htcp");
    c.set_cwnd(9);
    c.set_ssthresh(10);
    c.transmit();
    c.ack(Ack::new(3, 20_000));
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (10, 0));
}

// ---- the paper's H-TCP (htcp:paper) ---------------------------------------------------------

const RTT: u32 = 50_000;

fn alpha(delta_s: f64) -> f64 {
    if delta_s <= 1.0 {
        1.0
    } else {
        let d = delta_s - 1.0;
        1.0 + 10.0 * d + (d / 2.0) * (d / 2.0)
    }
}

/// A flow at cwnd 400 whose RTT ranged from `rtt_min` to `rtt_max` (Open state), then a
/// congestion event lasting `recovery_us`; returns the connection at the end of the
/// event (back in Open) and β·1024 as the ssthresh shows it.
fn after_event(rtt_min: u32, rtt_max: u32, recovery_us: u64) -> (Conn, f64) {
    let c = Conn::new("htcp:paper");
    c.start_in_ca(400);
    c.round(rtt_min);
    c.round(rtt_max);
    for _ in 0..4 {
        c.round(rtt_min); // the throughput before the event: cwnd / RTT_min
    }
    let w = c.cwnd();
    c.enter_recovery();
    let beta = c.ssthresh() as f64 / w as f64;
    advance_us(recovery_us);
    c.exit_reduction();
    (c, beta)
}

/// mean growth per RTT over the rounds that cover delta ± 0.1 s after the event's end
fn growth_per_rtt_at(c: &Conn, t_end: u64, delta_s: f64) -> f64 {
    while (now_us() - t_end) as f64 / 1e6 < delta_s - 0.1 {
        c.round(RTT);
    }
    let w0 = c.cwnd();
    let mut n = 0;
    while (now_us() - t_end) as f64 / 1e6 < delta_s + 0.1 {
        c.round(RTT);
        n += 1;
    }
    (c.cwnd() - w0) as f64 / n as f64
}

#[test]
fn increase_follows_alpha_of_the_time_since_the_end_of_the_congestion_event() {
    // RTT_max = 2 RTT_min: beta = 0.5, so 2(1 - beta) = 1 and the growth is alpha itself
    for (delta, expect) in [(0.5, 1.0), (2.0, 11.25), (3.0, 22.0), (5.0, 45.0)] {
        assert_eq!(alpha(delta), expect);
        // the event lasts 0.8 s: measured from its start, Delta would be 0.8 s larger
        let (c, beta) = after_event(RTT, 2 * RTT, 800_000);
        assert!((beta - 0.5).abs() < 0.01, "beta {beta}");
        let t_end = now_us();
        let g = growth_per_rtt_at(&c, t_end, delta);
        assert!((g - expect).abs() <= 0.04 * expect + 0.1, "Delta {delta}: {g:.2} per RTT, want {expect}");
    }
}

#[test]
fn increase_is_scaled_by_two_times_one_minus_beta() {
    // RTT_max = 1.25 RTT_min: beta = 0.8, 2(1 - beta) = 0.4
    let (c, beta) = after_event(RTT, RTT * 5 / 4, 0);
    assert!((beta - 0.8).abs() < 0.01, "beta {beta}");
    let t_end = now_us();
    let g = growth_per_rtt_at(&c, t_end, 3.0);
    assert!((g - 0.4 * 22.0).abs() <= 0.04 * 8.8 + 0.1, "{g:.2} per RTT, want 8.8");
}

#[test]
fn beta_is_rtt_min_over_rtt_max_within_half_and_four_fifths() {
    for (max, want) in [(RTT * 4 / 3, 0.75), (RTT * 3 / 2, 2.0 / 3.0), (RTT, 0.8), (3 * RTT, 0.5)] {
        let (_c, beta) = after_event(RTT, max, 0);
        assert!((beta - want).abs() < 0.006, "RTT_max {max}: beta {beta:.3}, want {want:.3}");
    }
}

#[test]
fn rtt_max_survives_a_congestion_event() {
    // RTT_max = 1.5 RTT_min: beta = 2/3 at the first event; the next event, at about the
    // same throughput (no adaptive backoff), must still know that RTT_max although the
    // new epoch saw only RTT_min
    let (c, beta) = after_event(RTT, RTT * 3 / 2, 0);
    assert!((beta - 2.0 / 3.0).abs() < 0.006, "beta {beta}");
    c.rounds_until(400, RTT, 1000);
    let w = c.cwnd();
    c.enter_recovery();
    let b2 = c.ssthresh() as f64 / w as f64;
    assert!((b2 - 2.0 / 3.0).abs() < 0.006, "beta {b2}: RTT_max was forgotten at the event");
}

#[test]
fn a_throughput_change_of_more_than_a_fifth_backs_off_by_half() {
    // adaptive backoff (draft §4): the throughput before this event differs from the one
    // before the previous event by > 20 %: beta = 0.5 whatever the RTTs say
    let (c, beta) = after_event(RTT, RTT * 3 / 2, 0);
    assert!((beta - 2.0 / 3.0).abs() < 0.006);
    for _ in 0..10 {
        c.round(RTT); // cwnd ~ 270 of 400: throughput -33 %
    }
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w / 2);
}

#[test]
fn an_undone_event_restores_the_epoch() {
    // a spurious reduction undone: cwnd back, and Delta counts from the real event
    let (c, _) = after_event(RTT, 2 * RTT, 0);
    let t_end = now_us();
    while now_us() - t_end < 2_500_000 {
        c.round(RTT);
    }
    let w = c.cwnd();
    c.enter_recovery();
    c.undo();
    assert_eq!(c.cwnd(), w);
    let g = growth_per_rtt_at(&c, t_end, 3.0);
    assert!((g - 22.0).abs() <= 0.04 * 22.0 + 0.1, "{g:.2} per RTT after undo, want 22");
}

#[test]
fn alpha_restarts_when_an_event_begins() {
    // 10 s without a loss (alpha(10 s) = 111), then a time-out: the window climbs back
    // from 1 in the Loss state. Its increase beyond ssthresh must be alpha's minimum
    // (Delta counts from the event's start), not 111 segments per RTT.
    let c = Conn::new("htcp:paper");
    c.start_in_ca(100);
    for _ in 0..(10_000_000 / RTT) {
        c.round(RTT);
    }
    c.enter_loss();
    let ss = c.ssthresh();
    c.rounds_until(ss, RTT, 1000);
    let w0 = c.cwnd();
    for _ in 0..5 {
        c.round(RTT);
    }
    let per_rtt = (c.cwnd() - w0) as f64 / 5.0;
    assert!(per_rtt <= 2.0, "grew {per_rtt} segments per RTT right after a time-out");
}

/// α(Δ)·2(1 − β) in 1/1024 segment per RTT at the resolution bpf/cc/htcp.bpf.c keeps it:
/// α·1024 = 1024 + 10240·d + 1024·(d/2)² with d = Δ − Δ_L in whole milliseconds (per
/// second: 10 d + (d/2)²), each term rounded down.
fn alpha_fp(delta_us: u64, beta_fp: u64) -> u64 {
    let a = if delta_us <= 1_000_000 {
        1024
    } else {
        let d = (delta_us - 1_000_000) / 1000;
        1024 + d * 10240 / 1000 + d * d * 1024 / 4_000_000
    };
    (a * 2 * (1024 - beta_fp) >> 10).max(1)
}

/// ACKs of one segment each, all at the present instant, until cwnd grows; their count.
fn acks_until_growth(c: &Conn) -> u32 {
    let w = c.cwnd();
    for k in 1..=100_000 {
        c.ack(Ack::new(1, RTT));
        if c.cwnd() > w {
            return k;
        }
    }
    panic!("no growth at cwnd {w}");
}

#[test]
fn the_increase_is_alpha_to_a_1024th_of_a_segment() {
    // the per-ACK increase is alpha·2(1 − β)/cwnd: at one instant Δ after an event with
    // β = 0.5 the window grows by one segment after ⌈cwnd·1024/(α·1024)⌉ ACKs (the
    // fraction carried from before the event was dropped at it). Windows chosen so that
    // 1/1024 more or less of α changes the count
    for delta in [500_000u64, 1_125_000, 2_999_999, 3_000_000, 5_322_000] {
        let a = alpha_fp(delta, 512);
        let x = (delta.max(1_000_000) - 1_000_000) as f64 / 1e6;
        // (d in whole ms: up to 10.3/1000 segment less; each term: up to 1/1024)
        assert!((a as f64 / 1024.0 - alpha(1.0 + x)).abs() < 0.02, "Delta {delta}: {a}/1024");
        let g = |v: u64| v / gcd(v, 1024);
        for w in [g(a), g(a + 1), 220] {
            let (c, beta) = after_event(RTT, 2 * RTT, 0);
            assert!((beta - 0.5).abs() < 0.01);
            let t_end = now_us();
            c.set_cwnd(w as u32);
            set_now_us(t_end + delta);
            let want = (w * 1024).div_ceil(a) as u32;
            assert_eq!(acks_until_growth(&c), want, "Delta {delta} us, cwnd {w}: alpha {a}/1024");
        }
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 { a } else { gcd(b, a % b) }
}

#[test]
fn beta_is_exact_at_its_bounds_and_between() {
    // draft §4.1: β = RTT_min/RTT_max within [0.5, 0.8], in 1/1024: ⌊1024 RTT_min/RTT_max⌋
    // within [512, 819]; a window of 1024 is cut to β·1024 exactly
    for (max, want) in [(3 * RTT, 512), (RTT, 819), (RTT * 4 / 3, 768), (RTT * 10 / 7, 716)] {
        let c = Conn::new("htcp:paper");
        c.start_in_ca(400);
        c.round(RTT);
        c.round(max);
        for _ in 0..4 {
            c.round(RTT);
        }
        c.set_cwnd(1024);
        c.enter_recovery();
        assert_eq!(c.ssthresh(), want, "RTT_max {max}");
    }
}

#[test]
fn a_new_connection_counts_delta_from_its_start() {
    // before any congestion event Δ counts from the connection's start (the kernel's clock
    // is far from zero), and β starts at 0.5: in its first second one segment per RTT
    set_now_us(1_000_000_000);
    let c = Conn::new("htcp:paper");
    c.start_in_ca(100);
    for _ in 0..5 {
        c.round(RTT);
    }
    assert!((104..=105).contains(&c.cwnd()), "cwnd {} after 5 RTTs from 100", c.cwnd());
}

/// β of the second event of a flow whose ACKs came every 100 us (10000 segments/s) before
/// its first event and every `gap2` us before its second; every RTT sample equal, so β
/// from the RTTs is 0.8 (819/1024).
fn second_event_cut(gap2: u64) -> (u32, u32) {
    let c = Conn::new("htcp:paper");
    c.start_in_ca(600);
    c.ack_segments(2_000, 100, RTT);
    c.enter_recovery();
    c.exit_reduction();
    c.ack_segments(2_000, gap2, RTT);
    let w = c.cwnd();
    c.enter_recovery();
    (w, c.ssthresh())
}

#[test]
fn adaptive_backoff_starts_beyond_a_fifth_of_change() {
    // draft §4.2: β = 0.5 when |B(k+1) − B(k)|/B(k) > 0.2. B = 10000/s before the first
    // event; before the second 1e6/gap: 8000 (−20 % exactly: no), 8196 (−18 %: no),
    // 7812 (−21.9 %: yes), 11904 (+19 %: no), 12048 (+20.5 %: yes)
    for (gap, backoff) in [(125, false), (122, false), (128, true), (84, false), (83, true)] {
        let (w, ss) = second_event_cut(gap);
        let want = if backoff { w * 512 >> 10 } else { w * 819 >> 10 };
        assert_eq!(ss, want, "ACKs every {gap} us: backoff {backoff}");
    }
}

#[test]
fn throughput_is_measured_over_an_rtt_not_per_ack() {
    // ACK compression (ten ACKs at once every millisecond: still 10000 segments/s) does
    // not change the throughput B that adaptive backoff compares
    let c = Conn::new("htcp:paper");
    c.start_in_ca(600);
    c.ack_segments(2_000, 100, RTT);
    c.enter_recovery();
    c.exit_reduction();
    for _ in 0..200 {
        c.ack_segments(1, 991, RTT);
        c.ack_segments(9, 1, RTT);
    }
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w * 819 >> 10, "no adaptive backoff");
}

#[test]
fn throughput_is_sampled_in_the_open_state_only() {
    // a recovery's ACKs are not part of B: a slow recovery (1 s, 10 segments) between
    // two events at 10000 segments/s does not trigger adaptive backoff, whether the
    // second event comes before the first Open-state sample (30 ms) or after it (60 ms).
    // (2250 ACKs: the event comes 250 ACKs into a sample interval)
    for open_acks in [300, 600] {
        let c = Conn::new("htcp:paper");
        c.start_in_ca(600);
        c.ack_segments(2_250, 100, RTT);
        c.enter_recovery();
        c.ack_segments(10, 100_000, RTT);
        c.exit_reduction();
        c.ack_segments(open_acks, 100, RTT);
        let w = c.cwnd();
        c.enter_recovery();
        assert_eq!(c.ssthresh(), w * 819 >> 10, "{open_acks} Open ACKs: no adaptive backoff");
    }
}

#[test]
fn after_a_time_out_an_event_without_an_open_rtt_sample_uses_half() {
    // an RTO forgets RTT_max (bpf/cc/htcp.bpf.c); the next event before any Open-state
    // RTT sample knows none and uses β = 0.5
    let (c, beta) = after_event(RTT, RTT * 5 / 4, 0);
    assert!((beta - 0.8).abs() < 0.01);
    c.enter_loss();
    for _ in 0..3 {
        c.round(RTT); // in the Loss state
    }
    c.exit_reduction();
    c.set_cwnd(1024);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 512);
}

#[test]
fn an_undone_event_restores_beta_and_the_throughput_memory() {
    // RFC 3522/2883 undo: as if the event had not happened. Event 1 at 10000 segments/s,
    // β 0.8; a spurious event at 7812/s (−22 %: backoff, β 0.5) is undone: the increase is
    // again 2(1 − 0.8)α, and the next real event, at 7812/s, is compared with the
    // throughput before event 1 (−22 %: backoff)
    let c = Conn::new("htcp:paper");
    c.start_in_ca(600);
    c.ack_segments(2_000, 100, RTT);
    c.enter_recovery();
    c.exit_reduction();
    let t_end = now_us();
    c.ack_segments(2_000, 128, RTT);
    c.enter_recovery();
    c.undo();
    set_now_us(t_end + 3_000_000);
    let a = alpha_fp(3_000_000, 819);
    let w = c.cwnd() as u64;
    assert_eq!(acks_until_growth(&c), (w * 1024).div_ceil(a) as u32, "beta 0.8 restored");
    c.ack_segments(2_000, 128, RTT);
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w * 512 >> 10, "compared with the throughput before event 1");
}

#[test]
fn the_first_throughput_sample_covers_the_connection_s_first_rtt() {
    // B is measured from the algorithm's init on (the clock far from zero, the delivered
    // counter not: the kernel's, or a connection switched to H-TCP mid-way). An event
    // within the first RTT has no B yet, so the next event is not compared with it; an
    // event after the first sample compares with that sample: 10000 segments/s either way
    for (first_acks, delivered) in [(100u32, 0u64), (700, 0), (700, 1_000_000)] {
        set_now_us(1_000_000_000);
        let c = Conn::bare("htcp:paper");
        c.set(Field::Delivered, delivered);
        c.init();
        c.start_in_ca(600);
        c.ack_segments(first_acks, 100, RTT);
        c.enter_recovery();
        c.exit_reduction();
        c.ack_segments(2_000, 100, RTT);
        let w = c.cwnd();
        c.enter_recovery();
        assert_eq!(c.ssthresh(), w * 819 >> 10, "{first_acks} ACKs before the first event, delivered {delivered}");
    }
}

#[test]
fn the_increase_counts_from_nothing_on_a_new_connection_and_after_each_event() {
    // per ACK alpha·2(1 − β)/cwnd, in 1/1024 segment: the first segment of increase comes
    // after exactly ⌈1024 cwnd / a⌉ ACKs, counted from nothing on a new connection and
    // from nothing again after an event (its reduction restarts the count, as
    // tcp_init_cwnd_reduction does snd_cwnd_cnt). Δ = 1.005 s, β = 0.5: a = 1075
    // (α = 1.0500625); the window is one where a single 1/1024 carried in would make the
    // count one ACK shorter (1024 cwnd = 1 mod 1075)
    let a = alpha_fp(1_005_000, 512);
    assert_eq!(a, 1075);
    let w = (300..).find(|w| w * 1024 % a == 1).unwrap();
    let want = (w * 1024).div_ceil(a) as u32;
    let t0 = now_us();
    let c = Conn::new("htcp:paper");
    c.start_in_ca(w as u32);
    set_now_us(t0 + 1_005_000);
    assert_eq!(acks_until_growth(&c), want, "new connection, cwnd {w}");
    let (c, beta) = after_event(RTT, 2 * RTT, 0);
    assert!((beta - 0.5).abs() < 0.01);
    let t_end = now_us();
    c.set_cwnd(w as u32);
    set_now_us(t_end + 1_005_000);
    assert_eq!(acks_until_growth(&c), want, "after an event, cwnd {w}");
}

#[test]
fn the_first_throughput_sample_starts_at_init_even_soon_after_boot() {
    // B is delivered data per second over an RTT from the algorithm's init on, whatever
    // the clock reads: 1 s after boot a sample from time 0 would give a stretch ACK of 10
    // segments 10 segments/s, a B the second event (10000/s) would differ from by far
    // more than 20 %. An event within the first RTT has no B, so the next is not
    // compared: β from the RTTs (all equal: 0.8)
    set_now_us(1_000_000);
    let c = Conn::new("htcp:paper");
    c.start_in_ca(600);
    advance_us(100);
    c.ack(Ack::new(10, RTT));
    c.enter_recovery();
    c.exit_reduction();
    c.ack_segments(2_000, 100, RTT);
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w * 819 >> 10, "no adaptive backoff");
}

#[test]
fn an_event_before_any_open_state_rtt_sample_uses_half() {
    // RTT_max comes from the Open state only (bpf/cc/htcp.bpf.c); an event on a
    // connection whose every RTT sample came with duplicate ACKs (Disorder) knows
    // RTT_min but no RTT_max: β = 0.5, standard TCP's
    let c = Conn::new("htcp:paper");
    c.start_in_ca(400);
    c.set_ca_state(DISORDER);
    c.round(RTT);
    c.round(RTT);
    c.set_cwnd(1024);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 512);
}

/// A flow whose RTTs ranged from RTT (the minimum) to 1.5 RTT in the Open state; then an
/// ACK with the RTT sample `odd` and five more with 1.5 RTT; then an event at cwnd 1024.
/// Its ssthresh.
fn cut_after_sample(odd: u32) -> u32 {
    let c = Conn::new("htcp:paper");
    c.start_in_ca(400);
    c.round(RTT);
    c.round(RTT * 3 / 2);
    for _ in 0..4 {
        c.round(RTT);
    }
    c.ack_segments(1, 100, odd);
    c.ack_segments(5, 100, RTT * 3 / 2);
    c.set_cwnd(1024);
    c.enter_recovery();
    c.ssthresh()
}

#[test]
fn beta_comes_from_the_smallest_rtt_sample_down_to_a_microsecond() {
    // draft §4.1: β = RTT_min/RTT_max within [0.5, 0.8]. Without the odd sample: 2/3
    // (⌊1024 · 2/3⌋ = 682). A 1 us sample is the smallest the kernel's clock gives:
    // RTT_min = 1 us, β below 0.5, so 0.5
    assert_eq!(cut_after_sample(RTT), 682);
    assert_eq!(cut_after_sample(1), 512);
    // a 0 us sample (below the clock's resolution), read as no sample (β 2/3) or as an
    // RTT_min of 0 (β 0.5), never leaves RTT_min to the samples after it (1.5 RTT: β 1,
    // so 0.8)
    let ss = cut_after_sample(0);
    assert!(ss == 682 || ss == 512, "ssthresh {ss} of 1024");
}

#[test]
fn a_throughput_sample_of_exactly_one_rtt_is_complete() {
    // B is measured over the last RTT: an interval of exactly srtt (500 ACKs 100 us
    // apart, srtt 50 ms) is a sample, 10000 segments/s, and the event right after it
    // knows it. The next event at 7812 segments/s (−22 %) is then compared with it:
    // adaptive backoff, β = 0.5 (the RTTs alone: 0.8)
    let c = Conn::new("htcp:paper");
    c.start_in_ca(600);
    c.ack_segments(500, 100, RTT);
    assert_eq!(c.srtt_us(), RTT);
    c.enter_recovery();
    c.exit_reduction();
    c.ack_segments(2_000, 128, RTT);
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w * 512 >> 10, "compared with the 10000/s of the first RTT");
}

#[test]
fn the_first_segment_after_an_idle_restart_takes_a_whole_count_at_the_new_window() {
    // Within Δ_L of the connection's start, with β = 0.5, the increase is one segment per
    // RTT: one segment per cwnd acknowledged segments. A window of 120 (ssthresh 80) has
    // counted 119 of them when the application stops sending; the flight is acknowledged
    // without growth (not cwnd-limited, RFC 7661), the connection sits idle, and RFC 5681
    // §4.1's restart (tcp_cwnd_restart: ssthresh 3/4 · 120 = 90, cwnd halved to 60; no
    // loss, no ssthresh op) is followed by slow start back to 90. The credit counted at
    // 120 is not spent at 90, where it would be more than a whole segment at once: the
    // first segment comes after 90 acknowledged segments (cca_common.h, struct cca_frac)
    let c = Conn::new("htcp:paper");
    let t0 = now_us();
    c.start_in_ca(80);
    c.set_cwnd(120);
    c.ack_segments(119, 100, RTT);
    assert_eq!(c.cwnd(), 120, "one ACK short of the next segment");
    assert_eq!(c.idle_restart(RTT, 600_000, Some(90), 60), 120, "the flight acknowledged, no growth");
    c.ack_segments(30, 100, RTT);
    assert_eq!((c.cwnd(), c.ssthresh()), (90, 90), "slow start up to ssthresh");
    assert!(now_us() - t0 < 1_000_000, "still within Delta_L of the start: alpha 1");
    assert_eq!(acks_until_growth(&c), 90, "one segment per 90 acknowledged at a window of 90");
}

#[test]
fn throughput_samples_span_at_least_a_millisecond_on_a_short_path() {
    // bpf/cc/htcp.bpf.c samples B over max(srtt, 1 ms): on a 100 us path an ACK pattern
    // of gaps 50, 50, 200 us (10000 segments/s on average, as before the first event)
    // gives samples of 20000 and 5000 segments/s over single RTTs, which would trigger
    // adaptive backoff (> 20 % change); over a millisecond the rate is 9091-10000/s, and
    // whatever the phase at which the event comes, the cut is β = 0.8
    const SHORT: u32 = 100;
    for phase in 0..3 {
        let c = Conn::new("htcp:paper");
        c.start_in_ca(600);
        c.ack_segments(2_000, 100, SHORT);
        c.enter_recovery();
        c.exit_reduction();
        for _ in 0..100 {
            c.ack_segments(1, 50, SHORT);
            c.ack_segments(1, 50, SHORT);
            c.ack_segments(1, 200, SHORT);
        }
        for gap in [50, 50, 200].iter().take(phase) {
            c.ack_segments(1, *gap, SHORT);
        }
        let w = c.cwnd();
        c.enter_recovery();
        assert_eq!(c.ssthresh(), w * 819 >> 10, "phase {phase}: no adaptive backoff");
    }
}
