//! What `codendum classroom` prints on stderr: the live status line while
//! it runs and the seed's table at the end.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use crate::classroom::LiveStatus;
use codendum_core::results::metrics::class_summary_rows;
use codendum_core::results::ClassroomRunSummary;
use codendum_report::format::class_row;

/// The live status line on stderr (nothing when stderr is not a terminal).
pub async fn show_status(status: Arc<LiveStatus>) {
    use std::io::IsTerminal;
    if !std::io::stderr().is_terminal() {
        return;
    }
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let line = status.snapshot().to_string();
        let mut err = std::io::stderr();
        let _ = write!(err, "\r\x1b[2K{line}");
        let _ = err.flush();
    }
}

/// The final table on stderr: the class summary table of the report
/// ([`class_summary_rows`]), one row per line.
pub fn render_summary(s: &ClassroomRunSummary) -> String {
    let mut out = String::new();
    for (name, figures) in class_summary_rows() {
        let value = class_row(&figures, &s.summary);
        out.push_str(&format!(
            "{name:<52} {value}
"
        ));
    }
    out
}
