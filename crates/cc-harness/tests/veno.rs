//! cca_veno (bpf/cc/veno.bpf.c): the default variant against the rules of Linux 6.12's
//! tcp_veno (also replayed call by call against it: tests/replay.rs), the paper variant
//! ("veno:paper") against Fu & Liew, "TCP Veno", JSAC 2003.
use ccarena_cc_harness::*;

// ---- Linux's Veno -------------------------------------------------------------------------

fn ack(c: &Conn, rtt: i32) {
    c.transmit();
    advance_us(100);
    c.ack(Ack { segs: 1, rtt_us: rtt, ece: false, ce_segs: 0 });
}

/// congestion avoidance at `w` with BaseRTT 20 ms (+1 us) and more than 2 samples
fn linux_in_ca(w: u32) -> Conn {
    let c = Conn::new("veno");
    c.start_in_ca(w);
    for _ in 0..3 {
        ack(&c, 20_000);
        c.set_cwnd(w);
    }
    c.set(Field::CwndCnt, 0);
    c
}

#[test]
fn linux_veno_cuts_by_the_backlog_of_the_latest_ack() {
    // N = cwnd - cwnd BaseRTT / RTT from the last ACK's own sample: 20 ms, N 0: 4/5;
    // 40 ms, N = 50 segments (diff 100 half segments): halving; 20 ms again: 4/5
    for (rtts, want) in [(vec![20_000], 80u32), (vec![20_000, 40_000], 50), (vec![40_000, 20_000], 80)] {
        let c = linux_in_ca(100);
        for r in rtts.iter() {
            ack(&c, *r);
            c.set_cwnd(100);
        }
        c.enter_recovery();
        assert_eq!(c.ssthresh(), want, "{rtts:?}");
    }
}

#[test]
fn linux_veno_backlog_boundary_is_three_segments_in_halves() {
    // diff = 2 cwnd - (2 cwnd BaseRTT / RTT truncated): cwnd 100, BaseRTT 20001;
    // RTT 20 601: 200 - 194.17 -> 200 - 194 = 6 (halving); RTT 20 501: 200 - 195 = 5 (4/5)
    for (rtt, want) in [(20_600, 50u32), (20_500, 80)] {
        let c = linux_in_ca(100);
        ack(&c, rtt);
        c.set_cwnd(100);
        c.enter_recovery();
        assert_eq!(c.ssthresh(), want, "RTT {rtt}");
    }
}

#[test]
fn linux_veno_is_reno_until_three_samples() {
    // two samples: Reno's counter; the third: Veno (N >= beta: counting without growth)
    let c = Conn::new("veno");
    c.start_in_ca(10);
    ack(&c, 20_000);
    ack(&c, 40_000);
    assert_eq!(c.get(Field::CwndCnt), 2);
    c.set(Field::CwndCnt, 10);
    ack(&c, 40_000);
    assert_eq!(c.cwnd(), 11, "a full count with inc set: one segment");
}

#[test]
fn linux_veno_grows_one_segment_per_two_windows_when_congested() {
    let c = linux_in_ca(100);
    let mut n = 0;
    let mut grew = vec![];
    while grew.len() < 3 {
        let w = c.cwnd();
        ack(&c, 40_000);
        n += 1;
        if c.cwnd() > w {
            grew.push(n);
        }
    }
    // cnt reaches 100 after 100 ACKs, the 101st adds one; at 101: 102 ACKs only restart
    // the count, 102 more add one; at 102: 103 + 103 more
    assert_eq!(grew, vec![101, 101 + 102 + 102, 101 + 204 + 103 + 103]);
}

#[test]
fn linux_veno_is_reno_outside_open_and_keeps_its_backlog() {
    let c = linux_in_ca(100);
    ack(&c, 40_000);
    c.set_cwnd(100);
    c.set_ca_state(DISORDER);
    for _ in 0..99 {
        ack(&c, 20_000);
    }
    assert_eq!(c.cwnd(), 101, "Reno's one segment per window");
    c.set_cwnd(100);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 50, "the backlog of the last ACK in Open");
}

// ---- the paper's Veno (veno:paper) ----------------------------------------------------------

// ---- Veno -------------------------------------------------------------------------------
fn veno_loss_at(rtt: u32) -> (u32, u32) {
    let c = Conn::new("veno:paper");
    c.start_in_ca(100);
    c.round(20_000);
    c.round(rtt);
    c.round(rtt);
    let w = c.cwnd();
    c.enter_recovery();
    (w, c.ssthresh())
}

#[test]
fn veno_tells_random_from_congestive_loss_by_the_backlog() {
    // N = cwnd (RTT - BaseRTT)/RTT, beta = 3
    let (w, ss) = veno_loss_at(20_500); // N = 2.4
    assert_eq!(ss, w * 4 / 5, "random loss: 4/5");
    let (w, ss) = veno_loss_at(21_000); // N = 4.8
    assert_eq!(ss, w / 2, "congestive loss: 1/2");
}

#[test]
fn veno_judges_the_backlog_in_open_rounds_only() {
    // §II: N is the backlog of the flow's window in congestion avoidance. During a
    // recovery the sender sends little and the queue drains (RTT samples near BaseRTT):
    // that round says nothing about the next loss, which comes when the window has
    // refilled the queue; a loss right after the recovery is congestive
    let c = Conn::new("veno:paper");
    c.start_in_ca(100);
    c.round(20_000);
    c.round(30_000); // N = 100 * 10/30 = 33: congestive
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 50);
    c.round(20_000); // a round in Recovery with the queue drained
    c.exit_reduction();
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w / 2, "a loss right after the recovery: congestive, 1/2");
}

#[test]
fn veno_grows_every_other_rtt_when_the_link_is_full() {
    let grow = |rtt: u32| {
        let c = Conn::new("veno:paper");
        c.start_in_ca(100);
        c.round(20_000);
        c.round(rtt);
        let w = c.cwnd();
        for _ in 0..8 {
            c.round(rtt);
        }
        c.cwnd() - w
    };
    assert!((7..=9).contains(&grow(20_200)), "N < beta: +1 per RTT");
    assert!((3..=5).contains(&grow(21_000)), "N >= beta: +1 per 2 RTTs");
}

// ---- Veno, exact -------------------------------------------------------------------------
/// ssthresh at a loss after a round judged at cwnd `w` with samples `rtt_of(i)` (BaseRTT
/// 20 ms); and the window at the loss
fn veno_loss_after(w: u32, rtt_of: impl FnMut(u32) -> u32) -> (u32, u32) {
    let c = Conn::new("veno:paper");
    c.start_in_ca(100);
    c.round(20_000);
    c.round_then(20_000, rtt_of, |c| c.set_cwnd(w));
    let w = c.cwnd();
    c.enter_recovery();
    (w, c.ssthresh())
}

#[test]
fn veno_s_beta_boundary_is_exact() {
    // §II-B: N >= beta = 3 segments is congestive (1/2), below random (4/5). N = cwnd (RTT
    // - BaseRTT)/RTT = 3 exactly at cwnd 103 and 20.6 ms; 3.5 at cwnd 100 and 20.7254 ms
    let (w, ss) = veno_loss_after(103, |_| 20_600);
    assert_eq!(ss, w / 2, "N = 3: congestive");
    let (w, ss) = veno_loss_after(100, |_| 20_726);
    assert_eq!(ss, w / 2, "N = 3.5: congestive");
    let (w, ss) = veno_loss_after(100, |_| 20_500);
    assert_eq!(ss, w * 4 / 5, "N = 2.4: random");
}

#[test]
fn veno_takes_the_backlog_from_the_round_s_smallest_rtt() {
    // §II-A, Vegas' estimate once per round from its minimum RTT: one early ACK at
    // BaseRTT in a round of 21 ms samples says there is no queue (N = 0: random loss)
    let (w, ss) = veno_loss_after(100, |i| if i == 3 { 20_000 } else { 21_000 });
    assert_eq!(ss, w * 4 / 5);
    // and a round without RTT samples keeps the last round's verdict (random here)
    let c = Conn::new("veno:paper");
    c.start_in_ca(100);
    c.round(20_000);
    c.round(20_500); // N = 2.4
    c.round_with(20_000, |_| u32::MAX);
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w * 4 / 5);
}

#[test]
fn veno_treats_a_loss_before_any_backlog_measurement_as_random() {
    // N is unknown (0) before the first judged round: N < beta
    let c = Conn::new("veno:paper");
    c.start_in_ca(100);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 80);
}

#[test]
fn veno_s_base_rtt_is_the_smallest_rtt_reading() {
    // §II-A: BaseRTT is the minimum of all measured RTTs, so a reading can only lower it.
    // A reading of 0 us (below the clock's resolution) in a round of 21 ms: N is judged
    // against 20 ms (or less): N >= 100 · 1000/21000 = 4.8 >= beta: congestive, 1/2
    let (w, ss) = veno_loss_after(100, |i| if i == 0 { 0 } else { 21_000 });
    assert_eq!(ss, w / 2);
    // a reading of 1 us (the clock's resolution) is the new BaseRTT: a later round of
    // 20 ms has N = cwnd · (20000 - 1)/20000, nearly the whole window: congestive
    let c = Conn::new("veno:paper");
    c.start_in_ca(100);
    c.round(20_000);
    c.round_with(20_000, |i| if i == 0 { 1 } else { 20_000 });
    c.round(20_000);
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w / 2);
}
