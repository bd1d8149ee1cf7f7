//! cca_scalable (bpf/cc/scalable.bpf.c): the default variant against Linux 6.12's
//! tcp_scalable (also replayed call by call against it: tests/replay.rs), the paper
//! variant ("scalable:paper") against Kelly, "Scalable TCP", CCR 2003.
use ccarena_cc_harness::*;

#[test]
fn linux_scalable_cuts_whole_eighths_at_every_window_and_none_below_eight() {
    // (a window of 1, after a time-out, is floored at 2)
    for (w, want) in [(1u32, 2u32), (2, 2), (3, 3), (7, 7), (8, 7), (15, 14), (16, 14), (17, 15), (100, 88)] {
        let c = Conn::new("scalable");
        c.start_in_ca(w);
        c.enter_recovery();
        assert_eq!(c.ssthresh(), want, "cwnd {w}: max(cwnd - floor(cwnd/8), 2)");
    }
    // the paper's: halving up to the legacy window, ceil(cwnd/8) above
    for (w, want) in [(16u32, 8u32), (100, 87)] {
        let c = Conn::new("scalable:paper");
        c.start_in_ca(w);
        c.enter_recovery();
        assert_eq!(c.ssthresh(), want, "paper, cwnd {w}");
    }
}

#[test]
fn linux_scalable_adds_one_segment_per_min_cwnd_100_acked() {
    for (w, per) in [(50u32, 50u32), (99, 99), (500, 100)] {
        let c = Conn::new("scalable");
        c.start_in_ca(w);
        c.ack_segments(per - 1, 100, 50_000);
        assert_eq!(c.cwnd(), w, "cwnd {w}: not before {per} acked");
        c.ack_segments(1, 100, 50_000);
        assert_eq!(c.cwnd(), w + 1, "cwnd {w}: one per {per}");
    }
}

// ---- Scalable ---------------------------------------------------------------------------
#[test]
fn scalable_adds_one_segment_per_hundred_acked_and_cuts_an_eighth() {
    let c = Conn::new("scalable:paper");
    c.start_in_ca(500);
    c.ack_segments(1000, 100, 50_000);
    assert_eq!(c.cwnd(), 510, "a = 0.01 per ACK");
    let w = c.cwnd();
    c.enter_recovery();
    assert_eq!(c.ssthresh(), w - (w + 7) / 8, "b = 0.125");
    let c = Conn::new("scalable:paper");
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
    let c = Conn::new("scalable:paper");
    c.start_in_ca(500);
    c.ack_segments(99, 100, 50_000);
    assert_eq!(c.cwnd(), 500, "not before 100 acked");
    c.ack_segments(1, 100, 50_000);
    assert_eq!(c.cwnd(), 501);
    for w in [16u32, 17, 23, 24, 25, 31, 32, 1000] {
        let c = Conn::new("scalable:paper");
        c.start_in_ca(w);
        c.enter_recovery();
        let want = if w <= 16 { w / 2 } else { w - w.div_ceil(8) };
        assert_eq!(c.ssthresh(), want, "w {w}");
    }
}
