//! What the conversation so far tells the agent: the task, the files it has
//! seen and their contents (with its own edits applied), and what happened
//! since the user's last message (reads, edits, test runs and their outcome).

use std::collections::HashMap;

use serde_json::Value;

use super::paths::{folder_entries, listing_paths, numbered_content, path_tokens};
use super::tools::{Slot, ToolKit, ToolRole};
use super::{fnv1a, mix};
pub mod cache;
mod results;
use results::is_error_result;
pub use results::{is_compile_command, is_test_command, log_failed, program_missing};

/// How a tool call went, read off its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// The tool worked (or said nothing about failing).
    Ok,
    /// The tool reported an error (file not found, string not found, ...).
    Error,
    /// A test run that failed.
    TestFailed,
    /// A test run that passed.
    TestPassed,
    /// A shell command whose program is not installed (`pytest: command not
    /// found`, `No module named pytest`).
    Missing,
}

/// One tool call of the current request and its outcome.
#[derive(Debug, Clone)]
pub struct Event {
    /// 0-based index of the assistant step (since the last user message).
    pub step: usize,
    /// What the tool is for.
    pub role: ToolRole,
    /// The file the call was about, when it names one.
    pub path: Option<String>,
    /// What its result said (`Ok` until a result arrives).
    pub outcome: Outcome,
    /// The result text (empty until it arrives).
    pub result: String,
    /// The command line of a shell call.
    pub command: Option<String>,
    /// The instructions of a subagent (task) call.
    pub prompt: Option<String>,
}

/// The conversation, digested.
#[derive(Debug, Clone, Default)]
pub struct Transcript {
    /// The system prompt text.
    pub system: String,
    /// The last user message: the current task.
    pub task: String,
    /// Every file named so far, in order of first appearance.
    pub files: Vec<String>,
    /// Folders seen in folder listings (OpenCode's `read` of a folder).
    pub dirs: Vec<String>,
    /// Known file contents (from reads and writes, own edits applied).
    pub contents: HashMap<String, String>,
    /// Assistant steps since the last user message.
    pub steps: usize,
    /// Tool calls since the last user message, in order.
    pub events: Vec<Event>,
    /// A seed for the plan of the current request: a hash of its first
    /// assistant step (`None` before that step).
    pub plan_seed: Option<u64>,
    /// Text of all user messages, joined (for titles and summaries).
    pub user_text: String,
    /// Number of messages.
    pub len: usize,
}

#[derive(Debug, Clone)]
struct PendingCall {
    name: String,
    role: Option<ToolRole>,
    args: Value,
    event: Option<usize>,
}

/// The transcript being digested message by message: what [`Transcript::read`]
/// gives for the messages fed so far, and the tool calls still waiting for
/// their results. Feeding a conversation's messages in two parts gives the
/// same digest as reading them at once, so a conversation that grows call by
/// call is read only where it grew (see [`cache`]).
#[derive(Debug, Clone, Default)]
pub struct Reader {
    t: Transcript,
    calls: HashMap<String, PendingCall>,
    /// Whether a user message was fed: the current request's steps and
    /// events are those after the last one.
    seen_user: bool,
}

impl Reader {
    /// Digests the next messages of the conversation, in order.
    pub fn feed(&mut self, messages: &[Value], kit: &ToolKit) {
        for m in messages {
            self.feed_one(m, kit);
        }
    }

    /// The digest of the messages fed so far.
    pub fn transcript(&self) -> &Transcript {
        &self.t
    }

    fn feed_one(&mut self, m: &Value, kit: &ToolKit) {
        let t = &mut self.t;
        t.len += 1;
        let text = codendum_core::openai::message_text(m);
        match m.get("role").and_then(Value::as_str).unwrap_or("") {
            "system" => t.system.push_str(&text),
            "user" => {
                // A new request: what was said since the previous user
                // message is no longer the current request's.
                self.seen_user = true;
                t.steps = 0;
                t.events.clear();
                t.plan_seed = None;
                for call in self.calls.values_mut() {
                    call.event = None;
                }
                t.add_files(path_tokens(&text));
                t.user_text.push_str(&text);
                t.user_text.push('\n');
                t.task = text;
            }
            "assistant" => {
                let current = self.seen_user;
                t.add_files(path_tokens(&text));
                if current {
                    if t.steps == 0 {
                        t.plan_seed = Some(mix(fnv1a(&step_fingerprint(m)), 0x9e37));
                    }
                    t.steps += 1;
                }
                for call in m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    t.record_call(call, current, kit, &mut self.calls);
                }
            }
            "tool" => {
                let id = m.get("tool_call_id").and_then(Value::as_str).unwrap_or("");
                if let Some(call) = self.calls.remove(id) {
                    t.apply_result(call, &text, kit);
                }
            }
            _ => {}
        }
    }
}

impl Transcript {
    /// Digests the messages, mapping calls to roles with the offered tools.
    pub fn read(messages: &[Value], kit: &ToolKit) -> Self {
        let mut reader = Reader::default();
        reader.feed(messages, kit);
        reader.t
    }

    /// Adds file names seen in the conversation. A bare name (`Message.java`
    /// from a stack trace) stands for a known path ending in it, so it is not
    /// added beside that path, and a full path replaces a bare name seen before.
    fn add_files(&mut self, files: Vec<String>) {
        for f in files {
            if self.files.contains(&f) {
                continue;
            }
            if f.contains('/') {
                let base = super::paths::basename(&f).to_string();
                self.files.retain(|k| *k != base);
            } else {
                let suffix = format!("/{f}");
                if self.files.iter().any(|k| k.ends_with(&suffix)) {
                    continue;
                }
            }
            self.files.push(f);
        }
    }

    fn record_call(
        &mut self,
        call: &Value,
        current: bool,
        kit: &ToolKit,
        calls: &mut HashMap<String, PendingCall>,
    ) {
        let id = call.get("id").and_then(Value::as_str).unwrap_or("");
        let f = call.get("function").unwrap_or(&Value::Null);
        let name = f.get("name").and_then(Value::as_str).unwrap_or("");
        let args: Value = f
            .get("arguments")
            .and_then(Value::as_str)
            .and_then(|a| serde_json::from_str(a).ok())
            .unwrap_or(Value::Null);
        let role = kit.by_name(name).map(|tool| tool.role);
        let event = match (current, role) {
            (true, Some(role)) => {
                self.events.push(Event {
                    step: self.steps.saturating_sub(1),
                    role,
                    path: arg(kit, name, Slot::Path, &args),
                    outcome: Outcome::Ok,
                    result: String::new(),
                    command: arg(kit, name, Slot::Command, &args),
                    prompt: arg(kit, name, Slot::Prompt, &args),
                });
                Some(self.events.len() - 1)
            }
            _ => None,
        };
        calls.insert(
            id.to_string(),
            PendingCall {
                name: name.to_string(),
                role,
                args,
                event,
            },
        );
    }

    fn apply_result(&mut self, call: PendingCall, text: &str, kit: &ToolKit) {
        let Some(role) = call.role else {
            self.add_files(path_tokens(text));
            return;
        };
        let name = call.name.as_str();
        let path = arg(kit, name, Slot::Path, &call.args);
        let mut outcome = if is_error_result(text) {
            Outcome::Error
        } else {
            Outcome::Ok
        };
        match role {
            ToolRole::Read => match (&path, numbered_content(text)) {
                (Some(p), Some(content)) if outcome == Outcome::Ok => {
                    self.add_files(vec![p.clone()]);
                    self.contents.insert(p.clone(), content);
                }
                (Some(p), None) if outcome == Outcome::Ok => match folder_entries(text, p) {
                    Some((files, dirs)) => {
                        self.add_files(files);
                        for d in dirs {
                            if !self.dirs.contains(&d) {
                                self.dirs.push(d);
                            }
                        }
                    }
                    None => self.add_files(listing_paths(text, Some(p))),
                },
                (Some(p), _) => {
                    self.files.retain(|f| f != p);
                    self.contents.remove(p);
                }
                _ => {}
            },
            ToolRole::List | ToolRole::Glob => self.add_files(listing_paths(text, path.as_deref())),
            ToolRole::Grep | ToolRole::Task => self.add_files(path_tokens(text)),
            ToolRole::Shell => {
                let command = arg(kit, name, Slot::Command, &call.args).unwrap_or_default();
                outcome = self.shell_outcome(&command, text, outcome);
            }
            ToolRole::Edit if outcome == Outcome::Ok => {
                let old = arg(kit, name, Slot::Old, &call.args).unwrap_or_default();
                let new = arg(kit, name, Slot::New, &call.args).unwrap_or_default();
                if let Some(c) = path.as_ref().and_then(|p| self.contents.get_mut(p)) {
                    if !old.is_empty() && c.contains(&old) {
                        *c = c.replacen(&old, &new, 1);
                    }
                }
            }
            ToolRole::Write if outcome == Outcome::Error => {
                // The path exists (or cannot be written): never write it again.
                if let Some(p) = &path {
                    self.add_files(vec![p.clone()]);
                }
            }
            ToolRole::Write if outcome == Outcome::Ok => {
                let content = arg(kit, name, Slot::Content, &call.args).unwrap_or_default();
                if let Some(p) = &path {
                    self.add_files(vec![p.clone()]);
                    self.contents.insert(p.clone(), content);
                }
            }
            _ => {}
        }
        if let Some(e) = call.event.and_then(|i| self.events.get_mut(i)) {
            e.outcome = outcome;
            e.result = text.to_string();
        }
    }

    /// How a shell command went: a test run passes or fails, a compile
    /// fails on errors, a missing program is `Missing`; other commands may
    /// list files.
    fn shell_outcome(&mut self, command: &str, text: &str, outcome: Outcome) -> Outcome {
        let test = is_test_command(command);
        let compile = is_compile_command(command);
        if program_missing(text) && (test || compile) {
            Outcome::Missing
        } else if test && log_failed(text) {
            Outcome::TestFailed
        } else if test {
            Outcome::TestPassed
        } else if compile && log_failed(text) {
            Outcome::Error
        } else {
            if !compile {
                self.add_files(listing_paths(text, None));
            }
            outcome
        }
    }

    /// Events of a role in the current request.
    pub fn count(&self, role: ToolRole) -> usize {
        self.events.iter().filter(|e| e.role == role).count()
    }

    /// The last test run of the current request.
    pub fn last_test(&self) -> Option<&Event> {
        self.events
            .iter()
            .rev()
            .find(|e| matches!(e.outcome, Outcome::TestFailed | Outcome::TestPassed))
    }

    /// Events after the last test run (all events when there was none).
    pub fn since_last_test(&self) -> &[Event] {
        let start = self
            .events
            .iter()
            .rposition(|e| matches!(e.outcome, Outcome::TestFailed | Outcome::TestPassed))
            .map(|i| i + 1)
            .unwrap_or(0);
        &self.events[start..]
    }

    /// Whether a call of this role failed in the current request.
    pub fn failed(&self, role: ToolRole) -> bool {
        self.events
            .iter()
            .any(|e| e.role == role && e.outcome == Outcome::Error)
    }

    /// Failed edits of a file in the current request.
    pub fn failed_edits(&self, path: &str) -> usize {
        self.events
            .iter()
            .filter(|e| e.role == ToolRole::Edit && e.outcome == Outcome::Error)
            .filter(|e| e.path.as_deref() == Some(path))
            .count()
    }

    /// Successful edits and writes in the current request.
    pub fn changes(&self) -> Vec<&Event> {
        self.events
            .iter()
            .filter(|e| matches!(e.role, ToolRole::Edit | ToolRole::Write))
            .filter(|e| e.outcome == Outcome::Ok)
            .collect()
    }
}

/// A string argument of a call by slot (falls back to any key naming a path).
fn arg(kit: &ToolKit, name: &str, slot: Slot, args: &Value) -> Option<String> {
    let key = kit.by_name(name).and_then(|t| t.param(slot));
    let v = match key {
        Some(k) => args.get(k),
        None if slot == Slot::Path => args.as_object().and_then(|o| {
            o.iter()
                .find(|(k, _)| {
                    let k = k.to_ascii_lowercase();
                    k.contains("path") || k.contains("file")
                })
                .map(|(_, v)| v)
        }),
        None => None,
    }?;
    v.as_str().map(String::from)
}

/// What an assistant message says and calls, with its tool calls' ids: the
/// ids come from the request that answered it, so two sessions whose first
/// steps read alike still plan their requests apart.
fn step_fingerprint(message: &Value) -> String {
    let mut s = codendum_core::openai::message_text(message);
    for call in message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        s.push_str(&call["id"].to_string());
        s.push_str(&call["function"]["name"].to_string());
        s.push_str(&call["function"]["arguments"].to_string());
    }
    s
}
