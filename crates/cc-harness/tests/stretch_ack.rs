//! Stretch ACKs: without SACK, the retransmission that fills the hole after a time-out is
//! acknowledged together with everything the receiver holds behind it, hundreds of
//! segments in one ACK. An algorithm whose increase is alpha/cwnd per acked segment must
//! not turn that one ACK into alpha times Reno's jump.
use ccarena_cc_harness::*;

const RTT: u32 = 200_000;

/// H-TCP (draft-leith-tcp-htcp-06 §3: cwnd += alpha/cwnd on each ACK) grows at most one
/// segment per ACK, as Linux's tcp_htcp does. Seen end to end: parallel-tcp's 30 SACK-less
/// H-TCP connections through RED had windows jump from 1 to 4,562 segments on one ACK
/// in the Loss state, 5 s after the time-out (alpha(5 s) = 45).
#[test]
fn htcp_grows_at_most_one_segment_per_ack_on_a_stretch_ack_after_a_time_out() {
    let c = Conn::new("htcp");
    c.start_in_ca(100);
    for _ in 0..3 {
        c.round(RTT);
    }
    c.enter_loss();
    let ss = c.ssthresh();
    assert!(ss >= 50, "ssthresh {ss} after the time-out");
    advance_us(5_000_000); // backed-off time-outs: Delta is 5 s when the hole is filled
    c.ack(Ack::new(600, RTT));
    // slow start to ssthresh uses ss - 1 of the 600; the rest may add one segment
    assert!(c.cwnd() <= ss + 1, "one ACK of 600 segments: cwnd {} (ssthresh {ss})", c.cwnd());
    assert!(c.cwnd() >= ss, "slow start reaches ssthresh: cwnd {} (ssthresh {ss})", c.cwnd());
    // and no credit is left over for the ACKs that follow: one ordinary ACK adds at
    // most one segment, and a round of ordinary ACKs about alpha(5 s) = 45, not hundreds
    let w = c.cwnd();
    c.ack(Ack::new(1, RTT));
    assert!(c.cwnd() <= w + 1, "the next ACK: {w} -> {}", c.cwnd());
}

/// Reno counts acknowledged segments, not ACKs (RFC 5681 §3.1 with RFC 3465's counting):
/// one segment per window acknowledged whether the receiver acknowledges every segment,
/// every other (delayed ACKs) or every eighth (stretch ACKs); in slow start one segment
/// per segment acknowledged all the same.
#[test]
fn reno_grows_by_segments_acknowledged_whatever_the_segments_per_ack() {
    let grow = |k: u32, from_ca: bool| {
        let c = Conn::new("reno");
        if from_ca {
            c.start_in_ca(40);
        }
        c.transmit();
        for _ in 0..200 / k {
            c.ack(Ack::new(k, RTT));
        }
        c.cwnd()
    };
    // 200 segments at 40: 40 + 41 + 42 + 43 acknowledged grow it by 4, 34 are carried
    assert_eq!(grow(1, true), 44);
    // slow start from 10: one segment per segment
    assert_eq!(grow(1, false), 210);
    for k in [2u32, 8] {
        assert_eq!(grow(k, true), 44, "congestion avoidance, {k} segments per ACK");
        assert_eq!(grow(k, false), 210, "slow start, {k} segments per ACK");
    }
}

/// Linux's BIC divides its count by the measured segments per ACK (Linux 6.12 tcp_bic):
/// with ACKs of eight segments it grows more per round than with one per segment, where
/// Reno's rule (tested above) grows the same.
#[test]
fn linux_bic_grows_faster_per_round_with_stretch_acks() {
    let grow = |k: u32| {
        let c = Conn::new("bic");
        c.set_ack_every(k);
        c.start_in_ca(100);
        for _ in 0..3 {
            c.round(RTT);
        }
        c.cwnd() - 100
    };
    let (one, eight) = (grow(1), grow(8));
    assert!(eight > one, "8 segments per ACK: +{eight}, 1: +{one}");
}
