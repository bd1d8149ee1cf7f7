//! Contract: the gap distributions of the `paced` flow kind, drawn from a seeded
//! SplitMix64 stream (ccarena-sys `rand`). The same seed gives the same gaps on every
//! machine; a flow's seed is recorded with its run.

use crate::config::GapDist;
use ccarena_sys::rand::SplitMix64;

/// Draws gaps (ns) whose mean is `mean_ns`:
/// const → always `mean_ns`; uniform → U[0, 2·mean); exp → exponential with that mean
/// (inverse transform, `-mean·ln(1-u)`), i.e. Poisson write arrivals.
#[derive(Debug, Clone)]
pub struct GapSource {
    rng: SplitMix64,
    mean_ns: u64,
    dist: GapDist,
}

impl GapSource {
    pub fn new(mean_ns: u64, dist: GapDist, seed: u64) -> Self {
        GapSource { rng: SplitMix64::new(seed), mean_ns, dist }
    }

    pub fn next_gap_ns(&mut self) -> u64 {
        let m = self.mean_ns as f64;
        match self.dist {
            GapDist::Const => self.mean_ns,
            GapDist::Uniform => (self.rng.next_f64() * 2.0 * m) as u64,
            GapDist::Exp => (-m * (1.0 - self.rng.next_f64()).ln()) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GAPS_SEED_7: [u64; 3] = [494_017, 16_930, 2_310_220];

    #[test]
    fn exp_gaps_of_seed_7_are_the_recorded_sequence() {
        // Stored runs record their seeds: these gaps must never change.
        let mut g = GapSource::new(1_000_000, GapDist::Exp, 7);
        let gaps: Vec<u64> = (0..3).map(|_| g.next_gap_ns()).collect();
        assert_eq!(gaps, GAPS_SEED_7);
    }

    #[test]
    fn same_seed_same_gaps_other_seed_other_gaps() {
        let a: Vec<u64> = { let mut g = GapSource::new(1000, GapDist::Exp, 7); (0..10).map(|_| g.next_gap_ns()).collect() };
        let b: Vec<u64> = { let mut g = GapSource::new(1000, GapDist::Exp, 7); (0..10).map(|_| g.next_gap_ns()).collect() };
        let c: Vec<u64> = { let mut g = GapSource::new(1000, GapDist::Exp, 8); (0..10).map(|_| g.next_gap_ns()).collect() };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    fn stats(dist: GapDist, n: usize) -> (f64, f64, u64, u64) {
        let mut g = GapSource::new(1_000_000, dist, 42);
        let xs: Vec<f64> = (0..n).map(|_| g.next_gap_ns() as f64).collect();
        let mean = xs.iter().sum::<f64>() / n as f64;
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
        let min = xs.iter().cloned().fold(f64::MAX, f64::min) as u64;
        let max = xs.iter().cloned().fold(0.0, f64::max) as u64;
        (mean, var.sqrt(), min, max)
    }

    #[test]
    fn const_gaps_are_exact() {
        let (mean, sd, min, max) = stats(GapDist::Const, 1000);
        assert_eq!((mean, sd, min, max), (1e6, 0.0, 1_000_000, 1_000_000));
    }

    #[test]
    fn uniform_gaps_have_the_mean_and_spread_of_u_0_2m() {
        let n = 100_000;
        let (mean, sd, min, max) = stats(GapDist::Uniform, n);
        // sd of U[0,2m) is 2m/sqrt(12); standard error of the mean is sd/sqrt(n).
        let sd_true = 2e6 / 12f64.sqrt();
        assert!((mean - 1e6).abs() < 5.0 * sd_true / (n as f64).sqrt(), "mean {mean}");
        assert!((sd - sd_true).abs() / sd_true < 0.02, "sd {sd}");
        assert!(max < 2_000_000 && min < 50_000);
    }

    #[test]
    fn exponential_gaps_have_mean_equal_to_sd() {
        let n = 100_000;
        let (mean, sd, _, _) = stats(GapDist::Exp, n);
        assert!((mean - 1e6).abs() < 5.0 * 1e6 / (n as f64).sqrt(), "mean {mean}");
        assert!((sd - 1e6).abs() / 1e6 < 0.03, "sd {sd}");
    }
}
