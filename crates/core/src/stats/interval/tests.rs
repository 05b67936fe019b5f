//! Tests of [`super`]: the ranks against hand-computed binomial sums, and
//! each interval's coverage on seeded independent samples.

use super::*;
use crate::stats::{percentile, sorted_finite};

/// A seeded generator (SplitMix64) for the Monte Carlo checks.
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in (0, 1).
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }

    /// Exponential with mean 1.
    fn exponential(&mut self) -> f64 {
        -self.uniform().ln()
    }
}

#[test]
fn ranks_follow_the_binomial_tails() {
    // n = 5, P95: P(B ≤ 3) = 0.0226 ≤ 2.5 % < P(B ≤ 4): the lower bound is
    // the 4th value; P(B ≥ 5) = 0.774: no upper bound.
    assert_eq!(rank_bounds(5, 0.95), (Some(4), None));
    // n = 100, P50: the classic ranks 40 and 61.
    assert_eq!(rank_bounds(100, 0.5), (Some(40), Some(61)));
    // P99 needs 368 values for an upper bound, P95 72, P50 6.
    assert_eq!(values_for_closed_interval(99.0), 368);
    assert_eq!(values_for_closed_interval(95.0), 72);
    assert_eq!(values_for_closed_interval(50.0), 6);
    assert!(rank_bounds(367, 0.99).1.is_none());
    assert!(rank_bounds(368, 0.99).1.is_some());
    assert!(rank_bounds(71, 0.95).1.is_none());
    assert!(rank_bounds(72, 0.95).1.is_some());
    assert_eq!(rank_bounds(0, 0.5), (None, None));
}

#[test]
fn a_percentile_interval_holds_its_estimate() {
    let mut rng = Rng(7);
    for n in [1usize, 2, 5, 6, 10, 33, 64, 72, 100, 367, 368, 1000] {
        let values = sorted_finite((0..n).map(|_| rng.exponential()));
        for p in [5.0, 50.0, 95.0, 99.0] {
            let est = percentile(&values, p).expect("values");
            let i = percentile_interval(&values, p).expect("values");
            assert!(i.contains(est), "n {n} p {p}: {est} outside {i:?}");
            if n as u64 >= values_for_closed_interval(p) {
                assert!(i.is_closed(), "n {n} p {p}: {i:?}");
            }
        }
    }
    assert!(percentile_interval(&[], 50.0).is_none());
    assert!(percentile_interval(&[1.0], 100.0).is_none());
}

#[test]
fn percentile_intervals_cover_the_true_quantile_of_independent_values() {
    // Exponential(1): the q-quantile is −ln(1 − q). 2000 seeded samples
    // per case; the exact ranks guarantee at least 95 % (less the Monte
    // Carlo error, 0.5 %).
    let mut rng = Rng(11);
    for (n, p) in [
        (20, 50.0),
        (64, 50.0),
        (100, 95.0),
        (400, 95.0),
        (600, 99.0),
    ] {
        let truth = -(1.0f64 - p / 100.0).ln();
        let trials = 2000;
        let covered = (0..trials)
            .filter(|_| {
                let v = sorted_finite((0..n).map(|_| rng.exponential()));
                percentile_interval(&v, p).is_some_and(|i| i.contains(truth))
            })
            .count();
        let share = covered as f64 / trials as f64;
        assert!(
            (0.94..=0.99).contains(&share),
            "n {n} p {p}: coverage {share}"
        );
    }
}

#[test]
fn fewer_effective_values_widen_the_interval() {
    let values: Vec<f64> = (1..=400).map(f64::from).collect();
    let full = percentile_interval(&values, 50.0).expect("values");
    let tenth = percentile_interval_dependent(&values, 50.0, 40.0).expect("values");
    assert!(
        tenth.lo < full.lo && tenth.hi > full.hi,
        "{tenth:?} {full:?}"
    );
    let same = percentile_interval_dependent(&values, 50.0, 400.0).expect("values");
    assert_eq!(same, full);
    // Twenty effective values cannot bound P95 from above.
    let few = percentile_interval_dependent(&values, 95.0, 20.0).expect("values");
    assert!(few.lo.is_some() && few.hi.is_none(), "{few:?}");
}

#[test]
fn wilson_intervals_match_the_textbook_and_cover() {
    // 0 of 10: [0, 0.278]; 5 of 10: [0.237, 0.763].
    let i = wilson(0, 10).expect("trials");
    assert_eq!(i.lo, Some(0.0));
    assert!((i.hi.unwrap_or(0.0) - 0.2775).abs() < 1e-3, "{i:?}");
    let i = wilson(5, 10).expect("trials");
    assert!((i.lo.unwrap_or(0.0) - 0.2366).abs() < 1e-3, "{i:?}");
    assert!(wilson(1, 0).is_none());
    let mut rng = Rng(3);
    for (n, share) in [(30u64, 0.05), (200, 0.02), (500, 0.95)] {
        let trials = 2000;
        let covered = (0..trials)
            .filter(|_| {
                let k = (0..n).filter(|_| rng.uniform() < share).count() as u64;
                wilson(k, n).is_some_and(|i| i.contains(share))
            })
            .count();
        let c = covered as f64 / trials as f64;
        assert!((0.92..=0.99).contains(&c), "n {n} share {share}: {c}");
    }
}

#[test]
fn poisson_intervals_are_garwoods() {
    // 0 events: [0, 3.689]; 10 events: [4.795, 18.39] (standard tables).
    let i = poisson_rate(0, 1.0).expect("exposure");
    assert_eq!(i.lo, Some(0.0));
    assert!((i.hi.unwrap_or(0.0) - 3.689).abs() < 1e-3, "{i:?}");
    let i = poisson_rate(10, 2.0).expect("exposure");
    assert!((i.lo.unwrap_or(0.0) * 2.0 - 4.795).abs() < 1e-3, "{i:?}");
    assert!((i.hi.unwrap_or(0.0) * 2.0 - 18.39).abs() < 1e-2, "{i:?}");
    assert!(poisson_rate(3, 0.0).is_none());
}

#[test]
fn batch_means_cover_the_mean_of_independent_batches() {
    let (mean, i) = batch_means(&[1.0, 2.0, 3.0]).expect("batches");
    assert_eq!(mean, 2.0);
    // t(0.975, 2) = 4.303; sd 1; half-width 4.303/√3.
    assert!((i.hi.unwrap_or(0.0) - (2.0 + 4.303 / 3f64.sqrt())).abs() < 1e-2);
    assert!(batch_means(&[1.0]).is_none());
    assert_eq!(batch_count(15), None);
    assert_eq!(batch_count(16), Some(4));
    assert_eq!(batch_count(100), Some(10));
    assert_eq!(batch_count(10_000), Some(20));
    let mut rng = Rng(5);
    let trials = 2000;
    let covered = (0..trials)
        .filter(|_| {
            let v: Vec<f64> = (0..60).map(|_| rng.exponential()).collect();
            mean_interval(&v).is_some_and(|i| i.contains(1.0))
        })
        .count();
    let c = covered as f64 / trials as f64;
    assert!((0.92..=0.98).contains(&c), "{c}");
}

#[test]
fn intervals_scale_contain_and_overlap() {
    let a = Interval::closed(1.0, 2.0);
    let b = Interval::closed(2.5, 3.0);
    assert!(!a.overlaps(&b) && !b.overlaps(&a));
    let open = Interval {
        lo: Some(1.5),
        hi: None,
    };
    assert!(open.overlaps(&b) && open.contains(1e9) && !open.contains(1.0));
    assert_eq!(a.scaled(60.0), Interval::closed(60.0, 120.0));
}
