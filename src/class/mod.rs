//! `codendum learn-class`: a class file learned from recorded sessions.
//!
//! Each source is read into the one trace model
//! ([`crate::replay::source::read`]: a capture folder, a classroom or
//! replay results folder, OpenCode's session store, Claude Code
//! conversations, TraceLab rows, a Mooncake-style trace), its format
//! detected; a capture's measured client times per tool kind
//! (`client-times.json`) come along, and what could not be read of a
//! source is a note of the report. The class is learned by
//! [`codendum_core::class::learn`], whose report says what was learned,
//! from how many sessions and calls, and what kept the default class's
//! value and why. The format of the file: `docs/class-file.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use codendum_core::class::learn::{learn, LearnReport, Learned, Source};
use codendum_core::class::{write::to_toml, Class};
use codendum_core::error::{ConfigError, Error};
use codendum_core::trace::Trace;

use crate::classroom::{ClientTimeKind, ClientTimes};
use crate::replay::source::read;
use codendum_core::trace::detect::ImportOptions;
use codendum_core::trace::SourceFormat;

/// Client seconds measured per tool kind (`file_tool`, `after_edit`, …).
type TimesByKind = BTreeMap<String, Vec<f64>>;

/// What `learn-class` is asked.
#[derive(Debug, Clone)]
pub struct LearnConfig {
    /// The recorded sessions: capture folders, classroom or replay results
    /// folders, OpenCode stores, Claude Code conversations (a file or a
    /// folder of them), TraceLab rows, Mooncake-style traces.
    pub sources: Vec<PathBuf>,
    /// The class file to write.
    pub out: PathBuf,
    /// The class's name (default: the output file's stem).
    pub name: Option<String>,
    /// Tokens per block of the traces' `hash_ids` (and of the blocks
    /// rebuilt for folders).
    pub block_size: u32,
    /// What the sources cannot tell comes from this class.
    pub defaults: std::sync::Arc<Class>,
}

/// Reads every source, learns the class and writes it to `config.out`.
/// Errors: a source that cannot be read (exit 2, naming it), sources that
/// hold no call at all (exit 2), the output that cannot be written (exit 1).
pub fn learn_class(config: &LearnConfig) -> Result<Learned, Error> {
    if config.sources.is_empty() {
        return Err(ConfigError::invalid("SOURCE", "give at least one recorded source").into());
    }
    let mut traces: Vec<(String, Trace, Option<TimesByKind>)> = Vec::new();
    let mut windowed = Vec::new();
    let mut unread = Vec::new();
    for path in &config.sources {
        let trace = read(
            path,
            None,
            ImportOptions {
                block_size: config.block_size,
                max_sessions: None,
            },
        )?;
        let kind = trace
            .source
            .as_ref()
            .map_or(SourceFormat::Mooncake, |s| s.format);
        if matches!(kind, SourceFormat::Classroom | SourceFormat::Replay) {
            windowed.push(path.display().to_string());
        }
        unread.extend(trace.unread.iter().map(|u| format!("not read: {u}")));
        let times = (kind == SourceFormat::Capture)
            .then(|| capture_tool_times(path))
            .transpose()?
            .flatten();
        traces.push((path.display().to_string(), trace, times));
    }
    let calls: usize = traces.iter().map(|(_, t, _)| t.calls.len()).sum();
    if calls == 0 {
        return Err(
            ConfigError::invalid("SOURCE", "the sources hold no model call to learn from").into(),
        );
    }
    let sources: Vec<Source<'_>> = traces
        .iter()
        .map(|(name, trace, times)| Source {
            name: name.clone(),
            trace,
            tool_times: times.clone(),
        })
        .collect();
    let name = config.name.clone().unwrap_or_else(|| {
        config
            .out
            .file_stem()
            .and_then(|s| s.to_str())
            .unwrap_or("learned")
            .to_string()
    });
    let mut learned = learn(&sources, &name, &config.defaults);
    learned.report.notes.extend(unread);
    if !windowed.is_empty() {
        learned.report.notes.push(format!(
            "{} ran with a window for new requests: its follow-ups and session lengths are what the window allowed",
            windowed.join(", ")
        ));
    }
    write_class(&config.out, &to_toml(&learned.class))?;
    Ok(learned)
}

/// A capture's measured client times per tool kind, when it has a
/// `client-times.json`; `None` when it has none.
fn capture_tool_times(dir: &Path) -> Result<Option<TimesByKind>, Error> {
    if !dir
        .join(crate::classroom::client_times::CLIENT_TIMES_FILE)
        .is_file()
    {
        return Ok(None);
    }
    let times = ClientTimes::from_path(dir)?;
    let kinds: TimesByKind = ClientTimeKind::ALL
        .iter()
        .map(|k| (k.as_str().to_string(), times.samples(*k).to_vec()))
        .filter(|(_, v)| !v.is_empty())
        .collect();
    Ok((!kinds.is_empty()).then_some(kinds))
}

fn write_class(path: &Path, text: &str) -> Result<(), Error> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::io(format!("creating {}", dir.display()), e))?;
    }
    std::fs::write(path, text).map_err(|e| Error::io(format!("writing {}", path.display()), e))
}

/// The report as the command prints it: the counts, each field learned
/// with its figures, each kept with why.
pub fn render(report: &LearnReport, out: &Path) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "Learned class {} from {} source{}: {} sessions, {} coding requests, {} model calls, {} subagent sessions",
        out.display(),
        report.sources.len(),
        if report.sources.len() == 1 { "" } else { "s" },
        report.sessions,
        report.coding_requests,
        report.calls,
        report.subagent_sessions
    );
    for note in &report.notes {
        let _ = writeln!(s, "note: {note}");
    }
    let width = report
        .learned
        .iter()
        .chain(&report.kept)
        .map(|(f, _)| f.len())
        .max()
        .unwrap_or(0);
    let _ = writeln!(s, "Learned:");
    for (field, what) in &report.learned {
        let _ = writeln!(s, "  {field:width$}  {what}");
    }
    if !report.kept.is_empty() {
        let _ = writeln!(s, "Kept from the default class:");
        for (field, why) in &report.kept {
            let _ = writeln!(s, "  {field:width$}  {why}");
        }
    }
    s
}
