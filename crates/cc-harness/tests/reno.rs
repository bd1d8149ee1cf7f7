//! cca_reno against RFC 5681 (bpf/cc/reno.bpf.c).
use ccarena_cc_harness::*;

#[test]
fn slow_start_adds_one_segment_per_acked_segment_up_to_ssthresh() {
    // RFC 5681 §3.1: cwnd += min(N, SMSS) per ACK (here in segments) while cwnd < ssthresh
    let c = Conn::new("reno");
    c.set_ssthresh(35);
    assert_eq!(c.cwnd(), 10);
    c.round(20_000);
    assert_eq!(c.cwnd(), 20, "one RTT of slow start doubles cwnd");
    c.round(20_000);
    assert_eq!(c.cwnd(), 35, "slow start stops at ssthresh");
}

#[test]
fn congestion_avoidance_adds_one_segment_per_rtt() {
    // RFC 5681 §3.1 eq. (3): cwnd += SMSS*SMSS/cwnd per ACK, i.e. one segment per RTT
    let c = Conn::new("reno");
    c.start_in_ca(40);
    for k in 0..10 {
        c.ack_segments(40 + k - 1, 500, 20_000);
        assert_eq!(c.cwnd(), 40 + k, "not before cwnd acked segments");
        c.ack_segments(1, 500, 20_000);
        assert_eq!(c.cwnd(), 40 + k + 1, "+1 after cwnd acked segments");
    }
}

#[test]
fn no_growth_when_the_application_limits_the_flow() {
    // RFC 7661 §4.1 / RFC 5681: cwnd grows only while it limits the sender
    let c = Conn::new("reno");
    c.start_in_ca(40);
    c.set_app_unlimited(false);
    c.set(Field::IsCwndLimited, 0);
    c.set(Field::PacketsOut, 40);
    for _ in 0..40 {
        advance_us(500);
        c.ack(Ack::new(1, 20_000));
    }
    assert_eq!(c.cwnd(), 40);
}

#[test]
fn loss_halves_and_recovery_ends_at_ssthresh() {
    // RFC 5681 §3.2 eq. (4): ssthresh = max(FlightSize/2, 2 SMSS); cwnd = ssthresh on exit
    let c = Conn::new("reno");
    c.start_in_ca(61);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 30);
    assert_eq!(c.state(), RECOVERY);
    c.exit_reduction();
    assert_eq!(c.cwnd(), 30);
    let c = Conn::new("reno");
    c.start_in_ca(3);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 2, "never below 2 segments");
}

#[test]
fn prr_sends_ssthresh_over_prior_cwnd_of_what_is_delivered() {
    // RFC 6937 §3: while pipe > ssthresh, sndcnt = ceil(prr_delivered * ssthresh /
    // RecoverFS) - prr_out; cwnd = pipe + sndcnt
    let c = Conn::new("reno");
    c.start_in_ca(40);
    c.set(Field::PacketsOut, 40);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 20);
    // pipe = 40 - 1 = 39 on entry; the set_state step gives pipe + 1 (the retransmission)
    assert_eq!(c.cwnd(), 40);
    c.set_app_unlimited(false);
    let mut sent = 0u32;
    for k in 1..=10u32 {
        // an ACK SACKs one segment: pipe shrinks by one
        c.set(Field::SackedOut, k as u64);
        c.cong_control(0x20, 1, 0, 20_000);
        let pipe = 40 - (k + 1);
        let allowed = (k * 20).div_ceil(40) as i64 - sent as i64;
        assert_eq!(c.cwnd() as i64, pipe as i64 + allowed.max(if sent == 0 { 1 } else { 0 }), "ACK {k}");
        let out = c.cwnd().saturating_sub(pipe);
        sent += out;
        c.set(Field::PrrOut, sent as u64);
    }
}

#[test]
fn undo_restores_the_window_before_the_reduction() {
    // RFC 3522 / RFC 2883: a spurious reduction is undone to the prior window
    let c = Conn::new("reno");
    c.start_in_ca(50);
    c.enter_recovery();
    c.undo();
    assert_eq!(c.cwnd(), 50);
    assert_eq!(c.state(), OPEN);
}

#[test]
fn rto_halves_ssthresh_and_restarts_from_one_segment() {
    // RFC 5681 §3.1 eq. (4) and "LW = 1 segment" after a retransmission timeout
    let c = Conn::new("reno");
    c.start_in_ca(50);
    c.enter_loss();
    assert_eq!((c.ssthresh(), c.cwnd(), c.state()), (25, 1, LOSS));
}
