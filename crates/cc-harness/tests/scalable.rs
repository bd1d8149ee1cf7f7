//! cca_scalable against Kelly, "Scalable TCP", CCR 2003 (bpf/cc/scalable.bpf.c).
use ccarena_cc_harness::*;

// ---- Scalable ---------------------------------------------------------------------------
#[test]
fn scalable_adds_one_segment_per_hundred_acked_and_cuts_an_eighth() {
    let c = Conn::new("scalable");
    c.start_in_ca(500);
    c.ack_segments(1000, 100, 50_000);
    assert_eq!(c.cwnd(), 510, "a = 0.01 per ACK");
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w - (w + 7) / 8, "b = 0.125");
    let c = Conn::new("scalable");
    c.start_in_ca(16);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 8, "legacy window: halving");
}

// ---- Scalable, exact ---------------------------------------------------------------------
#[test]
fn scalable_grows_one_segment_per_hundred_acked_and_cuts_an_eighth_rounded_up() {
    // Kelly 2003: a = 0.01 per ACK (one segment per 100 acked above cwnd 100), b = 0.125
    // of the window (rounded up: the cut is at least an eighth); at or below the legacy
    // window of 16, standard TCP (RFC 5681's floor(w/2))
    let c = Conn::new("scalable");
    c.start_in_ca(500);
    c.ack_segments(99, 100, 50_000);
    assert_eq!(c.cwnd(), 500, "not before 100 acked");
    c.ack_segments(1, 100, 50_000);
    assert_eq!(c.cwnd(), 501);
    for w in [16u32, 17, 23, 24, 25, 31, 32, 1000] {
        let c = Conn::new("scalable");
        c.start_in_ca(w);
        c.enter_recovery();
        let want = if w <= 16 { w / 2 } else { w - w.div_ceil(8) };
        assert_eq!(c.ssthresh(), want, "w {w}");
    }
}
