//! A whole class replayed in virtual time: 40 students against the
//! in-process twin on a paused clock, their run read back as a trace
//! (`replay::source::from_class_records`, what `codendum replay` does with
//! a classroom folder) and replayed against a fresh twin of the same
//! profile, also on a paused clock. No millisecond of this machine enters
//! either run, so what differs is what the replay rebuilds (prompts from
//! blocks, the recorded output lengths, the dependencies and client
//! times), not the machine's load: the timing figures (TTFT P50/P95 in the
//! engine's clock, peak KV-cache usage) are checked within 10 % here, on
//! every run of `cargo test`, beside server output and the hit rate. The
//! same through `codendum capture` and real sockets is `replay_class` (its
//! counts) and `tests/perf` (its timing, on a scaled real clock).

use std::sync::Arc;
use std::time::Duration;

use crate::replay_support::{
    assert_every_call_replayed, assert_replay_kept, assert_steady_output_kept, class_config,
    replay_with, Figures, SteadyWindows,
};
use codendum::classroom::{run_classroom, LiveStatus, MemorySink};
use codendum::replay::source::{from_class_records, inferred_window};
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_core::results::classroom_records::CallRecord;
use codendum_twin::inproc::{InProcTransport, StatsSampler};
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

/// The in-process twin every run uses: classroom-64k, the agent persona,
/// every TTFT logged.
fn twin(clock: &Clock) -> Arc<InProcTransport> {
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = clock.clone();
    opts.responder = Arc::new(AgentPersona::new(3));
    opts.seed = 3;
    opts.ttft_log = true;
    Arc::new(InProcTransport::start(opts))
}

/// The figures of a run on `twin` sampled by `sampler` since `t0`, the
/// first `probes` first tokens the replay's template probes.
fn figures(
    twin: &InProcTransport,
    sampler: StatsSampler,
    t0: f64,
    calls: &[CallRecord],
    probes: usize,
) -> Figures {
    let timeline = sampler.finish();
    let t1 = timeline.last().map_or(t0, |s| s.t) + 1.0;
    let log = twin.engine_stats().ttft_log.samples();
    Figures::of(&timeline, (t0, t1), calls, log, probes)
}

/// The class of `users` students ([`class_config`]) and its replay, both
/// in virtual time, with the steady windows: the class's own, and the one
/// a replay infers from the calls when the source does not state it (as
/// for a capture).
async fn class_and_replay(users: usize) -> (Figures, Figures, SteadyWindows) {
    let clock = Clock::scaled(1.0);
    let original = twin(&clock);
    let sampler = StatsSampler::spawn(Arc::clone(&original), Duration::from_secs(1));
    let config = class_config(users);
    let t0 = clock.now_secs();
    let class = run_classroom(
        &config,
        original.clone(),
        clock.clone(),
        Arc::new(MemorySink::default()),
        Arc::new(LiveStatus::new(clock.clone())),
    )
    .await
    .expect("class runs");
    assert_eq!(class.summary.errors, 0);
    let class_figures = figures(&original, sampler, t0, &class.requests, 0);
    original.stop();

    let trace = from_class_records(&class.requests, 16);
    assert_eq!(trace.calls.len(), class.requests.len());
    let fresh = twin(&clock);
    let sampler = StatsSampler::spawn(Arc::clone(&fresh), Duration::from_secs(1));
    let t0 = clock.now_secs();
    let replayed = replay_with(fresh.clone(), &clock, &trace, 1.0, 1).await;
    assert_every_call_replayed(&trace, &replayed);
    // The two template probes ran, one after the other, before any call.
    let replay_figures = figures(&fresh, sampler, t0, &replayed.requests, 2);
    fresh.stop();
    let windows = SteadyWindows {
        class: (config.ramp_up.as_secs_f64(), config.duration.as_secs_f64()),
        replay: inferred_window(&trace),
    };
    (class_figures, replay_figures, windows)
}

/// The lab's class: 40 students, the seats full and a queue (TTFT P50
/// about 35 s on classroom-64k).
#[tokio::test(start_paused = true)]
async fn a_whole_class_replayed_in_virtual_time_keeps_its_timing() {
    let (class, replayed, windows) = class_and_replay(40).await;
    assert_replay_kept("40 students, virtual time", &class, &replayed);
    assert_steady_output_kept(&class, &replayed, windows);
}

/// A light class (6 students, TTFT P50 about 0.2 s), where P95 is a few
/// calls that happened to meet another's prefill.
#[tokio::test(start_paused = true)]
async fn a_light_class_replayed_in_virtual_time_keeps_its_timing() {
    let (class, replayed, windows) = class_and_replay(6).await;
    assert_replay_kept("6 students, virtual time", &class, &replayed);
    assert_steady_output_kept(&class, &replayed, windows);
}
