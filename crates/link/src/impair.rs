//! Random impairments: loss models and delay jitter.
//!
//! Loss: Bernoulli (independent, probability `p` per packet) and the Gilbert–Elliott
//! two-state Markov model (E. N. Gilbert, "Capacity of a burst-noise channel", BSTJ 1960;
//! E. O. Elliott, "Estimates of error rates for codes on burst-noise channels", BSTJ
//! 1963), parameterised as in netem's `gemodel` (G. Hasslinger, O. Hohlfeld, "The
//! Gilbert-Elliott Model for Packet Loss in Real Time Services on the Internet", MMB
//! 2008): `p` = P(good→bad), `r` = P(bad→good) per packet, `loss_good` (= 1−k) and
//! `loss_bad` (= 1−h) the loss probabilities in each state. Stationary mean loss:
//! `(r·loss_good + p·loss_bad)/(p + r)`.
//!
//! Jitter: a random term added to the one-way delay per packet: uniform on [−j, +j],
//! normal (mean 0, sd σ, cut at ±4σ), or exponential with a given mean (≥ 0). The total
//! delay never goes below zero.

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
}

impl LossModel {
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
        }
    }
}

/// A loss model with its state and its own random stream.
#[derive(Clone, Debug)]
pub struct Loss {
    model: LossModel,
    bad: bool,
    rng: Rng,
}

impl Loss {
    pub fn new(model: LossModel, rng: Rng) -> Loss {
        Loss {
            model,
            bad: false,
            rng,
        }
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
                // State transition first, then the loss draw in the new state (netem order).
                if self.bad {
                    if self.rng.chance(r) {
                        self.bad = false;
                    }
                } else if self.rng.chance(p) {
                    self.bad = true;
                }
                self.rng.chance(if self.bad { loss_bad } else { loss_good })
            }
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JitterModel {
    Uniform { ns: f64 },
    Normal { sd_ns: f64 },
    Exponential { mean_ns: f64 },
}

#[derive(Clone, Debug)]
pub struct Jitter {
    pub model: JitterModel,
    /// Allow reordering (otherwise a packet never overtakes an earlier one of its flow).
    pub reorder: bool,
    rng: Rng,
}

impl Jitter {
    pub fn new(model: JitterModel, reorder: bool, rng: Rng) -> Jitter {
        Jitter {
            model,
            reorder,
            rng,
        }
    }

    /// Largest value `sample` can add (ns), for memory bounds.
    pub fn max_ns(&self) -> u64 {
        match self.model {
            JitterModel::Uniform { ns } => ns as u64,
            JitterModel::Normal { sd_ns } => (4.0 * sd_ns) as u64,
            JitterModel::Exponential { mean_ns } => (40.0 * mean_ns) as u64,
        }
    }

    /// Apply jitter to a delay of `base` ns.
    pub fn apply(&mut self, base: u64) -> u64 {
        let j = match self.model {
            JitterModel::Uniform { ns } => (self.rng.f64() * 2.0 - 1.0) * ns,
            JitterModel::Normal { sd_ns } => {
                (self.rng.normal() * sd_ns).clamp(-4.0 * sd_ns, 4.0 * sd_ns)
            }
            JitterModel::Exponential { mean_ns } => (self.rng.exp1() * mean_ns).min(40.0 * mean_ns),
        };
        (base as f64 + j).max(0.0).round() as u64
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

    #[test]
    fn bernoulli_loss_rate_within_binomial_ci() {
        let mut l = Loss::new(LossModel::Bernoulli { p: 0.01 }, Rng::new(11));
        let n = 1_000_000;
        let k = (0..n).filter(|_| l.lose()).count() as u64;
        assert!(within_binomial_ci(k, n, 0.01), "{k} losses of {n}");
    }

    #[test]
    fn gilbert_elliott_mean_loss_and_burstiness() {
        let m = LossModel::GilbertElliott {
            p: 0.01,
            r: 0.3,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        let mut l = Loss::new(m, Rng::new(5));
        let n = 2_000_000;
        let mut k = 0u64;
        let mut bursts = 0u64;
        let mut prev = false;
        for _ in 0..n {
            let x = l.lose();
            if x {
                k += 1;
                if !prev {
                    bursts += 1;
                }
            }
            prev = x;
        }
        let mean = m.mean_loss();
        let obs = k as f64 / n as f64;
        assert!(
            (obs - mean).abs() / mean < 0.05,
            "observed {obs}, model {mean}"
        );
        // Mean burst length of a bad state is 1/r.
        let burst = k as f64 / bursts as f64;
        assert!((burst - 1.0 / 0.3).abs() < 0.2, "mean burst {burst}");
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
    }

    #[test]
    fn mean_loss_of_symmetric_and_absorbing_chains() {
        let ge = |p, r| LossModel::GilbertElliott {
            p,
            r,
            loss_good: 0.1,
            loss_bad: 0.9,
        };
        // p = r: the chain spends half its time in each state (stationary π_bad =
        // p/(p + r) = 1/2), so the mean is the states' average
        assert!((ge(0.3, 0.3).mean_loss() - 0.5).abs() < 1e-12);
        // r = 0, p > 0: the bad state is absorbing; in the long run every packet sees
        // loss_bad (π_bad = 1), not the good state's rate
        assert!((ge(0.05, 0.0).mean_loss() - 0.9).abs() < 1e-12);
        // and p = 0, r > 0: the good state is absorbing
        assert!((ge(0.0, 0.05).mean_loss() - 0.1).abs() < 1e-12);
    }

    #[test]
    fn uniform_jitter_is_plus_minus_j_around_the_delay() {
        let j = 1_000_000.0;
        let mut u = Jitter::new(JitterModel::Uniform { ns: j }, false, Rng::new(1));
        assert_eq!(u.max_ns(), 1_000_000);
        let n = 100_000;
        let d: Vec<u64> = (0..n).map(|_| u.apply(10_000_000)).collect();
        let (lo, hi) = (*d.iter().min().unwrap(), *d.iter().max().unwrap());
        assert!(lo >= 9_000_000 && hi <= 11_000_000, "{lo}..{hi}");
        assert!(
            lo < 9_000_100 && hi > 10_999_900,
            "both ends reached: {lo}..{hi}"
        );
        let mean = d.iter().sum::<u64>() as f64 / n as f64;
        // sd of U(−J, J) is J/√3; 5 standard errors.
        assert!(
            (mean - 1e7).abs() < 5.0 * j / 3f64.sqrt() / (n as f64).sqrt(),
            "{mean}"
        );
    }

    #[test]
    fn normal_jitter_is_cut_at_four_sd_and_max_ns_says_so() {
        let sd = 1000.0;
        let mut g = Jitter::new(JitterModel::Normal { sd_ns: sd }, true, Rng::new(2));
        assert_eq!(g.max_ns(), 4000);
        let n = 1_000_000;
        let dev: Vec<i64> = (0..n)
            .map(|_| g.apply(1_000_000) as i64 - 1_000_000)
            .collect();
        assert!(dev.iter().all(|x| x.abs() <= 4000));
        // P(|Z| > 4) ≈ 6.3e-5: about 63 of a million draws sit on the cut.
        let cut = dev.iter().filter(|x| x.abs() == 4000).count();
        assert!((20..200).contains(&cut), "{cut} at the cut");
        let var = dev.iter().map(|&x| (x * x) as f64).sum::<f64>() / n as f64;
        assert!((var.sqrt() / sd - 1.0).abs() < 0.01, "sd {}", var.sqrt());
    }

    #[test]
    fn exponential_jitter_only_adds_and_max_ns_is_its_cut() {
        let m = 1000.0;
        let mut e = Jitter::new(JitterModel::Exponential { mean_ns: m }, true, Rng::new(3));
        assert_eq!(e.max_ns(), 40_000);
        let n = 200_000;
        let extra: Vec<u64> = (0..n).map(|_| e.apply(5_000) - 5_000).collect();
        let mean = extra.iter().sum::<u64>() as f64 / n as f64;
        assert!(
            (mean / m - 1.0).abs() < 5.0 / (n as f64).sqrt(),
            "mean {mean}"
        );
    }

    #[test]
    fn total_delay_never_goes_below_zero() {
        let mut u = Jitter::new(JitterModel::Uniform { ns: 2000.0 }, true, Rng::new(4));
        let d: Vec<u64> = (0..10_000).map(|_| u.apply(1000)).collect();
        let zeros = d.iter().filter(|&&x| x == 0).count() as f64 / d.len() as f64;
        // 1000 + U(−2000, 2000) ≤ 0 with probability 1/4: clamped to 0.
        assert!((zeros - 0.25).abs() < 0.02, "{zeros}");
        assert!(d.iter().all(|&x| x <= 3000));
    }
}
