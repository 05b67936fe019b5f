//! A plan's verdicts: a profile's classroom targets (`[targets.classroom]`) as a plan reads,
//! judges and lists them, and where a variant's limit comes from. Reading
//! and judging are [`codendum_core::targets::classroom`]'s, the definitions the
//! capacity suite uses, so a plan and `cargo test --test capacity` give one
//! verdict per target on the same class.

use serde::{Deserialize, Serialize};

use super::figures::CellResult;
use codendum_core::bound::{Bound, Outcome};
use codendum_core::error::ConfigError;
use codendum_core::stats::Interval;
use codendum_core::targets::{parse_classroom_targets, ClassroomCheck, ClassroomTargets};

/// A cell with its target checks.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgedCell {
    /// The cell's figures.
    pub result: CellResult,
    /// One check per target of its profile.
    pub checks: Vec<Check>,
    /// Whether every check passed (true when the profile has no targets).
    pub meets_targets: bool,
}

/// Judges a cell against its profile's targets.
pub fn judge(targets: &ClassroomTargets, result: CellResult) -> JudgedCell {
    let checks = judge_cell(targets, &result);
    let meets_targets = checks.iter().all(|c| c.met);
    JudgedCell {
        result,
        checks,
        meets_targets,
    }
}

/// Reads `[targets.classroom]` of a profile's `[targets]` table (as kept by
/// [`codendum_core::profile::Profile::targets`]). No such table: no targets.
/// An unknown key, or a value that is not a number of the key's kind, is an
/// error of `--profile` naming the profile and the key.
pub fn classroom_targets(
    profile: &str,
    targets: &toml::Table,
) -> Result<ClassroomTargets, ConfigError> {
    let Some(table) = targets.get("classroom") else {
        return Ok(ClassroomTargets::default());
    };
    parse_classroom_targets("targets.classroom", table).map_err(|e| match e {
        ConfigError::Invalid { name, reason } => {
            ConfigError::invalid("--profile", format!("{profile}: [{name}] {reason}"))
        }
        other => other,
    })
}

/// Judges a cell: one check per target, on the cell's classroom summary
/// ([`CellResult::summary`], the figures the capacity suite judges).
pub fn judge_cell(targets: &ClassroomTargets, cell: &CellResult) -> Vec<Check> {
    targets
        .judge(&cell.summary)
        .into_iter()
        .map(Check::from)
        .collect()
}

/// One target judged on one cell. A figure that could not be measured does
/// not meet its target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The target key.
    pub key: String,
    /// Ceiling or floor.
    pub bound: Bound,
    /// The target value, in the key's unit.
    pub target: f64,
    /// The cell's figure, in the key's unit.
    pub measured: Option<f64>,
    /// The figure's 95 % interval, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<Interval>,
    /// Whether its value meets the target (what the search steers on).
    pub met: bool,
    /// Met, missed or indeterminate (the interval straddles the target),
    /// by the one judging rule ([`Bound::judge`]).
    pub outcome: Outcome,
}

impl From<ClassroomCheck> for Check {
    fn from(c: ClassroomCheck) -> Self {
        Check {
            key: c.key.name().to_string(),
            bound: c.key.bound(),
            target: c.limit,
            measured: c.measured,
            interval: c.interval,
            met: c.passed,
            outcome: c.outcome,
        }
    }
}

/// Where a class size's limit comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bottleneck {
    /// KV memory: preemptions, KV usage at 90 % or more, or requests kept
    /// waiting with seats free (the cache could not admit them).
    KvMemory,
    /// Seats: running pinned at `max_num_seqs` with requests waiting and the
    /// KV cache low, and more seats met the targets at this class size or
    /// were not tried.
    Seats,
    /// Decode throughput: running pinned at `max_num_seqs` with requests
    /// waiting and the KV cache low, and more seats were tried at this
    /// class size and missed too.
    DecodeThroughput,
    /// Requests rarely queued: the answers themselves are too slow for the
    /// targets.
    RequestSpeed,
    /// Prefill: the TTFT target failed while requests rarely queued, so the
    /// time to first token is the prompts' own reading time.
    Prefill,
    /// Server errors: the only targets missed count HTTP 5xx answers.
    ServerErrors,
    /// Refused calls: the server answered half or more of the model calls
    /// with HTTP 400, 401 or another 4xx (for vLLM mostly prompts longer
    /// than `max_model_len`), so the class never ran
    /// ([`codendum_core::results::metrics::mostly_refused`]).
    Refused,
}

impl Bottleneck {
    /// The limit in a few words: `decode throughput`, `seats`,
    /// `KV memory`, `request speed`, `prefill`, `server errors`,
    /// `refused calls`.
    pub fn short(self) -> &'static str {
        match self {
            Bottleneck::KvMemory => "KV memory",
            Bottleneck::Seats => "seats",
            Bottleneck::DecodeThroughput => "decode throughput",
            Bottleneck::RequestSpeed => "request speed",
            Bottleneck::Prefill => "prefill",
            Bottleneck::ServerErrors => "server errors",
            Bottleneck::Refused => "refused calls",
        }
    }

    /// A short explanation for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Bottleneck::KvMemory => "KV memory (preemptions, KV cache nearly full, or requests waiting with seats free)",
            Bottleneck::Seats => "seats (running pinned at max_num_seqs with requests waiting, KV low)",
            Bottleneck::DecodeThroughput => "decode throughput (running pinned at max_num_seqs with requests waiting, KV low; more seats did not meet the targets either)",
            Bottleneck::RequestSpeed => "request speed (requests rarely waited; the answers alone are too slow)",
            Bottleneck::Prefill => "prefill (TTFT misses its target while requests rarely wait: reading the prompts takes that long)",
            Bottleneck::ServerErrors => "server errors (the server answered 5xx)",
            Bottleneck::Refused => "refused calls (the server answered most calls with HTTP 4xx: for vLLM mostly prompts longer than max_model_len; the class never ran)",
        }
    }
}

/// Peak KV usage (fraction) from which memory counts as the limit.
pub const KV_HIGH: f64 = 0.9;
/// Share of steady-state samples from which a queue counts as persistent.
pub const PERSISTENT: f64 = 0.25;
