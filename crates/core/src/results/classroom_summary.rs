//! The figures of a classroom run, computed from its records (plain
//! functions, no I/O), plus the server figures the run fills in from the
//! `/metrics` sampler.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::classroom_records::{CallKind, CallRecord, TaskOutcome, TaskRecord};
use crate::openai::ErrorKind;
use crate::prom::replicas::fleet_window;
use crate::prom::{ReplicaSample, TimelineSample};
use crate::stats::dependence::percentile_interval_in_order;
use crate::stats::{batch_means, percentile, poisson_rate, sorted_finite, Interval};

/// Server-side figures from the `/metrics` sampler over the run; `None`
/// where `/metrics` was not reachable. The run fills these in after the
/// class, from its sampler.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerFigures {
    /// Peak of running requests (`vllm:num_requests_running`).
    pub peak_running: Option<f64>,
    /// Peak of waiting requests (`vllm:num_requests_waiting`).
    pub peak_waiting: Option<f64>,
    /// Peak KV-cache usage, fraction 0–1.
    pub peak_kv_cache_usage: Option<f64>,
    /// Preemptions during the run (counter increase).
    pub preemptions: Option<u64>,
    /// Prefix-cache hit rate over the run, fraction 0–1.
    pub prefix_cache_hit_rate: Option<f64>,
    /// Server generation throughput over the run, output tokens per second.
    pub output_tokens_per_s: Option<f64>,
    /// Where the time went over the run: the server's timings (vLLM's
    /// histograms) and the client's means over the same calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_split: Option<crate::server_figures::TimeSplit>,
    /// The server restarted during the class: these figures span it
    /// (counter increases summed per process, peaks over both;
    /// [`super::continuity`]). Absent when it did not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub server_restarted: bool,
}

/// The summary of a classroom run. Times in seconds; `None` where there was
/// nothing to measure.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassroomSummary {
    /// Simulated students.
    pub users: usize,
    /// Run start → the last coding request's end, seconds.
    pub wall_s: f64,
    /// Model calls (after retries), all kinds.
    pub requests: u64,
    /// Model calls by kind (`title`, `agent`, `subagent`, `compaction`).
    pub requests_by_kind: BTreeMap<CallKind, u64>,
    /// Calls that failed for good.
    pub errors: u64,
    /// Failed calls by the kind of their last error (`http_429`, ...).
    pub errors_by_kind: BTreeMap<ErrorKind, u64>,
    /// Retries made, all kinds.
    pub retries: u64,
    /// Retries made after an HTTP 429 or 503.
    pub retries_after_429_503: u64,
    /// TTFT of successful calls, median, seconds.
    pub ttft_p50_s: Option<f64>,
    /// TTFT of successful calls, 95th percentile, seconds.
    pub ttft_p95_s: Option<f64>,
    /// Duration of successful calls (last attempt), median, seconds.
    pub request_time_p50_s: Option<f64>,
    /// Duration of successful calls, 95th percentile, seconds.
    pub request_time_p95_s: Option<f64>,
    /// Output speed per user: the median over successful calls (≥ 2 output
    /// tokens) of output tokens / (duration − TTFT), tokens per second. One
    /// call streams to one student, so this is the speed a student sees
    /// while the answer is being generated.
    pub output_speed_p50_tok_s: Option<f64>,
    /// The slow tail of the same: 5th percentile, tokens per second.
    pub output_speed_p5_tok_s: Option<f64>,
    /// Model time per completed coding request, median, seconds.
    pub model_time_p50_s: Option<f64>,
    /// Model time per completed coding request, 95th percentile, seconds.
    pub model_time_p95_s: Option<f64>,
    /// Completed coding request: start → end, median, seconds.
    pub task_time_p50_s: Option<f64>,
    /// Completed coding request: start → end, 95th percentile, seconds.
    pub task_time_p95_s: Option<f64>,
    /// Coding requests sent.
    pub coding_requests: u64,
    /// Coding requests completed.
    pub completed: u64,
    /// Coding requests failed.
    pub failed: u64,
    /// Coding requests cut off.
    pub cut_off: u64,
    /// Completed coding requests per hour of `wall_s`.
    pub completed_per_hour: Option<f64>,
    /// Prompt tokens of successful calls (server's count), median.
    pub prompt_tokens_p50: Option<f64>,
    /// Prompt tokens, 95th percentile.
    pub prompt_tokens_p95: Option<f64>,
    /// Largest prompt, tokens.
    pub prompt_tokens_max: Option<u64>,
    /// Sum of prompt tokens of successful calls.
    pub prompt_tokens_total: u64,
    /// Sum of output tokens of successful calls.
    pub output_tokens_total: u64,
    /// Compactions performed.
    pub compactions: u64,
    /// Tool calls executed.
    pub tool_calls: u64,
    /// Tool calls that returned an error to the model.
    pub tool_errors: u64,
    /// Server figures from `/metrics` (filled by the caller).
    pub server: ServerFigures,
    /// Each replica's figures over the run and the fleet's imbalance, when
    /// the server is a fleet (filled by the caller); absent for one server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_fleet: Option<crate::server_figures::FleetFigures>,
    /// The stretch the steady-state figures (server output) are over,
    /// seconds since the run started (filled with the server figures);
    /// absent in folders written before schema version 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady_window: Option<ClassWindow>,
    /// The 95 % interval of each figure that has one, by the figure's key
    /// ([`crate::results::metrics::CLASS_METRICS`]: `ttft_p95_s`,
    /// `coding_request_p50_s`, `server_output_tok_per_s`), in the figure's
    /// unit. Empty in folders written before schema version 2.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub intervals: BTreeMap<String, Interval>,
}

/// The steady-state window of a class: from the end of the ramp-up to the
/// end of the window for new coding requests, seconds since the run started.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ClassWindow {
    /// Start, seconds since the run started (the ramp-up's end).
    pub start_s: f64,
    /// End, seconds since the run started (the window's end, clipped to
    /// the run).
    pub end_s: f64,
}

/// The shortest steady window, seconds: a shorter one (a class that
/// ended early, or a ramp-up nearly as long as its window) is replaced by
/// the whole run.
pub const MIN_CLASS_WINDOW_S: f64 = 60.0;

/// The steady window of a class with `ramp_up_s` of ramp-up, a window of
/// `duration_s` for new requests and `span_s` of run: `[ramp-up,
/// duration]` clipped to the run, or the whole run `[0, span]` when that
/// is shorter than [`MIN_CLASS_WINDOW_S`].
pub fn class_window(ramp_up_s: f64, duration_s: f64, span_s: f64) -> ClassWindow {
    let end_s = duration_s.min(span_s);
    let start_s = ramp_up_s.min(end_s);
    if end_s - start_s < MIN_CLASS_WINDOW_S {
        ClassWindow {
            start_s: 0.0,
            end_s: span_s,
        }
    } else {
        ClassWindow { start_s, end_s }
    }
}

/// The interval of the server output over a class's steady window:
/// batch means over ten equal sub-windows (generation tokens counted per
/// sub-window, the replicas' own counters summed for a fleet). `origin`
/// is the run's start on the timeline's clock. `None` with fewer than two
/// sub-windows measured.
pub fn server_output_interval(
    timeline: &[TimelineSample],
    replicas: &[ReplicaSample],
    origin: f64,
    window: ClassWindow,
) -> Option<Interval> {
    const BATCHES: usize = 10;
    let length = window.end_s - window.start_s;
    if length <= 0.0 {
        return None;
    }
    let width = length / BATCHES as f64;
    let rates: Vec<f64> = (0..BATCHES)
        .filter_map(|i| {
            let a = origin + window.start_s + i as f64 * width;
            fleet_window(timeline, replicas, a, a + width)
                .generation_tokens
                .map(|g| g / width)
        })
        .collect();
    if rates.len() < BATCHES {
        return None;
    }
    batch_means(&rates).map(|(_, i)| Interval {
        lo: i.lo.map(|v| v.max(0.0)),
        hi: i.hi,
    })
}

impl ClassroomSummary {
    /// Computes the summary of a run's records.
    pub fn from_records(users: usize, requests: &[CallRecord], tasks: &[TaskRecord]) -> Self {
        let ok: Vec<&CallRecord> = requests.iter().filter(|r| r.is_ok()).collect();
        let mut by_kind = BTreeMap::new();
        let mut errors_by_kind = BTreeMap::new();
        let mut retries = 0u64;
        let mut retries_429_503 = 0u64;
        for r in requests {
            *by_kind.entry(r.kind).or_insert(0) += 1;
            if let Some(k) = r.error_kind {
                *errors_by_kind.entry(k).or_insert(0) += 1;
            }
            retries += u64::from(r.retries);
            retries_429_503 += r
                .retried_kinds
                .iter()
                .filter(|k| matches!(k, ErrorKind::Http429 | ErrorKind::Http503))
                .count() as u64;
        }
        // Calls in start order and coding requests in start order: the
        // percentiles' intervals read the series' dependence in time.
        let mut ok = ok;
        ok.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
        let ttft_order: Vec<f64> = ok.iter().filter_map(|r| r.ttft_s).collect();
        let dur_order: Vec<f64> = ok.iter().map(|r| r.e2e_s).collect();
        let speed_order: Vec<f64> = ok.iter().filter_map(|r| r.output_speed()).collect();
        let prompt_order: Vec<f64> = ok
            .iter()
            .filter_map(|r| r.prompt_tokens)
            .map(|p| p as f64)
            .collect();
        let ttft = sorted_finite(ttft_order.iter().copied());
        let dur = sorted_finite(dur_order.iter().copied());
        let speed = sorted_finite(speed_order.iter().copied());
        let prompts = sorted_finite(prompt_order.iter().copied());
        let mut done: Vec<&TaskRecord> = tasks
            .iter()
            .filter(|t| t.outcome == TaskOutcome::Completed)
            .collect();
        done.sort_by(|a, b| a.start.total_cmp(&b.start));
        let model_order: Vec<f64> = done.iter().map(|t| t.model_time_s).collect();
        let task_order: Vec<f64> = done.iter().map(|t| t.end - t.start).collect();
        let model_time = sorted_finite(model_order.iter().copied());
        let task_time = sorted_finite(task_order.iter().copied());
        let count = |o: TaskOutcome| tasks.iter().filter(|t| t.outcome == o).count() as u64;
        let wall_s = tasks.iter().map(|t| t.end).fold(0.0f64, f64::max);
        let completed = done.len() as u64;
        let mut intervals = BTreeMap::new();
        for (key, values, p) in [
            ("ttft_p50_s", &ttft_order, 50.0),
            ("ttft_p95_s", &ttft_order, 95.0),
            ("request_time_p50_s", &dur_order, 50.0),
            ("request_time_p95_s", &dur_order, 95.0),
            ("output_speed_p50_tok_per_s", &speed_order, 50.0),
            ("coding_request_p50_s", &task_order, 50.0),
            ("coding_request_p95_s", &task_order, 95.0),
            ("model_time_p50_s", &model_order, 50.0),
            ("model_time_p95_s", &model_order, 95.0),
            ("prompt_tokens_p50", &prompt_order, 50.0),
            ("prompt_tokens_p95", &prompt_order, 95.0),
        ] {
            if let Some(i) = percentile_interval_in_order(values, p) {
                intervals.insert(key.to_string(), i);
            }
        }
        if let Some(i) = poisson_rate(completed, wall_s / 3600.0) {
            intervals.insert("completed_per_hour".to_string(), i);
        }
        ClassroomSummary {
            users,
            wall_s,
            requests: requests.len() as u64,
            requests_by_kind: by_kind,
            errors: (requests.len() - ok.len()) as u64,
            errors_by_kind,
            retries,
            retries_after_429_503: retries_429_503,
            ttft_p50_s: percentile(&ttft, 50.0),
            ttft_p95_s: percentile(&ttft, 95.0),
            request_time_p50_s: percentile(&dur, 50.0),
            request_time_p95_s: percentile(&dur, 95.0),
            output_speed_p50_tok_s: percentile(&speed, 50.0),
            output_speed_p5_tok_s: percentile(&speed, 5.0),
            model_time_p50_s: percentile(&model_time, 50.0),
            model_time_p95_s: percentile(&model_time, 95.0),
            task_time_p50_s: percentile(&task_time, 50.0),
            task_time_p95_s: percentile(&task_time, 95.0),
            coding_requests: tasks.len() as u64,
            completed,
            failed: count(TaskOutcome::Failed),
            cut_off: count(TaskOutcome::CutOff),
            completed_per_hour: (wall_s > 0.0).then(|| completed as f64 * 3600.0 / wall_s),
            prompt_tokens_p50: percentile(&prompts, 50.0),
            prompt_tokens_p95: percentile(&prompts, 95.0),
            prompt_tokens_max: ok.iter().filter_map(|r| r.prompt_tokens).max(),
            prompt_tokens_total: ok.iter().filter_map(|r| r.prompt_tokens).sum(),
            output_tokens_total: ok.iter().map(|r| r.output_tokens).sum(),
            compactions: tasks.iter().map(|t| t.compactions as u64).sum(),
            tool_calls: tasks.iter().map(|t| t.tool_calls as u64).sum(),
            tool_errors: tasks.iter().map(|t| t.tool_errors as u64).sum(),
            server: ServerFigures::default(),
            server_fleet: None,
            steady_window: None,
            intervals,
        }
    }

    /// Records the class's steady window and its server output's interval
    /// (with the server figures, which are over that window).
    pub fn set_steady_window(&mut self, window: ClassWindow, output: Option<Interval>) {
        self.steady_window = Some(window);
        match output {
            Some(i) => {
                self.intervals
                    .insert("server_output_tok_per_s".to_string(), i);
            }
            None => {
                self.intervals.remove("server_output_tok_per_s");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_matches_numpy_linear() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(percentile(&v, 50.0), Some(2.5));
        assert!((percentile(&v, 95.0).unwrap() - 3.85).abs() < 1e-12);
        assert_eq!(percentile(&[7.0], 95.0), Some(7.0));
        assert_eq!(percentile(&[], 50.0), None);
    }
}
