//! cca_dctcp (bpf/cc/dctcp.bpf.c): the default variant against the rules of Linux 6.12's
//! tcp_dctcp (also replayed call by call against it: tests/replay.rs), the paper variant
//! ("dctcp:paper") against RFC 8257: per observation window (one RTT)
//! α ← (1 − g)α + g·F, g = 1/16, α₀ = 1 (§3.3); on ECE cwnd·(1 − α/2) (§3.4); a loss,
//! also by RTO, halves (§3.5).
use ccarena_cc_harness::*;

// ---- Linux's DCTCP --------------------------------------------------------------------------

const MSS: u64 = 1448;

/// A connection that negotiated ECN (TCP_ECN_OK before init, as the kernel's handshake
/// leaves it)
fn linux_ecn() -> Conn {
    let c = Conn::bare("dctcp");
    c.set(Field::EcnFlags, 1);
    c.init();
    c
}

/// α in 1/1024, as the ssthresh op shows it at a window of 2048: 2048 − (2048·α >> 11)
fn linux_alpha(c: &Conn) -> u32 {
    let w = c.cwnd();
    c.set_cwnd(2048);
    let a = 2048 - c.op_ssthresh();
    c.set_cwnd(w);
    a
}

/// One observation window ends on this ACK: `delivered` segments delivered since the last
/// one ended, `ce` of them CE-marked; the next ends `next` segments later
fn linux_window(c: &Conn, delivered: u64, ce: u64, next: u64) {
    c.set(Field::Delivered, c.get(Field::Delivered) + delivered);
    c.set(Field::DeliveredCe, c.get(Field::DeliveredCe) + ce);
    c.set(Field::SndUna, c.get(Field::SndNxt));
    c.set(Field::SndNxt, c.get(Field::SndUna) + next * MSS);
    c.in_ack_event(CA_ACK_WIN_UPDATE);
}

#[test]
fn linux_dctcp_alpha_is_updated_in_1024ths_once_per_window() {
    let c = linux_ecn();
    assert_eq!(linux_alpha(&c), 1024, "dctcp_alpha_on_init");
    // the window that began at init ends on the first ACK (snd_una at its snd_nxt):
    // unmarked, 1024 − 1024 >> 4 = 960
    linux_window(&c, 0, 0, 100);
    assert_eq!(linux_alpha(&c), 960);
    // 25 of 100 marked: 960 − 60 + (25 << 6) / 100 = 916
    linux_window(&c, 100, 25, 100);
    assert_eq!(linux_alpha(&c), 916);
    // an ACK before the window's end changes nothing, whatever it counts
    c.set(Field::Delivered, c.get(Field::Delivered) + 50);
    c.set(Field::DeliveredCe, c.get(Field::DeliveredCe) + 75);
    c.set(Field::SndUna, c.get(Field::SndNxt) - MSS);
    c.in_ack_event(CA_ACK_WIN_UPDATE | CA_ACK_ECE);
    assert_eq!(linux_alpha(&c), 916);
    // its end counts all of it: 75 of 50 marked, 916 − 57 + (75 << 6) / 50 = 955
    linux_window(&c, 0, 0, 100);
    assert_eq!(linux_alpha(&c), 955);
    // at most 1024: 955 − 59 + (300 << 6) / 100 = 1088
    linux_window(&c, 100, 300, 100);
    assert_eq!(linux_alpha(&c), 1024);
    // a window of one segment, marked: 1024 − 64 + 64 / 1
    linux_window(&c, 1, 1, 100);
    assert_eq!(linux_alpha(&c), 1024);
    linux_window(&c, 1, 1, 100);
    assert_eq!(linux_alpha(&c), 1024);
    linux_window(&c, 0, 0, 100);
    linux_window(&c, 1, 1, 100);
    assert_eq!(linux_alpha(&c), 900 + 64, "(960 − 60) + 64");
}

#[test]
fn linux_dctcp_alpha_decays_to_exactly_zero() {
    // 74 unmarked windows take α from 1024 to 15, where α >> 4 is 0: the 75th takes all
    // of it, and the ssthresh op cuts nothing
    let c = linux_ecn();
    for _ in 0..74 {
        linux_window(&c, 100, 0, 100);
    }
    assert_eq!(linux_alpha(&c), 15);
    linux_window(&c, 100, 0, 100);
    assert_eq!(linux_alpha(&c), 0);
    c.set_cwnd(300);
    assert_eq!(c.op_ssthresh(), 300);
}

#[test]
fn linux_dctcp_cuts_by_alpha_over_two_in_32_bits_with_a_floor_of_two() {
    let c = linux_ecn(); // α = 1024: cwnd − cwnd/2 rounded down, so odd windows keep more
    for (w, want) in [(101u32, 51u32), (3, 2), (2, 2)] {
        c.set_cwnd(w);
        assert_eq!(c.op_ssthresh(), want, "cwnd {w}");
    }
    c.set_cwnd(1 << 22); // cwnd·α = 2^32 wraps to 0: no cut (the module's arithmetic)
    assert_eq!(c.op_ssthresh(), 1 << 22);
}

#[test]
fn linux_dctcp_entering_recovery_halves_the_window_of_that_moment() {
    // whatever α is (0 here): the ssthresh op asks for no cut, set_state halves
    let c = linux_ecn();
    for _ in 0..75 {
        linux_window(&c, 100, 0, 100);
    }
    c.start_in_ca(100);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 50);
    c.set_cwnd(30);
    assert_eq!(c.op_undo_cwnd(), 100, "undo: the window at the loss");
    // from CWR: the window PRR left (70 here), not the one at the ECN echo (100)
    let c = linux_ecn();
    c.start_in_ca(100);
    c.enter_cwr();
    assert_eq!(c.ssthresh(), 50, "α = 1");
    c.set_cwnd(70);
    c.set_ca_state(RECOVERY);
    assert_eq!(c.ssthresh(), 35);
    c.set_cwnd(30);
    assert_eq!(c.op_undo_cwnd(), 70, "undo: the window of the last reduction");
    // at least 2, also from a window of 1
    let c = linux_ecn();
    c.set_cwnd(1);
    c.set_ca_state(RECOVERY);
    assert_eq!(c.ssthresh(), 2);
}

#[test]
fn linux_dctcp_halves_at_a_time_out_and_keeps_alpha() {
    let c = linux_ecn();
    for _ in 0..75 {
        linux_window(&c, 100, 0, 100);
    }
    c.start_in_ca(100);
    c.enter_loss(); // the op (no cut at α = 0), then CA_EVENT_LOSS halves
    assert_eq!(c.ssthresh(), 50);
    c.exit_reduction();
    assert_eq!(linux_alpha(&c), 0, "α is not reset by a time-out");
}

#[test]
fn linux_dctcp_without_ecn_is_reno() {
    // init without TCP_ECN_OK: the module's dctcp-reno (halving, undo to the window
    // before the reduction, no α)
    let c = Conn::new("dctcp");
    c.start_in_ca(101);
    assert_eq!(c.op_ssthresh(), 50);
    for _ in 0..100 {
        linux_window(&c, 100, 0, 100);
    }
    c.set_cwnd(2048);
    assert_eq!(c.op_ssthresh(), 1024);
    c.set_cwnd(101);
    c.enter_cwr();
    c.set_cwnd(30);
    assert_eq!(c.op_undo_cwnd(), 101);
    c.cwnd_event(CA_EVENT_ECN_IS_CE);
    assert_eq!(c.get(Field::EcnFlags) & TCP_ECN_DEMAND_CWR, 0, "no receiver rule");
}

#[test]
fn linux_dctcp_grows_as_reno() {
    let c = linux_ecn();
    c.start_in_ca(40);
    for k in 1..=3 {
        c.ack_segments(40 + k - 1, 10, 1_000);
        assert_eq!(c.cwnd(), 40 + k);
    }
}

/// One data segment arriving at the receiver (see `receive` below)
fn linux_receive(c: &Conn, ce: bool, timer: bool) {
    c.set(Field::AckPending, if timer { ICSK_ACK_TIMER } else { 0 });
    c.set(Field::RcvNxt, c.get(Field::RcvNxt) + MSS);
    c.cwnd_event(if ce { CA_EVENT_ECN_IS_CE } else { CA_EVENT_ECN_NO_CE });
}

#[test]
fn linux_dctcp_receiver_sends_the_delayed_ack_with_the_old_ece() {
    // the delayed ACK for the data before a change carries the ECE of that data, whatever
    // the socket's ECN flags became meanwhile (a CWR from the sender clears the demand)
    let c = linux_ecn();
    let calls = send_ack_calls();
    linux_receive(&c, true, false);
    c.set(Field::EcnFlags, c.get(Field::EcnFlags) & !TCP_ECN_DEMAND_CWR); // CWR received
    linux_receive(&c, true, true);
    assert_ne!(c.get(Field::EcnFlags) & TCP_ECN_DEMAND_CWR, 0, "CE again: ECE");
    c.set(Field::EcnFlags, c.get(Field::EcnFlags) & !TCP_ECN_DEMAND_CWR);
    let before = c.get(Field::RcvNxt) as u32;
    linux_receive(&c, false, true);
    assert_eq!(send_ack_calls(), calls + 1);
    assert_eq!(send_ack_rcv_nxt(), before);
    assert!(send_ack_ece(), "the delayed ACK of CE-marked data carries ECE");
    assert_ne!(c.get(Field::AckPending) & ICSK_ACK_NOW, 0, "the change is ACKed at once");
    assert_eq!(c.get(Field::EcnFlags) & TCP_ECN_DEMAND_CWR, 0);
    // and the other way: unmarked data's delayed ACK goes out without ECE
    linux_receive(&c, true, true);
    assert_eq!(send_ack_calls(), calls + 2);
    assert!(!send_ack_ece());
    assert_ne!(c.get(Field::EcnFlags) & TCP_ECN_DEMAND_CWR, 0);
}

#[test]
fn linux_dctcp_receiver_starts_unmarked_at_the_rcv_nxt_of_init() {
    // the CE state starts at "not marked" and the data before a change at rcv_nxt as init
    // found it: a first segment with CE, while an ACK is delayed, sends that ACK at once
    // for the data received before init, without ECE
    let c = linux_ecn();
    let r0 = c.get(Field::RcvNxt) as u32;
    let calls = send_ack_calls();
    linux_receive(&c, true, true);
    assert_eq!(send_ack_calls(), calls + 1);
    assert_eq!(send_ack_rcv_nxt(), r0);
    assert!(!send_ack_ece());
}

// ---- RFC 8257's DCTCP (dctcp:paper) ---------------------------------------------------------

const RTT: u32 = 1_000;

/// `n` windows in which every `k`-th acked segment was CE-marked (k = 0: none), at
/// cwnd `w`; then α as an ECE-triggered reduction shows it: 2 (1 − ssthresh/cwnd)
fn alpha_after(w: u32, n: u32, k: u32) -> f64 {
    let c = run(w, n, k);
    c.in_ack_event(CA_ACK_WIN_UPDATE | CA_ACK_ECE);
    let w = c.cwnd();
    c.enter_cwr();
    2.0 * (1.0 - c.ssthresh() as f64 / w as f64)
}

fn run(w: u32, n: u32, k: u32) -> Conn {
    let c = Conn::new("dctcp:paper");
    c.start_in_ca(w);
    let mut i = 0u32;
    for _ in 0..n {
        c.set_cwnd(w); // hold the window: only alpha is under test
        c.transmit();
        let una = c.get(Field::SndUna);
        let target = c.get(Field::SndNxt);
        let mut seg = 0;
        while c.get(Field::SndUna) < target || seg == 0 {
            let _ = una;
            i += 1;
            seg += 1;
            let ce = k != 0 && i % k == 0;
            advance_us(RTT as u64 / w as u64 + 1);
            c.ack(Ack { segs: 1, rtt_us: RTT as i32, ece: ce, ce_segs: ce as u32 });
            c.set_cwnd(w);
        }
    }
    c
}

#[test]
fn alpha_follows_the_ewma_with_gain_one_sixteenth() {
    // F = 1/4: alpha_n = F + (1 - F)(15/16)^n, from alpha_0 = 1
    let f = 0.25;
    for n in [4u32, 16, 40, 120] {
        let want = f + (1.0 - f) * (15.0f64 / 16.0).powi(n as i32);
        let got = alpha_after(2000, n, 4);
        // the connection's first observation window ends at its first ACK (it began
        // before anything was sent), and the test's windows need not align with the
        // algorithm's: n to n + 2 updates
        let lo = f + (1.0 - f) * (15.0f64 / 16.0).powi(n as i32 + 2);
        let hi = f + (1.0 - f) * (15.0f64 / 16.0).powi(n as i32);
        assert!(got >= lo - 0.003 && got <= hi + 0.003, "n {n}: alpha {got:.4}, want {want:.4}");
    }
}

#[test]
fn alpha_converges_to_the_marked_fraction() {
    for k in [2u32, 5, 20] {
        let got = alpha_after(2000, 200, k);
        let f = 1.0 / k as f64;
        assert!((got - f).abs() <= 0.003 + 0.02 * f, "F {f}: alpha {got:.4}");
    }
}

#[test]
fn alpha_decays_to_zero_without_marks() {
    let got = alpha_after(2000, 300, 0);
    assert!(got < 0.002, "alpha {got:.4} after 300 unmarked windows");
}

#[test]
fn an_ece_reduction_cuts_alpha_over_two() {
    // alpha ~ F = 0.5 after many windows: ssthresh = cwnd (1 - 0.25)
    let got = alpha_after(1000, 200, 2);
    assert!((got - 0.5).abs() < 0.01);
}

#[test]
fn a_timeout_after_an_ece_ack_halves() {
    let c = run(400, 200, 20); // alpha ~ 0.05
    c.in_ack_event(CA_ACK_WIN_UPDATE | CA_ACK_ECE); // the last ACK carried ECE
    let w = c.cwnd();
    advance_us(300_000);
    c.enter_loss();
    assert_eq!(c.ssthresh(), w / 2, "RFC 8257 §3.5: an RTO halves");
}

#[test]
fn a_loss_revealed_by_an_ece_ack_halves() {
    let c = run(400, 200, 20);
    c.in_ack_event(CA_ACK_WIN_UPDATE | CA_ACK_ECE);
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w / 2);
}

#[test]
fn a_loss_during_an_ece_reduction_halves() {
    let c = run(400, 200, 20);
    c.in_ack_event(CA_ACK_WIN_UPDATE | CA_ACK_ECE);
    let w = c.cwnd();
    c.enter_cwr();
    assert!(c.ssthresh() > w * 9 / 10);
    c.set_ca_state(RECOVERY); // the kernel does not ask ssthresh again from CWR
    assert_eq!(c.ssthresh(), w / 2);
}

#[test]
fn needs_ecn() {
    assert_eq!(Conn::new("dctcp:paper").ops_flags() & TCP_CONG_NEEDS_ECN, TCP_CONG_NEEDS_ECN);
}

/// One data segment arriving at the receiver, CE-marked or not: the kernel queues it
/// (rcv_nxt passes it), then raises the CE event (tcp_data_queue -> tcp_event_data_recv
/// -> tcp_ecn_check_ce). `timer`: a delayed ACK is pending when it arrives.
fn receive(c: &Conn, ce: bool, timer: bool) {
    c.set(Field::AckPending, if timer { ICSK_ACK_TIMER } else { 0 });
    c.set(Field::RcvNxt, c.get(Field::RcvNxt) + 1448);
    c.cwnd_event(if ce { CA_EVENT_ECN_IS_CE } else { CA_EVENT_ECN_NO_CE });
}

#[test]
fn the_receiver_echoes_ce_exactly_and_acks_at_once_when_it_flips() {
    // RFC 8257 §3.2: ECE mirrors the CE codepoint of the data; when it changes while an
    // ACK is delayed, the ACK for the data before the change goes out at once (with the
    // ECE those segments deserve), so the sender can count marks per segment
    let c = Conn::new("dctcp:paper");
    let r0 = c.get(Field::RcvNxt) as u32;
    let echo = |c: &Conn| c.get(Field::EcnFlags) & TCP_ECN_DEMAND_CWR != 0;
    let calls = send_ack_calls();
    receive(&c, false, false);
    assert_eq!(c.get(Field::AckPending), 0, "no change: no ACK now");
    receive(&c, false, true);
    assert_eq!((send_ack_calls(), c.get(Field::AckPending), echo(&c)), (calls, ICSK_ACK_TIMER, false));
    let before = c.get(Field::RcvNxt) as u32;
    receive(&c, true, true); // CE now: the delayed ACK for the data up to here, at once
    assert_eq!(send_ack_calls(), calls + 1);
    assert_eq!(send_ack_rcv_nxt(), before, "it acknowledges the data before the change");
    assert_ne!(c.get(Field::AckPending) & ICSK_ACK_NOW, 0, "and this segment is ACKed at once");
    assert!(echo(&c), "ECE echoed from the CE segment on");
    receive(&c, true, true); // still CE: nothing special
    assert_eq!((send_ack_calls(), c.get(Field::AckPending), echo(&c)), (calls + 1, ICSK_ACK_TIMER, true));
    receive(&c, false, false); // back to no CE, no ACK delayed: nothing to send early
    assert_eq!(send_ack_calls(), calls + 1);
    assert_ne!(c.get(Field::AckPending) & ICSK_ACK_NOW, 0);
    assert!(!echo(&c), "no ECE for an unmarked segment");
    // a change at the very first segment acknowledges what the connection had received
    let c = Conn::new("dctcp:paper");
    receive(&c, true, true);
    assert_eq!((send_ack_calls(), send_ack_rcv_nxt()), (calls + 2, r0));
}

#[test]
fn growth_is_reno_s() {
    // RFC 8257 §3.4: apart from the ECE reaction, RFC 5681's increase
    let c = Conn::new("dctcp:paper");
    c.start_in_ca(40);
    for k in 1..=3 {
        c.ack_segments(40 + k - 1, 10, RTT);
        assert_eq!(c.cwnd(), 40 + k);
    }
}

#[test]
fn a_reduction_without_an_ecn_echo_halves() {
    // bpf/cc/dctcp.bpf.c: the alpha cut answers ECE only; a reduction the sender makes
    // for another reason (tcp_enter_cwr on local congestion, the qdisc refusing a
    // segment) halves like a loss (RFC 8257 §3.5's standard response). alpha ~ 0.05 here
    let c = run(400, 200, 20);
    let w = c.cwnd();
    c.enter_cwr();
    assert_eq!(c.ssthresh(), w / 2);
    // also before the connection's first ACK (no ECE seen yet)
    let c = Conn::new("dctcp:paper");
    c.start_in_ca(41);
    c.enter_cwr();
    assert_eq!(c.ssthresh(), 20);
}

#[test]
fn an_ece_cut_never_goes_below_two_segments() {
    // RFC 5681's floor for ssthresh, 2 segments: right after an RTO α is 1, and an ECE at
    // a window of 2 would cut it to 1
    let c = run(400, 20, 2);
    c.enter_loss();
    c.exit_reduction();
    c.set_cwnd(2);
    c.in_ack_event(CA_ACK_WIN_UPDATE | CA_ACK_ECE);
    c.enter_cwr();
    assert_eq!(c.ssthresh(), 2);
}

/// α·2^20 as an ECE cut of a window of 2048 shows it: cut = 2048·α/2 = α·2^20 >> 10
fn alpha_cut_2048(c: &Conn) -> u32 {
    c.in_ack_event(CA_ACK_WIN_UPDATE | CA_ACK_ECE);
    c.set_cwnd(2048);
    c.enter_cwr();
    2048 - c.ssthresh()
}

#[test]
fn alpha_survives_a_recovery_and_restarts_at_one_after_a_time_out() {
    // α is the estimate of the path's marking; a loss recovery does not change it; after an
    // RTO α restarts at 1 and its observation window at the RTO (bpf/cc/dctcp.bpf.c): one
    // unmarked window later α = 15/16 exactly, whatever was marked before
    let c = run(400, 200, 2); // alpha ~ 1/2
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(400);
    let cut = alpha_cut_2048(&c);
    assert!((500..=530).contains(&cut), "alpha {}/1024 after a recovery", cut);
    let c = run(400, 200, 2);
    for _ in 0..50 {
        // half of this window's segments marked, then the time-out
        advance_us(10);
        c.ack(Ack { segs: 1, rtt_us: RTT as i32, ece: true, ce_segs: 1 });
        advance_us(10);
        c.ack(Ack::new(1, RTT));
    }
    c.enter_loss();
    c.exit_reduction();
    c.start_in_ca(400); // everything outstanding at the RTO, unmarked, then acknowledged:
    c.round(RTT); // one observation window
    assert_eq!(alpha_cut_2048(&c), 960, "alpha 15/16 = 960/1024");
}

#[test]
fn alpha_decays_until_a_large_window_is_not_cut() {
    // §3.3 without marks: α_n = (15/16)^n, about 4·10⁻⁹ after 300 windows; the ECE cut of
    // §3.4, floor(cwnd·α/2), is then 0 segments even at 131072 segments (100 Gb/s over
    // 15 ms): the estimate must keep enough resolution to decay that far (dctcp.bpf.c
    // keeps α in 1/2^20, whose truncation leaves at most 15/2^20 = a cut of 0.94 here)
    let c = run(2000, 300, 0);
    c.in_ack_event(CA_ACK_WIN_UPDATE | CA_ACK_ECE);
    let w = 1u32 << 17;
    c.set_cwnd(w);
    c.enter_cwr();
    let alpha = (15.0f64 / 16.0).powi(300);
    let want = w - (w as f64 * alpha / 2.0).floor() as u32;
    assert_eq!(want, w, "the formula's cut is below one segment");
    assert_eq!(c.ssthresh(), want);
}

#[test]
fn a_window_s_marked_fraction_is_at_most_one() {
    // §3.3: M is the fraction of the window's acknowledged segments that were marked, so
    // 0 <= M <= 1, even when the CE count of a window exceeds its deliveries (an AccECN
    // receiver counts CE on every segment that arrives, the duplicates of a spurious
    // retransmission too: draft-ietf-tcpm-accurate-ecn §3.2). Here α0 = 1; the first
    // window ends at the connection's first ACK, unmarked: α1 = 15/16; the second is
    // the rest of what was sent before that ACK, acknowledged at once with twice as many CE counts as
    // segments: M = 1, α2 = (15/16)² + 1/16 = 241/256, an ECE cut of 2048 by 964 (with
    // M = 2, α would be clamped at 1: 1024)
    let c = Conn::new("dctcp:paper");
    c.start_in_ca(400);
    let window_end = c.get(Field::SndNxt); // the second window: what is out before the first ACK
    c.ack(Ack::new(1, RTT));
    let rest = ((window_end.wrapping_sub(c.get(Field::SndUna)) & 0xffff_ffff) / c.mss() as u64) as u32;
    assert_eq!(rest, 399);
    advance_us(RTT as u64);
    c.ack(Ack { segs: rest, rtt_us: RTT as i32, ece: false, ce_segs: 2 * rest });
    assert_eq!(alpha_cut_2048(&c), (1024 * 241) / 256);
}
