//! cca_dctcp against RFC 8257 (bpf/cc/dctcp.bpf.c): per observation window (one RTT)
//! α ← (1 − g)α + g·F, g = 1/16, α₀ = 1 (§3.3); on ECE cwnd·(1 − α/2) (§3.4); a loss,
//! also by RTO, halves (§3.5).
use ccarena_cc_harness::*;

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
    let c = Conn::new("dctcp");
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
    assert_eq!(Conn::new("dctcp").ops_flags() & TCP_CONG_NEEDS_ECN, TCP_CONG_NEEDS_ECN);
}
