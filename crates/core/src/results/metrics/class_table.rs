//! The entries of [`super::CLASS_METRICS`]: the figures of a class, in the
//! order of its summary table (the GB10 measurements' table, then the rest).

use super::{Better, ClassMetric, ClassroomSummary, IntervalMethod, Shown, Source, Unit, View};
use crate::openai::ErrorKind;

use self::{Better as B, IntervalMethod as I, Source as S, Unit as U, View as V};

/// In the class summary table and `compare`.
const SUMMARY_COMPARE: &[View] = &[V::ClassSummary, V::Compare];
/// In the class summary table only.
const SUMMARY: &[View] = &[V::ClassSummary];

/// Server errors of a class: model calls whose final outcome, after
/// retries, was HTTP 503 (`http_503`) or another 5xx (`http_5xx`). A call
/// that got a 503 and then succeeded on a retry is not one; nor is a call
/// that failed for good in another way (429, time-out, connection, a
/// mid-stream error), though those are errors of the class.
pub fn server_errors(summary: &ClassroomSummary) -> u64 {
    summary
        .errors_by_kind
        .iter()
        .filter(|(k, _)| matches!(k, ErrorKind::Http503 | ErrorKind::Http5xx))
        .map(|(_, n)| *n)
        .sum()
}

/// The error rate of a class: model calls whose final outcome, after
/// retries, was a failure of any kind (refused, server errors, time-outs,
/// lost connections, mid-stream errors), over all its model calls, a
/// fraction; `None` without a call.
pub fn error_rate(summary: &ClassroomSummary) -> Option<f64> {
    (summary.requests > 0).then(|| summary.errors as f64 / summary.requests as f64)
}

/// Refused calls of a class: model calls whose final outcome was HTTP 400,
/// 401 or another 4xx but 429 (for vLLM mostly a prompt longer than
/// `max_model_len`; else a bad key, model or parameter). The server never
/// worked on them, so no speed figure says anything about them.
pub fn refused_calls(summary: &ClassroomSummary) -> u64 {
    summary
        .errors_by_kind
        .iter()
        .filter(|(k, _)| {
            matches!(
                k,
                ErrorKind::Http400 | ErrorKind::Http401 | ErrorKind::Http4xx
            )
        })
        .map(|(_, n)| *n)
        .sum()
}

/// Whether the server refused half or more of a class's model calls
/// ([`refused_calls`] against `requests`): the class did not run, and a
/// limit found in its figures would be a false diagnosis.
pub fn mostly_refused(summary: &ClassroomSummary) -> bool {
    summary.requests > 0 && refused_calls(summary) * 2 >= summary.requests
}

#[allow(clippy::too_many_arguments)]
const fn class(
    key: &'static str,
    label: &'static str,
    row: &'static str,
    unit: Unit,
    better: Better,
    source: Source,
    views: &'static [View],
    read: fn(&ClassroomSummary) -> Option<f64>,
) -> ClassMetric {
    ClassMetric {
        key,
        label,
        row,
        unit,
        better,
        source,
        shown: Shown::of(unit),
        views,
        interval: None,
        read,
    }
}

impl ClassMetric {
    /// The entry with another [`Shown`].
    const fn with_shown(self, shown: Shown) -> ClassMetric {
        ClassMetric { shown, ..self }
    }

    /// The entry with its interval method.
    const fn with_interval(self, method: IntervalMethod) -> ClassMetric {
        ClassMetric {
            interval: Some(method),
            ..self
        }
    }
}

const CALLS_ROW: &str = "Model requests / failed / retries after 429 or 503";
const TTFT_ROW: &str = "Time to first token, P50 / P95";
const TASK_ROW: &str = "Time to complete a coding request, P50 / P95";
const MODEL_TIME_ROW: &str = "Model time per coding request, P50 / P95";
const REQUEST_TIME_ROW: &str = "Request time, P50 / P95";
const COMPLETED_ROW: &str = "Coding requests completed / per hour";
const PROMPT_ROW: &str = "Prompt tokens, P50 / P95 / max";
const TOOLS_ROW: &str = "Compactions / tool errors";
const PEAKS_ROW: &str = "Peak running / waiting requests";
const PREEMPTIONS_ROW: &str = "Preemptions / server errors";

/// Every figure of a class, in the order of its summary table.
pub const CLASS_METRICS: [ClassMetric; 28] = [
    class(
        "students",
        // Simulated, or recorded sessions replayed as users.
        "Students",
        "Students",
        U::Count,
        B::Neither,
        S::Level,
        SUMMARY,
        |m| Some(m.users as f64),
    ),
    class(
        "requests",
        "Model requests",
        CALLS_ROW,
        U::Count,
        B::Neither,
        S::Requests,
        SUMMARY,
        |m| Some(m.requests as f64),
    ),
    class(
        "failed_requests",
        "Failed requests",
        CALLS_ROW,
        U::Count,
        B::Lower,
        S::Requests,
        SUMMARY_COMPARE,
        |m| Some(m.errors as f64),
    ),
    class(
        "error_rate",
        "Error rate",
        "Error rate",
        U::Fraction,
        B::Lower,
        S::Requests,
        &[],
        error_rate,
    ),
    class(
        "retries_after_429_503",
        "Retries after 429/503",
        CALLS_ROW,
        U::Count,
        B::Lower,
        S::Requests,
        SUMMARY_COMPARE,
        |m| Some(m.retries_after_429_503 as f64),
    ),
    class(
        "server_output_tok_per_s",
        "Server output",
        "Server output, steady state",
        U::TokensPerSecond,
        B::Higher,
        S::Server,
        SUMMARY_COMPARE,
        |m| m.server.output_tokens_per_s,
    )
    .with_interval(I::BatchMeans),
    class(
        "ttft_p50_s",
        "TTFT P50",
        TTFT_ROW,
        U::Seconds,
        B::Lower,
        S::Successes,
        SUMMARY_COMPARE,
        |m| m.ttft_p50_s,
    )
    .with_interval(I::OrderStatistics),
    class(
        "ttft_p95_s",
        "TTFT P95",
        TTFT_ROW,
        U::Seconds,
        B::Lower,
        S::Successes,
        SUMMARY_COMPARE,
        |m| m.ttft_p95_s,
    )
    .with_interval(I::OrderStatistics),
    class(
        "output_speed_p50_tok_per_s",
        "Output speed per user P50",
        "Output speed per user, P50",
        U::TokensPerSecond,
        B::Higher,
        S::Successes,
        SUMMARY_COMPARE,
        |m| m.output_speed_p50_tok_s,
    )
    .with_interval(I::OrderStatistics),
    class(
        "coding_request_p50_s",
        "Coding request P50",
        TASK_ROW,
        U::Seconds,
        B::Lower,
        S::Successes,
        SUMMARY_COMPARE,
        |m| m.task_time_p50_s,
    )
    .with_interval(I::OrderStatistics)
    .with_shown(Shown::Minutes),
    class(
        "coding_request_p95_s",
        "Coding request P95",
        TASK_ROW,
        U::Seconds,
        B::Lower,
        S::Successes,
        SUMMARY_COMPARE,
        |m| m.task_time_p95_s,
    )
    .with_interval(I::OrderStatistics)
    .with_shown(Shown::Minutes),
    class(
        "model_time_p50_s",
        "Model time P50",
        MODEL_TIME_ROW,
        U::Seconds,
        B::Lower,
        S::Successes,
        SUMMARY,
        |m| m.model_time_p50_s,
    )
    .with_interval(I::OrderStatistics),
    class(
        "model_time_p95_s",
        "Model time P95",
        MODEL_TIME_ROW,
        U::Seconds,
        B::Lower,
        S::Successes,
        SUMMARY,
        |m| m.model_time_p95_s,
    )
    .with_interval(I::OrderStatistics),
    class(
        "request_time_p50_s",
        "Request time P50",
        REQUEST_TIME_ROW,
        U::Seconds,
        B::Lower,
        S::Successes,
        SUMMARY,
        |m| m.request_time_p50_s,
    )
    .with_interval(I::OrderStatistics),
    class(
        "request_time_p95_s",
        "Request time P95",
        REQUEST_TIME_ROW,
        U::Seconds,
        B::Lower,
        S::Successes,
        SUMMARY,
        |m| m.request_time_p95_s,
    )
    .with_interval(I::OrderStatistics),
    class(
        "completed",
        "Coding requests completed",
        COMPLETED_ROW,
        U::Count,
        B::Higher,
        S::Requests,
        SUMMARY_COMPARE,
        |m| Some(m.completed as f64),
    ),
    class(
        "completed_per_hour",
        "Coding requests per hour",
        COMPLETED_ROW,
        U::Count,
        B::Higher,
        S::Requests,
        SUMMARY,
        |m| m.completed_per_hour,
    )
    .with_interval(I::Poisson),
    class(
        "prompt_tokens_p50",
        "Prompt tokens P50",
        PROMPT_ROW,
        U::Tokens,
        B::Neither,
        S::Requests,
        SUMMARY,
        |m| m.prompt_tokens_p50,
    )
    .with_interval(I::OrderStatistics),
    class(
        "prompt_tokens_p95",
        "Prompt tokens P95",
        PROMPT_ROW,
        U::Tokens,
        B::Neither,
        S::Requests,
        SUMMARY,
        |m| m.prompt_tokens_p95,
    )
    .with_interval(I::OrderStatistics),
    class(
        "prompt_tokens_max",
        "Prompt tokens max",
        PROMPT_ROW,
        U::Tokens,
        B::Neither,
        S::Requests,
        SUMMARY,
        |m| m.prompt_tokens_max.map(|n| n as f64),
    ),
    class(
        "compactions",
        "Compactions",
        TOOLS_ROW,
        U::Count,
        B::Neither,
        S::Requests,
        SUMMARY,
        |m| Some(m.compactions as f64),
    ),
    class(
        "tool_errors",
        "Tool errors",
        TOOLS_ROW,
        U::Count,
        B::Lower,
        S::Requests,
        SUMMARY,
        |m| Some(m.tool_errors as f64),
    ),
    class(
        "peak_running",
        "Peak running requests",
        PEAKS_ROW,
        U::Count,
        B::Neither,
        S::Server,
        SUMMARY,
        |m| m.server.peak_running,
    ),
    class(
        "peak_waiting",
        "Peak waiting requests",
        PEAKS_ROW,
        U::Count,
        B::Lower,
        S::Server,
        SUMMARY_COMPARE,
        |m| m.server.peak_waiting,
    ),
    class(
        "peak_kv_usage",
        "Peak KV-cache usage",
        "Peak KV cache usage",
        U::Fraction,
        B::Neither,
        S::Server,
        SUMMARY_COMPARE,
        |m| m.server.peak_kv_cache_usage,
    ),
    class(
        "preemptions",
        "Preemptions",
        PREEMPTIONS_ROW,
        U::Count,
        B::Lower,
        S::Server,
        SUMMARY_COMPARE,
        |m| m.server.preemptions.map(|n| n as f64),
    ),
    class(
        "server_errors",
        "Server errors",
        PREEMPTIONS_ROW,
        U::Count,
        B::Lower,
        S::Requests,
        SUMMARY_COMPARE,
        |m| Some(server_errors(m) as f64),
    ),
    class(
        "prefix_hit_rate",
        "Prefix-cache hit rate",
        "Prefix-cache hit rate",
        U::Fraction,
        B::Higher,
        S::Server,
        SUMMARY_COMPARE,
        |m| m.server.prefix_cache_hit_rate,
    ),
];
