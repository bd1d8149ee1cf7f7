//! The per-ACK update every algorithm shares (bpf/cc/cca_cong_control.h), driven through
//! cca_reno, the algorithm with the least of its own: Proportional Rate Reduction in CWR
//! and Recovery (RFC 6937 §3), the end of a reduction and the entry into Recovery (the
//! kernel's tcp_end_cwnd_reduction / tcp_enter_recovery), which ACKs may grow the window
//! (RFC 5681 §3.1, and the kernel's rule for reordering paths), the pacing rate
//! (Documentation/networking/ip-sysctl: tcp_pacing_ss_ratio, tcp_pacing_ca_ratio) and the
//! check on a corrupted ssthresh before anything uses it (cca_common.h CCA_CHECK).
//!
//! Each test sets the socket's fields itself and calls one op at a time, so every input of
//! a rule is explicit; the expected values come from the RFC's formulas.
use ccarena_cc_harness::*;

/// A connection in a reduction (CWR or Recovery), the state written directly (no op runs
/// on the way in): `prior` = RecoverFS (tp->prior_cwnd), ssthresh `ss`, and the
/// scoreboard (packets_out, sacked_out, lost_out, retrans_out) that makes pipe.
fn reducing(state: u8, prior: u32, ss: u32, board: [u32; 4]) -> Conn {
    let c = Conn::new("reno");
    c.set_app_unlimited(false);
    c.set(Field::PacketsOut, board[0] as u64);
    c.set(Field::SackedOut, board[1] as u64);
    c.set(Field::LostOut, board[2] as u64);
    c.set(Field::RetransOut, board[3] as u64);
    c.set(Field::PriorCwnd, prior as u64);
    c.set_cwnd(prior);
    c.set_ssthresh(ss);
    c.set(Field::PrrOut, 0);
    c.set(Field::HighSeq, c.get(Field::SndNxt) + 100 * 1448);
    c.set(Field::CaState, state as u64);
    c
}

/// RFC 6675 pipe, as the kernel counts it (tcp_packets_in_flight)
fn pipe(c: &Conn) -> i64 {
    let g = |f| c.get(f) as i64;
    g(Field::PacketsOut) - (g(Field::SackedOut) + g(Field::LostOut)) + g(Field::RetransOut)
}

/// One ACK in the reduction that delivered `delivered` segments (`lost` newly marked lost),
/// with `prr_out` segments sent so far in the episode; returns sndcnt = cwnd - pipe.
fn prr_ack(c: &Conn, prr_out: u32, flag: i32, delivered: u32, lost: i32) -> i64 {
    c.set(Field::PrrOut, prr_out as u64);
    c.cong_control(flag, delivered, lost, 20_000);
    c.cwnd() as i64 - pipe(c)
}

const SACK: i32 = FLAG_DATA_SACKED;
/// snd.una advanced: the "safe ACK" of draft-ietf-tcpm-prr-rfc6937bis
const UNA: i32 = FLAG_DATA_ACKED | FLAG_SND_UNA_ADVANCED;

// ---- RFC 6937 §3: the proportional part (pipe > ssthresh)

#[test]
fn prr_sends_the_rounded_up_share_ssthresh_over_recoverfs_of_prr_delivered() {
    // sndcnt = CEIL(prr_delivered * ssthresh / RecoverFS) - prr_out, ACK after ACK; with
    // RecoverFS 39 and ssthresh 20 the products hit every remainder, 1 included (20·2 =
    // 40 = 39 + 1), where rounding up and down differ by one segment
    let c = reducing(RECOVERY, 39, 20, [39, 0, 1, 1]);
    let mut prr_out = 1u32; // the fast retransmit
    let mut delivered = 0u32;
    for k in 1..=15u32 {
        c.set(Field::SackedOut, k as u64);
        delivered += 1;
        let want = (delivered * 20).div_ceil(39) as i64 - prr_out as i64;
        assert!(pipe(&c) > 20);
        assert_eq!(prr_ack(&c, prr_out, SACK, 1, 0), want.max(0), "ACK {k}");
        prr_out += c.cwnd().saturating_sub(pipe(&c) as u32);
    }
    // in all (the fast retransmit included): ssthresh/RecoverFS of what was delivered
    assert_eq!(prr_out, (15u32 * 20).div_ceil(39));
}

#[test]
fn prr_sends_nothing_more_once_prr_out_is_ahead_of_the_proportion() {
    // sndcnt < 0 (more was sent than the proportion allows) sends nothing: cwnd = pipe,
    // never less; and only the first ACK of an episode (prr_out = 0) sends at least one
    // segment, the fast retransmit
    let c = reducing(RECOVERY, 40, 20, [31, 0, 1, 0]);
    assert_eq!(prr_ack(&c, 10, SACK, 2, 0), 0, "CEIL(2·20/40) - 10 < 0 sends nothing");
    assert_eq!(c.cwnd(), 30);
}

#[test]
fn the_first_ack_of_an_episode_sends_its_share_or_at_least_the_fast_retransmit() {
    // prr_out = 0: sndcnt = max(sndcnt, 1); a first ACK that delivered 10 of RecoverFS 40
    // with ssthresh 20 sends CEIL(10·20/40) = 5, not 1
    let c = reducing(RECOVERY, 40, 20, [31, 0, 1, 0]);
    assert_eq!(prr_ack(&c, 0, SACK, 10, 0), 5);
    // pipe = ssthresh: the slow-start bound gives min(ssthresh - pipe, ...) = 0; the fast
    // retransmit still goes out
    let c = reducing(RECOVERY, 40, 20, [21, 0, 1, 0]);
    assert_eq!(pipe(&c), 20);
    assert_eq!(prr_ack(&c, 0, SACK, 1, 0), 1);
    // once something was sent, an ACK that allows nothing sends nothing
    let c = reducing(RECOVERY, 40, 20, [21, 0, 1, 0]);
    assert_eq!(prr_ack(&c, 1, SACK, 1, 0), 0);
}

// ---- RFC 6937 §3: the slow-start reduction bound (pipe <= ssthresh)

#[test]
fn at_pipe_equal_to_ssthresh_the_slow_start_bound_applies() {
    // "if (pipe > ssthresh)" is the proportional part; at pipe = ssthresh it is PRR-SSRB,
    // which sends min(ssthresh - pipe, limit) = 0, where the proportion would send
    // CEIL(10·20/40) - 2 = 3
    let c = reducing(RECOVERY, 40, 20, [21, 0, 1, 0]);
    assert_eq!(pipe(&c), 20);
    assert_eq!(prr_ack(&c, 2, SACK, 10, 0), 0);
}

#[test]
fn below_ssthresh_prr_sends_at_most_ssthresh_minus_pipe() {
    // sndcnt = MIN(ssthresh - pipe, limit), limit = MAX(prr_delivered - prr_out,
    // DeliveredData); pipe counts the retransmissions in flight (17 - 3 + 1 = 15)
    let c = reducing(RECOVERY, 40, 20, [17, 2, 1, 1]);
    assert_eq!(pipe(&c), 15);
    assert_eq!(prr_ack(&c, 3, SACK, 8, 0), 5, "limit 8 > ssthresh - pipe = 5");
    c.set(Field::PacketsOut, 12);
    assert_eq!(pipe(&c), 10);
    // prr_delivered 10, prr_out 3: limit = MAX(7, DeliveredData 2) = 7 < ssthresh - pipe = 10
    assert_eq!(prr_ack(&c, 3, SACK, 2, 0), 7);
}

#[test]
fn below_ssthresh_prr_sends_at_least_what_this_ack_delivered() {
    // prr_out ahead of prr_delivered: limit = MAX(3 - 5, DeliveredData) = 3, while
    // ssthresh - pipe = 15 leaves room
    let c = reducing(RECOVERY, 40, 20, [8, 2, 2, 1]);
    assert_eq!(pipe(&c), 5);
    assert_eq!(prr_ack(&c, 5, SACK, 3, 0), 3);
}

#[test]
fn a_safe_ack_adds_one_segment_to_the_slow_start_bound() {
    // draft-ietf-tcpm-prr-rfc6937bis: limit + 1 MSS only when snd.una advanced and the ACK
    // marked no new loss (RFC 6937's "+ MSS" without the condition let a lossy ACK grow
    // the burst)
    let cases = [
        (UNA, 0, 4, "snd.una advanced, no new loss: +1"),
        (UNA, 1, 3, "snd.una advanced but a new loss: no +1"),
        (SACK, 0, 3, "a SACK only: no +1"),
        (SACK | FLAG_DATA, 0, 3, "a SACK on a segment carrying data: no +1"),
        (UNA | FLAG_DATA | FLAG_WIN_UPDATE, 2, 3, "two new losses: no +1"),
    ];
    for (flag, lost, want, what) in cases {
        let c = reducing(RECOVERY, 40, 20, [8, 2, 2, 1]);
        assert_eq!(prr_ack(&c, 5, flag, 3, lost), want, "{what}");
    }
}

#[test]
fn cwr_reduces_with_the_same_rule() {
    // RFC 6937 applies to any reduction, ECN's CWR (RFC 3168) included
    let c = reducing(CWR, 40, 20, [31, 0, 0, 0]);
    assert_eq!(prr_ack(&c, 0, UNA, 10, 0), 5);
    assert_eq!(prr_ack(&c, 5, UNA, 10, 0), 5, "CEIL(20·20/40) - 5");
}

#[test]
fn an_ack_that_delivered_nothing_leaves_the_window_alone() {
    // prr_delivered does not move; like the kernel's tcp_cwnd_reduction the window is
    // only recomputed when something was delivered (and RecoverFS is a window)
    let c = reducing(RECOVERY, 40, 20, [31, 0, 1, 0]);
    c.set_cwnd(33);
    assert_eq!(prr_ack(&c, 0, FLAG_DATA | FLAG_WIN_UPDATE, 0, 0), 3);
    assert_eq!(c.cwnd(), 33);
    let c = reducing(RECOVERY, 40, 20, [31, 0, 1, 0]);
    c.set(Field::PriorCwnd, 0);
    c.set_cwnd(33);
    c.cong_control(SACK, 4, 0, 20_000);
    assert_eq!(c.cwnd(), 33, "no RecoverFS: nothing to be proportional to");
}

// ---- an episode's prr_delivered starts from zero

/// The second ACK of an episode after `between` (which may start a new one): the first ACK
/// delivered 10 with prr_out 2; the second delivers 10 more.
fn second_ack(between: impl FnOnce(&Conn)) -> (i64, i64) {
    let c = reducing(RECOVERY, 40, 20, [31, 0, 1, 0]);
    assert_eq!(prr_ack(&c, 2, SACK, 10, 0), 3, "CEIL(10·20/40) - 2");
    between(&c);
    let out = c.get(Field::PrrOut) as u32;
    (prr_ack(&c, out, SACK, 10, 0), out as i64)
}

#[test]
fn prr_delivered_accumulates_within_an_episode() {
    assert_eq!(second_ack(|_| ()), (10 - 2, 2));
}

#[test]
fn a_new_episode_counts_prr_delivered_from_zero() {
    // RFC 6937 §3: prr_delivered = 0 when recovery begins. The op cannot see
    // tcp_init_cwnd_reduction run; it knows a new episode by each of its traces: an ACK
    // in Open between the two, a new high_seq, a new RecoverFS, prr_out set back
    let (n, out) = second_ack(|c| {
        c.set(Field::CaState, OPEN as u64);
        c.cong_control(0, 0, 0, 20_000);
        c.set(Field::CaState, RECOVERY as u64);
        c.set_cwnd(40);
    });
    assert_eq!(n, 5 - out, "after an ACK in Open");
    let (n, out) = second_ack(|c| c.set(Field::HighSeq, c.get(Field::HighSeq) + 5 * 1448));
    assert_eq!(n, 5 - out, "a new high_seq");
    let (n, out) = second_ack(|c| c.set(Field::PriorCwnd, 44));
    assert_eq!(n, (10u32 * 20).div_ceil(44) as i64 - out, "a new RecoverFS");
    let (n, out) = second_ack(|c| c.set(Field::PrrOut, 1));
    assert_eq!((n, out), (5 - 1, 1), "prr_out set back (an episode after an undo, same snd_nxt)");
}

// ---- the state changes cong_control leaves to set_state

fn in_ca(cwnd: u32, ss: u32) -> Conn {
    let c = Conn::new("reno");
    c.set_app_unlimited(false);
    c.set_cwnd(cwnd);
    c.set_ssthresh(ss);
    c.set(Field::PacketsOut, cwnd as u64);
    c.set(Field::UndoMarker, 77);
    c
}

#[test]
fn entering_recovery_sets_cwnd_to_pipe_plus_the_fast_retransmit() {
    // tcp_enter_recovery: PRR's first step, cwnd = pipe + 1 (here 40 - 3 lost + 1)
    let c = in_ca(40, 20);
    c.set(Field::LostOut, 3);
    c.set_ca_state(RECOVERY);
    assert_eq!(c.cwnd(), 38);
    // from CWR the reduction goes on: the kernel does not start a new one
    let c = in_ca(30, 20);
    c.set(Field::CaState, CWR as u64);
    c.set(Field::LostOut, 3);
    c.set_ca_state(RECOVERY);
    assert_eq!(c.cwnd(), 30);
}

#[test]
fn a_reduction_ends_at_ssthresh_unless_it_was_undone() {
    // RFC 6937 §3 "cwnd = ssthresh" on exiting; the kernel: always after CWR, after
    // Recovery while undo_marker is set (nothing undone); snd_cwnd_stamp marks the change
    set_now_us(7_000_000);
    for (from, to, undo_marker, want, what) in [
        (CWR, OPEN, 0, 20, "CWR ends at ssthresh"),
        (RECOVERY, OPEN, 77, 20, "Recovery ends at ssthresh"),
        (RECOVERY, DISORDER, 77, 20, "Recovery ends (to Disorder) at ssthresh"),
        (RECOVERY, OPEN, 0, 33, "an undone Recovery keeps its window"),
        (LOSS, OPEN, 77, 33, "the end of Loss is not a PRR reduction"),
        (OPEN, DISORDER, 77, 33, "Open to Disorder changes nothing"),
        (RECOVERY, LOSS, 77, 33, "an RTO in Recovery: tcp_enter_loss sets cwnd itself"),
    ] {
        let c = in_ca(33, 20);
        c.set(Field::CaState, from as u64);
        c.set(Field::UndoMarker, undo_marker);
        c.set(Field::CwndStamp, 0);
        c.set_ca_state(to);
        assert_eq!(c.cwnd(), want, "{what}");
        let stamp = if want != 33 { now_us() / 1000 } else { 0 };
        assert_eq!(c.get(Field::CwndStamp), stamp, "{what}: snd_cwnd_stamp");
    }
}

#[test]
fn a_reduction_whose_ssthresh_was_never_set_does_not_end_at_infinity() {
    // the kernel fault of cca_common.h: the ssthresh op skipped at the first loss leaves
    // ssthresh at its initial "infinite" value; ending the reduction must not set cwnd to it
    let c = in_ca(33, INFINITE_SSTHRESH);
    c.set(Field::CaState, RECOVERY as u64);
    c.set_ca_state(OPEN);
    assert_eq!(c.cwnd(), 33);
}

// ---- which ACKs grow the window

/// slow start (ssthresh above cwnd), cwnd-limited, in `state`; `reordering` as
/// tp->reordering (the sysctl net.ipv4.tcp_reordering is 3)
fn growing(state: u8, reordering: u32) -> Conn {
    let c = in_ca(10, 1000);
    c.set(Field::MaxPacketsOut, 10);
    c.set(Field::IsCwndLimited, 1);
    c.set(Field::Reordering, reordering as u64);
    c.set(Field::CaState, state as u64);
    c.set(Field::CwndStamp, 0);
    c
}

#[test]
fn the_window_grows_only_on_acks_of_new_data() {
    // RFC 5681 §3.1: growth on ACKs that acknowledge new data, not on duplicates (a SACK
    // in Disorder, an ACK carrying only data or a window update); snd_cwnd_stamp records
    // the growth (tcp_cong_avoid)
    set_now_us(3_000_000);
    let c = growing(OPEN, 3);
    c.cong_control(UNA, 1, 0, 20_000);
    assert_eq!(c.cwnd(), 11, "an ACK of new data grows slow start by one");
    assert_eq!(c.get(Field::CwndStamp), 3_000);
    for flag in [SACK | FLAG_DATA, FLAG_DATA | FLAG_WIN_UPDATE, FLAG_SYN_ACKED] {
        let c = growing(DISORDER, 3);
        c.cong_control(flag, 1, 0, 20_000);
        assert_eq!((c.cwnd(), c.get(Field::CwndStamp)), (10, 0), "flag {flag:#x}");
    }
}

#[test]
fn on_a_reordering_path_any_forward_progress_grows_the_window() {
    // once the path is known to reorder beyond net.ipv4.tcp_reordering (tp->reordering >
    // sysctl), a SACK or the SYN's ACK is forward progress too (the kernel's
    // tcp_may_raise_cwnd); at exactly the sysctl it is not
    for flag in [SACK, FLAG_SYN_ACKED, UNA] {
        let c = growing(DISORDER, 4);
        c.cong_control(flag, 1, 0, 20_000);
        assert_eq!(c.cwnd(), 11, "flag {flag:#x} on a reordering path");
    }
    let c = growing(DISORDER, 4);
    c.cong_control(FLAG_DATA | FLAG_WIN_UPDATE, 1, 0, 20_000);
    assert_eq!(c.cwnd(), 10, "data or a window update is not progress");
    let c = growing(DISORDER, 3);
    c.cong_control(SACK, 1, 0, 20_000);
    assert_eq!(c.cwnd(), 10, "reordering = sysctl: not yet a reordering path");
}

// ---- the pacing rate

/// tcp_update_pacing_rate's definition: mss · max(cwnd, packets_out) / srtt, times
/// tcp_pacing_ss_ratio % (200) while cwnd < ssthresh / 2, else tcp_pacing_ca_ratio % (120)
fn pacing_of(cwnd: u32, ss: u32, out: u32, srtt_us: u32) -> f64 {
    let ratio = if (cwnd as f64) < (ss / 2) as f64 { 2.0 } else { 1.2 };
    1448.0 * cwnd.max(out) as f64 * 1e6 / srtt_us as f64 * ratio
}

#[test]
fn the_pacing_rate_is_the_window_over_srtt_times_the_phase_ratio() {
    for (cwnd, ss, out, what) in [
        (10, INFINITE_SSTHRESH, 10, "slow start"),
        (14, 30, 14, "below half of ssthresh"),
        (15, 30, 15, "at half of ssthresh: congestion avoidance's ratio"),
        (20, 30, 20, "between half and ssthresh"),
        (31, 30, 31, "above ssthresh"),
        (10, 30, 25, "more in flight than cwnd (after a cut)"),
    ] {
        let c = in_ca(cwnd, ss);
        c.set(Field::PacketsOut, out as u64);
        c.set(Field::SrttUs, 37_000);
        c.cong_control(0, 0, 0, 37_000);
        let got = c.get(Field::PacingRate) as f64;
        let want = pacing_of(cwnd, ss, out, 37_000);
        assert!((got - want).abs() <= 3.0, "{what}: {got} B/s, want {want}");
    }
}

#[test]
fn the_pacing_rate_follows_prr_and_is_capped_by_sk_max_pacing_rate() {
    let c = reducing(RECOVERY, 40, 20, [31, 0, 1, 0]);
    c.set(Field::SrttUs, 50_000);
    assert_eq!(prr_ack(&c, 0, SACK, 10, 0), 5);
    let want = pacing_of(c.cwnd(), 20, 31, 50_000);
    assert!((c.get(Field::PacingRate) as f64 - want).abs() <= 3.0);
    // SO_MAX_PACING_RATE
    let c = in_ca(20, 30);
    c.set(Field::SrttUs, 50_000);
    c.set(Field::MaxPacingRate, 100_000);
    c.cong_control(0, 0, 0, 50_000);
    assert_eq!(c.get(Field::PacingRate), 100_000);
    // no RTT measured yet: the kernel does not divide, so the rate is only capped by
    // sk_max_pacing_rate (unlimited unless SO_MAX_PACING_RATE set one)
    let c = in_ca(20, 30);
    c.set(Field::PacingRate, 12_345);
    c.set(Field::MaxPacingRate, 7_000_000);
    c.cong_control(0, 0, 0, -1);
    assert_eq!(c.get(Field::PacingRate), 7_000_000);
}

// ---- the check before use

#[test]
fn a_corrupted_ssthresh_is_repaired_before_prr_uses_it() {
    // the fault of cca_common.h with set_state skipped as well: the state is Recovery,
    // ssthresh garbage; cong_control's check recomputes it for RecoverFS (Reno: 40/2)
    // before PRR reads it, and counts it as caught before use
    let c = reducing(RECOVERY, 40, 0x8110_4110, [31, 0, 1, 0]);
    assert_eq!(prr_ack(&c, 0, SACK, 10, 0), 5, "CEIL(10·20/40): PRR saw ssthresh 20");
    assert_eq!(c.ssthresh(), 20);
    assert_eq!(c.guard_counts()[..2], [0, 1], "[late, at_entry]");
    // a corrupted cwnd may have acted already: brought back to RecoverFS, counted late
    let c = in_ca(20, 30);
    c.set(Field::PriorCwnd, 40);
    c.set_cwnd(0x8110_4110);
    c.cong_control(0, 0, 0, 20_000);
    assert_eq!(c.cwnd(), 40);
    assert_eq!(c.guard_counts()[..2], [1, 0]);
}
