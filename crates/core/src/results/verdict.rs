//! The verdict of a run, one definition for `bench` and `classroom`: clean,
//! completed with errors, or failed, and the outages that explain it. Plain
//! functions of the records: the same verdict comes from a live run and
//! from its folder read back.
//!
//! - **Outage**: a stretch of calls that failed for a server-side reason
//!   ([`is_outage_kind`]: no connection, a time-out, a 5xx, a broken or
//!   incomplete stream) with no success in between, in the order the
//!   outcomes were learned (each call's end). It starts when the first such
//!   failure after a success was sent, or at the end of that success when
//!   the failing call was sent before it (a hung stream cut much later),
//!   and ends at the last
//!   one before the server answered again; when no success came after it,
//!   it lasts **until the end**. A lone failure between successes is an
//!   error, not an outage. Rate limits (429) and bad requests (4xx) never
//!   make an outage: the server answered them.
//! - **Failed**: the server stopped answering (an outage until the end), a
//!   bench level had no successful request, a shape could not run, or a
//!   class completed no coding request. Exit 1.
//! - **Completed with errors**: at least one call failed; exit 1 when the
//!   errors exceed the run's `--max-error-rate` (a fraction of the calls),
//!   else 0.
//! - **Completed cleanly**: no call failed; exit 0.
//!
//! The error rate is judged against `--max-error-rate` by the one rule of
//! [`crate::bound::Bound::judge`], with its Wilson interval: above the
//! limit with its whole interval fails the exit code; an interval that
//! straddles the limit is said (indeterminate) and does not.
//!
//! Besides how it ended, a run is **valid as a capacity figure** only when
//! nothing made its own figures untrustworthy ([`validity`]): codendum's
//! client falling behind (a rate level sent late beyond
//! [`LATE_SEND_MIN_S`] and [`LATE_SEND_SHARE`] of its gap between
//! arrivals, or the client's process near a full core,
//! [`CLIENT_CPU_HIGH`]), more than [`CONTEXT_OVERFLOW_SHARE`] of the calls
//! refused for exceeding the model's context, or a closed-loop level whose
//! steady window was too short to judge. Such a run says "measured, but not
//! valid as a capacity figure: …" and exits 1 under `--strict`
//! ([`Verdict::strict_exit_code`]).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::bound::{Bound, Outcome};
use crate::openai::ErrorKind;
use crate::stats::{wilson, Interval};

/// The least P95 send lag that counts as the client falling behind,
/// seconds (below it, timer and scheduler jitter).
pub const LATE_SEND_MIN_S: f64 = 0.010;
/// The share of a rate level's mean gap between arrivals (`1 / rate`)
/// beyond which its P95 send lag makes the offered load a different one.
pub const LATE_SEND_SHARE: f64 = 0.10;
/// The client process's CPU, a fraction of one core, from which it counts
/// as saturated (its own timing is then part of what it measures).
pub const CLIENT_CPU_HIGH: f64 = 0.90;
/// The share of calls refused for exceeding the model's context beyond
/// which the run measured a different workload than asked.
pub const CONTEXT_OVERFLOW_SHARE: f64 = 0.01;

/// The default `--max-error-rate`: 5 % of a run's calls may fail before the
/// run exits 1. The lab's class saw about 1 % fail on the VPN path with a
/// healthy server; five times that is a server or path that needs a look.
pub const DEFAULT_MAX_ERROR_RATE: f64 = 0.05;

/// Checks `--max-error-rate`: a fraction from 0 to 1.
pub fn check_max_error_rate(rate: f64) -> Result<(), crate::error::ConfigError> {
    if !(0.0..=1.0).contains(&rate) {
        return Err(crate::error::ConfigError::invalid(
            "--max-error-rate",
            format!("{rate} is not a fraction from 0 to 1 (0.05 = 5 % of the calls)"),
        ));
    }
    Ok(())
}

/// How a run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    /// Every call succeeded.
    Clean,
    /// Some calls failed, but the run did what it was asked.
    WithErrors,
    /// The run did not do what it was asked (see [`Verdict::reasons`]).
    Failed,
}

/// One finished call, as the verdict reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct CallOutcome {
    /// When the call was sent, seconds on the run's axis (since the run
    /// started).
    pub start_s: f64,
    /// When the call ended (its outcome was known), seconds on the run's
    /// axis (since the run started).
    pub end_s: f64,
    /// The error kind (`http_503`, `connect`, …); `None` for a success.
    pub error: Option<String>,
}

/// A stretch of server-side failures with no success in between.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outage {
    /// When the server stopped answering, seconds since the run started: the
    /// first failure's start or, when that call was sent while the server
    /// still answered others, the end of the last success before it (a
    /// stream that hangs and is cut much later stopped at most then).
    pub start_s: f64,
    /// The last failure's end before the server answered again, seconds;
    /// `None`: the server never answered again (until the end).
    pub end_s: Option<f64>,
    /// Calls that failed in it.
    pub calls_lost: u64,
    /// Those failures by kind.
    pub kinds: BTreeMap<String, u64>,
}

impl Outage {
    /// `from 12.0 s until the end, 37 calls lost (connect 30, stream_error 7)`.
    pub fn describe(&self) -> String {
        let span = match self.end_s {
            Some(end) => format!("from {:.1} s to {end:.1} s", self.start_s),
            None => format!("from {:.1} s until the end", self.start_s),
        };
        format!(
            "{span}, {} calls lost ({})",
            self.calls_lost,
            kinds_text(&self.kinds)
        )
    }
}

/// The verdict of a run (`verdict` in `summary.json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verdict {
    /// Clean, with errors, or failed.
    pub status: RunStatus,
    /// The one line stderr ends with.
    pub line: String,
    /// Why the run failed (empty unless [`RunStatus::Failed`]), or why an
    /// error rate above the limit fails the exit code.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reasons: Vec<String>,
    /// Calls finished.
    pub calls: u64,
    /// Calls that failed.
    pub errors: u64,
    /// Failed calls by kind.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors_by_kind: BTreeMap<String, u64>,
    /// Failed calls as a fraction of the calls (0..1); `None` without calls.
    pub error_rate: Option<f64>,
    /// The `--max-error-rate` the run was judged with (a fraction).
    pub max_error_rate: f64,
    /// The outages, in time order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<Outage>,
    /// When the server last answered, seconds since the run started, if an
    /// outage lasted until the end: the figures over time (server output,
    /// steady state) cover the run up to here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_until_s: Option<f64>,
    /// When the server restarted, seconds since the run started, as its
    /// `/metrics` showed ([`super::continuity`]); listed in the line.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub server_restarts: Vec<f64>,
    /// The error rate's 95 % (Wilson) interval, a fraction; absent without
    /// calls or in folders written before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate_interval: Option<Interval>,
    /// The error rate against `--max-error-rate` by the one judging rule:
    /// met, missed (exit 1) or indeterminate; absent without calls.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate_outcome: Option<Outcome>,
    /// Why the run's figures are not valid as a capacity figure
    /// ([`validity`]); empty when they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_valid: Vec<String>,
}

impl Verdict {
    /// The process exit code the verdict asks for: 1 for a failed run and
    /// for errors above the limit (with their whole interval), else 0.
    pub fn exit_code(&self) -> i32 {
        match self.status {
            RunStatus::Failed => 1,
            RunStatus::WithErrors if self.errors_missed_limit() => 1,
            _ => 0,
        }
    }

    /// The exit code under `--strict`: also 1 when the run is not valid as
    /// a capacity figure ([`Verdict::not_valid`]).
    pub fn strict_exit_code(&self) -> i32 {
        if self.not_valid.is_empty() {
            self.exit_code()
        } else {
            1
        }
    }

    /// Whether the error rate's value exceeds [`Verdict::max_error_rate`].
    pub fn over_limit(&self) -> bool {
        self.error_rate.is_some_and(|r| r > self.max_error_rate)
    }

    /// Whether the error rate missed the limit: above it with its whole
    /// interval (by its value alone when it has none).
    pub fn errors_missed_limit(&self) -> bool {
        match self.error_rate_outcome {
            Some(o) => o == Outcome::Missed,
            None => self.over_limit(),
        }
    }

    /// The verdict with `reasons` the run's figures are not valid as a
    /// capacity figure added to it and its line.
    pub fn with_not_valid(mut self, reasons: impl IntoIterator<Item = String>) -> Self {
        for r in reasons {
            if !self.not_valid.contains(&r) {
                self.not_valid.push(r);
            }
        }
        self.line = line(&self);
        self
    }

    /// The verdict with the server's restarts (seconds since the run
    /// started) listed in it and its line; the status is the calls'.
    pub fn with_restarts(mut self, restarts: impl IntoIterator<Item = f64>) -> Self {
        self.server_restarts.extend(restarts);
        self.server_restarts.sort_by(f64::total_cmp);
        self.server_restarts.dedup();
        self.line = line(&self);
        self
    }

    /// Whether an outage lasted until the end of the run.
    pub fn server_stopped(&self) -> bool {
        self.outages.iter().any(|o| o.end_s.is_none())
    }
}

/// Whether a failure of this kind is the server (or the path to it) not
/// answering: no connection, a failed TLS handshake, a time-out, a 5xx, a
/// broken stream.
pub fn is_outage_kind(kind: &str) -> bool {
    [
        ErrorKind::Connect,
        ErrorKind::Tls,
        ErrorKind::Timeout,
        ErrorKind::Http503,
        ErrorKind::Http5xx,
        ErrorKind::StreamError,
        ErrorKind::Incomplete,
    ]
    .iter()
    .any(|k| k.as_str() == kind)
}

/// The outages of a run's calls (see the module documentation). Calls are
/// taken in the order they ended.
pub fn outages(calls: &[CallOutcome]) -> Vec<Outage> {
    let mut order: Vec<&CallOutcome> = calls.iter().collect();
    order.sort_by(|a, b| a.end_s.total_cmp(&b.end_s));
    let mut found = Vec::new();
    let mut open: Option<Outage> = None;
    let mut last_failure = 0.0;
    let mut last_success = 0.0_f64;
    for c in order {
        match c.error.as_deref() {
            None => {
                last_success = last_success.max(c.end_s);
                if let Some(mut o) = open.take() {
                    o.end_s = Some(last_failure);
                    if o.calls_lost >= 2 {
                        found.push(o);
                    }
                }
            }
            Some(kind) if is_outage_kind(kind) => {
                let o = open.get_or_insert_with(|| Outage {
                    start_s: c.start_s.max(last_success).min(c.end_s),
                    end_s: None,
                    calls_lost: 0,
                    kinds: BTreeMap::new(),
                });
                o.calls_lost += 1;
                *o.kinds.entry(kind.to_string()).or_default() += 1;
                last_failure = c.end_s;
            }
            Some(_) => {}
        }
    }
    // Until the end: kept however few calls it took (the server never
    // answered again).
    found.extend(open);
    found
}

/// What a run of either kind was asked and did, besides its calls.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expectations {
    /// Reasons the run did not do what was asked whatever its calls did
    /// (a level with no success, a shape that could not run, no coding
    /// request completed).
    pub unmet: Vec<String>,
    /// The `--max-error-rate` (a fraction).
    pub max_error_rate: f64,
}

/// The verdict of a run from its calls and what it was asked.
pub fn judge(calls: &[CallOutcome], expected: &Expectations) -> Verdict {
    let mut errors_by_kind: BTreeMap<String, u64> = BTreeMap::new();
    for kind in calls.iter().filter_map(|c| c.error.as_deref()) {
        *errors_by_kind.entry(kind.to_string()).or_default() += 1;
    }
    let errors: u64 = errors_by_kind.values().sum();
    let total = calls.len() as u64;
    let error_rate = (total > 0).then(|| errors as f64 / total as f64);
    let outages = outages(calls);
    let mut reasons = Vec::new();
    let mut answered_until_s = None;
    if let Some(stop) = outages.iter().find(|o| o.end_s.is_none()) {
        let answered_before = calls
            .iter()
            .any(|c| c.error.is_none() && c.end_s <= stop.start_s);
        reasons.push(if answered_before {
            format!(
                "the server stopped answering at {:.1} s ({} calls lost)",
                stop.start_s, stop.calls_lost
            )
        } else {
            format!("the server never answered ({} calls lost)", stop.calls_lost)
        });
        answered_until_s = Some(last_success_before(calls, stop.start_s));
    }
    reasons.extend(expected.unmet.iter().cloned());
    let status = if !reasons.is_empty() {
        RunStatus::Failed
    } else if errors > 0 {
        RunStatus::WithErrors
    } else {
        RunStatus::Clean
    };
    let mut verdict = Verdict {
        status,
        line: String::new(),
        reasons,
        calls: total,
        errors,
        errors_by_kind,
        error_rate,
        max_error_rate: expected.max_error_rate,
        outages,
        answered_until_s,
        server_restarts: Vec::new(),
        error_rate_interval: wilson(errors, total),
        error_rate_outcome: None,
        not_valid: Vec::new(),
    };
    verdict.error_rate_outcome = (total > 0).then(|| {
        Bound::Max.judge(
            verdict.error_rate,
            verdict.error_rate_interval,
            verdict.max_error_rate,
        )
    });
    verdict.finish()
}

impl Verdict {
    /// The verdict over several runs of one workload (`--repeat`), from each
    /// run's own (`(run number, verdict)`): their calls and errors pooled,
    /// the error rate judged against `max_error_rate` with the pooled
    /// Wilson interval, failed when any run failed, and each run's reasons
    /// and validity named with its number. Outages and restarts stay in
    /// each run's verdict.
    pub fn pooled(runs: &[(u32, &Verdict)], max_error_rate: f64) -> Verdict {
        let mut errors_by_kind: BTreeMap<String, u64> = BTreeMap::new();
        let mut reasons = Vec::new();
        let mut not_valid = Vec::new();
        for (i, v) in runs {
            for (k, n) in &v.errors_by_kind {
                *errors_by_kind.entry(k.clone()).or_default() += n;
            }
            if v.status == RunStatus::Failed {
                reasons.extend(v.reasons.iter().map(|r| format!("run {i}: {r}")));
            }
            not_valid.extend(v.not_valid.iter().map(|r| format!("run {i}: {r}")));
        }
        let calls: u64 = runs.iter().map(|(_, v)| v.calls).sum();
        let errors: u64 = runs.iter().map(|(_, v)| v.errors).sum();
        let status = if runs.iter().any(|(_, v)| v.status == RunStatus::Failed) {
            RunStatus::Failed
        } else if errors > 0 {
            RunStatus::WithErrors
        } else {
            RunStatus::Clean
        };
        let error_rate = (calls > 0).then(|| errors as f64 / calls as f64);
        let error_rate_interval = wilson(errors, calls);
        Verdict {
            status,
            line: String::new(),
            reasons,
            calls,
            errors,
            errors_by_kind,
            error_rate,
            max_error_rate,
            outages: Vec::new(),
            answered_until_s: None,
            server_restarts: Vec::new(),
            error_rate_interval,
            error_rate_outcome: (calls > 0)
                .then(|| Bound::Max.judge(error_rate, error_rate_interval, max_error_rate)),
            not_valid,
        }
        .finish()
    }

    /// Adds why errors above the limit fail the run, then writes the line.
    fn finish(mut self) -> Verdict {
        if self.status == RunStatus::WithErrors && self.errors_missed_limit() {
            self.reasons.push(format!(
                "{} errors are {:.1} % of the calls{}, above --max-error-rate {}",
                self.errors,
                self.error_rate.unwrap_or(0.0) * 100.0,
                percent_interval(self.error_rate_interval),
                self.max_error_rate
            ));
        }
        self.line = line(&self);
        self
    }
}

/// The end of the last success before `t`, seconds (0 when none).
fn last_success_before(calls: &[CallOutcome], t: f64) -> f64 {
    calls
        .iter()
        .filter(|c| c.error.is_none() && c.end_s <= t)
        .map(|c| c.end_s)
        .fold(0.0, f64::max)
}

/// `connect 30, stream_error 7`.
fn kinds_text(kinds: &BTreeMap<String, u64>) -> String {
    kinds
        .iter()
        .map(|(k, n)| format!("{k} {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// ` (2.8–12.5 %)`: a share's interval in percent, or nothing.
fn percent_interval(i: Option<Interval>) -> String {
    match i {
        Some(Interval {
            lo: Some(lo),
            hi: Some(hi),
        }) => format!(" ({:.1}–{:.1} %)", lo * 100.0, hi * 100.0),
        _ => String::new(),
    }
}

/// The verdict's one line, the server's restarts after it, then why the
/// run is not valid as a capacity figure.
fn line(v: &Verdict) -> String {
    let mut text = calls_line(v);
    if !v.server_restarts.is_empty() {
        let at: Vec<String> = v
            .server_restarts
            .iter()
            .map(|t| format!("{t:.1} s"))
            .collect();
        text.push_str(&format!("; the server restarted at {}", at.join(", ")));
    }
    if !v.not_valid.is_empty() {
        text.push_str(&format!(
            "; measured, but not valid as a capacity figure: {}",
            v.not_valid.join("; ")
        ));
    }
    text
}

/// The verdict's line from its calls.
fn calls_line(v: &Verdict) -> String {
    // The outage that lasted until the end is a reason already.
    let outages = |v: &Verdict| -> String {
        let parts: Vec<String> = v
            .outages
            .iter()
            .filter(|o| o.end_s.is_some())
            .map(|o| format!("outage {}", o.describe()))
            .collect();
        if parts.is_empty() {
            String::new()
        } else {
            format!("; {}", parts.join("; "))
        }
    };
    match v.status {
        RunStatus::Clean => format!("completed cleanly: {} calls, no errors", v.calls),
        RunStatus::WithErrors => format!(
            "completed with errors: {} of {} calls failed ({:.1} %{}: {}){}{}",
            v.errors,
            v.calls,
            v.error_rate.unwrap_or(0.0) * 100.0,
            percent_interval(v.error_rate_interval),
            kinds_text(&v.errors_by_kind),
            outages(v),
            match v.error_rate_outcome {
                Some(Outcome::Missed) => format!(", above --max-error-rate {}", v.max_error_rate),
                Some(Outcome::Indeterminate) => format!(
                    ", indeterminate against --max-error-rate {} (its interval straddles it)",
                    v.max_error_rate
                ),
                _ if v.error_rate_outcome.is_none() && v.over_limit() => {
                    format!(", above --max-error-rate {}", v.max_error_rate)
                }
                _ => String::new(),
            }
        ),
        RunStatus::Failed => {
            let errors = if v.errors > 0 {
                format!(
                    "; {} of {} calls failed ({})",
                    v.errors,
                    v.calls,
                    kinds_text(&v.errors_by_kind)
                )
            } else {
                String::new()
            };
            format!("failed: {}{errors}{}", v.reasons.join("; "), outages(v))
        }
    }
}

/// The verdict of a bench run from its records, its levels and the shapes
/// it could not run.
pub fn bench_verdict(
    records: &[super::RequestRecord],
    levels: &[super::LevelSummary],
    skipped: &[super::SkippedShape],
    max_error_rate: f64,
) -> Verdict {
    let calls: Vec<CallOutcome> = records
        .iter()
        .map(|r| CallOutcome {
            start_s: r.started_at,
            end_s: r.ended_at(),
            error: (!r.ok).then(|| r.error_kind.clone().unwrap_or_else(|| "unknown".into())),
        })
        .collect();
    let mut unmet: Vec<String> = skipped
        .iter()
        .map(|s| {
            format!(
                "shape {} did not fit in max_model_len {}",
                s.shape, s.max_model_len
            )
        })
        .collect();
    for l in levels.iter().filter(|l| l.successes == 0) {
        unmet.push(format!(
            "no request succeeded at {} concurrent ({})",
            l.concurrency, l.shape
        ));
    }
    let overflows = records
        .iter()
        .filter(|r| {
            !r.ok
                && r.error_kind.as_deref() == Some(ErrorKind::Http400.as_str())
                && r.error_message.as_deref().is_some_and(is_context_overflow)
        })
        .count() as u64;
    judge(
        &calls,
        &Expectations {
            unmet,
            max_error_rate,
        },
    )
    .with_not_valid(validity(levels, overflows, records.len() as u64))
}

/// Whether an error message is a server refusing a prompt longer than its
/// context (vLLM: "This model's maximum context length is N tokens";
/// llama.cpp: "exceeds the available context size").
pub fn is_context_overflow(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("maximum context length")
        || m.contains("context size")
        || m.contains("context window")
}

/// Why a bench run's figures are not valid as a capacity figure (see the
/// module documentation), one sentence each; empty when they are.
/// `overflows` of `calls` were refused for exceeding the context.
pub fn validity(levels: &[super::LevelSummary], overflows: u64, calls: u64) -> Vec<String> {
    let mut out = Vec::new();
    for l in levels {
        let name = format!("{} {}", l.shape, l.load_label());
        if let Some(r) = l.rate.as_ref().filter(|r| r.max_concurrency.is_none()) {
            let bound = LATE_SEND_MIN_S.max(LATE_SEND_SHARE / r.rate_per_s.max(1e-9));
            if let Some(lag) = r.send_lag_p95_s.filter(|lag| *lag > bound) {
                out.push(format!(
                    "the client sent {name}'s requests late (send lag P95 {:.0} ms, beyond {:.0} ms)",
                    lag * 1e3,
                    bound * 1e3
                ));
            }
        }
        if let Some(cpu) = l.client_cpu.filter(|c| *c >= CLIENT_CPU_HIGH) {
            out.push(format!(
                "the client's process used {:.0} % of a core during {name} (its own timing is part of the figures)",
                cpu * 100.0
            ));
        }
        if let Some(w) = l.steady.filter(|w| !w.used) {
            out.push(format!(
                "{name}'s steady window holds {} requests, too few to judge (ramp-up {}, drain {})",
                w.requests, w.ramp_up, w.drain
            ));
        }
    }
    out.extend(overflow_reason(overflows, calls));
    out
}

/// The reason a run is not valid when more than
/// [`CONTEXT_OVERFLOW_SHARE`] of its calls went beyond the context.
fn overflow_reason(overflows: u64, calls: u64) -> Option<String> {
    (calls > 0 && overflows as f64 > CONTEXT_OVERFLOW_SHARE * calls as f64).then(|| {
        format!(
            "{overflows} of {calls} calls ({:.1} %) were beyond the model's context, more than {:.0} %",
            overflows as f64 * 100.0 / calls as f64,
            CONTEXT_OVERFLOW_SHARE * 100.0
        )
    })
}

/// The verdict of a class from its model calls and coding requests: it
/// failed when coding requests were started and none completed.
pub fn class_verdict(
    calls: &[super::classroom_records::CallRecord],
    tasks: &[super::classroom_records::TaskRecord],
    max_error_rate: f64,
) -> Verdict {
    let outcomes: Vec<CallOutcome> = calls
        .iter()
        .map(|c| CallOutcome {
            start_s: c.started_at,
            end_s: c.ended_at(),
            error: c.error_kind.map(|k| k.as_str().to_string()),
        })
        .collect();
    let completed = tasks
        .iter()
        .filter(|t| matches!(t.outcome, super::classroom_records::TaskOutcome::Completed))
        .count();
    let mut unmet = Vec::new();
    if !tasks.is_empty() && completed == 0 {
        unmet.push(format!(
            "no coding request completed (of {} started)",
            tasks.len()
        ));
    }
    // A refusal for length (HTTP 400) is what the client compacts and
    // retries after: a call that met one, retried or not, went beyond the
    // context.
    let overflows = calls
        .iter()
        .filter(|c| {
            c.error_kind == Some(ErrorKind::Http400)
                || c.retried_kinds.contains(&ErrorKind::Http400)
        })
        .count() as u64;
    judge(
        &outcomes,
        &Expectations {
            unmet,
            max_error_rate,
        },
    )
    .with_not_valid(overflow_reason(overflows, calls.len() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(end_s: f64) -> CallOutcome {
        CallOutcome {
            start_s: end_s,
            end_s,
            error: None,
        }
    }

    fn err(end_s: f64, kind: &str) -> CallOutcome {
        CallOutcome {
            start_s: end_s,
            end_s,
            error: Some(kind.to_string()),
        }
    }

    /// Measured against a real vLLM 0.32 wedged in its shutdown: two
    /// streams sent at 8.4 s hung when the server stopped (~25 s) and were
    /// cut only at 188 s, when the process was killed. The outage starts at
    /// the last success's end (20.8 s), not at the cut.
    #[test]
    fn a_stream_cut_long_after_the_server_stopped_starts_the_outage_early() {
        let hung = |end_s: f64| CallOutcome {
            start_s: 8.4,
            end_s,
            error: Some("stream_error".into()),
        };
        let calls = [
            ok(12.2),
            ok(20.8),
            hung(188.4),
            hung(188.4),
            err(188.5, "connect"),
            err(188.6, "connect"),
        ];
        let o = outages(&calls);
        assert_eq!(o.len(), 1);
        assert_eq!((o[0].start_s, o[0].end_s, o[0].calls_lost), (20.8, None, 4));
        // A call sent after the last success starts its own outage then.
        let late = CallOutcome {
            start_s: 30.0,
            end_s: 90.0,
            error: Some("timeout".into()),
        };
        let o = outages(&[ok(20.8), late.clone(), late]);
        assert_eq!(o[0].start_s, 30.0);
    }

    fn expect(max: f64) -> Expectations {
        Expectations {
            unmet: Vec::new(),
            max_error_rate: max,
        }
    }

    #[test]
    fn a_clean_run_is_clean_and_exits_0() {
        let v = judge(&[ok(1.0), ok(2.0)], &expect(0.05));
        assert_eq!(v.status, RunStatus::Clean);
        assert_eq!(v.exit_code(), 0);
        assert_eq!(v.line, "completed cleanly: 2 calls, no errors");
        assert!(v.outages.is_empty());
    }

    #[test]
    fn a_server_that_dies_fails_the_run_from_its_first_failure() {
        // Killed at ~12 s: the calls after it fail to connect or break.
        let calls = [
            ok(3.0),
            ok(9.5),
            err(12.2, "stream_error"),
            err(12.3, "stream_error"),
            err(14.0, "connect"),
            err(20.0, "connect"),
        ];
        let v = judge(&calls, &expect(0.05));
        assert_eq!(v.status, RunStatus::Failed);
        assert_eq!(v.exit_code(), 1);
        assert_eq!(v.outages.len(), 1);
        let o = &v.outages[0];
        assert_eq!((o.start_s, o.end_s, o.calls_lost), (12.2, None, 4));
        assert_eq!(o.kinds["connect"], 2);
        assert_eq!(v.answered_until_s, Some(9.5));
        assert!(
            v.line
                .starts_with("failed: the server stopped answering at 12.2 s (4 calls lost)"),
            "{}",
            v.line
        );
        assert!(
            !v.line.contains("outage"),
            "named once, as the reason: {}",
            v.line
        );
        assert!(v.outages[0].describe().contains("until the end"));
    }

    #[test]
    fn an_outage_the_server_recovers_from_has_an_end() {
        let calls = [
            ok(1.0),
            err(5.0, "http_503"),
            err(6.0, "connect"),
            err(7.5, "connect"),
            ok(9.0),
            ok(10.0),
        ];
        let v = judge(&calls, &expect(0.9));
        assert_eq!(v.status, RunStatus::WithErrors);
        assert_eq!(v.exit_code(), 0, "50 % errors under a 90 % limit");
        assert_eq!(v.outages[0].end_s, Some(7.5));
        assert_eq!(v.outages[0].calls_lost, 3);
        let v = judge(&calls, &expect(0.05));
        assert_eq!(v.exit_code(), 1, "50 % errors over the default limit");
        assert!(v.line.contains("above --max-error-rate 0.05"), "{}", v.line);
    }

    #[test]
    fn lone_failures_and_rate_limits_are_no_outage() {
        let calls = [
            ok(1.0),
            err(2.0, "timeout"),
            ok(3.0),
            err(4.0, "http_429"),
            err(4.5, "http_429"),
            err(4.6, "http_400"),
            ok(5.0),
        ];
        let v = judge(&calls, &expect(1.0));
        assert!(v.outages.is_empty(), "{:?}", v.outages);
        assert_eq!(v.status, RunStatus::WithErrors);
        assert_eq!(v.errors, 4);
        assert_eq!(v.errors_by_kind["http_429"], 2);
    }

    #[test]
    fn unmet_expectations_fail_a_run_without_errors() {
        let v = judge(
            &[ok(1.0)],
            &Expectations {
                unmet: vec!["no coding request completed".into()],
                max_error_rate: 0.05,
            },
        );
        assert_eq!(v.status, RunStatus::Failed);
        assert_eq!(v.line, "failed: no coding request completed");
    }

    /// A class's agent call as a run's `requests.jsonl` keeps it: its first
    /// attempt sent at `started_at`, its last attempt `duration_s` long,
    /// `wait_s` from the first attempt to the end of the last; a failed one
    /// was retried four times.
    fn class_call(
        started_at: f64,
        e2e_s: f64,
        wait_s: f64,
        error: Option<&str>,
    ) -> super::super::classroom_records::CallRecord {
        let line = serde_json::json!({
            "user": 0, "session": "ses_0", "task": 0, "kind": "agent",
            "started_at": started_at, "prompt_tokens": null, "output_tokens": 0,
            "tokens_counted_by": "client", "ttft_s": null,
            "e2e_s": e2e_s, "wait_s": wait_s,
            "retries": if error.is_some() { 4 } else { 0 },
            "retried_kinds": [], "error_kind": error, "tool_calls": 0,
        });
        serde_json::from_value(line).expect("a call record")
    }

    #[test]
    fn a_retried_call_ends_when_its_last_attempt_does() {
        // The server is killed while the first agent calls stream: each is
        // retried for a minute and fails to connect; the short title calls
        // sent beside them succeeded within the first second. The agent
        // calls ended at 60 s, after every success: the outage lasts until
        // the end, from the last success.
        let connect = Some("connect");
        let calls = [
            class_call(0.12, 0.001, 60.0, connect),
            class_call(0.12, 0.36, 0.36, None),
            class_call(0.43, 0.001, 60.1, connect),
            class_call(0.45, 0.04, 0.04, None),
            class_call(0.83, 0.001, 61.3, connect),
            class_call(0.83, 0.04, 0.04, None),
        ];
        let v = class_verdict(&calls, &[], DEFAULT_MAX_ERROR_RATE);
        assert_eq!(v.outages.len(), 1, "{:?}", v.outages);
        let o = &v.outages[0];
        assert_eq!((o.end_s, o.calls_lost), (None, 3));
        assert!((o.start_s - 0.87).abs() < 1e-9, "{}", o.start_s);
        assert_eq!(v.status, RunStatus::Failed);
    }

    #[test]
    fn calls_are_read_in_the_order_they_ended() {
        // A long success that ended after the failures closes the outage.
        let calls = [err(5.0, "connect"), ok(8.0), err(6.0, "connect")];
        let o = outages(&calls);
        assert_eq!(o.len(), 1);
        assert_eq!((o[0].start_s, o[0].end_s), (5.0, Some(6.0)));
    }

    #[test]
    fn an_error_rate_near_the_limit_is_indeterminate_and_does_not_fail() {
        // 6 of 100 calls failed: 6.0 % (2.8–12.5 %) against 5 %.
        // Lone failures between successes: errors, no outage.
        let calls: Vec<CallOutcome> = (0..100)
            .map(|i| {
                if i % 16 == 5 {
                    err(f64::from(i), "http_503")
                } else {
                    ok(f64::from(i))
                }
            })
            .collect();
        let v = judge(&calls, &expect(0.05));
        assert_eq!(v.error_rate_outcome, Some(Outcome::Indeterminate));
        assert_eq!(v.exit_code(), 0, "{}", v.line);
        assert!(
            v.line
                .contains("indeterminate against --max-error-rate 0.05"),
            "{}",
            v.line
        );
        assert!(v.line.contains("(2.8–12.5 %)"), "{}", v.line);
        // 30 of 100: above the limit with its whole interval.
        let calls: Vec<CallOutcome> = (0..100)
            .map(|i| {
                if i % 10 < 3 {
                    err(f64::from(i), "timeout")
                } else {
                    ok(f64::from(i))
                }
            })
            .collect();
        let v = judge(&calls, &expect(0.05));
        assert_eq!(v.error_rate_outcome, Some(Outcome::Missed));
        assert_eq!(v.exit_code(), 1);
    }

    #[test]
    fn a_run_whose_own_figures_cannot_be_trusted_says_so_and_fails_under_strict() {
        use crate::results::records::SteadyWindow;
        use crate::results::{LevelSummary, RateFigures};
        let short = LevelSummary {
            shape: "short".into(),
            concurrency: 16,
            steady: Some(SteadyWindow {
                start_s: 30.0,
                end_s: 30.0,
                requests: 0,
                ramp_up: 16,
                drain: 16,
                used: false,
            }),
            ..Default::default()
        };
        let late = LevelSummary {
            shape: "short".into(),
            rate: Some(RateFigures {
                rate_per_s: 2.0,
                send_lag_p95_s: Some(0.080),
                ..Default::default()
            }),
            client_cpu: Some(0.97),
            ..Default::default()
        };
        let reasons = validity(&[short, late], 3, 100);
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(
            reasons[0].contains("short c16's steady window holds 0 requests"),
            "{reasons:?}"
        );
        assert!(
            reasons[1].contains("send lag P95 80 ms, beyond 50 ms"),
            "{reasons:?}"
        );
        assert!(reasons[2].contains("97 % of a core"), "{reasons:?}");
        assert!(
            reasons[3].starts_with("3 of 100 calls (3.0 %) were beyond the model's context"),
            "{reasons:?}"
        );
        assert!(validity(&[], 1, 100).is_empty(), "1 % is allowed");
        let v = judge(&[ok(1.0)], &expect(0.05)).with_not_valid(reasons);
        assert_eq!(v.exit_code(), 0);
        assert_eq!(v.strict_exit_code(), 1);
        assert!(
            v.line.contains(
                "; measured, but not valid as a capacity figure: short c16's steady window"
            ),
            "{}",
            v.line
        );
        assert!(is_context_overflow(
            "This model's maximum context length is 65536 tokens. However, you requested"
        ));
        assert!(!is_context_overflow("max_tokens must be at least 1"));
    }
}
