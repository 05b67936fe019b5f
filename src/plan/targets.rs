//! A profile's classroom targets (`[targets.classroom]`), judging a cell
//! against them, and where a variant's limit comes from.

use serde::{Deserialize, Serialize};

use super::cell::CellResult;
use crate::error::ConfigError;

/// The keys of `[targets.classroom]` this module judges, and their sense.
pub const TARGET_KEYS: &[(&str, Bound)] = &[
    ("ttft_p95_s", Bound::Max),
    ("coding_request_p50_s", Bound::Max),
    ("server_output_tok_per_s", Bound::Min),
    ("preemptions", Bound::Max),
    ("server_errors", Bound::Max),
];

/// Whether a target is a ceiling or a floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Bound {
    /// The figure must be at most the target.
    Max,
    /// The figure must be at least the target.
    Min,
}

/// One target: a key of [`TARGET_KEYS`], its bound and value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Target {
    /// The key (`ttft_p95_s`, ...).
    pub key: String,
    /// Ceiling or floor.
    pub bound: Bound,
    /// The limit, in the key's unit (seconds, tokens per second, a count).
    pub value: f64,
}

/// The classroom targets of a profile; keys missing from the table are not
/// judged.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassroomTargets {
    /// The targets found, in [`TARGET_KEYS`] order.
    pub targets: Vec<Target>,
    /// Keys of the table this module does not judge.
    pub ignored: Vec<String>,
}

impl ClassroomTargets {
    /// Reads `[targets.classroom]` of a profile's `[targets]` table. No such
    /// table: no targets. A known key whose value is not a number is an
    /// error naming the profile and the key.
    pub fn from_profile_targets(profile: &str, targets: &toml::Table) -> Result<Self, ConfigError> {
        let Some(table) = targets.get("classroom") else {
            return Ok(Self::default());
        };
        let bad = |reason: String| {
            ConfigError::invalid(
                "--profile",
                format!("{profile}: [targets.classroom] {reason}"),
            )
        };
        let Some(table) = table.as_table() else {
            return Err(bad("is not a table".into()));
        };
        let mut out = Self::default();
        for (key, bound) in TARGET_KEYS {
            let Some(v) = table.get(*key) else { continue };
            let value = match v {
                toml::Value::Float(f) if f.is_finite() => *f,
                toml::Value::Integer(i) => *i as f64,
                _ => return Err(bad(format!("{key} must be a number"))),
            };
            out.targets.push(Target {
                key: key.to_string(),
                bound: *bound,
                value,
            });
        }
        out.ignored = table
            .keys()
            .filter(|k| !TARGET_KEYS.iter().any(|(t, _)| t == k))
            .cloned()
            .collect();
        Ok(out)
    }

    /// Judges a cell: one check per target.
    pub fn judge(&self, cell: &CellResult) -> Vec<Check> {
        self.targets
            .iter()
            .map(|t| {
                let measured = measured(cell, &t.key);
                let met = measured.is_some_and(|m| match t.bound {
                    Bound::Max => m <= t.value,
                    Bound::Min => m >= t.value,
                });
                Check {
                    key: t.key.clone(),
                    bound: t.bound,
                    target: t.value,
                    measured,
                    met,
                }
            })
            .collect()
    }
}

/// The cell's figure for a target key (`None`: not measured).
pub fn measured(cell: &CellResult, key: &str) -> Option<f64> {
    match key {
        "ttft_p95_s" => cell.ttft_p95_s,
        "coding_request_p50_s" => cell.coding_request_p50_s,
        "server_output_tok_per_s" => cell.server_output_tok_per_s,
        "preemptions" => cell.preemptions.map(|p| p as f64),
        "server_errors" => Some(cell.server_errors as f64),
        _ => None,
    }
}

/// One target judged on one cell. A figure that could not be measured does
/// not meet its target.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// The target key.
    pub key: String,
    /// Ceiling or floor.
    pub bound: Bound,
    /// The target value.
    pub target: f64,
    /// The cell's figure.
    pub measured: Option<f64>,
    /// Whether it meets the target.
    pub met: bool,
}

/// Where a class size's limit comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Limit {
    /// KV memory: preemptions, KV usage at 90 % or more, or requests kept
    /// waiting with seats free (the cache could not admit them).
    KvMemory,
    /// Seats: running pinned at `max_num_seqs` with requests waiting and the
    /// KV cache low, and a variant of the same profile with more seats met
    /// the targets at this class size.
    Seats,
    /// Decode throughput: running pinned at `max_num_seqs` with requests
    /// waiting and the KV cache low; no tried variant with more seats helped
    /// (or none was tried).
    DecodeThroughput,
    /// Requests rarely queued: the answers themselves are too slow for the
    /// targets.
    RequestSpeed,
}

impl Limit {
    /// A short explanation for reports.
    pub fn describe(self) -> &'static str {
        match self {
            Limit::KvMemory => "KV memory (preemptions, KV cache nearly full, or requests waiting with seats free)",
            Limit::Seats => "seats (running pinned at max_num_seqs with requests waiting, KV low; more seats met the targets)",
            Limit::DecodeThroughput => "decode throughput (running pinned at max_num_seqs with requests waiting, KV low)",
            Limit::RequestSpeed => "request speed (requests rarely waited; the answers alone are too slow)",
        }
    }
}

/// Peak KV usage (fraction) from which memory counts as the limit.
pub const KV_HIGH: f64 = 0.9;
/// Share of steady-state samples from which a queue counts as persistent.
pub const PERSISTENT: f64 = 0.25;

/// Classifies the limit of a cell that missed its targets. `more_seats_met`
/// tells whether a variant of the same profile with a larger `max_num_seqs`
/// met its targets at the same class size.
pub fn classify(cell: &CellResult, more_seats_met: bool) -> Limit {
    let pinned = cell.pinned_share.unwrap_or(0.0);
    let blocked = cell.blocked_share.unwrap_or(0.0);
    if cell.preemptions.unwrap_or(0) > 0
        || cell.peak_kv_usage.unwrap_or(0.0) >= KV_HIGH
        || (blocked >= PERSISTENT && blocked > pinned)
    {
        Limit::KvMemory
    } else if pinned >= PERSISTENT {
        if more_seats_met {
            Limit::Seats
        } else {
            Limit::DecodeThroughput
        }
    } else {
        Limit::RequestSpeed
    }
}
