//! cca_highspeed (bpf/cc/highspeed.bpf.c): the default variant against the rules of Linux
//! 6.12's tcp_highspeed (also replayed call by call against it: tests/replay.rs), the paper
//! variant ("highspeed:paper") against RFC 3649 §5: b(w) = (0.1 − 0.5)(ln w − ln 38)/(ln
//! 83000 − ln 38) + 0.5, p(w) = 0.078/w^1.2, a(w) = w²·p(w)·2b(w)/(2 − b(w)); standard TCP
//! (a = 1, b = 0.5) at or below Low_Window = 38.
use ccarena_cc_harness::*;

// ---- Linux's HighSpeed --------------------------------------------------------------------

/// the (w, b·256) rows of hs_rules, Linux's rule table (RFC 3649 Appendix B)
fn rules() -> Vec<(u32, u32)> {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../bpf/cc/highspeed.bpf.c")).unwrap();
    let start = src.find("hs_rules[HS_RULES] = {").expect("hs_rules");
    let body = &src[start..src[start..].find("};").unwrap() + start];
    body.lines()
        .filter_map(|l| l.trim().strip_prefix('{').and_then(|r| r.split("},").next()))
        .map(|r| {
            let v: Vec<u32> = r.split(',').map(|x| x.trim().parse().unwrap()).collect();
            (v[0], v[1])
        })
        .collect()
}

/// Linux's row for a window: the first whose w is at or above it (the last above 89053)
fn linux_row(w: u32) -> usize {
    let r = rules();
    r.iter().position(|x| x.0 >= w).unwrap_or(r.len() - 1)
}

/// ACKs (of `segs` segments each) until cwnd grows by one
fn acks_to_grow(c: &Conn, segs: u32) -> u32 {
    let w = c.cwnd();
    c.transmit();
    for n in 1..=100_000 {
        c.ack(Ack::new(segs, 20_000));
        if c.cwnd() > w {
            return n;
        }
    }
    panic!("no growth from {w}")
}

#[test]
fn linux_table_is_rfc_3649_appendix_b() {
    // App. B: the row k window is where a(w) reaches k + 1; b(w) there, in 1/256
    let r = rules();
    assert_eq!(r.len(), 72);
    assert_eq!(r[0], (38, 128), "Low_Window: standard TCP, b = 0.5");
    for (k, &(w, md)) in r.iter().enumerate().skip(1) {
        assert!(r[k - 1].0 < w && r[k - 1].1 >= md, "row {k}: windows rise, decreases fall");
        assert!((a(w as f64) - (k + 1) as f64).abs() < 0.5, "row {k}: a({w}) = {:.2}", a(w as f64));
        assert!((b(w as f64) * 256.0 - md as f64).abs() < 1.5, "row {k}: b({w}) = {:.3}", b(w as f64));
    }
}

#[test]
fn linux_grows_a_of_w_per_ack_whatever_the_ack_acknowledges() {
    // cwnd_cnt += row + 1 per ACK, one segment per cwnd of it: at 200 the row is 221's
    // (a = 3): ceil(200 / 3) = 67 ACKs, of one segment or of two
    for segs in [1u32, 2] {
        let c = Conn::new("highspeed");
        c.start_in_ca(200);
        assert_eq!(linux_row(200), 2);
        assert_eq!(acks_to_grow(&c, segs), 67, "ACKs of {segs}");
    }
    // above the last row's window (89 053) the last row: a = 72, ceil(90 000 / 72) ACKs
    let c = Conn::new("highspeed");
    c.set(Field::CwndClamp, 1 << 24);
    c.start_in_ca(90_000);
    assert_eq!(acks_to_grow(&c, 1), 1250);
    // at 38 (the first row, a = 1) and 39 (the second, a = 2): Reno's, then twice as fast
    let c = Conn::new("highspeed");
    c.start_in_ca(38);
    assert_eq!(acks_to_grow(&c, 1), 38);
    assert_eq!(acks_to_grow(&c, 1), 20, "39 / 2 rounded up");
}

#[test]
fn linux_uses_the_first_row_at_or_above_the_window_at_every_boundary() {
    // at w[k-1] + 1 and at w[k] the row is k: an ACK adds exactly a = k + 1 to the
    // counter (one short of cwnd: no growth; exactly cwnd: one segment)
    let r = rules();
    for k in 0..r.len() {
        let lo = if k == 0 { 2 } else { r[k - 1].0 + 1 };
        for w in [lo, r[k].0] {
            for (short, grows) in [(k as u32 + 1, true), (k as u32 + 2, false)] {
                let c = Conn::new("highspeed");
                c.set(Field::CwndClamp, 1 << 24);
                c.start_in_ca(w);
                c.set(Field::CwndCnt, (w - short) as u64);
                c.ack(Ack::new(1, 20_000));
                assert_eq!(c.cwnd() > w, grows, "row {k} at {w}: counter {} short", short);
            }
        }
    }
}

#[test]
fn linux_cuts_by_the_row_last_set_in_congestion_avoidance() {
    // straight out of slow start the row is still 0: halving, at any window
    let c = Conn::new("highspeed");
    c.set_cwnd(500);
    c.transmit();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 250);
    // in congestion avoidance at 500 the row is 663's (b = 89/256): 500 - 500 * 89 / 256
    let c = Conn::new("highspeed");
    c.start_in_ca(500);
    c.ack(Ack::new(1, 20_000));
    let (w, md) = rules()[linux_row(500)];
    assert_eq!((w, md), (663, 89));
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 500 - 500 * 89 / 256);
    // an RTO, slow start to 30, a loss there: still the row of 500, not halving
    c.enter_loss();
    c.exit_reduction();
    c.set_ssthresh(INFINITE_SSTHRESH);
    c.set_cwnd(30);
    c.ack(Ack::new(1, 20_000));
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 31 - 31 * 89 / 256);
}

#[test]
fn linux_slow_start_stops_at_ssthresh_and_spends_nothing_beyond() {
    // Reno spends the segments past ssthresh in congestion avoidance; tcp_highspeed not
    let c = Conn::new("highspeed");
    c.set_cwnd(9);
    c.set_ssthresh(10);
    c.transmit();
    c.ack(Ack::new(3, 20_000));
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (10, 0));
    let r = Conn::new("reno");
    r.set_cwnd(9);
    r.set_ssthresh(10);
    r.transmit();
    r.ack(Ack::new(3, 20_000));
    assert_eq!((r.cwnd(), r.get(Field::CwndCnt)), (10, 2));
}

#[test]
fn linux_growth_stops_at_the_clamp() {
    // (Linux's init also caps the clamp at 2^32 / 128; a struct_ops program may not
    // write it: bpf/cc/highspeed.bpf.c)
    let c = Conn::new("highspeed");
    c.set(Field::CwndClamp, 300);
    c.start_in_ca(300);
    c.ack_segments(2000, 10, 20_000);
    assert_eq!(c.cwnd(), 300);
}

// ---- the paper's HighSpeed (highspeed:paper) ------------------------------------------------

fn b(w: f64) -> f64 {
    (0.1 - 0.5) * (w.ln() - 38f64.ln()) / (83000f64.ln() - 38f64.ln()) + 0.5
}
fn a(w: f64) -> f64 {
    let p = 0.078 / w.powf(1.2);
    w * w * p * 2.0 * b(w) / (2.0 - b(w))
}

/// the (w, a·256, b·256) rows of hs_table in the C source
fn table() -> Vec<(u32, u32, u32)> {
    let src = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../bpf/cc/highspeed.bpf.c")).unwrap();
    let start = src.find("hs_table[HS_ROWS] = {").expect("hs_table");
    let body = &src[start..src[start..].find("};").unwrap() + start];
    body.lines()
        .filter_map(|l| l.trim().strip_prefix('{').and_then(|r| r.strip_suffix("},")))
        .map(|r| {
            let v: Vec<u32> = r.split(',').map(|x| x.trim().parse().unwrap()).collect();
            (v[0], v[1], v[2])
        })
        .collect()
}

#[test]
fn every_table_row_is_rfc_3649s_a_and_b() {
    let t = table();
    assert_eq!(t.len(), 64);
    assert_eq!(t[0], (38, 256, 128), "Low_Window: standard TCP");
    assert_eq!(t[63].0, 83000);
    for &(w, ra, rb) in &t[1..] {
        let (ea, eb) = (a(w as f64) * 256.0, b(w as f64) * 256.0);
        assert!((ra as f64 - ea).abs() <= 0.5, "w {w}: a {ra}/256, RFC {:.2}/256", ea);
        assert!((rb as f64 - eb).abs() <= 0.5, "w {w}: b {rb}/256, RFC {:.2}/256", eb);
    }
    // the RFC's own Appendix B points
    for (w, want) in [(118.0, 2.0), (347.0, 4.0), (1058.0, 8.0), (83000.0, 70.7)] {
        assert!((a(w) - want).abs() < 0.05 * want, "a({w}) = {}", a(w));
    }
}

#[test]
fn growth_at_a_thousand_segments_is_about_eight_per_rtt() {
    // the row of w = 1000 is 908's: a(908) = 7.3; RFC 3649's table: 8 at 1058
    let c = Conn::new("highspeed:paper");
    c.start_in_ca(1000);
    let w0 = c.cwnd();
    for _ in 0..4 {
        c.round(100_000);
    }
    let g = (c.cwnd() - w0) as f64 / 4.0;
    assert!((g - a(908.0)).abs() <= 0.3, "{g} per RTT, want a(908) = {:.2}", a(908.0));
    assert!((7.0..=8.2).contains(&g), "{g}");
}

#[test]
fn loss_cuts_b_of_w() {
    for w in [38u32, 40, 86, 170, 1000, 10000, 83000] {
        let c = Conn::new("highspeed:paper");
        c.start_in_ca(w);
        c.enter_recovery();
        let cut = 1.0 - c.ssthresh() as f64 / w as f64;
        let row = table().into_iter().filter(|r| r.0 <= w).last().unwrap();
        let want = if w <= 38 { 0.5 } else { b(row.0 as f64) };
        assert!((cut - want).abs() <= 0.5 / 256.0 + 1.0 / w as f64, "w {w}: cut {cut:.4}, b {want:.4}");
    }
}

#[test]
fn standard_tcp_at_or_below_low_window() {
    // RFC 5681: one segment per cwnd acked segments
    let c = Conn::new("highspeed:paper");
    c.start_in_ca(30);
    for k in 0..8 {
        c.ack_segments(30 + k - 1, 500, 20_000);
        assert_eq!(c.cwnd(), 30 + k);
        c.ack_segments(1, 500, 20_000);
        assert_eq!(c.cwnd(), 30 + k + 1);
    }
}

/// The table row a window uses: the largest tabulated w at or below it.
fn row(w: u32) -> (u32, u32, u32) {
    table().into_iter().filter(|r| r.0 <= w).last().unwrap()
}

#[test]
fn the_cut_is_the_row_s_b_rounded_down_and_half_at_or_below_low_window() {
    // RFC 3649 §5: cwnd <- (1 − b(w)) w above Low_Window = 38 with b of the row (in
    // 1/256; the cut rounded down); at or below, standard TCP: RFC 5681's ⌊w/2⌋
    for w in [2u32, 3, 37, 38, 39, 40, 42, 43, 44, 1000, 83_000, 100_000] {
        let c = Conn::new("highspeed:paper");
        c.start_in_ca(w);
        c.enter_recovery();
        let want = if w <= 38 { (w / 2).max(2) } else { w - w * row(w).2 / 256 };
        assert_eq!(c.ssthresh(), want, "w {w}");
    }
}

#[test]
fn growth_from_a_loss_on_is_a_of_w_per_rtt() {
    // a(w)/cwnd per acked segment (a in 1/256 of the row): from a loss on (where the
    // fraction carried so far is dropped) cwnd grows by one after ⌈cwnd·256/a⌉ ACKs
    for w in [100u32, 1000, 10_000] {
        let c = Conn::new("highspeed:paper");
        c.start_in_ca(2 * w);
        c.ack_segments(37, 10, 20_000); // a fraction accumulated before the loss
        c.enter_recovery();
        c.exit_reduction();
        c.set_cwnd(w);
        c.set_ssthresh(w); // congestion avoidance
        let a = row(w).1;
        let want = (w * 256).div_ceil(a);
        let mut n = 0;
        while c.cwnd() == w {
            c.ack(Ack::new(1, 20_000));
            n += 1;
        }
        assert_eq!(n, want, "w {w}: a {a}/256");
    }
}

#[test]
fn standard_tcp_at_low_window_after_an_idle_restart_from_above() {
    // RFC 3649 §5: at or below Low_Window = 38, standard TCP: RFC 5681's one segment per
    // cwnd acknowledged, also when the window comes back there without a loss. A loss at
    // 70 (b = 120/256: 70 - 32 = 38) sets ssthresh to 38; the window grows past it to 50
    // and on by 43 ACKs of a(50) = 289/256 per RTT (0.97 of a segment, carried by
    // HighSpeed's own increase), then sits idle: RFC 5681 §4.1's restart halves it to 25
    // (tcp_cwnd_restart: ssthresh max(38, 3/4 · 50) = 38; no ssthresh op, no loss), slow
    // start takes it back to 38, and from there standard TCP: the first segment after
    // 38 ACKs, not at once
    let c = Conn::new("highspeed:paper");
    c.start_in_ca(70);
    c.enter_recovery();
    c.exit_reduction();
    assert_eq!((c.cwnd(), c.ssthresh()), (38, 38));
    while c.cwnd() < 50 {
        c.ack_segments(1, 100, 20_000);
    }
    c.ack_segments(43, 100, 20_000);
    assert_eq!(c.cwnd(), 50);
    advance_us(1_000_000);
    c.cwnd_event(CA_EVENT_CWND_RESTART);
    c.set_cwnd(25);
    c.ack_segments(13, 100, 20_000);
    assert_eq!((c.cwnd(), c.ssthresh()), (38, 38), "slow start up to ssthresh");
    c.ack_segments(37, 100, 20_000);
    assert_eq!(c.cwnd(), 38);
    c.ack_segments(1, 100, 20_000);
    assert_eq!(c.cwnd(), 39);
}

/// The window after `acks` ACKs of one segment in congestion avoidance from a window `w`
/// and no credit, by §5's rule as the table gives it: a(w)/256 segments per RTT at the
/// window w (its row), a(w)/w per acked segment, the remainder carried in 1/1024
/// segment-acks
fn window_by_the_rule(mut w: u32, acks: u32) -> u32 {
    let mut acc = 0u64;
    for _ in 0..acks {
        acc += (row(w).1 as u64) << 2;
        let unit = (w as u64) << 10;
        w += (acc / unit) as u32;
        acc %= unit;
    }
    w
}

#[test]
fn the_first_round_after_an_idle_restart_grows_by_a_of_the_new_window() {
    // RFC 3649 §5: a(w) per RTT at the window w. A window of 120, past its ssthresh of 80,
    // has counted all but one ACK's worth of a segment (a(120)/120 per ACK) when the
    // application stops sending; the flight is acknowledged without growth (not
    // cwnd-limited, RFC 7661), the connection sits idle, and RFC 5681 §4.1's restart
    // (tcp_cwnd_restart: ssthresh max(80, 3/4 · 120) = 90, cwnd halved for one RTO of
    // idle: 60; no loss, no ssthresh op) is followed by slow start back to 90. From there
    // the growth is a(90) per RTT from nothing: the credit counted at 120 is not spent at
    // 90, where it would be more than a whole segment at once
    let c = Conn::new("highspeed:paper");
    c.start_in_ca(80);
    c.set_cwnd(120);
    let k = (120u32 * 256).div_ceil(row(120).1) - 1;
    c.ack_segments(k, 100, 20_000);
    assert_eq!(c.cwnd(), 120, "one ACK short of the next segment");
    assert_eq!(c.idle_restart(20_000, 1_000_000, Some(90), 60), 120, "the flight acknowledged, no growth");
    c.ack_segments(30, 100, 20_000);
    assert_eq!((c.cwnd(), c.ssthresh()), (90, 90), "slow start up to ssthresh");
    // the first segment after ⌈90 · 256/a(90)⌉ ACKs, and the round (90 ACKs) by the rule
    let first = (90u32 * 256).div_ceil(row(90).1);
    let mut n = 0;
    while c.cwnd() == 90 && n < 1000 {
        c.ack(Ack::new(1, 20_000));
        n += 1;
    }
    assert_eq!((n, c.cwnd()), (first, 91), "a(90) = {}/256", row(90).1);
    c.ack_segments(90 - n, 100, 20_000);
    assert_eq!(c.cwnd(), window_by_the_rule(90, 90), "the first round after the restart");
}
