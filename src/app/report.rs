//! `codendum report` and `codendum compare` end to end: read results
//! folders, write the report (or comparison) files with
//! [`codendum_report::files`] and return their paths (the binary prints
//! them on stdout).

use std::path::{Path, PathBuf};

use crate::events::Events;
use codendum_core::error::{ConfigError, Error};
use codendum_core::results;
use codendum_core::trace::detect::{self, ImportOptions};
use codendum_core::trace::SourceFormat;
use codendum_report::files::{write_class_report_to, write_comparison, write_report};
use codendum_report::observed::{read_host_timeline, trace_report};

/// What `codendum report` was asked to do.
#[derive(Debug, Clone, PartialEq)]
pub struct ReportRun {
    /// The results or capture folder, host timeline, or recorded sessions.
    pub folder: PathBuf,
    /// A host timeline to use instead of the folder's own.
    pub server_timeline: Option<PathBuf>,
    /// Where the report of recorded sessions goes (`None`: a folder
    /// `report-<source name>` in the working directory).
    pub out: Option<PathBuf>,
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

/// Writes `report.md` and `report.html`; returns their paths. Recorded
/// sessions (OpenCode's store, Claude Code conversations, TraceLab rows)
/// are read as a class and reported into `run.out`; what could not be read
/// of them is a warning each through `events`.
pub fn report(run: &ReportRun, events: &Events) -> Result<Vec<PathBuf>, Error> {
    if let Some(format) = recorded_sessions(&run.folder) {
        return sessions_report(run, format, events);
    }
    if run.out.is_some() {
        return Err(ConfigError::invalid(
            "--out",
            format!(
                "goes with recorded sessions (OpenCode's store, Claude Code conversations, TraceLab rows); the report of {} is written into it",
                run.folder.display()
            ),
        )
        .into());
    }
    write_report(&run.folder, run.server_timeline.as_deref())
}

/// The format of `path` when it holds sessions recorded by the students'
/// own tools rather than one of codendum's folders or a host timeline.
fn recorded_sessions(path: &Path) -> Option<SourceFormat> {
    let own = codendum_core::capture::is_capture(path)
        || (path.is_dir() && results::summary_kind_of(path).is_some())
        || path.join(results::REQUESTS_JSONL).is_file()
        || results::repeat_folder::is_repeat(path);
    if own {
        return None;
    }
    match detect::detect(path) {
        Ok(f @ (SourceFormat::Opencode | SourceFormat::ClaudeCode | SourceFormat::Tracelab)) => {
            Some(f)
        }
        _ => None,
    }
}

/// The report of recorded sessions: the class they make, with the host
/// timeline placed on the recording's clock when it has one.
fn sessions_report(
    run: &ReportRun,
    format: SourceFormat,
    events: &Events,
) -> Result<Vec<PathBuf>, Error> {
    let trace = crate::replay::source::read(
        &run.folder,
        Some(format),
        ImportOptions {
            block_size: codendum_core::trace::DEFAULT_BLOCK_SIZE,
            max_sessions: None,
        },
    )?;
    for u in &trace.unread {
        events.warn(u.to_string());
    }
    let timeline = run
        .server_timeline
        .as_deref()
        .map(read_host_timeline)
        .transpose()?;
    let files = trace.source.as_ref().map_or(1, |s| s.files);
    let sessions = trace
        .roots()
        .into_iter()
        .flatten()
        .collect::<std::collections::BTreeSet<_>>()
        .len();
    let recorded_by = format!(
        "{} ({} {}, {} {}, {} model calls)",
        match format {
            SourceFormat::Opencode => "OpenCode's session store",
            SourceFormat::ClaudeCode => "Claude Code conversations",
            _ => "TraceLab rows",
        },
        files,
        if files == 1 { "file" } else { "files" },
        sessions,
        if sessions == 1 { "session" } else { "sessions" },
        trace.calls.len()
    );
    let report = trace_report(&trace, &recorded_by, trace.clock_utc, timeline);
    let out = run.out.clone().unwrap_or_else(|| {
        // The source's name without its extensions: report-opencode for
        // opencode.db.gz, report-round_trace for round_trace.jsonl.
        let name = run.folder.file_name().map_or_else(
            || "sessions".to_string(),
            |n| {
                let n = n.to_string_lossy();
                let n = n.strip_suffix(".gz").unwrap_or(&n);
                [".db", ".jsonl", ".json"]
                    .iter()
                    .find_map(|ext| n.strip_suffix(ext))
                    .unwrap_or(n)
                    .to_string()
            },
        );
        PathBuf::from(format!("report-{name}"))
    });
    write_class_report_to(&report, &out)
}

/// Writes `compare.md` and `compare.html`; returns their paths.
pub fn compare(run: &CompareRun) -> Result<Vec<PathBuf>, Error> {
    write_comparison(&run.folders, run.force, &run.out)
}
