//! The figures of a run, defined once: one table per kind of run.
//!
//! [`LEVEL_METRICS`] holds one [`LevelMetric`] per column of `summary.csv`,
//! in column order: its name, the `summary.json` field it comes from, a
//! label for people, its [`Unit`], which direction is better, where it is
//! measured, how people read it ([`Shown`]), where else it appears
//! ([`View`]) and how to read it from a [`LevelSummary`]. [`CLASS_METRICS`]
//! does the same for a class ([`ClassMetric`] over a [`ClassroomSummary`]).
//!
//! Everything that shows a figure iterates these tables: `summary.csv`
//! ([`super::csv`]), the Markdown and HTML reports and `compare`
//! (`codendum-report`), the tables `bench` and `classroom` print on stderr,
//! and the targets: a `[[targets.bench]]` key is a level column
//! ([`crate::targets::bench::BENCH_TARGET_KEYS`]) and a `[targets.classroom]`
//! key a class key ([`crate::targets::ClassroomKey`]), so their bound, unit,
//! label and figure come from here. Adding a figure is one entry in a table
//! and, when the record does not hold it yet, its computation.

use serde::{Deserialize, Serialize};

use super::classroom_summary::ClassroomSummary;
use super::records::LevelSummary;

/// The unit of a level figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
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

/// How people read a figure: the form of its number in the reports,
/// `compare` and the stderr tables, and so the unit written after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Shown {
    /// Seconds, with a precision that follows the size (`0.412`, `17.5`).
    Seconds,
    /// Stored in seconds, shown in milliseconds with one decimal.
    Millis,
    /// Stored in seconds, shown in minutes with one decimal.
    Minutes,
    /// A fraction, shown in percent with one decimal.
    Percent,
    /// A number with this many decimals, in the figure's own [`Unit`].
    Decimals(u8),
    /// Text, as it is.
    Text,
}

impl Shown {
    /// The default form of a unit: seconds by size, tokens per second with
    /// one decimal, requests per second with two, fractions in percent,
    /// counts and token counts whole.
    pub const fn of(unit: Unit) -> Shown {
        match unit {
            Unit::Seconds => Shown::Seconds,
            Unit::TokensPerSecond => Shown::Decimals(1),
            Unit::RequestsPerSecond => Shown::Decimals(2),
            Unit::Tokens | Unit::Count => Shown::Decimals(0),
            Unit::Fraction => Shown::Percent,
            Unit::None => Shown::Text,
        }
    }

    /// The factor from the stored unit to the shown one (1000 for
    /// milliseconds, 1/60 for minutes, 100 for percent, else 1).
    pub fn scale(self) -> f64 {
        match self {
            Shown::Millis => 1000.0,
            Shown::Minutes => 1.0 / 60.0,
            Shown::Percent => 100.0,
            _ => 1.0,
        }
    }

    /// The unit written after a shown number: `s`, `ms`, `min`, `%`, or the
    /// symbol of `unit` (`tok/s`, `req/s`, `tokens`, empty for counts).
    pub fn symbol(self, unit: Unit) -> &'static str {
        match self {
            Shown::Seconds => "s",
            Shown::Millis => "ms",
            Shown::Minutes => "min",
            Shown::Percent => "%",
            Shown::Decimals(_) | Shown::Text => unit.symbol(),
        }
    }
}

/// How a figure's 95 % interval is computed (the statistics are in
/// [`crate::stats::interval`] and [`crate::stats::dependence`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntervalMethod {
    /// A percentile: order statistics with exact binomial ranks, stretched
    /// for the dependence of values taken in time order.
    OrderStatistics,
    /// A share of requests: the Wilson score interval.
    Wilson,
    /// A mean or a rate over the window: batch means (a closed-loop level's
    /// rates by Little's law over batches of consecutive requests).
    BatchMeans,
    /// A count of independent events over the run: the exact Poisson
    /// interval.
    Poisson,
}

impl IntervalMethod {
    /// The method in a few words, for reports: `order statistics`.
    pub fn describe(self) -> &'static str {
        match self {
            IntervalMethod::OrderStatistics => {
                "order statistics (exact binomial ranks, stretched for dependence)"
            }
            IntervalMethod::Wilson => "Wilson score interval",
            IntervalMethod::BatchMeans => "batch means",
            IntervalMethod::Poisson => "exact Poisson interval",
        }
    }
}

/// Where a figure appears besides the run's files (`summary.json` holds
/// every figure, and `summary.csv` every level figure).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum View {
    /// The per-shape level table of a bench report.
    LevelTable,
    /// The throughput and server-side table of a bench report.
    ThroughputTable,
    /// `codendum compare`: one row per figure, the change judged by
    /// [`Better`].
    Compare,
    /// The table `bench` prints on stderr when it ends.
    Progress,
    /// Its 95 % interval beside it in that stderr table (the figures
    /// targets and SLOs name most; the table stays narrow enough for a
    /// terminal).
    ProgressInterval,
    /// The summary table of a class (its report and the table `classroom`
    /// prints on stderr).
    ClassSummary,
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
    /// The column header in report tables, without the unit
    /// ([`LevelMetric::header`] adds it): `TTFT P95`, `OK`.
    pub short: &'static str,
    /// How people read it.
    pub shown: Shown,
    /// Where it appears besides the run's files.
    pub views: &'static [View],
    /// Shown in a table only when some level has it (the rate and SLO
    /// figures, which closed-loop runs without `--slo` never have); other
    /// figures show the missing mark, so a missing `/metrics` is seen.
    pub sparse: bool,
    /// How its 95 % interval is computed; `None`: the figure has none (a
    /// count, a peak, a description of the level).
    pub interval: Option<IntervalMethod>,
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

    /// Whether the figure appears in `view`.
    pub fn in_view(&self, view: View) -> bool {
        self.views.contains(&view)
    }

    /// A report table's column header: the short name and the shown unit,
    /// `TTFT P95 (s)`, `TPOT (ms)`, `Requests`.
    pub fn header(&self) -> String {
        with_unit(self.short, self.shown.symbol(self.unit))
    }

    /// The figure's key in [`LevelSummary::intervals`] and in targets'
    /// messages: the column without a `_pct` suffix (`error_rate`,
    /// `ttft_p95_s`).
    pub fn key(&self) -> &'static str {
        self.column.strip_suffix("_pct").unwrap_or(self.column)
    }

    /// The 95 % interval of the figure in `level`, in
    /// [`LevelMetric::unit`]; `None` when the figure has none or the level
    /// was written without intervals.
    pub fn interval_of(&self, level: &LevelSummary) -> Option<crate::stats::Interval> {
        self.interval?;
        level.intervals.get(self.key()).copied()
    }

    /// The entry with its interval method.
    pub const fn with_interval(self, method: IntervalMethod) -> LevelMetric {
        LevelMetric {
            interval: Some(method),
            ..self
        }
    }

    /// The entry with another column header ([`LevelMetric::short`]).
    pub const fn with_short(self, short: &'static str) -> LevelMetric {
        LevelMetric { short, ..self }
    }

    /// The entry with another [`Shown`].
    pub const fn with_shown(self, shown: Shown) -> LevelMetric {
        LevelMetric { shown, ..self }
    }

    /// Whether `level` has this figure (a number, or text that is not
    /// empty): report tables leave out a column no level has.
    pub fn present(&self, level: &LevelSummary) -> bool {
        match self.read {
            Reading::Number(read) => read(level).is_some(),
            Reading::Text(read) => !read(level).is_empty(),
        }
    }

    /// The entry read from the nested object `field` of a level's JSON
    /// (the column names its key there: `rate.offered_rate_per_s`).
    pub const fn in_field(self, field: &'static str) -> LevelMetric {
        LevelMetric { field, ..self }
    }

    /// The entry shown only when some level has it ([`LevelMetric::sparse`]).
    pub const fn sparse(self) -> LevelMetric {
        LevelMetric {
            sparse: true,
            ..self
        }
    }

    /// Whether a table of `levels` shows this figure.
    pub fn shown_for(&self, levels: &[&LevelSummary]) -> bool {
        !self.sparse || levels.iter().any(|l| self.present(l))
    }

    /// The entry measured elsewhere ([`Source`]).
    pub const fn with_source(self, source: Source) -> LevelMetric {
        LevelMetric { source, ..self }
    }

    /// The entry with its [`View`]s.
    pub const fn in_views(self, views: &'static [View]) -> LevelMetric {
        LevelMetric { views, ..self }
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

/// `name (unit)`, or the name alone when the unit is empty.
fn with_unit(name: &str, unit: &str) -> String {
    if unit.is_empty() {
        name.to_string()
    } else {
        format!("{name} ({unit})")
    }
}

/// The metric of a `summary.csv` column, if there is one.
pub fn level_metric(column: &str) -> Option<&'static LevelMetric> {
    LEVEL_METRICS.iter().find(|m| m.column == column)
}

/// The level figures of `view`, in table order.
pub fn level_metrics_in(view: View) -> impl Iterator<Item = &'static LevelMetric> {
    LEVEL_METRICS.iter().filter(move |m| m.in_view(view))
}

/// One figure of a class: a field of the classroom `summary.json` (or a
/// function of it), how people read it and where it appears.
#[derive(Debug, Clone, Copy)]
pub struct ClassMetric {
    /// Its name: the `[targets.classroom]` key when it is one
    /// (`ttft_p95_s`), with the unit suffix (`_s`, `_tok_per_s`).
    pub key: &'static str,
    /// What the figure is, for people: `TTFT P95`.
    pub label: &'static str,
    /// The row of the class summary table it is shown in; figures of one
    /// row are shown together (`17.5 / 60 s`).
    pub row: &'static str,
    /// The unit of the number [`ClassMetric::read`] gives.
    pub unit: Unit,
    /// Which direction is better.
    pub better: Better,
    /// Where it is measured.
    pub source: Source,
    /// How people read it.
    pub shown: Shown,
    /// Where it appears besides `summary.json`.
    pub views: &'static [View],
    /// How its 95 % interval is computed; `None`: it has none.
    pub interval: Option<IntervalMethod>,
    /// The figure of a class in [`ClassMetric::unit`]; `None` when not
    /// measured.
    pub read: fn(&ClassroomSummary) -> Option<f64>,
}

impl ClassMetric {
    /// Whether the figure appears in `view`.
    pub fn in_view(&self, view: View) -> bool {
        self.views.contains(&view)
    }

    /// The label with the shown unit: `TTFT P95 (s)`.
    pub fn header(&self) -> String {
        with_unit(self.label, self.shown.symbol(self.unit))
    }

    /// The 95 % interval of the figure in `summary`, in
    /// [`ClassMetric::unit`]; `None` when it has none or the class was
    /// written without intervals.
    pub fn interval_of(&self, summary: &ClassroomSummary) -> Option<crate::stats::Interval> {
        self.interval?;
        summary.intervals.get(self.key).copied()
    }

    /// The metric as named in capacity trial names: the key without its
    /// `_s` suffix for seconds (`ttft_p95`).
    pub fn trial_name(&self) -> &'static str {
        match self.unit {
            Unit::Seconds => self.key.strip_suffix("_s").unwrap_or(self.key),
            _ => self.key,
        }
    }
}

/// The class figure named `key`, if there is one.
pub fn class_metric(key: &str) -> Option<&'static ClassMetric> {
    CLASS_METRICS.iter().find(|m| m.key == key)
}

/// The class figures of `view`, in table order.
pub fn class_metrics_in(view: View) -> impl Iterator<Item = &'static ClassMetric> {
    CLASS_METRICS.iter().filter(move |m| m.in_view(view))
}

/// The rows of the class summary table: each row's label and its figures,
/// in table order.
pub fn class_summary_rows() -> Vec<(&'static str, Vec<&'static ClassMetric>)> {
    let mut rows: Vec<(&'static str, Vec<&'static ClassMetric>)> = Vec::new();
    for m in class_metrics_in(View::ClassSummary) {
        match rows.iter_mut().find(|(row, _)| *row == m.row) {
            Some((_, figures)) => figures.push(m),
            None => rows.push((m.row, vec![m])),
        }
    }
    rows
}

mod class_table;
mod table;

pub use class_table::{error_rate, mostly_refused, refused_calls, server_errors, CLASS_METRICS};
pub use table::LEVEL_METRICS;

#[cfg(test)]
mod tests;
