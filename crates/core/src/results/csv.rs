//! `summary.csv`: one row per level × shape.
//!
//! Units are in the column names: `_s` seconds, `_per_s` per second of level
//! wall time, `_pct` percent (KV-cache usage and prefix-cache hit rate, which
//! are fractions in JSON). An empty cell means "not measured" (no `/metrics`,
//! or no successful request), never zero. `error_kinds` lists
//! `kind:count` pairs separated by `;`. The columns and how each is read
//! are [`super::metrics::LEVEL_METRICS`].

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
    LEVEL_METRICS.iter().map(|m| cell(m, level)).collect()
}

/// Writes `summary.csv`: the header, then one row per level in the given
/// order. Lines end in `\n`.
pub fn write_summary_csv<W: Write>(
    mut out: W,
    levels: &[LevelSummary],
) -> Result<(), ResultsError> {
    let mut text = SUMMARY_CSV_COLUMNS.join(",");
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
