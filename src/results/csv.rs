//! `summary.csv`: one row per level × shape.
//!
//! Units are in the column names: `_s` seconds, `_per_s` per second of level
//! wall time, `_pct` percent (KV-cache usage and prefix-cache hit rate, which
//! are fractions in JSON). An empty cell means "not measured" (no `/metrics`,
//! or no successful request), never zero. `error_kinds` lists
//! `kind:count` pairs separated by `;`.

use std::io::Write;

use super::records::LevelSummary;
use super::ResultsError;

/// The header of `summary.csv`, in column order.
pub const SUMMARY_CSV_COLUMNS: [&str; 28] = [
    "shape",
    "concurrency",
    "ended_by",
    "requests",
    "successes",
    "errors",
    "error_kinds",
    "abandoned",
    "mean_input_tokens",
    "mean_output_tokens",
    "tokens_client_counted",
    "started_at_s",
    "wall_time_s",
    "requests_per_s",
    "output_tok_per_s",
    "total_tok_per_s",
    "ttft_p50_s",
    "ttft_p95_s",
    "ttft_p99_s",
    "e2e_p50_s",
    "e2e_p95_s",
    "tpot_mean_s",
    "preemptions",
    "peak_kv_usage_pct",
    "peak_running",
    "peak_waiting",
    "prefix_hit_rate_pct",
    "failed_scrapes",
];

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

fn row(level: &LevelSummary) -> Vec<String> {
    let errors: u64 = level.errors.values().map(|g| g.count).sum();
    let kinds: Vec<String> = level
        .errors
        .iter()
        .map(|(k, g)| format!("{k}:{}", g.count))
        .collect();
    let ended_by = serde_json::to_value(level.ended_by)
        .ok()
        .and_then(|v| v.as_str().map(String::from))
        .unwrap_or_default();
    vec![
        field(&level.shape),
        level.concurrency.to_string(),
        ended_by,
        level.requests.to_string(),
        level.successes.to_string(),
        errors.to_string(),
        field(&kinds.join(";")),
        level.abandoned.to_string(),
        opt(level.mean_input_tokens),
        opt(level.mean_output_tokens),
        level.tokens_client_counted.to_string(),
        num(level.started_at_s),
        num(level.wall_time_s),
        num(level.requests_per_s),
        num(level.output_tok_per_s),
        num(level.total_tok_per_s),
        opt(level.ttft_p50_s),
        opt(level.ttft_p95_s),
        opt(level.ttft_p99_s),
        opt(level.e2e_p50_s),
        opt(level.e2e_p95_s),
        opt(level.tpot_mean_s),
        opt(level.preemptions),
        opt(level.peak_kv_usage.map(|f| f * 100.0)),
        opt(level.peak_running),
        opt(level.peak_waiting),
        opt(level.prefix_hit_rate.map(|f| f * 100.0)),
        level
            .failed_scrapes
            .map(|n| n.to_string())
            .unwrap_or_default(),
    ]
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
