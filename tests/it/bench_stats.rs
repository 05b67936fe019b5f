//! Properties of the percentile function on random raw values.

use codendum_core::stats::{percentile, sorted_finite, Distribution};
use codendum_testkit::cli::numpy_percentile;
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
    fn distribution_agrees_with_numpy(values in prop::collection::vec(0.0f64..100.0, 1..100)) {
        // numpy.percentile's default ("linear") written out independently
        // in the test kit, not the function the distribution calls.
        let d = Distribution::from_values(values.iter().copied()).unwrap();
        prop_assert_eq!(d.count, values.len());
        for (got, p) in [(d.p50, 50.0), (d.p95, 95.0), (d.p99, 99.0)] {
            let want = numpy_percentile(&values, p);
            prop_assert!((got - want).abs() < 1e-9, "P{} {} vs numpy {}", p, got, want);
        }
        let mean = values.iter().sum::<f64>() / values.len() as f64;
        prop_assert!((d.mean - mean).abs() < 1e-9);
    }
}

/// numpy.percentile's default rule worked by hand: h = (n − 1)·p/100,
/// v[⌊h⌋] + (h − ⌊h⌋)·(v[⌈h⌉] − v[⌊h⌋]).
#[test]
fn distribution_matches_numpy_on_known_values() {
    let d = Distribution::from_values([1.0, 2.0, 3.0, 4.0, 10.0]).unwrap();
    assert!((d.p50 - 3.0).abs() < 1e-12);
    assert!((d.p95 - 8.8).abs() < 1e-12, "{}", d.p95);
    assert!((d.p99 - 9.76).abs() < 1e-12, "{}", d.p99);
    let d = Distribution::from_values([15.0, 20.0, 35.0, 40.0, 50.0]).unwrap();
    assert!((d.p50 - 35.0).abs() < 1e-12);
    assert!((d.p95 - 48.0).abs() < 1e-12, "{}", d.p95);
    assert_eq!((d.min, d.max, d.mean), (15.0, 50.0, 32.0));
}
