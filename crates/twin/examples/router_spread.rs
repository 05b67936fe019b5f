//! How evenly the twin's `session` router (jump hash) and the real vLLM
//! Router's `consistent_hash` (its ring, [`codendum_twin::routing::vllm_ring`])
//! spread a class's sessions over the replicas: for classes of 4, 16 and 40
//! students (one session id each, drawn as the classroom draws them), over
//! many seeds, the imbalance of sessions per replica (max over mean).
//!
//! `cargo run --release -p codendum-twin --example router_spread [SEEDS]`
//! (docs/routers.md has the figures).

use codendum_twin::routing::vllm_ring::VllmRing;
use codendum_twin::routing::{jump_hash, key_hash};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn imbalance(counts: &[usize]) -> f64 {
    let mean = counts.iter().sum::<usize>() as f64 / counts.len() as f64;
    *counts.iter().max().unwrap_or(&0) as f64 / mean
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let h = (sorted.len() - 1) as f64 * p / 100.0;
    let (lo, hi) = (h.floor() as usize, h.ceil() as usize);
    sorted[lo] + (h - lo as f64) * (sorted[hi] - sorted[lo])
}

fn main() {
    let seeds: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    println!("replicas students policy mean p50 p95 max (imbalance of sessions, {seeds} seeds)");
    for replicas in [2usize, 4] {
        let urls: Vec<String> = (0..replicas)
            .map(|i| format!("http://127.0.0.1:{}", 18911 + i))
            .collect();
        let names: Vec<&str> = urls.iter().map(String::as_str).collect();
        let ring = VllmRing::new(&names);
        for students in [4usize, 16, 40] {
            let mut twin = Vec::new();
            let mut real = Vec::new();
            for seed in 1..=seeds {
                let mut rng = ChaCha8Rng::seed_from_u64(seed);
                let mut on_twin = vec![0usize; replicas];
                let mut on_real = vec![0usize; replicas];
                for _ in 0..students {
                    let id = format!("ses_{:024x}", rng.gen::<u128>() >> 32);
                    on_twin[jump_hash(key_hash(&id), replicas)] += 1;
                    on_real[ring.session_worker(&id).unwrap_or(0)] += 1;
                }
                twin.push(imbalance(&on_twin));
                real.push(imbalance(&on_real));
            }
            for (name, mut v) in [("twin-session", twin), ("vllm-router", real)] {
                v.sort_by(f64::total_cmp);
                let mean = v.iter().sum::<f64>() / v.len() as f64;
                println!(
                    "{replicas} {students} {name} {mean:.3} {:.3} {:.3} {:.3}",
                    percentile(&v, 50.0),
                    percentile(&v, 95.0),
                    v[v.len() - 1]
                );
            }
        }
    }
}
