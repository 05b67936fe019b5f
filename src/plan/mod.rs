//! `codendum plan`: plan a class without the hardware. Every combination of
//! class size, server profile and `max_num_seqs` (a *cell*) is a full
//! classroom simulation ([`crate::classroom::run_classroom`], unchanged)
//! against the embedded twin reached in-process
//! ([`codendum_twin::inproc::InProcTransport`]), in virtual time: each cell
//! runs on its own current-thread tokio runtime with paused time, so engine
//! steps, builds and student pauses pass without waiting.
//!
//! The answer people want is in [`VariantVerdict`]: for each server variant, the
//! largest class tried that meets the profile's `[targets.classroom]`, and
//! where the limit comes from ([`Bottleneck`]). Targets are read and judged by
//! [`codendum_core::targets::classroom`], as the capacity suite judges them. Results
//! are deterministic for a seed, whatever the number of threads.
//!
//! Without `--users` a plan is a search ([`search`]): for each variant the
//! largest class meeting the profile's targets, by bisection over
//! `1..=--max-users`, and the limit judged at the first class that misses.
//!
//! Each file imports only files before it in this order: bisect, variants → config → figures → fleet_cell → cell → verdicts → limit → fleet → wording → search_results → results → run → schedule → search_text → search → fleet_text → write (coverage and rate stand apart).

pub mod bisect;
pub mod cell;
pub mod config;
pub mod coverage;
pub mod figures;
pub mod fleet;
pub mod fleet_cell;
pub mod fleet_text;
pub mod limit;
pub mod rate;
pub mod results;
pub mod run;
pub mod schedule;
pub mod search;
pub mod search_results;
pub mod search_text;
pub mod variants;
pub mod verdicts;
pub mod wording;
pub mod write;

pub use cell::run_cell;
pub use config::{CellSpec, PlanConfig};
pub use figures::CellResult;
pub use fleet::{FleetAnswer, FleetPlan};
pub use results::{PlanParameters, PlanResults, VariantVerdict};
pub use search::run_search;
pub use search_results::{Probe, SearchParameters, SearchResults, SeatsProbe, VariantSearch};
pub use variants::FleetVariant;
pub use verdicts::{classroom_targets, judge_cell, Bottleneck, Check, JudgedCell};
pub use write::{write_plan, write_plan_files};

use std::path::PathBuf;

use codendum_core::error::Error;

/// Runs a plan: with `config.max_users` set a search
/// ([`search::run_search`], `on_cell` called for each probe on a
/// bisection's path), else the class sizes given ([`run::run_grid`],
/// `on_cell` called as each cell finishes, in completion order). The
/// results do not depend on `config.jobs`.
pub fn run_plan(
    config: &PlanConfig,
    on_cell: &(dyn Fn(&CellResult) + Sync),
) -> Result<PlanResults, Error> {
    if config.max_users.is_some() {
        run_search(config, &|_, cell, _| on_cell(&cell.result))
    } else {
        run::run_grid(config, on_cell)
    }
}

/// Runs a plan and writes `plan.md`, `plan.json` and `plan.html` into
/// `config.results_dir/plan-<UTC timestamp>/`. Returns the results and the
/// folder. `on_cell` is called as each cell finishes.
pub fn plan(
    config: &PlanConfig,
    on_cell: &(dyn Fn(&CellResult) + Sync),
) -> Result<(PlanResults, PathBuf), Error> {
    let results = run_plan(config, on_cell)?;
    let folder = write_plan(&results, &config.results_dir, chrono::Utc::now())?;
    Ok((results, folder))
}

/// Runs a search (`config.max_users` set) and writes its folder as
/// [`plan`] does. `on_probe` is called for each probe on a bisection's
/// path, in path order (the variant, the judged cell, whether it met the
/// ceilings).
pub fn plan_search(
    config: &PlanConfig,
    on_probe: search::ProbeHook<'_>,
) -> Result<(PlanResults, PathBuf), Error> {
    let results = run_search(config, on_probe)?;
    let folder = write_plan(&results, &config.results_dir, chrono::Utc::now())?;
    Ok((results, folder))
}
