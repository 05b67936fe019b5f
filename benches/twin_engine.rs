//! One scheduler step with 1,000 requests running (GB10 profile, max_num_seqs
//! raised to 1,024 as vLLM's default). Finished requests are replaced at
//! once, so the engine stays at 1,000 running in steady state.

use std::sync::Arc;

use codendum_core::profile::Profile;
use codendum_twin::engine::{Engine, EngineConfig, EngineRequest};
use codendum_twin::model::PhysicalStepModel;
use criterion::{criterion_group, criterion_main, Criterion};

fn request(id: u64) -> EngineRequest {
    EngineRequest {
        id,
        prompt: (0..200u32).map(|i| (id as u32) * 1000 + i).collect(),
        // staggered lengths so finishes spread over steps
        max_tokens: 500 + (id % 500) as u32,
        ignore_eos: true,
        ..EngineRequest::default()
    }
}

fn busy_engine() -> Engine {
    let profile = Profile::load("classroom-64k").expect("embedded profile");
    let mut cfg = EngineConfig::from_profile(&profile);
    cfg.max_num_seqs = 1024;
    cfg.model = Arc::new(PhysicalStepModel::new(&profile.hardware));
    let mut e = Engine::new(cfg);
    for id in 0..1000u64 {
        e.add(request(id)).expect("add");
    }
    while e.num_waiting() > 0 || e.num_running() < 1000 {
        e.step();
    }
    e.step();
    e
}

fn step_with_1000_running(c: &mut Criterion) {
    let mut e = busy_engine();
    let mut next_id = 1000u64;
    c.bench_function("engine_step_1000_running", |b| {
        b.iter(|| {
            let r = e.step();
            for t in &r.tokens {
                if t.finish.is_some() {
                    e.add(request(next_id)).expect("add");
                    next_id += 1;
                }
            }
            r
        })
    });
    assert!(e.num_running() + e.num_waiting() >= 1000);
}

criterion_group!(benches, step_with_1000_running);
criterion_main!(benches);
