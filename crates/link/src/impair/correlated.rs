//! netem's correlated random source ("correlation" of tc-netem(8)): each value is a mix of
//! a fresh uniform draw and the previous value,
//!
//! ```text
//! u_n = (1 − ρ)·U_n + ρ·u_{n−1},   U_n uniform on [0, 1)
//! ```
//!
//! as sch_netem.c's `get_crandom` computes it in 32-bit fixed point. The result is a
//! first-order autoregressive sequence: successive values have correlation ρ, the mean
//! stays 1/2, but the values are no longer uniform — their variance shrinks by
//! (1 − ρ)/(1 + ρ), so a correlated delay spreads less and a correlated loss (netem's
//! `loss random P CORR`, which tc-netem(8) deprecates for that reason) no longer has
//! probability P. ccarena keeps netem's definition so that both backends mean the same;
//! docs/link.md says what it does to each impairment.

use crate::rng::Rng;

#[derive(Clone, Debug)]
pub struct Correlated {
    rho: f64,
    last: f64,
    rng: Rng,
}

impl Correlated {
    /// `rho` in [0, 1]; 0 gives independent uniform values. The first value mixes with a
    /// random start, as netem's `init_crandom` seeds `last`.
    pub fn new(rho: f64, mut rng: Rng) -> Correlated {
        let last = rng.f64();
        Correlated { rho, last, rng }
    }

    pub fn rho(&self) -> f64 {
        self.rho
    }

    /// The next value in [0, 1).
    pub fn draw(&mut self) -> f64 {
        let u = self.rng.f64();
        if self.rho == 0.0 {
            return u;
        }
        let v = (1.0 - self.rho) * u + self.rho * self.last;
        self.last = v;
        v
    }

    /// True with probability `p` per call (netem: `p >= get_crandom()`), correlated with
    /// the previous outcome through the shared value.
    pub fn chance(&mut self, p: f64) -> bool {
        p > 0.0 && self.draw() < p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(v: &[f64]) -> (f64, f64, f64) {
        let n = v.len() as f64;
        let m = v.iter().sum::<f64>() / n;
        let var = v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / n;
        let c1 = v.windows(2).map(|w| (w[0] - m) * (w[1] - m)).sum::<f64>() / (n - 1.0);
        (m, var, c1 / var)
    }

    #[test]
    fn uncorrelated_values_are_uniform_and_independent() {
        let mut c = Correlated::new(0.0, Rng::new(3));
        let v: Vec<f64> = (0..200_000).map(|_| c.draw()).collect();
        let (m, var, r1) = stats(&v);
        let n = v.len() as f64;
        assert!((m - 0.5).abs() < 5.0 * (1.0 / 12.0 / n).sqrt(), "mean {m}");
        assert!((var - 1.0 / 12.0).abs() < 0.002, "var {var}");
        assert!(r1.abs() < 5.0 / n.sqrt(), "lag-1 correlation {r1}");
    }

    #[test]
    fn correlation_rho_is_the_lag_one_autocorrelation_and_narrows_the_spread() {
        for rho in [0.25, 0.5, 0.9] {
            let mut c = Correlated::new(rho, Rng::new(7));
            let v: Vec<f64> = (0..400_000).map(|_| c.draw()).collect();
            let (m, var, r1) = stats(&v);
            // AR(1): lag-1 autocorrelation rho; Var = (1-rho)^2/(1-rho^2) · 1/12
            assert!((r1 - rho).abs() < 0.01, "rho {rho}: lag-1 {r1}");
            let want = (1.0 - rho) / (1.0 + rho) / 12.0;
            assert!((var / want - 1.0).abs() < 0.03, "rho {rho}: var {var} vs {want}");
            assert!((m - 0.5).abs() < 0.01, "rho {rho}: mean {m}");
        }
    }

    #[test]
    fn full_correlation_repeats_the_start() {
        let mut c = Correlated::new(1.0, Rng::new(9));
        let first = c.draw();
        assert!((0..100).all(|_| c.draw() == first));
    }
}
