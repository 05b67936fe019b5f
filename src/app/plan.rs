//! `codendum plan` end to end: simulate every cell of the plan on worker
//! threads (a progress line per cell; in a search, one per probe of the
//! bisection), write `plan.md`, `plan.json` and `plan.html`, and tell each
//! variant's verdict and where the plan is.

use std::path::PathBuf;

use crate::events::{Events, Written};
use crate::plan::search_text::probe_line;
use crate::plan::{CellResult, PlanConfig, PlanResults};
use codendum_core::error::Error;

/// Runs the plan (off the async runtime) and writes its folder; returns the
/// results and the folder.
pub async fn run(config: PlanConfig, events: Events) -> Result<(PlanResults, PathBuf), Error> {
    config.validate()?;
    if let Some(note) = crate::plan::fleet::router_note(&config) {
        events.line(note);
    }
    let said = events.clone();
    let (results, folder) = tokio::task::spawn_blocking(move || {
        if config.max_users.is_some() {
            crate::plan::plan_search(&config, &|variant, cell, meets_ceilings| {
                said.line(format!("  {}", probe_line(variant, cell, meets_ceilings)));
            })
        } else {
            crate::plan::plan(&config, &|cell| said.line(progress_line(cell)))
        }
    })
    .await
    .map_err(|e| Error::Failed(format!("the plan stopped: {e}")))??;
    for v in &results.verdicts {
        events.line(v.summary.clone());
    }
    for w in &results.region_warnings {
        events.warn(w.clone());
    }
    for line in results.fleet.iter().flat_map(|f| &f.lines) {
        events.line(line.clone());
    }
    events.written(Written::Plan, &folder);
    Ok((results, folder))
}

/// The line told as a cell finishes.
fn progress_line(cell: &CellResult) -> String {
    format!(
        "  {} users, {} (max_num_seqs {}): {} tok/s, TTFT P95 {}, coding request P50 {}",
        cell.spec.users,
        cell.spec.profile,
        cell.spec.max_num_seqs,
        cell.server_output_tok_per_s
            .map_or("-".into(), |v| format!("{v:.0}")),
        cell.ttft_p95_s.map_or("-".into(), |v| format!("{v:.1} s")),
        cell.coding_request_p50_s
            .map_or("-".into(), |v| format!("{:.1} min", v / 60.0)),
    )
}
