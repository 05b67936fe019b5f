//! The entries of [`super::LEVEL_METRICS`]: one per `summary.csv` column.

use super::LevelSummary;
use super::{Better, IntervalMethod, LevelMetric, Reading, Shown, Source, Unit, View};

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
        short: label,
        shown: Shown::of(unit),
        views: &[],
        sparse: false,
        interval: None,
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
        short: label,
        shown: Shown::Text,
        views: &[],
        sparse: false,
        interval: None,
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

use self::{Better as B, IntervalMethod as I, Source as S, Unit as U, View as V};

/// In the level table, `compare` and the stderr table.
const TABLE_COMPARE_PROGRESS: &[View] = &[V::LevelTable, V::Compare, V::Progress];
/// In the level table and the stderr table.
const TABLE_PROGRESS: &[View] = &[V::LevelTable, V::Progress];

/// Every figure of a bench level, in `summary.csv` column order.
pub const LEVEL_METRICS: [LevelMetric; 48] = [
    text("shape", "shape", "Prompt shape", S::Level, |l| {
        l.shape.clone()
    })
    .in_views(&[V::ThroughputTable, V::Progress]),
    metric(
        "concurrency",
        "Concurrency",
        U::Count,
        B::Neither,
        S::Level,
        // A rate level without --max-concurrency has no N.
        |l| (l.rate.is_none() || l.concurrency > 0).then(|| f64::from(l.concurrency)),
    )
    .in_views(&[V::LevelTable, V::ThroughputTable, V::Progress]),
    metric(
        "rate_per_s",
        "Rate",
        U::RequestsPerSecond,
        B::Neither,
        S::Level,
        |l| l.rate.as_ref().map(|r| r.rate_per_s),
    )
    .in_field("rate")
    .sparse()
    .in_views(&[V::LevelTable, V::ThroughputTable, V::Progress]),
    text("arrival", "rate", "Arrival", S::Level, |l| {
        l.rate
            .as_ref()
            .map(|r| r.arrival.clone())
            .unwrap_or_default()
    })
    .sparse(),
    text("ended_by", "ended_by", "Ended by", S::Level, ended_by),
    metric(
        "requests",
        "Requests",
        U::Count,
        B::Neither,
        S::Requests,
        |l| Some(l.requests as f64),
    )
    .in_views(&[V::LevelTable]),
    metric(
        "successes",
        "Successful requests",
        U::Count,
        B::Neither,
        S::Requests,
        |l| Some(l.successes as f64),
    )
    .with_short("OK")
    .in_views(TABLE_PROGRESS),
    metric("errors", "Errors", U::Count, B::Lower, S::Requests, |l| {
        Some(l.error_count() as f64)
    })
    .in_views(TABLE_COMPARE_PROGRESS),
    percent(
        "error_rate_pct",
        "error_rate",
        "Error rate",
        B::Lower,
        |l| l.error_rate,
    )
    .with_interval(I::Wilson)
    .with_source(S::Requests)
    .in_views(&[V::LevelTable, V::Compare]),
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
    )
    .with_short("Mean input")
    .in_views(&[V::ThroughputTable]),
    metric(
        "mean_output_tokens",
        "Mean output tokens",
        U::Tokens,
        B::Neither,
        S::Successes,
        |l| l.mean_output_tokens,
    )
    .with_short("Mean output")
    .in_views(&[V::ThroughputTable]),
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
    )
    .in_views(&[V::ThroughputTable]),
    metric(
        "requests_per_s",
        "Successful requests per second",
        U::RequestsPerSecond,
        B::Higher,
        S::Successes,
        |l| Some(l.requests_per_s),
    )
    .with_interval(I::BatchMeans)
    .with_short("Request rate")
    .in_views(&[V::ThroughputTable, V::Progress]),
    metric(
        "offered_rate_per_s",
        "Offered rate",
        U::RequestsPerSecond,
        B::Neither,
        S::Level,
        |l| l.rate.as_ref().and_then(|r| r.offered_rate_per_s),
    )
    .in_field("rate")
    .sparse()
    .in_views(&[V::ThroughputTable]),
    metric(
        "achieved_rate_per_s",
        "Sent rate",
        U::RequestsPerSecond,
        B::Neither,
        S::Level,
        |l| l.rate.as_ref().and_then(|r| r.achieved_rate_per_s),
    )
    .in_field("rate")
    .sparse()
    .in_views(&[V::ThroughputTable]),
    metric(
        "goodput_per_s",
        "Goodput",
        U::RequestsPerSecond,
        B::Higher,
        S::Requests,
        |l| l.goodput_per_s,
    )
    .with_interval(I::BatchMeans)
    .in_views(&[V::LevelTable, V::Compare, V::Progress])
    .sparse(),
    percent("slo_share_pct", "slo_share", "SLO met", B::Higher, |l| {
        l.slo_share
    })
    .with_interval(I::Wilson)
    .with_source(S::Requests)
    .in_views(&[V::LevelTable, V::Compare, V::Progress, V::ProgressInterval])
    .sparse(),
    metric(
        "output_tok_per_s",
        "Output",
        U::TokensPerSecond,
        B::Higher,
        S::Successes,
        |l| Some(l.output_tok_per_s),
    )
    .with_interval(I::BatchMeans)
    .in_views(&[
        V::LevelTable,
        V::ThroughputTable,
        V::Compare,
        V::Progress,
        V::ProgressInterval,
    ]),
    metric(
        "total_tok_per_s",
        "Total throughput",
        U::TokensPerSecond,
        B::Higher,
        S::Successes,
        |l| Some(l.total_tok_per_s),
    )
    .with_interval(I::BatchMeans)
    .with_short("Total")
    .in_views(&[V::ThroughputTable, V::Compare]),
    metric(
        "ttft_p50_s",
        "TTFT P50",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.ttft_p50_s,
    )
    .with_interval(I::OrderStatistics)
    .in_views(TABLE_COMPARE_PROGRESS),
    metric(
        "ttft_p95_s",
        "TTFT P95",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.ttft_p95_s,
    )
    .with_interval(I::OrderStatistics)
    .in_views(&[V::LevelTable, V::Compare, V::Progress, V::ProgressInterval]),
    metric(
        "ttft_p99_s",
        "TTFT P99",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.ttft_p99_s,
    )
    .with_interval(I::OrderStatistics)
    .in_views(TABLE_COMPARE_PROGRESS),
    metric(
        "e2e_p50_s",
        "E2E latency P50",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.e2e_p50_s,
    )
    .with_interval(I::OrderStatistics)
    .with_short("E2E P50")
    .in_views(TABLE_COMPARE_PROGRESS),
    metric(
        "e2e_p95_s",
        "E2E latency P95",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.e2e_p95_s,
    )
    .with_interval(I::OrderStatistics)
    .with_short("E2E P95")
    .in_views(TABLE_COMPARE_PROGRESS),
    metric(
        "tpot_mean_s",
        "Mean time per output token",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.tpot_mean_s,
    )
    .with_interval(I::BatchMeans)
    .with_short("TPOT")
    .with_shown(Shown::Millis)
    .in_views(TABLE_COMPARE_PROGRESS),
    metric(
        "ttft_mean_s",
        "TTFT mean",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.ttft_mean_s,
    )
    .with_interval(I::BatchMeans),
    metric(
        "e2e_mean_s",
        "E2E latency mean",
        U::Seconds,
        B::Lower,
        S::Successes,
        |l| l.e2e_mean_s,
    )
    .with_interval(I::BatchMeans),
    metric(
        "send_lag_p50_s",
        "Send lag P50",
        U::Seconds,
        B::Lower,
        S::Requests,
        |l| l.rate.as_ref().and_then(|r| r.send_lag_p50_s),
    )
    .with_interval(I::OrderStatistics)
    .in_field("rate")
    .sparse(),
    metric(
        "send_lag_p95_s",
        "Send lag P95",
        U::Seconds,
        B::Lower,
        S::Requests,
        |l| l.rate.as_ref().and_then(|r| r.send_lag_p95_s),
    )
    .with_interval(I::OrderStatistics)
    .in_field("rate")
    .sparse()
    .in_views(&[V::LevelTable, V::Progress]),
    metric(
        "send_lag_max_s",
        "Send lag max",
        U::Seconds,
        B::Lower,
        S::Requests,
        |l| l.rate.as_ref().and_then(|r| r.send_lag_max_s),
    )
    .in_field("rate")
    .sparse(),
    text("saturated", "rate", "Saturated", S::Level, |l| {
        match &l.rate {
            Some(r) if r.saturated => "yes".to_string(),
            // Queued for stretches as long as the level: its tail's upper
            // bounds are open.
            Some(r) if r.queued() => "queued".to_string(),
            Some(_) => "no".to_string(),
            None => String::new(),
        }
    })
    .in_views(&[V::LevelTable, V::Progress])
    .sparse(),
    metric(
        "preemptions",
        "Preemptions",
        U::Count,
        B::Lower,
        S::Server,
        |l| l.preemptions,
    )
    .in_views(&[V::LevelTable, V::Compare]),
    percent(
        "peak_kv_usage_pct",
        "peak_kv_usage",
        "Peak KV-cache usage",
        B::Neither,
        |l| l.peak_kv_usage,
    )
    .with_short("Peak KV")
    .in_views(TABLE_COMPARE_PROGRESS),
    metric(
        "peak_running",
        "Peak running requests",
        U::Count,
        B::Neither,
        S::Server,
        |l| l.peak_running,
    )
    .with_short("Peak running")
    .in_views(TABLE_PROGRESS),
    metric(
        "peak_waiting",
        "Peak waiting requests",
        U::Count,
        B::Lower,
        S::Server,
        |l| l.peak_waiting,
    )
    .with_short("Peak waiting")
    .in_views(TABLE_PROGRESS),
    percent(
        "prefix_hit_rate_pct",
        "prefix_hit_rate",
        "Prefix-cache hit rate",
        B::Higher,
        |l| l.prefix_hit_rate,
    )
    .with_short("Prefix-cache hits")
    .in_views(&[V::ThroughputTable]),
    metric(
        "failed_scrapes",
        "Failed /metrics scrapes",
        U::Count,
        B::Lower,
        S::Server,
        |l| l.failed_scrapes.map(|n| n as f64),
    ),
    metric(
        "steady_start_s",
        "Steady window start",
        U::Seconds,
        B::Neither,
        S::Level,
        |l| l.steady.map(|w| w.start_s),
    )
    .in_field("steady")
    .sparse(),
    metric(
        "steady_end_s",
        "Steady window end",
        U::Seconds,
        B::Neither,
        S::Level,
        |l| l.steady.map(|w| w.end_s),
    )
    .in_field("steady")
    .sparse(),
    metric(
        "steady_requests",
        "Requests in the steady window",
        U::Count,
        B::Neither,
        S::Level,
        |l| l.steady.map(|w| w.requests as f64),
    )
    .in_field("steady")
    .sparse(),
    metric(
        "steady_ramp_up",
        "Ramp-up requests",
        U::Count,
        B::Neither,
        S::Level,
        |l| l.steady.map(|w| w.ramp_up as f64),
    )
    .in_field("steady")
    .sparse(),
    metric(
        "steady_drain",
        "Drain requests",
        U::Count,
        B::Neither,
        S::Level,
        |l| l.steady.map(|w| w.drain as f64),
    )
    .in_field("steady")
    .sparse(),
    text(
        "steady_used",
        "steady",
        "Figures over the steady window",
        S::Level,
        |l| match l.steady {
            Some(w) if w.used => "yes".to_string(),
            Some(_) => "no".to_string(),
            None => String::new(),
        },
    )
    .sparse(),
    percent(
        "client_cpu_pct",
        "client_cpu",
        "Client CPU (of one core)",
        B::Neither,
        |l| l.client_cpu,
    )
    .with_source(S::Level)
    .sparse(),
];
