//! One cell of a plan: a class of N students against the twin of one
//! server variant, in virtual time on its own current-thread runtime.

use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::config::{CellSpec, PlanConfig};
use crate::classroom::{ClassroomConfig, ClassroomSummary, ServerFigures};
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::profile::Profile;
use codendum_core::prom::{window_stats, TimelineSample};
use codendum_core::results::classroom_summary::{server_output_interval, ClassWindow};
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

pub use crate::virtual_time::SAMPLE_INTERVAL;

/// Students simulated by every cell this process ran, summed (a cell of N
/// students counts N): the work a plan did, for its benchmark.
pub static STUDENTS_SIMULATED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The figures of one cell. Times in simulated seconds; KV usage, shares
/// and the hit rate are FRACTIONS 0..1.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellResult {
    /// What was simulated.
    pub spec: CellSpec,
    /// Server output in steady state, tokens per second: the increase of the
    /// generation-token counter over [ramp-up end, duration] divided by that
    /// span (over [0, duration] when the window is not longer than the
    /// ramp-up).
    pub server_output_tok_per_s: Option<f64>,
    /// TTFT of successful calls, median, seconds.
    pub ttft_p50_s: Option<f64>,
    /// TTFT of successful calls, 95th percentile, seconds.
    pub ttft_p95_s: Option<f64>,
    /// Output speed per user, median, tokens per second.
    pub output_speed_p50_tok_s: Option<f64>,
    /// Time to complete a coding request (sent → agent's final answer),
    /// median over completed ones, seconds.
    pub coding_request_p50_s: Option<f64>,
    /// The same, 95th percentile, seconds.
    pub coding_request_p95_s: Option<f64>,
    /// Coding requests sent.
    pub coding_requests: u64,
    /// Coding requests completed.
    pub completed: u64,
    /// Peak running requests.
    pub peak_running: Option<f64>,
    /// Peak waiting requests.
    pub peak_waiting: Option<f64>,
    /// Peak KV-cache usage, fraction 0..1.
    pub peak_kv_usage: Option<f64>,
    /// Preemptions during the run.
    pub preemptions: Option<u64>,
    /// Prefix-cache hit rate over the run, fraction 0..1.
    pub prefix_hit_rate: Option<f64>,
    /// Model calls whose final outcome, after retries, was HTTP 503 or
    /// another 5xx ([`codendum_core::results::metrics::server_errors`], what the
    /// `server_errors` target counts), a count.
    pub server_errors: u64,
    /// Share of the steady-state samples with running at `max_num_seqs`
    /// and requests waiting (the seats are full), fraction 0..1.
    pub pinned_share: Option<f64>,
    /// Share of the steady-state samples with requests waiting while seats
    /// were free (the KV cache could not admit them), fraction 0..1.
    pub blocked_share: Option<f64>,
    /// The classroom's full summary (server figures filled in).
    pub summary: ClassroomSummary,
}

pub(super) use crate::virtual_time::NoRecords as NoSink;

/// Runs one cell on a fresh current-thread tokio runtime whose time is
/// paused, so every wait (engine steps, builds, pauses) passes at once.
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
        .enable_all()
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
    opts.responder = Arc::new(AgentPersona::with_spread(
        seed,
        Arc::new(config.class.agent.clone()),
    ));
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

/// Where a run sits on the clock: its origin, ramp-up and window, seconds.
#[derive(Debug, Clone, Copy)]
pub struct Window {
    /// Clock seconds at the run's start.
    pub origin: f64,
    /// Ramp-up, seconds.
    pub ramp_up: f64,
    /// Window for new coding requests, seconds.
    pub duration: f64,
}

impl Window {
    /// The steady-state window in clock seconds: [ramp-up end, duration],
    /// or [0, duration] when that is empty.
    pub fn steady(&self) -> (f64, f64) {
        let start = if self.duration > self.ramp_up {
            self.ramp_up
        } else {
            0.0
        };
        (self.origin + start, self.origin + self.duration)
    }
}

/// The cell's figures from the classroom's summary and the engine timeline
/// (plain function).
pub fn figures(
    spec: &CellSpec,
    mut summary: ClassroomSummary,
    timeline: &[TimelineSample],
    window: Window,
) -> CellResult {
    let whole = window_stats(timeline, f64::NEG_INFINITY, f64::INFINITY);
    let (t0, t1) = window.steady();
    let steady = window_stats(timeline, t0, t1);
    let tok_per_s = steady
        .generation_tokens
        .filter(|_| t1 > t0)
        .map(|g| g / (t1 - t0));
    let seats = f64::from(spec.max_num_seqs);
    let in_steady: Vec<(f64, f64)> = timeline
        .iter()
        .filter(|s| s.t >= t0 && s.t <= t1)
        .filter_map(|s| {
            let snap = s.snapshot.as_ref()?;
            Some((snap.running?, snap.waiting?))
        })
        .collect();
    let share = |f: &dyn Fn(&(f64, f64)) -> bool| {
        (!in_steady.is_empty())
            .then(|| in_steady.iter().filter(|x| f(x)).count() as f64 / in_steady.len() as f64)
    };
    let pinned_share = share(&|(r, w)| *r >= seats && *w > 0.0);
    let blocked_share = share(&|(r, w)| *r < seats && *w > 0.0);
    let server_errors = codendum_core::results::metrics::server_errors(&summary);
    let class_window = ClassWindow {
        start_s: t0 - window.origin,
        end_s: t1 - window.origin,
    };
    let output_interval =
        tok_per_s.and_then(|_| server_output_interval(timeline, &[], window.origin, class_window));
    summary.set_steady_window(class_window, output_interval);
    let preemptions = whole.preemptions.map(|p| p.round() as u64);
    summary.server = ServerFigures {
        peak_running: whole.peak_running,
        peak_waiting: whole.peak_waiting,
        peak_kv_cache_usage: whole.peak_kv_usage,
        preemptions,
        prefix_cache_hit_rate: whole.prefix_hit_rate,
        output_tokens_per_s: tok_per_s,
        time_split: whole.time_split,
        server_restarted: false,
    };
    CellResult {
        spec: spec.clone(),
        server_output_tok_per_s: tok_per_s,
        ttft_p50_s: summary.ttft_p50_s,
        ttft_p95_s: summary.ttft_p95_s,
        output_speed_p50_tok_s: summary.output_speed_p50_tok_s,
        coding_request_p50_s: summary.task_time_p50_s,
        coding_request_p95_s: summary.task_time_p95_s,
        coding_requests: summary.coding_requests,
        completed: summary.completed,
        peak_running: whole.peak_running,
        peak_waiting: whole.peak_waiting,
        peak_kv_usage: whole.peak_kv_usage,
        preemptions,
        prefix_hit_rate: whole.prefix_hit_rate,
        server_errors,
        pinned_share,
        blocked_share,
        summary,
    }
}
