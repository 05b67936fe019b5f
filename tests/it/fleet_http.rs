//! The fleet over real loopback HTTP: one endpoint, `/metrics` with one
//! label set per replica that sums to the fleet, `/metrics/replica/N`, and
//! session affinity as a real client's `x-session-id` drives it.

use std::sync::Arc;

use codendum::client::{ClientOptions, HttpClient};
use codendum_core::clock::Clock;
use codendum_core::openai::{CallRequest, Endpoint, Transport};
use codendum_core::profile::fleet::{FleetSpec, RouterPolicy};
use codendum_core::profile::Profile;
use codendum_core::prom::{parse, ServerSnapshot};
use codendum_twin::fleet::{start_fleet, FleetHandle};
use codendum_twin::TwinOptions;
use serde_json::json;

async fn fleet_of(replicas: u32, router: RouterPolicy) -> (FleetHandle, Arc<HttpClient>) {
    let clock = Clock::scaled(200.0);
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = clock.clone();
    opts.seed = 4;
    let spec = FleetSpec { replicas, router };
    let f = start_fleet(opts, spec, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("fleet starts");
    let client = HttpClient::new(
        &codendum_core::access::BaseUrl::parse(f.base_url()).expect("base URL"),
        ClientOptions {
            clock,
            max_connections: 16,
            ..ClientOptions::default()
        },
    )
    .expect("client");
    (f, Arc::new(client))
}

fn call(session: &str, i: usize) -> CallRequest {
    CallRequest {
        endpoint: Endpoint::Chat,
        body: json!({"model": "qwen3-coder", "max_tokens": 12, "ignore_eos": true, "stream": true,
            "messages": [{"role": "user", "content": format!("Session {session}. {} Fix the build, step {i}.", "Context line. ".repeat(40))}]}).into(),
        api_key: None,
        headers: vec![("x-session-id".into(), session.into())],
        record_gaps: false,
        first_token: None,
    }
}

async fn text(url: String) -> (u16, String) {
    let r = reqwest::get(url).await.expect("get");
    (r.status().as_u16(), r.text().await.expect("text"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_have_one_label_set_per_replica_and_sum_to_the_fleet() {
    let (f, client) = fleet_of(3, RouterPolicy::RoundRobin).await;
    let mut tasks = Vec::new();
    for i in 0..9 {
        let c = client.clone();
        tasks.push(tokio::spawn(async move { c.call(call("ses_x", i)).await }));
    }
    for t in tasks {
        let o = t.await.expect("task");
        assert!(o.is_ok(), "{:?}", o.error);
    }
    let (status, page) = text(f.metrics_url()).await;
    assert_eq!(status, 200);
    let parsed = parse(&page).expect("valid exposition");
    for e in ["0", "1", "2"] {
        let n = parsed
            .samples_named("vllm:generation_tokens_total")
            .filter(|s| s.label("engine").as_deref() == Some(e))
            .count();
        assert_eq!(n, 1, "engine {e} has its generation counter");
    }
    let fleet = ServerSnapshot::from_text(&page).expect("snapshot");
    let mut parts = Vec::new();
    for i in 0..3 {
        let (status, p) = text(f.replica_metrics_url(i)).await;
        assert_eq!(status, 200);
        assert!(p.contains(&format!("engine=\"{i}\"")));
        let s = ServerSnapshot::from_text(&p).expect("replica snapshot");
        // Round-robin: three requests of 12 tokens each.
        assert_eq!(s.generation_tokens, Some(36.0), "replica {i}");
        parts.push(s);
    }
    let sum = ServerSnapshot::sum(&parts);
    assert_eq!(fleet.generation_tokens, Some(108.0));
    assert_eq!(fleet.generation_tokens, sum.generation_tokens);
    assert_eq!(fleet.prompt_tokens, sum.prompt_tokens);
    assert_eq!(fleet.finished_requests, sum.finished_requests);
    assert_eq!(fleet.kv_capacity_tokens, Some(3 * 1_362_640));
    let (status, body) = text(format!("http://{}/metrics/replica/3", f.addr())).await;
    assert_eq!(status, 404);
    assert!(body.contains("replicas 0 to 2"), "{body}");
    // Replica 0 answers the side endpoints for the fleet.
    let models = client.models().await.expect("models");
    assert_eq!(models[0].id, "qwen3-coder");
    assert!(page.contains(
        "http_requests_total{handler=\"/v1/chat/completions\",method=\"POST\",status=\"2xx\"} 9.0"
    ));
    f.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_stays_on_one_replica_over_http() {
    let (f, client) = fleet_of(4, RouterPolicy::Session).await;
    let sessions = ["ses_a", "ses_b", "ses_c", "ses_d", "ses_e", "ses_f"];
    for i in 0..4 {
        for s in sessions {
            assert!(client.call(call(s, i)).await.is_ok());
        }
    }
    // Each session's four steps landed together: every replica's request
    // count is a multiple of four, and each later step hit the cache.
    let served = f.core().served();
    assert_eq!(served.iter().sum::<u64>(), 24);
    assert!(served.iter().all(|n| n % 4 == 0), "{served:?}");
    let (_, page) = text(f.metrics_url()).await;
    let snap = ServerSnapshot::from_text(&page).expect("snapshot");
    let rate = snap.prefix_hit_rate().expect("hit rate");
    assert!(rate > 0.5, "later steps hit their replica's cache: {rate}");
    f.shutdown().await;
}
