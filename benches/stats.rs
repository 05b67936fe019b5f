//! Percentiles of one million raw values: sorting (the dominant cost) and the
//! interpolated look-ups, as a level summary does them.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use codendum_core::stats::{percentile, sorted_finite, Distribution};

fn values(n: usize) -> Vec<f64> {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    (0..n).map(|_| rng.gen_range(0.05..60.0)).collect()
}

fn bench_percentiles(c: &mut Criterion) {
    let raw = values(1_000_000);
    let sorted = sorted_finite(raw.iter().copied());
    let mut group = c.benchmark_group("stats_1m");
    group.sample_size(10);
    group.bench_function("sort_and_summarise", |b| {
        b.iter(|| Distribution::from_values(black_box(&raw).iter().copied()))
    });
    group.bench_function("p50_p95_p99_of_sorted", |b| {
        b.iter(|| {
            let s = black_box(&sorted);
            (
                percentile(s, 50.0),
                percentile(s, 95.0),
                percentile(s, 99.0),
            )
        })
    });
    group.finish();
}

criterion_group!(benches, bench_percentiles);
criterion_main!(benches);
