//! One cell of a plan: a class of N students against the twin of one
//! server variant, in virtual time on its own current-thread runtime.

use std::sync::Arc;

use super::config::{CellSpec, PlanConfig};
use super::figures::{figures, CellResult, Window};
use crate::classroom::ClassroomConfig;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::profile::Profile;
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

/// Students simulated by every cell this process ran, summed (a cell of N
/// students counts N): the work a plan did, for its benchmark.
pub static STUDENTS_SIMULATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Runs one cell on a fresh current-thread tokio runtime whose time is
/// paused, so every wait (engine steps, builds, pauses) passes at once.
/// The runtime has timers but no I/O driver: a cell does no I/O (the twin
/// is in process), and without one the runtime moves on from one instant of
/// virtual time to the next without a system call (with one it polls epoll
/// at each).
/// `profile` is the cell's profile as loaded; its `max_num_seqs` is replaced
/// by the cell's. A profile whose `[fleet]` has more than one replica runs
/// as a fleet ([`super::fleet_cell`]); one replica is the single twin.
pub fn run_cell(
    spec: &CellSpec,
    profile: &Profile,
    config: &PlanConfig,
) -> Result<CellResult, Error> {
    STUDENTS_SIMULATED.fetch_add(u64::from(spec.users), std::sync::atomic::Ordering::Relaxed);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .map_err(|e| Error::io("cannot start a simulation runtime", e))?;
    runtime.block_on(simulate(spec, profile, config))
}

async fn simulate(
    spec: &CellSpec,
    profile: &Profile,
    config: &PlanConfig,
) -> Result<CellResult, Error> {
    let clock = Clock::scaled(1.0);
    let mut profile = profile.clone();
    profile.server.max_num_seqs = spec.max_num_seqs;
    let mut classroom = ClassroomConfig::new(
        profile.server.served_model_name.clone(),
        Some(u64::from(profile.server.max_model_len)),
    );
    classroom.users = spec.users as usize;
    classroom.scenario = config.scenario;
    classroom.class = Arc::clone(&config.class);
    classroom.duration = config.duration;
    classroom.ramp_up = config.ramp_up();
    let seed = spec.seed.unwrap_or(config.seed);
    classroom.seed = seed;
    let mut opts = TwinOptions::new(profile);
    opts.clock = clock.clone();
    opts.responder = Arc::new(AgentPersona::with_spread(seed, classroom.agent_spread()));
    opts.seed = seed;
    if opts.profile.fleet.replicas > 1 {
        return super::fleet_cell::simulate_fleet(spec, config, &classroom, opts).await;
    }
    let class = crate::virtual_time::class_against(&classroom, opts, clock).await?;
    let window = Window {
        origin: class.origin,
        ramp_up: config.ramp_up().as_secs_f64(),
        duration: config.duration.as_secs_f64(),
    };
    Ok(figures(spec, class.summary, &class.timeline, window))
}
