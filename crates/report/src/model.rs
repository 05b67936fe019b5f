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

use codendum_core::access::Provenance;
use codendum_core::observed::server::ServerSide;
use codendum_core::results::{
    ClassroomSummary, LevelSummary, MetricsContinuity, Verdict as RunVerdict,
};

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
    pub fleet: codendum_core::server_figures::FleetFigures,
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
    /// The measured figure with its unit and interval, e.g. `1.84 s
    /// (1.70–2.01)`.
    pub figure: String,
    /// The target with its unit, e.g. `≤ 2.00 s`.
    pub target: String,
    /// The figure meets the target.
    pub passed: bool,
    /// Met, missed or indeterminate (the figure's interval straddles the
    /// target); absent where only `passed` was judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<codendum_core::bound::Outcome>,
}

/// Everything a benchmark report shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    /// Provenance and dates.
    pub run: RunInfo,
    /// Parameters the run used.
    pub parameters: Vec<Parameter>,
    /// One row per shape × concurrency, in run order.
    pub levels: Vec<LevelSummary>,
    /// How the run ended (its verdict); `None` for folders written before
    /// verdicts.
    #[serde(default)]
    pub run_verdict: Option<RunVerdict>,
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
    /// `/metrics` URLs that were not one steady server (a restart, several
    /// servers behind one URL).
    #[serde(default)]
    pub metrics_continuity: Vec<MetricsContinuity>,
    /// What the router in front of the replicas counted (`--router-metrics-url`).
    #[serde(default)]
    pub router: Option<codendum_core::server_figures::router_figures::RouterFigures>,
    /// Shapes searched with `--find-rate`: their rate levels are the
    /// search's steps, not a sweep's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub searched_shapes: Vec<String>,
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

/// Everything a classroom report shows.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassroomReport {
    /// Whether the run is a `codendum replay` (its parameters then say what
    /// was replayed).
    #[serde(default)]
    pub replay: bool,
    /// Provenance and dates.
    pub run: RunInfo,
    /// Parameters the run used (users, scenario, duration…).
    pub parameters: Vec<Parameter>,
    /// Headline figures.
    pub summary: ClassroomSummary,
    /// How the class ended (its verdict); `None` for folders written
    /// before verdicts.
    #[serde(default)]
    pub run_verdict: Option<RunVerdict>,
    /// Successful model calls whose output tokens the client counted
    /// (no usage in the stream).
    #[serde(default)]
    pub calls_client_counted: u64,
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
    /// `/metrics` URLs that were not one steady server.
    #[serde(default)]
    pub metrics_continuity: Vec<MetricsContinuity>,
    /// What the router in front of the replicas counted (`--router-metrics-url`).
    #[serde(default)]
    pub router: Option<codendum_core::server_figures::router_figures::RouterFigures>,
    /// A real class (a capture, imported sessions): each student's figures,
    /// what the recording lost, the server's side; `None` for a simulated
    /// class or a replay.
    #[serde(default)]
    pub observed: Option<ObservedClass>,
}

/// One student's figures in a real class.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StudentRow {
    /// Who (`student 3`: the third API key the capture saw; or a session).
    pub student: String,
    /// Coding requests started.
    pub coding_requests: u64,
    /// Coding requests completed.
    pub completed: u64,
    /// Completed coding requests: start → answer, median, seconds.
    pub coding_request_p50_s: Option<f64>,
    /// The longest completed coding request, seconds.
    pub coding_request_max_s: Option<f64>,
    /// Model calls (retries folded in).
    pub calls: u64,
    /// Calls that failed for good.
    pub errors: u64,
    /// Retries the client made.
    pub retries: u64,
    /// Time to first token, median, seconds.
    pub ttft_p50_s: Option<f64>,
    /// Time to first token, 95th percentile, seconds.
    pub ttft_p95_s: Option<f64>,
    /// Output speed while generating, median over the calls, tokens/s.
    pub output_speed_p50_tok_s: Option<f64>,
    /// Calls the student abandoned before their answer ended.
    pub abandoned: u64,
}

/// What a report of a real class says besides the class's figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObservedClass {
    /// How the class was recorded, in a few words.
    pub recorded_by: String,
    /// Every student's own figures, in order of their first call.
    pub students: Vec<StudentRow>,
    /// Calls the students abandoned before their answer ended (not counted
    /// among the calls or errors).
    pub abandoned: u64,
    /// How long students had waited on the calls they abandoned, median,
    /// seconds.
    pub abandoned_wait_p50_s: Option<f64>,
    /// What the recording lost or cannot see, one sentence each.
    pub notes: Vec<String>,
    /// Calls that failed for good, by the kind of their last error
    /// (`http_503`, `connect`, …).
    #[serde(default)]
    pub errors_by_kind: std::collections::BTreeMap<String, u64>,
    /// Failed attempts the clients retried, by error kind.
    #[serde(default)]
    pub retried_by_kind: std::collections::BTreeMap<String, u64>,
    /// The server's side over the class, from a host timeline.
    pub server: Option<ServerSide>,
    /// Why the host timeline gave no server figures, when one was given
    /// and did not.
    pub server_missing: Option<String>,
}
