//! Percentiles of durations some of which are still running (right
//! censored): what a window of a class knows of its coding requests. A
//! request that completed in the window has its duration; one still
//! running at the window's end has only a lower bound (how long it has run
//! so far). The percentile of all of them is then only known to lie
//! between two values: the one where every running request ends now (the
//! lowest it can be) and the one where none ever ends (the highest; none
//! when it reaches into the running ones). Plain functions.

use serde::{Deserialize, Serialize};

use super::{percentile, sorted_finite};

/// Where a percentile of partly censored durations lies, in the
/// durations' unit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CensoredBounds {
    /// The lowest it can be: every running duration ends now.
    pub lo: f64,
    /// The highest it can be: no running duration ever ends; `None` when
    /// that is without bound (the percentile falls among the running).
    pub hi: Option<f64>,
}

/// The bounds of the `p`-th percentile (`p` in `[0, 100]`, linear
/// interpolation as [`percentile`]) of `done` (complete durations) and
/// `running` (lower bounds of durations not yet complete); `None` when
/// both are empty.
pub fn censored_percentile(done: &[f64], running: &[f64], p: f64) -> Option<CensoredBounds> {
    let all = sorted_finite(done.iter().chain(running).copied());
    let lo = percentile(&all, p)?;
    let done_sorted = sorted_finite(done.iter().copied());
    let n = all.len();
    // Every running duration at +∞: ranks at or above `done_sorted.len()`
    // are without bound.
    let h = (n - 1) as f64 * p / 100.0;
    let (below, above) = (h.floor() as usize, h.ceil() as usize);
    let hi = if above < done_sorted.len() {
        let a = done_sorted[below];
        let b = done_sorted[above];
        Some(a + (h - h.floor()) * (b - a))
    } else {
        None
    };
    Some(CensoredBounds { lo, hi })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_running_is_the_plain_percentile() {
        let b = censored_percentile(&[1.0, 2.0, 3.0, 4.0], &[], 50.0).expect("values");
        assert_eq!(
            b,
            CensoredBounds {
                lo: 2.5,
                hi: Some(2.5)
            }
        );
    }

    #[test]
    fn running_durations_widen_the_median() {
        // Done 1, 2, 3; running at least 0.5 and 10 so far.
        let b = censored_percentile(&[1.0, 2.0, 3.0], &[0.5, 10.0], 50.0).expect("values");
        assert_eq!(b.lo, 2.0, "0.5, 1, 2, 3, 10");
        assert_eq!(b.hi, Some(3.0), "1, 2, 3, inf, inf");
        // Half or more running: no upper bound.
        let b = censored_percentile(&[1.0], &[5.0, 6.0], 50.0).expect("values");
        assert_eq!((b.lo, b.hi), (5.0, None));
        assert!(censored_percentile(&[], &[], 50.0).is_none());
        let b = censored_percentile(&[], &[4.0], 50.0).expect("one running");
        assert_eq!((b.lo, b.hi), (4.0, None));
    }
}
