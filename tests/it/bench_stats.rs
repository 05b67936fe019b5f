//! Properties of the percentile function on random raw values.

use codendum_core::stats::{percentile, sorted_finite, Distribution};
use proptest::prelude::*;

proptest! {
    #[test]
    fn percentiles_are_bounded_and_monotone(
        values in prop::collection::vec(-1e6f64..1e6, 1..200),
        p in 0.0f64..=100.0,
        q in 0.0f64..=100.0,
    ) {
        let sorted = sorted_finite(values.iter().copied());
        let (lo, hi) = (sorted[0], sorted[sorted.len() - 1]);
        let at_p = percentile(&sorted, p).unwrap();
        let at_q = percentile(&sorted, q).unwrap();
        // Interpolation may round by an ulp or so; allow a relative hair.
        let eps = 1e-9 * lo.abs().max(hi.abs()).max(1.0);
        prop_assert!(lo - eps <= at_p && at_p <= hi + eps);
        if p <= q {
            prop_assert!(at_p <= at_q + eps);
        }
        prop_assert_eq!(percentile(&sorted, 0.0), Some(lo));
        prop_assert_eq!(percentile(&sorted, 100.0), Some(hi));
    }

    #[test]
    fn distribution_agrees_with_percentile(values in prop::collection::vec(0.0f64..100.0, 1..100)) {
        let sorted = sorted_finite(values.iter().copied());
        let d = Distribution::from_values(values.iter().copied()).unwrap();
        prop_assert_eq!(d.count, values.len());
        prop_assert_eq!(Some(d.p95), percentile(&sorted, 95.0));
        prop_assert!(d.min - 1e-9 <= d.mean && d.mean <= d.max + 1e-9);
    }
}
