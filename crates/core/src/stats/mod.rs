//! Percentiles and summaries of raw values. Plain functions: no I/O, no
//! tokio, no clock.
//!
//! Percentiles use linear interpolation between closest ranks (numpy's
//! default, `method="linear"`): for sorted values `x[0..n)` and `p` in
//! `[0, 100]`, `h = (n − 1)·p/100` and the result is
//! `x[⌊h⌋] + (h − ⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋])`. They are always computed from
//! the raw values, never from a bucketed histogram.
//!
//! Every percentile, share and rate a run reports carries a 95 % confidence
//! interval ([`interval`]); values that depend on each other count for
//! fewer ([`dependence`]).

pub mod dependence;
pub mod interval;
pub mod quantiles;

pub use interval::{
    batch_means, mean_interval, percentile_interval, percentile_interval_dependent, poisson_rate,
    wilson, Interval, CONFIDENCE,
};

use serde::{Deserialize, Serialize};

pub mod censored;

/// The `p`-th percentile (`p` in `[0, 100]`) of values sorted ascending, by
/// linear interpolation between closest ranks.
///
/// Returns `None` for an empty slice, or for a `p` that is not a finite
/// number in `[0, 100]`. The caller guarantees the order (see
/// [`sorted_finite`]); unsorted input gives a meaningless but finite answer,
/// never a panic.
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    if sorted.is_empty() || !p.is_finite() || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let n = sorted.len();
    let h = (n - 1) as f64 * p / 100.0;
    let lo = h.floor();
    // lo <= n − 1 because p <= 100; the cast cannot overflow.
    let i = (lo as usize).min(n - 1);
    let below = sorted[i];
    match sorted.get(i + 1) {
        Some(&above) => Some(below + (h - lo) * (above - below)),
        None => Some(below),
    }
}

/// The finite values of `values`, sorted ascending (NaN and infinities are
/// dropped).
pub fn sorted_finite(values: impl IntoIterator<Item = f64>) -> Vec<f64> {
    let mut v: Vec<f64> = values.into_iter().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// The arithmetic mean of the finite values, or `None` when there are none.
pub fn mean(values: impl IntoIterator<Item = f64>) -> Option<f64> {
    let (sum, count) = values
        .into_iter()
        .filter(|x| x.is_finite())
        .fold((0.0, 0u64), |(s, c), x| (s + x, c + 1));
    (count > 0).then(|| sum / count as f64)
}

/// A summary of a set of raw values, in the values' own unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// Number of finite values summarised.
    pub count: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Smallest value.
    pub min: f64,
    /// Median (50th percentile).
    pub p50: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Largest value.
    pub max: f64,
}

impl Distribution {
    /// Summarises the finite values among `values` (any order). `None` when
    /// there are none.
    pub fn from_values(values: impl IntoIterator<Item = f64>) -> Option<Self> {
        let sorted = sorted_finite(values);
        Self::from_sorted(&sorted)
    }

    /// Summarises values already sorted ascending and finite (as returned by
    /// [`sorted_finite`]). `None` for an empty slice.
    pub fn from_sorted(sorted: &[f64]) -> Option<Self> {
        let min = *sorted.first()?;
        let max = *sorted.last()?;
        Some(Distribution {
            count: sorted.len(),
            mean: mean(sorted.iter().copied())?,
            min,
            p50: percentile(sorted, 50.0)?,
            p95: percentile(sorted, 95.0)?,
            p99: percentile(sorted, 99.0)?,
            max,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    // Expected values are what numpy.percentile(x, p) gives (method="linear").
    #[test]
    fn matches_numpy_linear() {
        let x = [1.0, 2.0, 3.0, 4.0];
        assert!(close(percentile(&x, 50.0).unwrap(), 2.5));
        assert!(close(percentile(&x, 95.0).unwrap(), 3.85));
        assert!(close(percentile(&x, 99.0).unwrap(), 3.97));
        assert!(close(percentile(&x, 0.0).unwrap(), 1.0));
        assert!(close(percentile(&x, 100.0).unwrap(), 4.0));
        let y = [15.0, 20.0, 35.0, 40.0, 50.0];
        assert!(close(percentile(&y, 40.0).unwrap(), 29.0));
        assert!(close(percentile(&y, 50.0).unwrap(), 35.0));
        assert!(close(percentile(&y, 25.0).unwrap(), 20.0));
        assert!(close(percentile(&y, 90.0).unwrap(), 46.0));
        // numpy.percentile(range(1, 11), [50, 95, 99]) == [5.5, 9.55, 9.91]
        let z: Vec<f64> = (1..=10).map(f64::from).collect();
        assert!(close(percentile(&z, 50.0).unwrap(), 5.5));
        assert!(close(percentile(&z, 95.0).unwrap(), 9.55));
        assert!(close(percentile(&z, 99.0).unwrap(), 9.91));
    }

    #[test]
    fn edge_cases() {
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&[7.0], 99.0), Some(7.0));
        assert_eq!(percentile(&[1.0, 2.0], -1.0), None);
        assert_eq!(percentile(&[1.0, 2.0], 100.5), None);
        assert_eq!(percentile(&[1.0, 2.0], f64::NAN), None);
    }

    #[test]
    fn distribution_from_unsorted_values_drops_non_finite() {
        let d = Distribution::from_values([4.0, f64::NAN, 1.0, 3.0, 2.0, f64::INFINITY]).unwrap();
        assert_eq!(d.count, 4);
        assert!(close(d.mean, 2.5));
        assert!(close(d.min, 1.0));
        assert!(close(d.max, 4.0));
        assert!(close(d.p50, 2.5));
        assert!(close(d.p95, 3.85));
        assert!(close(d.p99, 3.97));
        assert!(Distribution::from_values([f64::NAN]).is_none());
        assert_eq!(mean(Vec::<f64>::new()), None);
    }
}
