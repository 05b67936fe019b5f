//! The final table of a bench run: one line per level, a column per
//! figure. The progress of a level is told as events
//! ([`crate::events::Event::LevelStarted`] and after) and drawn by the
//! reporter.

use std::fmt::Write as _;

use codendum_core::results::metrics::{level_metrics_in, Unit, View};
use codendum_core::results::LevelSummary;
use codendum_report::format::level_cell_narrow;

/// The final table: one line per level × shape, a column per level figure
/// of [`View::Progress`] (header with its unit), the figures of
/// [`View::ProgressInterval`] with their 95 % interval; server columns show
/// the missing mark when there was no `/metrics`. Each level's errors
/// follow it by kind with a sample message; a closed-loop level whose
/// steady window was too short to judge says so.
pub fn render_table(levels: &[LevelSummary]) -> String {
    // A column no level has (the rate columns of a closed-loop run) is left out.
    let shown: Vec<&LevelSummary> = levels.iter().collect();
    let metrics: Vec<_> = level_metrics_in(View::Progress)
        .filter(|m| m.shown_for(&shown))
        .collect();
    let header: Vec<String> = metrics.iter().map(|m| m.header()).collect();
    let rows: Vec<Vec<String>> = levels
        .iter()
        .map(|l| {
            metrics
                .iter()
                .map(|m| level_cell_narrow(m, l, m.in_view(View::ProgressInterval)))
                .collect()
        })
        .collect();
    let widths: Vec<usize> = (0..metrics.len())
        .map(|i| {
            rows.iter()
                .map(|r| r[i].chars().count())
                .chain([header[i].chars().count()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let line = |cells: &[String]| -> String {
        let mut out = String::new();
        for (i, c) in cells.iter().enumerate() {
            let pad = widths[i].saturating_sub(c.chars().count());
            if i > 0 {
                out.push_str("  ");
            }
            if metrics[i].unit == Unit::None {
                out.push_str(c);
                out.push_str(&" ".repeat(pad));
            } else {
                out.push_str(&" ".repeat(pad));
                out.push_str(c);
            }
        }
        out.trim_end().to_string()
    };
    let mut t = String::new();
    let _ = writeln!(t, "{}", line(&header));
    for (l, row) in levels.iter().zip(&rows) {
        let _ = writeln!(t, "{}", line(row));
        for (kind, g) in &l.errors {
            let _ = writeln!(t, "    {kind}: {} (e.g. {})", g.count, g.sample_message);
        }
        let name = format!("{} {}", l.shape, l.load_label());
        if let Some(w) = l.steady.and_then(|w| w.warning(&name)) {
            let _ = writeln!(t, "    warning: {w}");
        }
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use codendum_core::results::level::{summarize_level, LevelFrame};
    use codendum_core::results::LevelEnd;

    #[test]
    fn table_marks_missing_server_columns_and_lists_errors() {
        let frame = LevelFrame {
            shape: "short",
            concurrency: 8,
            ended_by: LevelEnd::Requests,
            started_at_s: 0.0,
            wall_time_s: 10.0,
            abandoned: 0,
            rate: None,
            slo: None,
        };
        let failed = codendum_core::results::RequestRecord {
            shape: "short".into(),
            concurrency: 8,
            index: 0,
            started_at: 0.0,
            ttft_s: None,
            e2e_s: 1.0,
            tpot_s: None,
            prompt_tokens: None,
            output_tokens: 0,
            tokens_counted_by: codendum_core::openai::TokenSource::Client,
            finish_reason: None,
            ok: false,
            error_kind: Some("http_429".into()),
            error_message: Some("rate limited".into()),
            status: Some(429),
            scheduled_at: None,
            send_lag_s: None,
        };
        let level = summarize_level(frame, &[failed], None);
        let table = render_table(&[level]);
        let header: Vec<&str> = table
            .lines()
            .next()
            .unwrap_or_default()
            .split("  ")
            .map(str::trim)
            .filter(|c| !c.is_empty())
            .collect();
        assert_eq!(
            header[..4],
            ["Prompt shape", "Concurrency", "OK", "Errors"],
            "{table}"
        );
        let row: Vec<&str> = table
            .lines()
            .nth(1)
            .unwrap_or_default()
            .split_whitespace()
            .collect();
        assert_eq!(row[..4], ["short", "8", "0", "1"], "{table}");
        assert_eq!(
            row.last(),
            Some(&"–"),
            "no /metrics: the last column (peak waiting) is missing: {table}"
        );
        assert!(table.contains("http_429: 1 (e.g. rate limited)"), "{table}");
    }
}
