//! Recorded sessions replayed against the in-process twin in virtual time
//! (a paused clock: no millisecond of this machine enters, so every figure
//! is the same on every run): real Claude Code conversations as users,
//! TraceLab's rows and the real OpenCode's store. Every call reaches the
//! twin at its recorded size (within 1 % of the twin's own count), the
//! twin's prefix-cache hit rate with an ample cache is within 2 points of
//! the theoretical one, and `--users`, `--start-part-way`, `--max-think`,
//! `--timing original` and the calls beyond the context do what they say.

use std::collections::BTreeMap;
use std::sync::Arc;

use codendum::classroom::MemorySink;
use codendum::replay::{self, ReplayConfig, ReplayOutcome, Schedule, Timing, TooLong};
use codendum_core::clock::Clock;
use codendum_core::openai::Endpoint;
use codendum_core::profile::Profile;
use codendum_core::results::classroom_records::CallRecord;
use codendum_core::trace::{Trace, TraceCall, WaitReason};
use codendum_twin::inproc::InProcTransport;
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

use crate::sessions_import::{fixture, read};

/// The in-process twin (classroom-64k, its context `max_model_len`).
fn twin(clock: &Clock, max_model_len: u32) -> Arc<InProcTransport> {
    let mut profile = Profile::load("classroom-64k").expect("profile");
    profile.server.max_model_len = max_model_len;
    let mut opts = TwinOptions::new(profile);
    opts.clock = clock.clone();
    opts.responder = Arc::new(AgentPersona::new(3));
    opts.seed = 3;
    Arc::new(InProcTransport::start(opts))
}

/// A replay of `trace` against a fresh twin of context `max_model_len`:
/// the outcome and the twin's hit rate over it.
async fn replay(trace: &Trace, max_model_len: u32, schedule: Schedule) -> (ReplayOutcome, f64) {
    let clock = Clock::scaled(1.0);
    let server = twin(&clock, max_model_len);
    let template = replay::template_tokens(server.as_ref(), Endpoint::Chat, "qwen3-coder").await;
    let before = server.engine_stats();
    let mut config = ReplayConfig::new("qwen3-coder", template);
    config.salt = 5;
    config.schedule = schedule;
    config.max_model_len = Some(u64::from(max_model_len));
    let out = replay::run_replay(
        trace,
        &config,
        server.clone(),
        clock,
        Arc::new(MemorySink::default()),
        None,
    )
    .await;
    let after = server.engine_stats();
    server.stop();
    let hits = (after.prefix_hits - before.prefix_hits) as f64;
    let queries = (after.prefix_queries - before.prefix_queries) as f64;
    (out, hits / queries)
}

/// Every session's records in the order they were sent, beside the trace's
/// calls of that session that were sent (those `sent` keeps).
fn by_session<'a>(
    trace: &'a Trace,
    records: &'a [CallRecord],
    sent: impl Fn(&TraceCall) -> bool,
) -> Vec<(String, Vec<&'a TraceCall>, Vec<&'a CallRecord>)> {
    let mut out = Vec::new();
    for s in trace.sessions() {
        let calls: Vec<&TraceCall> = trace
            .calls
            .iter()
            .filter(|c| c.session.as_deref() == Some(s) && sent(c))
            .collect();
        let mut recs: Vec<&CallRecord> = records.iter().filter(|r| r.session == s).collect();
        recs.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
        out.push((s.to_string(), calls, recs));
    }
    out
}

/// Every call sent at its recorded size, within 1 % of the twin's count;
/// returns the largest difference, a fraction.
fn assert_recorded_sizes(
    trace: &Trace,
    out: &ReplayOutcome,
    sent: impl Fn(&TraceCall) -> bool,
) -> f64 {
    assert!(
        out.requests.iter().all(|r| r.is_ok()),
        "every call answered"
    );
    assert_eq!(out.sizes.calls, out.requests.len(), "every prompt counted");
    assert_eq!(out.sizes.within_1_pct, out.sizes.calls, "{:?}", out.sizes);
    let mut worst = 0.0f64;
    for (s, calls, recs) in by_session(trace, &out.requests, sent) {
        assert_eq!(calls.len(), recs.len(), "{s}: calls sent");
        for (c, r) in calls.iter().zip(&recs) {
            let got = r.prompt_tokens.expect("the twin's count") as f64;
            let off = (got - c.input_tokens as f64).abs() / c.input_tokens as f64;
            worst = worst.max(off);
            assert!(
                off <= 0.01,
                "{s}: recorded {} tokens, the twin counted {got}",
                c.input_tokens
            );
            assert_eq!(r.output_tokens, c.output_tokens.max(1), "{s}: output");
        }
    }
    worst
}

#[tokio::test(start_paused = true)]
async fn claude_code_conversations_as_users_reach_the_twin_at_their_recorded_sizes_and_sharing() {
    let trace = read(&fixture("claude-code"));
    let schedule = Schedule {
        users: Some(3),
        ..Schedule::default()
    };
    // A context that holds every call of trace_0277 (92,614 tokens).
    let (out, measured) = replay(&trace, 131_072, schedule).await;
    assert_eq!(out.requests.len(), trace.calls.len());
    assert_eq!(out.too_long, (0, 0));
    assert_eq!(out.sessions_started, 6);
    let worst = assert_recorded_sizes(&trace, &out, |_| true);
    let theoretical = out.theoretical_hit_rate().expect("tokens sent");
    eprintln!(
        "claude-code, 6 conversations as 3 users: {} calls, sizes within {:.3} %, hit rate measured {measured:.4}, theoretical {theoretical:.4}",
        out.requests.len(),
        worst * 100.0
    );
    assert!(
        (measured - theoretical).abs() <= 0.02,
        "measured {measured:.4}, theoretical {theoretical:.4}"
    );
    // Never more than three conversations at once.
    let mut spans: BTreeMap<usize, (f64, f64)> = BTreeMap::new();
    for r in &out.requests {
        let e = spans.entry(r.user).or_insert((f64::MAX, 0.0));
        e.0 = e.0.min(r.started_at);
        e.1 = e.1.max(r.started_at + r.wait_s);
    }
    assert_eq!(spans.len(), 6);
    for (u, (start, _)) in &spans {
        let running = spans
            .values()
            .filter(|(s, e)| *s <= *start && *e > *start)
            .count();
        assert!(running <= 3, "user {u}: {running} running at its start");
    }
}

#[tokio::test(start_paused = true)]
async fn calls_beyond_the_context_are_skipped_or_shortened_and_counted() {
    let trace = read(&fixture("claude-code/trace_0277.json.gz"));
    let limit = 65_536u64;
    let over = |c: &TraceCall| c.input_tokens + c.output_tokens.max(1) > limit;
    let beyond = trace.calls.iter().filter(|c| over(c)).count();
    assert!(beyond > 0 && beyond < trace.calls.len(), "{beyond}");
    let (out, _) = replay(&trace, limit as u32, Schedule::default()).await;
    assert_eq!(out.too_long, (beyond, 0));
    assert_eq!(out.requests.len(), trace.calls.len() - beyond);
    assert_recorded_sizes(&trace, &out, |c| !over(c));
    let shorten = Schedule {
        too_long: TooLong::Shorten,
        ..Schedule::default()
    };
    let (out, measured) = replay(&trace, limit as u32, shorten).await;
    assert_eq!(out.too_long, (0, beyond));
    assert_eq!(out.requests.len(), trace.calls.len());
    assert!(out.requests.iter().all(|r| r.is_ok()));
    for r in &out.requests {
        let sent = r.prompt_tokens.expect("count") + r.output_tokens;
        assert!(sent <= limit, "{sent} tokens in a {limit}-token context");
    }
    // A prompt shortened from the front shares nothing with the longer
    // prompts it was cut from, in theory as on the server.
    let theoretical = out.theoretical_hit_rate().expect("tokens");
    assert!(
        (measured - theoretical).abs() <= 0.02,
        "shortened: measured {measured:.4}, theoretical {theoretical:.4}"
    );
}

#[tokio::test(start_paused = true)]
async fn part_way_starts_skip_the_first_calls_of_the_first_sessions() {
    let dir = tempfile::tempdir().expect("dir");
    for f in [
        "trace_0057.json",
        "trace_0187.json",
        "trace_0242.json",
        "trace_0504.json",
        "trace_0538.json",
    ] {
        std::fs::copy(fixture("claude-code").join(f), dir.path().join(f)).expect("copy");
    }
    let trace = read(dir.path());
    let roots = trace.sessions();
    let schedule = Schedule {
        users: Some(5),
        start_part_way: true,
        ..Schedule::default()
    };
    let (out, _) = replay(&trace, 65_536, schedule).await;
    // The i-th of five starts at i/5 of its calls.
    let expected: usize = roots
        .iter()
        .enumerate()
        .map(|(i, s)| {
            trace
                .calls
                .iter()
                .filter(|c| c.session.as_deref() == Some(*s))
                .count()
                * i
                / 5
        })
        .sum();
    assert!(expected > 0);
    assert_eq!(out.before_part_way, expected);
    assert_eq!(out.requests.len(), trace.calls.len() - expected);
    assert!(out.requests.iter().all(|r| r.is_ok()));
}

#[tokio::test(start_paused = true)]
async fn a_persons_wait_is_capped_and_original_timing_keeps_the_recorded_offsets() {
    // trace_0242: three calls, the second and third after a person's
    // message (47 s and 142 s of thinking).
    let trace = read(&fixture("claude-code/trace_0242.json"));
    let waits: Vec<(f64, WaitReason)> = trace
        .calls
        .iter()
        .filter_map(|c| c.after.map(|d| (d.gap_s, d.reason)))
        .collect();
    assert_eq!(
        waits,
        vec![(47.0, WaitReason::Person), (142.0, WaitReason::Person)]
    );
    let capped = Schedule {
        users: Some(1),
        max_think_s: Some(10.0),
        ..Schedule::default()
    };
    let (out, _) = replay(&trace, 65_536, capped).await;
    let mut recs = out.requests.clone();
    recs.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
    assert_eq!(recs.len(), 3);
    for pair in recs.windows(2) {
        let gap = pair[1].started_at - (pair[0].started_at + pair[0].wait_s);
        assert!(
            (gap - 10.0).abs() < 0.01,
            "a person's wait capped at 10 s: {gap}"
        );
    }
    let original = Schedule {
        users: Some(1),
        timing: Timing::Original,
        ..Schedule::default()
    };
    let (out, _) = replay(&trace, 65_536, original).await;
    let mut starts: Vec<f64> = out.requests.iter().map(|r| r.started_at).collect();
    starts.sort_by(f64::total_cmp);
    let origin = starts[0];
    for (s, c) in starts.iter().zip(&trace.calls) {
        assert!(
            (s - origin - c.at_s).abs() < 0.01,
            "sent at {s}, recorded {}",
            c.at_s
        );
    }
}

#[tokio::test(start_paused = true)]
async fn tracelab_rows_and_the_opencode_store_replay_at_their_recorded_sizes() {
    for (name, path) in [
        ("tracelab", fixture("tracelab/round_trace.jsonl.gz")),
        ("opencode", fixture("opencode-1.18.33")),
    ] {
        let trace = read(&path);
        let (out, measured) = replay(&trace, 65_536, Schedule::default()).await;
        assert_eq!(out.requests.len(), trace.calls.len(), "{name}");
        let worst = assert_recorded_sizes(&trace, &out, |_| true);
        let theoretical = out.theoretical_hit_rate().expect("tokens");
        eprintln!(
            "{name}: {} calls, sizes within {:.3} %, hit rate measured {measured:.4}, theoretical {theoretical:.4}",
            out.requests.len(),
            worst * 100.0
        );
        assert!(
            (measured - theoretical).abs() <= 0.02,
            "{name}: measured {measured:.4}, theoretical {theoretical:.4}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn any_wait_is_capped_and_a_stopped_replay_sends_no_sleeping_call() {
    // trace_0504: its last call waited 3,058 s after a tool result.
    let trace = read(&fixture("claude-code/trace_0504.json"));
    let long = trace
        .calls
        .iter()
        .filter_map(|c| c.after)
        .find(|d| d.gap_s > 3_000.0)
        .expect("a long wait");
    assert_eq!(long.reason, WaitReason::Tool);
    let capped = Schedule {
        users: Some(1),
        max_think_s: Some(1.0),
        max_wait_s: Some(20.0),
        ..Schedule::default()
    };
    let (out, _) = replay(&trace, 65_536, capped).await;
    let mut recs = out.requests.clone();
    recs.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
    let longest = recs
        .windows(2)
        .map(|p| p[1].started_at - (p[0].started_at + p[0].wait_s))
        .fold(0.0, f64::max);
    assert!((longest - 20.0).abs() < 0.01, "{longest}");
    // Stopped 100 s in, while the last call sleeps its 3,058 s: the replay
    // ends then, the calls before it sent, not that one.
    let clock = Clock::scaled(1.0);
    let server = twin(&clock, 65_536);
    let config = ReplayConfig::new("qwen3-coder", replay::Template::default());
    let (tx, rx) = tokio::sync::watch::channel(false);
    let stopper = clock.clone();
    tokio::spawn(async move {
        stopper.sleep(std::time::Duration::from_secs(100)).await;
        let _ = tx.send(true);
    });
    let t0 = clock.now_secs();
    let out = replay::run_replay(
        &trace,
        &config,
        server.clone(),
        clock.clone(),
        Arc::new(MemorySink::default()),
        Some(rx),
    )
    .await;
    let took = clock.now_secs() - t0;
    server.stop();
    assert_eq!(out.requests.len(), trace.calls.len() - 1);
    assert!(took < 101.0, "ended {took} s in");
}

/// Recorded sessions named by `CODENDUM_SESSIONS` (any source `replay`
/// reads) replayed as `CODENDUM_USERS` users (default 4) against the
/// in-process twin in virtual time, its context `CODENDUM_MAX_MODEL_LEN`
/// (default 131072): prints the calls, the sizes the twin counted and the
/// measured and theoretical hit rates, for the validation tables. Run by
/// hand: `CODENDUM_SESSIONS=… cargo test -p codendum --test it
/// replay_sessions_named -- --ignored --nocapture`.
#[tokio::test(start_paused = true)]
#[ignore = "a validation run on sessions named by CODENDUM_SESSIONS"]
async fn replay_sessions_named_by_the_environment() {
    let path = std::env::var("CODENDUM_SESSIONS").expect("CODENDUM_SESSIONS");
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let users = env("CODENDUM_USERS", 4) as usize;
    let max_model_len = env("CODENDUM_MAX_MODEL_LEN", 131_072) as u32;
    let trace = read(std::path::Path::new(&path));
    let schedule = Schedule {
        users: Some(users),
        ..Schedule::default()
    };
    let (out, measured) = replay(&trace, max_model_len, schedule).await;
    let theoretical = out.theoretical_hit_rate().unwrap_or(0.0);
    eprintln!(
        "{path}: {} sessions ({} roots) as {users} users against a {max_model_len}-token twin: {} calls of {}, {} beyond the context skipped; sizes: {} of {} within 1 % (largest {:.3} %); hit rate measured {measured:.4}, theoretical {theoretical:.4} ({:+.2} points); errors {}",
        trace.sessions().len(),
        out.sessions_started,
        out.requests.len(),
        trace.calls.len(),
        out.too_long.0,
        out.sizes.within_1_pct,
        out.sizes.calls,
        out.sizes.max_error * 100.0,
        (measured - theoretical) * 100.0,
        out.requests.iter().filter(|r| !r.is_ok()).count()
    );
}
