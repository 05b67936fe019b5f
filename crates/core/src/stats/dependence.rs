//! How much a series of dependent values is worth, for the percentile
//! intervals ([`super::interval`]).
//!
//! Latencies measured one after another are not independent: calls queued
//! behind the same burst wait alike, and a class's queue stays long for
//! minutes. The exact binomial ranks of a percentile interval count on the
//! indicator "value at or below the percentile" being independent from one
//! value to the next; when it is not, the estimate varies more, as if
//! there were fewer values. The **variance inflation** `τ` is that
//! indicator's variance of the mean over the independent one, `q(1 − q)/n`,
//! estimated by batch means of the indicator taken in time order (the
//! series cut into about `∛n` consecutive batches, [`dependence_batches`]).
//! The batches are long on purpose: a class's calls depend on each other
//! over long stretches (one student's coding request of eighty calls, a
//! queue that builds and drains over minutes), and batches shorter than
//! those stretches see them as noise inside a batch and miss part of the
//! inflation. Fewer, longer batches catch more of it; the Student `t`
//! below pays for the fewer batches.
//!
//! The interval of a dependent series is the independent order-statistic
//! interval with each side's distance from the estimate (at least to the
//! next distinct value, where many values equal the estimate) stretched by
//! `√τ · t/z` (the estimate's standard error grows by `√τ`, by the
//! Bahadur representation of a sample quantile, and `τ` is itself
//! estimated from `b` batches, hence Student's `t` over `b − 1` degrees of
//! freedom instead of the normal `z`). The stretch is never below 1, so an
//! interval is never narrower than the independent one; with independent
//! values it is the exact binomial interval.
//!
//! What no single run can show is a memory longer than the run itself: a
//! rate level near saturation whose queue builds for minutes, measured for
//! a few minutes, looks independent inside. Such a level is recognised by
//! how far its tail stretches beyond its unloaded TTFTs
//! ([`crate::results::records::RateFigures::queued`]), and its tail
//! intervals are left open above (`results::level`); repeated runs measure
//! its spread. `docs/validation.md` measures where the intervals hold.

use super::interval::{batches_near, percentile_interval, Interval, CONFIDENCE, MIN_BATCHES};
use super::quantiles::{normal_quantile, t_quantile};
use super::{percentile, sorted_finite};

/// How many consecutive batches a series of `items` values is cut into to
/// estimate its variance inflation: the cube root of the count, rounded,
/// between [`MIN_BATCHES`] and 20, and never fewer than 4 values a batch;
/// `None` with fewer than 16 values. The cube root (rather than the square
/// root of [`super::interval::batch_count`]) gives batches long against the
/// stretches a class's calls share: 177 calls make 6 batches of 29, not 13
/// of 13.
pub fn dependence_batches(items: usize) -> Option<usize> {
    batches_near(items, (items as f64).cbrt())
}

/// The variance inflation `τ` of the indicator "at or below the `p`-th
/// percentile" over `values_in_order` (time order), and the batches it was
/// estimated from: `(τ, b)`, `τ ≥ 1`. Each batch holds at least `round`
/// consecutive values (a closed-loop level's N: a round of the N slots, so
/// the pattern every round repeats, the first requests of a burst answered
/// first, is not taken for noise). `None` with fewer than
/// [`MIN_BATCHES`] batches, or when every value lies on one side (nothing
/// to estimate).
pub fn variance_inflation(values_in_order: &[f64], p: f64, round: usize) -> Option<(f64, usize)> {
    let n = values_in_order.len();
    // Whole rounds a batch: the batch length of about ∛n batches, rounded
    // up to a multiple of the round.
    let round = round.max(1);
    let per = (n / dependence_batches(n)?).div_ceil(round) * round;
    let b = n / per;
    if b < MIN_BATCHES {
        return None;
    }
    let sorted = sorted_finite(values_in_order.iter().copied());
    let at = percentile(&sorted, p)?;
    let below: Vec<f64> = values_in_order
        .iter()
        .map(|v| f64::from(u8::from(*v <= at)))
        .collect();
    let share = below.iter().sum::<f64>() / n as f64;
    let spread = share * (1.0 - share);
    if spread <= 0.0 {
        return None;
    }
    let means: Vec<f64> = (0..b)
        .map(|i| below[i * per..(i + 1) * per].iter().sum::<f64>() / per as f64)
        .collect();
    let centre = means.iter().sum::<f64>() / b as f64;
    let var = means.iter().map(|m| (m - centre).powi(2)).sum::<f64>() / (b - 1) as f64;
    Some(((per as f64 * var / spread).max(1.0), b))
}

/// How far a dependent series' percentile interval reaches beyond the
/// independent one: `max(1, √τ · t(b − 1)/z)` (see the module
/// documentation); 1 when `τ` cannot be estimated.
pub fn stretch(values_in_order: &[f64], p: f64, round: usize) -> f64 {
    let Some((tau, b)) = variance_inflation(values_in_order, p, round) else {
        return 1.0;
    };
    if tau <= 1.0 {
        return 1.0;
    }
    let tail = 1.0 - (1.0 - CONFIDENCE) / 2.0;
    let t = t_quantile(tail, (b - 1) as f64) / normal_quantile(tail);
    (tau.sqrt() * t).max(1.0)
}

/// The 95 % interval of the `p`-th percentile of values taken in time
/// order: the exact binomial order-statistic interval, stretched around
/// the estimate for the series' dependence ([`stretch`]). A bound the
/// independent interval leaves open stays open; a stretched lower bound
/// is never below the smallest value, an upper never above the largest
/// (the data give no support beyond them). `None` without values.
pub fn percentile_interval_in_order(values_in_order: &[f64], p: f64) -> Option<Interval> {
    percentile_interval_in_rounds(values_in_order, p, 1)
}

/// [`percentile_interval_in_order`] for values that come in rounds of
/// `round` (a closed-loop level with `round` requests in flight): the
/// dependence is read between rounds, not within one.
pub fn percentile_interval_in_rounds(
    values_in_order: &[f64],
    p: f64,
    round: usize,
) -> Option<Interval> {
    let finite: Vec<f64> = values_in_order
        .iter()
        .copied()
        .filter(|v| v.is_finite())
        .collect();
    let sorted = sorted_finite(finite.iter().copied());
    let plain = percentile_interval(&sorted, p)?;
    let k = stretch(&finite, p, round);
    let estimate = percentile(&sorted, p)?;
    let (min, max) = (*sorted.first()?, *sorted.last()?);
    if k <= 1.0 {
        return Some(plain);
    }
    // A bound on a value many share (the twin's steps make whole runs of
    // equal TTFTs) is no distance from the estimate, and stretching nothing
    // gives nothing: the side reaches at least to the next value beyond.
    let below = sorted.iter().rev().copied().find(|v| *v < estimate);
    let above = sorted.iter().copied().find(|v| *v > estimate);
    let lo_base = |lo: f64| {
        if lo < estimate {
            lo
        } else {
            below.unwrap_or(lo)
        }
    };
    let hi_base = |hi: f64| {
        if hi > estimate {
            hi
        } else {
            above.unwrap_or(hi)
        }
    };
    Some(Interval {
        lo: plain
            .lo
            .map(|lo| (estimate - k * (estimate - lo_base(lo))).max(min)),
        hi: plain
            .hi
            .map(|hi| (estimate + k * (hi_base(hi) - estimate)).min(max)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn independent_values_keep_the_exact_interval() {
        // A scrambled ramp (no runs): τ near 1, the interval the exact one.
        let v: Vec<f64> = (0..400u64).map(|i| ((i * 7919) % 400) as f64).collect();
        let (tau, b) = variance_inflation(&v, 50.0, 1).expect("enough values");
        assert!(tau < 2.0 && b == 7, "{tau} {b}");
        assert!(variance_inflation(&v[..15], 50.0, 1).is_none());
        assert_eq!(stretch(&v[..15], 50.0, 1), 1.0);
        // Whole rounds a batch: rounds of 100 leave the fewest batches
        // allowed, rounds of 101 too few.
        assert_eq!(variance_inflation(&v, 50.0, 100).map(|x| x.1), Some(4));
        assert!(variance_inflation(&v, 50.0, 101).is_none());
        assert_eq!(variance_inflation(&v, 50.0, 20).map(|x| x.1), Some(6));
        assert_eq!(variance_inflation(&v, 50.0, 25).map(|x| x.1), Some(5));
        let sorted = sorted_finite(v.iter().copied());
        let plain = percentile_interval(&sorted, 50.0).expect("values");
        let got = percentile_interval_in_order(&v, 50.0).expect("values");
        assert!(
            got.lo <= plain.lo && got.hi >= plain.hi,
            "{got:?} {plain:?}"
        );
    }

    #[test]
    fn dependence_batches_are_about_the_cube_root() {
        assert_eq!(dependence_batches(15), None);
        assert_eq!(dependence_batches(16), Some(4));
        assert_eq!(dependence_batches(177), Some(6));
        assert_eq!(dependence_batches(200), Some(6));
        assert_eq!(dependence_batches(1_000), Some(10));
        assert_eq!(dependence_batches(100_000), Some(20));
    }

    #[test]
    fn a_pattern_every_round_repeats_is_no_dependence() {
        // Twenty-four slots answered in order, round after round: within a
        // round the values rise, between rounds nothing changes. Read value
        // by value, 8 batches of 60 (two and a half rounds) alternate
        // between more and fewer low values.
        let v: Vec<f64> = (0..480u64).map(|i| (i % 24) as f64).collect();
        assert!(
            stretch(&v, 50.0, 1) > 1.0,
            "read value by value it looks dependent"
        );
        assert_eq!(stretch(&v, 50.0, 24), 1.0, "read by rounds it is not");
    }

    #[test]
    fn a_bound_on_a_shared_value_still_stretches() {
        // Runs of forty equal values: the plain interval of P50 sits on one
        // of them; stretched, it reaches the values either side.
        let v: Vec<f64> = (0..400u64).map(|i| (i / 40 % 5) as f64).collect();
        let sorted = sorted_finite(v.iter().copied());
        let plain = percentile_interval(&sorted, 50.0).expect("values");
        assert_eq!((plain.lo, plain.hi), (Some(2.0), Some(2.0)));
        let got = percentile_interval_in_order(&v, 50.0).expect("values");
        assert!(got.lo < Some(2.0) && got.hi > Some(2.0), "{got:?}");
    }

    #[test]
    fn long_runs_stretch_the_interval() {
        // Values in blocks of 40 alike: each block is nearly one draw.
        let v: Vec<f64> = (0..400u64)
            .map(|i| ((i / 40 * 7919) % 10) as f64 + (i % 40) as f64 * 1e-3)
            .collect();
        let (tau, _) = variance_inflation(&v, 50.0, 1).expect("enough values");
        assert!(tau > 5.0, "{tau}");
        let wide = percentile_interval_in_order(&v, 50.0).expect("values");
        let sorted = sorted_finite(v.iter().copied());
        let narrow = percentile_interval(&sorted, 50.0).expect("values");
        assert!(
            wide.lo < narrow.lo && wide.hi > narrow.hi,
            "{wide:?} {narrow:?}"
        );
        assert!(wide.lo >= sorted.first().copied() && wide.hi <= sorted.last().copied());
    }
}
