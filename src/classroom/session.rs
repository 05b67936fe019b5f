//! The state of a run, of a student and of a session's conversation.

use std::sync::Mutex;

use rand::Rng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::config::ClassroomConfig;
use super::prompt::tool_names;
use super::records::RecordSink;
use super::shell::ShellState;
use super::status::LiveStatus;
use super::workspace::Workspace;
use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::openai::{ErrorKind, Transport};
use codendum_core::results::classroom_records::{CallKind, CallRecord, TaskRecord};

/// What every student shares during a run.
pub(crate) struct Shared {
    pub config: ClassroomConfig,
    /// The class's tool times, shared by every student's shell.
    pub tool_s: std::sync::Arc<codendum_core::class::ToolTimes>,
    pub transport: std::sync::Arc<dyn Transport>,
    pub clock: Clock,
    pub sink: std::sync::Arc<dyn RecordSink>,
    pub status: std::sync::Arc<LiveStatus>,
    /// Clock seconds at the run's start.
    pub origin: f64,
    pub requests: Mutex<Vec<CallRecord>>,
    pub tasks: Mutex<Vec<TaskRecord>>,
    pub sink_error: Mutex<Option<std::io::Error>>,
    /// Turns true when the run is asked to stop (Ctrl-C); `None`: never.
    pub stop: Option<tokio::sync::watch::Receiver<bool>>,
    /// Seconds since the start at which the class's window ends (no new
    /// request after it); infinite for a class without one.
    pub window_end_s: f64,
}

impl Shared {
    /// Simulated seconds since the run started.
    pub fn now(&self) -> f64 {
        self.clock.now_secs() - self.origin
    }

    /// Whether a call that failed with `kind` is sent again: OpenCode's
    /// rule (a retryable error, at most [`super::retry::MAX_RETRIES`]
    /// times), except after a stop, and except a call that cannot reach the
    /// server once the class's window is over: a server gone at the end of
    /// a class would otherwise hold the run for a minute of back-off.
    pub fn sends_again(&self, kind: ErrorKind, retries_so_far: u32) -> bool {
        kind.is_retryable()
            && retries_so_far < super::retry::MAX_RETRIES
            && !self.stopping()
            && !(kind == ErrorKind::Connect && self.now() >= self.window_end_s)
    }

    /// Whether a stop was asked for: start nothing new.
    pub fn stopping(&self) -> bool {
        self.stop.as_ref().is_some_and(|r| *r.borrow())
    }

    /// Completes when a stop is asked for; pends forever without one (or
    /// when its sender is gone).
    pub async fn stopped(&self) {
        if let Some(mut r) = self.stop.clone() {
            if r.wait_for(|s| *s).await.is_ok() {
                return;
            }
        }
        std::future::pending::<()>().await
    }

    pub fn past_drain_limit(&self) -> bool {
        self.config
            .drain_limit
            .is_some_and(|d| self.now() >= (self.config.duration + d).as_secs_f64())
    }

    fn keep_sink_error(&self, result: std::io::Result<()>) {
        if let Err(e) = result {
            if let Ok(mut slot) = self.sink_error.lock() {
                slot.get_or_insert(e);
            }
        }
    }

    pub fn record_request(&self, r: &CallRecord) {
        self.keep_sink_error(self.sink.request(r));
        if let Ok(mut v) = self.requests.lock() {
            v.push(r.clone());
        }
    }

    pub fn record_task(&self, t: &TaskRecord) {
        self.keep_sink_error(self.sink.task(t));
        if let Ok(mut v) = self.tasks.lock() {
            v.push(t.clone());
        }
    }
}

/// One student's private state.
pub(crate) struct Student {
    pub user: usize,
    pub key: Option<Secret>,
    pub rng: ChaCha8Rng,
    pub workspace: Workspace,
    pub shell: ShellState,
    pub titled: bool,
    /// Turns true when the student is told to leave (a class that shrinks).
    pub leave: Option<tokio::sync::watch::Receiver<bool>>,
}

impl Student {
    /// Whether the student was told to leave: start nothing new.
    pub fn leaving(&self) -> bool {
        self.leave.as_ref().is_some_and(|r| *r.borrow())
    }
}

/// A new OpenCode-style session id (`ses_` + 24 hex digits), seeded.
pub(crate) fn session_id(rng: &mut impl Rng) -> String {
    format!("ses_{:024x}", rng.gen::<u128>() >> 32)
}

/// One session's conversation (the system message is kept apart).
pub(crate) struct Conversation {
    pub id: String,
    pub parent: Option<String>,
    pub kind: CallKind,
    pub system: String,
    pub tools: Vec<Value>,
    pub offered: Vec<String>,
    pub messages: Vec<Value>,
    pub step_cap: usize,
    /// Prompt tokens at which this session compacts (the class's draw);
    /// `None`: only at the context limit.
    pub compact_at: Option<u64>,
    /// The session's rank in the class's prompt sizes by call
    /// (`agent.prompt_tokens_by_call`, drawn once per session); `None`:
    /// the class has none, or a subagent's conversation.
    pub growth_rank: Option<f64>,
    /// Main-agent calls this conversation has made.
    pub steps_done: u32,
    /// The index of the session's recorded row when the class draws
    /// sessions whole with their prompt sizes (picked from its first
    /// answer, as the model picks it); `None` before that answer, without
    /// sized rows, or in a subagent's conversation.
    pub row: Option<usize>,
    /// The session's first answer as it was received: what picks the
    /// session's recorded row, kept because a compaction replaces it in
    /// `messages` with the summary.
    pub first_answer: Option<Value>,
}

impl Conversation {
    pub fn main(config: &ClassroomConfig, id: String) -> Self {
        Conversation {
            id,
            parent: None,
            kind: CallKind::Agent,
            system: config.prompt.system.clone(),
            offered: tool_names(&config.prompt.tools),
            tools: config.prompt.tools.clone(),
            messages: Vec::new(),
            step_cap: config.step_cap,
            compact_at: None,
            growth_rank: None,
            first_answer: None,
            steps_done: 0,
            row: None,
        }
    }

    pub fn explore(config: &ClassroomConfig, id: String, parent: &str, task: &str) -> Self {
        Conversation {
            id,
            parent: Some(parent.to_string()),
            kind: CallKind::Subagent,
            system: config.prompt.explore_system.clone(),
            offered: tool_names(&config.prompt.explore_tools),
            tools: config.prompt.explore_tools.clone(),
            messages: vec![json!({"role": "user", "content": task})],
            step_cap: config.subagent_step_cap,
            compact_at: None,
            growth_rank: None,
            first_answer: None,
            steps_done: 0,
            row: None,
        }
    }
}

/// Running totals of one coding request.
pub(crate) struct TaskAcc {
    pub index: usize,
    pub model_time: f64,
    pub calls: usize,
    pub output_tokens: u64,
    pub tool_calls: usize,
    pub tool_errors: usize,
    pub compactions: usize,
}

impl TaskAcc {
    pub fn add(&mut self, r: &CallRecord) {
        self.calls += 1;
        self.output_tokens += r.output_tokens;
        if r.kind != CallKind::Title {
            self.model_time += r.wait_s;
        }
    }
}

/// How an agent loop ended.
pub(crate) enum LoopEnd {
    Answered(String),
    Failed(ErrorKind),
    CutOff,
}
