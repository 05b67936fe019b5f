//! What a report shows, independent of the results-folder format: the
//! adapter from `summary.json` and friends fills these structs, and the
//! writers render them.
//!
//! Units are in the field names: `_s` seconds, `_tok_per_s` tokens per
//! second, fractions (0..1) where a field says `fraction`. `None` means the
//! figure is not available (no successful request, `/metrics` unreachable);
//! writers print it as an en dash.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use codendum_core::kinds::Provenance;

/// Where and when a run happened, and with what.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunInfo {
    /// Profile, image digest, model revision, DGX OS and driver versions.
    pub provenance: Provenance,
    /// Server software and version as reported, e.g. `vLLM 0.30.0`.
    pub server_version: Option<String>,
    /// Served model id.
    pub model: Option<String>,
    /// The OpenAI base URL measured, or `embedded twin`.
    pub target_url: Option<String>,
    /// When the run started (UTC).
    pub started_utc: Option<DateTime<Utc>>,
    /// When the run finished (UTC).
    pub finished_utc: Option<DateTime<Utc>>,
    /// The codendum version that measured.
    pub codendum_version: String,
    /// The run was interrupted; the results are partial.
    pub interrupted: bool,
}

/// One parameter the run used, already formatted, e.g. `concurrency` =
/// `1, 8, 16`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Parameter {
    /// Parameter name.
    pub name: String,
    /// Its value as text.
    pub value: String,
}

/// Errors of one kind within a level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorCount {
    /// Stable kind, e.g. `http_503`, `timeout`.
    pub kind: String,
    /// How many requests failed this way.
    pub count: u64,
    /// One message of this kind, for the reader.
    pub sample_message: Option<String>,
}

/// One benchmark level: a prompt shape at one concurrency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelRow {
    /// Prompt shape, e.g. `short` or `long`.
    pub shape: String,
    /// Requests kept in flight.
    pub concurrency: u32,
    /// Requests sent.
    pub requests: u64,
    /// Requests that completed.
    pub successes: u64,
    /// Failed requests grouped by kind.
    pub errors: Vec<ErrorCount>,
    /// Mean prompt tokens per successful request, as counted by the server.
    pub mean_input_tokens: Option<f64>,
    /// Mean generated tokens per successful request, as counted by the server.
    pub mean_output_tokens: Option<f64>,
    /// Level wall time, seconds.
    pub wall_time_s: f64,
    /// Completed requests per second.
    pub requests_per_s: f64,
    /// Output tokens per second over the level.
    pub output_tok_per_s: f64,
    /// Input plus output tokens per second over the level.
    pub total_tok_per_s: f64,
    /// Time to first token, median, seconds.
    pub ttft_p50_s: Option<f64>,
    /// Time to first token, 95th percentile, seconds.
    pub ttft_p95_s: Option<f64>,
    /// Time to first token, 99th percentile, seconds.
    pub ttft_p99_s: Option<f64>,
    /// End-to-end latency, median, seconds.
    pub e2e_p50_s: Option<f64>,
    /// End-to-end latency, 95th percentile, seconds.
    pub e2e_p95_s: Option<f64>,
    /// Mean time per output token, seconds.
    pub mean_tpot_s: Option<f64>,
    /// Preemptions during the level, from `/metrics`.
    pub preemptions: Option<u64>,
    /// Peak KV-cache usage, fraction (0..1).
    pub peak_kv_usage: Option<f64>,
    /// Peak running requests.
    pub peak_running: Option<u64>,
    /// Peak waiting requests.
    pub peak_waiting: Option<u64>,
    /// Prefix-cache hit rate during the level, fraction (0..1).
    pub prefix_hit_rate: Option<f64>,
    /// The server's timings over the level next to the client's.
    #[serde(default)]
    pub time_split: Option<codendum_core::results::TimeSplit>,
    /// Whether some output counts of the level are the client's count of
    /// stream chunks (the server sent no usage).
    #[serde(default)]
    pub tokens_client_counted: bool,
}

impl LevelRow {
    /// Failed requests of all kinds.
    pub fn error_total(&self) -> u64 {
        self.errors.iter().map(|e| e.count).sum()
    }
}

/// One sample of the server timeline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct TimelinePoint {
    /// Seconds since the start of the run.
    pub t_s: f64,
    /// Running requests; `None` when the sample failed.
    pub running: Option<f64>,
    /// Waiting requests; `None` when the sample failed.
    pub waiting: Option<f64>,
    /// KV-cache usage, fraction (0..1); `None` when the sample failed.
    pub kv_usage: Option<f64>,
}

/// One replica's samples of a fleet's server timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplicaLine {
    /// The replica (`host:port`, or its Prometheus instance).
    pub replica: String,
    /// Its samples on the run's axis.
    pub points: Vec<TimelinePoint>,
}

/// A window's per-replica figures (a bench level, or the whole class).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetWindow {
    /// What the window is: `short c8`, `class`.
    pub label: String,
    /// The replicas' figures and the imbalance.
    pub fleet: codendum_core::results::FleetFigures,
}

/// Where a level starts on the server timeline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelBoundary {
    /// Seconds since the start of the run.
    pub t_s: f64,
    /// Short label, e.g. `short ×8`.
    pub label: String,
}

/// A target check: what was measured against what was required.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// What is checked, e.g. `TTFT P95 at 16 concurrent (short)`.
    pub name: String,
    /// The measured figure with its unit, e.g. `1.84 s`.
    pub figure: String,
    /// The target with its unit, e.g. `≤ 2.00 s`.
    pub target: String,
    /// The figure meets the target.
    pub passed: bool,
}

/// Everything a benchmark report shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// Provenance and dates.
    pub run: RunInfo,
    /// Parameters the run used.
    pub parameters: Vec<Parameter>,
    /// One row per shape × concurrency, in run order.
    pub levels: Vec<LevelRow>,
    /// The server timeline (1 s samples).
    pub timeline: Vec<TimelinePoint>,
    /// Where each level starts on the timeline.
    pub boundaries: Vec<LevelBoundary>,
    /// Target checks; empty when none were evaluated.
    pub verdicts: Vec<Verdict>,
    /// What was asked for and not run, one sentence each (a shape that
    /// cannot fit in the server's context).
    #[serde(default)]
    pub not_run: Vec<String>,
    /// Each replica's timeline, for a fleet (empty for one server).
    #[serde(default)]
    pub replica_timelines: Vec<ReplicaLine>,
    /// Each level's per-replica figures, for a fleet.
    #[serde(default)]
    pub fleets: Vec<FleetWindow>,
}

impl BenchReport {
    /// The shapes in order of first appearance.
    pub fn shapes(&self) -> Vec<String> {
        let mut shapes: Vec<String> = Vec::new();
        for l in &self.levels {
            if !shapes.contains(&l.shape) {
                shapes.push(l.shape.clone());
            }
        }
        shapes
    }
}

/// The headline figures of a classroom run (seed.md's classroom table).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassroomFigures {
    /// Simulated students.
    pub users: u32,
    /// Model requests sent (all agent steps).
    pub requests: u64,
    /// Requests that failed after retries.
    pub request_errors: u64,
    /// Retries after HTTP 429 or 503.
    pub retries: u64,
    /// Server output tokens per second in the steady state.
    pub server_output_tok_per_s: Option<f64>,
    /// Time to first token, median, seconds.
    pub ttft_p50_s: Option<f64>,
    /// Time to first token, 95th percentile, seconds.
    pub ttft_p95_s: Option<f64>,
    /// Output speed per user, median, tokens per second.
    pub user_output_tok_per_s_p50: Option<f64>,
    /// Time to complete a coding request, median, seconds.
    pub coding_request_p50_s: Option<f64>,
    /// Time to complete a coding request, 95th percentile, seconds.
    pub coding_request_p95_s: Option<f64>,
    /// Coding requests completed.
    pub coding_requests_completed: u64,
    /// Peak waiting requests on the server.
    pub peak_waiting: Option<u64>,
    /// Peak KV-cache usage, fraction (0..1).
    pub peak_kv_usage: Option<f64>,
    /// Preemptions during the run, from `/metrics`.
    pub preemptions: Option<u64>,
    /// Requests the server answered with a 5xx error.
    pub server_errors: u64,
    /// Prefix-cache hit rate, fraction (0..1).
    pub prefix_hit_rate: Option<f64>,
    /// Request time (a model call to its last token), P50 and P95, seconds.
    #[serde(default)]
    pub request_time_p50_s: Option<f64>,
    /// See `request_time_p50_s`.
    #[serde(default)]
    pub request_time_p95_s: Option<f64>,
    /// Model time per coding request (its calls' durations), P50, seconds.
    #[serde(default)]
    pub model_time_p50_s: Option<f64>,
    /// See `model_time_p50_s`, P95.
    #[serde(default)]
    pub model_time_p95_s: Option<f64>,
    /// Coding requests completed per hour of the window.
    #[serde(default)]
    pub coding_requests_per_hour: Option<f64>,
    /// Prompt size of a model call, tokens: P50, P95 and the largest.
    #[serde(default)]
    pub prompt_tokens_p50: Option<f64>,
    /// See `prompt_tokens_p50`, P95.
    #[serde(default)]
    pub prompt_tokens_p95: Option<f64>,
    /// See `prompt_tokens_p50`, the largest.
    #[serde(default)]
    pub prompt_tokens_max: Option<u64>,
    /// Context compactions.
    #[serde(default)]
    pub compactions: u64,
    /// Tool calls that came back as errors.
    #[serde(default)]
    pub tool_errors: u64,
    /// The server's timings over the class next to the client's.
    #[serde(default)]
    pub time_split: Option<codendum_core::results::TimeSplit>,
    /// Successful model calls whose output was counted by the client in
    /// stream chunks (the server sent no usage).
    #[serde(default)]
    pub calls_client_counted: u64,
}

/// Everything a classroom report shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassroomReport {
    /// Provenance and dates.
    pub run: RunInfo,
    /// Parameters the run used (users, scenario, duration…).
    pub parameters: Vec<Parameter>,
    /// Headline figures.
    pub figures: ClassroomFigures,
    /// Time to first token of every successful request, seconds.
    pub ttft_s: Vec<f64>,
    /// Output speed of every user, tokens per second.
    pub user_output_tok_per_s: Vec<f64>,
    /// Time to complete each coding request, seconds.
    pub coding_request_s: Vec<f64>,
    /// Server queue timeline.
    pub timeline: Vec<TimelinePoint>,
    /// Target checks; empty when none were evaluated.
    pub verdicts: Vec<Verdict>,
    /// Each replica's timeline, for a fleet (empty for one server).
    #[serde(default)]
    pub replica_timelines: Vec<ReplicaLine>,
    /// The class's per-replica figures, for a fleet.
    #[serde(default)]
    pub fleets: Vec<FleetWindow>,
}
