//! A class captured and replayed, for the replay tests in `tests/it` (the
//! count-based figures) and `tests/perf` (the timing ones, alone on the
//! machine): simulated students through `codendum capture` to a twin, then
//! the capture replayed through another capture against a fresh twin of
//! the same profile (both runs take the same path, so the proxy's own
//! milliseconds weigh alike), each run's server figures read off its
//! twin's `/metrics`; on the way, the capture's trace is held against the
//! trace of the class's own records ([`match_traces`]).

#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use codendum::capture::{self, CaptureConfig};
use codendum::classroom::{run_classroom, ClassroomConfig, LiveStatus, MemorySink};
use codendum::client::{build_http_client, ClientOptions, HttpClient};
use codendum::replay::{self, ReplayConfig};
use codendum::scrape::{Sampler, SamplerHandle, Scraper};
use codendum_core::access::BaseUrl;
use codendum_core::clock::Clock;
use codendum_core::openai::{Endpoint, Transport};
use codendum_core::profile::Profile;
use codendum_core::prom::{window_stats, WindowStats};
use codendum_core::results::classroom_records::{CallKind, CallRecord};
use codendum_core::stats::{percentile, sorted_finite};
use codendum_core::trace::SourceFormat;
use codendum_twin::persona::AgentPersona;
use codendum_twin::{TwinHandle, TwinOptions};

/// The twin every run uses (classroom-64k, the agent persona), on `clock`.
pub async fn twin(clock: &Clock) -> TwinHandle {
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = clock.clone();
    opts.responder = Arc::new(AgentPersona::new(3));
    opts.seed = 3;
    opts.ttft_log = true;
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
    /// The engine timeline and the stretch of it the run took (clock
    /// seconds), for figures over a part of the run.
    pub timeline: Vec<codendum_core::prom::TimelineSample>,
    /// The run's start and end, clock seconds.
    pub span: (f64, f64),
}

fn p50_p95(values: impl IntoIterator<Item = f64>) -> (f64, f64) {
    let sorted = sorted_finite(values);
    (
        percentile(&sorted, 50.0).expect("ttft"),
        percentile(&sorted, 95.0).expect("ttft"),
    )
}

impl Figures {
    /// The figures of a run from its engine timeline between `t0` and `t1`
    /// (clock seconds), its call records and its engine's TTFT log, whose
    /// first `probes` entries were the replay's template probes.
    pub fn of(
        timeline: &[codendum_core::prom::TimelineSample],
        (t0, t1): (f64, f64),
        calls: &[CallRecord],
        ttft_log: Vec<f64>,
        probes: usize,
    ) -> Figures {
        assert_eq!(
            ttft_log.len(),
            calls.len() + probes,
            "a first token per call"
        );
        Figures {
            server: window_stats(timeline, t0, t1),
            ttft: p50_p95(calls.iter().filter(|r| r.is_ok()).filter_map(|r| r.ttft_s)),
            engine_ttft: p50_p95(ttft_log.into_iter().skip(probes)),
            calls: calls.len(),
            timeline: timeline.to_vec(),
            span: (t0, t1),
        }
    }

    /// The server output over the steady stretch `(ramp-up, end)` (seconds
    /// since the run started), tokens/s, as a classroom or replay summary
    /// states it.
    pub fn steady_output(&self, (ramp_up_s, end_s): (f64, f64)) -> Option<f64> {
        let mut window = ClassroomConfig::new("qwen3-coder", None);
        window.ramp_up = Duration::from_secs_f64(ramp_up_s);
        window.duration = Duration::from_secs_f64(end_s);
        let (t0, t1) = self.span;
        codendum::app::class_side::server_figures(&self.timeline, &[], t0, t1 - t0, &window)
            .output_tokens_per_s
    }
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
    Figures::of(&timeline, (t0, t1), calls, log, probes)
}

/// Prints a class's figures beside its replay's (`label` first) and
/// checks that the replay kept them: server output, TTFT P50 and P95 in
/// the engine's clock and the peak KV-cache usage within 10 %, the
/// prefix-cache hit rate within 2 %.
pub fn assert_replay_kept(label: &str, class: &Figures, replayed: &Figures) {
    let (a, b) = (&class.server, &replayed.server);
    eprintln!(
        "{label}, class vs replay ({} calls): output {:?} / {:?} tokens, hit rate {:?} / {:?}, peak KV {:?} / {:?}, engine TTFT P50/P95 {:.3}/{:.3} vs {:.3}/{:.3} s, client TTFT P50/P95 {:.3}/{:.3} vs {:.3}/{:.3} s",
        class.calls,
        a.generation_tokens,
        b.generation_tokens,
        a.prefix_hit_rate,
        b.prefix_hit_rate,
        a.peak_kv_usage,
        b.peak_kv_usage,
        class.engine_ttft.0,
        class.engine_ttft.1,
        replayed.engine_ttft.0,
        replayed.engine_ttft.1,
        class.ttft.0,
        class.ttft.1,
        replayed.ttft.0,
        replayed.ttft.1
    );
    let figure = |f: Option<f64>, what: &str| f.unwrap_or_else(|| panic!("no {what}"));
    within(
        "server output tokens",
        figure(a.generation_tokens, "class output"),
        figure(b.generation_tokens, "replay output"),
        0.10,
    );
    within(
        "prefix-cache hit rate",
        figure(a.prefix_hit_rate, "class hit rate"),
        figure(b.prefix_hit_rate, "replay hit rate"),
        0.02,
    );
    within(
        "TTFT P50",
        class.engine_ttft.0,
        replayed.engine_ttft.0,
        0.10,
    );
    within(
        "TTFT P95",
        class.engine_ttft.1,
        replayed.engine_ttft.1,
        0.10,
    );
    within(
        "peak KV usage",
        figure(a.peak_kv_usage, "class peak KV"),
        figure(b.peak_kv_usage, "replay peak KV"),
        0.10,
    );
}

/// Prints a class's steady server output beside its replay's, each over
/// its own window (the class's, and the one the replay inferred from the
/// capture), and beside the replay's over its whole run (what a capture's
/// replay averaged over before it inferred the window); checks the first
/// two within 5 %.
pub fn assert_steady_output_kept(class: &Figures, replayed: &Figures, windows: SteadyWindows) {
    let whole = |f: &Figures| {
        f.steady_output((0.0, f.span.1 - f.span.0))
            .expect("server output")
    };
    let Some(window) = windows.replay else {
        // No window to infer: the same work over each whole run.
        let (a, b) = (whole(class), whole(replayed));
        eprintln!(
            "steady server output: the capture shows no coding request after its ramp-up; over each whole run class {a:.2} tok/s, replay {b:.2} tok/s ({:+.1} %)",
            (b / a - 1.0) * 100.0
        );
        within("server output over each whole run", a, b, 0.05);
        return;
    };
    let (a, b) = (
        class.steady_output(windows.class).expect("class output"),
        replayed.steady_output(window).expect("replay output"),
    );
    eprintln!(
        "steady server output: class {a:.2} tok/s over {:?} s, replay {b:.2} tok/s over {window:?} s ({:+.1} %; over the whole replay {:.2}, {:+.1} %)",
        windows.class,
        (b / a - 1.0) * 100.0,
        whole(replayed),
        (whole(replayed) / a - 1.0) * 100.0
    );
    within("steady server output", a, b, 0.05);
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
    replay_with(client(base, clock), clock, trace, speed, salt).await
}

/// `codendum replay` of `trace` through `transport` on `clock`, as
/// [`replay_through`].
pub async fn replay_with(
    transport: Arc<dyn Transport>,
    clock: &Clock,
    trace: &codendum_core::trace::Trace,
    speed: f64,
    salt: u64,
) -> replay::ReplayOutcome {
    replay_configured(transport, clock, trace, |config| {
        config.speed = speed;
        config.salt = salt;
    })
    .await
}

/// `codendum replay` of `trace` through `transport` on `clock`, the
/// template measured first, with the settings `set` gives.
pub async fn replay_configured(
    transport: Arc<dyn Transport>,
    clock: &Clock,
    trace: &codendum_core::trace::Trace,
    set: impl FnOnce(&mut ReplayConfig),
) -> replay::ReplayOutcome {
    let template = replay::template_tokens(transport.as_ref(), Endpoint::Chat, "qwen3-coder").await;
    let mut config = ReplayConfig::new("qwen3-coder", template);
    set(&mut config);
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

/// Every call of `trace` replayed, successfully, each prompt of its
/// recorded size (the carried conversations too).
pub fn assert_every_call_replayed(
    trace: &codendum_core::trace::Trace,
    replayed: &replay::ReplayOutcome,
) {
    assert_eq!(replayed.requests.len(), trace.calls.len());
    assert!(replayed.requests.iter().all(|r| r.is_ok()));
    let sent: u64 = replayed
        .requests
        .iter()
        .filter_map(|r| r.prompt_tokens)
        .sum();
    let recorded: u64 = trace.calls.iter().map(|c| c.input_tokens).sum();
    assert_eq!(sent, recorded, "prompt tokens replayed and recorded");
}

/// How a capture's trace compares with the trace of the same class's own
/// records (`replay::source::from_class_records`), call by call (keyed by
/// session, kind and place among the session's calls of that kind).
#[derive(Debug, Clone)]
pub struct TraceMatch {
    /// Calls in both.
    pub calls: usize,
    /// Calls whose prompt and output tokens, kind and parent are the same.
    pub same_calls: usize,
    /// Calls that wait for the same call (or both for none).
    pub same_dependencies: usize,
    /// |captured − recorded| of the client times (the dependencies' gaps)
    /// and of the sessions' start offsets, real seconds, sorted.
    pub time_errors: Vec<f64>,
    /// The latest arrival of each trace, captured and recorded, real
    /// seconds since its first call.
    pub spans: (f64, f64),
}

/// A call's session, kind and place among the session's calls of that
/// kind (a title and the first step go out together, in either order).
type CallKey = (String, Option<CallKind>, usize);

fn keyed(trace: &codendum_core::trace::Trace) -> Vec<Option<CallKey>> {
    let mut seen: std::collections::HashMap<(String, Option<CallKind>), usize> = Default::default();
    trace
        .calls
        .iter()
        .map(|c| {
            c.session.clone().map(|s| {
                let n = seen.entry((s.clone(), c.kind)).or_insert(0);
                *n += 1;
                (s, c.kind, *n)
            })
        })
        .collect()
}

/// Compares `captured` (real seconds) with `recorded` (seconds of a clock
/// `scale` times faster than real time).
pub fn match_traces(
    captured: &codendum_core::trace::Trace,
    recorded: &codendum_core::trace::Trace,
    scale: f64,
) -> TraceMatch {
    let (ck, rk) = (keyed(captured), keyed(recorded));
    let index: std::collections::HashMap<&CallKey, usize> = ck
        .iter()
        .enumerate()
        .filter_map(|(i, k)| k.as_ref().map(|k| (k, i)))
        .collect();
    let mut m = TraceMatch {
        calls: 0,
        same_calls: 0,
        same_dependencies: 0,
        time_errors: Vec::new(),
        spans: (
            captured.calls.last().map_or(0.0, |c| c.at_s),
            recorded.calls.last().map_or(0.0, |c| c.at_s) / scale,
        ),
    };
    for (i, key) in rk.iter().enumerate() {
        let Some(&j) = key.as_ref().and_then(|k| index.get(k)) else {
            continue;
        };
        let (r, c) = (&recorded.calls[i], &captured.calls[j]);
        m.calls += 1;
        if (r.input_tokens, r.output_tokens, r.kind, &r.parent)
            == (c.input_tokens, c.output_tokens, c.kind, &c.parent)
        {
            m.same_calls += 1;
        }
        let waits = |d: Option<codendum_core::trace::Dependency>, keys: &[Option<CallKey>]| {
            d.map(|d| keys[d.call].clone())
        };
        if waits(r.after, &rk) == waits(c.after, &ck) {
            m.same_dependencies += 1;
            match (r.after, c.after) {
                (Some(a), Some(b)) => m.time_errors.push((a.gap_s / scale - b.gap_s).abs()),
                (None, None) if i > 0 && j > 0 => {
                    m.time_errors.push((r.at_s / scale - c.at_s).abs())
                }
                _ => {}
            }
        }
    }
    m.time_errors.sort_by(f64::total_cmp);
    m
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

/// The class every replay test runs: `users` students, 300 s window,
/// 60 s ramp-up, one follow-up, pauses of 20 to 40 s, seed 11.
pub fn class_config(users: usize) -> ClassroomConfig {
    let mut config = ClassroomConfig::new("qwen3-coder", Some(65_536));
    config.users = users;
    config.duration = Duration::from_secs(300);
    config.ramp_up = Duration::from_secs(60);
    config.set_follow_ups(1);
    config
        .set_pauses(Duration::from_secs(20), Duration::from_secs(40))
        .expect("pauses");
    config.seed = 11;
    config
}

/// The stretches server output is averaged over: the class's own window
/// (its ramp-up to the end of its window for new coding requests), and the
/// one a replay of its capture infers from the capture (on the replay's
/// clock), seconds since each run started.
#[derive(Debug, Clone, Copy)]
pub struct SteadyWindows {
    /// The class's.
    pub class: (f64, f64),
    /// The replay's; `None` when the capture shows no coding request
    /// started after the ramp-up (a machine so slow that no student got
    /// to a follow-up within the class's window), so no window to infer.
    pub replay: Option<(f64, f64)>,
}

/// The class of [`class_config`], captured in `dir/cap`, and its replay; both on clocks
/// `scale` times faster than real time. Checks that every call was
/// captured, replayed and captured again.
pub async fn class_then_replay(dir: &Path, users: usize, scale: f64) -> (Figures, Figures) {
    let (class, replayed, _) = class_then_replay_windows(dir, users, scale).await;
    (class, replayed)
}

/// [`class_then_replay`], with the steady windows of both runs.
pub async fn class_then_replay_windows(
    dir: &Path,
    users: usize,
    scale: f64,
) -> (Figures, Figures, SteadyWindows) {
    let clock = Clock::scaled(scale);
    let original = twin(&clock).await;
    let cap = capture::start(
        CaptureConfig::new(&original.base_url(), "127.0.0.1:0", dir.join("cap")).expect("config"),
    )
    .await
    .expect("capture");
    let config = class_config(users);
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
    assert_eq!(kind, SourceFormat::Capture);
    assert_eq!(trace.calls.len(), class.requests.len());
    let own = replay::source::from_class_records(&class.requests, 16);
    let m = match_traces(&trace, &own, scale);
    let q = |p: f64| percentile(&m.time_errors, p).unwrap_or(0.0) * 1000.0;
    eprintln!(
        "capture vs the class's records: {} calls, {} the same, {} with the same dependency; client-time and start errors P50/P95/max {:.1}/{:.1}/{:.1} ms real; span {:.2} / {:.2} s real",
        m.calls,
        m.same_calls,
        m.same_dependencies,
        q(50.0),
        q(95.0),
        q(100.0),
        m.spans.0,
        m.spans.1
    );
    // What the capture recorded is the class: every call's sizes, kind and
    // parent, and (but for a near tie a loaded machine can turn) what it
    // waited for. Its times differ from the class's by the proxy's and the
    // machine's milliseconds, which a loaded machine makes a hundred (so
    // they are printed, not bounded); the whole span is the class's within
    // 10 %, which a wrong clock or unit would not be.
    assert_eq!(m.calls, class.requests.len(), "every call matched");
    assert_eq!(m.same_calls, m.calls, "sizes, kinds and parents");
    assert!(
        m.same_dependencies * 50 >= m.calls * 49,
        "{} of {} dependencies the same",
        m.same_dependencies,
        m.calls
    );
    within("the trace's span", m.spans.1, m.spans.0, 0.10);
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
    assert_every_call_replayed(&trace, &replayed);
    // The two template probes and every replayed call.
    assert_eq!(recaptured as usize, trace.calls.len() + 2);
    // As `codendum replay` takes it: the capture's inferred window (real
    // seconds) on the replay's clock.
    let inferred = replay::source::steady_window(&dir.join("cap"), SourceFormat::Capture, &trace);
    let windows = SteadyWindows {
        class: (config.ramp_up.as_secs_f64(), config.duration.as_secs_f64()),
        replay: inferred.map(|(a, b)| (a * scale, b * scale)),
    };
    (class_figures, replay_figures, windows)
}
