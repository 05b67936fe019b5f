//! OpenCode's own session store: what OpenCode keeps of every session on
//! the student's machine (`~/.local/share/opencode`), read without a word of
//! its text.
//!
//! Two layouts, by release:
//! - a SQLite database, `opencode.db` (`opencode-<channel>.db` for other
//!   release channels), from 1.2: tables `session` (`id`, `parent_id`),
//!   `message` and `part` (`id`, the owner's id, `data`: the JSON below);
//! - JSON files under `storage/` before it: `session/<project>/<id>.json`,
//!   `message/<session>/<id>.json`, `part/<message>/<id>.json`.
//!
//! An assistant message is a model call (a step of the agent; a message of
//! several `step-finish` parts is a call per step): its `tokens` say the
//! sizes (`input` + `cache.read` + `cache.write` the prompt, OpenCode taking
//! cached tokens out of `input`; `output` + `reasoning` the answer), its
//! `time.created` when it was sent, and its parts when the answer ended
//! (the last text or reasoning part's end, or a tool's start: the model had
//! finished). A message without tokens (an error, an abort) is left out and
//! named. OpenCode does not store its title calls, so a store replays
//! without them.
//!
//! Sessions with a `parent_id` are subagents (`task`); a compaction is an
//! assistant message with `summary` or of the `compaction` agent. Each call
//! waits for the latest call of its root session that had ended when it
//! was sent (`timing::link_dependencies`): the agent's next step
//! for the previous answer and its tools (a tool's wait), a subagent's
//! first step for the `task` call, the parent's next step for the
//! subagent's last answer; a step after a new user message waited for a
//! person and starts the next coding request. Blocks are rebuilt as for a
//! capture ([`super::prefix::rebuilt_trace`]).

use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use serde_json::Value;

use super::prefix::rebuilt_trace;
use super::{Trace, TraceCall, Unread, WaitReason};
use crate::results::classroom_records::CallKind;

/// Token counts of a message or a step, as OpenCode stores them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tokens {
    /// Prompt tokens not read from or written to the provider's cache.
    pub input: u64,
    /// Answer tokens, reasoning left out.
    pub output: u64,
    /// Reasoning tokens.
    pub reasoning: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write: u64,
}

impl Tokens {
    /// The prompt's size, tokens.
    pub fn prompt(&self) -> u64 {
        self.input
            .saturating_add(self.cache_read)
            .saturating_add(self.cache_write)
    }

    /// The answer's size, tokens (reasoning included: the model generated it).
    pub fn answer(&self) -> u64 {
        self.output.saturating_add(self.reasoning)
    }

    fn of(v: &Value) -> Option<Tokens> {
        let n = |path: &[&str]| {
            path.iter()
                .try_fold(v, |v, k| v.get(*k))
                .and_then(Value::as_u64)
                .unwrap_or(0)
        };
        v.is_object().then(|| Tokens {
            input: n(&["input"]),
            output: n(&["output"]),
            reasoning: n(&["reasoning"]),
            cache_read: n(&["cache", "read"]),
            cache_write: n(&["cache", "write"]),
        })
    }
}

/// A session of the store.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreSession {
    /// Its id (`ses_…`).
    pub id: String,
    /// The session that started it (a subagent's parent).
    pub parent: Option<String>,
}

/// A message of the store, what of it is read.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreMessage {
    /// Its id (`msg_…`).
    pub id: String,
    /// Its session.
    pub session: String,
    /// `user` or `assistant`.
    pub role: String,
    /// When it was created, Unix milliseconds.
    pub created_ms: f64,
    /// When it was completed, Unix milliseconds.
    pub completed_ms: Option<f64>,
    /// The user message an assistant message answers.
    pub parent_message: Option<String>,
    /// Its token counts.
    pub tokens: Option<Tokens>,
    /// Whether it is a compaction's summary.
    pub compaction: bool,
}

/// A part of a message, what of it is read.
#[derive(Debug, Clone, PartialEq)]
pub struct StorePart {
    /// Its id (`prt_…`, in creation order).
    pub id: String,
    /// Its message.
    pub message: String,
    /// `text`, `reasoning`, `tool`, `step-start`, `step-finish`, …
    pub kind: String,
    /// A `step-finish` part's token counts.
    pub tokens: Option<Tokens>,
    /// A text or reasoning part's start, a tool's start, Unix ms.
    pub start_ms: Option<f64>,
    /// A text or reasoning part's end, a tool's end, Unix ms.
    pub end_ms: Option<f64>,
}

/// What a store holds, read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Store {
    /// Its sessions.
    pub sessions: Vec<StoreSession>,
    /// Its messages.
    pub messages: Vec<StoreMessage>,
    /// Its messages' parts.
    pub parts: Vec<StorePart>,
    /// Files read (databases or JSON files).
    pub files: usize,
    /// What could not be read.
    pub unread: Vec<Unread>,
}

fn ms(v: &Value, path: &[&str]) -> Option<f64> {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_f64)
        .filter(|x| x.is_finite())
}

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(String::from)
}

fn message_of(v: &Value, id: Option<String>, session: Option<String>) -> Option<StoreMessage> {
    let role = text(v, "role")?;
    Some(StoreMessage {
        id: id.or_else(|| text(v, "id"))?,
        session: session.or_else(|| text(v, "sessionID"))?,
        created_ms: ms(v, &["time", "created"])?,
        completed_ms: ms(v, &["time", "completed"]),
        parent_message: text(v, "parentID"),
        tokens: v.get("tokens").and_then(Tokens::of),
        compaction: role == "assistant"
            && (v.get("summary").and_then(Value::as_bool) == Some(true)
                || text(v, "mode").as_deref() == Some("compaction")
                || text(v, "agent").as_deref() == Some("compaction")),
        role,
    })
}

fn part_of(v: &Value, id: Option<String>, message: Option<String>) -> Option<StorePart> {
    let kind = text(v, "type")?;
    let (start, end) = if kind == "tool" {
        (
            ms(v, &["state", "time", "start"]),
            ms(v, &["state", "time", "end"]),
        )
    } else {
        (ms(v, &["time", "start"]), ms(v, &["time", "end"]))
    };
    Some(StorePart {
        id: id.or_else(|| text(v, "id"))?,
        message: message.or_else(|| text(v, "messageID"))?,
        tokens: (kind == "step-finish")
            .then(|| v.get("tokens").and_then(Tokens::of))
            .flatten(),
        start_ms: start,
        end_ms: end,
        kind,
    })
}

fn unread(file: &Path, line: usize, reason: impl Into<String>) -> Unread {
    Unread {
        file: file.display().to_string(),
        line,
        reason: reason.into(),
    }
}

/// The databases of a store folder: `opencode.db` and `opencode-*.db`
/// (gzipped too: `.db.gz`).
pub fn databases(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                let n = n.strip_suffix(".gz").unwrap_or(n);
                n == "opencode.db" || (n.starts_with("opencode-") && n.ends_with(".db"))
            })
        })
        .collect();
    out.sort();
    out
}

/// The JSON storage folder of a store folder: `dir/storage`, or `dir`
/// itself when it holds `message/` and `part/`.
pub fn json_storage(dir: &Path) -> Option<PathBuf> {
    let holds = |d: &Path| d.join("message").is_dir() && d.join("session").is_dir();
    if holds(&dir.join("storage")) {
        Some(dir.join("storage"))
    } else if holds(dir) {
        Some(dir.to_path_buf())
    } else {
        None
    }
}

/// Reads the SQLite store at `db` (gzipped or not) into `store`. The
/// database (and its write-ahead log) is copied aside first, so a running
/// OpenCode is never disturbed and its last writes are read.
pub fn read_database(db: &Path, store: &mut Store) -> Result<(), Unread> {
    let scratch =
        tempfile::tempdir().map_err(|e| unread(db, 0, format!("no scratch folder: {e}")))?;
    let copy = scratch.path().join("opencode.db");
    let cannot = |e: std::io::Error| unread(db, 0, format!("cannot read it: {e}"));
    let mut input = super::open(db)?;
    let mut out = std::fs::File::create(&copy).map_err(cannot)?;
    std::io::copy(&mut input, &mut out).map_err(cannot)?;
    drop(out);
    for suffix in ["-wal", "-shm"] {
        let mut side = db.as_os_str().to_owned();
        side.push(suffix);
        let side = PathBuf::from(side);
        if side.is_file() {
            let mut target = copy.as_os_str().to_owned();
            target.push(suffix);
            std::fs::copy(&side, PathBuf::from(target))
                .map_err(|e| unread(&side, 0, format!("cannot read it: {e}")))?;
        }
    }
    let not_a_store = |e: rusqlite::Error| {
        unread(
            db,
            0,
            format!("not an OpenCode session database ({e}); the file is left out"),
        )
    };
    let conn = rusqlite::Connection::open(&copy).map_err(not_a_store)?;
    let mut q = conn
        .prepare("SELECT id, parent_id FROM session")
        .map_err(not_a_store)?;
    let sessions = q
        .query_map([], |r| {
            Ok(StoreSession {
                id: r.get(0)?,
                parent: r.get(1)?,
            })
        })
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(not_a_store)?;
    // Only the fields read: a message's or part's text never leaves SQLite.
    let mut q = conn
        .prepare(
            "SELECT id, session_id, json_extract(data, '$.role'), \
             json_extract(data, '$.time.created'), json_extract(data, '$.time.completed'), \
             json_extract(data, '$.parentID'), json_extract(data, '$.tokens'), \
             json_type(data, '$.summary'), json_extract(data, '$.mode'), \
             json_extract(data, '$.agent'), time_created FROM message",
        )
        .map_err(not_a_store)?;
    let rows = q
        .query_map([], |r| {
            let tokens: Option<String> = r.get(6)?;
            let role: Option<String> = r.get(2)?;
            let is = |i: usize, what: &str| -> rusqlite::Result<bool> {
                Ok(r.get::<_, Option<String>>(i)?.as_deref() == Some(what))
            };
            let compaction = is(7, "true")? || is(8, "compaction")? || is(9, "compaction")?;
            let created: Option<f64> = r.get(3)?;
            let fallback: Option<f64> = r.get(10)?;
            Ok(role
                .zip(created.or(fallback))
                .map(|(role, created_ms)| StoreMessage {
                    id: r.get(0).unwrap_or_default(),
                    session: r.get(1).unwrap_or_default(),
                    compaction: role == "assistant" && compaction,
                    role,
                    created_ms,
                    completed_ms: r.get(4).ok().flatten(),
                    parent_message: r.get(5).ok().flatten(),
                    tokens: tokens
                        .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                        .and_then(|v| Tokens::of(&v)),
                }))
        })
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(not_a_store)?;
    let messages: Vec<StoreMessage> = rows.into_iter().flatten().collect();
    let mut q = conn
        .prepare(
            "SELECT id, message_id, json_extract(data, '$.type'), \
             CASE json_extract(data, '$.type') WHEN 'step-finish' THEN json_extract(data, '$.tokens') END, \
             coalesce(json_extract(data, '$.state.time.start'), json_extract(data, '$.time.start')), \
             coalesce(json_extract(data, '$.state.time.end'), json_extract(data, '$.time.end')) \
             FROM part",
        )
        .map_err(not_a_store)?;
    let rows = q
        .query_map([], |r| {
            let kind: Option<String> = r.get(2)?;
            let tokens: Option<String> = r.get(3)?;
            Ok(kind.map(|kind| StorePart {
                id: r.get(0).unwrap_or_default(),
                message: r.get(1).unwrap_or_default(),
                kind,
                tokens: tokens
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .and_then(|v| Tokens::of(&v)),
                start_ms: r.get(4).ok().flatten(),
                end_ms: r.get(5).ok().flatten(),
            }))
        })
        .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
        .map_err(not_a_store)?;
    store.sessions.extend(sessions);
    store.messages.extend(messages);
    store.parts.extend(rows.into_iter().flatten());
    store.files += 1;
    Ok(())
}

/// One JSON file of the older layout, or why it cannot be read.
fn json_file(path: &Path) -> Result<Value, Unread> {
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_string(&mut text))
        .map_err(|e| unread(path, 0, format!("cannot read it: {e}; left out")))?;
    serde_json::from_str(&text)
        .map_err(|e| unread(path, e.line(), format!("not JSON ({e}); left out")))
}

fn json_files(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() && depth > 0 {
            json_files(&p, depth - 1, out);
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
        }
    }
}

/// Calls `f` with every JSON file under `dir` (`depth` folders down) and
/// the name of the folder holding it; files that are not JSON are named.
fn each_json(
    dir: &Path,
    depth: usize,
    store: &mut Store,
    mut f: impl FnMut(&Path, &Value, Option<String>, &mut Store),
) {
    let mut files = Vec::new();
    json_files(dir, depth, &mut files);
    for path in files {
        match json_file(&path) {
            Ok(v) => {
                store.files += 1;
                let owner = path
                    .parent()
                    .and_then(Path::file_name)
                    .map(|s| s.to_string_lossy().into_owned());
                f(&path, &v, owner, store);
            }
            Err(u) => store.unread.push(u),
        }
    }
}

/// Reads the JSON storage folder `dir` (`session/`, `message/`, `part/`)
/// into `store`; a file that is not JSON is named and left out.
pub fn read_json_storage(dir: &Path, store: &mut Store) {
    each_json(&dir.join("session"), 2, store, |_, v, _, store| {
        if let Some(id) = text(v, "id") {
            store.sessions.push(StoreSession {
                id,
                parent: text(v, "parentID"),
            });
        }
    });
    each_json(&dir.join("message"), 1, store, |path, v, owner, store| {
        let session = text(v, "sessionID").or(owner);
        match message_of(v, None, session) {
            Some(m) => store.messages.push(m),
            None => store.unread.push(unread(
                path,
                0,
                "not an OpenCode message (no role or time); left out",
            )),
        }
    });
    each_json(&dir.join("part"), 1, store, |_, v, owner, store| {
        let message = text(v, "messageID").or(owner);
        if let Some(p) = part_of(v, None, message) {
            store.parts.push(p);
        }
    });
}

/// Reads the store at `path`: a store folder (its databases, else its JSON
/// storage), a `storage/` folder, or one database file.
pub fn read_store(path: &Path) -> Result<Store, Unread> {
    let mut store = Store::default();
    if path.is_file() {
        read_database(path, &mut store)?;
        return Ok(store);
    }
    let dbs = databases(path);
    if !dbs.is_empty() {
        for db in dbs {
            if let Err(u) = read_database(&db, &mut store) {
                store.unread.push(u);
            }
        }
    } else if let Some(dir) = json_storage(path) {
        read_json_storage(&dir, &mut store);
    } else {
        return Err(unread(
            path,
            0,
            "holds no OpenCode store (opencode.db, or storage/ with session/ and message/)",
        ));
    }
    if store.messages.is_empty() {
        let why = store
            .unread
            .first()
            .map_or_else(|| "no messages".to_string(), ToString::to_string);
        return Err(unread(
            path,
            0,
            format!("no OpenCode session could be read: {why}"),
        ));
    }
    Ok(store)
}

/// One model call of a message: a step's tokens and times.
struct Step {
    tokens: Tokens,
    start_ms: f64,
    end_ms: f64,
}

/// The steps of assistant message `m` from its parts (sorted by id).
fn steps(m: &StoreMessage, parts: &[&StorePart]) -> Vec<Step> {
    let finishes = parts.iter().filter(|p| p.kind == "step-finish").count();
    let mut out = Vec::new();
    let mut start = m.created_ms;
    let mut answer_end: Option<f64> = None;
    let mut tools_end: Option<f64> = None;
    let max = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    };
    for p in parts {
        match p.kind.as_str() {
            "text" | "reasoning" => answer_end = max(answer_end, p.end_ms.or(p.start_ms)),
            "tool" => {
                answer_end = max(answer_end, p.start_ms);
                tools_end = max(tools_end, p.end_ms);
            }
            "step-finish" if finishes > 1 => {
                let tokens = p.tokens.or(m.tokens).unwrap_or_default();
                let end = answer_end.unwrap_or(start).max(start);
                out.push(Step {
                    tokens,
                    start_ms: start,
                    end_ms: end,
                });
                start = tools_end.unwrap_or(end).max(end);
                answer_end = None;
                tools_end = None;
            }
            _ => {}
        }
    }
    if finishes <= 1 {
        let tokens = parts
            .iter()
            .find_map(|p| p.tokens)
            .or(m.tokens)
            .unwrap_or_default();
        let end = answer_end
            .or(m.completed_ms)
            .unwrap_or(m.created_ms)
            .max(m.created_ms);
        out.push(Step {
            tokens,
            start_ms: m.created_ms,
            end_ms: end,
        });
    }
    out
}

/// The trace of a store at `block_size` tokens a block.
pub fn to_trace(store: Store, block_size: u32) -> Trace {
    let parent_of: HashMap<&str, &str> = store
        .sessions
        .iter()
        .filter_map(|s| s.parent.as_deref().map(|p| (s.id.as_str(), p)))
        .collect();
    let mut parts_of: HashMap<&str, Vec<&StorePart>> = HashMap::new();
    for p in &store.parts {
        parts_of.entry(p.message.as_str()).or_default().push(p);
    }
    for list in parts_of.values_mut() {
        list.sort_by(|a, b| a.id.cmp(&b.id));
    }
    let mut messages: Vec<&StoreMessage> = store.messages.iter().collect();
    messages.sort_by(|a, b| a.created_ms.total_cmp(&b.created_ms).then(a.id.cmp(&b.id)));
    let mut unread_list = store.unread.clone();
    // (call, what it answered) in order of their start.
    let mut raw: Vec<(TraceCall, Option<String>)> = Vec::new();
    for m in messages.iter().filter(|m| m.role == "assistant") {
        let parts = parts_of.get(m.id.as_str()).map_or(&[][..], Vec::as_slice);
        let parent = parent_of.get(m.session.as_str()).map(|p| p.to_string());
        for step in steps(m, parts) {
            let implausible = step.tokens.prompt() > super::MAX_PROMPT_TOKENS
                || step.tokens.answer() > super::MAX_PROMPT_TOKENS;
            if step.tokens.prompt() == 0 || implausible {
                unread_list.push(Unread {
                    file: format!("message {}", m.id),
                    line: 0,
                    reason: if step.tokens.prompt() == 0 {
                        "no token counts (an error or an abort); left out".into()
                    } else {
                        format!(
                            "a prompt of {} and an answer of {} tokens; left out",
                            step.tokens.prompt(),
                            step.tokens.answer()
                        )
                    },
                });
                continue;
            }
            let kind = if m.compaction {
                CallKind::Compaction
            } else if parent.is_some() {
                CallKind::Subagent
            } else {
                CallKind::Agent
            };
            raw.push((
                TraceCall {
                    session: Some(m.session.clone()),
                    parent: parent.clone(),
                    kind: Some(kind),
                    task: None,
                    at_s: step.start_ms / 1000.0,
                    input_tokens: step.tokens.prompt(),
                    output_tokens: step.tokens.answer(),
                    hash_ids: Vec::new(),
                    after: None,
                    ttft_s: None,
                    duration_s: Some((step.end_ms - step.start_ms).max(0.0) / 1000.0),
                },
                m.parent_message.clone(),
            ));
        }
    }
    raw.sort_by(|a, b| a.0.at_s.total_cmp(&b.0.at_s));
    let origin = raw.first().map_or(0.0, |(c, _)| c.at_s);
    let (mut calls, answered): (Vec<TraceCall>, Vec<Option<String>>) = raw.into_iter().unzip();
    for c in &mut calls {
        c.at_s -= origin;
    }
    let mut trace = rebuilt_trace(calls, &[], block_size);
    // The store's times are the student's clock, Unix milliseconds.
    trace.clock_utc = (origin > 0.0)
        .then(|| chrono::DateTime::from_timestamp_millis((origin * 1000.0).round() as i64))
        .flatten();
    // Reasons and coding requests: a main-session step answering another
    // user message than the session's previous step waited for a person.
    let roots = trace.roots();
    let mut last_user: HashMap<String, Option<String>> = HashMap::new();
    let mut task_of: HashMap<String, usize> = HashMap::new();
    for (i, c) in trace.calls.iter_mut().enumerate() {
        let Some(root) = roots[i].clone() else {
            continue;
        };
        let main = c.parent.is_none();
        let task = task_of.entry(root.clone()).or_insert(0);
        if main {
            let session = c.session.clone().unwrap_or_default();
            let new_message = match last_user.get(&session) {
                Some(previous) => *previous != answered[i],
                None => false,
            };
            last_user.insert(session, answered[i].clone());
            if new_message {
                *task += 1;
            }
            if let Some(d) = &mut c.after {
                d.reason = if new_message {
                    WaitReason::Person
                } else {
                    WaitReason::Tool
                };
            }
        } else if let Some(d) = &mut c.after {
            d.reason = WaitReason::Tool;
        }
        c.task = Some(*task);
    }
    trace.unread = unread_list;
    trace
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: u64, output: u64, read: u64) -> Option<Tokens> {
        Some(Tokens {
            input,
            output,
            reasoning: 0,
            cache_read: read,
            cache_write: 0,
        })
    }

    fn msg(id: &str, session: &str, role: &str, at: f64, parent: &str) -> StoreMessage {
        StoreMessage {
            id: id.into(),
            session: session.into(),
            role: role.into(),
            created_ms: at,
            completed_ms: Some(at + 900.0),
            parent_message: (!parent.is_empty()).then(|| parent.to_string()),
            tokens: None,
            compaction: false,
        }
    }

    fn part(id: &str, message: &str, kind: &str, start: f64, end: f64) -> StorePart {
        StorePart {
            id: id.into(),
            message: message.into(),
            kind: kind.into(),
            tokens: None,
            start_ms: Some(start),
            end_ms: Some(end),
        }
    }

    fn store() -> Store {
        let mut a1 = msg("msg_02", "ses_a", "assistant", 1_000.0, "msg_01");
        a1.tokens = tokens(900, 50, 100);
        let mut s1 = msg("msg_03", "ses_b", "assistant", 1_500.0, "msg_x");
        s1.tokens = tokens(400, 20, 0);
        let mut a2 = msg("msg_04", "ses_a", "assistant", 4_000.0, "msg_01");
        a2.tokens = tokens(1_200, 40, 0);
        let mut a3 = msg("msg_06", "ses_a", "assistant", 30_000.0, "msg_05");
        a3.tokens = tokens(1_400, 10, 0);
        let failed = msg("msg_07", "ses_a", "assistant", 40_000.0, "msg_05");
        Store {
            sessions: vec![
                StoreSession {
                    id: "ses_a".into(),
                    parent: None,
                },
                StoreSession {
                    id: "ses_b".into(),
                    parent: Some("ses_a".into()),
                },
            ],
            messages: vec![
                msg("msg_01", "ses_a", "user", 900.0, ""),
                a1,
                s1,
                a2,
                msg("msg_05", "ses_a", "user", 25_000.0, ""),
                a3,
                failed,
            ],
            parts: vec![
                part("prt_1", "msg_02", "text", 1_100.0, 1_300.0),
                part("prt_2", "msg_02", "tool", 1_400.0, 3_000.0),
                part("prt_3", "msg_03", "text", 1_600.0, 2_500.0),
                part("prt_4", "msg_04", "text", 4_100.0, 4_600.0),
            ],
            files: 1,
            unread: Vec::new(),
        }
    }

    #[test]
    fn a_store_becomes_calls_with_sizes_waits_and_subagents() {
        let t = to_trace(store(), 16);
        assert_eq!(t.calls.len(), 4);
        let sizes: Vec<(u64, u64)> = t
            .calls
            .iter()
            .map(|c| (c.input_tokens, c.output_tokens))
            .collect();
        assert_eq!(
            sizes,
            vec![(1_000, 50), (400, 20), (1_200, 40), (1_400, 10)]
        );
        assert_eq!(t.calls[0].at_s, 0.0);
        // Ended when its tool started: 0.4 s.
        assert_eq!(t.calls[0].duration_s, Some(0.4));
        let sub = &t.calls[1];
        assert_eq!(sub.kind, Some(CallKind::Subagent));
        assert_eq!(sub.parent.as_deref(), Some("ses_a"));
        let d = sub.after.expect("waits for the task call");
        assert_eq!((d.call, d.reason), (0, WaitReason::Tool));
        assert!((d.gap_s - 0.1).abs() < 1e-9, "{d:?}");
        // The parent's next step waits for the subagent's answer.
        let d = t.calls[2].after.expect("waits");
        assert_eq!((d.call, d.reason), (1, WaitReason::Tool));
        // A new user message: a person's wait, the next coding request.
        let d = t.calls[3].after.expect("waits");
        assert_eq!((d.call, d.reason), (2, WaitReason::Person));
        assert_eq!(t.calls[3].task, Some(1));
        assert_eq!(t.unread.len(), 1, "the failed message is named");
        assert!(t.unread[0].file.contains("msg_07"));
        // Blocks as a capture's: the agent's next step carries the first on.
        assert!(t.calls[2].carries_on(&t.calls[0], 16));
    }

    #[test]
    fn several_steps_in_one_message_are_several_calls() {
        let mut m = msg("msg_02", "ses_a", "assistant", 1_000.0, "msg_01");
        m.tokens = tokens(2_000, 60, 0);
        let mut f1 = part("prt_3", "msg_02", "step-finish", 0.0, 0.0);
        f1.tokens = tokens(900, 30, 0);
        let mut f2 = part("prt_6", "msg_02", "step-finish", 0.0, 0.0);
        f2.tokens = tokens(1_100, 30, 0);
        let s = Store {
            sessions: vec![StoreSession {
                id: "ses_a".into(),
                parent: None,
            }],
            messages: vec![m],
            parts: vec![
                part("prt_1", "msg_02", "text", 1_100.0, 1_200.0),
                part("prt_2", "msg_02", "tool", 1_300.0, 2_000.0),
                f1,
                part("prt_4", "msg_02", "text", 2_100.0, 2_400.0),
                part("prt_5", "msg_02", "tool", 2_500.0, 2_600.0),
                f2,
            ],
            files: 1,
            unread: Vec::new(),
        };
        let t = to_trace(s, 16);
        assert_eq!(t.calls.len(), 2);
        assert_eq!(t.calls[1].input_tokens, 1_100);
        assert!(
            (t.calls[1].at_s - 1.0).abs() < 1e-9,
            "after the first step's tool"
        );
        assert!((t.calls[1].duration_s.unwrap() - 0.5).abs() < 1e-9);
    }

    #[test]
    fn json_storage_files_are_read_and_bad_ones_named() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("storage");
        let w = |rel: &str, v: &str| {
            let p = root.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, v).unwrap();
        };
        w(
            "session/global/ses_a.json",
            r#"{"id":"ses_a","title":"secret","time":{"created":1}}"#,
        );
        w(
            "message/ses_a/msg_01.json",
            r#"{"id":"msg_01","sessionID":"ses_a","role":"user","time":{"created":900}}"#,
        );
        w(
            "message/ses_a/msg_02.json",
            r#"{"id":"msg_02","sessionID":"ses_a","role":"assistant","parentID":"msg_01","time":{"created":1000,"completed":2000},"tokens":{"input":700,"output":20,"reasoning":5,"cache":{"read":300,"write":0}}}"#,
        );
        w("message/ses_a/msg_03.json", r#"{"id":"msg_03", "role": "#);
        w(
            "part/msg_02/prt_01.json",
            r#"{"id":"prt_01","messageID":"msg_02","type":"text","text":"hello","time":{"start":1100,"end":1500}}"#,
        );
        let s = read_store(dir.path()).expect("reads");
        assert_eq!(s.files, 4);
        assert_eq!(s.unread.len(), 1);
        assert!(s.unread[0].file.ends_with("msg_03.json"), "{:?}", s.unread);
        let t = to_trace(s, 16);
        assert_eq!(t.calls.len(), 1);
        assert_eq!(
            (t.calls[0].input_tokens, t.calls[0].output_tokens),
            (1_000, 25)
        );
        assert_eq!(t.calls[0].duration_s, Some(0.5));
        let e = read_store(&dir.path().join("storage/part")).unwrap_err();
        assert!(e.reason.contains("holds no OpenCode store"), "{e}");
    }
}

#[cfg(test)]
mod database_tests {
    use super::*;
    use std::io::Write;

    /// A database of OpenCode's tables (the columns read), one session of
    /// one call.
    fn database(path: &Path) {
        let conn = rusqlite::Connection::open(path).unwrap();
        conn.execute_batch(
            "CREATE TABLE session (id text PRIMARY KEY, parent_id text, title text);
             CREATE TABLE message (id text PRIMARY KEY, session_id text, time_created integer, data text);
             CREATE TABLE part (id text PRIMARY KEY, message_id text, session_id text, data text);
             INSERT INTO session VALUES ('ses_a', NULL, 'a secret title');
             INSERT INTO message VALUES ('msg_1', 'ses_a', 900, '{\"role\":\"user\",\"time\":{\"created\":900}}');
             INSERT INTO message VALUES ('msg_2', 'ses_a', 1000, '{\"role\":\"assistant\",\"parentID\":\"msg_1\",\"time\":{\"created\":1000,\"completed\":3000},\"tokens\":{\"input\":500,\"output\":40,\"reasoning\":0,\"cache\":{\"read\":1500,\"write\":0}}}');
             INSERT INTO part VALUES ('prt_1', 'msg_2', 'ses_a', '{\"type\":\"text\",\"text\":\"a secret answer\",\"time\":{\"start\":1200,\"end\":1800}}');",
        )
        .unwrap();
    }

    #[test]
    fn a_database_is_read_plain_or_gzipped() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("opencode.db");
        database(&plain);
        let gz_dir = dir.path().join("gz");
        std::fs::create_dir_all(&gz_dir).unwrap();
        let mut gz = flate2::write::GzEncoder::new(
            std::fs::File::create(gz_dir.join("opencode.db.gz")).unwrap(),
            flate2::Compression::fast(),
        );
        gz.write_all(&std::fs::read(&plain).unwrap()).unwrap();
        gz.finish().unwrap();
        for source in [plain.clone(), dir.path().to_path_buf(), gz_dir] {
            let store = read_store(&source).unwrap_or_else(|e| panic!("{e}"));
            let t = to_trace(store, 16);
            assert_eq!(t.calls.len(), 1, "{source:?}");
            assert_eq!(
                (t.calls[0].input_tokens, t.calls[0].output_tokens),
                (2_000, 40)
            );
            assert_eq!(t.calls[0].duration_s, Some(0.8));
        }
        let e = read_store(&dir.path().join("nothing")).unwrap_err();
        assert!(e.reason.contains("holds no OpenCode store"), "{e}");
    }
}
