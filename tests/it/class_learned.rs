//! A class learned from recorded conversations, simulated against the
//! twin, beside a replay of conversations on the same twin with the same
//! number of users: both in virtual time (a paused clock), so no
//! millisecond of this machine enters either side and the TTFTs compare
//! as the engine made them. The class's waits are capped as the replay's
//! (`--max-wait`), since a recorded wait of hours is a person away.
//!
//! The check on the OpenCode store of the fixtures runs on every `cargo
//! test`; the held-out check of
//! `docs/validation.md` runs the same code on folders given by
//! `CODENDUM_CLASS_LEARN` and `CODENDUM_CLASS_REPLAY` (ignored: it takes
//! minutes).

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use crate::replay_support::replay_configured;
use codendum::classroom::{run_classroom, ClassroomConfig, LiveStatus, MemorySink};
use codendum::replay::source::read;
use codendum_core::class::learn::{learn, Source};
use codendum_core::class::{Class, Distribution, Shape};
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_core::prom::{window_stats, TimelineSample};
use codendum_core::results::classroom_records::CallRecord;
use codendum_core::stats::{percentile, sorted_finite};
use codendum_core::trace::detect::ImportOptions;
use codendum_core::trace::Trace;
use codendum_twin::inproc::{InProcTransport, StatsSampler};
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

/// One side's figures: steady server output (tokens/s), TTFT P50 and P95
/// (seconds), the prefix-cache hit rate (0..1), calls made; its per-call
/// records and the engine's timeline (seconds since the side's start).
#[derive(Debug, Clone)]
struct Side {
    output_tok_s: f64,
    ttft_s: (f64, f64),
    hit: f64,
    calls: usize,
    records: Vec<CallRecord>,
    timeline: Vec<TimelineSample>,
}

/// classroom-64k with a context that holds the conversations (131,072).
fn profile() -> Profile {
    let mut p = Profile::load("classroom-64k").expect("profile");
    p.server.max_model_len = 131_072;
    p
}

/// The twin a replay runs against, on `clock`.
fn twin(clock: &Clock) -> Arc<InProcTransport> {
    let mut opts = TwinOptions::new(profile());
    opts.clock = clock.clone();
    Arc::new(InProcTransport::start(opts))
}

fn trace_of(dir: &Path) -> Trace {
    read(
        dir,
        None,
        ImportOptions {
            block_size: 64,
            max_sessions: None,
        },
    )
    .expect("recorded sessions")
}

/// Caps every value of `d` at `max` (the replay's `--max-wait`).
fn cap(d: &mut Distribution, max: f64) {
    match &mut d.shape {
        Shape::Value(v) => *v = v.min(max),
        Shape::Quantiles(points) => points.iter_mut().for_each(|(_, v)| *v = v.min(max)),
        Shape::Samples(s) => s.iter_mut().for_each(|v| *v = v.min(max)),
    }
}

/// The class learned from `trace`, its waits capped at `max_wait_s`.
fn learned(trace: &Trace, max_wait_s: f64) -> Class {
    let sources = [Source {
        name: "learn".into(),
        trace,
        tool_times: None,
    }];
    let mut class = learn(&sources, "learned", &Class::lab()).class;
    cap(&mut class.person.pause_s, max_wait_s);
    let t = &mut class.agent.tool_s;
    for d in [
        &mut t.file_tool,
        &mut t.after_edit,
        &mut t.build_test,
        &mut t.bash,
        &mut t.other_tool,
    ] {
        cap(d, max_wait_s);
    }
    class
}

fn ttfts(records: &[CallRecord]) -> (f64, f64) {
    let v = sorted_finite(
        records
            .iter()
            .filter(|r| r.is_ok())
            .filter_map(|r| r.ttft_s),
    );
    (
        percentile(&v, 50.0).expect("ttft"),
        percentile(&v, 95.0).expect("ttft"),
    )
}

/// `trace` replayed as `users` users, waits capped at `max_wait_s`; the
/// figures and the steady window (seconds since its start).
async fn replayed(trace: &Trace, users: usize, max_wait_s: f64) -> (Side, (f64, f64)) {
    let clock = Clock::scaled(1.0);
    let fresh = twin(&clock);
    let sampler = StatsSampler::spawn(Arc::clone(&fresh), Duration::from_secs(1));
    let t0 = clock.now_secs();
    let outcome = replay_configured(fresh.clone(), &clock, trace, |config| {
        config.schedule.users = Some(users);
        config.schedule.max_wait_s = Some(max_wait_s);
        config.max_model_len = Some(131_072);
    })
    .await;
    let timeline = sampler.finish();
    fresh.stop();
    let t1 = timeline.last().map_or(t0, |s| s.t) + 1.0;
    let steady = outcome.steady_s.unwrap_or((0.0, t1 - t0));
    let w = window_stats(&timeline, t0 + steady.0, t0 + steady.1);
    let side = Side {
        output_tok_s: w.generation_tokens.expect("generation") / (steady.1 - steady.0),
        ttft_s: ttfts(&outcome.requests),
        hit: window_stats(&timeline, t0, t1)
            .prefix_hit_rate
            .expect("hit rate"),
        calls: outcome.requests.len(),
        records: outcome.requests.clone(),
        timeline: since(&timeline, t0),
    };
    (side, steady)
}

/// `class` simulated as `users` students for the window `steady` (its
/// ramp-up and its end, seconds), seed `seed`.
async fn simulated(class: &Class, users: usize, steady: (f64, f64), seed: u64) -> Side {
    let clock = Clock::scaled(1.0);
    let mut config = ClassroomConfig::new("qwen3-coder", None);
    config.users = users;
    config.ramp_up = Duration::from_secs_f64(steady.0.max(1.0));
    config.duration = Duration::from_secs_f64(steady.1);
    config.context_limit = Some(131_072);
    config.class = Arc::new(class.clone());
    config.seed = seed;
    let mut opts = TwinOptions::new(profile());
    opts.clock = clock.clone();
    opts.responder = Arc::new(AgentPersona::with_spread(
        seed,
        Arc::new(class.agent.clone()),
    ));
    opts.seed = seed;
    let transport = Arc::new(InProcTransport::start(opts));
    let sampler = StatsSampler::spawn(Arc::clone(&transport), Duration::from_secs(1));
    let t0 = clock.now_secs();
    let sink = Arc::new(MemorySink::default());
    let status = Arc::new(LiveStatus::new(clock.clone()));
    let run = run_classroom(&config, transport.clone(), clock, sink.clone(), status)
        .await
        .expect("class runs");
    let timeline = sampler.finish();
    transport.stop();
    let t1 = timeline.last().map_or(t0, |s| s.t) + 1.0;
    let (a, b) = (steady.0.max(1.0), steady.1);
    let w = window_stats(&timeline, t0 + a, t0 + b);
    Side {
        output_tok_s: w.generation_tokens.expect("generation") / (b - a),
        ttft_s: (
            run.summary.ttft_p50_s.expect("ttft"),
            run.summary.ttft_p95_s.expect("ttft"),
        ),
        hit: window_stats(&timeline, t0, t1)
            .prefix_hit_rate
            .expect("hit rate"),
        calls: run.summary.requests as usize,
        records: sink.requests(),
        timeline: since(&timeline, t0),
    }
}

/// The timeline with its times from `t0`.
fn since(timeline: &[TimelineSample], t0: f64) -> Vec<TimelineSample> {
    timeline
        .iter()
        .cloned()
        .map(|mut s| {
            s.t -= t0;
            s
        })
        .collect()
}

/// P50 / P95 of `values` as text.
fn p50_95(values: impl IntoIterator<Item = f64>) -> String {
    let v = sorted_finite(values);
    match (percentile(&v, 50.0), percentile(&v, 95.0)) {
        (Some(a), Some(b)) => format!("{a:.1} / {b:.1}"),
        _ => "–".into(),
    }
}

/// What one side's calls looked like (prompt sizes, gaps between call
/// starts, calls in flight when one starts, the engine's queue) beside
/// its TTFTs: what tells where a TTFT tail comes from.
fn detail(label: &str, side: &Side) {
    let ok: Vec<&CallRecord> = side.records.iter().filter(|r| r.is_ok()).collect();
    let mut starts: Vec<f64> = ok.iter().map(|r| r.started_at).collect();
    starts.sort_by(f64::total_cmp);
    let gaps = starts.windows(2).map(|w| w[1] - w[0]);
    let in_flight = |r: &CallRecord| {
        ok.iter()
            .filter(|o| o.started_at <= r.started_at && o.ended_at() > r.started_at)
            .count() as f64
    };
    let prompts = ok.iter().filter_map(|r| r.prompt_tokens).map(|p| p as f64);
    // The calls behind the TTFT tail: the slowest twentieth.
    let ttft_p95 = side.ttft_s.1;
    let slow: Vec<&&CallRecord> = ok
        .iter()
        .filter(|r| r.ttft_s.is_some_and(|t| t >= ttft_p95))
        .collect();
    let snapshots = side.timeline.iter().filter_map(|s| s.snapshot.as_ref());
    let (running, waiting): (Vec<f64>, Vec<f64>) = snapshots
        .map(|s| (s.running.unwrap_or(0.0), s.waiting.unwrap_or(0.0)))
        .unzip();
    let busy = running.iter().filter(|r| **r > 0.0).count().max(1) as f64;
    eprintln!(
        "  {label}: {} calls; prompt P50/P95 {} tokens; gap between starts P50/P95 {} s; \
         calls in flight at a start P50/P95 {}; engine running P50/P95 {} (busy seconds {busy}), \
         waiting P50/P95 {}; slowest 5 % ({} calls): prompt P50/P95 {} tokens, in flight P50/P95 {}",
        ok.len(),
        p50_95(prompts),
        p50_95(gaps),
        p50_95(ok.iter().map(|r| in_flight(r))),
        p50_95(running.iter().copied().filter(|r| *r > 0.0)),
        p50_95(waiting),
        slow.len(),
        p50_95(slow.iter().filter_map(|r| r.prompt_tokens).map(|p| p as f64)),
        p50_95(slow.iter().map(|r| in_flight(r))),
    );
}

fn rel(a: f64, b: f64) -> f64 {
    (a - b) / b
}

fn print(label: &str, class: &Side, replay: &Side) {
    eprintln!(
        "{label}: server output {:.1} / {:.1} tok/s ({:+.1} %), TTFT P50 {:.2} / {:.2} s ({:+.1} %), \
         P95 {:.2} / {:.2} s ({:+.1} %), hit rate {:.1} / {:.1} % ({:+.1} points), calls {} / {}",
        class.output_tok_s,
        replay.output_tok_s,
        100.0 * rel(class.output_tok_s, replay.output_tok_s),
        class.ttft_s.0,
        replay.ttft_s.0,
        100.0 * rel(class.ttft_s.0, replay.ttft_s.0),
        class.ttft_s.1,
        replay.ttft_s.1,
        100.0 * rel(class.ttft_s.1, replay.ttft_s.1),
        100.0 * class.hit,
        100.0 * replay.hit,
        100.0 * (class.hit - replay.hit),
        class.calls,
        replay.calls,
    );
}

/// A class learned from four sessions of the real OpenCode's store against
/// a replay of four others (held out) as 2 users: server output within
/// 10 %, the hit rate within 3 points. (The TTFT bars, 15 %, are not met
/// yet: docs/validation.md.)
#[tokio::test(start_paused = true)]
async fn a_class_learned_from_opencode_sessions_keeps_the_held_out_load_and_hit_rate() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/sessions/opencode-sessions");
    let class = learned(&trace_of(&dir.join("learn")), 600.0);
    let (replay, steady) = replayed(&trace_of(&dir.join("replay")), 2, 600.0).await;
    let sim = simulated(&class, 2, steady, 1).await;
    print("OpenCode sessions held out, 2 users", &sim, &replay);
    assert!(
        rel(sim.output_tok_s, replay.output_tok_s).abs() <= 0.10,
        "server output {sim:?} against {replay:?}"
    );
    assert!(
        (sim.hit - replay.hit).abs() <= 0.03,
        "hit rate {sim:?} against {replay:?}"
    );
}

/// The held-out check: a class learned from `CODENDUM_CLASS_LEARN`'s
/// conversations against a replay of `CODENDUM_CLASS_REPLAY`'s, as
/// `CODENDUM_CLASS_USERS` users (4), seeds 1 to 4; prints both sides.
#[tokio::test(start_paused = true)]
#[ignore = "reads conversations named by CODENDUM_CLASS_LEARN and CODENDUM_CLASS_REPLAY; minutes"]
async fn a_class_learned_from_one_half_against_a_replay_of_the_other() {
    let (Ok(learn_dir), Ok(replay_dir)) = (
        std::env::var("CODENDUM_CLASS_LEARN"),
        std::env::var("CODENDUM_CLASS_REPLAY"),
    ) else {
        eprintln!("set CODENDUM_CLASS_LEARN and CODENDUM_CLASS_REPLAY");
        return;
    };
    let users: usize = std::env::var("CODENDUM_CLASS_USERS")
        .ok()
        .and_then(|u| u.parse().ok())
        .unwrap_or(4);
    let class = learned(&trace_of(Path::new(&learn_dir)), 600.0);
    for (label, dir) in [("in sample", &learn_dir), ("held out", &replay_dir)] {
        let (replay, steady) = replayed(&trace_of(Path::new(dir)), users, 600.0).await;
        eprintln!(
            "{label}: replay of {dir}, steady {:.0}–{:.0} s",
            steady.0, steady.1
        );
        detail("replay", &replay);
        for seed in 1..=4 {
            let sim = simulated(&class, users, steady, seed).await;
            print(&format!("{label}, seed {seed}"), &sim, &replay);
            detail(&format!("class, seed {seed}"), &sim);
        }
    }
}
