//! The figures of one cell: what a simulated class measured, read from
//! the classroom's summary and the engine's timeline over the steady
//! window (plain functions, nothing runs here).

use serde::{Deserialize, Serialize};

use super::config::CellSpec;
use codendum_core::prom::{window_stats, TimelineSample};
use codendum_core::results::classroom_summary::{server_output_interval, ClassWindow};
use codendum_core::results::classroom_summary::{ClassroomSummary, ServerFigures};

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
