//! Judging results against targets: plain functions from a summary and a
//! target table to one [`Judgement`] per checked figure.

use std::path::Path;

use super::targets::{BenchLevelTargets, ClassroomTargets};
use crate::report::model::Verdict;
use crate::results::{BenchSummary, ClassroomRunSummary, LevelSummary};

/// Whether a target is a ceiling or a floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// The figure must not exceed the limit.
    Max,
    /// The figure must not fall below the limit.
    Min,
}

/// One figure judged against one target.
#[derive(Debug, Clone, PartialEq)]
pub struct Judgement {
    /// Check group: `classroom` or `bench-short-c16`.
    pub group: String,
    /// Metric, as in the trial name: `ttft_p95`, `server_errors`.
    pub metric: String,
    /// What is checked, for people: `TTFT P95`.
    pub label: String,
    /// The measured figure; `None` when it could not be measured.
    pub figure: Option<f64>,
    /// The limit.
    pub limit: f64,
    /// Ceiling or floor.
    pub bound: Bound,
    /// Unit after numbers (`s`, `tok/s`, or empty for counts).
    pub unit: &'static str,
    /// The figure meets the target.
    pub passed: bool,
    /// The failure message (figure, target, workload and results folder);
    /// `None` when passed.
    pub failure: Option<String>,
    /// The row for the report.
    pub verdict: Verdict,
}

/// A measured figure, why it may be missing, and detail for messages.
struct Figure {
    value: Option<f64>,
    /// Why the figure is missing (shown only when it is).
    missing: Option<String>,
    /// Detail shown beside a failing figure, such as error kinds.
    detail: Option<String>,
}

impl Figure {
    fn new(value: Option<f64>, missing: impl Into<String>) -> Self {
        Figure {
            value,
            missing: Some(missing.into()),
            detail: None,
        }
    }
}

struct Spec<'a> {
    group: &'a str,
    metric: &'a str,
    label: &'a str,
    unit: &'static str,
    bound: Bound,
    limit: f64,
    /// For the report's verdict name: `at 16 in flight (short)`.
    scope: &'a str,
    /// For messages: `bench, short prompts, 16 in flight, 64 requests`.
    context: &'a str,
    folder: &'a Path,
}

/// Formats a figure: more decimals for small numbers.
pub fn format_number(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

fn with_unit(number: String, unit: &str) -> String {
    if unit.is_empty() {
        number
    } else {
        format!("{number} {unit}")
    }
}

fn judge(spec: Spec<'_>, figure: Figure) -> Judgement {
    let limit_text = with_unit(format!("{}", spec.limit), spec.unit);
    let passed = match figure.value {
        Some(v) => match spec.bound {
            Bound::Max => v <= spec.limit,
            Bound::Min => v >= spec.limit,
        },
        None => false,
    };
    let where_ = format!("{}; {}", spec.context, spec.folder.display());
    let failure = (!passed).then(|| match figure.value {
        Some(v) => {
            let verb = match spec.bound {
                Bound::Max => "exceeds",
                Bound::Min => "is below",
            };
            let detail = figure
                .detail
                .as_ref()
                .map(|n| format!(" [{n}]"))
                .unwrap_or_default();
            format!(
                "{} {}{detail} {verb} {limit_text} ({where_})",
                spec.label,
                with_unit(format_number(v), spec.unit)
            )
        }
        None => format!(
            "{} not measured: {} (target {limit_text}; {where_})",
            spec.label,
            figure
                .missing
                .as_deref()
                .unwrap_or("no figure in the results")
        ),
    });
    let sign = match spec.bound {
        Bound::Max => "≤",
        Bound::Min => "≥",
    };
    let verdict = Verdict {
        name: format!("{} {}", spec.label, spec.scope),
        figure: figure
            .value
            .map(|v| with_unit(format_number(v), spec.unit))
            .unwrap_or_else(|| "not measured".into()),
        target: format!("{sign} {limit_text}"),
        passed,
    };
    Judgement {
        group: spec.group.to_string(),
        metric: spec.metric.to_string(),
        label: spec.label.to_string(),
        figure: figure.value,
        limit: spec.limit,
        bound: spec.bound,
        unit: spec.unit,
        passed,
        failure,
        verdict,
    }
}

/// The bench level a target names, if the run has it.
pub fn find_level<'a>(
    summary: &'a BenchSummary,
    t: &BenchLevelTargets,
) -> Option<&'a LevelSummary> {
    summary
        .levels
        .iter()
        .find(|l| l.shape.eq_ignore_ascii_case(&t.shape) && l.concurrency == t.concurrency)
}

/// Judges one bench level's targets against a bench run.
pub fn judge_bench_level(
    summary: &BenchSummary,
    t: &BenchLevelTargets,
    folder: &Path,
) -> Vec<Judgement> {
    let group = t.group_name();
    let level = find_level(summary, t);
    let context = match level {
        Some(l) => format!(
            "bench, {} prompts, {} in flight, {} requests",
            l.shape, l.concurrency, l.requests
        ),
        None => format!(
            "bench, {} prompts, {} in flight: the run has no such level",
            t.shape, t.concurrency
        ),
    };
    let scope = format!("at {} in flight ({})", t.concurrency, t.shape);
    let no_success = level.map(|l| {
        format!(
            "no successful request ({} of {} failed{})",
            l.requests - l.successes.min(l.requests),
            l.requests,
            error_note(l).map(|n| format!(": {n}")).unwrap_or_default()
        )
    });
    let time = |v: Option<f64>| Figure {
        value: v,
        missing: no_success.clone(),
        detail: None,
    };
    let seconds: [(&str, &str, Option<f64>, Option<f64>); 6] = [
        (
            "ttft_p50",
            "TTFT P50",
            t.ttft_p50_s,
            level.and_then(|l| l.ttft_p50_s),
        ),
        (
            "ttft_p95",
            "TTFT P95",
            t.ttft_p95_s,
            level.and_then(|l| l.ttft_p95_s),
        ),
        (
            "ttft_p99",
            "TTFT P99",
            t.ttft_p99_s,
            level.and_then(|l| l.ttft_p99_s),
        ),
        (
            "e2e_p50",
            "E2E latency P50",
            t.e2e_p50_s,
            level.and_then(|l| l.e2e_p50_s),
        ),
        (
            "e2e_p95",
            "E2E latency P95",
            t.e2e_p95_s,
            level.and_then(|l| l.e2e_p95_s),
        ),
        (
            "tpot_mean",
            "Mean time per output token",
            t.tpot_mean_s,
            level.and_then(|l| l.tpot_mean_s),
        ),
    ];
    let spec = |metric, label, unit, bound, limit| Spec {
        group: &group,
        metric,
        label,
        unit,
        bound,
        limit,
        scope: &scope,
        context: &context,
        folder,
    };
    let mut out = Vec::new();
    for (metric, label, limit, value) in seconds {
        if let Some(limit) = limit {
            out.push(judge(
                spec(metric, label, "s", Bound::Max, limit),
                time(value),
            ));
        }
    }
    let rates = [
        (
            "output_tok_per_s",
            "Output",
            t.output_tok_per_s,
            level.map(|l| l.output_tok_per_s),
        ),
        (
            "total_tok_per_s",
            "Total throughput",
            t.total_tok_per_s,
            level.map(|l| l.total_tok_per_s),
        ),
    ];
    for (metric, label, limit, value) in rates {
        if let Some(limit) = limit {
            out.push(judge(
                spec(metric, label, "tok/s", Bound::Min, limit),
                time(value),
            ));
        }
    }
    if let Some(limit) = t.errors {
        let figure = Figure {
            value: level.map(|l| l.errors.values().map(|g| g.count).sum::<u64>() as f64),
            missing: None,
            detail: level.and_then(error_note),
        };
        out.push(judge(
            spec("errors", "Errors", "", Bound::Max, limit as f64),
            figure,
        ));
    }
    if let Some(limit) = t.preemptions {
        let figure = Figure::new(
            level.and_then(|l| l.preemptions),
            "/metrics was not readable during the level",
        );
        out.push(judge(
            spec("preemptions", "Preemptions", "", Bound::Max, limit as f64),
            figure,
        ));
    }
    if level.is_none() {
        for j in &mut out {
            j.failure = j
                .failure
                .take()
                .map(|f| f.replace("no figure in the results", "the level did not run"));
        }
    }
    out
}

fn error_note(l: &LevelSummary) -> Option<String> {
    if l.errors.is_empty() {
        return None;
    }
    Some(
        l.errors
            .iter()
            .map(|(k, g)| format!("{k} {}", g.count))
            .collect::<Vec<_>>()
            .join(", "),
    )
}

/// Requests of a class that failed for good with a server error
/// (`http_503` + `http_5xx`).
pub fn classroom_server_errors(s: &ClassroomRunSummary) -> u64 {
    s.summary
        .errors_by_kind
        .iter()
        .filter(|(k, _)| matches!(k.as_str(), "http_503" | "http_5xx"))
        .map(|(_, n)| *n)
        .sum()
}

/// Judges a class against its targets.
pub fn judge_classroom(
    s: &ClassroomRunSummary,
    t: &ClassroomTargets,
    folder: &Path,
) -> Vec<Judgement> {
    let m = &s.summary;
    let p = &s.parameters;
    let context = format!(
        "classroom, {} students, {:.0} s window, {} requests, {} of {} coding requests completed",
        p.users, p.duration_s, m.requests, m.completed, m.coding_requests
    );
    let scope = format!("({} students)", p.users);
    let spec = |metric, label, unit, bound, limit| Spec {
        group: "classroom",
        metric,
        label,
        unit,
        bound,
        limit,
        scope: &scope,
        context: &context,
        folder,
    };
    let metrics_missing = if s.server.metrics {
        "no /metrics samples in the run"
    } else {
        "/metrics was not readable"
    };
    let mut out = Vec::new();
    if let Some(limit) = t.ttft_p95_s {
        let f = Figure::new(m.ttft_p95_s, "no successful request");
        out.push(judge(
            spec("ttft_p95", "TTFT P95", "s", Bound::Max, limit),
            f,
        ));
    }
    if let Some(limit) = t.coding_request_p50_s {
        let f = Figure::new(m.task_time_p50_s, "no coding request completed");
        out.push(judge(
            spec(
                "coding_request_p50",
                "Coding request P50",
                "s",
                Bound::Max,
                limit,
            ),
            f,
        ));
    }
    if let Some(limit) = t.server_output_tok_per_s {
        let f = Figure::new(m.server.output_tokens_per_s, metrics_missing);
        out.push(judge(
            spec(
                "server_output_tok_per_s",
                "Server output",
                "tok/s",
                Bound::Min,
                limit,
            ),
            f,
        ));
    }
    if let Some(limit) = t.preemptions {
        let f = Figure::new(m.server.preemptions.map(|p| p as f64), metrics_missing);
        out.push(judge(
            spec("preemptions", "Preemptions", "", Bound::Max, limit as f64),
            f,
        ));
    }
    if let Some(limit) = t.server_errors {
        let by_kind: Vec<String> = m
            .errors_by_kind
            .iter()
            .map(|(k, n)| format!("{} {n}", k.as_str()))
            .collect();
        let f = Figure {
            value: Some(classroom_server_errors(s) as f64),
            missing: None,
            detail: (!by_kind.is_empty()).then(|| format!("errors: {}", by_kind.join(", "))),
        };
        out.push(judge(
            spec(
                "server_errors",
                "Server errors",
                "",
                Bound::Max,
                limit as f64,
            ),
            f,
        ));
    }
    out
}

#[cfg(test)]
#[path = "judge_tests.rs"]
mod tests;
