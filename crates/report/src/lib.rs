//! Reports: Markdown and self-contained HTML (with hand-written SVG charts)
//! for one benchmark or classroom run, and comparisons of two or more runs.
//!
//! The report layer works from its own models ([`model`], [`compare`]);
//! a thin adapter maps a results folder into them. It never imports the
//! drivers, the client or the twin.
//!
//! - [`markdown`]: report.md / compare.md, ready for release notes;
//! - [`html`]: report.html / compare.html, one file each, no scripts, no
//!   network;
//! - [`svg`]: the charts;
//! - [`charts`]: which charts a report shows;
//! - [`observed`]: reports of a real class (a capture, imported sessions);
//! - [`capacity`]: the report of a capacity search and the comparison of
//!   searches;
//! - [`timeline`]: the report of a host timeline alone;
//! - [`repeat`]: the report of a repeated run (`--repeat`).
//!
//! Every report says, in one sentence, that its figures are measurements,
//! not guarantees ([`DISCLAIMER`]).

pub mod capacity;
pub mod charts;
pub mod compare;
mod compare_build;
mod compare_doc;
mod compare_levels;
pub mod compare_pairs;
mod doc;
pub mod files;
pub mod format;
mod from_results;
pub mod html;
pub mod markdown;
pub mod model;
pub mod observed;
mod observed_doc;
pub mod rebuild;
pub mod repeat;
mod replicas_doc;
mod run_docs;
pub mod svg;
mod time_split_doc;
pub mod timeline;

pub use compare::{
    Assessment, Change, Combine, ComparedFigure, Comparison, ComparisonSection, Difference,
    RepeatColumn, RunKind, TooFewRuns,
};
pub use doc::DISCLAIMER;
pub use model::{
    BenchReport, ClassroomReport, FleetWindow, LevelBoundary, Parameter, ReplicaLine, RunInfo,
    TimelinePoint, Verdict,
};
