//! The figures of a bench level, defined once.
//!
//! [`LEVEL_METRICS`] holds one [`LevelMetric`] per column of `summary.csv`,
//! in column order: its name, the `summary.json` field it comes from, a
//! label for people, its [`Unit`], which direction is better, where it is
//! measured and how to read it from a [`LevelSummary`]. `summary.csv`
//! ([`super::csv`]) writes its header and rows from this table, and the
//! capacity suite's `[[targets.bench]]` keys
//! (`BENCH_TARGET_KEYS` in `capacity::targets`) name entries of it, so
//! their bound, unit, label and figure come from here too. Adding a figure
//! is one entry here (and, for a target, its key in that list).

use super::records::LevelSummary;

/// The unit of a level figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// Seconds (the column name ends in `_s`).
    Seconds,
    /// Tokens per second of level wall time (`_per_s`).
    TokensPerSecond,
    /// Requests per second of level wall time (`_per_s`).
    RequestsPerSecond,
    /// Tokens: a mean count per request.
    Tokens,
    /// A count: requests, preemptions, scrapes, requests in flight.
    Count,
    /// A fraction in `[0, 1]`; `summary.csv` shows it as percent, in a
    /// column named `<field>_pct`.
    Fraction,
    /// No unit: a name, a yes/no flag or a list (shape, `ended_by`,
    /// `error_kinds`).
    None,
}

impl Unit {
    /// The unit written after a number for people: `s`, `tok/s`, `req/s`,
    /// `tokens`, or empty for counts, fractions and text.
    pub fn symbol(self) -> &'static str {
        match self {
            Unit::Seconds => "s",
            Unit::TokensPerSecond => "tok/s",
            Unit::RequestsPerSecond => "req/s",
            Unit::Tokens => "tokens",
            Unit::Count | Unit::Fraction | Unit::None => "",
        }
    }
}

/// Which direction of a figure is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    /// Lower is better (latencies, errors): a target on it is a ceiling.
    Lower,
    /// Higher is better (throughput): a target on it is a floor.
    Higher,
    /// Neither: the figure describes the level or the load (shape,
    /// concurrency, token counts, peaks of occupancy).
    Neither,
}

/// Where a level figure is measured, which says why it may be missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Describes the level itself: shape, concurrency, start, wall time.
    Level,
    /// Counted over every finished request of the level.
    Requests,
    /// Measured on the successful requests; an optional figure is absent
    /// when none succeeded.
    Successes,
    /// From the server's `/metrics` over the level; absent without
    /// `/metrics`, never zero.
    Server,
}

/// How a figure is read from a [`LevelSummary`].
#[derive(Debug, Clone, Copy)]
pub enum Reading {
    /// A number in the metric's [`Unit`] (a fraction for
    /// [`Unit::Fraction`]); `None` when not measured (an empty CSV cell).
    Number(fn(&LevelSummary) -> Option<f64>),
    /// Text, written to the CSV as it is (quoted when it needs to be).
    Text(fn(&LevelSummary) -> String),
}

/// One figure of a bench level: a column of `summary.csv`.
#[derive(Debug, Clone, Copy)]
pub struct LevelMetric {
    /// The `summary.csv` column, with its unit suffix: `ttft_p95_s`,
    /// `peak_kv_usage_pct`. A `[[targets.bench]]` key is this name.
    pub column: &'static str,
    /// The field of a level in `summary.json` the figure comes from: the
    /// column's name, except `<field>_pct` columns (`peak_kv_usage`) and
    /// `error_kinds` (from the `errors` map).
    pub field: &'static str,
    /// What the figure is, for people: `TTFT P95` (capacity messages and
    /// verdicts use it).
    pub label: &'static str,
    /// The unit of the number [`LevelMetric::read`] gives.
    pub unit: Unit,
    /// Which direction is better.
    pub better: Better,
    /// Where it is measured.
    pub source: Source,
    /// How to read it from a level.
    pub read: Reading,
}

impl LevelMetric {
    /// The figure of `level` in [`LevelMetric::unit`] (a fraction for
    /// [`Unit::Fraction`]); `None` when not measured or not a number.
    pub fn number(&self, level: &LevelSummary) -> Option<f64> {
        match self.read {
            Reading::Number(read) => read(level),
            Reading::Text(_) => None,
        }
    }

    /// The metric as named in capacity trial names: the column without its
    /// `_s` suffix for seconds (`ttft_p95`), the column otherwise
    /// (`output_tok_per_s`, `errors`).
    pub fn trial_name(&self) -> &'static str {
        match self.unit {
            Unit::Seconds => self.column.strip_suffix("_s").unwrap_or(self.column),
            _ => self.column,
        }
    }
}

/// The metric of a `summary.csv` column, if there is one.
pub fn level_metric(column: &str) -> Option<&'static LevelMetric> {
    LEVEL_METRICS.iter().find(|m| m.column == column)
}

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
pub const LEVEL_METRICS: [LevelMetric; 28] = [
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

#[cfg(test)]
mod tests {
    use std::collections::{BTreeMap, HashSet};

    use super::*;
    use crate::results::{ErrorGroup, LevelEnd, SUMMARY_CSV_COLUMNS};

    fn full_level() -> LevelSummary {
        LevelSummary {
            shape: "short".into(),
            concurrency: 4,
            ended_by: LevelEnd::Requests,
            requests: 5,
            successes: 4,
            errors: BTreeMap::from([(
                "timeout".to_string(),
                ErrorGroup {
                    count: 1,
                    sample_message: "late".into(),
                },
            )]),
            abandoned: 0,
            mean_input_tokens: Some(512.0),
            mean_output_tokens: Some(64.0),
            tokens_client_counted: false,
            started_at_s: 1.0,
            wall_time_s: 2.0,
            requests_per_s: 2.0,
            output_tok_per_s: 128.0,
            total_tok_per_s: 1152.0,
            ttft_p50_s: Some(0.1),
            ttft_p95_s: Some(0.2),
            ttft_p99_s: Some(0.3),
            e2e_p50_s: Some(1.0),
            e2e_p95_s: Some(1.5),
            tpot_mean_s: Some(0.01),
            preemptions: Some(0.0),
            peak_kv_usage: Some(0.5),
            peak_running: Some(4.0),
            peak_waiting: Some(0.0),
            prefix_hit_rate: Some(0.25),
            failed_scrapes: Some(0),
            time_split: None,
        }
    }

    #[test]
    fn every_csv_column_has_exactly_one_metric() {
        let columns: Vec<&str> = LEVEL_METRICS.iter().map(|m| m.column).collect();
        assert_eq!(columns, SUMMARY_CSV_COLUMNS);
        let unique: HashSet<&str> = columns.iter().copied().collect();
        assert_eq!(unique.len(), columns.len(), "a column defined twice");
        for column in SUMMARY_CSV_COLUMNS {
            let n = LEVEL_METRICS.iter().filter(|m| m.column == column).count();
            assert_eq!(n, 1, "{column}");
            assert_eq!(level_metric(column).map(|m| m.column), Some(column));
        }
        assert!(level_metric("ttft").is_none());
    }

    #[test]
    fn names_carry_their_units_and_fields_exist_in_json() {
        let json = serde_json::to_value(full_level()).expect("json");
        for m in &LEVEL_METRICS {
            assert!(json.get(m.field).is_some(), "{} has no field", m.field);
            match m.unit {
                Unit::Seconds => assert!(m.column.ends_with("_s"), "{}", m.column),
                Unit::TokensPerSecond | Unit::RequestsPerSecond => {
                    assert!(m.column.ends_with("_per_s"), "{}", m.column)
                }
                Unit::Fraction => assert_eq!(m.column, format!("{}_pct", m.field)),
                _ => {}
            }
            if m.unit != Unit::Fraction && m.column != "error_kinds" {
                assert_eq!(m.column, m.field);
            }
            let is_text = matches!(m.read, Reading::Text(_));
            assert_eq!(is_text, m.unit == Unit::None, "{}", m.column);
            assert_eq!(m.number(&full_level()).is_some(), !is_text, "{}", m.column);
            if m.source == Source::Level || is_text {
                assert_eq!(m.better, Better::Neither, "{}", m.column);
            }
        }
    }

    #[test]
    fn figures_are_read_from_the_level() {
        let l = full_level();
        let get = |c: &str| level_metric(c).and_then(|m| m.number(&l));
        assert_eq!(get("errors"), Some(1.0));
        assert_eq!(get("peak_kv_usage_pct"), Some(0.5), "a fraction");
        assert_eq!(get("shape"), None, "text is no number");
        assert_eq!(
            level_metric("ttft_p95_s").map(|m| m.trial_name()),
            Some("ttft_p95")
        );
        assert_eq!(
            level_metric("output_tok_per_s").map(|m| m.trial_name()),
            Some("output_tok_per_s")
        );
        assert_eq!(Unit::TokensPerSecond.symbol(), "tok/s");
        assert_eq!(Unit::Count.symbol(), "");
    }
}
