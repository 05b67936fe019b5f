//! `[targets.classroom]`: the targets of a class, read from a profile and
//! judged on a [`ClassroomSummary`]. The capacity suite and `codendum plan`
//! both judge through [`ClassroomTargets::judge`], so one class gets one
//! verdict per key whichever of them judges it.
//!
//! ```toml
//! [targets.classroom]
//! ttft_p95_s = 75              # max, seconds: TTFT P95 over successful model calls
//! coding_request_p50_s = 900   # max, seconds: coding request (task) wall time P50
//! server_output_tok_per_s = 95 # min, tokens per second: server output (/metrics)
//! preemptions = 0              # max, count: preemptions during the run (/metrics)
//! server_errors = 0            # max, count: see [`server_errors`]
//! output_speed_p50_tok_per_s = 10  # min, tokens per second: output speed per user, median
//! error_rate = 0.01            # max, fraction: model calls failed for good, any kind
//! ```
//!
//! The same targets are given on the command line as a service level
//! (`--slo ttft_p95=10s,speed_p50=10`) or several named tiers
//! (`--tiers interactive:ttft_p95=10s,relaxed:ttft_p95=60s`), read by
//! [`slo`].

use serde::Deserialize;

use super::{check_value_kinds, KeyKind};
use crate::bound::{Bound, Outcome};
use crate::error::ConfigError;
use crate::results::metrics::{class_metric, error_rate, server_errors, Better, ClassMetric, Unit};
use crate::results::target_list::{TargetList, Threshold};
use crate::results::ClassroomSummary;

pub mod slo;

/// A key of `[targets.classroom]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ClassroomKey {
    /// `ttft_p95_s`: most TTFT at the 95th percentile, seconds.
    TtftP95,
    /// `coding_request_p50_s`: most coding-request wall time at the median,
    /// seconds.
    CodingRequestP50,
    /// `server_output_tok_per_s`: least server output, tokens per second.
    ServerOutput,
    /// `preemptions`: most preemptions during the run, a count.
    Preemptions,
    /// `server_errors`: most server errors, a count ([`server_errors`]).
    ServerErrors,
    /// `output_speed_p50_tok_per_s`: least output speed per user at the
    /// median, tokens per second.
    OutputSpeedP50,
    /// `error_rate`: most model calls failed for good (after retries, any
    /// kind: refused, server errors, time-outs, lost connections), a
    /// fraction of the calls ([`error_rate`]).
    ErrorRate,
}

impl ClassroomKey {
    /// Every key, in the order targets are listed and judged.
    pub const ALL: [ClassroomKey; 7] = [
        ClassroomKey::TtftP95,
        ClassroomKey::CodingRequestP50,
        ClassroomKey::ServerOutput,
        ClassroomKey::Preemptions,
        ClassroomKey::ServerErrors,
        ClassroomKey::OutputSpeedP50,
        ClassroomKey::ErrorRate,
    ];

    /// The key as written in the profile: `ttft_p95_s`.
    pub fn name(self) -> &'static str {
        match self {
            ClassroomKey::TtftP95 => "ttft_p95_s",
            ClassroomKey::CodingRequestP50 => "coding_request_p50_s",
            ClassroomKey::ServerOutput => "server_output_tok_per_s",
            ClassroomKey::Preemptions => "preemptions",
            ClassroomKey::ServerErrors => "server_errors",
            ClassroomKey::OutputSpeedP50 => "output_speed_p50_tok_per_s",
            ClassroomKey::ErrorRate => "error_rate",
        }
    }

    /// Whether more students can only make the key harder to meet, so a
    /// search for the largest class may steer on it: every ceiling, and
    /// the per-student speed floor. The server output floor is the one
    /// that is not: a small class cannot produce a large server output, so
    /// it is judged at the answer instead.
    pub fn harder_with_more_students(self) -> bool {
        self != ClassroomKey::ServerOutput
    }

    /// The class figure the key limits (its label, unit and direction).
    pub fn metric(self) -> &'static ClassMetric {
        class_metric(self.name()).expect("every [targets.classroom] key is a class figure")
    }

    /// The figure as named in capacity trial names: `ttft_p95` (the key
    /// without its unit suffix `_s`).
    pub fn trial_name(self) -> &'static str {
        self.metric().trial_name()
    }

    /// What is checked, for people: `TTFT P95`.
    pub fn label(self) -> &'static str {
        self.metric().label
    }

    /// The unit written after figures and limits: `s`, `tok/s`, or empty
    /// for counts.
    pub fn unit(self) -> &'static str {
        self.metric().unit.symbol()
    }

    /// Ceiling or floor: a ceiling on a figure where lower is better.
    pub fn bound(self) -> Bound {
        match self.metric().better {
            Better::Higher => Bound::Min,
            _ => Bound::Max,
        }
    }

    /// What the key's value must hold in the profile.
    pub fn kind(self) -> KeyKind {
        match self.metric().unit {
            Unit::Count => KeyKind::Count,
            _ => KeyKind::Number,
        }
    }
}

/// Targets of a class (`[targets.classroom]`). Every key is optional; a
/// missing key is not checked.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClassroomTargets {
    /// Most time to first token at the 95th percentile, seconds.
    pub ttft_p95_s: Option<f64>,
    /// Most wall time of a coding request (task) at the median, seconds.
    pub coding_request_p50_s: Option<f64>,
    /// Least server output, tokens per second.
    pub server_output_tok_per_s: Option<f64>,
    /// Most preemptions during the run (from `/metrics`), a count.
    pub preemptions: Option<u64>,
    /// Most server errors ([`server_errors`]), a count.
    pub server_errors: Option<u64>,
    /// Least output speed per user at the median, tokens per second.
    pub output_speed_p50_tok_per_s: Option<f64>,
    /// Most model calls failed for good ([`error_rate`]), a fraction.
    pub error_rate: Option<f64>,
}

impl ClassroomTargets {
    /// The limit of a key, in the key's unit; `None` when it is not checked.
    pub fn limit(&self, key: ClassroomKey) -> Option<f64> {
        match key {
            ClassroomKey::TtftP95 => self.ttft_p95_s,
            ClassroomKey::CodingRequestP50 => self.coding_request_p50_s,
            ClassroomKey::ServerOutput => self.server_output_tok_per_s,
            ClassroomKey::Preemptions => self.preemptions.map(|n| n as f64),
            ClassroomKey::ServerErrors => self.server_errors.map(|n| n as f64),
            ClassroomKey::OutputSpeedP50 => self.output_speed_p50_tok_per_s,
            ClassroomKey::ErrorRate => self.error_rate,
        }
    }

    /// Sets the limit of `key`, in the key's unit (a count is rounded).
    pub fn set_limit(&mut self, key: ClassroomKey, limit: f64) {
        let count = || limit.max(0.0).round() as u64;
        match key {
            ClassroomKey::TtftP95 => self.ttft_p95_s = Some(limit),
            ClassroomKey::CodingRequestP50 => self.coding_request_p50_s = Some(limit),
            ClassroomKey::ServerOutput => self.server_output_tok_per_s = Some(limit),
            ClassroomKey::Preemptions => self.preemptions = Some(count()),
            ClassroomKey::ServerErrors => self.server_errors = Some(count()),
            ClassroomKey::OutputSpeedP50 => self.output_speed_p50_tok_per_s = Some(limit),
            ClassroomKey::ErrorRate => self.error_rate = Some(limit),
        }
    }

    /// The targets without `key`.
    pub fn without(&self, key: ClassroomKey) -> ClassroomTargets {
        let mut t = self.clone();
        match key {
            ClassroomKey::TtftP95 => t.ttft_p95_s = None,
            ClassroomKey::CodingRequestP50 => t.coding_request_p50_s = None,
            ClassroomKey::ServerOutput => t.server_output_tok_per_s = None,
            ClassroomKey::Preemptions => t.preemptions = None,
            ClassroomKey::ServerErrors => t.server_errors = None,
            ClassroomKey::OutputSpeedP50 => t.output_speed_p50_tok_per_s = None,
            ClassroomKey::ErrorRate => t.error_rate = None,
        }
        t
    }

    /// The checked keys with their limits, in [`ClassroomKey::ALL`] order.
    pub fn limits(&self) -> Vec<(ClassroomKey, f64)> {
        ClassroomKey::ALL
            .into_iter()
            .filter_map(|k| Some((k, self.limit(k)?)))
            .collect()
    }

    /// Whether no key is checked.
    pub fn is_empty(&self) -> bool {
        self.limits().is_empty()
    }

    /// The metrics checked, as named in capacity trial names
    /// ([`ClassroomKey::metric`]), in a fixed order.
    pub fn metrics(&self) -> Vec<&'static str> {
        self.limits()
            .into_iter()
            .map(|(k, _)| k.trial_name())
            .collect()
    }

    /// Judges a class: one check per checked key, in
    /// [`ClassroomKey::ALL`] order, each by the key's judging function.
    pub fn judge(&self, summary: &ClassroomSummary) -> Vec<ClassroomCheck> {
        let mut out = Vec::new();
        if let Some(limit) = self.ttft_p95_s {
            out.push(judge_ttft_p95(summary, limit));
        }
        if let Some(limit) = self.coding_request_p50_s {
            out.push(judge_coding_request_p50(summary, limit));
        }
        if let Some(limit) = self.server_output_tok_per_s {
            out.push(judge_server_output(summary, limit));
        }
        if let Some(limit) = self.preemptions {
            out.push(judge_preemptions(summary, limit));
        }
        if let Some(limit) = self.server_errors {
            out.push(judge_server_errors(summary, limit));
        }
        if let Some(limit) = self.output_speed_p50_tok_per_s {
            out.push(judge_output_speed_p50(summary, limit));
        }
        if let Some(limit) = self.error_rate {
            out.push(judge_error_rate(summary, limit));
        }
        out
    }
}

impl From<&ClassroomTargets> for TargetList {
    fn from(t: &ClassroomTargets) -> Self {
        let targets = t
            .limits()
            .into_iter()
            .map(|(key, value)| Threshold {
                key: key.name().to_string(),
                bound: key.bound(),
                value,
            })
            .collect();
        TargetList { targets }
    }
}

/// Reads a `[targets.classroom]` table; `path` names it in errors
/// (`targets.classroom`, `targets.quick.classroom`). A value that is not of
/// its key's kind ([`ClassroomKey::kind`]) or an unknown key is an error
/// naming `path` and the key.
pub fn parse_classroom_targets(
    path: &str,
    value: &toml::Value,
) -> Result<ClassroomTargets, ConfigError> {
    let kinds: Vec<(&str, KeyKind)> = ClassroomKey::ALL
        .iter()
        .map(|k| (k.name(), k.kind()))
        .collect();
    check_value_kinds(path, value, &kinds)?;
    value
        .clone()
        .try_into()
        .map_err(|e: toml::de::Error| ConfigError::invalid(path, e.message().replace('\n', " ")))
}

/// One key judged on one class.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassroomCheck {
    /// The key.
    pub key: ClassroomKey,
    /// The limit, in the key's unit ([`ClassroomKey::unit`]).
    pub limit: f64,
    /// The measured figure, in the key's unit; `None` when the class did
    /// not measure it.
    pub measured: Option<f64>,
    /// The figure's 95 % interval, when it has one.
    pub interval: Option<crate::stats::Interval>,
    /// Whether the figure's value meets the limit (never when not
    /// measured): the point judgement `plan`'s bisection steers on.
    pub passed: bool,
    /// Met, missed or indeterminate, by the one rule ([`Bound::judge`]).
    pub outcome: Outcome,
}

fn check(
    key: ClassroomKey,
    limit: f64,
    measured: Option<f64>,
    summary: &ClassroomSummary,
) -> ClassroomCheck {
    let interval = measured.and_then(|_| key.metric().interval_of(summary));
    ClassroomCheck {
        key,
        limit,
        measured,
        interval,
        passed: key.bound().is_met(measured, limit),
        outcome: key.bound().judge(measured, interval, limit),
    }
}

/// `ttft_p95_s`: TTFT P95 over successful model calls (after retries),
/// seconds, at most `limit_s`. Not measured without a successful call.
pub fn judge_ttft_p95(summary: &ClassroomSummary, limit_s: f64) -> ClassroomCheck {
    check(ClassroomKey::TtftP95, limit_s, summary.ttft_p95_s, summary)
}

/// `coding_request_p50_s`: wall time of completed coding requests (sent →
/// the agent's final answer), median, seconds, at most `limit_s`. Not
/// measured when none completed.
pub fn judge_coding_request_p50(summary: &ClassroomSummary, limit_s: f64) -> ClassroomCheck {
    check(
        ClassroomKey::CodingRequestP50,
        limit_s,
        summary.task_time_p50_s,
        summary,
    )
}

/// `server_output_tok_per_s`: the server's output throughput from
/// `/metrics` ([`crate::results::ServerFigures::output_tokens_per_s`]),
/// tokens per second, at least `limit_tok_per_s`. Not measured without
/// `/metrics`.
pub fn judge_server_output(summary: &ClassroomSummary, limit_tok_per_s: f64) -> ClassroomCheck {
    check(
        ClassroomKey::ServerOutput,
        limit_tok_per_s,
        summary.server.output_tokens_per_s,
        summary,
    )
}

/// `preemptions`: preemptions during the run from `/metrics`, at most
/// `limit`. Not measured without `/metrics`.
pub fn judge_preemptions(summary: &ClassroomSummary, limit: u64) -> ClassroomCheck {
    check(
        ClassroomKey::Preemptions,
        limit as f64,
        summary.server.preemptions.map(|n| n as f64),
        summary,
    )
}

/// `server_errors`: [`server_errors`] of the class, at most `limit`. Always
/// measured.
pub fn judge_server_errors(summary: &ClassroomSummary, limit: u64) -> ClassroomCheck {
    check(
        ClassroomKey::ServerErrors,
        limit as f64,
        Some(server_errors(summary) as f64),
        summary,
    )
}

/// `output_speed_p50_tok_per_s`: output speed per user (per successful
/// call, output tokens ÷ (duration − TTFT)), median, tokens per second, at
/// least `limit_tok_per_s`. Not measured without a successful call.
pub fn judge_output_speed_p50(summary: &ClassroomSummary, limit_tok_per_s: f64) -> ClassroomCheck {
    check(
        ClassroomKey::OutputSpeedP50,
        limit_tok_per_s,
        summary.output_speed_p50_tok_s,
        summary,
    )
}

/// `error_rate`: [`error_rate`] of the class, at most `limit` (a
/// fraction). Not measured without a model call.
pub fn judge_error_rate(summary: &ClassroomSummary, limit: f64) -> ClassroomCheck {
    check(ClassroomKey::ErrorRate, limit, error_rate(summary), summary)
}

#[cfg(test)]
mod tests;
