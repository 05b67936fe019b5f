//! `codendum report` and `codendum compare` end to end: read results
//! folders, write the report (or comparison) files with
//! [`codendum_report::files`] and return their paths (the binary prints
//! them on stdout).

use std::path::PathBuf;

use crate::events::{Events, Written};
use codendum_core::error::Error;
use codendum_report::files::{write_comparison, write_report};

/// What `codendum report` was asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRun {
    /// The results folder.
    pub folder: PathBuf,
    /// A host timeline to use instead of the folder's own.
    pub server_timeline: Option<PathBuf>,
}

/// What `codendum compare` was asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct CompareRun {
    /// Two or more results folders; the first is the baseline.
    pub folders: Vec<PathBuf>,
    /// Compare even if the workloads differ.
    pub force: bool,
    /// Where to write `compare.md` and `compare.html`.
    pub out: PathBuf,
}

/// Writes `report.md` and `report.html`; returns their paths.
pub fn report(run: &ReportRun) -> Result<Vec<PathBuf>, Error> {
    write_report(&run.folder, run.server_timeline.as_deref())
}

/// Writes `compare.md` and `compare.html`; returns their paths.
pub fn compare(run: &CompareRun) -> Result<Vec<PathBuf>, Error> {
    write_comparison(&run.folders, run.force, &run.out)
}

/// Writes a run's `report.md` / `report.html` at its end, telling where;
/// a report that cannot be written is said and the run stands.
pub fn write_report_at_end(folder: &std::path::Path, events: &Events) {
    match write_report(folder, None) {
        Ok(paths) => {
            for p in paths {
                events.written(Written::Report, p);
            }
        }
        Err(e) => events.warn(format!("the report could not be written: {e}")),
    }
}
