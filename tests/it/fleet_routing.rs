//! Routers over a class in virtual time: session affinity keeps each
//! session's prefix on one replica (hit rate near the single server's),
//! round-robin loses it; least-loaded and power-of-two spread the work.

use std::sync::Arc;

use codendum_core::clock::Clock;
use codendum_core::openai::{CallRequest, Endpoint, Transport};
use codendum_core::profile::fleet::{FleetSpec, RouterPolicy};
use codendum_twin::fleet::{imbalance, FleetTransport};
use serde_json::json;

use crate::fleet_support::{class, fleet, options, single};

#[test]
fn session_affinity_keeps_the_hit_rate_and_round_robin_loses_it() {
    let config = class(12, 300, 8);
    let one = single(&config, 8)
        .whole()
        .prefix_hit_rate
        .expect("hit rate");
    let session = fleet(&config, 8, 3, RouterPolicy::Session);
    let rr = fleet(&config, 8, 3, RouterPolicy::RoundRobin);
    let prefix = fleet(&config, 8, 3, RouterPolicy::PrefixAware);
    let hit = |r: &crate::fleet_support::ClassRun| r.whole().prefix_hit_rate.expect("hit rate");
    let (s, r, p) = (hit(&session), hit(&rr), hit(&prefix));
    assert!(one > 0.8, "the single server's class hits its cache: {one}");
    assert!((one - s).abs() < 0.03, "session {s} vs single {one}");
    assert!((one - p).abs() < 0.05, "prefix-aware {p} vs single {one}");
    // Round-robin sends each step to a replica that holds the session's
    // prefix only up to an earlier step (and the shared system prompt):
    // it misses, and so computes, more than twice the prompt tokens.
    assert!(r < s, "round-robin {r} vs session {s}");
    assert!(
        1.0 - r > 2.0 * (1.0 - s),
        "round-robin misses {:.3}, session {:.3}",
        1.0 - r,
        1.0 - s
    );
    // Every replica served part of the class under each router.
    for run in [&session, &rr, &prefix] {
        assert!(run.served.iter().all(|n| *n > 0), "{:?}", run.served);
        for i in 0..3 {
            assert!(run.replica(i).generation_tokens.unwrap_or(0.0) > 0.0);
        }
    }
    // The fleet's figures are the replicas' summed.
    let fleet_out = rr.whole().generation_tokens.expect("tokens");
    let parts: f64 = (0..3)
        .map(|i| rr.replica(i).generation_tokens.unwrap_or(0.0))
        .sum();
    assert!((fleet_out - parts).abs() < 1e-6, "{fleet_out} vs {parts}");
}

fn request(i: usize) -> CallRequest {
    CallRequest {
        endpoint: Endpoint::Chat,
        body: json!({"model": "qwen3-coder", "max_tokens": 32 + (i % 5) * 40,
            "ignore_eos": true, "stream": true,
            "messages": [{"role": "user", "content": format!("Request {i}")}]})
        .into(),
        api_key: None,
        headers: Vec::new(),
        record_gaps: false,
        first_token: None,
    }
}

async fn waves(router: RouterPolicy) -> Vec<u64> {
    let clock = Clock::scaled(1.0);
    let spec = FleetSpec {
        replicas: 4,
        router,
    };
    let f = Arc::new(FleetTransport::start(options(clock.clone(), 2), spec));
    // Requests of unequal length arriving 50 ms apart: loads differ.
    let mut tasks = Vec::new();
    for i in 0..96 {
        let f = f.clone();
        tasks.push(tokio::spawn(async move { f.call(request(i)).await }));
        clock.sleep(std::time::Duration::from_millis(50)).await;
    }
    for t in tasks {
        assert!(t.await.expect("task").is_ok());
    }
    assert!(f.core().loads().iter().all(|l| *l == 0), "all done");
    f.served()
}

#[tokio::test(start_paused = true)]
async fn least_loaded_and_power_of_two_balance_the_replicas() {
    for router in [RouterPolicy::LeastLoaded, RouterPolicy::PowerOfTwo] {
        let served = waves(router).await;
        assert_eq!(served.iter().sum::<u64>(), 96);
        let ratio = imbalance(&served).expect("served");
        assert!(ratio < 1.35, "{router}: {served:?} (max/mean {ratio})");
    }
    // Requests without a session key go round-robin under `session`.
    assert_eq!(waves(RouterPolicy::Session).await, vec![24; 4]);
}
