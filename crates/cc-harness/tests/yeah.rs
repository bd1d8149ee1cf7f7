//! cca_yeah (bpf/cc/yeah.bpf.c): the default variant against the rules of Linux 6.12's
//! tcp_yeah (also replayed call by call against it: tests/replay.rs), the paper variant
//! ("yeah:paper") against Baiocchi, Castellani, Vacirca, "YeAH-TCP", PFLDnet 2007
//! (bpf/cc/yeah.bpf.c): Q = (RTT_min − RTT_base)·cwnd/RTT_min, L = (RTT_min −
//! RTT_base)/RTT_base; fast mode (Scalable increase) iff Q < Q_max = 80 and L ≤ 1/φ,
//! φ = 8; slow mode: Reno increase and precautionary decongestion (cwnd −= Q) unless
//! competing with Reno (a decongestion that does not drain the queue, bpf/cc/yeah.bpf.c);
//! loss: cwnd − max(cwnd/8, Q) (at most half), cwnd/2 with Reno.
use ccarena_cc_harness::*;

// ---- Linux's YeAH -------------------------------------------------------------------------

/// One of tcp_yeah's rounds (Vegas's): ACKs of one segment carrying `rtt` until the first
/// ACK beyond `edge`, where the round is judged. Returns the next edge and cwnd just
/// before the judging ACK.
fn linux_round(c: &Conn, edge: u64, rtt: u32) -> (u64, u32) {
    loop {
        let (nxt, w) = (c.get(Field::SndNxt), c.cwnd());
        advance_us(100);
        c.ack(Ack::new(1, rtt));
        if c.get(Field::SndUna) > edge {
            return (nxt, w);
        }
    }
}

/// congestion avoidance at `w`, BaseRTT 20 ms (+1 us), in fast mode, a round judged
fn linux_in_ca(w: u32) -> (Conn, u64) {
    let c = Conn::new("yeah");
    let edge = c.get(Field::SndNxt);
    c.start_in_ca(w);
    let (edge, _) = linux_round(&c, edge, 20_000); // the first ACK: too few samples
    let (edge, _) = linux_round(&c, edge, 20_000); // fast mode
    c.set_cwnd(w);
    c.set(Field::CwndCnt, 0);
    (c, edge)
}

/// acked segments (one per ACK carrying `rtt`) until cwnd grows by one
fn acks_to_grow(c: &Conn, rtt: u32) -> u32 {
    let w = c.cwnd();
    for n in 1..=10_000 {
        c.transmit();
        advance_us(10);
        c.ack(Ack::new(1, rtt));
        if c.cwnd() > w {
            return n;
        }
    }
    panic!("no growth from {w}")
}

#[test]
fn linux_yeah_decongests_by_the_queue_at_most_half() {
    // cwnd W judged at RTT 40 ms: Q = W * 19 999 / 40 001 > 80: cwnd - Q, ssthresh = cwnd
    // (W: the window before the judging ACK, or one more if that ACK grew it first)
    let (c, edge) = linux_in_ca(200);
    let (_, w) = linux_round(&c, edge, 40_000);
    let cut = |w: u32| w - (w as u64 * 19_999 / 40_001) as u32;
    assert!(c.cwnd() == cut(w) || c.cwnd() == cut(w + 1), "{w} -> {}", c.cwnd());
    assert!(c.cwnd() < 110);
    assert_eq!(c.ssthresh(), c.cwnd());
    // a loss after one slow-mode round: cwnd - max(min(Q, cwnd / 2), cwnd / 8)
    c.set_cwnd(120);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 120 - 60);
    // a Q of 300 is cut to half the window
    let (c, edge) = linux_in_ca(600);
    let (_, w) = linux_round(&c, edge, 80_000);
    assert!(w as u64 * 59_999 / 80_001 > w as u64 / 2 + 1);
    assert!(c.cwnd() == w / 2 || c.cwnd() == (w + 1) - (w + 1) / 2, "{w} -> {}", c.cwnd());
}

#[test]
fn linux_yeah_grows_as_scalable_in_fast_mode_and_as_reno_in_slow_mode() {
    let (c, _) = linux_in_ca(200);
    assert_eq!(acks_to_grow(&c, 20_000), 100, "fast: one per min(cwnd, 100)");
    // slow mode by delay alone (Q <= 80, queueing delay above BaseRTT / 8): RTT 24 ms,
    // Q = 201 * 3999 / 24001 = 33
    let (c, edge) = linux_in_ca(200);
    linux_round(&c, edge, 24_000);
    assert!(c.cwnd() >= 200, "no decongestion with Q <= 80");
    c.set_cwnd(200);
    c.set(Field::CwndCnt, 0);
    assert_eq!(acks_to_grow(&c, 24_000), 200, "slow: Reno's");
}

#[test]
fn linux_yeah_loss_cut_is_at_least_an_eighth_and_halves_after_sixteen_slow_rounds() {
    // fast mode (Q 0): cwnd / 8
    let (c, _) = linux_in_ca(200);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 200 - 25);
    // 16 slow-mode rounds in a row (by delay, Q small): Reno's halving
    let (c, mut edge) = linux_in_ca(200);
    for _ in 0..16 {
        c.set_cwnd(200);
        edge = linux_round(&c, edge, 24_000).0;
    }
    c.set_cwnd(200);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 100);
    // one round fewer: max(min(Q, 100), 25) with Q = 33
    let (c, mut edge) = linux_in_ca(200);
    for _ in 0..15 {
        c.set_cwnd(200);
        edge = linux_round(&c, edge, 24_000).0;
    }
    c.set_cwnd(200);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 200 - 33);
}

#[test]
fn linux_yeah_decongests_in_slow_start_too() {
    let c = Conn::new("yeah");
    let edge = c.get(Field::SndNxt);
    c.set_cwnd(150);
    c.transmit();
    let (edge, _) = linux_round(&c, edge, 20_000);
    c.set_cwnd(200);
    let (_, w) = linux_round(&c, edge, 40_000);
    // the judging ACK grew the window by one first (slow start), then Q = w * 19 999 / 40 001
    let q = (w + 1) as u64 * 19_999 / 40_001;
    assert!(q > 80);
    assert_eq!((c.cwnd(), c.ssthresh()), (w + 1 - q as u32, w + 1 - q as u32));
}


// ---- the paper's YeAH (yeah:paper) ----------------------------------------------------------

const BASE: u32 = 20_000;

/// growth over 4 rounds at a constant queueing delay `q_us`, from cwnd 200
fn growth_at_queueing_delay(q_us: u32) -> u32 {
    let c = Conn::new("yeah:paper");
    c.start_in_ca(200);
    c.round(BASE); // RTT_base
    c.round(BASE + q_us); // the mode is judged at the end of each round
    let w = c.cwnd();
    for _ in 0..4 {
        c.round(BASE + q_us);
    }
    c.cwnd() - w
}

#[test]
fn fast_mode_while_queueing_delay_is_at_most_base_rtt_over_phi() {
    // 2.4 ms <= 20 ms / 8: Scalable's a = 0.01 per ACK, ~2 segments per round at 200
    let fast = growth_at_queueing_delay(2_400);
    assert!((7..=9).contains(&fast), "fast mode: {fast} in 4 rounds");
    assert!(growth_at_queueing_delay(0) >= 7);
}

#[test]
fn slow_mode_once_queueing_delay_exceeds_base_rtt_over_phi() {
    // 3 ms > 20 ms / 8 (but far below phi * base = 160 ms, the inverted rule): Reno
    // (Q = q * 200 / (20 ms + q) stays below Q_max = 80: no decongestion here)
    for q in [2_600, 3_000, 10_000] {
        let slow = growth_at_queueing_delay(q);
        assert!((4..=5).contains(&slow), "slow mode at {q} us: Reno's +1 per round, got {slow}");
    }
}

#[test]
fn a_lone_flow_decongests_and_never_takes_itself_for_a_reno_peer() {
    // 100 Mbit/s, 20 ms (BDP 165), 300-packet buffer: YeAH's own queue only
    let path = Path::new(100e6, BASE, 300);
    let c = Conn::new("yeah:paper");
    c.start_in_ca(100);
    let mut q_max = 0.0f64;
    let mut decongestions = 0;
    for i in 0.. {
        let w = c.cwnd();
        assert!(!c.round_on(&path, 0.0), "loss at cwnd {}", c.cwnd());
        q_max = q_max.max(path.queue(w as f64));
        if c.cwnd() < w {
            decongestions += 1;
        }
        // stop after many cycles, at a queue below half the window
        let q = path.queue(c.cwnd() as f64);
        if i >= 600 && (30.0..60.0).contains(&q) {
            break;
        }
    }
    assert!(decongestions >= 5, "{decongestions}");
    assert!(q_max <= 80.0 + 2.0, "queue {q_max}: held at Q_max by decongestion");
    // not in Reno mode: a loss cuts max(cwnd/8, Q) (Q < cwnd/2 here), not half
    let w = c.cwnd();
    let q = path.queue(w as f64 - 1.0).round() as u32; // the last round's Q
    c.enter_recovery();
    let cut = w - c.ssthresh();
    assert!(cut < w / 2, "cut {cut} of {w}: Reno mode");
    assert!(cut.abs_diff((w / 8).max(q)) <= 1, "cut {cut} of {w} (Q {q})");
}

/// Losses of a lone flow on `path` from cwnd 10 in congestion avoidance: (cwnd before,
/// ssthresh, queue at the loss) for the first `n` losses.
fn lone_losses(path: &Path, n: usize) -> Vec<(u32, u32, f64)> {
    let c = Conn::new("yeah:paper");
    c.start_in_ca(10);
    let mut out = vec![];
    for _ in 0..5000 {
        let w = c.cwnd();
        if c.round_on(path, 0.0) {
            c.enter_recovery();
            out.push((w, c.ssthresh(), path.queue(w as f64)));
            c.exit_reduction();
            c.set_cwnd(c.ssthresh());
            if out.len() == n {
                break;
            }
        }
    }
    out
}

#[test]
fn a_lone_flow_in_a_buffer_below_qmax_cuts_its_queue_not_half() {
    // 100 Mbit/s, 20 ms (BDP 165), 60 packets: the flow never reaches Q_max, so it never
    // decongests; in slow mode (queueing delay > 20 ms / 8) its queue grows one segment
    // per round from ~21 to 60 — 40 rounds, more than rho = 16. Counting slow-mode rounds
    // from the entry into slow mode (the paper's count) would take the flow for a Reno
    // peer at every loss and halve it to 113, below the BDP.
    let path = Path::new(100e6, BASE, 60);
    let losses = lone_losses(&path, 4);
    assert_eq!(losses.len(), 4);
    for (w, ss, q) in losses {
        assert!(w > 200, "loss at {w}");
        assert!(ss > w / 2 + 10, "halved: {w} -> {ss} (Q {q:.0})");
        // the cut is the flow's queue (the last round's Q, within a segment of rounding)
        assert!((w - ss).abs_diff(q.round() as u32) <= 2, "{w} -> {ss}, queue {q:.0}");
    }
}

/// A YeAH flow from cwnd 155 sharing `path` with `other` segments of someone else's
/// traffic, which no decongestion drains; runs until the first decongestion and then
/// `k` more rounds. Returns the connection and the decongested window.
fn with_reno_peer(path: &Path, other: f64, k: u32) -> (Conn, u32) {
    let c = Conn::new("yeah:paper");
    c.start_in_ca(155);
    c.round(BASE); // RTT_base
    let mut w = c.cwnd();
    loop {
        c.round_on(path, other);
        if c.cwnd() < w {
            break;
        }
        w = c.cwnd();
    }
    let dec = c.cwnd();
    for _ in 0..k {
        c.round_on(path, other);
    }
    (c, dec)
}

#[test]
fn a_reno_peer_is_detected_after_rho_slow_rounds_following_a_decongestion() {
    // 100 Mbit/s, 20 ms (BDP 165): others keep the pipe plus 40 segments queued, which
    // no decongestion drains. From 155 its own queue exceeds Q_max (84 of 195).
    // Its share of the queue stays below half its window (window + others < 2 BDP), so
    // a cut by Q and a halving differ.
    let path = Path::new(100e6, BASE, 400);
    let other = path.bdp() + 40.0;
    let (_, dec) = with_reno_peer(&path, other, 0);
    assert!((60..=90).contains(&dec), "precautionary decongestion from 155: {dec}");
    // rho - 1 rounds later a loss still cuts the flow's queue, rho rounds later it halves
    let (c, _) = with_reno_peer(&path, other, 15);
    let w = c.cwnd();
    c.enter_recovery();
    assert!(c.ssthresh() > w / 2 + 3, "not yet Reno after 15 rounds: {w} -> {}", c.ssthresh());
    let (c, _) = with_reno_peer(&path, other, 16);
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w / 2, "Reno after rho = 16 slow rounds: halve");
    // and no decongestion while competing: Reno's growth, one segment per round
    let (c, _) = with_reno_peer(&path, other, 16);
    let w0 = c.cwnd();
    for _ in 0..100 {
        let w = c.cwnd();
        c.round_on(&path, other);
        assert!(c.cwnd() >= w, "a decongestion while competing with Reno: {w} -> {}", c.cwnd());
    }
    assert!((98..=100).contains(&(c.cwnd() - w0)), "{w0} -> {} in 100 rounds", c.cwnd());
}

#[test]
fn a_reno_peer_is_detected_after_a_loss_when_the_flow_never_decongests() {
    // 100 Mbit/s, 20 ms (BDP 165), others keep the pipe plus 30 segments queued: the
    // flow's share of the queue stays far below Q_max, so it never decongests. Its first
    // loss cuts its queue, which does not drain the path: rho slow rounds later a loss
    // halves.
    let path = Path::new(100e6, BASE, 400);
    let other = path.bdp() + 30.0;
    let c = Conn::new("yeah:paper");
    c.start_in_ca(40);
    c.round(BASE);
    for _ in 0..3 {
        c.round_on(&path, other);
    }
    let w = c.cwnd();
    c.enter_recovery();
    assert!(c.ssthresh() > w / 2 + 3, "first loss: not known as Reno yet: {w} -> {}", c.ssthresh());
    c.exit_reduction();
    for k in 1..=16 {
        c.round_on(&path, other);
        if k == 15 {
            // (state read through a loss on a copy is not possible: rho - 1 rounds are
            // covered by the decongestion test above)
        }
    }
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w / 2, "after rho slow rounds: halve");
}

#[test]
fn fast_mode_clears_the_reno_state() {
    let path = Path::new(100e6, BASE, 400);
    let other = path.bdp() + 40.0;
    let (c, _) = with_reno_peer(&path, other, 20);
    // the peer leaves; the flow's own window is below the BDP: the queue is empty
    for _ in 0..2 {
        c.round_on(&path, 0.0);
    }
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w - w / 8, "fast mode: a loss cuts cwnd/8 again");
}

#[test]
fn a_loss_in_fast_mode_cuts_an_eighth() {
    let c = Conn::new("yeah:paper");
    c.start_in_ca(400);
    c.round(BASE);
    c.round(BASE + 500);
    let w = c.cwnd();
    c.enter_recovery();
    // Q = 0.5 ms * w / 20.5 ms ~ 10 < w/8 = 50
    assert_eq!(c.ssthresh(), w - w / 8);
}

/// One round whose every RTT sample is `rtt`, judged (its last ACK) with cwnd `w` and the
/// acked-segment count at 0: the mode, Q and the decongestion come from exactly these.
fn judged_round(c: &Conn, rtt: u32, w: u32) {
    c.round_then(rtt, |_| rtt, |c| {
        c.set_cwnd(w);
        c.set(Field::CwndCnt, 0);
    });
}

/// Whether the flow grows in fast mode right after a judged round: Scalable's one segment
/// per 100 acked (cwnd >= 100), where Reno's needs cwnd acked. The judging ACK counted one.
fn grows_fast(c: &Conn) -> bool {
    let w = c.cwnd();
    assert!(w >= 100);
    c.ack_segments(99, 10, BASE);
    c.cwnd() > w
}

/// A flow in congestion avoidance at `w` with RTT_base = 20 ms measured.
fn flow(w: u32) -> Conn {
    let c = Conn::new("yeah:paper");
    c.start_in_ca(w);
    c.round(BASE);
    c
}

#[test]
fn fast_mode_boundaries_are_exact() {
    // §2: fast iff Q < Q_max = 80 and L = queueing delay / RTT_base <= 1/phi = 1/8
    // L: 2.5 ms of 20 ms is exactly 1/8 (fast); 1 us more is slow (Q = 22, far below 80)
    for (q, fast) in [(2_500, true), (2_501, false)] {
        let c = flow(200);
        judged_round(&c, BASE + q, 200);
        assert_eq!(grows_fast(&c), fast, "queueing delay {q} us");
    }
    // Q = 2 ms * w / 22 ms: 79 at w = 879 (fast), 80 at w = 880 (slow; L = 0.1)
    for (w, fast) in [(879, true), (880, false)] {
        let c = flow(w);
        judged_round(&c, BASE + 2_000, w);
        assert_eq!(grows_fast(&c), fast, "Q at cwnd {w}");
    }
}

#[test]
fn a_new_flow_starts_in_fast_mode() {
    // no queue is known before the first measurement: Scalable's increase, a = 0.01
    // per ACK, one segment per 100 acked at cwnd >= 100 (Linux's tcp_yeah too)
    let c = Conn::new("yeah:paper");
    c.start_in_ca(200);
    c.ack_segments(99, 10, BASE);
    assert_eq!(c.cwnd(), 200, "not before 100 acked segments");
    c.ack_segments(1, 10, BASE);
    assert_eq!(c.cwnd(), 201, "one segment per 100 acked");
}

#[test]
fn precautionary_decongestion_starts_above_qmax_and_sets_ssthresh() {
    // §2: in slow mode, Q > Q_max: cwnd -= Q, ssthresh = cwnd. 10 ms of queueing at a
    // 20 ms base: Q = w/3, 80 at w = 240 (no decongestion), 81 at w = 243
    let c = flow(240);
    judged_round(&c, BASE + 10_000, 240);
    assert_eq!((c.cwnd(), c.ssthresh()), (240, 240), "Q = Q_max: none");
    let c = flow(240);
    judged_round(&c, BASE + 10_000, 243);
    assert_eq!((c.cwnd(), c.ssthresh()), (243 - 81, 243 - 81), "Q = 81: cwnd - Q, ssthresh = cwnd");
}

#[test]
fn decongestion_comes_at_most_every_other_round_and_cuts_at_most_half() {
    // the round after a decongestion still carries packets sent before it (bpf/cc/yeah.bpf.c);
    // and a decongestion never takes more than half the window (§2: cwnd/2 at most)
    let c = flow(240);
    judged_round(&c, BASE + 10_000, 243);
    assert_eq!(c.cwnd(), 162);
    // 30 ms of queueing: Q = 30 * 243 / 50 = 145 > 80 in each of the next rounds
    judged_round(&c, BASE + 30_000, 243);
    assert_eq!(c.cwnd(), 243, "the round right after a decongestion: none");
    judged_round(&c, BASE + 30_000, 243);
    assert_eq!(c.cwnd(), 243 - 243 / 2, "the next one: cwnd - min(Q, cwnd/2)");
}

#[test]
fn a_loss_cuts_at_most_half_the_window() {
    // §2: cwnd - max(cwnd/8, Q), never below cwnd/2: Q = 60 * 400 / 80 = 300 of a window
    // that the decongestion brought to 200
    let c = flow(400);
    judged_round(&c, BASE + 60_000, 400);
    assert_eq!(c.cwnd(), 200);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 100);
}

/// rho + 1 slow-mode rounds at a small queue (5 ms: L = 1/4, Q ~ cwnd/5 < 80), then a loss:
/// (window, ssthresh)
fn slow_rounds_then_loss(c: &Conn) -> (u32, u32) {
    for _ in 0..17 {
        c.round(BASE + 5_000);
    }
    let w = c.cwnd();
    c.enter_recovery();
    (w, c.ssthresh())
}

#[test]
fn only_a_reduction_that_would_drain_a_lone_flow_s_queue_starts_the_reno_count() {
    // bpf/cc/yeah.bpf.c: the count of slow rounds starts at a reduction after which the
    // Q - red packets left would wait at most RTT_base/phi at the rate cwnd/RTT, i.e.
    // phi (Q - red) RTT <= RTT_base cwnd. 60 ms of queue at a 20 ms base, w = 400: Q = 300,
    // the cut 200 (half) leaves 100: 8 * 100 * 80 ms > 20 ms * 400, it would not drain:
    // no count, and rho + 1 slow rounds later a loss still cuts Q, not half
    let c = flow(400);
    judged_round(&c, BASE + 60_000, 400);
    let (w, ss) = slow_rounds_then_loss(&c);
    assert!(ss > w / 2 + 10, "not a Reno peer: {w} -> {ss}");
    // 25 ms of queue at w = 360: Q = 200, the cut 180 leaves 20: 8 * 20 * 45 ms =
    // 20 ms * 360 exactly, it drains: the count starts, and rho slow rounds mean Reno
    let c = flow(360);
    judged_round(&c, BASE + 25_000, 360);
    assert_eq!(c.cwnd(), 180);
    let (w, ss) = slow_rounds_then_loss(&c);
    assert_eq!(ss, w / 2, "a Reno peer: halve");
}

#[test]
fn a_round_without_rtt_samples_is_not_judged() {
    // ACKs that carry no RTT sample (retransmitted data, Karn's rule; the kernel passes
    // -1) say nothing about the queue: mode and window stay as they were
    let c = flow(200);
    let w = c.cwnd();
    c.round_with(BASE, |_| u32::MAX); // rtt_us -1
    assert!(c.cwnd() >= w, "a round without samples judged: {w} -> {}", c.cwnd());
    c.round(BASE);
    assert!(c.cwnd() >= w + 2, "still fast mode: {w} -> {}", c.cwnd());
}

#[test]
fn a_loss_cut_that_leaves_no_queue_starts_the_reno_count_at_any_window() {
    // a cut of max(cwnd/8, Q) >= Q leaves no packet queued: it would drain a lone flow's
    // queue whatever the window and the RTT, so the count starts (bpf/cc/yeah.bpf.c).
    // w = 10 at 35 ms (base 20 ms): Q = 15 * 10 / 35 = 4, cut 4 (one packet left would
    // not drain: 8 * 35 ms > 20 ms * 10); then rho + 1 slow rounds (5 ms of queue: L =
    // 1/4, Q small) and a loss: a Reno peer, halve
    let c = flow(10);
    judged_round(&c, BASE + 15_000, 10);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 10 - 4);
    c.exit_reduction();
    let (w, ss) = slow_rounds_then_loss(&c);
    assert_eq!(ss, w / 2, "a Reno peer: halve");
}

#[test]
fn a_flow_switched_to_yeah_mid_way_is_in_fast_mode_until_its_first_round_ends() {
    // no queue is known before the first judged round, and the first round of a flow
    // that takes YeAH on with a window in flight (TCP_CONGESTION on an established
    // connection) is the whole of that window: Scalable's increase throughout it, one
    // segment per 100 acked, not Reno's one per cwnd
    let c = Conn::bare("yeah:paper");
    c.start_in_ca(200); // 200 segments in flight
    c.init();
    c.ack_segments(99, 10, BASE);
    assert_eq!(c.cwnd(), 200, "not before 100 acked segments");
    c.ack_segments(1, 10, BASE);
    assert_eq!(c.cwnd(), 201, "fast mode: one segment per 100 acked");
}

#[test]
fn a_loss_before_any_measurement_cuts_an_eighth_rounded_down() {
    // §2: cwnd − max(cwnd/8, Q); before a round has been judged no queue is known
    // (Q = 0), so the cut is ⌊cwnd/8⌋: 2 of 16, and none of 7 (cwnd/8 < 1 segment)
    for (w, ss) in [(16u32, 14u32), (7, 7)] {
        let c = Conn::bare("yeah:paper");
        c.start_in_ca(w);
        c.init();
        c.enter_recovery();
        assert_eq!(c.ssthresh(), ss, "cwnd {w}");
    }
}

#[test]
fn rtt_base_is_the_smallest_sample_down_to_a_microsecond() {
    // §2: RTT_base is the smallest RTT seen. A 1 us sample is one (the smallest the
    // kernel's clock gives): the 20 ms rounds after it are then all queueing delay, Q =
    // 19.999 ms · 200 / 20 ms = 199 > Q_max, slow mode, and a precautionary decongestion
    // of min(Q, cwnd/2) = 100
    let c = flow(200);
    c.round_with(BASE, |i| if i == 3 { 1 } else { BASE });
    judged_round(&c, BASE, 200);
    assert_eq!((c.cwnd(), c.ssthresh()), (100, 100));
    // a 0 us sample (below the clock's resolution), read as no sample or as an RTT_base
    // of 0, never lets RTT_base rise to the samples after it: a round of 25 ms after it
    // is 5 ms of queue at the 20 ms base (> 20/8: slow mode), or more
    let c = flow(200);
    c.round_with(BASE + 5_000, |i| if i == 0 { 0 } else { BASE + 5_000 });
    judged_round(&c, BASE + 5_000, 200);
    assert!(!grows_fast(&c), "fast mode after a 0 us sample");
}
