//! Quantiles and tail sums of the few distributions the intervals need:
//! the standard normal, Student's t, the binomial and the Poisson. Plain
//! functions, accurate to far better than the intervals' own precision.

/// The standard normal quantile `Φ⁻¹(p)` for `p` in `(0, 1)` (Acklam's
/// rational approximation, relative error below 1.2·10⁻⁹).
pub fn normal_quantile(p: f64) -> f64 {
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] = [
        7.784_695_709_041_462e-3,
        3.224_671_290_700_398e-1,
        2.445_134_137_142_996,
        3.754_408_661_907_416,
    ];
    if p <= 0.0 {
        return f64::NEG_INFINITY;
    }
    if p >= 1.0 {
        return f64::INFINITY;
    }
    let low = 0.024_25;
    if p < low {
        let q = (-2.0 * p.ln()).sqrt();
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    } else if p <= 1.0 - low {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    } else {
        -normal_quantile(1.0 - p)
    }
}

/// Student's t quantile with `df` degrees of freedom, for `p` in `(0, 1)`:
/// exact for 1 and 2 degrees of freedom, the Cornish–Fisher expansion
/// (four terms) above, within 0.3 % of the table at 3 degrees and closer
/// beyond.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    if !(p > 0.0 && p < 1.0 && df > 0.0) {
        return f64::NAN;
    }
    if (df - 1.0).abs() < 1e-12 {
        return (std::f64::consts::PI * (p - 0.5)).tan();
    }
    if (df - 2.0).abs() < 1e-12 {
        return (2.0 * p - 1.0) / (2.0 * p * (1.0 - p)).sqrt();
    }
    let z = normal_quantile(p);
    let z2 = z * z;
    let g1 = (z2 + 1.0) * z / 4.0;
    let g2 = ((5.0 * z2 + 16.0) * z2 + 3.0) * z / 96.0;
    let g3 = (((3.0 * z2 + 19.0) * z2 + 17.0) * z2 - 15.0) * z / 384.0;
    let g4 = ((((79.0 * z2 + 776.0) * z2 + 1482.0) * z2 - 1920.0) * z2 - 945.0) * z / 92_160.0;
    z + g1 / df + g2 / df.powi(2) + g3 / df.powi(3) + g4 / df.powi(4)
}

/// The binomial distribution `Bin(n, q)`: its cumulative probabilities
/// `P(B ≤ k)` for `k` in `0..=n`, summed from the probability mass in log
/// space (no overflow for any `n`).
pub fn binomial_cdf(n: u64, q: f64) -> Vec<f64> {
    let n_usize = usize::try_from(n).unwrap_or(usize::MAX);
    let mut cdf = Vec::with_capacity(n_usize.saturating_add(1));
    if q <= 0.0 {
        cdf.resize(n_usize + 1, 1.0);
        return cdf;
    }
    if q >= 1.0 {
        cdf.resize(n_usize, 0.0);
        cdf.push(1.0);
        return cdf;
    }
    let ratio = (q / (1.0 - q)).ln();
    let mut log_pmf = n as f64 * (1.0 - q).ln();
    let mut sum = 0.0;
    for k in 0..=n {
        sum += log_pmf.exp();
        cdf.push(sum.min(1.0));
        log_pmf += ((n - k) as f64 / (k + 1) as f64).ln() + ratio;
    }
    cdf
}

/// `P(X ≤ k)` for `X` Poisson with mean `lambda`.
pub fn poisson_cdf(k: u64, lambda: f64) -> f64 {
    if lambda <= 0.0 {
        return 1.0;
    }
    let mut log_pmf = -lambda;
    let mut sum = 0.0;
    for i in 0..=k {
        sum += log_pmf.exp();
        log_pmf += lambda.ln() - ((i + 1) as f64).ln();
    }
    sum.min(1.0)
}

/// The `lambda` in `[lo, hi]` where the decreasing function `f` crosses
/// `target`, by bisection (60 halvings: exact to the float).
pub(crate) fn solve_decreasing(f: impl Fn(f64) -> f64, target: f64, lo: f64, hi: f64) -> f64 {
    let (mut lo, mut hi) = (lo, hi);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if f(mid) > target {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo <= f64::EPSILON * hi.abs().max(1e-300) {
            break;
        }
    }
    0.5 * (lo + hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn normal_quantiles_match_the_table() {
        assert!(close(normal_quantile(0.975), 1.959_964, 1e-6));
        assert!(close(normal_quantile(0.5), 0.0, 1e-12));
        assert!(close(normal_quantile(0.001), -3.090_232, 1e-6));
        assert!(close(normal_quantile(0.8413), 0.999_815, 1e-4));
    }

    #[test]
    fn t_quantiles_match_the_table() {
        // Student's t, two-sided 95 % (p = 0.975).
        for (df, want) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (3.0, 3.182),
            (4.0, 2.776),
            (5.0, 2.571),
            (9.0, 2.262),
            (19.0, 2.093),
            (30.0, 2.042),
            (1000.0, 1.962),
        ] {
            let got = t_quantile(0.975, df);
            assert!((got / want - 1.0).abs() < 0.003, "df {df}: {got} vs {want}");
        }
    }

    #[test]
    fn binomial_and_poisson_sums_are_distributions() {
        let c = binomial_cdf(5, 0.95);
        // P(B ≤ 3) for Bin(5, 0.95) = 1 − 0.95⁵ − 5·0.95⁴·0.05.
        let want = 1.0 - 0.95f64.powi(5) - 5.0 * 0.95f64.powi(4) * 0.05;
        assert!(close(c[3], want, 1e-12), "{}", c[3]);
        assert!(close(c[5], 1.0, 1e-12));
        let big = binomial_cdf(200_000, 0.5);
        assert!(
            close(big[100_000], 0.5 + 0.5 * 0.001_784, 1e-4),
            "{}",
            big[100_000]
        );
        assert!(close(poisson_cdf(0, 2.0), (-2.0f64).exp(), 1e-12));
        assert!(close(poisson_cdf(3, 2.0), 0.857_123, 1e-6));
    }
}
