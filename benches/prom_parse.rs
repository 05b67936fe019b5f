//! How long reading one `/metrics` page takes: the 68 KB busy vLLM page,
//! parsed alone and turned into a `ServerSnapshot`.

use criterion::{black_box, criterion_group, criterion_main, Criterion, Throughput};

use codendum_core::prom::{parse, ServerSnapshot};

const BUSY: &str = include_str!("../fixtures/metrics/vllm-0.30-metrics-busy.txt");

fn bench_parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("prom");
    group.throughput(Throughput::Bytes(BUSY.len() as u64));
    group.bench_function("parse_busy_page", |b| {
        b.iter(|| parse(black_box(BUSY)).map(|page| page.samples.len()))
    });
    group.bench_function("snapshot_busy_page", |b| {
        b.iter(|| ServerSnapshot::from_text(black_box(BUSY)))
    });
    group.finish();
}

criterion_group!(benches, bench_parse);
criterion_main!(benches);
