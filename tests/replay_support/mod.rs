//! A class captured and replayed, for the replay tests in `tests/it` (the
//! count-based figures) and `tests/perf` (the timing ones, alone on the
//! machine): simulated students through `codendum capture` to a twin, then
//! the capture replayed through another capture against a fresh twin of
//! the same profile (both runs take the same path, so the proxy's own
//! milliseconds weigh alike), each run's server figures read off its
//! twin's `/metrics`.

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use codendum::capture::{self, CaptureConfig};
use codendum::classroom::{run_classroom, ClassroomConfig, LiveStatus, MemorySink};
use codendum::client::{build_http_client, ClientOptions, HttpClient};
use codendum::replay::{self, ReplayConfig, SourceKind};
use codendum::scrape::{Sampler, SamplerHandle, Scraper};
use codendum_core::clock::Clock;
use codendum_core::openai::{Endpoint, Transport};
use codendum_core::profile::Profile;
use codendum_core::prom::{window_stats, WindowStats};
use codendum_core::results::classroom_records::CallRecord;
use codendum_core::stats::{percentile, sorted_finite};
use codendum_core::target::BaseUrl;
use codendum_twin::persona::AgentPersona;
use codendum_twin::{TwinHandle, TwinOptions};

/// The twin every run uses (classroom-64k, the agent persona), on `clock`.
pub async fn twin(clock: &Clock) -> TwinHandle {
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = clock.clone();
    opts.responder = Arc::new(AgentPersona::new(3));
    opts.seed = 3;
    codendum_twin::start(opts, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("twin starts")
}

/// codendum's client to `base`, on `clock`.
pub fn client(base: &str, clock: &Clock) -> Arc<HttpClient> {
    Arc::new(
        HttpClient::new(
            &BaseUrl::parse(base).expect("base url"),
            ClientOptions {
                cacert: None,
                timeout: Duration::from_secs(900),
                max_connections: 256,
                clock: clock.clone(),
                api_key: None,
            },
        )
        .expect("client"),
    )
}

fn sampler(twin: &TwinHandle, clock: &Clock) -> SamplerHandle {
    let http = build_http_client(None, 4).expect("http");
    Sampler::start(
        Scraper::new(http, vec![twin.metrics_url()]),
        clock.clone(),
        Duration::from_secs(1),
    )
}

/// A run's server figures over its span and its TTFT P50/P95 (seconds).
#[derive(Debug, Clone)]
pub struct Figures {
    /// Off the twin's `/metrics`.
    pub server: WindowStats,
    /// TTFT of the successful calls, P50 and P95, seconds.
    pub ttft: (f64, f64),
    /// The same in the twin's engine clock (its per-request log; the
    /// template probes left out), P50 and P95, seconds.
    pub engine_ttft: (f64, f64),
    /// Calls made.
    pub calls: usize,
}

fn p50_p95(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let sorted = sorted_finite(values);
    (
        percentile(&sorted, 50.0).expect("ttft"),
        percentile(&sorted, 95.0).expect("ttft"),
    )
}

/// The figures of a run on `twin` whose first `probes` requests were the
/// replay's template probes.
async fn figures(
    s: SamplerHandle,
    clock: &Clock,
    t0: f64,
    calls: &[CallRecord],
    twin: &TwinHandle,
    probes: usize,
) -> Figures {
    s.sample_now().await;
    let t1 = clock.now_secs() + 1.0;
    let timeline = s.stop().await;
    let log = twin
        .state()
        .stats
        .lock()
        .map(|st| st.ttft_log.samples())
        .expect("stats");
    assert_eq!(log.len(), calls.len() + probes, "a first token per call");
    Figures {
        server: window_stats(&timeline, t0, t1),
        ttft: p50_p95(calls.iter().filter(|r| r.is_ok()).filter_map(|r| r.ttft_s)),
        engine_ttft: p50_p95(log.into_iter().skip(probes)),
        calls: calls.len(),
    }
}

/// `codendum replay` of `trace` through `base` on `clock` (the chat
/// template measured first, as the command does), `speed` times as fast
/// as recorded.
pub async fn replay_through(
    base: &str,
    clock: &Clock,
    trace: &codendum_core::trace::Trace,
    speed: f64,
    salt: u64,
) -> replay::ReplayOutcome {
    let transport = client(base, clock);
    let template = replay::template_tokens(transport.as_ref(), Endpoint::Chat, "qwen3-coder").await;
    let config = ReplayConfig {
        model: "qwen3-coder".into(),
        speed,
        salt,
        endpoint: Endpoint::Chat,
        api_key: None,
        template,
    };
    let transport: Arc<dyn Transport> = transport;
    replay::run_replay(
        trace,
        &config,
        transport,
        clock.clone(),
        Arc::new(MemorySink::default()),
        None,
    )
    .await
}

/// `replayed` is within `tolerance` (a fraction) of `original`.
pub fn within(name: &str, original: f64, replayed: f64, tolerance: f64) {
    let off = (replayed - original).abs() / original.abs().max(1e-9);
    assert!(
        off <= tolerance,
        "{name}: class {original:.4}, replay {replayed:.4} ({:.1} % off)",
        off * 100.0
    );
}

/// The class of `users` students (300 s window, 60 s ramp-up, one
/// follow-up), captured in `dir/cap`, and its replay; both on clocks
/// `scale` times faster than real time. Checks that every call was
/// captured, replayed and captured again.
pub async fn class_then_replay(dir: &Path, users: usize, scale: f64) -> (Figures, Figures) {
    let clock = Clock::scaled(scale);
    let original = twin(&clock).await;
    let cap = capture::start(
        CaptureConfig::new(&original.base_url(), "127.0.0.1:0", dir.join("cap")).expect("config"),
    )
    .await
    .expect("capture");
    let mut config = ClassroomConfig::new("qwen3-coder", Some(65_536));
    config.users = users;
    config.duration = Duration::from_secs(300);
    config.ramp_up = Duration::from_secs(60);
    config.follow_ups = 1;
    config.pause_min = Duration::from_secs(20);
    config.pause_max = Duration::from_secs(40);
    config.seed = 11;
    let s = sampler(&original, &clock);
    let t0 = clock.now_secs();
    let class = run_classroom(
        &config,
        client(&cap.base_url(), &clock),
        clock.clone(),
        Arc::new(MemorySink::default()),
        Arc::new(LiveStatus::new(clock.clone())),
    )
    .await
    .expect("class runs");
    let class_figures = figures(s, &clock, t0, &class.requests, &original, 0).await;
    let recorded = cap
        .shutdown(Duration::from_secs(5))
        .await
        .expect("shutdown");
    original.shutdown().await;
    assert_eq!(class.summary.errors, 0);
    assert_eq!(
        recorded as usize,
        class.requests.len(),
        "every call captured"
    );

    let (kind, trace) = replay::load(&dir.join("cap"), 16).expect("reads the capture");
    assert_eq!(kind, SourceKind::Capture);
    assert_eq!(trace.calls.len(), class.requests.len());
    let fresh = twin(&clock).await;
    let again = capture::start(
        CaptureConfig::new(&fresh.base_url(), "127.0.0.1:0", dir.join("again")).expect("config"),
    )
    .await
    .expect("capture");
    let s = sampler(&fresh, &clock);
    let t0 = clock.now_secs();
    // The capture's seconds are real; the twin's run `scale` times faster.
    let replayed = replay_through(&again.base_url(), &clock, &trace, 1.0 / scale, 1).await;
    // The two template probes ran, one after the other, before any call.
    let replay_figures = figures(s, &clock, t0, &replayed.requests, &fresh, 2).await;
    let recaptured = again
        .shutdown(Duration::from_secs(5))
        .await
        .expect("shutdown");
    fresh.shutdown().await;
    assert_eq!(replayed.requests.len(), trace.calls.len());
    assert!(replayed.requests.iter().all(|r| r.is_ok()));
    // Every prompt of its recorded size, the carried conversations too.
    let sent: u64 = replayed
        .requests
        .iter()
        .filter_map(|r| r.prompt_tokens)
        .sum();
    let recorded: u64 = trace.calls.iter().map(|c| c.input_tokens).sum();
    assert_eq!(sent, recorded, "prompt tokens replayed and recorded");
    // The two template probes and every replayed call.
    assert_eq!(recaptured as usize, trace.calls.len() + 2);
    (class_figures, replay_figures)
}
