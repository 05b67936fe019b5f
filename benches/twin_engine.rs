//! One scheduler step with 1,000 requests decoding (GB10 profile, max_num_seqs
//! raised to 1,024 as vLLM's default).

use std::sync::Arc;

use codendum::twin::engine::{Engine, EngineConfig, EngineRequest};
use codendum::twin::model::PhysicalStepModel;
use codendum::twin::profile::Profile;
use criterion::{criterion_group, criterion_main, Criterion};

fn busy_engine() -> Engine {
    let profile = Profile::load("classroom-64k").expect("embedded profile");
    let mut cfg = EngineConfig::from_profile(&profile);
    cfg.max_num_seqs = 1024;
    cfg.model = Arc::new(PhysicalStepModel::new(&profile.hardware));
    let mut e = Engine::new(cfg);
    for id in 0..1000u64 {
        let prompt = (0..600u32).map(|i| (id as u32) * 1000 + i).collect();
        e.add(EngineRequest {
            id,
            prompt,
            max_tokens: 60_000,
            ignore_eos: true,
            natural_len: 60_000,
            ..EngineRequest::default()
        })
        .expect("add");
    }
    while e.num_waiting() > 0 || e.num_running() < 1000 {
        e.step();
    }
    e.step();
    e
}

fn step_with_1000_running(c: &mut Criterion) {
    let mut e = busy_engine();
    c.bench_function("engine_step_1000_running", |b| {
        b.iter(|| {
            let r = e.step();
            assert_eq!(r.num_decode, 1000);
            r
        })
    });
}

criterion_group!(benches, step_with_1000_running);
criterion_main!(benches);
