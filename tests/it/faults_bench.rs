//! `bench` against a twin that injects faults, over real loopback HTTP with
//! the real client: every run finishes, every request sent has exactly one
//! record with the error kind its fault causes, and the summaries agree with
//! `requests.jsonl`.

use codendum_core::shape::Shape;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use codendum::bench::{run_reading_facts, BenchConfig, BenchDeps, ServerInfo};
use codendum::client::{ClientOptions, HttpClient};
use codendum::settings::RunSettings;
use codendum_core::access::ClientSettings;
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_core::results::{self, RequestRecord};
use codendum_twin::faults::FaultPlan;
use codendum_twin::{start, TwinOptions};
use futures::future::BoxFuture;
use tokio::sync::watch;

/// Simulated seconds per real second: a 16-token answer takes a few real
/// milliseconds, the time limit three real seconds (generous on a busy machine).
const SCALE: f64 = 100.0;
/// The client's per-request limit, simulated seconds.
const TIMEOUT_S: u64 = 300;
/// Requests per level; two levels (concurrency 1 and 4).
const PER_LEVEL: u64 = 12;

/// The `ServerInfo` seam over the HTTP client.
struct ClientInfo(HttpClient);

impl ServerInfo for ClientInfo {
    fn model_id(&self) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async {
            let models = self.0.models().await.map_err(|e| e.message)?;
            models
                .into_iter()
                .next()
                .map(|m| m.id)
                .ok_or_else(|| "no model listed".to_string())
        })
    }

    fn tokenize<'a>(
        &'a self,
        model: &'a str,
        prompt: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        Box::pin(async move { self.0.tokenize(model, prompt).await.map_err(|e| e.message) })
    }

    fn server_version(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(self.0.version())
    }
}

/// What one faulty run produced.
struct Run {
    records: Vec<RequestRecord>,
    /// Requests the twin numbered (chat calls it received).
    received: u64,
}

impl Run {
    fn kinds(&self) -> BTreeMap<String, u64> {
        let mut m = BTreeMap::new();
        for r in &self.records {
            let k = r.error_kind.clone().unwrap_or_else(|| "ok".into());
            *m.entry(k).or_insert(0) += 1;
        }
        m
    }
}

async fn bench_with_faults(spec: &str) -> Run {
    let clock = Clock::scaled(SCALE);
    let plan = Arc::new(FaultPlan::parse(spec).expect("spec parses"));
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = clock.clone();
    opts.seed = 3;
    opts.faults = Some(plan.clone());
    let twin = start(opts, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("twin starts");
    let timeout = Duration::from_secs(TIMEOUT_S);
    let client = HttpClient::new(
        &codendum_core::access::BaseUrl::parse(twin.base_url()).expect("base URL"),
        ClientOptions {
            timeout,
            max_connections: 8,
            clock: clock.clone(),
            ..ClientOptions::default()
        },
    )
    .expect("client");
    let info = ClientInfo(client.clone());
    let dir = tempfile::tempdir().expect("tempdir");
    let mut run = RunSettings::new(ClientSettings::new(timeout));
    run.results_dir = dir.path().to_path_buf();
    let config = BenchConfig {
        concurrency: vec![1, 4],
        shapes: vec![Shape::Short],
        requests_per_level: Some(PER_LEVEL),
        output_tokens: 16,
        run_id: "faults".into(),
        seed: 1,
        ..BenchConfig::default()
    };
    let (_stop_tx, stop) = watch::channel(false);
    let deps = BenchDeps {
        transport: &client,
        info: &info,
        metrics: None,
        clock: clock.clone(),
        stop,
        events: codendum::events::Events::silent(),
        measure_client_cpu: false,
    };
    // A hang would be a failure: bound the whole run generously (real time).
    let bench = run_reading_facts(&config, &run, deps);
    let outcome = tokio::time::timeout(Duration::from_secs(300), bench)
        .await
        .expect("bench finishes")
        .expect("bench succeeds");
    assert!(!outcome.interrupted);
    let contents = results::read_bench_requests(&outcome.folder).expect("requests.jsonl");
    assert!(!contents.truncated_last_line);
    let summary = results::read_bench_summary(&outcome.folder).expect("summary.json");
    assert_eq!(
        summary, outcome.summary,
        "summary.json is what run_bench returned"
    );
    check_consistency(&contents.items, &summary.levels);
    let received = plan.requests_seen();
    twin.shutdown().await;
    Run {
        records: contents.items,
        received,
    }
}

/// One record per request started, per level; summaries equal the file.
fn check_consistency(records: &[RequestRecord], levels: &[results::LevelSummary]) {
    assert_eq!(levels.len(), 2);
    for level in levels {
        let mine: Vec<&RequestRecord> = records
            .iter()
            .filter(|r| r.shape == level.shape && r.concurrency == level.concurrency)
            .collect();
        let indexes: BTreeSet<u64> = mine.iter().map(|r| r.index).collect();
        assert_eq!(mine.len(), indexes.len(), "an index appears twice");
        assert_eq!(indexes, (0..PER_LEVEL).collect(), "every request recorded");
        assert_eq!(level.requests, mine.len() as u64);
        assert_eq!(level.abandoned, 0);
        let errors: u64 = level.errors.values().map(|g| g.count).sum();
        assert_eq!(level.successes + errors, level.requests);
        let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
        for r in &mine {
            assert_eq!(r.ok, r.error_kind.is_none(), "ok xor an error kind: {r:?}");
            if let Some(k) = &r.error_kind {
                *by_kind.entry(k.clone()).or_insert(0) += 1;
            }
        }
        let summarized: BTreeMap<String, u64> = level
            .errors
            .iter()
            .map(|(k, g)| (k.clone(), g.count))
            .collect();
        assert_eq!(summarized, by_kind, "summary errors equal the file's");
        assert_eq!(level.successes, mine.iter().filter(|r| r.ok).count() as u64);
    }
    let total: u64 = levels.iter().map(|l| l.requests).sum();
    assert_eq!(total, records.len() as u64);
}

/// Runs `spec` (which strikes every third request) and expects
/// `faulted` requests of kind `kind` and the rest to succeed.
async fn every_third(spec: &str, kind: &str) {
    let run = bench_with_faults(spec).await;
    let total = 2 * PER_LEVEL;
    assert_eq!(run.received, total, "{spec}: requests the twin saw");
    let expected: BTreeMap<String, u64> = [
        (kind.to_string(), total / 3),
        ("ok".into(), total - total / 3),
    ]
    .into_iter()
    .collect();
    assert_eq!(run.kinds(), expected, "{spec}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_connections_are_stream_errors() {
    every_third("drop@every:3", "stream_error").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_chunks_are_bad_json() {
    every_third("malformed@every:3", "bad_json").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_is_bad_json() {
    every_third("bad-utf8@every:3:after=2", "bad_json").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streams_without_done_are_incomplete() {
    every_third("no-done@every:3", "incomplete").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stalls_past_the_limit_are_timeouts() {
    every_third("stall=3000s@every:3", "timeout").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_headers_past_the_limit_are_timeouts() {
    every_third("slow-headers=3000s@every:3", "timeout").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn status_bursts_have_their_kinds() {
    every_third("status=503@every:3:retry-after=2", "http_503").await;
    every_third("status=429@every:3", "http_429").await;
    every_third("status=500@every:3", "http_5xx").await;
    every_third("status=502@every:3:retry-after=1", "http_5xx").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survivable_faults_still_succeed() {
    let run = bench_with_faults("slow-headers=20s@every:2,huge-chunk=1MiB@every:3").await;
    assert_eq!(run.received, 2 * PER_LEVEL);
    assert_eq!(run.kinds(), [("ok".to_string(), 2 * PER_LEVEL)].into());
    assert!(run.records.iter().all(|r| r.output_tokens == 16));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seeded_mix_is_consistent() {
    let spec = "drop@0.08,malformed@0.08,no-done@0.08,stall=3000s@0.04,\
                status=503@0.08:retry-after=2,status=429@0.08,status=500@0.04,\
                status=502@0.04,slow-headers=5s@0.05,huge-chunk=256KiB@0.05,bad-utf8@0.05,seed=11";
    let run = bench_with_faults(spec).await;
    assert_eq!(run.received, 2 * PER_LEVEL);
    let allowed = [
        "ok",
        "stream_error",
        "bad_json",
        "incomplete",
        "timeout",
        "http_503",
        "http_429",
        "http_5xx",
    ];
    let kinds = run.kinds();
    assert!(
        kinds.keys().all(|k| allowed.contains(&k.as_str())),
        "{kinds:?}"
    );
    assert!(
        kinds.len() >= 3,
        "the mix produced several kinds: {kinds:?}"
    );
    // The plan is a function of the request number: as many faults of each
    // family as the plan decides for requests 1..=24.
    let plan = FaultPlan::parse(spec).expect("spec");
    let fatal = (1..=2 * PER_LEVEL)
        .filter_map(|n| plan.decide(n))
        .filter(|i| {
            !matches!(
                i.fault,
                codendum_twin::faults::Fault::SlowHeaders(_)
                    | codendum_twin::faults::Fault::HugeChunk(_)
            )
        })
        .count() as u64;
    let failed = run.records.iter().filter(|r| !r.ok).count() as u64;
    assert_eq!(failed, fatal, "{kinds:?}");
}
