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
mod table;

pub use table::LEVEL_METRICS;

#[cfg(test)]
mod tests;
