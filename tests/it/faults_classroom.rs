//! The classroom against a twin that injects faults, over real loopback
//! HTTP: the class finishes, every model call is recorded once with its
//! outcome, retryable failures are retried like OpenCode does, and the
//! summary agrees with the records.

use std::sync::Arc;
use std::time::Duration;

use codendum::classroom::{run_classroom, ClassroomConfig, LiveStatus, MemorySink};
use codendum::client::{ClientOptions, HttpClient};
use codendum_core::clock::Clock;
use codendum_core::openai::{ErrorKind, Transport};
use codendum_core::profile::Profile;
use codendum_twin::faults::FaultPlan;
use codendum_twin::persona::AgentPersona;
use codendum_twin::{start, TwinOptions};

async fn class_with_faults(spec: &str) -> codendum::classroom::ClassroomOutcome {
    // At 200x a client 0.3 s late (12 test threads on 2 cores, 2026-12-02)
    // was 60 simulated seconds late and timed out; at 50x that takes 1.2 s.
    let clock = Clock::scaled(50.0);
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = clock.clone();
    opts.responder = Arc::new(AgentPersona::new(3));
    opts.faults = Some(Arc::new(FaultPlan::parse(spec).expect("spec").with_seed(9)));
    let twin = start(opts, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("twin");
    let client = HttpClient::new(
        &codendum_core::access::BaseUrl::parse(twin.base_url()).expect("base URL"),
        ClientOptions {
            clock: clock.clone(),
            // simulated seconds: a stall of 120 s times out
            timeout: Duration::from_secs(60),
            max_connections: 32,
            ..ClientOptions::default()
        },
    )
    .expect("client");
    let transport: Arc<dyn Transport> = Arc::new(client);
    let mut config = ClassroomConfig::new("qwen3-coder", Some(65_536));
    config.users = 6;
    config.set_follow_ups(0);
    config.duration = Duration::from_secs(60);
    config.ramp_up = Duration::from_secs(10);
    config.seed = 4;
    let sink = Arc::new(MemorySink::default());
    let status = Arc::new(LiveStatus::new(clock.clone()));
    let run = run_classroom(&config, transport, clock, sink.clone(), status);
    // Bounded: the class must end by itself well within this.
    let outcome = tokio::time::timeout(Duration::from_secs(120), run)
        .await
        .expect("the class finished")
        .expect("class");
    twin.shutdown().await;
    assert_eq!(sink.requests().len(), outcome.requests.len());
    assert_eq!(sink.tasks().len(), outcome.tasks.len());
    assert_eq!(
        outcome.tasks.len(),
        6,
        "every student's coding request ends with an outcome"
    );
    let failed = outcome
        .requests
        .iter()
        .filter(|r| r.error_kind.is_some())
        .count() as u64;
    assert_eq!(outcome.summary.requests, outcome.requests.len() as u64);
    assert_eq!(outcome.summary.errors, failed);
    let by_kind: u64 = outcome.summary.errors_by_kind.values().sum();
    assert_eq!(by_kind, failed);
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retryable_faults_are_retried_and_the_class_finishes() {
    let outcome = class_with_faults(
        "status=503@every:4:retry-after=1,status=429@every:7,drop@every:9:after=2,no-done@every:11",
    )
    .await;
    let s = &outcome.summary;
    assert!(s.retries > 0, "no retry after injected faults");
    assert!(
        s.retries_after_429_503 > 0,
        "no retry counted after 429/503"
    );
    for r in &outcome.requests {
        for k in &r.retried_kinds {
            assert!(k.is_retryable(), "retried a non-retryable {k}");
        }
    }
    // Most coding requests still complete: the faults are spread thin.
    let failed: Vec<_> = outcome
        .tasks
        .iter()
        .map(|t| (t.outcome, t.error_kind))
        .collect();
    assert!(
        s.completed >= 4,
        "{} of 6 completed: {failed:?}",
        s.completed
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_streams_and_stalls_are_recorded_not_fatal() {
    let outcome =
        class_with_faults("malformed@every:5:after=1,bad-utf8@every:8,stall=120s@#3").await;
    let kinds: Vec<ErrorKind> = outcome
        .requests
        .iter()
        .flat_map(|r| r.retried_kinds.iter().copied().chain(r.error_kind))
        .collect();
    assert!(
        kinds.contains(&ErrorKind::BadJson),
        "no bad_json seen: {kinds:?}"
    );
    assert!(
        kinds.contains(&ErrorKind::Timeout),
        "the stall did not time out: {kinds:?}"
    );
}
