//! A fleet of one replica is the single server, whatever the router: the
//! same class (same seed, virtual time) gives the same summary, the same
//! calls and coding requests and the same engine timeline field by field;
//! the same bench-style requests get the same measurements.

use std::sync::Arc;

use codendum_core::clock::Clock;
use codendum_core::openai::{CallOutcome, CallRequest, Endpoint, Transport};
use codendum_core::profile::fleet::{FleetSpec, RouterPolicy};
use codendum_twin::fleet::FleetTransport;
use codendum_twin::inproc::InProcTransport;
use serde_json::json;

use crate::fleet_support::{class, fleet, options, single};

#[test]
fn one_replica_under_every_router_gives_the_single_servers_class() {
    let config = class(6, 240, 5);
    let base = single(&config, 5);
    assert!(base.outcome.summary.requests > 20, "a real class ran");
    for router in RouterPolicy::ALL {
        let one = fleet(&config, 5, 1, router);
        let (a, b) = (&base.outcome, &one.outcome);
        assert_eq!(a.summary, b.summary, "{router}: summary");
        assert_eq!(a.requests.len(), b.requests.len(), "{router}: calls");
        for (x, y) in a.requests.iter().zip(&b.requests) {
            assert_eq!(x, y, "{router}: call record");
        }
        assert_eq!(a.tasks, b.tasks, "{router}: coding requests");
        // Same times and snapshots (UTC stamps differ: each run has its clock).
        let strip = |tl: &[codendum_core::prom::TimelineSample]| {
            tl.iter()
                .map(|s| (s.t, s.snapshot.clone()))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            strip(&base.timeline),
            strip(&one.timeline),
            "{router}: engine timeline"
        );
        assert_eq!(one.replicas.len(), 1);
        assert_eq!(
            one.served.iter().sum::<u64>(),
            b.summary.requests + b.summary.retries,
            "every attempt was routed"
        );
    }
}

fn bench_request(i: usize) -> CallRequest {
    CallRequest {
        endpoint: Endpoint::Chat,
        body: json!({"model": "qwen3-coder", "max_tokens": 64 + 16 * i, "stream": true,
            "stream_options": {"include_usage": true},
            "messages": [{"role": "user", "content": format!("Explain step {i} of the build.")}]})
        .into(),
        api_key: None,
        headers: Vec::new(),
        record_gaps: true,
        first_token: None,
    }
}

async fn burst(t: Arc<dyn Transport>) -> Vec<CallOutcome> {
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let t = t.clone();
            tokio::spawn(async move { t.call(bench_request(i)).await })
        })
        .collect();
    let mut out = Vec::new();
    for task in tasks {
        out.push(task.await.expect("task"));
    }
    out
}

#[tokio::test(start_paused = true)]
async fn one_replica_gives_the_single_servers_bench_measurements() {
    let clock = Clock::scaled(1.0);
    let base = burst(Arc::new(InProcTransport::start(options(clock.clone(), 3)))).await;
    assert!(base.iter().all(CallOutcome::is_ok));
    for router in RouterPolicy::ALL {
        let spec = FleetSpec {
            replicas: 1,
            router,
        };
        let clock = Clock::scaled(1.0);
        let one = burst(Arc::new(FleetTransport::start(options(clock, 3), spec))).await;
        for (a, b) in base.iter().zip(&one) {
            assert_eq!(
                (
                    a.ttft,
                    a.e2e,
                    &a.gaps,
                    a.usage,
                    &a.message,
                    &a.finish_reason
                ),
                (
                    b.ttft,
                    b.e2e,
                    &b.gaps,
                    b.usage,
                    &b.message,
                    &b.finish_reason
                ),
                "{router}"
            );
        }
    }
}
