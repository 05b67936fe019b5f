//! `summary.csv`: one row per level × shape.
//!
//! Units are in the column names: `_s` seconds, `_per_s` per second of level
//! wall time, `_pct` percent (KV-cache usage and prefix-cache hit rate, which
//! are fractions in JSON). An empty cell means "not measured" (no `/metrics`,
//! or no successful request), never zero. `error_kinds` lists
//! `kind:count` pairs separated by `;`. The columns and how each is read
//! are [`super::metrics::LEVEL_METRICS`]. After the figures come the
//! bounds of their 95 % intervals, `<column>_lo` and `<column>_hi` for
//! each figure that has one, in table order; an empty bound is open (the
//! data cannot give it) or the level has no interval for it.

use std::io::Write;

use super::metrics::{LevelMetric, Reading, Unit, LEVEL_METRICS};
use super::records::LevelSummary;
use super::ResultsError;

/// The header of `summary.csv`, in column order: the columns of
/// [`LEVEL_METRICS`].
pub const SUMMARY_CSV_COLUMNS: [&str; LEVEL_METRICS.len()] = {
    let mut out = [""; LEVEL_METRICS.len()];
    let mut i = 0;
    while i < out.len() {
        out[i] = LEVEL_METRICS[i].column;
        i += 1;
    }
    out
};

/// The interval columns of `summary.csv`: `<column>_lo`, `<column>_hi` for
/// each figure with an interval, in [`LEVEL_METRICS`] order.
pub fn interval_csv_columns() -> Vec<String> {
    LEVEL_METRICS
        .iter()
        .filter(|m| m.interval.is_some())
        .flat_map(|m| [format!("{}_lo", m.column), format!("{}_hi", m.column)])
        .collect()
}

/// The whole header of `summary.csv`: the figures
/// ([`SUMMARY_CSV_COLUMNS`]), then their intervals' bounds
/// ([`interval_csv_columns`]).
pub fn summary_csv_header() -> Vec<String> {
    SUMMARY_CSV_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(interval_csv_columns())
        .collect()
}

/// Formats a number with at most 6 decimals, without trailing zeros.
fn num(x: f64) -> String {
    if !x.is_finite() {
        return String::new();
    }
    let s = format!("{x:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

fn opt(x: Option<f64>) -> String {
    x.map(num).unwrap_or_default()
}

/// Quotes a field when it holds a comma, quote or line break.
fn field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// A cell of `metric`'s column: text quoted when needed; numbers with at
/// most 6 decimals, fractions as percent; empty when not measured.
fn cell(metric: &LevelMetric, level: &LevelSummary) -> String {
    match metric.read {
        Reading::Text(read) => field(&read(level)),
        Reading::Number(read) => match metric.unit {
            Unit::Fraction => opt(read(level).map(|f| f * 100.0)),
            _ => opt(read(level)),
        },
    }
}

fn row(level: &LevelSummary) -> Vec<String> {
    let figures = LEVEL_METRICS.iter().map(|m| cell(m, level));
    let bounds = LEVEL_METRICS
        .iter()
        .filter(|m| m.interval.is_some())
        .flat_map(|m| {
            let scale = if m.unit == Unit::Fraction { 100.0 } else { 1.0 };
            let i = m.interval_of(level);
            [
                opt(i.and_then(|i| i.lo).map(|v| v * scale)),
                opt(i.and_then(|i| i.hi).map(|v| v * scale)),
            ]
        });
    figures.chain(bounds).collect()
}

/// Writes `summary.csv`: the header ([`summary_csv_header`]), then one row
/// per level in the given order. Lines end in `\n`.
pub fn write_summary_csv<W: Write>(
    mut out: W,
    levels: &[LevelSummary],
) -> Result<(), ResultsError> {
    let mut text = summary_csv_header().join(",");
    text.push('\n');
    for level in levels {
        text.push_str(&row(level).join(","));
        text.push('\n');
    }
    out.write_all(text.as_bytes())
        .map_err(ResultsError::write)?;
    out.flush().map_err(ResultsError::write)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_compact_and_fields_quoted() {
        assert_eq!(num(1.5), "1.5");
        assert_eq!(num(2.0), "2");
        assert_eq!(num(0.1234567), "0.123457");
        assert_eq!(num(-0.0000001), "0");
        assert_eq!(num(f64::NAN), "");
        assert_eq!(field("a,b"), "\"a,b\"");
        assert_eq!(field("say \"x\""), "\"say \"\"x\"\"\"");
    }
}
