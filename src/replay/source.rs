//! Where a replay's trace comes from: a capture folder (`calls.jsonl`), a
//! classroom or replay results folder (`requests.jsonl`), or a
//! Mooncake-style trace file. Only sizes, kinds, sessions and times are
//! read; a capture's `prompt.json` is never opened.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::Path;

use crate::capture::{CallLine, CALLS_FILE, CAPTURE_HEADER_FILE};
use codendum_core::error::{ConfigError, Error};
use codendum_core::results::classroom_records::{CallKind, CallRecord};
use codendum_core::results::{self, REQUESTS_JSONL};
use codendum_core::trace::prefix::{rebuild_hash_ids, SessionCall};
use codendum_core::trace::timing::link_dependencies;
use codendum_core::trace::{mooncake, Trace, TraceCall};

/// What a trace was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// A `codendum capture` folder.
    Capture,
    /// A classroom results folder.
    Classroom,
    /// A replay results folder.
    Replay,
    /// A Mooncake-style (or AIPerf session) JSONL file.
    TraceFile,
}

impl SourceKind {
    /// The name in `summary.json` (`replay.source_kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Capture => "capture",
            SourceKind::Classroom => "classroom",
            SourceKind::Replay => "replay",
            SourceKind::TraceFile => "trace",
        }
    }
}

fn bad(path: &Path, what: &'static str, reason: impl Into<String>) -> Error {
    Error::Config(ConfigError::BadFile {
        what,
        path: path.to_path_buf(),
        reason: reason.into(),
    })
}

/// Reads the trace at `path` (see the module); `block_size` is the tokens
/// a block of a trace file's `hash_ids`, and of the blocks rebuilt for a
/// folder.
pub fn load(path: &Path, block_size: u32) -> Result<(SourceKind, Trace), Error> {
    if path.is_dir() {
        if path.join(CALLS_FILE).is_file() && path.join(CAPTURE_HEADER_FILE).is_file() {
            let lines = read_capture_calls(path)?;
            return Ok((SourceKind::Capture, from_capture(&lines, block_size)));
        }
        if path.join(REQUESTS_JSONL).is_file() {
            let kind = match results::summary_kind_of(path).as_deref() {
                Some(results::REPLAY_KIND) => SourceKind::Replay,
                Some(results::CLASSROOM_KIND) | None => SourceKind::Classroom,
                Some(other) => {
                    return Err(bad(
                        path,
                        "replay source",
                        format!("a {other} folder: replay takes a capture, a classroom or replay folder, or a trace file"),
                    ))
                }
            };
            let records = read_class_records(path)?;
            return Ok((kind, from_class_records(&records, block_size)));
        }
        return Err(bad(
            path,
            "replay source",
            "holds neither a capture (calls.jsonl, capture.json) nor a classroom run (requests.jsonl)",
        ));
    }
    let file = std::fs::File::open(path).map_err(|source| ConfigError::Unreadable {
        what: "trace file",
        path: path.to_path_buf(),
        source,
    })?;
    let trace = mooncake::read_trace(BufReader::new(file), block_size)
        .map_err(|e| bad(path, "trace file", e.to_string()))?;
    Ok((SourceKind::TraceFile, trace))
}

/// The ramp-up and the window for new coding requests (seconds of the
/// source's clock) of the classroom or replay folder at `path`, when its
/// `summary.json` states a ramp-up shorter than its window: the stretch a
/// replay of it averages server output over, as the class did.
pub fn steady_window(path: &Path, kind: SourceKind) -> Option<(f64, f64)> {
    if !matches!(kind, SourceKind::Classroom | SourceKind::Replay) {
        return None;
    }
    match results::read_summary(path).ok()? {
        results::RunSummary::Classroom(s) => {
            let p = &s.parameters;
            (p.ramp_up_s > 0.0 && p.duration_s > p.ramp_up_s).then_some((p.ramp_up_s, p.duration_s))
        }
        results::RunSummary::Bench(_) => None,
    }
}

fn read_capture_calls(dir: &Path) -> Result<Vec<CallLine>, Error> {
    read_lines(dir, CALLS_FILE, "capture calls")
}

fn read_class_records(dir: &Path) -> Result<Vec<CallRecord>, Error> {
    read_lines(dir, REQUESTS_JSONL, "classroom calls")
}

fn read_lines<T: serde::de::DeserializeOwned>(
    dir: &Path,
    name: &'static str,
    what: &'static str,
) -> Result<Vec<T>, Error> {
    let path = dir.join(name);
    let file = std::fs::File::open(&path).map_err(|source| ConfigError::Unreadable {
        what,
        path: path.clone(),
        source,
    })?;
    results::read_jsonl(BufReader::new(file), name)
        .map(|c| c.items)
        .map_err(|e| bad(&path, what, e.to_string()))
}

/// The trace of a capture's model calls (`other` calls are left out): its
/// blocks rebuilt ([`rebuild_hash_ids`]), its dependencies linked
/// ([`link_dependencies`]), and its coding requests numbered per root
/// session (a main-agent step after a `user_pause` starts the next one).
pub fn from_capture(lines: &[CallLine], block_size: u32) -> Trace {
    let mut lines: Vec<&CallLine> = lines
        .iter()
        .filter(|l| l.request.kind.call_kind().is_some())
        .collect();
    lines.sort_by(|a, b| a.started_at_s.total_cmp(&b.started_at_s));
    let origin = lines.first().map_or(0.0, |l| l.started_at_s);
    let calls: Vec<TraceCall> = lines
        .iter()
        .map(|l| {
            // A call the upstream never counted: its request size at about
            // four bytes a token.
            let input = l
                .prompt_tokens
                .unwrap_or((l.request_bytes as u64 / 4).max(1))
                .max(1);
            TraceCall {
                session: l.request.session.clone(),
                parent: l.request.parent.clone(),
                kind: l.request.kind.call_kind(),
                task: None,
                at_s: l.started_at_s - origin,
                input_tokens: input,
                output_tokens: l.output_tokens.unwrap_or(0),
                hash_ids: Vec::new(),
                after: None,
                ttft_s: l.ttft_s,
                duration_s: Some(l.duration_s),
            }
        })
        .collect();
    let ok: Vec<bool> = lines
        .iter()
        .map(|l| (200..300).contains(&l.status) && l.error.is_none())
        .collect();
    let pauses: Vec<bool> = lines
        .iter()
        .map(|l| l.client_time_kind.as_deref() == Some("user_pause"))
        .collect();
    finish(calls, &ok, &pauses, block_size)
}

/// The trace of a classroom (or replay) run's calls. A student's sessions
/// other than the first are its subagents (their parent: the student's
/// first session); the coding request is the record's.
pub fn from_class_records(records: &[CallRecord], block_size: u32) -> Trace {
    let mut records: Vec<&CallRecord> = records.iter().collect();
    records.sort_by(|a, b| a.started_at.total_cmp(&b.started_at));
    let origin = records.first().map_or(0.0, |r| r.started_at);
    let mut main_of: HashMap<usize, String> = HashMap::new();
    for r in &records {
        if r.kind != CallKind::Subagent {
            main_of.entry(r.user).or_insert_with(|| r.session.clone());
        }
    }
    let calls: Vec<TraceCall> = records
        .iter()
        .map(|r| TraceCall {
            session: Some(r.session.clone()),
            parent: main_of.get(&r.user).filter(|m| **m != r.session).cloned(),
            kind: Some(r.kind),
            task: Some(r.task),
            at_s: r.started_at - origin,
            input_tokens: r.prompt_tokens.unwrap_or(1).max(1),
            output_tokens: r.output_tokens,
            hash_ids: Vec::new(),
            after: None,
            ttft_s: r.ttft_s,
            // The student waited through the retries too.
            duration_s: Some(r.wait_s.max(r.duration_s)),
        })
        .collect();
    let ok: Vec<bool> = records.iter().map(|r| r.is_ok()).collect();
    finish(calls, &ok, &[], block_size)
}

/// Blocks, dependencies and (when `pauses` is given) coding requests.
fn finish(mut calls: Vec<TraceCall>, ok: &[bool], pauses: &[bool], block_size: u32) -> Trace {
    let inputs: Vec<SessionCall> = calls
        .iter()
        .zip(ok)
        .map(|(c, &ok)| SessionCall {
            session: c.session.clone(),
            kind: c.kind.unwrap_or(CallKind::Agent),
            input_tokens: c.input_tokens,
            output_tokens: c.output_tokens,
            ok,
        })
        .collect();
    for (c, ids) in calls
        .iter_mut()
        .zip(rebuild_hash_ids(&inputs, block_size, None))
    {
        c.hash_ids = ids;
    }
    let mut trace = Trace {
        block_size: block_size.max(1),
        calls,
    };
    if !pauses.is_empty() {
        let roots = trace.roots();
        let mut task_of: HashMap<String, usize> = HashMap::new();
        for (i, c) in trace.calls.iter_mut().enumerate() {
            let Some(root) = roots[i].clone() else {
                continue;
            };
            let is_main = c.session.as_deref() == Some(root.as_str());
            let entry = task_of.entry(root).or_insert(0);
            if is_main && c.kind == Some(CallKind::Agent) && pauses[i] {
                *entry += 1;
            }
            c.task = Some(*entry);
        }
    }
    link_dependencies(&mut trace);
    trace
}
