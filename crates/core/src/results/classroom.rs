//! The classroom results folder (`bench-results/classroom-<UTC timestamp>/`):
//! `summary.json` (this module), `requests.jsonl` (a line per model call),
//! `tasks.jsonl` (a line per coding request) and `server-timeline.jsonl`.

use std::io::{Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use super::classroom_summary::ClassroomSummary;
use super::summary::{RunHeader, ServerDescription};
use super::ResultsError;
use crate::access::Provenance;

use super::schema::{CLASSROOM_KIND, CLASSROOM_SCHEMA_VERSIONS, REPLAY_KIND};
/// File name of the per-coding-request lines.
pub const TASKS_JSONL: &str = "tasks.jsonl";

/// The parameters a classroom ran with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassroomParameters {
    /// Simulated students.
    pub users: u32,
    /// `java` or `python`.
    pub scenario: String,
    /// Window for new coding requests, seconds.
    pub duration_s: f64,
    /// Students start within this many seconds.
    pub ramp_up_s: f64,
    /// Shortest pause between a student's requests (of the class's
    /// distribution), seconds.
    pub pause_min_s: f64,
    /// Longest pause, seconds.
    pub pause_max_s: f64,
    /// Follow-up requests per student after the exercise (the most the
    /// class draws).
    pub follow_ups: u32,
    /// The class the students and their agent drew from (its name; the
    /// default is `lab`). Absent in folders written before class files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub class: Option<String>,
    /// Client context limit, tokens (`None`: never compacts).
    pub context_limit: Option<u64>,
    /// Client output limit (`max_tokens` of a step), tokens.
    pub output_limit: u64,
    /// Seed of every random choice.
    pub seed: u64,
    /// The captured prompt file, if one was given (its name only).
    pub prompt_file: Option<String>,
    /// The measured client times (`--client-times`), if given (the file or
    /// folder name only); absent: the built-in model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_times: Option<String>,
    /// API keys given (never the keys).
    pub api_keys: usize,
    /// Simulated seconds per real second (1 for a live server).
    pub clock_scale: f64,
}

/// `summary.json` of a classroom run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClassroomRunSummary {
    /// Kind [`CLASSROOM_KIND`], schema [`CLASSROOM_SCHEMA_VERSION`](super::schema::CLASSROOM_SCHEMA_VERSION), run id,
    /// times, and whether it was stopped before the end.
    #[serde(flatten)]
    pub header: RunHeader,
    /// What it ran with.
    pub parameters: ClassroomParameters,
    /// The server (URL without credentials, model, version).
    pub server: ServerDescription,
    /// Profile, image digest, model revision, DGX OS, driver.
    pub provenance: Provenance,
    /// Where the server figures came from: `sampler` (live `/metrics`),
    /// `prometheus` (`--prometheus-url`, read after the class),
    /// `timeline-file` (a host recording folded in), or `none`.
    pub server_figures_source: String,
    /// A note when students share keys (fewer keys than students).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key_note: Option<String>,
    /// The figures.
    pub summary: ClassroomSummary,
    /// The stated profile checked against the server before the class
    /// (`--profile` against a live server); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_check: Option<super::profile_check::ProfileCheck>,
    /// How the class ended ([`super::verdict`]); absent in folders written
    /// before verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<super::Verdict>,
    /// Each `/metrics` URL whose reads were not one steady server
    /// ([`super::continuity`]); absent when every URL was.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics_continuity: Vec<super::continuity::MetricsContinuity>,
    /// What the router in front of the replicas counted over the class
    /// (`--router-metrics-url`); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<crate::server_figures::router_figures::RouterFigures>,
    /// What a replay (kind [`REPLAY_KIND`]) sent again; absent for a class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<ReplayParameters>,
}

/// What `codendum replay` replayed and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayParameters {
    /// The capture folder, results folder or trace file replayed (its name
    /// only).
    pub source: String,
    /// Its format ([`crate::trace::SourceFormat::as_str`]).
    pub source_kind: String,
    /// The licence or attribution note found beside the source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub licence: Option<String>,
    /// Tokens per block of the trace's `hash_ids`.
    pub block_size: u32,
    /// The timeline's compression (2: twice as fast as recorded).
    pub speed: f64,
    /// Root sessions replayed (after `--sessions`).
    pub sessions: usize,
    /// Calls replayed.
    pub calls: usize,
    /// Sessions kept running at once (`--users`); absent: every session
    /// at its recorded offset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<usize>,
    /// `after-answer` or `original` (`--timing`).
    #[serde(default = "default_timing")]
    pub timing: String,
    /// The cap on a person's wait, seconds (`--max-think`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_think_s: Option<f64>,
    /// The cap on any wait, seconds (`--max-wait`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_wait_s: Option<f64>,
    /// Calls not sent because their session started part-way
    /// (`--start-part-way`).
    #[serde(default)]
    pub before_part_way: usize,
    /// The server's context the calls were held against, tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u64>,
    /// Calls beyond it skipped.
    #[serde(default)]
    pub too_long_skipped: usize,
    /// Calls beyond it shortened from the front.
    #[serde(default)]
    pub too_long_shortened: usize,
    /// The prefix-cache hit rate the recorded sharing of the calls sent
    /// gives a cache that keeps everything
    /// ([`crate::trace::theory`]), fraction 0–1: beside the server's
    /// measured one, the gap is eviction (and the chat template).
    #[serde(alias = "shared_block_fraction")]
    pub theoretical_hit_rate: Option<f64>,
    /// Chat-template tokens the server adds to a one-message prompt,
    /// subtracted from each prompt's recorded length.
    pub template_tokens: u64,
    /// Calls whose prompt the server counted (its usage).
    #[serde(default)]
    pub sizes_counted: usize,
    /// Of which the server counted within 1 % of the recorded size.
    #[serde(default)]
    pub sizes_within_1_pct: usize,
    /// The largest difference between a prompt's recorded size and the
    /// server's count, percent of the recorded size.
    #[serde(default)]
    pub size_error_max_pct: f64,
    /// What of the source could not be read (file, line, why).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
}

fn default_timing() -> String {
    "after-answer".into()
}

/// Writes a classroom `summary.json`.
pub fn write_classroom_summary<W: Write>(
    mut out: W,
    s: &ClassroomRunSummary,
) -> Result<(), ResultsError> {
    serde_json::to_writer_pretty(&mut out, s).map_err(ResultsError::JsonWrite)?;
    out.write_all(b"\n").map_err(ResultsError::Write)?;
    out.flush().map_err(ResultsError::Write)
}

/// Reads a classroom `summary.json`; another kind or schema version is an
/// error.
pub fn read_classroom_summary<R: Read>(input: R) -> Result<ClassroomRunSummary, ResultsError> {
    super::summary::read_versioned_summary(input, CLASSROOM_KIND, &CLASSROOM_SCHEMA_VERSIONS)
}

/// Reads a replay's `summary.json` (a classroom summary of kind
/// [`REPLAY_KIND`], at the classroom's schema version).
pub fn read_replay_summary<R: Read>(input: R) -> Result<ClassroomRunSummary, ResultsError> {
    super::summary::read_versioned_summary(input, REPLAY_KIND, &CLASSROOM_SCHEMA_VERSIONS)
}

/// Reads `summary.json` of a classroom folder.
pub fn read_classroom_folder_summary(folder: &Path) -> Result<ClassroomRunSummary, ResultsError> {
    let f = std::fs::File::open(folder.join(super::SUMMARY_JSON)).map_err(|source| {
        ResultsError::Read {
            file: super::SUMMARY_JSON,
            source,
        }
    })?;
    read_classroom_summary(std::io::BufReader::new(f))
}

/// The `kind` of a `summary.json` value (`bench`, `classroom`, ...).
pub fn summary_kind(value: &serde_json::Value) -> Option<&str> {
    value.get("kind").and_then(serde_json::Value::as_str)
}
