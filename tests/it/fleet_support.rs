//! Shared by the fleet tests: a class run in virtual time (paused tokio
//! runtime) against the single in-process twin or an in-process fleet.

#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use codendum::classroom::{
    run_classroom, ClassroomConfig, ClassroomOutcome, LiveStatus, MemorySink,
};
use codendum_core::clock::Clock;
use codendum_core::openai::Transport;
use codendum_core::profile::fleet::{FleetSpec, RouterPolicy};
use codendum_core::profile::Profile;
use codendum_core::prom::{window_stats, TimelineSample, WindowStats};
use codendum_twin::fleet::{FleetSampler, FleetTransport};
use codendum_twin::inproc::{InProcTransport, StatsSampler};
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

/// Seconds between engine samples (simulated).
pub const SAMPLE: Duration = Duration::from_secs(1);

/// The twin's options: classroom-64k, the agent persona, `seed`.
pub fn options(clock: Clock, seed: u64) -> TwinOptions {
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = clock;
    opts.responder = Arc::new(AgentPersona::new(seed));
    opts.seed = seed;
    opts
}

/// A class of `users` students for `duration_s` simulated seconds.
pub fn class(users: usize, duration_s: u64, seed: u64) -> ClassroomConfig {
    let mut c = ClassroomConfig::new("qwen3-coder", Some(65_536));
    c.users = users;
    c.duration = Duration::from_secs(duration_s);
    c.ramp_up = Duration::from_secs(duration_s / 10);
    c.seed = seed;
    c
}

/// What one class run gave.
pub struct ClassRun {
    /// The classroom's outcome (summary, every call and coding request).
    pub outcome: ClassroomOutcome,
    /// The fleet's (or single twin's) engine timeline.
    pub timeline: Vec<TimelineSample>,
    /// Each replica's timeline (empty for the single twin).
    pub replicas: Vec<Vec<TimelineSample>>,
    /// Requests routed to each replica (empty for the single twin).
    pub served: Vec<u64>,
}

impl ClassRun {
    /// Window figures over the whole fleet timeline.
    pub fn whole(&self) -> WindowStats {
        window_stats(&self.timeline, f64::NEG_INFINITY, f64::INFINITY)
    }

    /// Window figures of replica `i`.
    pub fn replica(&self, i: usize) -> WindowStats {
        window_stats(&self.replicas[i], f64::NEG_INFINITY, f64::INFINITY)
    }
}

fn paused() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("runtime")
}

async fn drive(
    config: &ClassroomConfig,
    transport: Arc<dyn Transport>,
    clock: Clock,
) -> ClassroomOutcome {
    let status = Arc::new(LiveStatus::new(clock.clone()));
    run_classroom(
        config,
        transport,
        clock,
        Arc::new(MemorySink::default()),
        status,
    )
    .await
    .expect("class runs")
}

/// The class against the single in-process twin.
pub fn single(config: &ClassroomConfig, seed: u64) -> ClassRun {
    paused().block_on(async {
        let clock = Clock::scaled(1.0);
        let t = Arc::new(InProcTransport::start(options(clock.clone(), seed)));
        let sampler = StatsSampler::spawn(t.clone(), SAMPLE);
        let outcome = drive(config, t.clone(), clock).await;
        let timeline = sampler.finish();
        t.stop();
        ClassRun {
            outcome,
            timeline,
            replicas: Vec::new(),
            served: Vec::new(),
        }
    })
}

/// The class against an in-process fleet of `replicas` under `router`.
pub fn fleet(config: &ClassroomConfig, seed: u64, replicas: u32, router: RouterPolicy) -> ClassRun {
    paused().block_on(async {
        let clock = Clock::scaled(1.0);
        let spec = FleetSpec { replicas, router };
        let f = Arc::new(FleetTransport::start(options(clock.clone(), seed), spec));
        let sampler = FleetSampler::spawn(f.clone(), SAMPLE);
        let outcome = drive(config, f.clone(), clock).await;
        let tl = sampler.finish();
        f.stop();
        ClassRun {
            outcome,
            timeline: tl.fleet,
            replicas: tl.replicas,
            served: f.served(),
        }
    })
}
