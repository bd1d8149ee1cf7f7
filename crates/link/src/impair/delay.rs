//! Jitter: a random term added to the one-way delay of each packet, drawn from one of
//! netem's distributions by inversion of a (possibly correlated) uniform number, as
//! netem's `delay D J [CORR] distribution X` does:
//!
//! - uniform: −J + 2J·u, so the delay is uniform on [D − J, D + J] (netem's default
//!   when no distribution is given);
//! - normal: J·Φ⁻¹(u) clipped at ±4J (J is the standard deviation);
//! - pareto, paretonormal: J·t(u) with netem's table shapes (`quantile`);
//! - exponential (ccarena's own, not netem's): mean M, ≥ 0, cut at 40 M.
//!
//! With correlation ρ the uniform numbers follow `Correlated` (netem's definition), which
//! makes successive delays correlated with coefficient ρ for the uniform distribution
//! (and close to it for the others) and narrows their spread. The total delay never goes
//! below zero.

use super::correlated::Correlated;
use super::quantile;
use crate::rng::Rng;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum JitterModel {
    Uniform { ns: f64 },
    Normal { sd_ns: f64 },
    Pareto { ns: f64 },
    ParetoNormal { ns: f64 },
    Exponential { mean_ns: f64 },
}

impl JitterModel {
    /// The offset (ns) added to the delay at uniform number `u` in [0, 1).
    pub fn offset(&self, u: f64) -> f64 {
        match *self {
            JitterModel::Uniform { ns } => (2.0 * u - 1.0) * ns,
            JitterModel::Normal { sd_ns } => sd_ns * quantile::normal(u),
            JitterModel::Pareto { ns } => ns * quantile::pareto(u),
            JitterModel::ParetoNormal { ns } => ns * quantile::paretonormal(u),
            JitterModel::Exponential { mean_ns } => (-(1.0 - u).ln() * mean_ns).min(40.0 * mean_ns),
        }
    }

    /// Largest offset above the delay (ns), for memory bounds.
    pub fn max_ns(&self) -> u64 {
        let m = match *self {
            JitterModel::Uniform { ns } => ns,
            JitterModel::Normal { sd_ns } => quantile::TABLE_MAX * sd_ns,
            JitterModel::Pareto { ns } | JitterModel::ParetoNormal { ns } => quantile::TABLE_MAX * ns,
            JitterModel::Exponential { mean_ns } => 40.0 * mean_ns,
        };
        m.ceil() as u64
    }

    /// Largest offset below the delay (ns): how much earlier than the delay a packet may
    /// be due (pareto: 2/3 J; paretonormal: 1.5 J).
    pub fn min_ns(&self) -> u64 {
        let m = match *self {
            JitterModel::Uniform { ns } => ns,
            JitterModel::Normal { sd_ns } => quantile::TABLE_MAX * sd_ns,
            JitterModel::Pareto { ns } => 2.0 / 3.0 * ns,
            JitterModel::ParetoNormal { ns } => 1.5 * ns,
            JitterModel::Exponential { .. } => 0.0,
        };
        m.round() as u64
    }
}

/// What a direction's jitter is: the distribution, netem's correlation ρ in [0, 1], and
/// whether it may reorder packets of one flow (false: a packet never leaves before an
/// earlier packet of its flow).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JitterSpec {
    pub model: JitterModel,
    pub correlation: f64,
    pub reorder: bool,
}

impl JitterSpec {
    pub fn new(model: JitterModel, reorder: bool) -> JitterSpec {
        JitterSpec {
            model,
            correlation: 0.0,
            reorder,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Jitter {
    pub model: JitterModel,
    /// Allow reordering (otherwise a packet never overtakes an earlier one of its flow).
    pub reorder: bool,
    u: Correlated,
}

impl Jitter {
    pub fn new(spec: JitterSpec, rng: Rng) -> Jitter {
        Jitter {
            model: spec.model,
            reorder: spec.reorder,
            u: Correlated::new(spec.correlation, rng),
        }
    }

    /// Largest value `apply` can add (ns), for memory bounds.
    pub fn max_ns(&self) -> u64 {
        self.model.max_ns()
    }

    /// Apply jitter to a delay of `base` ns.
    pub fn apply(&mut self, base: u64) -> u64 {
        let j = self.model.offset(self.u.draw());
        (base as f64 + j).max(0.0).round() as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jitter(model: JitterModel, seed: u64) -> Jitter {
        Jitter::new(JitterSpec::new(model, true), Rng::new(seed))
    }

    #[test]
    fn uniform_jitter_is_plus_minus_j_around_the_delay() {
        let j = 1_000_000.0;
        let mut u = jitter(JitterModel::Uniform { ns: j }, 1);
        assert_eq!(u.max_ns(), 1_000_000);
        let n = 100_000;
        let d: Vec<u64> = (0..n).map(|_| u.apply(10_000_000)).collect();
        let (lo, hi) = (*d.iter().min().unwrap(), *d.iter().max().unwrap());
        assert!(lo >= 9_000_000 && hi <= 11_000_000, "{lo}..{hi}");
        assert!(lo < 9_000_100 && hi > 10_999_900, "both ends reached: {lo}..{hi}");
        let mean = d.iter().sum::<u64>() as f64 / n as f64;
        // sd of U(−J, J) is J/√3; 5 standard errors.
        assert!((mean - 1e7).abs() < 5.0 * j / 3f64.sqrt() / (n as f64).sqrt(), "{mean}");
    }

    #[test]
    fn normal_jitter_is_cut_at_four_sd_and_max_ns_says_so() {
        let sd = 1000.0;
        let mut g = jitter(JitterModel::Normal { sd_ns: sd }, 2);
        assert_eq!((g.max_ns(), g.model.min_ns()), (4000, 4000));
        let n = 1_000_000;
        let dev: Vec<i64> = (0..n).map(|_| g.apply(1_000_000) as i64 - 1_000_000).collect();
        assert!(dev.iter().all(|x| x.abs() <= 4000));
        // P(|Z| > 4) ≈ 6.3e-5: about 63 of a million draws sit on the cut.
        let cut = dev.iter().filter(|x| x.abs() == 4000).count();
        assert!((20..200).contains(&cut), "{cut} at the cut");
        let var = dev.iter().map(|&x| (x * x) as f64).sum::<f64>() / n as f64;
        assert!((var.sqrt() / sd - 1.0).abs() < 0.01, "sd {}", var.sqrt());
    }

    #[test]
    fn pareto_and_paretonormal_keep_netems_bounds() {
        let j = 3000.0;
        for (model, lo, hi) in [
            (JitterModel::Pareto { ns: j }, -2000, 12_000),
            (JitterModel::ParetoNormal { ns: j }, -4500, 12_000),
        ] {
            assert_eq!((model.min_ns() as i64, model.max_ns() as i64), (-lo, hi));
            let mut p = jitter(model, 5);
            let dev: Vec<i64> = (0..200_000).map(|_| p.apply(100_000) as i64 - 100_000).collect();
            let (mn, mx) = (*dev.iter().min().unwrap(), *dev.iter().max().unwrap());
            assert!(mn >= lo && mx <= hi, "{model:?}: {mn}..{mx}");
            // heavy right tail: the mean lies above the median
            let mut s = dev.clone();
            s.sort();
            let mean = dev.iter().sum::<i64>() as f64 / dev.len() as f64;
            assert!(mean > s[s.len() / 2] as f64, "{model:?}: mean {mean}, median {}", s[s.len() / 2]);
        }
    }

    #[test]
    fn exponential_jitter_only_adds_and_max_ns_is_its_cut() {
        let m = 1000.0;
        let mut e = jitter(JitterModel::Exponential { mean_ns: m }, 3);
        assert_eq!((e.max_ns(), e.model.min_ns()), (40_000, 0));
        let n = 200_000;
        let extra: Vec<u64> = (0..n).map(|_| e.apply(5_000) - 5_000).collect();
        let mean = extra.iter().sum::<u64>() as f64 / n as f64;
        assert!((mean / m - 1.0).abs() < 5.0 / (n as f64).sqrt(), "mean {mean}");
    }

    #[test]
    fn total_delay_never_goes_below_zero() {
        let mut u = jitter(JitterModel::Uniform { ns: 2000.0 }, 4);
        let d: Vec<u64> = (0..10_000).map(|_| u.apply(1000)).collect();
        let zeros = d.iter().filter(|&&x| x == 0).count() as f64 / d.len() as f64;
        // 1000 + U(−2000, 2000) ≤ 0 with probability 1/4: clamped to 0.
        assert!((zeros - 0.25).abs() < 0.02, "{zeros}");
        assert!(d.iter().all(|&x| x <= 3000));
    }

    #[test]
    fn correlated_uniform_delays_have_lag_one_correlation_rho() {
        let rho = 0.6;
        let spec = JitterSpec {
            model: JitterModel::Uniform { ns: 1e6 },
            correlation: rho,
            reorder: true,
        };
        let mut j = Jitter::new(spec, Rng::new(12));
        let d: Vec<f64> = (0..200_000).map(|_| j.apply(10_000_000) as f64).collect();
        let n = d.len() as f64;
        let m = d.iter().sum::<f64>() / n;
        let var = d.iter().map(|x| (x - m).powi(2)).sum::<f64>() / n;
        let c1 = d.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / (n - 1.0) / var;
        assert!((c1 - rho).abs() < 0.01, "lag-1 correlation {c1}");
        // netem's correlation narrows the spread: sd J/√3 · √((1−ρ)/(1+ρ))
        let want = 1e6 / 3f64.sqrt() * ((1.0 - rho) / (1.0 + rho)).sqrt();
        assert!((var.sqrt() / want - 1.0).abs() < 0.02, "sd {} vs {want}", var.sqrt());
        assert!((m - 1e7).abs() < 0.01e6, "mean {m}");
    }
}
