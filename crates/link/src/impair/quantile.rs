//! Quantile functions (inverse CDFs) of the delay distributions netem ships as tables.
//!
//! netem draws a delay as `delay + jitter · t`, `t` an entry of a table chosen by a
//! (possibly correlated) uniform number; iproute2's `normal`, `pareto` and `paretonormal`
//! tables hold 4096 quantiles of a standardised distribution, scaled by 8192 and clipped
//! to the signed 16-bit range (so |t| ≤ 4). We compute the same quantile functions
//! directly, as continuous functions of the uniform number (their tables' generators in
//! iproute2's netem/ directory were read to learn the definitions; no table is copied):
//!
//! - normal: Φ⁻¹(u), clipped to [−4, 4];
//! - pareto: shape a = 3, scale 1, shifted to mean 0 and stretched by 4/3:
//!   ((1 − u)^(−1/3) − 1.5)·4/3, clipped at 4 (so t ≥ −2/3; sd ≈ 0.82, mean ≈ −0.03
//!   after the clip);
//! - paretonormal: a quarter of the normal's quantile plus three quarters of the pareto's
//!   at the same u (the sum of quantile functions, not a mixture of draws), clipped to
//!   [−4, 4].
//!
//! Against netem's own tables these differ only by the tables' discreteness (KS distance
//! below 0.001), e.g. netem's normal table stops at +3.52 (its top entry is the quantile
//! 1 − 1/4681) where ours reaches +4.

/// Φ⁻¹(p), the standard normal quantile, for p in (0, 1): P. J. Acklam's rational
/// approximation ("An algorithm for computing the inverse normal cumulative distribution
/// function", 2003), relative error below 1.2e-9 — far finer than a delay needs.
#[allow(clippy::excessive_precision)] // the published coefficients, as printed
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969683028665376e+01,
        2.209460984245205e+02,
        -2.759285104469687e+02,
        1.383577518672690e+02,
        -3.066479806614716e+01,
        2.506628277459239e+00,
    ];
    const B: [f64; 5] = [
        -5.447609879822406e+01,
        1.615858368580409e+02,
        -1.556989798598866e+02,
        6.680131188771972e+01,
        -1.328068155288572e+01,
    ];
    const C: [f64; 6] = [
        -7.784894002430293e-03,
        -3.223964580411365e-01,
        -2.400758277161838e+00,
        -2.549732539343734e+00,
        4.374664141464968e+00,
        2.938163982698783e+00,
    ];
    const D: [f64; 4] = [
        7.784695709041462e-03,
        3.224671290700398e-01,
        2.445134137142996e+00,
        3.754408661907416e+00,
    ];
    const P_LOW: f64 = 0.02425;
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    if p < P_LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - P_LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    }
}

/// The largest |t| netem's tables hold (32767/8192, the 16-bit range).
pub const TABLE_MAX: f64 = 4.0;

/// netem's normal table, continuous: Φ⁻¹(u) clipped to ±4.
pub fn normal(u: f64) -> f64 {
    normal_quantile(u).clamp(-TABLE_MAX, TABLE_MAX)
}

/// netem's pareto table, continuous: ((1 − u)^(−1/3) − 1.5)·4/3, at most 4.
pub fn pareto(u: f64) -> f64 {
    (((1.0 - u).powf(-1.0 / 3.0) - 1.5) * 4.0 / 3.0).min(TABLE_MAX)
}

/// netem's paretonormal table, continuous: (normal(u) + 3·pareto(u))/4, clipped to ±4.
pub fn paretonormal(u: f64) -> f64 {
    ((normal(u) + 3.0 * pareto(u)) / 4.0).clamp(-TABLE_MAX, TABLE_MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normal_quantile_hits_known_points() {
        // Φ(1.959963984540054) = 0.975 etc. (values of the standard normal CDF)
        for (p, z) in [
            (0.5, 0.0),
            (0.975, 1.959963984540054),
            (0.8413447460685429, 1.0),
            (0.02275013194817921, -2.0),
            (0.0013498980316301, -3.0),
            (3.167124183311998e-05, -4.0),
            (0.9986501019683699, 3.0),
        ] {
            assert!((normal_quantile(p) - z).abs() < 1e-8, "Φ⁻¹({p}) = {}", normal_quantile(p));
        }
        // symmetric and increasing
        let mut last = f64::NEG_INFINITY;
        for i in 1..10_000 {
            let p = i as f64 / 10_000.0;
            let z = normal_quantile(p);
            assert!(z > last, "not increasing at {p}");
            assert!((z + normal_quantile(1.0 - p)).abs() < 1e-8, "not symmetric at {p}");
            last = z;
        }
    }

    #[test]
    fn pareto_spans_minus_two_thirds_to_four() {
        assert!((pareto(0.0) + 2.0 / 3.0).abs() < 1e-12);
        // (1 − u)^(−1/3) = 4.5 at 1 − u = 1/91.125: the clip starts there
        let u_clip = 1.0 - 1.0 / 4.5f64.powi(3);
        assert!((pareto(u_clip - 1e-9) - 4.0).abs() < 1e-6);
        assert_eq!(pareto(0.999), 4.0);
        // the unclipped law: Pareto(a = 3) has mean 1.5 and median 2^(1/3)
        assert!((pareto(0.5) - (2f64.powf(1.0 / 3.0) - 1.5) * 4.0 / 3.0).abs() < 1e-12);
    }

    #[test]
    fn paretonormal_is_the_weighted_sum_of_quantiles_at_the_same_u() {
        for u in [0.001, 0.1, 0.5, 0.9, 0.99] {
            let want = (normal(u) + 3.0 * pareto(u)) / 4.0;
            assert!((paretonormal(u) - want).abs() < 1e-12);
        }
        assert!((paretonormal(1e-12) - (-4.0 - 2.0) / 4.0).abs() < 1e-3, "lowest −1.5");
    }

    #[test]
    fn moments_are_those_of_netems_tables() {
        // the tables' means and standard deviations (computed from iproute2's generators):
        // normal 0 / 1, pareto −0.033 / 0.82, paretonormal −0.025 / 0.83
        let n = 1_000_000;
        for (f, m, sd) in [
            (normal as fn(f64) -> f64, 0.0, 1.0),
            (pareto, -0.033, 0.820),
            (paretonormal, -0.025, 0.834),
        ] {
            let v: Vec<f64> = (0..n).map(|i| f((i as f64 + 0.5) / n as f64)).collect();
            let mean = v.iter().sum::<f64>() / n as f64;
            let s = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            assert!((mean - m).abs() < 0.003, "mean {mean} vs {m}");
            assert!((s - sd).abs() < 0.003, "sd {s} vs {sd}");
        }
    }
}
