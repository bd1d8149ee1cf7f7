//! Loss models, decided per packet.
//!
//! - Bernoulli: each packet lost independently with probability `p`.
//! - Gilbert–Elliott (E. N. Gilbert, "Capacity of a burst-noise channel", BSTJ 1960;
//!   E. O. Elliott, "Estimates of error rates for codes on burst-noise channels", BSTJ
//!   1963), parameterised as netem's `loss gemodel p r 1-h 1-k` (tc-netem(8); G.
//!   Hasslinger, O. Hohlfeld, "The Gilbert-Elliott Model for Packet Loss in Real Time
//!   Services on the Internet", MMB 2008): `p` = P(good→bad), `r` = P(bad→good) per
//!   packet, `loss_bad` = 1−h and `loss_good` = 1−k the loss probabilities in each state.
//!   As sch_netem.c does, a packet's fate is drawn in the state the chain is in when it
//!   arrives, and the chain then moves (the first packet sees the good state). Stationary
//!   mean loss `(r·loss_good + p·loss_bad)/(p + r)`; with loss_bad = 1 and loss_good = 0
//!   the losses come in bursts of mean length 1/r.
//! - 4-state Markov model, netem's `loss state p13 p31 p32 p23 p14` (S. Salsano, F.
//!   Ludovici, A. Ordine, "Definition of a general and intuitive loss model for packet
//!   networks and its implementation in the Netem module in the Linux kernel", 2009):
//!   state 1 = packet received within a gap, 2 = received within a burst, 3 = lost within
//!   a burst, 4 = isolated loss within a gap; from 1 to 3 with p13 and to 4 with p14, from
//!   2 to 3 with p23, from 3 to 1 with p31 and to 2 with p32, from 4 always back to 1. Each
//!   packet moves the chain once (one uniform draw against the cumulative transition
//!   probabilities of the current state) and is lost when the state it lands in is 3 or 4;
//!   the chain starts in state 1. Bursts (runs of state 3) last 1/(p31 + p32) packets on
//!   average; isolated losses are single.

use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum LossModel {
    Bernoulli {
        p: f64,
    },
    GilbertElliott {
        p: f64,
        r: f64,
        loss_good: f64,
        loss_bad: f64,
    },
    FourState {
        p13: f64,
        p31: f64,
        p32: f64,
        p23: f64,
        p14: f64,
    },
}

impl LossModel {
    /// The long-run fraction of packets lost, for a chain started as `Loss` starts it.
    pub fn mean_loss(&self) -> f64 {
        match *self {
            LossModel::Bernoulli { p } => p,
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                if p + r == 0.0 {
                    loss_good
                } else {
                    (r * loss_good + p * loss_bad) / (p + r)
                }
            }
            LossModel::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => four_state_mean(p13, p31, p32, p23, p14),
        }
    }
}

/// Stationary loss of the 4-state chain started in state 1, case by case where a state is
/// absorbing or unreachable; otherwise from the balance equations
/// π4 = p14·π1, π1·p13 = π3·p31, π2·p23 = π3·p32 (weights relative to π1 = p31).
fn four_state_mean(p13: f64, p31: f64, p32: f64, p23: f64, p14: f64) -> f64 {
    if p13 == 0.0 {
        return p14 / (1.0 + p14); // bursts never start: 1 ↔ 4 only
    }
    if p31 + p32 == 0.0 {
        return 1.0; // state 3 never left
    }
    if p32 > 0.0 && p23 == 0.0 {
        return 0.0; // state 2 reached and never left
    }
    if p31 == 0.0 {
        return p23 / (p23 + p32); // the chain ends up between 2 and 3
    }
    let (w1, w3, w4) = (p31, p13, p14 * p31);
    let w2 = if p32 > 0.0 { p13 * p32 / p23 } else { 0.0 };
    (w3 + w4) / (w1 + w2 + w3 + w4)
}

/// A loss model with its state and its own random stream.
#[derive(Clone, Debug)]
pub struct Loss {
    model: LossModel,
    /// Gilbert–Elliott: in the bad state; 4-state: the state 1..=4.
    bad: bool,
    state: u8,
    rng: Rng,
}

impl Loss {
    pub fn new(model: LossModel, rng: Rng) -> Loss {
        Loss {
            model,
            bad: false,
            state: 1,
            rng,
        }
    }

    pub fn model(&self) -> LossModel {
        self.model
    }

    /// Decide the fate of one packet: true = lose it.
    pub fn lose(&mut self) -> bool {
        match self.model {
            LossModel::Bernoulli { p } => self.rng.chance(p),
            LossModel::GilbertElliott {
                p,
                r,
                loss_good,
                loss_bad,
            } => {
                // the packet sees the state it arrives in; the chain moves after it
                let was_bad = self.bad;
                let flip = self.rng.chance(if was_bad { r } else { p });
                let lost = self.rng.chance(if was_bad { loss_bad } else { loss_good });
                if flip {
                    self.bad = !was_bad;
                }
                lost
            }
            LossModel::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            } => {
                let x = self.rng.f64();
                self.state = match self.state {
                    1 if x < p14 => 4,
                    1 if x < p14 + p13 => 3,
                    1 => 1,
                    2 if x < p23 => 3,
                    2 => 2,
                    3 if x < p32 => 2,
                    3 if x < p32 + p31 => 1,
                    3 => 3,
                    _ => 1,
                };
                self.state >= 3
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// |observed − expected| within 4 standard errors of a binomial proportion.
    fn within_binomial_ci(losses: u64, n: u64, p: f64) -> bool {
        let se = (p * (1.0 - p) / n as f64).sqrt();
        ((losses as f64 / n as f64) - p).abs() <= 4.0 * se
    }

    /// (losses, lengths of the runs of consecutive losses) over `n` packets.
    fn runs(l: &mut Loss, n: u64) -> (u64, Vec<u64>) {
        let (mut k, mut runs, mut cur) = (0, Vec::new(), 0u64);
        for _ in 0..n {
            if l.lose() {
                k += 1;
                cur += 1;
            } else if cur > 0 {
                runs.push(cur);
                cur = 0;
            }
        }
        (k, runs)
    }

    fn mean_sd(v: &[u64]) -> (f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().sum::<u64>() as f64 / n;
        let var = v.iter().map(|&x| (x as f64 - m).powi(2)).sum::<f64>() / (n - 1.0);
        (m, var.sqrt())
    }

    #[test]
    fn bernoulli_loss_rate_within_binomial_ci() {
        let mut l = Loss::new(LossModel::Bernoulli { p: 0.01 }, Rng::new(11));
        let n = 1_000_000;
        let k = (0..n).filter(|_| l.lose()).count() as u64;
        assert!(within_binomial_ci(k, n, 0.01), "{k} losses of {n}");
    }

    #[test]
    fn gilbert_elliott_mean_loss_and_bursts_of_mean_length_one_over_r() {
        let m = LossModel::GilbertElliott {
            p: 0.01,
            r: 0.3,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let mut l = Loss::new(m, Rng::new(5));
        let (k, bursts) = runs(&mut l, 2_000_000);
        let mean = m.mean_loss();
        let obs = k as f64 / 2e6;
        assert!((obs - mean).abs() / mean < 0.05, "observed {obs}, model {mean}");
        // a bad-state sojourn is geometric with mean 1/r: within 4 standard errors
        let (b, sd) = mean_sd(&bursts);
        let se = sd / (bursts.len() as f64).sqrt();
        assert!((b - 1.0 / 0.3).abs() < 4.0 * se, "mean burst {b} ± {se}");
    }

    #[test]
    fn gilbert_elliott_draws_a_packet_in_the_state_it_arrives_in() {
        // p = 1, r = 1: the chain alternates good, bad, good ... starting good; with
        // loss_bad = 1 and loss_good = 0 every second packet is lost, the first kept
        let m = LossModel::GilbertElliott {
            p: 1.0,
            r: 1.0,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let mut l = Loss::new(m, Rng::new(1));
        let fate: Vec<bool> = (0..6).map(|_| l.lose()).collect();
        assert_eq!(fate, [false, true, false, true, false, true]);
    }

    #[test]
    fn gilbert_elliott_loss_inside_each_state() {
        // 1−h and 1−k: loss in the bad and good states, independent of the transitions
        let m = LossModel::GilbertElliott {
            p: 0.05,
            r: 0.2,
            loss_good: 0.02,
            loss_bad: 0.6,
        };
        let mut l = Loss::new(m, Rng::new(8));
        let n = 2_000_000;
        let k = (0..n).filter(|_| l.lose()).count() as u64;
        let want = (0.2 * 0.02 + 0.05 * 0.6) / 0.25;
        assert!((k as f64 / n as f64 / want - 1.0).abs() < 0.03, "{k} vs {want}");
    }

    #[test]
    fn four_state_mean_loss_matches_its_stationary_distribution() {
        let m = LossModel::FourState {
            p13: 0.02,
            p31: 0.4,
            p32: 0.3,
            p23: 0.5,
            p14: 0.01,
        };
        // weights relative to π1 = p31: π3 = p13, π4 = p14·p31, π2 = p13·p32/p23
        let want = (0.02 + 0.01 * 0.4) / (0.4 + 0.02 * 0.3 / 0.5 + 0.02 + 0.01 * 0.4);
        assert!((m.mean_loss() - want).abs() < 1e-12);
        let mut l = Loss::new(m, Rng::new(21));
        let n = 2_000_000;
        let (k, _) = runs(&mut l, n);
        let obs = k as f64 / n as f64;
        assert!((obs / want - 1.0).abs() < 0.03, "observed {obs}, model {want}");
    }

    #[test]
    fn four_state_bursts_last_one_over_p31_plus_p32() {
        // no isolated losses (p14 = 0): every run of losses is a stay in state 3
        let (p31, p32) = (0.15, 0.1);
        let m = LossModel::FourState {
            p13: 0.01,
            p31,
            p32,
            p23: 0.2,
            p14: 0.0,
        };
        let mut l = Loss::new(m, Rng::new(4));
        let (_, bursts) = runs(&mut l, 2_000_000);
        let (b, sd) = mean_sd(&bursts);
        let se = sd / (bursts.len() as f64).sqrt();
        assert!((b - 1.0 / (p31 + p32)).abs() < 4.0 * se, "mean burst {b} ± {se}");
    }

    #[test]
    fn four_state_isolated_losses_are_single_and_follow_p14() {
        // p13 = 0: only state 4 loses, once, and the chain is back in 1
        let p14 = 0.05;
        let m = LossModel::FourState {
            p13: 0.0,
            p31: 1.0,
            p32: 0.0,
            p23: 1.0,
            p14,
        };
        let mut l = Loss::new(m, Rng::new(6));
        let n = 1_000_000;
        let (k, bursts) = runs(&mut l, n);
        assert!(bursts.iter().all(|&b| b == 1), "an isolated loss came in a burst");
        assert!(within_binomial_ci(k, n, p14 / (1.0 + p14)), "{k} of {n}");
    }

    #[test]
    fn four_state_with_netems_defaults_is_bernoulli() {
        // `loss state P` alone: p31 = 1 − P, p32 = 0, p23 = 1, p14 = 0 (tc's defaults)
        let p = 0.07;
        let m = LossModel::FourState {
            p13: p,
            p31: 1.0 - p,
            p32: 0.0,
            p23: 1.0,
            p14: 0.0,
        };
        assert!((m.mean_loss() - p).abs() < 1e-12);
        let mut l = Loss::new(m, Rng::new(2));
        let n = 1_000_000;
        let (k, bursts) = runs(&mut l, n);
        assert!(within_binomial_ci(k, n, p), "{k} of {n}");
        // independent losses: P(run of length ≥ 2) = p
        let long = bursts.iter().filter(|&&b| b >= 2).count() as u64;
        assert!(within_binomial_ci(long, bursts.len() as u64, p), "{long}");
    }

    #[test]
    fn mean_loss_of_each_model() {
        assert_eq!(LossModel::Bernoulli { p: 0.25 }.mean_loss(), 0.25);
        let ge = |p, r| LossModel::GilbertElliott {
            p,
            r,
            loss_good: 0.1,
            loss_bad: 0.9,
        };
        // (r·loss_good + p·loss_bad)/(p + r); a chain that never moves stays good.
        assert!((ge(0.2, 0.6).mean_loss() - (0.6 * 0.1 + 0.2 * 0.9) / 0.8).abs() < 1e-12);
        assert_eq!(ge(0.0, 0.0).mean_loss(), 0.1);
        // p = r: half the time in each state; r = 0: bad absorbs; p = 0: good does
        assert!((ge(0.3, 0.3).mean_loss() - 0.5).abs() < 1e-12);
        assert!((ge(0.05, 0.0).mean_loss() - 0.9).abs() < 1e-12);
        assert!((ge(0.0, 0.05).mean_loss() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn four_state_mean_loss_where_a_state_absorbs() {
        let fs = |p13, p31, p32, p23, p14| {
            LossModel::FourState {
                p13,
                p31,
                p32,
                p23,
                p14,
            }
            .mean_loss()
        };
        assert_eq!(fs(0.1, 0.0, 0.0, 0.5, 0.0), 1.0, "3 never left");
        assert_eq!(fs(0.1, 0.2, 0.3, 0.0, 0.0), 0.0, "2 never left");
        assert!((fs(0.1, 0.0, 0.3, 0.2, 0.0) - 0.2 / 0.5).abs() < 1e-12, "2 and 3 only");
        // no state 2 (p32 = 0, p23 = 0): 1, 3 and 4 share the time
        let w = (0.1 + 0.2 * 0.5) / (0.5 + 0.1 + 0.2 * 0.5);
        assert!((fs(0.1, 0.5, 0.0, 0.0, 0.2) - w).abs() < 1e-12);
        for (m, seed) in [((0.1, 0.0, 0.3, 0.2, 0.0), 1), ((0.1, 0.5, 0.0, 0.0, 0.2), 2)] {
            let model = LossModel::FourState {
                p13: m.0,
                p31: m.1,
                p32: m.2,
                p23: m.3,
                p14: m.4,
            };
            let mut l = Loss::new(model, Rng::new(seed));
            let n = 1_000_000;
            let k = (0..n).filter(|_| l.lose()).count() as f64;
            assert!((k / n as f64 - model.mean_loss()).abs() < 0.01, "{m:?}: {}", k / n as f64);
        }
    }
}
