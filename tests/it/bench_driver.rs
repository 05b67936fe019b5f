//! The closed-loop driver against a fake transport on a paused tokio clock:
//! concurrency, counts, level ends, interruption, prompt tags, sizing, and
//! agreement between summary.json and requests.jsonl.

use codendum_core::shape::Shape;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use codendum::app::guard::{busy_guard, TimelineFlag};
use codendum::bench::{
    plan_text, run_reading_facts, BenchConfig, BenchDeps, BenchOutcome, BenchPlan, ServerFacts,
    ServerInfo, ServerLoad, ServerMetrics,
};
use codendum::events::{Event, Events};
use codendum::settings::RunSettings;
use codendum_core::access::ClientSettings;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::openai::{CallError, CallOutcome, CallRequest, ErrorKind, Transport, Usage};
use codendum_core::results::{self, LevelEnd, SizingMethod};
use codendum_core::server_figures::ServerWindow;
use codendum_core::stats::{percentile, sorted_finite};
use futures::future::BoxFuture;
use tokio::sync::watch;

/// A server that answers after a fixed simulated time, counting how many
/// requests are in flight when each one starts.
pub(crate) struct FakeServer {
    clock: Clock,
    /// Request duration, simulated seconds, by start order (cycled).
    durations: Vec<f64>,
    /// Every k-th request (1-based) fails with HTTP 503 (0: never).
    fail_every: u64,
    /// Whether usage is reported.
    usage: bool,
    in_flight: AtomicU64,
    calls: AtomicU64,
    /// (prompt, requests in flight including this one) per call.
    seen: Mutex<Vec<(String, u64)>>,
}

impl FakeServer {
    pub(crate) fn new(clock: &Clock, durations: &[f64]) -> Self {
        FakeServer {
            clock: clock.clone(),
            durations: durations.to_vec(),
            fail_every: 0,
            usage: true,
            in_flight: AtomicU64::new(0),
            calls: AtomicU64::new(0),
            seen: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn seen(&self) -> Vec<(String, u64)> {
        self.seen.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

fn prompt_of(body: &serde_json::Value) -> String {
    body["messages"][0]["content"]
        .as_str()
        .or_else(|| body["prompt"].as_str())
        .unwrap_or_default()
        .to_string()
}

impl Transport for FakeServer {
    fn call(&self, request: CallRequest) -> BoxFuture<'_, CallOutcome> {
        Box::pin(async move {
            let k = self.calls.fetch_add(1, Ordering::SeqCst);
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            let prompt = prompt_of(&request.body);
            let max_tokens = request.body["max_tokens"].as_u64().unwrap_or(0);
            self.seen.lock().unwrap().push((prompt.clone(), now));
            let sent_at = self.clock.now_secs();
            let e2e = self.durations[(k as usize) % self.durations.len()];
            self.clock.sleep(Duration::from_secs_f64(e2e)).await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            let failed = self.fail_every > 0 && (k + 1) % self.fail_every == 0;
            CallOutcome {
                sent_at,
                ttft: (!failed).then_some(e2e / 10.0),
                e2e,
                status: Some(if failed { 503 } else { 200 }),
                usage: (self.usage && !failed).then_some(Usage {
                    prompt_tokens: prompt.len() as u64 / 4,
                    completion_tokens: max_tokens,
                }),
                text_chunks: if failed { 0 } else { max_tokens },
                finish_reason: (!failed).then(|| "length".to_string()),
                error: failed.then(|| CallError {
                    kind: ErrorKind::Http503,
                    status: Some(503),
                    message: "queue full".into(),
                    retry_after: None,
                }),
                ..Default::default()
            }
        })
    }
}

/// `/tokenize` counting 4 characters per token, or no `/tokenize`.
pub(crate) struct FakeInfo {
    pub(crate) tokenize: bool,
}

impl ServerInfo for FakeInfo {
    fn model_id(&self) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async { Ok("fake-model".to_string()) })
    }
    fn tokenize<'a>(
        &'a self,
        _m: &'a str,
        p: &'a str,
    ) -> BoxFuture<'a, Result<Option<u64>, String>> {
        let n = self.tokenize.then(|| (p.len() as u64).div_ceil(4));
        Box::pin(async move { Ok(n) })
    }
    fn server_version(&self) -> BoxFuture<'_, Option<String>> {
        Box::pin(async { Some("0.30.0".to_string()) })
    }
}

struct FakeMetrics {
    load: Option<ServerLoad>,
}

impl ServerMetrics for FakeMetrics {
    fn load_now(&self) -> BoxFuture<'_, Option<ServerLoad>> {
        let l = self.load;
        Box::pin(async move { l })
    }
    fn window(&self, t0: f64, t1: f64) -> ServerWindow {
        ServerWindow {
            preemptions: Some(0.0),
            peak_kv_usage: Some(0.085),
            peak_running: Some(t1 - t0),
            peak_waiting: Some(0.0),
            prefix_hit_rate: None,
            failed_scrapes: 1,
            time_split: None,
        }
    }
    fn drain_timeline(&self) -> Vec<serde_json::Value> {
        vec![serde_json::json!({"t": 1.0, "running": 2})]
    }
}

/// A bench as a test runs it: what it asks (`config`, reached through
/// `Deref`) and how it starts (`run`: where it writes).
#[derive(Debug, Clone)]
pub(crate) struct TestBench {
    pub config: BenchConfig,
    pub run: RunSettings,
}

impl std::ops::Deref for TestBench {
    type Target = BenchConfig;
    fn deref(&self) -> &BenchConfig {
        &self.config
    }
}

impl std::ops::DerefMut for TestBench {
    fn deref_mut(&mut self) -> &mut BenchConfig {
        &mut self.config
    }
}

pub(crate) fn config(dir: &std::path::Path, levels: &[u32], per_level: u64) -> TestBench {
    let mut run = RunSettings::new(ClientSettings::new(Duration::from_secs(60)));
    run.results_dir = dir.to_path_buf();
    let config = BenchConfig {
        concurrency: levels.to_vec(),
        shapes: vec![Shape::Short],
        requests_per_level: Some(per_level),
        run_id: "test-run".into(),
        seed: 42,
        ..BenchConfig::default()
    };
    TestBench { config, run }
}

pub(crate) async fn run(
    c: &TestBench,
    server: &FakeServer,
    info: &FakeInfo,
    metrics: Option<&dyn ServerMetrics>,
    stop: watch::Receiver<bool>,
) -> BenchOutcome {
    run_telling(c, (server, info, metrics), stop, Events::silent()).await
}

/// [`run`], telling its events through `events`.
pub(crate) async fn run_telling(
    c: &TestBench,
    (server, info, metrics): (&FakeServer, &FakeInfo, Option<&dyn ServerMetrics>),
    stop: watch::Receiver<bool>,
    events: Events,
) -> BenchOutcome {
    let deps = BenchDeps {
        transport: server,
        info,
        metrics,
        clock: server.clock.clone(),
        stop,
        events,
        measure_client_cpu: false,
    };
    run_reading_facts(&c.config, &c.run, deps)
        .await
        .expect("run succeeds")
}

/// Parses `n=` and `i=` out of a prompt's tag.
fn tag_fields(prompt: &str) -> (u32, u64) {
    let tag = prompt.lines().next().unwrap();
    let field = |name: &str| {
        tag.split_whitespace()
            .find_map(|w| w.strip_prefix(name))
            .map(|v| v.trim_end_matches(']').to_string())
            .unwrap()
    };
    (field("n=").parse().unwrap(), field("i=").parse().unwrap())
}

#[tokio::test(start_paused = true)]
async fn keeps_exactly_n_in_flight_and_counts_every_request() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::real();
    let server = FakeServer::new(&clock, &[1.0, 2.0, 3.0]);
    let info = FakeInfo { tokenize: true };
    let (_tx, rx) = watch::channel(false);
    let c = config(dir.path(), &[1, 4, 8], 20);
    let out = run(&c, &server, &info, None, rx).await;
    assert!(!out.interrupted);
    assert_eq!(out.levels.len(), 3);
    for l in &out.levels {
        assert_eq!((l.requests, l.successes), (20, 20));
        assert_eq!(l.ended_by, LevelEnd::Requests);
        assert_eq!(l.preemptions, None, "no /metrics: server columns absent");
        assert_eq!(l.failed_scrapes, None);
    }
    // Never more than N in flight; the first N start together.
    for (prompt, in_flight) in server.seen() {
        let (n, i) = tag_fields(&prompt);
        assert!(in_flight <= u64::from(n), "{in_flight} in flight at N={n}");
        if i < u64::from(n) {
            assert_eq!(in_flight, i + 1, "request {i} at N={n}");
        }
    }
    let recs = results::read_bench_requests(&out.folder).unwrap();
    assert_eq!(recs.items.len(), 60);
    assert!(!recs.truncated_last_line);
    // From the records: between any two events before the last start of a
    // level, exactly N requests are in flight (a finish and the start it
    // triggers happen at the same instant).
    for n in [1u32, 4, 8] {
        let level: Vec<_> = recs.items.iter().filter(|r| r.concurrency == n).collect();
        let last_start = level.iter().map(|r| r.started_at).fold(0.0, f64::max);
        let mut events: Vec<f64> = level
            .iter()
            .flat_map(|r| [r.started_at, r.started_at + r.e2e_s])
            .filter(|&t| t <= last_start)
            .collect();
        events.sort_by(f64::total_cmp);
        events.dedup_by(|a, b| (*a - *b).abs() < 1e-9);
        for w in events.windows(2) {
            let mid = (w[0] + w[1]) / 2.0;
            let busy = level
                .iter()
                .filter(|r| r.started_at <= mid && mid < r.started_at + r.e2e_s)
                .count();
            assert_eq!(busy, n as usize, "at t={mid} of level N={n}");
        }
    }
    // 20 requests of 1, 2, 3 s cycled, one at a time: 7 + 14 + 18 = 39 s
    // (the sizing used /tokenize, so no probe request shifted the cycle).
    assert!(
        (out.levels[0].wall_time_s - 39.0).abs() < 1e-6,
        "{}",
        out.levels[0].wall_time_s
    );
    assert_eq!(out.summary.prompt_sizing.method, SizingMethod::Tokenize);
}

#[tokio::test(start_paused = true)]
async fn level_duration_stops_starting_but_counts_requests_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::real();
    let server = FakeServer::new(&clock, &[2.0]);
    let info = FakeInfo { tokenize: true };
    let (_tx, rx) = watch::channel(false);
    let mut c = config(dir.path(), &[2], 1000);
    c.level_duration = Some(Duration::from_secs(5));
    let metrics = FakeMetrics { load: None };
    let out = run(&c, &server, &info, Some(&metrics), rx).await;
    let l = &out.levels[0];
    // Starts at 0, 2, 4 (two each); the cap at 5 s lets the last two finish at 6 s.
    assert_eq!(l.ended_by, LevelEnd::Duration);
    assert_eq!(l.requests, 6);
    assert!((l.wall_time_s - 6.0).abs() < 1e-6);
    assert!((l.requests_per_s - 1.0).abs() < 1e-6);
    assert!((l.output_tok_per_s - 256.0).abs() < 1e-6);
    assert_eq!(l.peak_kv_usage, Some(0.085));
    assert_eq!(l.failed_scrapes, Some(1));
    let timeline = std::fs::read_to_string(out.folder.join("server-timeline.jsonl")).unwrap();
    assert!(timeline.lines().count() >= 1);
}

#[tokio::test(start_paused = true)]
async fn interruption_lets_in_flight_finish_and_writes_partial_results() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::real();
    let server = FakeServer::new(&clock, &[2.0]);
    let info = FakeInfo { tokenize: true };
    let (tx, rx) = watch::channel(false);
    let stopper_clock = clock.clone();
    tokio::spawn(async move {
        stopper_clock.sleep(Duration::from_secs_f64(3.0)).await;
        let _ = tx.send(true);
    });
    let c = config(dir.path(), &[4, 8], 100);
    let out = run(&c, &server, &info, None, rx).await;
    assert!(out.interrupted);
    assert_eq!(out.levels.len(), 1, "later levels never start");
    let l = &out.levels[0];
    assert_eq!(l.ended_by, LevelEnd::Interrupted);
    // 4 at 0 s, 4 more at 2 s; stop at 3 s; those 4 finish at 4 s.
    assert_eq!((l.requests, l.abandoned), (8, 0));
    let summary = results::read_bench_summary(&out.folder).unwrap();
    assert!(summary.header.interrupted);
    assert_eq!(
        results::read_bench_requests(&out.folder)
            .unwrap()
            .items
            .len(),
        8
    );
    let csv = std::fs::read_to_string(out.folder.join("summary.csv")).unwrap();
    assert_eq!(csv.lines().count(), 2);
}

#[tokio::test(start_paused = true)]
async fn requests_outliving_the_grace_are_abandoned() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::real();
    let server = FakeServer::new(&clock, &[100.0]);
    let info = FakeInfo { tokenize: true };
    let (tx, rx) = watch::channel(false);
    let stopper_clock = clock.clone();
    tokio::spawn(async move {
        stopper_clock.sleep(Duration::from_secs(1)).await;
        let _ = tx.send(true);
    });
    let mut c = config(dir.path(), &[3], 10);
    c.cancel_grace = Duration::from_secs(5);
    let out = run(&c, &server, &info, None, rx).await;
    let l = &out.levels[0];
    assert!(out.interrupted);
    assert_eq!((l.requests, l.abandoned), (0, 3));
    assert!(
        (l.wall_time_s - 6.0).abs() < 1e-6,
        "stop at 1 s + 5 s grace"
    );
    assert_eq!(l.ttft_p50_s, None);
}

#[tokio::test(start_paused = true)]
async fn summary_agrees_with_requests_jsonl_and_groups_errors() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::real();
    let mut server = FakeServer::new(&clock, &[0.5, 1.7, 2.3, 0.9, 4.1]);
    server.fail_every = 7;
    let info = FakeInfo { tokenize: true };
    let (_tx, rx) = watch::channel(false);
    let mut c = config(dir.path(), &[3, 5], 23);
    c.shapes = vec![Shape::Short, Shape::Long];
    let out = run(&c, &server, &info, None, rx).await;
    let summary = results::read_bench_summary(&out.folder).unwrap();
    let recs = results::read_bench_requests(&out.folder).unwrap().items;
    assert_eq!(summary.levels.len(), 4);
    for l in &summary.levels {
        let mine: Vec<_> = recs
            .iter()
            .filter(|r| r.shape == l.shape && r.concurrency == l.concurrency)
            .collect();
        assert_eq!(mine.len() as u64, l.requests);
        // Latencies come from the steady window's requests when it holds
        // enough of them, else from every request of the level.
        let window = l.steady.filter(|w| w.used);
        let inside =
            |r: &&&codendum_core::results::RequestRecord| window.is_none_or(|w| w.holds(r));
        let ttft = sorted_finite(
            mine.iter()
                .filter(inside)
                .filter(|r| r.ok)
                .filter_map(|r| r.ttft_s),
        );
        let e2e = sorted_finite(mine.iter().filter(inside).filter(|r| r.ok).map(|r| r.e2e_s));
        let close = |a: Option<f64>, b: Option<f64>| {
            let (a, b) = (a.unwrap(), b.unwrap());
            assert!((a - b).abs() < 1e-9, "{a} != {b}");
        };
        close(percentile(&ttft, 50.0), l.ttft_p50_s);
        close(percentile(&ttft, 95.0), l.ttft_p95_s);
        close(percentile(&ttft, 99.0), l.ttft_p99_s);
        close(percentile(&e2e, 50.0), l.e2e_p50_s);
        close(percentile(&e2e, 95.0), l.e2e_p95_s);
        let failed = mine.iter().filter(|r| !r.ok).count() as u64;
        assert!(failed > 0);
        let group = &l.errors["http_503"];
        assert_eq!(
            (group.count, group.sample_message.as_str()),
            (failed, "queue full")
        );
        assert_eq!(l.successes + failed, l.requests);
    }
    assert_eq!(summary.server.model, "fake-model");
    assert_eq!(summary.server.server_version.as_deref(), Some("0.30.0"));
}

#[tokio::test(start_paused = true)]
async fn every_prompt_carries_a_unique_leading_tag() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::real();
    let server = FakeServer::new(&clock, &[1.0]);
    let info = FakeInfo { tokenize: true };
    let (_tx, rx) = watch::channel(false);
    let mut c = config(dir.path(), &[2, 3], 9);
    c.shapes = vec![Shape::Short, Shape::Long];
    run(&c, &server, &info, None, rx).await;
    let seen = server.seen();
    assert_eq!(seen.len(), 36);
    let tags: HashSet<String> = seen
        .iter()
        .map(|(p, _)| p.lines().next().unwrap().to_string())
        .collect();
    assert_eq!(tags.len(), 36, "tags repeat");
    assert!(tags
        .iter()
        .all(|t| t.starts_with("[codendum-bench run=test-run ")));
}

#[tokio::test(start_paused = true)]
async fn prompt_sizing_falls_back_from_tokenize_to_probe_to_estimate() {
    let clock = Clock::real();
    let (_tx, rx) = watch::channel(false);
    // tokenize: sized within 1 % of the target.
    let dir = tempfile::tempdir().unwrap();
    let server = FakeServer::new(&clock, &[1.0]);
    let c = config(dir.path(), &[1], 1);
    let out = run(&c, &server, &FakeInfo { tokenize: true }, None, rx.clone()).await;
    let s = &out.summary.prompt_sizing.shapes[0];
    let measured = s.measured_tokens.unwrap() as f64;
    assert!((measured - 512.0).abs() <= 5.12, "{measured}");
    // probe: the fake's usage counts 4 characters per token.
    let server = FakeServer::new(&clock, &[1.0]);
    let out = run(&c, &server, &FakeInfo { tokenize: false }, None, rx.clone()).await;
    assert_eq!(out.summary.prompt_sizing.method, SizingMethod::Probe);
    let cpt = out.summary.prompt_sizing.shapes[0].chars_per_token;
    assert!((cpt - 4.0).abs() < 0.01, "{cpt}");
    assert!(server.seen()[0].0.contains(" probe]"));
    // estimate: no usage either; counts are then the client's.
    let mut server = FakeServer::new(&clock, &[1.0]);
    server.usage = false;
    let out = run(&c, &server, &FakeInfo { tokenize: false }, None, rx).await;
    assert_eq!(out.summary.prompt_sizing.method, SizingMethod::Estimate);
    assert!(out.levels[0].tokens_client_counted);
    assert_eq!(out.levels[0].mean_input_tokens, None);
}

#[tokio::test(start_paused = true)]
async fn the_guard_refuses_a_busy_server_and_the_plan_fits_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let c = config(dir.path(), &[1], 1);
    let busy = FakeMetrics {
        load: Some(ServerLoad {
            running: 3.0,
            waiting: 1.0,
        }),
    };
    let e = busy_guard(busy.load_now().await, false, TimelineFlag::Report).unwrap_err();
    assert!(matches!(e, Error::Refused(_)));
    assert_eq!(e.exit_code(), 3);
    // Unreadable /metrics: not refused, the load not checked.
    let unchecked = busy_guard(None, false, TimelineFlag::Report).expect("goes on");
    assert!(!unchecked.checked());
    assert!(busy_guard(busy.load_now().await, true, TimelineFlag::Report).is_ok());
    let idle = FakeMetrics {
        load: Some(ServerLoad::default()),
    };
    assert!(busy_guard(idle.load_now().await, false, TimelineFlag::Report).is_ok());
    // The plan is the config against what the server said: its model, and
    // the long shape left out where it cannot fit.
    let info = FakeInfo { tokenize: true };
    let facts = ServerFacts::read(&info, None, "http://gpu:8000/v1".into())
        .await
        .expect("facts");
    let mut both = c.config.clone();
    both.shapes = Shape::ALL.to_vec();
    let plan = BenchPlan::new(
        &both,
        &ServerFacts {
            max_model_len: Some(8_192),
            ..facts.clone()
        },
    );
    let text = plan_text(&both, &plan, (&facts.label, &facts.model), None);
    assert!(
        text.contains("N=1: 1") && text.contains("http://gpu:8000/v1"),
        "{text}"
    );
    assert!(text.contains(&facts.model), "{text}");
    assert!(
        text.contains("long") && text.contains("8192"),
        "the skipped shape: {text}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_run_tells_its_levels_and_requests_as_events() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::real();
    let server = FakeServer::new(&clock, &[1.0]);
    let info = FakeInfo { tokenize: true };
    let (_tx, rx) = watch::channel(false);
    let c = config(dir.path(), &[1, 2], 3);
    let (events, said) = Events::recording();
    let out = run_telling(&c, (&server, &info, None), rx, events).await;
    assert_eq!(out.levels.len(), 2);
    let said = said.events();
    let started: Vec<(u32, u64)> = said
        .iter()
        .filter_map(|e| match e {
            Event::LevelStarted {
                concurrency,
                planned,
                ..
            } => Some((*concurrency, *planned)),
            _ => None,
        })
        .collect();
    assert_eq!(started, vec![(1, 3), (2, 3)]);
    let finished = said
        .iter()
        .filter(|e| matches!(e, Event::RequestFinished { .. }))
        .count();
    assert_eq!(finished, 6, "one event per request");
    assert_eq!(
        said.iter()
            .filter(|e| matches!(e, Event::LevelFinished))
            .count(),
        2
    );
}

#[tokio::test(start_paused = true)]
async fn interruption_while_the_last_requests_drain_also_gets_only_the_grace() {
    let dir = tempfile::tempdir().unwrap();
    let clock = Clock::real();
    let server = FakeServer::new(&clock, &[3.0, 100.0]);
    let info = FakeInfo { tokenize: true };
    let (tx, rx) = watch::channel(false);
    let stopper_clock = clock.clone();
    tokio::spawn(async move {
        stopper_clock.sleep(Duration::from_secs(1)).await;
        let _ = tx.send(true);
    });
    // Two requests, both started at once: nothing left to start when the
    // stop arrives; the 3 s one finishes within the grace, the 100 s one not.
    let c = config(dir.path(), &[2, 4], 2);
    let out = run(&c, &server, &info, None, rx).await;
    assert!(out.interrupted);
    assert_eq!(out.levels.len(), 1);
    let l = &out.levels[0];
    assert_eq!(l.ended_by, LevelEnd::Interrupted);
    assert_eq!((l.requests, l.abandoned), (1, 1));
    assert!((l.wall_time_s - 6.0).abs() < 1e-6, "{}", l.wall_time_s);
}
