//! cca_common.h, the header every algorithm is built on: its integer arithmetic (called
//! directly through csrc/common.c), its RFC 5681 window helpers, its constants, and the
//! guard against a corrupted ssthresh or cwnd (driven through cca_reno's ops).
use ccarena_cc_harness::common::*;
use ccarena_cc_harness::*;

// ---- integer arithmetic: exact against the definition, boundaries included

/// the values around every perfect power k^n for k in `ks`, and small numbers
fn around_powers(n: u32, ks: impl Iterator<Item = u64>) -> Vec<u64> {
    let mut xs: Vec<u64> = (0..=5000).collect();
    for k in ks {
        if let Some(p) = k.checked_pow(n) {
            xs.extend([p.saturating_sub(1), p, p.saturating_add(1)]);
        }
    }
    xs.push(u64::MAX);
    xs
}

#[test]
fn the_square_root_is_the_floor_of_the_real_one() {
    // used by HighSpeed's and others' rules in fixed point: floor(sqrt(x)) for every u64
    let ks = (1..64u32).flat_map(|b| [(1u64 << (b / 2)) - 1, 1u64 << (b / 2), 3u64 << (b / 2) / 2])
        .chain([65_535, 65_536, 4_294_967_295, 123_456_789]);
    for x in around_powers(2, ks) {
        assert_eq!(sqrt(x) as u64, x.isqrt(), "sqrt({x})");
    }
}

#[test]
fn the_cube_root_is_the_floor_of_the_real_one() {
    // CUBIC's K = cbrt(W_max (1 - beta) / C): floor(cbrt(x)) for every u64, up to
    // 2642245 = floor(cbrt(2^64 - 1))
    let exact = |x: u64| {
        let mut r = (x as f64).cbrt() as u64;
        while r.checked_pow(3).is_none_or(|p| p > x) {
            r -= 1;
        }
        while (r + 1).checked_pow(3).is_some_and(|p| p <= x) {
            r += 1;
        }
        r
    };
    let ks = (1..22u32).flat_map(|b| [(1u64 << b) - 1, 1u64 << b, (1u64 << b) + 1])
        .chain([1000, 2_642_245, 2_642_246]);
    for x in around_powers(3, ks) {
        assert_eq!(cbrt(x) as u64, exact(x), "cbrt({x})");
    }
    assert_eq!(cbrt(u64::MAX), 2_642_245);
}

#[test]
fn ilog2_is_the_index_of_the_highest_set_bit() {
    assert_eq!(ilog2(0), 0);
    for i in 0..64u32 {
        let p = 1u64 << i;
        assert_eq!(ilog2(p), i, "2^{i}");
        assert_eq!(ilog2(p | (p - 1)), i, "2^{} - 1", i + 1);
        if i > 0 {
            assert_eq!(ilog2(p - 1), i - 1, "2^{i} - 1");
            assert_eq!(ilog2(p + 1), i, "2^{i} + 1");
        }
    }
    for x in 1..5000u64 {
        assert_eq!(ilog2(x), x.ilog2(), "{x}");
    }
}

#[test]
fn the_branch_free_comparisons_are_exact_at_the_sign_bit() {
    for y in [1u64, 2, 12345, 1 << 31, 1 << 32, 1 << 63, u64::MAX] {
        assert_eq!(nz(y), 1, "nz({y})");
    }
    assert_eq!(nz(0), 0);
    let h = 1u64 << 63;
    for (a, b) in [(0, 1), (1, 0), (5, 5), (u64::MAX, 0), (0, u64::MAX), (h, h - 1), (h - 1, h),
                   (h, h), (u64::MAX - 1, u64::MAX), (3, h + 3)] {
        assert_eq!(ltu(a, b), (a < b) as u64, "{a} < {b}");
    }
}

#[test]
fn sequence_order_wraps_at_two_to_the_32() {
    // RFC 1982 serial arithmetic: a is after b when (a - b) mod 2^32 is in (0, 2^31)
    assert!(seq_after(2, 1));
    assert!(!seq_after(1, 2));
    assert!(!seq_after(7, 7));
    assert!(seq_after(5, 0xffff_fff0), "5 is after a number just below the wrap");
    assert!(!seq_after(0xffff_fff0, 5));
}

// ---- the window helpers (RFC 5681 §3.1, RFC 3465)

#[test]
fn cwnd_is_at_least_one_segment_and_at_most_the_clamp() {
    let c = Conn::new("reno");
    for (w, want) in [(0, 1), (1, 1), (2, 2), (5, 5)] {
        set_cwnd(&c, w);
        assert_eq!(c.cwnd(), want, "set {w}");
    }
    c.set(Field::CwndClamp, 50);
    for (w, want) in [(49, 49), (50, 50), (51, 50), (60, 50)] {
        set_cwnd(&c, w);
        assert_eq!(c.cwnd(), want, "set {w} under a clamp of 50 (snd_cwnd_clamp)");
    }
}

#[test]
fn slow_start_stops_at_ssthresh_and_returns_what_is_left() {
    // RFC 5681 §3.1: cwnd += acked up to ssthresh; the rest goes to congestion avoidance
    let c = Conn::new("reno");
    c.set_ssthresh(20);
    c.set_cwnd(10);
    assert_eq!((slow_start(&c, 5), c.cwnd()), (0, 15));
    assert_eq!((slow_start(&c, 8), c.cwnd()), (3, 20), "15 + 8 passes 20 by 3");
    c.set_cwnd(18);
    assert_eq!((slow_start(&c, 2), c.cwnd()), (0, 20), "reaching ssthresh exactly leaves nothing");
}

#[test]
fn additive_increase_adds_one_segment_per_w_acked_segments() {
    let c = Conn::new("reno");
    c.set_cwnd(10);
    c.set(Field::CwndCnt, 0);
    cong_avoid_ai(&c, 4, 9);
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (12, 1), "9 acked at w = 4: +2, 1 carried");
    // w = 0 counts as 1: one segment per acked segment, never a division by zero
    c.set(Field::CwndCnt, 0);
    cong_avoid_ai(&c, 0, 3);
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (15, 0));
    // a window that shrank under the count (snd_cwnd_cnt 50 >= w 40): one segment for
    // what was counted, then counting starts anew with this ACK
    c.set(Field::CwndCnt, 50);
    cong_avoid_ai(&c, 40, 1);
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (16, 1));
    // a count exactly at w is the same as one segment counted: +1, the rest carried
    c.set(Field::CwndCnt, 40);
    cong_avoid_ai(&c, 40, 41);
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (18, 1));
}

#[test]
fn fractional_increase_adds_inc_over_1024_segments_per_window_of_acks() {
    let c = Conn::new("reno");
    c.set_cwnd(10);
    let mut f = Frac::default();
    cong_avoid_frac(&c, &mut f, 3 * 1024 / 2, 9); // 1.5 segments per RTT
    assert_eq!((c.cwnd(), f.acc), (11, 9 * 1536 - 10 * 1024), "13824 units: one segment of 10240");
    assert_eq!(f.cwnd, 11, "the remainder is counted at the window after the increase");
    // a one-segment window: one acked segment at inc 1 is a whole segment
    c.set_cwnd(1);
    let mut f = Frac::default();
    cong_avoid_frac(&c, &mut f, 1024, 1);
    assert_eq!((c.cwnd(), f.acc), (2, 0));
    // a zero window (never set by the stack) counts as one segment: no division by zero
    c.set(Field::Cwnd, 0);
    let mut f = Frac::default();
    cong_avoid_frac(&c, &mut f, 1024, 1);
    assert_eq!(c.cwnd(), 1);
    // one call adds at most 0xffff segments
    c.set_cwnd(1);
    let mut f = Frac::default();
    cong_avoid_frac(&c, &mut f, 1 << 40, 1);
    assert_eq!(c.cwnd(), 1 + 0xffff);
}

#[test]
fn fractional_increase_drops_a_remainder_counted_at_a_larger_window() {
    // cca_common.h: the remainder is c/cwnd of a segment at the window it was counted at;
    // a window found smaller than that (without a loss: an idle restart, RFC 5681 §4.1)
    // drops it rather than spending it against the smaller window's unit, where it would
    // be worth more; the first round at the new window grows by exactly the rule
    let c = Conn::new("reno");
    c.set_cwnd(100);
    let mut f = Frac::default();
    cong_avoid_frac(&c, &mut f, 1024, 99); // 99 of the 100 acks of a segment at 100
    assert_eq!((c.cwnd(), f), (100, Frac { acc: 99 * 1024, cwnd: 100 }));
    // 99/50 of a segment at 50: not two segments at once; this ack counts from nothing,
    // and the next segment comes after the 50 acks of the rule at 50
    c.set_cwnd(50);
    cong_avoid_frac(&c, &mut f, 1024, 1);
    assert_eq!((c.cwnd(), f), (50, Frac { acc: 1024, cwnd: 50 }), "over-full at the smaller window");
    cong_avoid_frac(&c, &mut f, 1024, 48);
    assert_eq!(c.cwnd(), 50);
    cong_avoid_frac(&c, &mut f, 1024, 1);
    assert_eq!((c.cwnd(), f), (51, Frac { acc: 0, cwnd: 51 }), "a segment after 50 acks at 50");
    // a remainder below one segment of the smaller window goes too: 30/100 would be 30/60
    c.set_cwnd(100);
    let mut f = Frac { acc: 30 * 1024, cwnd: 100 };
    c.set_cwnd(60);
    cong_avoid_frac(&c, &mut f, 1024, 59);
    assert_eq!((c.cwnd(), f.acc), (60, 59 * 1024), "30/100 of a segment is not carried to 60");
    cong_avoid_frac(&c, &mut f, 1024, 1);
    assert_eq!(c.cwnd(), 61);
    // at the same window or a larger one (grown by slow start, say) it is kept
    let mut f = Frac { acc: 30 * 1024, cwnd: 60 };
    c.set_cwnd(60);
    cong_avoid_frac(&c, &mut f, 1024, 29);
    assert_eq!((c.cwnd(), f.acc), (60, 59 * 1024), "the same window");
    let mut f = Frac { acc: 30 * 1024, cwnd: 60 };
    c.set_cwnd(70);
    cong_avoid_frac(&c, &mut f, 1024, 40);
    assert_eq!((c.cwnd(), f), (71, Frac { acc: 0, cwnd: 71 }), "a larger window: 30 + 40 acks of 70");
    // the credit a rule reads (BIC's window with its fraction) is the same
    let mut f = Frac { acc: 5000, cwnd: 10 };
    c.set_cwnd(10);
    assert_eq!(frac_credit(&c, &mut f), 5000);
    c.set_cwnd(11);
    assert_eq!(frac_credit(&c, &mut f), 5000, "a larger window");
    c.set_cwnd(9);
    assert_eq!((frac_credit(&c, &mut f), f.acc), (0, 0), "a smaller window");
}

#[test]
fn fractional_increase_of_at_most_one_segment_per_ack_drops_the_excess_credit() {
    // Linux's tcp_htcp rule (cca_common.h): a stretch ACK adds one segment and keeps only
    // the remainder below one segment's worth
    let c = Conn::new("reno");
    c.set_cwnd(10);
    let mut f = Frac::default();
    cong_avoid_frac_one(&c, &mut f, 3 * 1024, 9); // 27648 units, unit 10240
    assert_eq!((c.cwnd(), f), (11, Frac { acc: (27648 - 10240) % 10240, cwnd: 11 }));
    c.set_cwnd(1);
    let mut f = Frac::default();
    cong_avoid_frac_one(&c, &mut f, 1024, 1);
    assert_eq!((c.cwnd(), f.acc), (2, 0), "a one-segment window");
    c.set(Field::Cwnd, 0);
    let mut f = Frac::default();
    cong_avoid_frac_one(&c, &mut f, 1024, 1);
    assert_eq!(c.cwnd(), 1, "a zero window counts as one segment");
    // as cong_avoid_frac: a remainder counted at a larger window is dropped, one counted
    // at the same or a smaller window is kept
    let mut f = Frac { acc: 9 * 1024, cwnd: 20 };
    c.set_cwnd(10);
    cong_avoid_frac_one(&c, &mut f, 1024, 2);
    assert_eq!((c.cwnd(), f), (10, Frac { acc: 2 * 1024, cwnd: 10 }), "a smaller window");
    let mut f = Frac { acc: 9 * 1024, cwnd: 10 };
    cong_avoid_frac_one(&c, &mut f, 1024, 2);
    assert_eq!((c.cwnd(), f), (11, Frac { acc: 1024, cwnd: 11 }), "the same window");
    let mut f = Frac { acc: 9 * 1024, cwnd: 8 };
    c.set_cwnd(10);
    cong_avoid_frac_one(&c, &mut f, 1024, 1);
    assert_eq!((c.cwnd(), f), (11, Frac { acc: 0, cwnd: 11 }), "a larger window");
}

#[test]
fn growth_starts_only_when_cwnd_limits_and_slow_start_leaves_segments() {
    let c = Conn::new("reno");
    c.set_app_unlimited(false);
    c.set_cwnd(10);
    c.set_ssthresh(12);
    c.set(Field::IsCwndLimited, 0);
    c.set(Field::MaxPacketsOut, 5);
    assert_eq!(grow_prologue(&c, 4), None, "not cwnd-limited: no growth (RFC 7661)");
    assert_eq!(c.cwnd(), 10);
    c.set(Field::IsCwndLimited, 1);
    assert_eq!(grow_prologue(&c, 1), None, "slow start used the one acked segment");
    assert_eq!(c.cwnd(), 11);
    assert_eq!(grow_prologue(&c, 4), Some(3), "one to reach ssthresh, three for congestion avoidance");
    assert_eq!(c.cwnd(), 12);
    assert_eq!(grow_prologue(&c, 4), Some(4), "in congestion avoidance every acked segment");
}

#[test]
fn half_the_window_is_at_least_two_segments() {
    // RFC 5681 eq. (4)
    let c = Conn::new("reno");
    for (w, want) in [(41, 20), (40, 20), (5, 2), (3, 2), (1, 2)] {
        c.set_cwnd(w);
        assert_eq!(half_cwnd(&c), want, "cwnd {w}");
    }
}

// ---- constants the kernel defines

#[test]
fn an_infinite_ssthresh_is_slow_start_not_corruption() {
    // TCP_INFINITE_SSTHRESH = 0x7fffffff: the value before the first loss is not repaired
    let c = Conn::new("reno");
    assert_eq!(c.ssthresh(), INFINITE_SSTHRESH);
    c.round(20_000);
    assert_eq!(c.ssthresh(), INFINITE_SSTHRESH);
    assert_eq!(c.guard_counts(), [0; 5]);
    assert_eq!(c.cwnd(), 20, "slow start doubled the window");
}

#[test]
fn dctcp_asks_for_ecn_and_nothing_else() {
    // TCP_CONG_NEEDS_ECN = 0x2 (0x1 is TCP_CONG_NON_RESTRICTED: not ours to set)
    assert_eq!(Conn::new("dctcp").ops_flags(), TCP_CONG_NEEDS_ECN);
    assert_eq!(Conn::new("reno").ops_flags(), 0);
}

#[test]
fn dctcps_receiver_sets_and_clears_only_demand_cwr() {
    // TCP_ECN_DEMAND_CWR = 4; TCP_ECN_OK (1) and TCP_ECN_QUEUE_CWR (2) are the stack's
    // (the connection negotiated ECN before init: without it DCTCP is Reno's rules)
    let c = Conn::bare("dctcp");
    c.set(Field::EcnFlags, 1 | 2);
    c.init();
    c.cwnd_event(CA_EVENT_ECN_IS_CE);
    assert_eq!(c.get(Field::EcnFlags), 1 | 2 | 4);
    c.cwnd_event(CA_EVENT_ECN_NO_CE);
    assert_eq!(c.get(Field::EcnFlags), 1 | 2);
}

// ---- the guard (cca_common.h: a ssthresh or cwnd above 2^24 segments cannot be real)

const SANE_MAX: u32 = 1 << 24;

#[test]
fn the_guard_treats_2_to_the_24_segments_as_the_largest_real_value() {
    for (ss, repaired) in [(SANE_MAX, false), (SANE_MAX + 1, true), (INFINITE_SSTHRESH, false),
                           (INFINITE_SSTHRESH + 1, true), (0x8110_4110, true)] {
        let c = Conn::new("reno");
        c.set(Field::PriorCwnd, 40);
        c.set_ssthresh(ss);
        c.set_ca_state(RECOVERY);
        assert_eq!(c.ssthresh(), if repaired { 20 } else { ss }, "ssthresh {ss:#x}");
        assert_eq!(c.guard_counts()[1], repaired as u64, "ssthresh {ss:#x}: counted at entry");
    }
    for (w, repaired) in [(SANE_MAX, false), (SANE_MAX + 1, true)] {
        let c = Conn::new("reno");
        c.set(Field::PriorCwnd, 40);
        c.set_cwnd(w);
        c.cong_control(0, 0, 0, 20_000);
        assert_eq!(c.cwnd(), if repaired { 40 } else { w }, "cwnd {w:#x}");
    }
}

#[test]
fn a_repaired_ssthresh_is_the_rule_for_the_window_before_the_loss_or_ten_segments() {
    // prior_cwnd is the window the skipped op would have seen; if it is not a window
    // (below 2 or above 2^24), 10 segments; Reno's rule halves it
    for (prior, want) in [(40, 20), (2, 2), (1, 5), (0, 5), (SANE_MAX, SANE_MAX / 2), (SANE_MAX + 1, 5)] {
        let c = Conn::new("reno");
        c.set(Field::PriorCwnd, prior as u64);
        c.set_ssthresh(0x8110_4110);
        c.set_ca_state(RECOVERY);
        assert_eq!(c.ssthresh(), want, "prior_cwnd {prior}");
    }
}

#[test]
fn set_state_repairs_only_when_entering_a_reduction() {
    // CWR, Recovery and Loss use ssthresh at once; Open and Disorder do not (the per-ACK
    // check repairs it there before use)
    for (state, repaired) in [(CWR, true), (RECOVERY, true), (LOSS, true), (DISORDER, false), (OPEN, false)] {
        let c = Conn::new("reno");
        c.set(Field::PriorCwnd, 40);
        c.set_ssthresh(0x8110_4110);
        c.set_ca_state(state);
        assert_eq!(c.ssthresh() == 20, repaired, "state {state}");
        assert_eq!(c.guard_counts(), [0, repaired as u64, 0, 0, 0], "state {state}");
    }
}

#[test]
fn a_late_repair_counts_what_was_corrupted_and_in_which_state() {
    // [late, at_entry, late_ssthresh, late_cwnd, late_states (bit s: CA state s)]
    let c = Conn::new("reno");
    c.set(Field::PriorCwnd, 40);
    c.set(Field::CaState, RECOVERY as u64);
    c.set_ssthresh(0x8110_4110);
    c.set_cwnd(0x8110_4110);
    c.cong_control(0, 0, 0, 20_000);
    assert_eq!((c.ssthresh(), c.cwnd()), (20, 40));
    assert_eq!(c.guard_counts(), [1, 0, 1, 1, 1 << RECOVERY]);
    c.set(Field::CaState, OPEN as u64);
    c.set_cwnd(SANE_MAX + 5);
    c.cong_control(0, 0, 0, 20_000);
    assert_eq!(c.cwnd(), 40);
    assert_eq!(c.guard_counts(), [2, 0, 1, 2, (1 << RECOVERY) | (1 << OPEN)]);
    // a corrupted ssthresh alone, with a sane cwnd, has not acted yet: at_entry
    c.set_ssthresh(0x8110_4110);
    c.cong_control(0, 0, 0, 20_000);
    assert_eq!(c.guard_counts(), [2, 1, 1, 2, (1 << RECOVERY) | (1 << OPEN)]);
    // no window before the loss to go back to (prior_cwnd 0): ten segments
    let c = Conn::new("reno");
    c.set(Field::PriorCwnd, 0);
    c.set_cwnd(SANE_MAX + 1);
    c.cong_control(0, 0, 0, 20_000);
    assert_eq!(c.cwnd(), 10);
    // a repair never raises cwnd: a window below prior_cwnd stays
    let c = Conn::new("reno");
    c.set(Field::PriorCwnd, 40);
    c.set(Field::CaState, RECOVERY as u64);
    c.set_cwnd(12);
    c.set_ssthresh(0x8110_4110);
    c.set_app_unlimited(false);
    c.cong_control(0, 0, 0, 20_000);
    assert_eq!((c.ssthresh(), c.cwnd()), (20, 12));
}
