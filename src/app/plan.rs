//! `codendum plan` end to end: simulate every cell of the plan on worker
//! threads (a progress line per cell on stderr; in a search, one per probe
//! of the bisection), write `plan.md`, `plan.json` and `plan.html`, print
//! each variant's verdict on stderr and the path of `plan.md` on stdout.

use std::path::PathBuf;

use crate::plan::search_text::probe_line;
use crate::plan::{CellResult, JudgedCell, PlanConfig, PlanResults};
use codendum_core::error::Error;

/// Runs the plan (off the async runtime) and writes its folder; returns the
/// results and the folder.
pub async fn run(config: PlanConfig) -> Result<(PlanResults, PathBuf), Error> {
    config.validate()?;
    if let Some(note) = crate::plan::fleet::router_note(&config) {
        eprintln!("{note}");
    }
    let (results, folder) = tokio::task::spawn_blocking(move || {
        if config.max_users.is_some() {
            crate::plan::plan_search(&config, &search_line)
        } else {
            crate::plan::plan(&config, &progress_line)
        }
    })
    .await
    .map_err(|e| Error::Failed(format!("the plan stopped: {e}")))??;
    for v in &results.verdicts {
        eprintln!("{}", v.summary);
    }
    for w in &results.region_warnings {
        eprintln!("codendum: warning: {w}");
    }
    for line in results.fleet.iter().flat_map(|f| &f.lines) {
        eprintln!("{line}");
    }
    eprintln!("Plan in {}", folder.display());
    println!("{}", folder.join("plan.md").display());
    Ok((results, folder))
}

/// One line on stderr per probe of a search, in the bisection's order.
fn search_line(variant: &str, cell: &JudgedCell, meets_ceilings: bool) {
    eprintln!("  {}", probe_line(variant, cell, meets_ceilings));
}

/// One line on stderr as a cell finishes.
fn progress_line(cell: &CellResult) {
    eprintln!(
        "  {} users, {} (max_num_seqs {}): {} tok/s, TTFT P95 {}, coding request P50 {}",
        cell.spec.users,
        cell.spec.profile,
        cell.spec.max_num_seqs,
        cell.server_output_tok_per_s
            .map_or("-".into(), |v| format!("{v:.0}")),
        cell.ttft_p95_s.map_or("-".into(), |v| format!("{v:.1} s")),
        cell.coding_request_p50_s
            .map_or("-".into(), |v| format!("{:.1} min", v / 60.0)),
    );
}
