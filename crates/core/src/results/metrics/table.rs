//! The entries of [`super::LEVEL_METRICS`] (a table apart from the types
//! that describe it, to keep each file short).

use super::LevelSummary;
use super::{Better, LevelMetric, Reading, Source, Unit};

/// Failed requests of a level, all kinds.
fn error_count(l: &LevelSummary) -> u64 {
    l.errors.values().map(|g| g.count).sum()
}

/// `kind:count` pairs separated by `;`, in kind order.
fn error_kinds(l: &LevelSummary) -> String {
    l.errors
        .iter()
        .map(|(k, g)| format!("{k}:{}", g.count))
        .collect::<Vec<_>>()
        .join(";")
}

/// `ended_by` as written in JSON: `requests`, `duration`, `interrupted`.
fn ended_by(l: &LevelSummary) -> String {
    serde_json::to_value(l.ended_by)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default()
}

const fn metric(
    column: &'static str,
    label: &'static str,
    unit: Unit,
    better: Better,
    source: Source,
    read: fn(&LevelSummary) -> Option<f64>,
) -> LevelMetric {
    LevelMetric {
        column,
        field: column,
        label,
        unit,
        better,
        source,
        read: Reading::Number(read),
    }
}

const fn text(
    column: &'static str,
    field: &'static str,
    label: &'static str,
    source: Source,
    read: fn(&LevelSummary) -> String,
) -> LevelMetric {
    LevelMetric {
        column,
        field,
        label,
        unit: Unit::None,
        better: Better::Neither,
        source,
        read: Reading::Text(read),
    }
}

/// A fraction shown as percent in `<field>_pct`.
const fn percent(
    column: &'static str,
    field: &'static str,
    label: &'static str,
    better: Better,
    read: fn(&LevelSummary) -> Option<f64>,
) -> LevelMetric {
    LevelMetric {
        field,
        ..metric(column, label, Unit::Fraction, better, Source::Server, read)
    }
}

use self::{Better as B, Source as S, Unit as U};

/// Every figure of a bench level, in `summary.csv` column order.
pub const LEVEL_METRICS: [LevelMetric; 30] = [
    text("shape", "shape", "Prompt shape", S::Level, |l| {
        l.shape.clone()
    }),
    metric(
        "concurrency",
        "Concurrency",
        U::Count,
        B::Neither,
        S::Level,
        |l| Some(f64::from(l.concurrency)),
    ),
    text("ended_by", "ended_by", "Ended by", S::Level, ended_by),
    metric(
        "requests",
        "Requests",
        U::Count,
        B::Neither,
        S::Requests,
        |l| Some(l.requests as f64),
    ),
    metric(
        "successes",
        "Successful requests",
        U::Count,
        B::Neither,
        S::Requests,
        |l| Some(l.successes as f64),
    ),
    metric("errors", "Errors", U::Count, B::Lower, S::Requests, |l| {
        Some(error_count(l) as f64)
    }),
    text(
        "error_kinds",
        "errors",
        "Errors by kind",
        S::Requests,
        error_kinds,
    ),
    metric(
        "abandoned",
        "Abandoned requests",
        U::Count,
        B::Neither,
        S::Requests,
        |l| Some(l.abandoned as f64),
    ),
    metric(
        "mean_input_tokens",
        "Mean input tokens",
        U::Tokens,
        B::Neither,
        S::Successes,
        |l| l.mean_input_tokens,
    ),
    metric(
        "mean_output_tokens",
        "Mean output tokens",
        U::Tokens,
        B::Neither,
        S::Successes,
        |l| l.mean_output_tokens,
    ),
    text(
        "tokens_client_counted",
        "tokens_client_counted",
        "Tokens counted by the client",
        S::Requests,
        |l| l.tokens_client_counted.to_string(),
    ),
    metric(
        "started_at_s",
        "Level start",
        U::Seconds,
        B::Neither,
        S::Level,
        |l| Some(l.started_at_s),
    ),
    metric(
        "wall_time_s",
        "Wall time",
        U::Seconds,
        B::Neither,
        S::Level,
        |l| Some(l.wall_time_s),
    ),
    metric(
        "requests_per_s",
        "Requests per second",
        U::RequestsPerSecond,
        B::Higher,
        S::Successes,
        |l| Some(l.requests_per_s),
    ),
    metric(
        "output_tok_per_s",
        "Output",
        U::TokensPerSecond,
        B::Higher,
        S::Successes,
        |l| Some(l.output_tok_per_s),
    ),
    metric(
        "total_tok_per_s",
        "Total throughput",
        U::TokensPerSecond,
        B::Higher,
        S::Successes,
        |l| Some(l.total_tok_per_s),
    ),
    metric(
        "ttft_p50_s",
        "TTFT P50",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.ttft_p50_s,
    ),
    metric(
        "ttft_p95_s",
        "TTFT P95",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.ttft_p95_s,
    ),
    metric(
        "ttft_p99_s",
        "TTFT P99",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.ttft_p99_s,
    ),
    metric(
        "e2e_p50_s",
        "E2E latency P50",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.e2e_p50_s,
    ),
    metric(
        "e2e_p95_s",
        "E2E latency P95",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.e2e_p95_s,
    ),
    metric(
        "tpot_mean_s",
        "Mean time per output token",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.tpot_mean_s,
    ),
    metric(
        "ttft_mean_s",
        "TTFT mean",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.ttft_mean_s,
    ),
    metric(
        "e2e_mean_s",
        "E2E latency mean",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.e2e_mean_s,
    ),
    metric(
        "preemptions",
        "Preemptions",
        U::Count,
        B::Lower,
        S::Server,
        |l| l.preemptions,
    ),
    percent(
        "peak_kv_usage_pct",
        "peak_kv_usage",
        "Peak KV-cache usage",
        B::Neither,
        |l| l.peak_kv_usage,
    ),
    metric(
        "peak_running",
        "Peak running requests",
        U::Count,
        B::Neither,
        S::Server,
        |l| l.peak_running,
    ),
    metric(
        "peak_waiting",
        "Peak waiting requests",
        U::Count,
        B::Lower,
        S::Server,
        |l| l.peak_waiting,
    ),
    percent(
        "prefix_hit_rate_pct",
        "prefix_hit_rate",
        "Prefix-cache hit rate",
        B::Higher,
        |l| l.prefix_hit_rate,
    ),
    metric(
        "failed_scrapes",
        "Failed /metrics scrapes",
        U::Count,
        B::Lower,
        S::Server,
        |l| l.failed_scrapes.map(|n| n as f64),
    ),
];
