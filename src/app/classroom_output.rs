//! What `codendum classroom` tells while it runs and at its end: the live
//! status every second and the class table.

use std::sync::Arc;
use std::time::Duration;

use crate::classroom::LiveStatus;
use crate::events::{Event, Events};
use codendum_core::results::metrics::class_summary_rows;
use codendum_core::results::ClassroomRunSummary;
use codendum_report::format::class_row;

/// The class's status every second (a reporter on a terminal redraws it
/// in place), until the task is aborted.
pub async fn show_status(status: Arc<LiveStatus>, events: Events) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        events.emit(Event::Status(status.snapshot().to_string()));
    }
}

/// The final table: the class summary table of the report
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
