//! Contract: a small seeded random number generator and the gap distributions of the
//! `paced` flow kind. The same seed gives the same gaps on every machine.
//!
//! Generator: SplitMix64 (G. L. Steele, D. Lea, C. H. Flood, "Fast splittable
//! pseudorandom number generators", OOPSLA 2014; the constants are the published ones,
//! also used by S. Vigna's public-domain reference splitmix64.c). It passes BigCrush,
//! has period 2^64, and costs a few multiplications — plenty for drawing write gaps.
//! Implemented here from the published description.

use crate::config::GapDist;

#[derive(Debug, Clone)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1) with 53 random bits.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

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

    #[test]
    fn splitmix_reference_values() {
        // First outputs for seed 1234567, from the reference implementation's definition.
        let mut r = SplitMix64::new(1234567);
        let a = r.next_u64();
        let b = r.next_u64();
        assert_eq!(a, 6457827717110365317);
        assert_eq!(b, 3203168211198807973);
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
