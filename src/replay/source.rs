//! Where a replay's trace comes from: a capture folder (`calls.jsonl`), a
//! classroom or replay results folder (`requests.jsonl`), or one of the
//! recorded sessions `codendum_core::trace` reads (OpenCode's store, Claude
//! Code conversations, TraceLab rows, Mooncake-style lines). The format is
//! detected (folders of codendum's own first) or given. Only sizes, kinds,
//! sessions and times are read; a capture's `prompt.json` is never opened.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::Path;

use codendum_core::capture::CAPTURE_HEADER_FILE;
use codendum_core::capture::{CallLine, CALLS_FILE};
use codendum_core::error::{ConfigError, Error};
use codendum_core::results::classroom_records::{CallKind, CallRecord};
use codendum_core::results::{self, REQUESTS_JSONL};
use codendum_core::trace::detect::{self, ImportOptions};
use codendum_core::trace::prefix::rebuilt_trace;
use codendum_core::trace::{SourceFormat, Trace, TraceCall, TraceSource, Unread, WaitReason};

fn bad(path: &Path, what: &'static str, reason: impl Into<String>) -> Error {
    Error::Config(ConfigError::BadFile {
        what,
        path: path.to_path_buf(),
        reason: reason.into(),
    })
}

/// The format of codendum's own folders at `path` (a capture, a classroom
/// or replay run), if it is one.
fn own_folder(path: &Path) -> Option<SourceFormat> {
    if !path.is_dir() {
        return None;
    }
    if path.join(CALLS_FILE).is_file() && path.join(CAPTURE_HEADER_FILE).is_file() {
        return Some(SourceFormat::Capture);
    }
    if path.join(REQUESTS_JSONL).is_file() {
        return Some(match results::summary_kind_of(path).as_deref() {
            Some(results::REPLAY_KIND) => SourceFormat::Replay,
            _ => SourceFormat::Classroom,
        });
    }
    None
}

/// The format of `path`: codendum's own folders first, then the formats of
/// recorded sessions ([`detect::detect`]).
pub fn detect_format(path: &Path) -> Result<SourceFormat, Error> {
    if !path.exists() {
        return Err(ConfigError::Unreadable {
            what: "replay source",
            path: path.to_path_buf(),
            source: std::io::Error::from(std::io::ErrorKind::NotFound),
        }
        .into());
    }
    if let Some(f) = own_folder(path) {
        return Ok(f);
    }
    if path.is_dir() {
        if let Some(other) = results::summary_kind_of(path) {
            return Err(bad(
                path,
                "replay source",
                format!("a {other} folder: replay takes a capture, a classroom or replay folder, or recorded sessions"),
            ));
        }
    }
    detect::detect(path).map_err(|u| unread_error(path, &u))
}

/// The one-line error of a source nothing could be read of.
fn unread_error(path: &Path, u: &Unread) -> Error {
    let same = Path::new(&u.file) == path;
    let reason = match (same, u.line) {
        (true, 0) => u.reason.clone(),
        (true, n) => format!("line {n}: {}", u.reason),
        (false, _) => u.to_string(),
    };
    bad(path, "replay source", reason)
}

/// Reads the trace at `path` as `format` (detected when `None`). A source
/// nothing can be read of is a one-line error naming the file and line;
/// what could not be read beside what could is in the trace's `unread`.
pub fn read(
    path: &Path,
    format: Option<SourceFormat>,
    options: ImportOptions,
) -> Result<Trace, Error> {
    let format = match format {
        Some(f) => f,
        None => detect_format(path)?,
    };
    let block_size = options.block_size;
    let mut trace = match format {
        SourceFormat::Capture => {
            let (lines, unread) = read_lines::<CallLine>(path, CALLS_FILE, "capture calls")?;
            let mut t = from_capture(&lines, block_size);
            t.unread.extend(unread);
            t
        }
        SourceFormat::Classroom | SourceFormat::Replay => {
            let (records, unread) =
                read_lines::<CallRecord>(path, REQUESTS_JSONL, "classroom calls")?;
            let mut t = from_class_records(&records, block_size);
            t.unread.extend(unread);
            t
        }
        _ => return detect::read(path, format, options).map_err(|u| unread_error(path, &u)),
    };
    trace.source = Some(TraceSource {
        format,
        files: 1,
        licence: detect::licence_note(path),
    });
    Ok(trace)
}

/// Reads the trace at `path`, its format detected, `block_size` tokens a
/// block of the hash ids given or rebuilt; returns the format too.
pub fn load(path: &Path, block_size: u32) -> Result<(SourceFormat, Trace), Error> {
    let trace = read(
        path,
        None,
        ImportOptions {
            block_size,
            max_sessions: None,
        },
    )?;
    let format = trace
        .source
        .as_ref()
        .map_or(SourceFormat::Mooncake, |s| s.format);
    Ok((format, trace))
}

/// The stretch a replay averages server output over (its ramp-up and the
/// end of its window for new coding requests, seconds of the source's
/// clock), as the recorded class did: a classroom or replay folder's own
/// (its `summary.json`, when it states a ramp-up shorter than its window);
/// for a capture or an OpenCode store, which do not state it, the stretch
/// inferred from the calls ([`inferred_window`]).
pub fn steady_window(path: &Path, kind: SourceFormat, trace: &Trace) -> Option<(f64, f64)> {
    match kind {
        SourceFormat::Classroom | SourceFormat::Replay => match results::read_summary(path).ok()? {
            results::RunSummary::Classroom(s) => {
                let p = &s.parameters;
                (p.ramp_up_s > 0.0 && p.duration_s > p.ramp_up_s)
                    .then_some((p.ramp_up_s, p.duration_s))
            }
            results::RunSummary::Bench(_) => None,
        },
        SourceFormat::Capture | SourceFormat::Opencode => inferred_window(trace),
        _ => None,
    }
}

/// The stretch of a recorded class in which every student was at work,
/// from its calls (seconds since the trace's first call): from the latest
/// first call of a root session (the last student has started: the end of
/// the ramp-up) to the later of the latest start of a coding request (no
/// student starts new work after the class's window) and the earliest end
/// of a root session's last call (the first student to stop: until then
/// all were at work, which is how a class whose students never got to a
/// second coding request within its window shows its window); `None` when
/// it is empty.
pub fn inferred_window(trace: &Trace) -> Option<(f64, f64)> {
    let roots = trace.roots();
    let mut started: HashMap<&str, f64> = HashMap::new();
    let mut ended: HashMap<&str, f64> = HashMap::new();
    let mut tasks: HashMap<(&str, usize), f64> = HashMap::new();
    for (c, r) in trace.calls.iter().zip(&roots) {
        let Some(r) = r.as_deref() else {
            continue;
        };
        started.entry(r).or_insert(c.at_s);
        let end = ended.entry(r).or_insert(c.at_s);
        *end = end.max(c.end_s().unwrap_or(c.at_s));
        if c.session.as_deref() == Some(r) {
            tasks.entry((r, c.task.unwrap_or(0))).or_insert(c.at_s);
        }
    }
    let ramp = started.values().copied().fold(0.0, f64::max);
    let last_start = tasks.values().copied().fold(0.0, f64::max);
    let first_stop = ended.values().copied().reduce(f64::min).unwrap_or(0.0);
    let end = last_start.max(first_stop);
    (end > ramp).then_some((ramp, end))
}

/// The lines of `dir/name`; a cut last line is named, not an error.
fn read_lines<T: serde::de::DeserializeOwned>(
    dir: &Path,
    name: &'static str,
    what: &'static str,
) -> Result<(Vec<T>, Vec<Unread>), Error> {
    let path = dir.join(name);
    let file = std::fs::File::open(&path).map_err(|source| ConfigError::Unreadable {
        what,
        path: path.clone(),
        source,
    })?;
    let read = results::read_jsonl(BufReader::new(file), name)
        .map_err(|e| bad(&path, what, e.to_string()))?;
    let unread = read
        .truncated_last_line
        .then(|| Unread {
            file: path.display().to_string(),
            line: read.items.len() + 1,
            reason: "its last line is cut short (the recording was still being written); left out"
                .into(),
        })
        .into_iter()
        .collect();
    Ok((read.items, unread))
}

/// The trace of a capture's model calls (`other` calls are left out): its
/// blocks rebuilt and its dependencies linked ([`rebuilt_trace`]), and its coding requests numbered per root
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
    // What the client did before each call: the student's pause, a
    // tool or a subagent, or something else (a retry's back-off, the wait
    // after a compaction).
    let reasons: Vec<WaitReason> = lines
        .iter()
        .map(|l| match l.client_time_kind.as_deref() {
            Some("user_pause") => WaitReason::Person,
            Some("retry" | "after_compaction") | None => WaitReason::Unknown,
            Some(_) => WaitReason::Tool,
        })
        .collect();
    let mut trace = rebuilt_trace(calls, &ok, block_size);
    number_tasks(&mut trace, &reasons);
    for (c, reason) in trace.calls.iter_mut().zip(reasons) {
        if let Some(d) = &mut c.after {
            d.reason = reason;
        }
    }
    trace
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
            duration_s: Some(r.wait_s.max(r.e2e_s)),
        })
        .collect();
    let ok: Vec<bool> = records.iter().map(|r| r.is_ok()).collect();
    let mut trace = rebuilt_trace(calls, &ok, block_size);
    // A main-agent step of another coding request than the call it waited
    // for followed the student's pause; every other wait is a tool's (or
    // a subagent's).
    let tasks: Vec<Option<usize>> = trace.calls.iter().map(|c| c.task).collect();
    for c in &mut trace.calls {
        let main = c.parent.is_none() && c.kind == Some(CallKind::Agent);
        if let Some(d) = &mut c.after {
            d.reason = if main && tasks[d.call] != c.task {
                WaitReason::Person
            } else {
                WaitReason::Tool
            };
        }
    }
    trace
}

/// Coding requests per root session: a main-agent step after a person's
/// wait starts the next one.
fn number_tasks(trace: &mut Trace, reasons: &[WaitReason]) {
    let roots = trace.roots();
    let mut task_of: HashMap<String, usize> = HashMap::new();
    for (i, c) in trace.calls.iter_mut().enumerate() {
        let Some(root) = roots[i].clone() else {
            continue;
        };
        let is_main = c.session.as_deref() == Some(root.as_str());
        let entry = task_of.entry(root).or_insert(0);
        if is_main && c.kind == Some(CallKind::Agent) && reasons[i] == WaitReason::Person {
            *entry += 1;
        }
        c.task = Some(*entry);
    }
}
