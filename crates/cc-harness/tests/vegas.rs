//! cca_vegas (bpf/cc/vegas.bpf.c): the default variant against the rules of Linux 6.12's
//! tcp_vegas (also replayed call by call against it: tests/replay.rs), the paper variant
//! ("vegas:paper") against Brakmo & Peterson, "TCP Vegas", JSAC 1995.
use ccarena_cc_harness::*;

// ---- Linux's Vegas ------------------------------------------------------------------------

/// One of tcp_vegas's rounds: ACKs of one segment carrying `rtt` (negative: no sample)
/// until the first ACK beyond `edge` (after(ack, beg_snd_nxt)), where the round is
/// judged. Returns the next edge (snd_nxt as the judging ACK found it, before its own
/// transmission), the ACKs, and cwnd just before the judging ACK.
fn linux_round(c: &Conn, edge: u64, rtt: i32) -> (u64, u32, u32) {
    let mut n = 0;
    loop {
        let (nxt, w) = (c.get(Field::SndNxt), c.cwnd());
        advance_us(100);
        c.ack(Ack { segs: 1, rtt_us: rtt, ece: false, ce_segs: 0 });
        n += 1;
        if c.get(Field::SndUna) > edge {
            return (nxt, n, w);
        }
    }
}

/// A connection in congestion avoidance at `w`, BaseRTT 20 ms (+1 us) measured, its
/// first round (judged with one sample: Reno's step) behind it; returns it and the edge.
fn linux_in_ca(w: u32) -> (Conn, u64) {
    let c = Conn::new("vegas");
    let edge = c.get(Field::SndNxt);
    c.start_in_ca(w);
    let (edge, n, _) = linux_round(&c, edge, 20_000);
    assert_eq!((n, c.cwnd()), (1, w), "the first ACK is beyond init's snd_nxt");
    (c, edge)
}

#[test]
fn linux_vegas_judges_diff_normalised_by_base_rtt_against_two_and_four() {
    // diff = cwnd (RTT - BaseRTT) / BaseRTT, truncated; BaseRTT 20001 us, cwnd 100
    for (rtt, diff, step) in [(20_300, 1, 1i64), (20_500, 2, 0), (21_000, 4, 0), (21_100, 5, -1)] {
        let (c, edge) = linux_in_ca(100);
        assert_eq!(100 * (rtt + 1 - 20_001) / 20_001, diff);
        linux_round(&c, edge, rtt as i32);
        assert_eq!(c.cwnd() as i64 - 100, step, "RTT {rtt}: diff {diff}");
        // tcp_current_ssthresh after every judgement: at least 3/4 cwnd
        assert_eq!(c.ssthresh(), if step < 0 { 99 } else { 100 });
    }
    // the paper's Diff (normalised by RTT, alpha 1, beta 3) would hold at 21 100 us
    assert_eq!(100 * (21_101 - 20_001) / 21_101, 5);
}

#[test]
fn linux_vegas_raises_ssthresh_to_three_quarters_of_cwnd_at_a_judgement() {
    let (c, edge) = linux_in_ca(100);
    c.set_ssthresh(40);
    linux_round(&c, edge, 20_000);
    assert_eq!((c.cwnd(), c.ssthresh()), (101, 75), "diff 0: +1; max(40, 50 + 25)");
}

#[test]
fn linux_vegas_slow_start_grows_every_round() {
    // each ACK of a round adds one segment (the judging one too, diff 0): the window
    // doubles every round (the paper's grows every other round)
    let c = Conn::new("vegas");
    let mut edge = c.get(Field::SndNxt);
    c.transmit();
    for _ in 0..4 {
        let w = c.cwnd();
        let (e, n, _) = linux_round(&c, edge, 20_000);
        edge = e;
        assert_eq!(c.cwnd(), w + n, "one segment per ACK");
    }
    assert!(c.cwnd() >= 60, "{}", c.cwnd());
}

#[test]
fn linux_vegas_leaves_slow_start_when_diff_exceeds_one() {
    let c = Conn::new("vegas");
    let edge = c.get(Field::SndNxt);
    c.transmit();
    let (edge, _, _) = linux_round(&c, edge, 20_000);
    let (_, _, w) = linux_round(&c, edge, 30_000);
    // diff = w * 10000 / 20001 > 1: cwnd = min(w, w * 20001 / 30001 + 1), ssthresh too
    let want = w.min((w as u64 * 20_001 / 30_001) as u32 + 1);
    assert!(want < w);
    assert_eq!((c.cwnd(), c.ssthresh()), (want, want));
}

#[test]
fn linux_vegas_stays_in_slow_start_at_a_diff_of_one() {
    // gamma = 1: diff 1 keeps slow start (the judging ACK grows by one), diff 2 leaves it
    let probe = Conn::new("vegas");
    let edge = probe.get(Field::SndNxt);
    probe.transmit();
    let (edge, _, _) = linux_round(&probe, edge, 20_000);
    let (_, _, w) = linux_round(&probe, edge, 20_000);
    for (diff, leaves) in [(1u32, false), (2, true)] {
        // the smallest RTT sample (+1 us) with w (RTT - 20 001) / 20 001 = diff
        let rtt = (diff * 20_001).div_ceil(w) + 20_001 - 1;
        assert_eq!(w * (rtt + 1 - 20_001) / 20_001, diff);
        let c = Conn::new("vegas");
        let edge = c.get(Field::SndNxt);
        c.transmit();
        let (edge, _, _) = linux_round(&c, edge, 20_000);
        let (_, _, w2) = linux_round(&c, edge, rtt as i32);
        assert_eq!(w2, w);
        if leaves {
            assert_eq!(c.ssthresh(), c.cwnd(), "diff {diff}: slow start left");
        } else {
            assert_eq!((c.cwnd(), c.ssthresh()), (w + 1, INFINITE_SSTHRESH), "diff {diff}");
        }
    }
}

#[test]
fn linux_vegas_needs_three_samples_in_a_round() {
    // a round without RTT samples: Reno's step (the counter), not Vegas's +1
    let (c, edge) = linux_in_ca(100);
    let cnt = c.get(Field::CwndCnt);
    linux_round(&c, edge, -1);
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (100, cnt + 1));
}

#[test]
fn linux_vegas_forgets_base_rtt_when_transmission_starts_again() {
    for restart in [false, true] {
        let (c, edge) = linux_in_ca(100);
        let (edge, _, _) = linux_round(&c, edge, 20_000);
        let edge = if restart {
            c.cwnd_event(CA_EVENT_TX_START);
            c.get(Field::SndNxt)
        } else {
            edge
        };
        let w = c.cwnd();
        let (edge, _, _) = linux_round(&c, edge, 25_000);
        let w1 = c.cwnd();
        linux_round(&c, edge, 25_000);
        // forgotten: 25 ms is the new BaseRTT (diff 0, +1); kept: diff 24, -1
        if restart {
            assert_eq!(c.cwnd(), w1 + 1, "from {w}");
        } else {
            assert_eq!(c.cwnd(), w1 - 1, "from {w}");
        }
    }
}

#[test]
fn linux_vegas_is_reno_outside_open() {
    let (c, edge) = linux_in_ca(100);
    c.set_ca_state(DISORDER);
    linux_round(&c, edge, 21_100);
    // a window of ACKs: Reno's one segment, where Vegas in Open would take one off
    assert_eq!(c.cwnd(), 101, "no Vegas decrease in Disorder");
}

#[test]
fn linux_vegas_grows_while_the_application_limits_the_flow() {
    // tcp_vegas_cong_avoid checks tcp_is_cwnd_limited only on Reno's path: an application
    // keeping 10 segments in flight against a window of 40 still sees it grow, in slow
    // start per ACK and in congestion avoidance by one per judged round (RFC 7661 would
    // not); the paper variant does not
    for (algo, grows) in [("vegas", true), ("vegas:paper", false)] {
        for ssthresh in [1000u32, 40] {
            let c = Conn::new(algo);
            c.set_cwnd(40);
            c.set_ssthresh(ssthresh);
            c.set_app_unlimited(false);
            c.set(Field::IsCwndLimited, 0);
            c.set(Field::MaxPacketsOut, 10);
            for _ in 0..100 {
                c.set(Field::PacketsOut, 10);
                c.set(Field::SndNxt, c.get(Field::SndUna) + 10 * 1448);
                advance_us(2_000);
                c.ack(Ack::new(1, 20_000));
            }
            assert_eq!(c.cwnd() > 40, grows, "{algo}, ssthresh {ssthresh}: cwnd {}", c.cwnd());
        }
    }
}

// ---- the paper's Vegas (vegas:paper) --------------------------------------------------------

// ---- Vegas ------------------------------------------------------------------------------
fn vegas_step(rtt: u32) -> i64 {
    let c = Conn::new("vegas:paper");
    c.start_in_ca(100);
    c.round(20_000); // BaseRTT
    c.round(rtt);
    let w = c.cwnd() as i64;
    c.round(rtt);
    c.cwnd() as i64 - w
}

#[test]
fn vegas_keeps_diff_between_alpha_and_beta() {
    // Diff = cwnd (1 - BaseRTT/RTT) at cwnd 100, BaseRTT 20 ms
    assert_eq!(vegas_step(20_100), 1, "Diff 0.5 < alpha = 1: +1");
    assert_eq!(vegas_step(20_500), 0, "Diff 2.4 in [alpha, beta]: hold");
    assert_eq!(vegas_step(21_000), -1, "Diff 4.8 > beta = 3: -1");
}

#[test]
fn vegas_slow_start_grows_only_every_other_rtt() {
    // §3.3: "allow exponential growth only every other RTT. In between, the congestion
    // window stays fixed" (Linux's tcp_vegas grows every RTT instead; cca_vegas follows
    // the paper). A growing round doubles cwnd, but for the ACK that ends the round
    // (judged, not counted) and the segment that ACK releases (it belongs to the next
    // round): from w to between 2w - 2 and 2w.
    let c = Conn::new("vegas:paper");
    c.set_ssthresh(10_000);
    let mut w = c.cwnd();
    for k in 0..6 {
        c.round(20_000); // no queue: Diff = 0
        let n = c.cwnd();
        if k % 2 == 0 {
            assert!((2 * w - 2..=2 * w).contains(&n), "round {k}: growing round {w} -> {n}");
        } else {
            assert_eq!(n, w, "round {k}: the round between two growing ones holds cwnd");
        }
        w = n;
    }
}

/// A Vegas flow in slow start whose BaseRTT is `base` (a growing round), then a round
/// at cwnd `w` (the round between two growing ones, where cwnd stays fixed) whose every
/// RTT sample is `rtt`.
fn vegas_slow_start_round(base: u32, w: u32, rtt: u32) -> Conn {
    let c = Conn::new("vegas:paper");
    c.set_ssthresh(10_000);
    c.round(base);
    c.set_cwnd(w);
    c.round(rtt);
    c
}

#[test]
fn vegas_leaves_slow_start_when_diff_exceeds_gamma() {
    // §3.3: slow start ends when Diff = cwnd (1 - BaseRTT/RTT) exceeds gamma = 1 segment;
    // cwnd is then set to the Actual rate times BaseRTT, cwnd·BaseRTT/RTT, plus one
    // segment (the integer truncation would rob the path of its last segment: Linux's
    // tcp_vegas), and congestion avoidance begins (ssthresh = cwnd)
    let c = vegas_slow_start_round(19_000, 20, 20_100); // Diff = 20 * 1.1/20.1 = 1.09
    let fit = 20 * 19_000 / 20_100 + 1; // 18.9 -> 19
    assert_eq!((c.cwnd(), c.ssthresh()), (fit, fit), "Diff 1.09 > gamma: out of slow start");
    // from there the linear rules: Diff = 19 * 1.1/20.1 = 1.04 in [alpha, beta]: hold
    c.round(20_100);
    assert_eq!(c.cwnd(), fit, "congestion avoidance, Diff between alpha and beta: hold");

    // Diff = 20 * 1/20 = 1 exactly is not above gamma: slow start goes on, the next
    // round (without a queue) grows
    let c = vegas_slow_start_round(19_000, 20, 20_000);
    assert_eq!((c.cwnd(), c.ssthresh()), (20, 10_000), "Diff = gamma: still slow start");
    c.round(19_000);
    assert!(c.cwnd() >= 2 * 20 - 2, "the next round doubles: {}", c.cwnd());

    // a large Diff: cwnd falls to what the path carries, Actual * BaseRTT + 1
    let c = vegas_slow_start_round(19_000, 20, 38_000); // Diff = 10
    assert_eq!((c.cwnd(), c.ssthresh()), (11, 11));
}

// ---- Vegas, exact ------------------------------------------------------------------------
/// cwnd after a Vegas round (congestion avoidance, BaseRTT 20 ms) judged at cwnd `w`
/// whose every sample is `rtt` (`rtt_of` for each ACK)
fn vegas_judged(w: u32, rtt_of: impl FnMut(u32) -> u32) -> Conn {
    let c = Conn::new("vegas:paper");
    c.start_in_ca(100);
    c.round(20_000);
    c.round_then(20_000, rtt_of, |c| c.set_cwnd(w));
    c
}

#[test]
fn vegas_thresholds_are_exact() {
    // §3.2: Diff < alpha = 1: +1; Diff > beta = 3: -1; else hold. Diff = cwnd (RTT -
    // BaseRTT)/RTT: 1 exactly at cwnd 101 and RTT 20.2 ms, 3 exactly at cwnd 103 and
    // 20.6 ms (both hold); 3.5 at cwnd 100 and 20.7254 ms (-1)
    assert_eq!(vegas_judged(101, |_| 20_200).cwnd(), 101, "Diff = alpha: hold");
    assert_eq!(vegas_judged(103, |_| 20_600).cwnd(), 103, "Diff = beta: hold");
    let c = vegas_judged(100, |_| 20_726);
    assert_eq!(c.cwnd(), 99, "Diff 3.5 > beta: -1");
    // (Linux's tcp_vegas: a decrease also lowers ssthresh to the window)
    assert_eq!(c.ssthresh(), 99);
}

#[test]
fn vegas_judges_a_round_only_with_two_rtt_samples() {
    // bpf/cc/vegas.bpf.c (as Linux's tcp_vegas): with fewer than 2 samples in a round
    // Vegas cannot judge and does Reno's step for the ACK that ends the round instead.
    // Samples of 23 ms (Diff 13 > beta): two of them are a -1; one is not
    let rtt = |k: u32| move |i: u32| if i < k { 23_000 } else { u32::MAX }; // -1: none
    assert_eq!(vegas_judged(100, rtt(2)).cwnd(), 99, "two samples: judged");
    assert_eq!(vegas_judged(100, rtt(1)).cwnd(), 100, "one sample: not judged");
    assert_eq!(vegas_judged(100, rtt(0)).cwnd(), 100, "no samples: not judged");
    // Reno's step: the round's last ACK counts one acked segment towards the next
    // increase, here the one that completes it
    let c = Conn::new("vegas:paper");
    c.start_in_ca(100);
    c.round(20_000);
    let w = c.cwnd();
    c.round_then(20_000, |_| u32::MAX, |c| c.set(Field::CwndCnt, w as u64 - 1));
    assert_eq!(c.cwnd(), w + 1, "Reno's step completes a segment");
    // a judged round restarts that count (Vegas sets the window itself): a count left
    // one short before it does not complete a segment in a later sampleless round
    let c = Conn::new("vegas:paper");
    c.start_in_ca(100);
    c.round(20_000);
    let w0 = c.cwnd();
    c.set(Field::CwndCnt, w0 as u64);
    c.round(20_000); // judged: Diff 0, +1
    let w = c.cwnd();
    assert_eq!(w, w0 + 1);
    c.round_with(20_000, |_| u32::MAX);
    assert_eq!(c.cwnd(), w, "the count restarted at the judged round");
    // ... but not while the application limits the flow (RFC 7661)
    let c = Conn::new("vegas:paper");
    c.start_in_ca(100);
    c.round(20_000);
    let w = c.cwnd();
    c.round_then(20_000, |_| u32::MAX, |c| {
        c.set(Field::CwndCnt, w as u64 - 1);
        c.set_app_unlimited(false);
        c.set(Field::IsCwndLimited, 0);
    });
    assert_eq!(c.cwnd(), w, "no growth while application-limited");
}

#[test]
fn vegas_starts_a_new_round_after_an_idle_period() {
    // Linux's tcp_vegas: after an idle period the sender waits for a whole flight of new
    // data before judging; a round begun before the pause is not mixed with the one after
    // (here: 20 ms samples before it, 23 ms after: Diff 13 > beta, -1)
    // (CWND_RESTART, the restart of an idle window, likewise; another event, e.g. the
    // end of a CWR episode, does not start a round)
    for (ev, restart) in [(CA_EVENT_TX_START, true), (CA_EVENT_CWND_RESTART, true), (CA_EVENT_COMPLETE_CWR, false)] {
        let c = Conn::new("vegas:paper");
        c.start_in_ca(100);
        c.round(20_000);
        c.ack_segments(20, 200, 20_000);
        advance_us(5_000_000);
        c.cwnd_event(ev);
        let w = c.cwnd();
        c.set(Field::PacketsOut, 0);
        c.round(23_000);
        c.round(23_000);
        if restart {
            assert!(c.cwnd() < w, "event {ev}: the rounds after the pause judged on their own: {w} -> {}", c.cwnd());
        } else {
            assert!(c.cwnd() >= w, "event {ev}: the round goes on: {w} -> {}", c.cwnd());
        }
    }
}

#[test]
fn vegas_slow_start_exit_never_goes_below_two_segments() {
    // a window of 4 whose RTT rose tenfold: Actual * BaseRTT + 1 = 1.4 -> the floor of 2
    let c = vegas_slow_start_round(20_000, 4, 200_000);
    assert_eq!((c.cwnd(), c.ssthresh()), (2, 2));
}

#[test]
fn vegas_a_diff_just_above_beta_decreases() {
    // §3.2: Diff > beta = 3: -1. cwnd 100, BaseRTT 20 ms, RTT 20.632 ms: Diff = 100 ·
    // 632/20632 = 3.063; RTT 20.62 ms: Diff = 100 · 620/20620 = 3.007, just above 3
    assert_eq!(vegas_judged(100, |_| 20_632).cwnd(), 99);
    assert_eq!(vegas_judged(100, |_| 20_620).cwnd(), 99);
    // and just below alpha = 1: cwnd 100, RTT 20.2 ms: Diff = 100 · 200/20200 = 0.990
    assert_eq!(vegas_judged(100, |_| 20_200).cwnd(), 101);
}

#[test]
fn vegas_leaves_slow_start_at_a_diff_just_above_gamma() {
    // §3.3: slow start ends when Diff > gamma = 1. cwnd 30, BaseRTT 20 ms, RTT 20.7 ms:
    // Diff = 30 · 700/20700 = 1.014
    let c = vegas_slow_start_round(20_000, 30, 20_700);
    let fit = 30 * 20_000 / 20_700 + 1; // 28.98 -> 29
    assert_eq!((c.cwnd(), c.ssthresh()), (fit, fit));
}

#[test]
fn vegas_base_rtt_is_the_smallest_rtt_reading() {
    // §3.2: BaseRTT is the minimum of all measured RTTs, so a reading can only lower it.
    // A reading of 0 us (below the clock's resolution) in a round of 21 ms: judged
    // against 20 ms (or less): Diff >= 100 · 1000/21000 = 4.8 > beta: -1
    assert_eq!(vegas_judged(100, |i| if i == 0 { 0 } else { 21_000 }).cwnd(), 99);
    // a reading of 1 us (the clock's resolution) is the new BaseRTT: a later round of
    // 20 ms has Diff = cwnd · (20000 - 1)/20000, nearly the whole window: -1
    let c = Conn::new("vegas:paper");
    c.start_in_ca(100);
    c.round(20_000);
    c.round_with(20_000, |i| if i == 0 { 1 } else { 20_000 });
    let w = c.cwnd();
    c.round(20_000);
    assert_eq!(c.cwnd(), w - 1);
}

#[test]
fn vegas_a_judged_round_restarts_reno_s_count_at_zero() {
    // bpf/cc/vegas.bpf.c: a round Vegas cannot judge does Reno's step (RFC 5681: one
    // segment per cwnd acknowledged) for its last ACK; a judged round sets the window
    // itself and restarts that count. At cwnd 101 after a judged +1, sampleless rounds
    // count 1 each: the window grows at the 101st, not before
    let c = vegas_judged(100, |_| 20_000);
    assert_eq!(c.cwnd(), 101, "Diff 0 < alpha: +1");
    for k in 1..=100 {
        c.round_with(20_000, |_| u32::MAX);
        assert_eq!(c.cwnd(), 101, "sampleless round {k}");
    }
    c.round_with(20_000, |_| u32::MAX);
    assert_eq!(c.cwnd(), 102, "the 101st sampleless round completes a segment");
}
