//! Human output on stderr: a progress bar per level (hidden when stderr is
//! not a terminal) and the final plain-text table.

use std::fmt::Write as _;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use codendum_core::results::LevelSummary;

/// The progress bar of one level: finished requests out of those planned.
#[derive(Debug)]
pub struct LevelProgress {
    bar: ProgressBar,
}

impl LevelProgress {
    /// A bar on stderr (drawn only when stderr is a terminal), or a hidden
    /// one when `visible` is false.
    pub fn new(shape: &str, concurrency: u32, planned: u64, visible: bool) -> Self {
        let target = if visible {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(planned), target);
        let style =
            ProgressStyle::with_template("{prefix:>14} [{bar:30}] {pos}/{len} requests {msg}")
                .map(|s| s.progress_chars("=> "))
                .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(format!("{shape} N={concurrency}"));
        LevelProgress { bar }
    }

    /// One request finished; `errors` is the level's error count so far.
    pub fn finished_one(&self, errors: u64) {
        self.bar.inc(1);
        if errors > 0 {
            self.bar.set_message(format!("({errors} errors)"));
        }
    }

    /// The level is over.
    pub fn finish(&self) {
        self.bar.finish();
    }
}

fn cell(x: Option<f64>, decimals: usize) -> String {
    match x {
        Some(v) if v.is_finite() => format!("{v:.decimals$}"),
        _ => "-".to_string(),
    }
}

/// The final table: one line per level × shape, seconds and tokens/s; server
/// columns show `-` when there was no `/metrics`.
pub fn render_table(levels: &[LevelSummary]) -> String {
    let mut t = String::new();
    let _ =
        writeln!(
        t,
        "{:<6} {:>5} {:>5} {:>5} {:>8} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>6} {:>6} {:>6}",
        "shape", "N", "ok", "err", "req/s", "out tok/s", "ttft p50", "ttft p95", "ttft p99",
        "e2e p50", "e2e p95", "tpot", "kv %", "run", "wait"
    );
    for l in levels {
        let errors: u64 = l.errors.values().map(|g| g.count).sum();
        let _ = writeln!(
            t,
            "{:<6} {:>5} {:>5} {:>5} {:>8.2} {:>9.1} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7} {:>6} {:>6} {:>6}",
            l.shape,
            l.concurrency,
            l.successes,
            errors,
            l.requests_per_s,
            l.output_tok_per_s,
            cell(l.ttft_p50_s, 2),
            cell(l.ttft_p95_s, 2),
            cell(l.ttft_p99_s, 2),
            cell(l.e2e_p50_s, 1),
            cell(l.e2e_p95_s, 1),
            cell(l.tpot_mean_s, 3),
            cell(l.peak_kv_usage.map(|f| f * 100.0), 1),
            cell(l.peak_running, 0),
            cell(l.peak_waiting, 0),
        );
        for (kind, g) in &l.errors {
            let _ = writeln!(
                t,
                "         {kind}: {} (e.g. {})",
                g.count, g.sample_message
            );
        }
    }
    t.push_str("Times in seconds (TTFT, E2E, mean time per output token); kv % is the peak KV-cache usage.\n");
    t
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::level::{summarize_level, LevelFrame};
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
        };
        let failed = codendum_core::results::RequestRecord {
            shape: "short".into(),
            concurrency: 8,
            index: 0,
            started_at: 0.0,
            ttft_s: None,
            e2e_s: 1.0,
            tpot_s: None,
            input_tokens: None,
            output_tokens: 0,
            tokens_counted_by: codendum_core::openai::TokenSource::Client,
            finish_reason: None,
            ok: false,
            error_kind: Some("http_429".into()),
            error_message: Some("rate limited".into()),
            status: Some(429),
        };
        let level = summarize_level(frame, &[failed], None);
        let table = render_table(&[level]);
        let row = table.lines().nth(1).unwrap_or_default();
        assert!(row.starts_with("short      8     0     1"), "{table}");
        assert!(row.trim_end().ends_with('-'), "{table}");
        assert!(table.contains("http_429: 1 (e.g. rate limited)"), "{table}");
    }
}
