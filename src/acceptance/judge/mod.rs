//! Judging results against targets: plain functions from a summary and a
//! target table to one [`Judgement`] per checked figure, by the one rule of
//! [`Bound::judge`]: met, missed, or indeterminate when the figure's 95 %
//! interval straddles the target. A class is judged by
//! [`codendum_core::targets::classroom`] (the verdicts `codendum plan` gives
//! too); this module adds the messages and report rows.

use std::path::Path;

use codendum_core::bound::{Bound, Outcome};
use codendum_core::results::metrics::Source;
use codendum_core::results::{BenchSummary, ClassroomRunSummary, LevelSummary};
use codendum_core::stats::Interval;
use codendum_core::targets::bench::{bound_of, BenchLevelTargets, ClassroomTargets};
use codendum_core::targets::{ClassroomCheck, ClassroomKey};
use codendum_report::format::interval_text;
use codendum_report::model::Verdict;

/// How a trial that did not fail ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrialPass {
    /// The figure (and its 95 % interval, where it has one) meets the
    /// target.
    Met,
    /// The data cannot tell whether it does (a figure's interval straddles
    /// the target, a capacity search's answer range straddles the class
    /// asked for): the trial is listed as ignored, with this reason.
    Indeterminate(String),
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
    /// The figure's 95 % interval, when it has one.
    pub interval: Option<Interval>,
    /// The limit.
    pub limit: f64,
    /// Ceiling or floor.
    pub bound: Bound,
    /// Unit after numbers (`s`, `tok/s`, or empty for counts).
    pub unit: &'static str,
    /// The figure's value meets the target.
    pub passed: bool,
    /// Met, missed or indeterminate ([`Bound::judge`]).
    pub outcome: Outcome,
    /// The failure message (figure, target, workload and results folder);
    /// `None` unless missed.
    pub failure: Option<String>,
    /// Why the run cannot decide (the interval straddles the target);
    /// `None` unless indeterminate.
    pub undecided: Option<String>,
    /// The row for the report.
    pub verdict: Verdict,
}

/// A measured figure, why it may be missing, and detail for messages.
struct Figure {
    value: Option<f64>,
    /// Its 95 % interval, when it has one.
    interval: Option<Interval>,
    /// How its interval is shown (the figure's unit).
    shown: codendum_core::results::metrics::Shown,
    /// Why the figure is missing (shown only when it is).
    missing: Option<String>,
    /// Detail shown beside a failing figure, such as error kinds.
    detail: Option<String>,
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

/// Judges a figure by its bound and interval ([`Bound::judge`]).
fn judge(spec: Spec<'_>, figure: Figure) -> Judgement {
    let passed = spec.bound.is_met(figure.value, spec.limit);
    let outcome = spec.bound.judge(figure.value, figure.interval, spec.limit);
    judgement(spec, figure, passed, outcome)
}

/// The judgement of a figure whose value `passed` and whose outcome is
/// `outcome`: the failure (or undecided) message and the report row.
fn judgement(spec: Spec<'_>, figure: Figure, passed: bool, outcome: Outcome) -> Judgement {
    let limit_text = with_unit(format!("{}", spec.limit), spec.unit);
    let where_ = format!("{}; {}", spec.context, spec.folder.display());
    let shown_interval = interval_text(figure.shown, figure.interval);
    let with_interval = |v: f64| {
        let number = with_unit(format_number(v), spec.unit);
        if shown_interval.is_empty() {
            number
        } else {
            format!("{number} {shown_interval}")
        }
    };
    let undecided = (outcome == Outcome::Indeterminate).then(|| {
        let v = figure.value.unwrap_or(f64::NAN);
        format!(
            "indeterminate: {} {} against {} {limit_text}: its 95 % interval straddles the target, \
             so this run cannot tell which side it is on (more requests or a longer run narrow it; {where_})",
            spec.label,
            with_interval(v),
            spec.bound.sign()
        )
    });
    let failure = (outcome == Outcome::Missed).then(|| match figure.value {
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
                with_interval(v)
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
    let sign = spec.bound.sign();
    let verdict = Verdict {
        name: format!("{} {}", spec.label, spec.scope),
        figure: figure
            .value
            .map(with_interval)
            .unwrap_or_else(|| "not measured".into()),
        target: format!("{sign} {limit_text}"),
        passed: outcome == Outcome::Met,
        outcome: Some(outcome),
    };
    Judgement {
        group: spec.group.to_string(),
        metric: spec.metric.to_string(),
        label: spec.label.to_string(),
        figure: figure.value,
        interval: figure.interval,
        limit: spec.limit,
        bound: spec.bound,
        unit: spec.unit,
        passed,
        outcome,
        failure,
        undecided,
        verdict,
    }
}

/// The bench level a target names, if the run has it.
pub fn find_level<'a>(
    summary: &'a BenchSummary,
    t: &BenchLevelTargets,
) -> Option<&'a LevelSummary> {
    summary.levels.iter().find(|l| t.names(l))
}

/// Judges one bench level's targets against a bench run, in
/// [`codendum_core::targets::bench::BENCH_TARGET_KEYS`] order: each figure, bound, unit
/// and label comes from the level metric its key names
/// ([`codendum_core::results::metrics::LEVEL_METRICS`]).
pub fn judge_bench_level(
    summary: &BenchSummary,
    t: &BenchLevelTargets,
    folder: &Path,
) -> Vec<Judgement> {
    let group = t.group_name();
    let level = find_level(summary, t);
    let load = match t.rate {
        Some(r) => format!(
            "{} requests/s",
            codendum_core::results::records::trim_rate(r)
        ),
        None => format!("{} in flight", t.concurrency),
    };
    let context = match level {
        Some(l) => format!(
            "bench, {} prompts, {load}, {} requests",
            l.shape, l.requests
        ),
        None => format!(
            "bench, {} prompts, {load}: the run has no such level",
            t.shape
        ),
    };
    let scope = format!("at {load} ({})", t.shape);
    let no_success = level.map(|l| {
        format!(
            "no successful request ({} of {} failed{})",
            l.requests - l.successes.min(l.requests),
            l.requests,
            error_note(l).map(|n| format!(": {n}")).unwrap_or_default()
        )
    });
    let mut out = Vec::new();
    for (metric, limit) in t.checked() {
        let Some(bound) = bound_of(metric) else {
            continue;
        };
        let missing = match (level, metric.source) {
            (None, _) => Some("the level did not run".to_string()),
            (Some(_), Source::Successes) => no_success.clone(),
            (Some(_), Source::Server) => {
                Some("/metrics was not readable during the level".to_string())
            }
            (Some(_), Source::Requests | Source::Level) => None,
        };
        let figure = Figure {
            value: level.and_then(|l| metric.number(l)),
            interval: level.and_then(|l| metric.interval_of(l)),
            shown: metric.shown,
            missing,
            // A figure counted over every request shows the errors by kind.
            detail: (metric.source == Source::Requests)
                .then(|| level.and_then(error_note))
                .flatten(),
        };
        let spec = Spec {
            group: &group,
            metric: metric.trial_name(),
            label: metric.label,
            unit: metric.unit.symbol(),
            bound,
            limit,
            scope: &scope,
            context: &context,
            folder,
        };
        out.push(judge(spec, figure));
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

/// Judges a class against its targets: the verdicts of
/// [`ClassroomTargets::judge`], with messages naming the class and `folder`.
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
    t.judge(m)
        .into_iter()
        .map(|check: ClassroomCheck| {
            let key = check.key;
            let spec = Spec {
                group: "classroom",
                metric: key.trial_name(),
                label: key.label(),
                unit: key.unit(),
                bound: key.bound(),
                limit: check.limit,
                scope: &scope,
                context: &context,
                folder,
            };
            let figure = Figure {
                value: check.measured,
                interval: check.interval,
                shown: key.metric().shown,
                missing: Some(why_missing(key, s).to_string()),
                detail: (key == ClassroomKey::ServerErrors)
                    .then(|| errors_by_kind(s))
                    .flatten(),
            };
            judgement(spec, figure, check.passed, check.outcome)
        })
        .collect()
}

/// Why a class has no figure for a key.
fn why_missing(key: ClassroomKey, s: &ClassroomRunSummary) -> &'static str {
    match key {
        ClassroomKey::TtftP95 => "no successful request",
        ClassroomKey::CodingRequestP50 => "no coding request completed",
        ClassroomKey::ServerOutput | ClassroomKey::Preemptions if s.server.metrics => {
            "no /metrics samples in the run"
        }
        ClassroomKey::ServerOutput | ClassroomKey::Preemptions => "/metrics was not readable",
        ClassroomKey::ServerErrors => "no figure in the results",
        ClassroomKey::OutputSpeedP50 => "no successful request",
        ClassroomKey::ErrorRate => "no model call",
    }
}

/// Every failed call of a class by kind: `errors: http_429 9, http_503 4`.
fn errors_by_kind(s: &ClassroomRunSummary) -> Option<String> {
    let by_kind: Vec<String> = s
        .summary
        .errors_by_kind
        .iter()
        .map(|(k, n)| format!("{} {n}", k.as_str()))
        .collect();
    (!by_kind.is_empty()).then(|| format!("errors: {}", by_kind.join(", ")))
}

#[cfg(test)]
mod tests;
