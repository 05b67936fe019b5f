//! 95 % confidence intervals, one method per kind of figure (plain
//! functions; the table of figures says which figure uses which,
//! [`crate::results::metrics`]):
//!
//! - **Percentiles** ([`percentile_interval`]): distribution-free, from
//!   order statistics with exact binomial ranks. For `n` values and the
//!   quantile `q`, the number `B` of values at or below the true quantile is
//!   `Bin(n, q)`; the lower bound is the `r`-th smallest value for the
//!   largest `r` with `P(B ≤ r − 1) ≤ 2.5 %`, the upper bound the `s`-th for
//!   the smallest `s` with `P(B ≥ s) ≤ 2.5 %`, so the interval holds the
//!   true quantile with at least 95 % probability whatever the distribution.
//!   When no such rank exists the bound is **open**: `P99` needs 368
//!   values for an upper bound (`0.99ⁿ ≤ 2.5 %`), `P95` 72, `P50` 6; fewer
//!   give "at least `X`", said as such. Values that depend on each other
//!   (calls queued behind the same burst) carry less information than
//!   their count: [`percentile_interval_dependent`] uses the same ranks for
//!   an effective number of values ([`super::dependence`]).
//! - **Shares** ([`wilson`]): the Wilson score interval of a binomial
//!   proportion, which stays inside `[0, 1]` and keeps its coverage near
//!   95 % for small counts and shares near 0 or 1, where the normal
//!   approximation fails.
//! - **Rates and means over a window** ([`batch_means`]): the window is cut
//!   into consecutive batches, the figure computed in each, and a Student
//!   t interval formed from the batch values. Batches long against the
//!   correlation time of the load are nearly independent even when single
//!   requests are not, which is why simulation output analysis uses this
//!   method for steady-state throughput.
//! - **Counts of independent events over a window** ([`poisson_rate`]): the
//!   exact (Garwood) Poisson interval of the count, over the exposure. The
//!   coding requests a class completes are many students' independent
//!   streams merged, which tend to a Poisson process.

use serde::{Deserialize, Serialize};

use super::quantiles::{binomial_cdf, normal_quantile, poisson_cdf, solve_decreasing, t_quantile};

/// The confidence level of every interval codendum reports.
pub const CONFIDENCE: f64 = 0.95;

/// The probability left in each tail of a two-sided interval at
/// [`CONFIDENCE`].
const TAIL: f64 = (1.0 - CONFIDENCE) / 2.0;

/// A 95 % confidence interval in the figure's own unit. A bound that the
/// data cannot give is open (`None`): a percentile from too few values has
/// no upper bound, and says so rather than inventing one.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    /// The lower bound; `None`: open below (the data cannot bound it).
    pub lo: Option<f64>,
    /// The upper bound; `None`: open above.
    pub hi: Option<f64>,
}

impl Interval {
    /// A closed interval `[lo, hi]`.
    pub fn closed(lo: f64, hi: f64) -> Interval {
        Interval {
            lo: Some(lo.min(hi)),
            hi: Some(hi.max(lo)),
        }
    }

    /// Whether `x` lies inside (an open bound holds everything on its side).
    pub fn contains(&self, x: f64) -> bool {
        self.lo.is_none_or(|lo| lo <= x) && self.hi.is_none_or(|hi| x <= hi)
    }

    /// Whether both bounds are known.
    pub fn is_closed(&self) -> bool {
        self.lo.is_some() && self.hi.is_some()
    }

    /// The interval with both bounds multiplied by `factor` (> 0): seconds to
    /// minutes, fractions to percent.
    pub fn scaled(self, factor: f64) -> Interval {
        Interval {
            lo: self.lo.map(|v| v * factor),
            hi: self.hi.map(|v| v * factor),
        }
    }

    /// The interval moved by `delta` (both bounds).
    pub fn shifted(self, delta: f64) -> Interval {
        Interval {
            lo: self.lo.map(|v| v + delta),
            hi: self.hi.map(|v| v + delta),
        }
    }

    /// Whether two intervals share a point (open bounds reach to infinity).
    pub fn overlaps(&self, other: &Interval) -> bool {
        let below = |a: &Interval, b: &Interval| match (a.hi, b.lo) {
            (Some(hi), Some(lo)) => hi < lo,
            _ => false,
        };
        !below(self, other) && !below(other, self)
    }
}

/// The 1-based ranks of the order statistics bounding the quantile `q` (a
/// fraction in `(0, 1)`) in `n` independent values: `(r, s)` with
/// `P(r ≤ B ≤ s − 1) ≥ 95 %` for `B ~ Bin(n, q)`, each tail at most 2.5 %.
/// `None` for a bound no rank gives (too few values).
pub fn rank_bounds(n: u64, q: f64) -> (Option<u64>, Option<u64>) {
    if n == 0 || !(q > 0.0 && q < 1.0) {
        return (None, None);
    }
    let cdf = binomial_cdf(n, q);
    // Largest r with P(B ≤ r − 1) ≤ TAIL: cdf[r − 1] ≤ TAIL.
    let below = cdf.partition_point(|&c| c <= TAIL);
    let lo = (below >= 1).then_some(below as u64);
    // Smallest s with P(B ≥ s) = 1 − cdf[s − 1] ≤ TAIL.
    let s = cdf.partition_point(|&c| 1.0 - c > TAIL) as u64 + 1;
    let hi = (s <= n).then_some(s);
    (lo, hi)
}

/// The interval of the `p`-th percentile (`p` in `(0, 100)`) of independent
/// values sorted ascending (see the module documentation); `None` for no
/// values or a `p` outside `(0, 100)`.
pub fn percentile_interval(sorted: &[f64], p: f64) -> Option<Interval> {
    percentile_interval_dependent(sorted, p, sorted.len() as f64)
}

/// The interval of the `p`-th percentile of values sorted ascending whose
/// information is that of `effective_n` independent values (at most their
/// number): the binomial ranks are found for `⌊effective_n⌋` values and
/// scaled to the sample, the lower rank down and the upper up. With
/// `effective_n` equal to the number of values this is
/// [`percentile_interval`]. The interval always holds the reported
/// estimate ([`super::percentile`]): for an extreme percentile of a few
/// values, numpy's interpolation can fall just below the lowest order
/// statistic the ranks admit, and the bound then moves down to it (wider,
/// never narrower).
pub fn percentile_interval_dependent(sorted: &[f64], p: f64, effective_n: f64) -> Option<Interval> {
    let n = sorted.len() as u64;
    if n == 0 || !(p > 0.0 && p < 100.0) {
        return None;
    }
    let m = if effective_n.is_finite() {
        (effective_n.floor() as u64).clamp(1, n)
    } else {
        n
    };
    let (r, s) = rank_bounds(m, p / 100.0);
    let scale = |rank: u64, up: bool| -> usize {
        let x = rank as f64 * n as f64 / m as f64;
        let rank = if up { x.ceil() } else { x.floor() };
        (rank as u64).clamp(1, n) as usize
    };
    let estimate = super::percentile(sorted, p)?;
    Some(Interval {
        lo: r.map(|r| sorted[scale(r, false) - 1].min(estimate)),
        hi: s.map(|s| sorted[scale(s, true) - 1].max(estimate)),
    })
}

/// The smallest number of independent values that bounds the `p`-th
/// percentile on both sides (at 95 %): 6 for P50, 72 for P95, 368 for P99.
pub fn values_for_closed_interval(p: f64) -> u64 {
    let q = p / 100.0;
    if !(q > 0.0 && q < 1.0) {
        return u64::MAX;
    }
    // Each side needs its extreme order statistic: qⁿ ≤ TAIL and (1 − q)ⁿ ≤ TAIL.
    let side = |x: f64| (TAIL.ln() / x.ln()).ceil() as u64;
    side(q).max(side(1.0 - q))
}

/// The Wilson score interval of a share: `successes` of `trials`. `None`
/// without trials.
pub fn wilson(successes: u64, trials: u64) -> Option<Interval> {
    if trials == 0 {
        return None;
    }
    let n = trials as f64;
    let share = (successes.min(trials)) as f64 / n;
    let z = normal_quantile(1.0 - TAIL);
    let z2 = z * z;
    let centre = (share + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = z / (1.0 + z2 / n) * (share * (1.0 - share) / n + z2 / (4.0 * n * n)).sqrt();
    Some(Interval::closed(
        (centre - half).max(0.0),
        (centre + half).min(1.0),
    ))
}

/// The exact (Garwood) interval of a Poisson rate: `count` events over
/// `exposure` (seconds, hours: the rate's denominator). `None` for an
/// exposure that is not above 0.
pub fn poisson_rate(count: u64, exposure: f64) -> Option<Interval> {
    if !(exposure > 0.0 && exposure.is_finite()) {
        return None;
    }
    let k = count as f64;
    let top = k + 20.0 * (k + 1.0).sqrt() + 20.0;
    // Lower: P(X ≥ k; λ) = TAIL, i.e. P(X ≤ k − 1; λ) = 1 − TAIL.
    let lo = if count == 0 {
        0.0
    } else {
        solve_decreasing(|l| poisson_cdf(count - 1, l), 1.0 - TAIL, 0.0, top)
    };
    // Upper: P(X ≤ k; λ) = TAIL.
    let hi = solve_decreasing(|l| poisson_cdf(count, l), TAIL, 0.0, top);
    Some(Interval::closed(lo / exposure, hi / exposure))
}

/// The mean of `batches` (one value per batch of a window) and its Student t
/// interval over `batches − 1` degrees of freedom; `None` for fewer than two
/// batches or a value that is not finite.
pub fn batch_means(batches: &[f64]) -> Option<(f64, Interval)> {
    let b = batches.len();
    if b < 2 || batches.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mean = batches.iter().sum::<f64>() / b as f64;
    let var = batches.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (b - 1) as f64;
    let half = t_quantile(1.0 - TAIL, (b - 1) as f64) * (var / b as f64).sqrt();
    Some((mean, Interval::closed(mean - half, mean + half)))
}

/// The fewest batches a batch-means interval is formed from: with fewer,
/// the spread between batches says too little (Student's t at 2 degrees of
/// freedom is already 4.3).
pub const MIN_BATCHES: usize = 4;

/// How many batches a window of `items` values is cut into for
/// [`batch_means`]: about the square root of the count, between
/// [`MIN_BATCHES`] and 20, and never fewer than 4 values a batch; `None`
/// when there are fewer than 16 values (four batches of four).
pub fn batch_count(items: usize) -> Option<usize> {
    batches_near(items, (items as f64).sqrt())
}

/// `wanted` batches (rounded) for `items` values, kept between
/// [`MIN_BATCHES`] and 20 and to at least 4 values a batch; `None` when
/// there are fewer than 16 values.
pub(crate) fn batches_near(items: usize, wanted: f64) -> Option<usize> {
    let most = items / 4;
    if most < MIN_BATCHES {
        return None;
    }
    Some((wanted.round() as usize).clamp(MIN_BATCHES, 20).min(most))
}

/// The interval of the mean of `values` taken in order (time order), by
/// batch means over [`batch_count`] consecutive batches, centred on the
/// mean of all the values (the last batch takes the remainder, so the
/// batches' mean can differ from it in the last digits); `None` for too few
/// values.
pub fn mean_interval(values_in_order: &[f64]) -> Option<Interval> {
    let b = batch_count(values_in_order.len())?;
    let per = values_in_order.len() / b;
    let batches: Vec<f64> = (0..b)
        .map(|i| {
            let end = if i + 1 == b {
                values_in_order.len()
            } else {
                (i + 1) * per
            };
            let chunk = &values_in_order[i * per..end];
            chunk.iter().sum::<f64>() / chunk.len() as f64
        })
        .collect();
    let all = values_in_order.iter().sum::<f64>() / values_in_order.len() as f64;
    let floor = values_in_order.iter().all(|v| *v >= 0.0).then_some(0.0);
    batch_means(&batches).map(|(centre, i)| {
        // The mean of values that are never negative is not either.
        let i = i.shifted(all - centre);
        Interval {
            lo: i.lo.map(|lo| floor.map_or(lo, |f: f64| lo.max(f))),
            hi: i.hi,
        }
    })
}

#[cfg(test)]
mod tests;
