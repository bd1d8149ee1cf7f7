//! cca_lp (bpf/cc/lp.bpf.c): the default variant against the rules of Linux 6.12's
//! tcp_lp (also replayed call by call against it: tests/replay.rs), the paper variant
//! ("lp:paper") against Kuzmanovic & Knightly, "TCP-LP", INFOCOM 2003.
use ccarena_cc_harness::*;

// ---- Linux's TCP-LP -----------------------------------------------------------------------

/// struct lp of the default variant, read from icsk_ca_priv
#[derive(Debug)]
struct LinuxLp {
    flag: u32,
    sowd: u32,
    owd_min: u32,
    owd_max: u32,
    owd_max_rsv: u32,
    remote_hz: u32,
    last_drop: u32,
    inference: u32,
}
const WITHIN_INF: u32 = 1 << 4;

fn lp_state(c: &Conn) -> LinuxLp {
    let p = c.private();
    let w = |i: usize| u32::from_le_bytes(p[4 * i..4 * i + 4].try_into().unwrap());
    LinuxLp { flag: w(0), sowd: w(1), owd_min: w(2), owd_max: w(3), owd_max_rsv: w(4), remote_hz: w(5), last_drop: w(8), inference: w(9) }
}

/// pkts_acked of one ACK with an RTT sample, at our timestamp clock `now_ms`, carrying the
/// peer's TSval `tsval` and the echo of our `tsecr`
fn ts_ack(c: &Conn, now_ms: u64, tsval: u32, tsecr: u32) {
    c.set(Field::TcpMstamp, now_ms * 1000);
    c.set(Field::RcvTsval, tsval as u64);
    c.set(Field::RcvTsecr, tsecr as u64);
    c.pkts_acked(1, 40_000, 10);
}

/// An LP flow at cwnd 20 in congestion avoidance after two timestamped ACKs: the first only
/// records the reference timestamps; the second estimates the peer's clock at
/// 1000 x 6 / 10 = 600 Hz (1000 / 600 = 1 ms per tick) and a one-way delay of
/// 1056 - 1010 = 46, which is at once an early indication (sowd is not below
/// owd_min + 15 % of an empty range): cwnd 20 -> 10, owd_min 46, owd_max 92.
fn linux_after_first_signal() -> Conn {
    let c = Conn::new("lp");
    c.start_in_ca(20);
    ts_ack(&c, 1040, 1050, 1000);
    assert_eq!(c.cwnd(), 20, "no delay sample from the first ACK");
    ts_ack(&c, 1050, 1056, 1010);
    c
}

#[test]
fn linux_lp_estimates_the_peer_s_timestamp_clock_and_the_one_way_delay() {
    let c = linux_after_first_signal();
    let s = lp_state(&c);
    assert_eq!((s.remote_hz, s.sowd), (600, 46 << 3), "{s:?}");
    assert_eq!((s.owd_min, s.owd_max, s.owd_max_rsv), (46, 92, 92), "reset at the signal: {s:?}");
    assert_eq!((s.last_drop, s.inference), (1050, 3 * 40), "{s:?}");
    // a peer ticking at 250 Hz: 4 ms per tick, owd = 4 TSval - TSecr
    let c = Conn::new("lp");
    ts_ack(&c, 2040, 500, 2000);
    ts_ack(&c, 2140, 525, 2100);
    let s = lp_state(&c);
    assert_eq!((s.remote_hz, s.sowd >> 3), (250, 4 * 525 - 2100), "{s:?}");
}

#[test]
fn linux_lp_an_early_indication_halves_cwnd_and_leaves_ssthresh() {
    let c = linux_after_first_signal();
    assert_eq!((c.cwnd(), c.ssthresh()), (10, 20));
    assert_eq!(lp_state(&c).flag & WITHIN_INF, 0);
}

#[test]
fn linux_lp_threshold_is_owd_min_plus_15_percent_of_the_range() {
    // owd_min 46, owd_max becomes 92 (the largest but one), so the threshold is
    // 46 + 15 x 46 / 100 = 52; sowd = 8 x 46 - 46 + owd: owd 93 gives 415 >> 3 = 51
    // (below: nothing), owd 94 gives 416 >> 3 = 52 (an indication); 10 ms after the last
    // one, within the inference time of 3 x 40 ms: cwnd 1
    for (owd, want) in [(93u32, 10u32), (94, 1)] {
        let c = linux_after_first_signal();
        ts_ack(&c, 1060, 1020 + owd, 1020);
        let s = lp_state(&c);
        assert_eq!(s.remote_hz, (600 * 64 - 600 + 1000 * (1020 + owd - 1056) / 10) / 64, "{s:?}");
        assert_eq!(c.cwnd(), want, "owd {owd}: {s:?}");
        assert_eq!(c.ssthresh(), 20);
    }
}

#[test]
fn linux_lp_outside_the_inference_time_an_indication_halves_again() {
    // the same indication 130 ms after the last one: inference is 3 x 40 = 120 ms
    let c = linux_after_first_signal();
    ts_ack(&c, 1180, 1140 + 94, 1140);
    assert_eq!(c.cwnd(), 5, "{:?}", lp_state(&c));
}

#[test]
fn linux_lp_does_not_grow_within_the_inference_time() {
    let c = linux_after_first_signal();
    // a quiet ACK (owd 46 again, below the threshold) 10 ms after the indication:
    // within inference (3 x 40 ms), so no growth, even with a full count
    ts_ack(&c, 1060, 1066, 1020);
    assert_ne!(lp_state(&c).flag & WITHIN_INF, 0);
    assert_eq!(c.cwnd(), 10);
    c.set(Field::CwndCnt, 9);
    c.cong_control(FLAG_DATA_ACKED, 1, 0, 40_000);
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (10, 9), "no growth within inference");
    // 200 ms later the inference time is over: Reno's growth, slow start here (the
    // indication left ssthresh at 20)
    ts_ack(&c, 1260, 1266, 1220);
    assert_eq!(lp_state(&c).flag & WITHIN_INF, 0, "{:?}", lp_state(&c));
    c.cong_control(FLAG_DATA_ACKED, 1, 0, 40_000);
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (11, 9), "slow start back to ssthresh");
}

#[test]
fn linux_lp_loss_is_reno_s() {
    let c = Conn::new("lp");
    c.start_in_ca(41);
    c.enter_recovery();
    assert_eq!(c.ssthresh(), 20);
    c.set_cwnd(7);
    c.set(Field::PriorCwnd, 41);
    assert_eq!(c.op_undo_cwnd(), 41);
}

// ---- the paper's TCP-LP -------------------------------------------------------------------
// The paper variant against Kuzmanovic & Knightly, "TCP-LP", INFOCOM 2003 (bpf/cc/lp.bpf.c):
// §III-A early congestion indication (ECI) when the smoothed delay exceeds
// d_min + δ (d_max − d_min), δ = 0.15; §III-B reaction: cwnd/2 and an inference
// time-out (itt), a second ECI within itt → the minimum window; no growth during itt.
// Here the delay sample is the smallest RTT of each round (bpf/cc/lp.bpf.c header).

const BASE: u32 = 20_000;

/// An LP flow in congestion avoidance at `w` whose delay range is known: d_min = 20 ms
/// (base), d_max = 40 ms (a round with a full buffer), then a loss (which calibrates the
/// range, bpf/cc/lp.bpf.c) and a few quiet rounds. Threshold: 20 + 0.15 * 20 = 23 ms.
fn calibrated(w: u32) -> Conn {
    let c = Conn::new("lp:paper");
    calibrate(&c, w, |_| 40_000);
    c
}

/// The same on `c`, with the i-th RTT sample of the full-buffer round from `full(i)`.
fn calibrate(c: &Conn, w: u32, full: impl FnMut(u32) -> u32) {
    c.start_in_ca(w);
    for _ in 0..3 {
        c.round(BASE);
    }
    c.set_ca_state(DISORDER); // the full buffer comes with duplicate ACKs
    c.round_with(40_000, full);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(w);
    for _ in 0..4 {
        c.round(BASE);
    }
}

#[test]
fn quiet_rounds_grow_like_reno() {
    let c = calibrated(40);
    let w = c.cwnd();
    for k in 1..=5 {
        c.round(BASE);
        assert_eq!(c.cwnd(), w + k);
    }
}

#[test]
fn an_early_signal_in_open_halves_cwnd_and_leaves_ssthresh_alone() {
    let c = calibrated(40);
    let (w, ss) = (c.cwnd(), c.ssthresh());
    // every sample above the 23 ms threshold; the round's additive increase (+1) comes
    // before the round ends, where the signal is judged
    c.round(30_000);
    assert_eq!(c.cwnd(), (w + 1) / 2, "ECI: cwnd/2");
    assert_eq!(c.ssthresh(), ss, "an ECI is not a loss: ssthresh untouched");
    // no growth during the inference time-out (quiet rounds, < 3 RTT)
    c.round(BASE);
    assert_eq!(c.cwnd(), (w + 1) / 2, "no growth within itt");
}

#[test]
fn a_second_signal_within_the_inference_timeout_drops_to_the_minimum_window() {
    let c = calibrated(40);
    c.round(30_000);
    let half = c.cwnd();
    // the round after a reaction holds the packets sent before it: not judged
    c.round(30_000);
    assert_eq!(c.cwnd(), half);
    c.round(30_000);
    assert_eq!(c.cwnd(), 2, "second ECI within itt: minimum window (2, see lp.bpf.c)");
}

#[test]
fn after_the_inference_timeout_a_signal_halves_again_and_growth_resumes() {
    let c = calibrated(40);
    c.round(30_000);
    let half = c.cwnd();
    advance_us(4 * 30_000); // itt = 3 smoothed RTTs has passed
    let d0 = c.get(Field::Delivered);
    // the ordinary behaviour resumes: slow start back to ssthresh (an ECI left it),
    // then one segment per RTT
    let ss = c.ssthresh();
    assert!(half < ss);
    c.round(BASE);
    let acked = (c.get(Field::Delivered) - d0) as u32;
    assert!(half + acked > ss);
    assert_eq!(c.cwnd(), ss, "slow start up to ssthresh");
    c.round(BASE);
    assert_eq!(c.cwnd(), ss + 1, "then +1 per RTT");
    let w = c.cwnd();
    c.round(30_000);
    assert_eq!(c.cwnd(), (w + 1) / 2, "a first ECI again: cwnd/2, not the minimum");
}

#[test]
fn no_reaction_outside_the_open_state() {
    for state in [DISORDER, CWR, RECOVERY, LOSS] {
        let c = calibrated(40);
        c.set_ca_state(state); // (entering Recovery sets cwnd = pipe + 1: cca_common.h)
        let (w, ss) = (c.cwnd(), c.ssthresh());
        c.set_app_unlimited(false);
        // high-delay rounds fed to the ops that see delay (pkts_acked), not to PRR
        for _ in 0..4 {
            let n = c.cwnd();
            c.set(Field::SndNxt, c.get(Field::SndUna) + n as u64 * 1448);
            for _ in 0..n {
                advance_us(1000);
                c.set(Field::SndUna, c.get(Field::SndUna) + 1448);
                c.pkts_acked(1, 30_000, n);
            }
        }
        assert_eq!((c.cwnd(), c.ssthresh()), (w, ss), "state {state}");
    }
}

#[test]
fn one_late_ack_in_a_round_is_not_a_signal() {
    // a delayed ACK or a scheduling hiccup: one sample of 200 ms among 20 ms ones
    let c = calibrated(40);
    let w = c.cwnd();
    c.round_with(BASE, |i| if i == 5 { 200_000 } else { BASE });
    assert_eq!(c.cwnd(), w + 1);
    // nor does it stretch the delay range: 30 ms rounds (above 20 + 0.15 * (40 - 20))
    // are still signals, as they would not be with d_max = 200 ms
    let w = c.cwnd();
    c.round(30_000);
    assert_eq!(c.cwnd(), (w + 1) / 2, "range stretched by one late ACK");
}

#[test]
fn the_flow_s_own_slow_start_queue_is_not_a_signal_before_the_first_loss() {
    // before a loss d_max says nothing about the buffer: LP starts like Reno
    let c = Conn::new("lp:paper");
    c.set_ssthresh(1000);
    let mut rtt = BASE;
    for _ in 0..5 {
        c.round(rtt);
        // slow start: one segment per acked segment, never a reduction
        assert_eq!(c.cwnd() as u64, 10 + c.get(Field::Delivered));
        rtt += 5_000; // its own queue grows
    }
    assert!(c.cwnd() > 200);
}

#[test]
fn a_loss_epoch_without_a_queue_does_not_shrink_the_delay_range() {
    // Random loss (a lossy access link) ends epochs in which the flow never built a
    // queue: their largest delay is the base RTT plus the host's noise. Such an epoch
    // says nothing about the buffer; were the range refreshed from it, it would shrink
    // to the noise (here 1.5 ms: a threshold 0.2 ms above d_min) and LP, alone on the
    // path, would read every noisy round as early congestion and keep halving a window
    // below the BDP. Calibrated: d_min 20 ms, d_max 40 ms, threshold 23 ms.
    let c = calibrated(40);
    for _ in 0..3 {
        for _ in 0..4 {
            c.round(BASE + 1_500);
        }
        c.enter_recovery(); // a random loss, no queue behind it
        c.exit_reduction();
        c.start_in_ca(40);
    }
    for k in 0..4 {
        let w = c.cwnd();
        c.round(BASE + 2_000); // 22 ms: noise, below the buffer's threshold of 23 ms
        assert!(c.cwnd() >= w, "round {k}: {w} -> {}: noise read as a queue", c.cwnd());
    }
    // the buffer's queue is still a signal
    let w = c.cwnd();
    c.round(BASE + 5_000);
    assert_eq!(c.cwnd(), (w + 1) / 2, "a 5 ms queue above 0.15 of the 20 ms range");
}

/// Share of the link a lone flow of `algo` keeps busy on `path` over `secs` of fluid
/// rounds (slow start from the initial window; a round that overflows the buffer is a
/// loss, recovered in one round to ssthresh). Per round the flow delivers
/// min(cwnd / RTT, rate); the share is weighted by the rounds' durations.
fn lone_utilisation(algo: &str, path: &Path, secs: f64) -> f64 {
    let c = Conn::new(algo);
    let (mut busy, mut total) = (0.0, 0.0);
    while total < secs {
        let w = c.cwnd() as f64;
        let rtt = path.rtt_us(w) as f64 / 1e6;
        if c.round_on(path, 0.0) {
            c.enter_recovery();
            c.exit_reduction();
            c.set_cwnd(c.ssthresh());
        }
        busy += (w / rtt).min(path.rate_pps) * rtt;
        total += rtt;
    }
    busy / (total * path.rate_pps)
}

#[test]
fn alone_on_a_small_buffer_lp_keeps_most_of_the_link() {
    // 100 Mbit/s, 20 ms (BDP 165), 30 packets of buffer (0.18 BDP), no cross traffic.
    // The delay range is the buffer's 3.6 ms; an ECI fires when LP's own queue passes
    // 0.15 of it (4.5 packets) and halves cwnd from ~170 to ~85, half the BDP, from where
    // it grows back by one segment per RTT (after itt): the link is busy ~3/4 of the
    // time. Reno on the same path halves at a full buffer (195 -> 97) and grows back to
    // the BDP in ~70 rounds.
    let path = Path::new(100e6, BASE, 30);
    let lp = lone_utilisation("lp:paper", &path, 30.0);
    let reno = lone_utilisation("reno", &path, 30.0);
    assert!((0.7..0.85).contains(&lp), "LP alone uses {lp:.2} of the link");
    assert!(reno > lp && reno < 0.95, "Reno alone {reno:.2}, LP {lp:.2}");
    assert!(lp > 0.8 * reno, "LP alone {lp:.2} vs Reno {reno:.2}");
}

/// lone_utilisation on a path that also loses each segment with probability
/// 1/`one_in` (a fixed pseudo-random sequence) and delays every sample of a round by
/// 0-`noise_us` more (a fixed pattern over the rounds: the host's timing noise, which
/// shifts a whole round where per-ACK noise would leave its minimum alone).
fn lone_utilisation_lossy(algo: &str, path: &Path, secs: f64, one_in: u64, noise_us: u32)
                          -> f64 {
    let c = Conn::new(algo);
    let (mut busy, mut total) = (0.0, 0.0);
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut rounds = 0u32;
    while total < secs {
        let w = c.cwnd();
        let rtt = path.rtt_us(w as f64);
        let mut lost = path.overflows(w as f64);
        for _ in 0..w {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            lost |= (seed >> 33) % one_in == 0;
        }
        rounds += 1;
        c.round(rtt + (rounds * 7919 % 11) * noise_us / 10);
        if lost {
            c.enter_recovery();
            c.exit_reduction();
            c.set_cwnd(c.ssthresh());
        }
        let rtt_s = rtt as f64 / 1e6;
        busy += (w as f64 / rtt_s).min(path.rate_pps) * rtt_s;
        total += rtt_s;
    }
    busy / (total * path.rate_pps)
}

#[test]
fn alone_with_random_loss_lp_keeps_its_own_sawtooth() {
    // The reference kernel's verification path: 2 Mbit/s, 80 ms (BDP 13.2 segments),
    // a one-BDP buffer (13 packets, 79 ms of delay range), 0.2 % random loss, 0-2 ms of
    // host noise per round, ten minutes. Alone, LP's early signals come from its own
    // queue passing 0.15 of the buffer's delay (2 packets): it halves from ~15 to ~7.6
    // segments, waits three RTTs and grows back, busy about 3/4 of the time; Reno,
    // halving only at the random losses, keeps the link nearly full. A range refreshed
    // from the epochs that random losses end would shrink to LP's early-signal level
    // and then to the noise, and hold LP at a few segments (0.16 of the link).
    let path = Path::new(2e6, 80_000, 13);
    let lp = lone_utilisation_lossy("lp:paper", &path, 600.0, 500, 2_000);
    let reno = lone_utilisation_lossy("reno", &path, 600.0, 500, 2_000);
    assert!(reno > 0.9 && reno < 1.0, "Reno alone {reno:.2}");
    assert!(lp > 0.7 && lp < reno, "LP alone {lp:.2} vs Reno {reno:.2}");
}

/// One round of delayed ACKs: every ACK acknowledges two segments (the receiver's
/// normal case, RFC 1122/5681), spread over `rtt_us`, each carrying `rtt_us`.
fn delayed_ack_round(c: &Conn, rtt_us: u32) {
    delayed_ack_round_with(c, rtt_us, |_| rtt_us)
}

/// The same with the i-th ACK's RTT sample from `rtt_of(i)`.
fn delayed_ack_round_with(c: &Conn, rtt_us: u32, mut rtt_of: impl FnMut(u32) -> u32) {
    c.transmit();
    let n = (c.get(Field::PacketsOut) as u32 / 2).max(1);
    for i in 0..n {
        advance_us((rtt_us / n) as u64);
        c.ack(Ack::new(2, rtt_of(i)));
    }
}

#[test]
fn its_own_segments_serialization_is_not_a_signal_at_a_low_rate() {
    // 10 Mbit/s: a 1514-byte frame takes 1.2 ms to send. A one-segment ACK (quick ACKs
    // at the start, a retransmission) carries base + 1 frame time; a delayed ACK of two
    // segments sent back to back carries base + 2 frame times, with no queue at all.
    // With a 4-packet buffer the delay range is 4.8 ms and the threshold 0.15 of it,
    // 0.7 ms: were the one-segment samples the flow's d_min, every delayed-ACK round
    // would read as congestion and hold the window at the minimum for good.
    let (frame, base) = (1_200, BASE);
    let c = Conn::new("lp:paper");
    c.start_in_ca(12);
    for _ in 0..3 {
        c.round(base + frame); // one-segment ACKs
    }
    delayed_ack_round(&c, base + 2 * frame);
    c.set_ca_state(DISORDER); // a full buffer: 4 packets queued
    delayed_ack_round(&c, base + 2 * frame + 4 * frame);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(8);
    // the path's BDP is 16.5 segments: a window of 8-14 queues nothing
    for k in 0..12 {
        let w = c.cwnd();
        delayed_ack_round(&c, base + 2 * frame);
        assert!(c.cwnd() >= w, "round {k}: {w} -> {} without any queue", c.cwnd());
    }
    assert!(c.cwnd() >= 12, "grew to {}", c.cwnd());
    // a real queue (4 frames beyond the pair) is still a signal (these rounds need not
    // line up with the algorithm's: two of them contain one whole round of its)
    let w = c.cwnd();
    delayed_ack_round(&c, base + 2 * frame + 4 * frame);
    delayed_ack_round(&c, base + 2 * frame + 4 * frame);
    assert!(c.cwnd() <= (w + 2) / 2, "a 4.8 ms queue: ECI, {w} -> {}", c.cwnd());
}

#[test]
fn the_delay_range_reaches_the_queue_a_slow_start_burst_builds() {
    // 100 Mbit/s, 20 ms, 30 packets (3.6 ms): in slow start each round's burst queues at
    // the bottleneck and drains before the next, so a round's first ACK sees little of
    // it and its last ACK the whole of it. The burst that overflows the buffer (the
    // first loss) sets the delay range: d_max is the full buffer's delay, not the
    // smallest sample of that round, else the range is a fraction of the buffer and
    // 0.15 of it lies within the delay of the flow's own back-to-back pair of segments
    // and the host's noise (a few hundred us): every round would read as congestion.
    let c = Conn::new("lp:paper");
    c.set_ssthresh(1000);
    for q_last in [300, 600, 1_200, 2_400] {
        // samples rise through the round from 10 % of its burst queue to all of it
        c.round_with(BASE, |i| BASE + q_last / 10 + (q_last * 9 / 10) * i / 40.max(i + 1));
    }
    c.set_ca_state(DISORDER);
    // the overflowing burst: its first ACK already waits behind 1.2 ms of the previous
    // round's queue, its last behind the full 3.6 ms
    c.round_with(BASE, |i| BASE + 1_200 + 2_400 * i.min(40) / 40);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(30);
    // a small window now, pairs of segments with 0.3 ms of their own delay and noise
    for k in 0..8 {
        let w = c.cwnd();
        c.round(BASE + 300);
        assert!(c.cwnd() >= w, "round {k}: {w} -> {} with 0.3 ms of delay", c.cwnd());
    }
    // a queue of a third of the buffer (1.2 ms) is an early congestion indication
    let w = c.cwnd();
    c.round(BASE + 1_200);
    c.round(BASE + 1_200);
    assert!(c.cwnd() <= (w + 2) / 2, "1.2 ms of queue: ECI, {w} -> {}", c.cwnd());
}

#[test]
fn the_signal_threshold_is_d_min_plus_delta_times_the_range() {
    // §III-A: an ECI iff d > d_min + δ (d_max − d_min); δ = 0.15 is 154/1024 here, so
    // with d_min 20 ms and d_max 40 ms the threshold is 20 ms + 20 ms · 154/1024 = 23.007 ms
    let thresh = BASE + (40_000 - BASE) * 154 / 1024;
    assert_eq!(thresh, 23_007);
    let c = calibrated(40);
    let w = c.cwnd();
    c.round(thresh);
    assert_eq!(c.cwnd(), w + 1, "d at the threshold: no signal");
    let w = c.cwnd();
    c.round(thresh + 1);
    assert_eq!(c.cwnd(), (w + 1) / 2, "d 1 us above the threshold: ECI");
}

#[test]
fn signals_need_a_delay_range_of_at_least_a_millisecond() {
    // below 1 ms the range is timer noise and is not believed (bpf/cc/lp.bpf.c); a round
    // 0.9 ms above d_min is above d_min + 0.15 of either range (150 us)
    for (d_max, eci) in [(BASE + 1_000, true), (BASE + 999, false)] {
        let c = Conn::new("lp:paper");
        calibrate(&c, 40, |_| d_max);
        let w = c.cwnd();
        c.round(BASE + 900);
        let want = if eci { (w + 1) / 2 } else { w + 1 };
        assert_eq!(c.cwnd(), want, "range {} us", d_max - BASE);
    }
}

/// A calibrated flow after an ECI at the end of a 30 ms round, with ssthresh `ss`; returns
/// it and the end of the inference time-out, 3 smoothed RTTs after the signal.
fn after_a_signal(ss: u32) -> (Conn, u64) {
    let c = calibrated(40);
    c.set_ssthresh(ss);
    let w = c.cwnd();
    c.round(30_000);
    assert_eq!(c.cwnd(), (w + 1) / 2, "the ECI");
    let itt_end = now_us() + 3 * c.srtt_us() as u64;
    (c, itt_end)
}

#[test]
fn growth_pauses_for_three_smoothed_rtts_after_a_signal() {
    // §III-B: no growth during the inference time-out (itt = 3 srtt, bpf/cc/lp.bpf.c);
    // then the ordinary behaviour resumes, the acked segments counted from the reduction
    // as after any window reduction (tcp_init_cwnd_reduction: snd_cwnd_cnt = 0): here
    // congestion avoidance (ssthresh below the window), one segment per cwnd acked
    let (c, itt_end) = after_a_signal(10);
    let w = c.cwnd();
    assert!(w > 10);
    set_now_us(itt_end - 1);
    c.ack(Ack::new(1, BASE));
    assert_eq!((c.cwnd(), c.get(Field::CwndCnt)), (w, 0), "an ACK within itt does not count");
    set_now_us(itt_end);
    c.ack(Ack::new(1, BASE)); // at the time-out's end: counts
    c.ack_segments(w - 2, 1, BASE);
    assert_eq!(c.cwnd(), w, "not before cwnd acked segments after itt");
    c.ack_segments(1, 1, BASE);
    assert_eq!(c.cwnd(), w + 1, "one segment after cwnd acked segments");
}

#[test]
fn a_signal_as_the_inference_timeout_ends_halves_again() {
    // §III-B: a second ECI *within* itt sets the minimum window; the round that ends
    // exactly when itt does is judged after it: a first ECI again, cwnd/2. One
    // microsecond earlier it is still within.
    for (early, want_min) in [(0u64, false), (1, true)] {
        let (c, itt_end) = after_a_signal(40);
        let h = c.cwnd();
        c.round(30_000); // the round after a reaction: not judged
        assert_eq!(c.cwnd(), h);
        let end = itt_end - early;
        let n = c.next_round_acks() as u64;
        let step = (end - now_us()) / n;
        set_now_us(end - step * n);
        c.round_with((step * n) as u32, |_| 30_000); // its last ACK arrives at `end`
        assert_eq!(now_us(), end);
        let want = if want_min { 2 } else { h / 2 };
        assert_eq!(c.cwnd(), want, "ECI {early} us before itt's end");
    }
}

#[test]
fn the_delay_range_ends_at_the_round_s_second_largest_sample_whatever_their_order() {
    // d_max comes from each round's second-largest sample (bpf/cc/lp.bpf.c): 60 ms and
    // 40 ms in one full-buffer round give d_max = 40 ms and a threshold of 23 ms, so a
    // 25 ms round is an ECI (with 60 ms the threshold would be 26 ms) and a 22 ms round is
    // not (were d_max the round's minimum, 20 ms, the 22 ms round would itself stretch
    // the range to 2 ms, and 22 > 20 + 0.15 * 2)
    for order in [[60_000, 40_000], [40_000, 60_000]] {
        let c = Conn::new("lp:paper");
        calibrate(&c, 40, |i| match i {
            3 => order[0],
            7 => order[1],
            _ => BASE,
        });
        let w = c.cwnd();
        c.round(22_000);
        assert_eq!(c.cwnd(), w + 1, "samples {order:?}: 22 ms");
        let w = c.cwnd();
        c.round(25_000);
        assert_eq!(c.cwnd(), (w + 1) / 2, "samples {order:?}: 25 ms");
    }
}

#[test]
fn each_round_s_second_largest_sample_is_its_own_not_a_running_one() {
    // The top two samples are kept per round: a late ACK of an earlier round must not
    // make a later round's single late ACK its "second-largest" sample. Two rounds of
    // 30 ms, each with one late ACK (100 ms, then 60 ms): d_max = 30 ms, threshold
    // 20 + 0.15 * 10 = 21.5 ms, and a 24 ms round is an ECI (carried over, the 100 ms
    // sample would let the 60 ms one count: d_max 60 ms, threshold 26 ms, no ECI)
    let c = Conn::new("lp:paper");
    c.start_in_ca(40);
    for _ in 0..3 {
        c.round(BASE);
    }
    c.set_ca_state(DISORDER);
    c.round_with(30_000, |i| if i == 5 { 100_000 } else { 30_000 });
    c.round_with(30_000, |i| if i == 5 { 60_000 } else { 30_000 });
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(40);
    for _ in 0..4 {
        c.round(BASE);
    }
    let w = c.cwnd();
    c.round(24_000);
    assert_eq!(c.cwnd(), (w + 1) / 2, "a 24 ms round above the 21.5 ms threshold");
}

/// An LP flow whose receiver delays its ACKs, calibrated like `calibrate` (d_min 20 ms)
/// with a full-buffer round of samples `full(i)`, and in congestion avoidance at 40.
fn calibrated_with_delayed_acks(full: impl FnMut(u32) -> u32) -> Conn {
    let c = Conn::new("lp:paper");
    c.start_in_ca(40);
    for _ in 0..3 {
        delayed_ack_round(&c, BASE);
    }
    c.set_ca_state(DISORDER);
    delayed_ack_round_with(&c, 40_000, full);
    c.enter_recovery();
    c.exit_reduction();
    c.start_in_ca(40);
    c
}

#[test]
fn with_delayed_acks_too_the_range_ends_at_each_round_s_second_largest_sample() {
    // as above, for the samples of two-segment ACKs: 60 and 40 ms in the full-buffer round
    // give d_max = 40 ms; a late ACK in a round (an ACK held for its timer) does not
    // stretch it, neither in one round nor over several (each round is its own)
    let c = calibrated_with_delayed_acks(|i| match i {
        3 => 60_000,
        5 => 40_000,
        _ => BASE,
    });
    for k in 0..4 {
        delayed_ack_round_with(&c, BASE, |i| if k % 2 == 0 && i == 4 { 200_000 } else { BASE });
    }
    let w = c.cwnd();
    delayed_ack_round(&c, 22_000);
    delayed_ack_round(&c, 22_000);
    assert!(c.cwnd() >= w, "22 ms < 20 + 0.15 * 20: no ECI, {w} -> {}", c.cwnd());
    let w = c.cwnd();
    delayed_ack_round(&c, 25_000);
    delayed_ack_round(&c, 25_000);
    assert!(c.cwnd() <= (w + 2) / 2, "25 ms > 20 + 0.15 * 20: ECI, {w} -> {}", c.cwnd());
}

#[test]
fn a_longer_delay_widens_the_range_at_once() {
    // d_max is the largest sample of this and the previous loss epoch: a 100 ms round now
    // (with duplicate ACKs: Disorder, no reaction) raises it before any loss, so the
    // threshold is 20 + 0.15 * 80 = 32 ms: 30 ms is no longer a signal, 33 ms is
    let c = calibrated(40);
    c.set_ca_state(DISORDER);
    c.round(100_000);
    c.set_ca_state(OPEN);
    let w = c.cwnd();
    c.round(30_000);
    assert_eq!(c.cwnd(), w + 1, "30 ms < 32 ms");
    let w = c.cwnd();
    c.round(33_000);
    assert_eq!(c.cwnd(), (w + 1) / 2, "33 ms > 32 ms");
}

#[test]
fn once_acks_are_delayed_a_round_of_single_segment_acks_is_not_judged() {
    // an ACK of one segment carries one frame time less than a delayed ACK of two
    // (bpf/cc/lp.bpf.c): once the receiver delays its ACKs a round without one is not
    // compared with the range at all, however long its samples
    let c = calibrated_with_delayed_acks(|_| 40_000);
    for _ in 0..4 {
        delayed_ack_round(&c, BASE);
    }
    let w = c.cwnd();
    for _ in 0..3 {
        c.round(30_000);
    }
    assert!(c.cwnd() >= w, "single-segment rounds judged: {w} -> {}", c.cwnd());
    let w = c.cwnd();
    delayed_ack_round(&c, 30_000);
    delayed_ack_round(&c, 30_000);
    assert!(c.cwnd() <= (w + 2) / 2, "the same delay on delayed ACKs: ECI, {w} -> {}", c.cwnd());
}

#[test]
fn samples_of_a_lone_outstanding_segment_are_not_delay_samples() {
    // with one segment in flight the receiver holds its ACK for the delayed-ACK timer
    // (bpf/cc/lp.bpf.c): such a sample is not used; with two in flight it is. Seen
    // through d_min: a 10 ms sample that counts lowers it, and 20 ms rounds are then
    // signals (20 > 10 + 0.15 * (40 - 10) = 14.5 ms)
    for (in_flight, used) in [(1u64, false), (2, true)] {
        let c = calibrated(40);
        let out = c.get(Field::PacketsOut);
        c.set(Field::PacketsOut, in_flight - 1); // after this ACK
        c.pkts_acked(1, 10_000, in_flight as u32);
        c.set(Field::PacketsOut, out);
        let w = c.cwnd();
        c.round(BASE);
        c.round(BASE);
        if used {
            assert!(c.cwnd() < w, "{in_flight} in flight: the sample counts, {w} -> {}", c.cwnd());
        } else {
            assert_eq!(c.cwnd(), w + 2, "{in_flight} in flight: not a sample");
        }
    }
}

#[test]
fn a_second_loss_before_any_round_ends_keeps_the_delay_range() {
    // a time-out during the recovery of a loss: no round ended in between, the epoch
    // between the two losses saw nothing, and d_max stays the last epoch's 40 ms
    let c = Conn::new("lp:paper");
    c.start_in_ca(40);
    for _ in 0..3 {
        c.round(BASE);
    }
    c.set_ca_state(DISORDER);
    c.round(40_000);
    c.enter_recovery();
    c.enter_loss();
    c.exit_reduction();
    c.start_in_ca(40);
    for _ in 0..4 {
        c.round(BASE);
    }
    // (a round's own samples enter d_max before it is judged: 22 ms is below 23 ms with
    // the 40 ms range, above the threshold of a range the 22 ms round would make itself)
    let w = c.cwnd();
    c.round(22_000);
    assert!(c.cwnd() >= w, "22 ms < 20 + 0.15 * 20: no ECI, {w} -> {}", c.cwnd());
    // (after the time-out the harness's rounds need not line up with the algorithm's:
    // the signal may come an ACK or two into the round)
    let w = c.cwnd();
    c.round(30_000);
    assert!(c.cwnd() <= (w + 2) / 2, "30 ms > 20 + 0.15 * 20: ECI, {w} -> {}", c.cwnd());
}

#[test]
fn any_positive_rtt_sample_is_a_delay_sample_and_a_zero_one_does_not_erase_d_min() {
    // §III-A: d_min is the smallest delay the flow has seen. A 1 us sample is one (the
    // smallest the kernel's microsecond clock gives): d_min = 1 us, the threshold
    // 1 + 0.15 (40 ms - 1 us), about 6 ms, and a 20 ms round is then a signal.
    let c = calibrated(40);
    let w = c.cwnd();
    c.round_with(BASE, |i| if i == 5 { 1 } else { BASE });
    assert_eq!(c.cwnd(), w + 1, "the round of the 1 us sample: d = d_min, no signal");
    let w = c.cwnd();
    c.round(BASE);
    assert_eq!(c.cwnd(), (w + 1) / 2, "20 ms > 1 us + 0.15 * (40 ms - 1 us): ECI");
    // An RTT of 0 us is below the clock's resolution; read as no sample (the kernel's
    // "none" is -1) or as a d_min of 0, a 30 ms round is a signal either way (above
    // 20 + 0.15 * 20 = 23 ms, and above 0 + 0.15 * 40 = 6 ms): it must not leave d_min
    // unset, to be taken from the next round's own samples.
    let c = calibrated(40);
    let w = c.cwnd();
    c.round_with(BASE, |i| if i == 5 { 0 } else { BASE });
    assert_eq!(c.cwnd(), w + 1);
    let w = c.cwnd();
    c.round(30_000);
    assert_eq!(c.cwnd(), (w + 1) / 2, "30 ms after a 0 us sample: ECI");
}

#[test]
fn the_inference_timeout_is_three_smoothed_rtts_at_the_smallest_srtt_too() {
    // §III-B, itt = 3 srtt (bpf/cc/lp.bpf.c) for a smoothed RTT of 1 us, the smallest the
    // kernel keeps (tp->srtt_us in 1/8 us: a host-local path's run of 1 us samples).
    // The signal comes on a round's last ACK, one without an RTT sample, so srtt is
    // the 1 us set just before it; growth (slow start: ssthresh is above cwnd/2)
    // pauses for 3 us and resumes at the 3rd.
    let c = calibrated(40);
    let w = c.cwnd();
    let n = c.next_round_acks();
    c.round_then(30_000, |i| if i + 1 == n { u32::MAX } else { 30_000 }, |c| {
        c.set(Field::SrttUs, 1)
    });
    assert_eq!(c.srtt_us(), 1);
    let h = c.cwnd();
    assert_eq!(h, (w + 1) / 2, "the ECI");
    assert!(h < c.ssthresh());
    let itt_end = now_us() + 3;
    set_now_us(itt_end - 1);
    c.ack(Ack::new(1, u32::MAX));
    assert_eq!(c.cwnd(), h, "within itt: no growth");
    set_now_us(itt_end);
    c.ack(Ack::new(1, u32::MAX));
    assert_eq!(c.cwnd(), h + 1, "3 srtt after the signal: slow start again");
    // below 1 us (the kernel's tp->srtt_us of 1..7 eighths reads as 0 us) the time-out
    // still starts with the signal: the signal's own ACK does not grow the window
    let c = calibrated(40);
    let w = c.cwnd();
    let n = c.next_round_acks();
    c.round_then(30_000, |i| if i + 1 == n { u32::MAX } else { 30_000 }, |c| {
        c.set(Field::SrttUs, 0)
    });
    assert_eq!(c.srtt_us(), 0);
    assert_eq!(c.cwnd(), (w + 1) / 2, "the ECI, and no growth on its ACK");
}
