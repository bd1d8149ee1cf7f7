//! BBRv3 and BBRv2 through the packet simulation (ccarena_cc_harness::sim): the state
//! machine's transitions, each checked on the ACK that makes it against the condition
//! the draft gives, the control parameters checked on every ACK against their formulas,
//! and what the model does on a path: the rate it finds, the queue it keeps, ProbeRTT's
//! schedule, its response to random loss, two flows sharing a bottleneck, ECN.
//!   [v3] draft-ietf-ccwg-bbr-06; [v2] draft-cardwell-iccrg-bbr-congestion-control-02.
mod bbr_util;

use bbr_util::*;
use ccarena_cc_harness::bbr::{State, View, INF};
use ccarena_cc_harness::sim::{Net, Sim};
use ccarena_cc_harness::*;

const ALGOS: [&str; 2] = ["bbr3", "bbr2"];

/// One state change of flow 0, with the views on either side of the ACK that made it.
struct Transition {
    t_us: u64,
    from: View,
    to: View,
    inflight: u32,
    cwnd: u32,
}

/// Run `dur_s` seconds; check the control parameters after every event; collect the
/// state changes.
fn monitor(s: &mut Sim, algo: &str, dur_s: f64) -> Vec<Transition> {
    let mut out = vec![];
    let mut prev = s.conn(0).bbr();
    let init_cwnd = 10;
    let end = s.now_ns() + (dur_s * 1e9) as u64;
    s.run_checked(end, |s| {
        let c = s.conn(0);
        let v = c.bbr();
        let (cwnd, pacing) = (c.cwnd() as u64, c.get(Field::PacingRate));
        // the gains of the state ([v3] §5.6.1)
        if v.state != State::None {
            assert_eq!((v.pacing_gain, v.cwnd_gain), gains(algo, v.state), "{algo} {:?}", v.state);
        }
        if v.full_bw_reached {
            // SetPacingRate(): gain × bw × 0.99 on every ACK once the pipe was full
            // (a restart from idle paces at 1.0 × bw until the next ACK)
            let want = pacing_of(&v, v.pacing_gain);
            assert!((pacing as f64 - want).abs() <= want * 1e-3 + 1.0,
                    "{algo} {:?}: pacing {pacing}, gain {} × bw {:.0} pps → {want:.0}",
                    v.state, v.pacing_gain, pps(v.bw));
            // SetCwnd(): never above max_inflight (cwnd_gain × BDP + extra_acked)
            let cap = max_inflight(&v, pacing, init_cwnd);
            assert!(cwnd <= cap.max(4), "{algo} {:?}: cwnd {cwnd} above max_inflight {cap}", v.state);
        }
        // BoundCwndForModel() and BoundCwndForProbeRTT(), [v3] §5.6.4.5, §5.6.4.7
        if v.state == State::ProbeRtt {
            let half = bdp_multiple(&v, v.bw, 500, init_cwnd).max(4);
            assert!(cwnd <= half, "{algo}: ProbeRTT cwnd {cwnd} above max(BDP/2, 4) = {half}");
        }
        if matches!(v.state, State::Cruise | State::ProbeRtt) {
            assert!(cwnd <= with_headroom(&v).max(4), "{algo} {:?}: cwnd {cwnd} above 0.85 inflight_longterm", v.state);
        } else if v.state.in_probe_bw() && v.inflight_longterm != INF {
            assert!(cwnd <= v.inflight_longterm.max(4), "{algo} {:?}: cwnd {cwnd} above inflight_longterm", v.state);
        }
        if v.inflight_shortterm != INF {
            assert!(cwnd <= v.inflight_shortterm.max(4), "{algo}: cwnd {cwnd} above inflight_shortterm");
        }
        if v.state != prev.state {
            out.push(Transition { t_us: s.now_us(), from: prev, to: v, inflight: s.flows[0].inflight(),
                                  cwnd: cwnd as u32 });
        }
        prev = v;
        true
    });
    out
}

/// Every transition of a long run on a 20 Mbit/s, 20 ms path with a buffer of two
/// BDPs, checked against its condition.
#[test]
fn every_transition_happens_on_its_condition_and_controls_follow_the_model() {
    for algo in ALGOS {
        let mut s = one_flow(algo, 20e6, 20_000, 66);
        let ts = monitor(&mut s, algo, 24.0);
        let mut seen = std::collections::HashSet::new();
        for t in &ts {
            let (a, b) = (&t.from, &t.to);
            let bdp = bdp_multiple(b, b.bw, 1000, 10);
            // Startup -> Drain -> DOWN -> CRUISE may pass on one ACK: each step's
            // condition holds on it
            let path: Vec<State> = match (a.state, b.state) {
                (State::Startup, State::Down) => vec![State::Startup, State::Drain, State::Down],
                (State::Startup, State::Cruise) => vec![State::Startup, State::Drain, State::Down, State::Cruise],
                (State::Drain, State::Cruise) => vec![State::Drain, State::Down, State::Cruise],
                (x, y) => vec![x, y],
            };
            for w in path.windows(2) {
            seen.insert((format!("{:?}", w[0]), format!("{:?}", w[1])));
            if w[1] == State::ProbeRtt {
                seen.insert(("any".into(), "ProbeRtt".into()));
            }
            match (w[0], w[1]) {
                (State::Startup, State::Drain) => {
                    // [v3] §5.3.1.2: the third round without 25 % growth (no loss here)
                    assert!(b.full_bw_reached, "{algo}: Drain without a full pipe");
                    assert_eq!(b.full_bw_count, 3, "{algo}: Startup left after {} flat rounds", b.full_bw_count);
                }
                (State::Drain, State::Down) => {
                    // [v3] §5.3.2: in-flight data fits the BDP, or 3 rounds passed (v3)
                    let rounds = b.round_count - b.drain_start_round;
                    assert!(t.inflight as u64 <= bdp + 6 || (algo == "bbr3" && rounds > 3),
                            "{algo}: Drain left with {} in flight, BDP {bdp}, after {rounds} rounds", t.inflight);
                }
                (State::Down, State::Cruise) => {
                    // IsTimeToCruise(): the queue drained, headroom left
                    assert!(t.inflight as u64 <= bdp_multiple(b, b.max_bw, 1000, 10).max(6),
                            "{algo}: CRUISE with {} in flight, BDP {bdp}", t.inflight);
                    assert!(t.inflight as u64 <= with_headroom(b), "{algo}: CRUISE without headroom");
                }
                (State::Down | State::Cruise, State::Refill) => {
                    // IsTimeToProbeBW(): T_bbr = 2..3 s of wall clock, or T_reno rounds
                    let waited = t.t_us - a.cycle_stamp;
                    let by_time = t.t_us >= a.cycle_stamp + a.bw_probe_wait;
                    let by_rounds = b.rounds_since_probe_up >= bdp.min(63);
                    assert!(by_time || by_rounds, "{algo}: REFILL after {waited} µs of {} and {} rounds",
                            a.bw_probe_wait, b.rounds_since_probe_up);
                    assert_eq!(b.inflight_shortterm, INF, "{algo}: REFILL keeps the short-term model");
                }
                (State::Refill, State::Up) => {
                    // one round of REFILL
                    assert!(b.round_count > a.round_count, "{algo}: UP within REFILL's round");
                    assert!(b.is_bw_probe_sample, "{algo}: UP's samples are probe samples");
                }
                (State::Up, State::Down) => {
                    if algo == "bbr3" {
                        // IsTimeToGoDown(): a plateau (full_bw_now) or a precautionary end
                        assert!(a.full_bw_now || b.full_bw_now || a.prev_probe_too_high || b.prev_probe_too_high,
                                "{algo}: UP ended without a plateau or excess loss");
                    } else {
                        // [v2] §4.3.3.4: a min_rtt in UP and in-flight > 1.25 BDP (or loss)
                        let q = bdp_multiple(b, b.max_bw, 1250, 10) + 2;
                        assert!(t.inflight as u64 > q.min(t.inflight as u64) || b.prev_probe_too_high,
                                "{algo}: UP ended at {} in flight (1.25 BDP {q})", t.inflight);
                        assert!(t.t_us > a.cycle_stamp + a.min_rtt || b.prev_probe_too_high);
                    }
                }
                (x, State::ProbeRtt) => {
                    // [v3] §5.3.4.3: 5 s without a lower min RTT sample
                    assert!(x != State::ProbeRtt);
                    assert!(t.t_us > a.probe_rtt_min_stamp + 5_000_000,
                            "{algo}: ProbeRTT {} µs after the last min RTT", t.t_us - a.probe_rtt_min_stamp);
                }
                (State::ProbeRtt, y) => {
                    // 200 ms at the reduced window and a round; then ProbeBW (pipe was full)
                    assert!(a.probe_rtt_done_stamp > 0 && t.t_us > a.probe_rtt_done_stamp,
                            "{algo}: ProbeRTT left before its 200 ms");
                    assert_eq!(y, State::Cruise, "{algo}: ProbeRTT exits to CRUISE when the pipe was full");
                }
                (x, y) => panic!("{algo}: transition {x:?} -> {y:?}"),
            }
            }
        }
        for want in [("Startup", "Drain"), ("Drain", "Down"), ("Down", "Cruise"), ("Cruise", "Refill"),
                     ("Refill", "Up"), ("Up", "Down"), ("any", "ProbeRtt"), ("ProbeRtt", "Cruise")] {
            assert!(seen.contains(&(want.0.to_string(), want.1.to_string())),
                    "{algo}: no {} -> {} in 24 s (saw {seen:?})", want.0, want.1);
        }
    }
}

/// Delivered segments of flow `i` per second of link capacity, from `from_s` to `to_s`
/// of simulated time after now, and the mean RTT sample (µs) over it.
fn share(s: &mut Sim, i: usize, secs: f64) -> (f64, f64) {
    let (d0, n0, r0) = (s.flows[i].delivered(), s.flows[i].rtt_n, s.flows[i].rtt_sum_us);
    s.run_for_us((secs * 1e6) as u64);
    let f = &s.flows[i];
    ((f.delivered() - d0) as f64 / secs / s.net.pps(), (f.rtt_sum_us - r0) as f64 / (f.rtt_n - n0).max(1) as f64)
}

/// Startup finds the bottleneck: [v3] Appendix, "Exiting STARTUP on Bandwidth Plateau":
/// max_bw within 2 % of the link's rate once the flow is in ProbeBW.
#[test]
fn startup_measures_the_bottleneck_rate_within_two_percent() {
    for algo in ALGOS {
        for (rate, rtt) in [(10e6, 40_000), (50e6, 10_000)] {
            let mut s = one_flow(algo, rate, rtt, 1000);
            assert!(run_to_state(&mut s, State::Cruise, 3_000_000), "{algo}: no ProbeBW in 3 s");
            let v = s.conn(0).bbr();
            let err = (pps(v.max_bw) - s.net.pps()).abs() / s.net.pps();
            assert!(err < 0.02, "{algo} at {rate}: max_bw {:.0} pps, the link {:.0}", pps(v.max_bw), s.net.pps());
            // the min RTT is the path's: between the handshake's (the propagation delay,
            // the simulation's initial srtt) and a data packet's (plus one frame's
            // serialization)
            let data = rtt as f64 + s.net.frame_ns() as f64 / 1e3;
            assert!(v.min_rtt >= rtt && v.min_rtt as f64 <= data + 1.0, "{algo}: min_rtt {} for a path of {rtt}..{data}", v.min_rtt);
        }
    }
}

/// A lone flow through a deep drop-tail buffer (30 BDPs): BBR keeps the RTT near the
/// base RTT (its in-flight data is bounded by a small multiple of the BDP) and the link
/// busy; CUBIC fills the buffer.
#[test]
fn a_deep_buffer_stays_nearly_empty_where_cubic_fills_it() {
    let base = 20_000.0;
    let mut cubic = one_flow("cubic", 20e6, 20_000, 1000);
    cubic.run_for_us(5_000_000);
    let (_, cubic_rtt) = share(&mut cubic, 0, 15.0);
    assert!(cubic_rtt > 5.0 * base, "cubic's mean RTT {cubic_rtt:.0} µs");
    for algo in ALGOS {
        let mut s = one_flow(algo, 20e6, 20_000, 1000);
        s.run_for_us(5_000_000);
        let (got, rtt) = share(&mut s, 0, 15.0);
        assert!(rtt < 1.5 * base, "{algo}: mean RTT {rtt:.0} µs over a base of {base}");
        assert!(got > 0.9, "{algo}: {got:.3} of the link");
        assert_eq!(s.drops, 0, "{algo}: drops in a buffer of 30 BDPs");
    }
}

/// The loss threshold ([v3] §2.8, §5.3.3.8.3): random loss of 1 % keeps most of the
/// rate (BBR is designed to tolerate 1 % per round trip), 5 % (above the 2 % threshold)
/// makes it back off; CUBIC at 1 % gets a few percent (Mathis et al. 1997: 1.22 MSS /
/// (RTT √p), 7 % of this link). 50 Mbit/s, 40 ms, a buffer of one BDP.
#[test]
fn one_percent_random_loss_keeps_the_rate_five_percent_backs_off() {
    let run = |algo: &str, loss: f64| {
        let mut net = Net::new(50e6, 165);
        net.loss = loss;
        net.seed = 11;
        let mut s = Sim::new(net);
        s.add_flow(algo, 40_000);
        s.run_for_us(5_000_000);
        share(&mut s, 0, 15.0).0
    };
    let cubic = run("cubic", 0.01);
    assert!(cubic < 0.2, "cubic at 1 %: {cubic:.3} of the link");
    let (one, five) = (run("bbr3", 0.01), run("bbr3", 0.05));
    assert!(one > 0.6, "bbr3 at 1 % loss: {one:.3} of the link");
    assert!(one > 3.0 * cubic, "bbr3 at 1 %: {one:.3}, cubic {cubic:.3}");
    assert!(five < 0.5 * one, "bbr3 at 5 %: {five:.3}, at 1 %: {one:.3}");
}

/// Two bbr3 flows, the second starting 3 s after the first on a 20 Mbit/s, 20 ms path:
/// within 30 s they share the link fairly (Jain's index over the last 5 s).
#[test]
fn two_bbr3_flows_converge_to_a_fair_share() {
    let mut s = Sim::new(Net::new(20e6, 100));
    s.add_flow("bbr3", 20_000);
    s.run_for_us(3_000_000);
    s.add_flow("bbr3", 20_000);
    s.run_for_us(25_000_000);
    let (d0, d1) = (s.flows[0].delivered(), s.flows[1].delivered());
    s.run_for_us(5_000_000);
    let (x, y) = ((s.flows[0].delivered() - d0) as f64, (s.flows[1].delivered() - d1) as f64);
    let jain = (x + y).powi(2) / (2.0 * (x * x + y * y));
    assert!(jain > 0.95, "Jain's index {jain:.3} ({x} and {y} segments in 5 s)");
    assert!((x + y) / 5.0 / s.net.pps() > 0.9, "together {:.3} of the link", (x + y) / 5.0 / s.net.pps());
}

/// ProbeRTT's schedule ([v3] §5.3.4): entered when 5 s pass without a lower RTT sample
/// (ProbeRTTInterval), held for ProbeRTTDuration (200 ms) and a round at in-flight
/// ≤ max(BDP/2, 4), then the next one 5 s after its end: on a steady path, one every
/// 5.2–5.5 s. Their window cut is what the cwnd series shows.
#[test]
fn probe_rtt_comes_every_five_seconds_for_200_ms_at_half_the_bdp() {
    for algo in ALGOS {
        let mut s = one_flow(algo, 20e6, 20_000, 100);
        let mut prev = s.conn(0).bbr().state;
        let (mut entries, mut exits, mut min_cwnd) = (vec![], vec![], u32::MAX);
        let end = s.now_ns() + 30_000_000_000;
        s.run_checked(end, |s| {
            let v = s.conn(0).bbr();
            if v.state == State::ProbeRtt {
                min_cwnd = min_cwnd.min(s.conn(0).cwnd());
                if prev != State::ProbeRtt {
                    entries.push(s.now_us());
                }
            } else if prev == State::ProbeRtt {
                exits.push(s.now_us());
            }
            prev = v.state;
            true
        });
        let rtt = 20_605;
        assert!(entries.len() >= 5, "{algo}: {} ProbeRTTs in 30 s", entries.len());
        for w in entries.windows(2) {
            let gap = w[1] - w[0];
            assert!(gap > 5_000_000 && gap < 5_200_000 + 15 * rtt, "{algo}: ProbeRTTs {gap} µs apart");
        }
        for (a, b) in entries.iter().zip(&exits) {
            let held = b - a;
            assert!(held > 200_000 && held < 200_000 + 4 * rtt, "{algo}: ProbeRTT held {held} µs");
        }
        let bdp = (s.net.pps() * rtt as f64 / 1e6).ceil() as u32;
        assert!(min_cwnd <= (bdp / 2 + 1).max(4), "{algo}: ProbeRTT's cwnd {min_cwnd}, BDP {bdp}");
    }
}

/// Delivered segments of one flow after 12 s, with the bottleneck marking CE above 5
/// queued packets, the flow ECN-capable or not.
fn with_marks(algo: &str, ect: bool) -> (u32, u64, u64) {
    let mut net = Net::new(20e6, 1000);
    net.ecn_k = Some(5);
    let mut s = Sim::new(net);
    s.add_flow(algo, 20_000);
    s.flows[0].set_ect(ect);
    let mut q = 0;
    s.run_until(s.now_ns() + 12_000_000_000, 1_000_000, |s| q += s.queue_len() as u64);
    (s.flows[0].delivered(), q, s.conn(0).get(Field::DeliveredCe))
}

/// ECN: bbr3 treats CE marks as congestion ([v3] §3.8, the response in bbr_signals.h),
/// so marking changes what it does and holds its queue lower; bbr2 has no ECN response
/// ([v2]): its trajectory with marks is the one without, segment for segment.
#[test]
fn bbr3_responds_to_ce_marks_and_bbr2_ignores_them() {
    let (d3, q3, ce3) = with_marks("bbr3", true);
    let (d3n, q3n, _) = with_marks("bbr3", false);
    assert!(ce3 > 0, "no CE marks reached bbr3");
    assert!(q3 < q3n, "bbr3's queue with marks {q3}, without {q3n} (packet-ms)");
    assert!(d3 as f64 > 0.9 * d3n as f64, "bbr3 with marks delivered {d3}, without {d3n}");
    let (d2, q2, ce2) = with_marks("bbr2", true);
    let (d2n, q2n, _) = with_marks("bbr2", false);
    assert!(ce2 > 0, "no CE marks reached bbr2");
    assert_eq!((d2, q2), (d2n, q2n), "bbr2 changed with CE marks");
}
