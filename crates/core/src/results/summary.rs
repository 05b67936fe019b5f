//! `summary.json` of a bench run: schema version, every parameter,
//! provenance, prompt sizing, and the levels. Written once at the end of a
//! run (also an interrupted one) and read back by `report` / `compare`.

use std::collections::BTreeMap;
use std::io::{Read, Write};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::records::LevelSummary;
use super::ResultsError;
use crate::access::Provenance;
use crate::openai::Endpoint;

use super::schema::{BENCH_KIND, BENCH_SCHEMA_VERSIONS};

/// How prompts were sized to their target token counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SizingMethod {
    /// The server's `/tokenize` counted the prompt text.
    Tokenize,
    /// Characters per token calibrated from a probe request's
    /// `usage.prompt_tokens`.
    Probe,
    /// A fixed characters-per-token guess (neither of the above worked).
    Estimate,
}

/// The sizing of one shape's prompts.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ShapeSizing {
    /// Shape name.
    pub shape: String,
    /// Target input tokens.
    pub target_input_tokens: u64,
    /// Characters of the prompt body (without the unique tag).
    pub body_chars: u64,
    /// Characters per token the sizing settled on.
    pub chars_per_token: f64,
    /// Tokens the server counted for the final body, when it was measured
    /// (`tokenize` method only).
    pub measured_tokens: Option<u64>,
}

/// How prompts were sized, for every shape of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptSizing {
    /// The method used (the same for all shapes).
    pub method: SizingMethod,
    /// One entry per shape, in run order.
    pub shapes: Vec<ShapeSizing>,
}

/// Every parameter of a bench run (the CLI flags after validation).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchParameters {
    /// Concurrency levels, in run order.
    pub concurrency: Vec<u32>,
    /// Shape names, in run order.
    pub shapes: Vec<String>,
    /// Output tokens per request (max_tokens = min_tokens, ignore_eos).
    pub output_tokens: u32,
    /// `--requests-per-level` as given; `None`: the default rule.
    pub requests_per_level: Option<u64>,
    /// Requests started per level, by concurrency (after the default rule).
    pub requests_by_concurrency: BTreeMap<u32, u64>,
    /// Cap on each level's time, simulated seconds.
    pub level_duration_s: Option<f64>,
    /// Chat or completions.
    pub endpoint: Endpoint,
    /// Seed of the prompt filler text.
    pub seed: u64,
    /// `--allow-busy`.
    pub allow_busy: bool,
    /// `--yes`.
    pub yes: bool,
    /// Per-request time limit, seconds.
    pub timeout_s: f64,
    /// Grace for in-flight requests after an interruption, simulated seconds.
    pub cancel_grace_s: f64,
    /// Simulated seconds per real second of the run's clock.
    pub clock_scale: f64,
    /// Whether the run was the calibration workload (`--calibration`).
    #[serde(default)]
    pub calibration: bool,
}

/// The server the run measured. Never holds an API key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerDescription {
    /// Base URL without credentials, or `embedded twin`.
    pub url: String,
    /// The model id requested.
    pub model: String,
    /// The server's version, when it told.
    pub server_version: Option<String>,
    /// Whether `/metrics` was read during the run.
    pub metrics: bool,
    /// The model's context limit (`max_model_len` of `/v1/models`), tokens,
    /// when the server states one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_model_len: Option<u64>,
    /// The engine's scheduling settings, when the server states them (the
    /// embedded twin does; vLLM's API does not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<EngineSettings>,
}

/// Scheduling settings of a vLLM engine (its `--max-num-seqs`,
/// `--max-num-batched-tokens`, `--enable-prefix-caching`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineSettings {
    /// Most requests running at once.
    pub max_num_seqs: u32,
    /// Token budget of one step, tokens.
    pub max_num_batched_tokens: u32,
    /// Whether the prefix cache is on.
    pub enable_prefix_caching: bool,
}

/// The fields every `summary.json` starts with, bench or classroom.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunHeader {
    /// The schema version of the file (each kind has its own).
    pub schema_version: u32,
    /// What wrote it: `bench` or `classroom`.
    pub kind: String,
    /// Unique id of the run.
    pub run_id: String,
    /// When the run started (UTC).
    pub started_utc: DateTime<Utc>,
    /// When the summary was written (UTC).
    pub finished_utc: DateTime<Utc>,
    /// Whether the run was stopped before its end.
    pub interrupted: bool,
}

/// The whole `summary.json` of a bench run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchSummary {
    /// Kind [`BENCH_KIND`], schema [`BENCH_SCHEMA_VERSION`](super::schema::BENCH_SCHEMA_VERSION), run id (also
    /// inside every prompt tag), times, and whether it was interrupted (the
    /// levels are then partial).
    #[serde(flatten)]
    pub header: RunHeader,
    /// Every parameter.
    pub parameters: BenchParameters,
    /// The server measured.
    pub server: ServerDescription,
    /// Profile, image digest, model revision, DGX OS and driver versions.
    pub provenance: Provenance,
    /// How prompts were sized.
    pub prompt_sizing: PromptSizing,
    /// One entry per level × shape, in run order.
    pub levels: Vec<LevelSummary>,
    /// Requested shapes that were not run because prompt plus output cannot
    /// fit in the server's context (absent when none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_shapes: Vec<SkippedShape>,
    /// The stated profile checked against the server before the run
    /// (`--profile` against a live server); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile_check: Option<super::profile_check::ProfileCheck>,
    /// How the run ended ([`super::verdict`]); absent in folders written
    /// before verdicts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<super::Verdict>,
    /// `--find-rate`: one search per shape.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rate_search: Vec<RateSearch>,
    /// Each `/metrics` URL whose reads were not one steady server: a
    /// restart, or several servers behind it ([`super::continuity`]).
    /// Absent when every URL was one server throughout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics_continuity: Vec<super::continuity::MetricsContinuity>,
    /// What the router in front of the replicas counted over the run
    /// (`--router-metrics-url`); absent without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub router: Option<crate::server_figures::router_figures::RouterFigures>,
}

/// One measured step of a `--find-rate` search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateStep {
    /// The level's rate, requests per second.
    pub rate_per_s: f64,
    /// Its SLO share (a fraction).
    pub slo_share: Option<f64>,
    /// Whether its share met the SLO (what the bisection steers on).
    pub meets: bool,
    /// Met, missed or indeterminate: the share's 95 % interval against the
    /// SLO's share ([`super::slo::Slo::judge`]); absent in folders written
    /// before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<crate::bound::Outcome>,
    /// The share's 95 % interval (a fraction).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_share_interval: Option<crate::stats::Interval>,
}

/// A `--find-rate` search: the highest rate whose level met the SLO.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RateSearch {
    /// What the levels had to meet.
    pub slo: super::slo::Slo,
    /// The prompt shape searched.
    pub shape: String,
    /// The levels measured, in order.
    pub steps: Vec<RateStep>,
    /// The answer, requests per second; `None`: not even one request at a
    /// time's rate met it.
    pub highest_rate_per_s: Option<f64>,
    /// Rate levels measured.
    pub levels: u32,
    /// How long the search took, seconds of the run's clock.
    pub wall_s: f64,
    /// The final bracket (met, missed), requests per second.
    pub bracket: (f64, f64),
}

impl RateSearch {
    /// `short: highest rate meeting ttft ≤ 2 s (95 % of requests): 0.82/s
    /// (6 levels, 412 s)`, and when the answer's SLO share is too close to
    /// call, `; indeterminate there: 96.1 % of requests (93.0–98.0 %), met
    /// for sure up to 0.75/s`.
    pub fn line(&self) -> String {
        let rate = |r: f64| format!("{}/s", super::records::trim_rate(r));
        let answer = match self.highest_rate_per_s {
            Some(r) => rate(r),
            None => format!(
                "none (one request at a time's {} missed it)",
                rate(self.bracket.0)
            ),
        };
        let at_answer = self
            .highest_rate_per_s
            .and_then(|r| self.steps.iter().find(|s| s.rate_per_s == r));
        let undecided = match at_answer {
            Some(step) if step.outcome == Some(crate::bound::Outcome::Indeterminate) => {
                let pct = |v: f64| format!("{:.1}", v * 100.0);
                let share = step.slo_share.map_or("–".into(), pct);
                let interval = step.slo_share_interval.map_or(String::new(), |i| {
                    format!(
                        " ({}–{} %)",
                        i.lo.map_or("…".into(), pct),
                        i.hi.map_or("…".into(), pct)
                    )
                });
                let sure = self
                    .highest_met_rate_per_s()
                    .map_or("no rate measured met it for sure".to_string(), |r| {
                        format!("met for sure up to {}", rate(r))
                    });
                format!("; indeterminate there: {share} % of requests{interval}, {sure}")
            }
            _ => String::new(),
        };
        format!(
            "{}: highest rate meeting {}: {answer} ({} levels, {:.0} s){undecided}",
            self.shape,
            self.slo.describe(),
            self.levels,
            self.wall_s
        )
    }

    /// The highest rate measured whose level met the SLO with its whole
    /// interval ([`crate::bound::Outcome::Met`]); `None` when none did.
    pub fn highest_met_rate_per_s(&self) -> Option<f64> {
        self.steps
            .iter()
            .filter(|s| s.outcome == Some(crate::bound::Outcome::Met))
            .map(|s| s.rate_per_s)
            .reduce(f64::max)
    }
}

/// A requested shape the benchmark did not run, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedShape {
    /// The shape's name (`long`).
    pub shape: String,
    /// Its prompt size, tokens.
    pub input_tokens: u64,
    /// Output tokens asked per request.
    pub output_tokens: u32,
    /// The server's context limit (`max_model_len` of `/v1/models`), tokens.
    pub max_model_len: u64,
}

impl SkippedShape {
    /// One line for people: what does not fit where.
    pub fn reason(&self) -> String {
        format!(
            "shape {} not run: {} prompt + {} output tokens exceed the server's max_model_len of {}",
            self.shape, self.input_tokens, self.output_tokens, self.max_model_len
        )
    }
}

/// Writes `summary.json` (pretty-printed, trailing newline).
pub fn write_summary_json<W: Write>(
    mut out: W,
    summary: &BenchSummary,
) -> Result<(), ResultsError> {
    serde_json::to_writer_pretty(&mut out, summary).map_err(ResultsError::json_write)?;
    out.write_all(b"\n").map_err(ResultsError::write)?;
    out.flush().map_err(ResultsError::write)
}

/// Reads a bench `summary.json`, rejecting other kinds and schema versions
/// newer than this build understands.
pub fn read_summary_json<R: Read>(input: R) -> Result<BenchSummary, ResultsError> {
    read_versioned_summary(input, BENCH_KIND, &BENCH_SCHEMA_VERSIONS)
}

/// Reads a `summary.json` of the given `kind`, rejecting other kinds and any
/// `schema_version` not in `versions`.
pub(crate) fn read_versioned_summary<T: serde::de::DeserializeOwned, R: Read>(
    input: R,
    kind: &'static str,
    versions: &[u32],
) -> Result<T, ResultsError> {
    let value: serde_json::Value =
        serde_json::from_reader(input).map_err(|e| ResultsError::BadJson {
            file: "summary.json",
            line: e.line(),
            reason: e.to_string(),
        })?;
    super::schema::check_schema(&value, kind, versions)?;
    serde_json::from_value(value).map_err(|e| ResultsError::BadJson {
        file: "summary.json",
        line: 0,
        reason: e.to_string(),
    })
}
