//! A fleet of 4 replicas × 256 seats holding 1,024 paced streams over real
//! loopback HTTP at time scale 1: every stream completes, the round-robin
//! router gives each replica its 256, every engine steps through its
//! streams, and the fleet's `/metrics` lateness histogram counts the steps
//! of all four engines. The share of steps that start within 5 % of their
//! modelled time is printed, not asserted: it depends on what else runs on
//! the cores (the README quotes `cargo bench --bench twin_capacity` with
//! `CODENDUM_REPLICAS=4`, a release build, and the load).

use std::sync::Arc;

use codendum::client::{ClientOptions, HttpClient};
use codendum_core::clock::Clock;
use codendum_core::openai::{CallRequest, Endpoint, Transport};
use codendum_core::profile::fleet::{FleetSpec, RouterPolicy};
use codendum_core::profile::Profile;
use codendum_twin::fleet::pages::merge_lateness;
use codendum_twin::fleet::start_fleet;
use codendum_twin::TwinOptions;
use serde_json::json;

const REPLICAS: u32 = 4;
const SEATS: u32 = 256;
const TOKENS: u32 = 48;

#[test]
fn four_replicas_hold_1024_streams_and_count_every_step() {
    let _alone = crate::alone();
    let streams = (REPLICAS * SEATS) as usize;
    let mut profile = Profile::load("classroom-64k").expect("profile");
    profile.server.max_num_seqs = SEATS;
    let rt = |name: &str| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name(name)
            .enable_all()
            .build()
            .expect("runtime")
    };
    let (twin_rt, client_rt) = (rt("fleet"), rt("client"));
    let clock = Clock::real();
    let mut opts = TwinOptions::new(profile);
    opts.clock = clock.clone();
    let spec = FleetSpec {
        replicas: REPLICAS,
        router: RouterPolicy::RoundRobin,
    };
    let fleet = twin_rt
        .block_on(start_fleet(
            opts,
            spec,
            "127.0.0.1:0".parse().expect("addr"),
        ))
        .expect("fleet");
    let client = Arc::new(
        HttpClient::new(
            &codendum_core::access::BaseUrl::parse(fleet.base_url()).expect("base URL"),
            ClientOptions {
                max_connections: streams,
                clock,
                ..ClientOptions::default()
            },
        )
        .expect("client"),
    );
    let outcomes = client_rt.block_on(async {
        let tasks: Vec<_> = (0..streams)
            .map(|i| {
                let c = client.clone();
                tokio::spawn(async move {
                    c.call(CallRequest {
                        endpoint: Endpoint::Chat,
                        body: json!({"model": "qwen3-coder", "max_tokens": TOKENS,
                            "ignore_eos": true, "stream": true,
                            "messages": [{"role": "user", "content": format!("Student {i}: why does my build fail?")}]}).into(),
                        api_key: None,
                        headers: Vec::new(),
                        record_gaps: true,
                        first_token: None,
                    })
                    .await
                })
            })
            .collect();
        let mut out = Vec::new();
        for t in tasks {
            out.push(t.await.expect("task"));
        }
        out
    });
    let page = client_rt
        .block_on(async { reqwest::get(fleet.metrics_url()).await?.text().await })
        .expect("metrics");
    let counted: u64 = page
        .lines()
        .find_map(|l| l.strip_prefix("codendum_twin_step_lateness_seconds_count "))
        .and_then(|n| n.trim().parse().ok())
        .expect("lateness count on /metrics");
    let parts: Vec<_> = fleet.replicas().iter().map(|r| r.step_lateness()).collect();
    let served = fleet.core().served();
    twin_rt.block_on(fleet.shutdown());
    assert!(outcomes.iter().all(|o| o.is_ok()), "every stream completes");
    assert_eq!(served, vec![u64::from(SEATS); REPLICAS as usize]);
    let all = merge_lateness(&parts);
    for (i, l) in parts.iter().enumerate() {
        println!(
            "replica {i}: {} steps, {} on time ({:.2} %), max lateness {:.2} ms = {:.1} % of its step",
            l.steps,
            l.on_time,
            l.on_time_share() * 100.0,
            l.max_seconds * 1e3,
            l.max_share * 100.0
        );
        assert!(l.steps >= u64::from(TOKENS), "replica {i} ran its streams");
    }
    println!(
        "fleet: {} steps, {:.2} % on time; load {}",
        all.steps,
        all.on_time_share() * 100.0,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .trim()
    );
    assert_eq!(all.steps, parts.iter().map(|l| l.steps).sum::<u64>());
    // The page was read before the last steps' records: at most one step
    // per engine later.
    assert!(
        counted <= all.steps && counted + 4 >= all.steps,
        "{counted} of {}",
        all.steps
    );
}
