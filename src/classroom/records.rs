//! What a classroom run records: one line per model call (`requests.jsonl`)
//! and one per coding request (`tasks.jsonl`), written through a
//! [`RecordSink`] as they finish.

use std::fs::File;
use std::io::Write;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::openai::{ErrorKind, TokenSource};
use crate::results::{JsonlWriter, ResultsError, RunFolder};

/// Why a model call was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallKind {
    /// The session title (once per student session, beside its first step).
    Title,
    /// A step of the main agent.
    Agent,
    /// A step of an explore subagent started by the `task` tool.
    Subagent,
    /// A compaction (summary) request.
    Compaction,
}

/// One model call, after its retries. Times are simulated seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// The student, by index (0-based); never the API key.
    pub user: usize,
    /// The session id sent as `x-session-id`.
    pub session: String,
    /// The coding request this call belongs to (0 = the exercise).
    pub task: usize,
    /// Why the call was made.
    pub kind: CallKind,
    /// When the first attempt was sent, seconds since the run started.
    pub started_at: f64,
    /// Prompt tokens of the last attempt, as counted by the server.
    pub prompt_tokens: Option<u64>,
    /// Output tokens of the last attempt.
    pub output_tokens: u64,
    /// Who counted `output_tokens`.
    pub token_source: TokenSource,
    /// Time to first token of the last attempt, seconds.
    pub ttft_s: Option<f64>,
    /// Duration (sent → end of stream) of the last attempt, seconds.
    pub duration_s: f64,
    /// First attempt sent → last attempt finished, including the waits
    /// between retries, seconds: what the student waited for this call.
    pub wait_s: f64,
    /// Retries made (0 = the first attempt was the last).
    pub retries: u32,
    /// The error kind of each failed attempt that was retried.
    pub retried_kinds: Vec<ErrorKind>,
    /// The error of the last attempt; `None` when the call succeeded.
    pub error_kind: Option<ErrorKind>,
    /// Tool calls in the answer.
    pub tool_calls: usize,
}

impl RequestRecord {
    /// Whether the call succeeded in the end.
    pub fn is_ok(&self) -> bool {
        self.error_kind.is_none()
    }

    /// Output speed while generating, tokens per second:
    /// output tokens / (duration − TTFT). `None` for failures, a missing
    /// TTFT, fewer than 2 output tokens or no generation time.
    pub fn output_speed(&self) -> Option<f64> {
        let ttft = self.ttft_s?;
        let gen = self.duration_s - ttft;
        (self.is_ok() && self.output_tokens >= 2 && gen > 0.0)
            .then(|| self.output_tokens as f64 / gen)
    }
}

/// How a coding request ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskOutcome {
    /// The agent answered without tool calls.
    Completed,
    /// A model call failed for good (after retries, or not retryable).
    Failed,
    /// Stopped before the agent finished: the step cap, or the drain limit
    /// after the run's window.
    CutOff,
}

/// One coding request of one student. Times are simulated seconds since the
/// run started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskRecord {
    /// The student, by index.
    pub user: usize,
    /// 0 = the lab exercise, 1.. = follow-ups.
    pub index: usize,
    /// When the student sent it.
    pub start: f64,
    /// When the agent finished (or gave up).
    pub end: f64,
    /// Sum of the waits ([`RequestRecord::wait_s`]) of this request's agent,
    /// subagent and compaction calls, seconds: the time the student waited
    /// on the model across all steps. The title call runs beside the first
    /// step and is not counted.
    pub model_time_s: f64,
    /// Model calls made, title included.
    pub calls: usize,
    /// Output tokens of all those calls.
    pub output_tokens: u64,
    /// Tool calls executed.
    pub tool_calls: usize,
    /// Tool calls that returned an error to the model.
    pub tool_errors: usize,
    /// Compactions performed.
    pub compactions: usize,
    /// How it ended.
    pub outcome: TaskOutcome,
    /// For a failure: the error kind of the call that failed.
    pub error_kind: Option<ErrorKind>,
}

/// Where records go as they finish: a run's files ([`JsonlSink`]), or memory
/// alone ([`MemorySink`], for tests).
pub trait RecordSink: Send + Sync {
    /// One finished model call.
    fn request(&self, record: &RequestRecord) -> std::io::Result<()>;
    /// One finished coding request.
    fn task(&self, record: &TaskRecord) -> std::io::Result<()>;
}

/// Keeps records in memory.
#[derive(Debug, Default)]
pub struct MemorySink {
    requests: Mutex<Vec<RequestRecord>>,
    tasks: Mutex<Vec<TaskRecord>>,
}

impl MemorySink {
    /// The model calls recorded so far.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.requests.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// The coding requests recorded so far.
    pub fn tasks(&self) -> Vec<TaskRecord> {
        self.tasks.lock().map(|v| v.clone()).unwrap_or_default()
    }
}

impl RecordSink for MemorySink {
    fn request(&self, record: &RequestRecord) -> std::io::Result<()> {
        if let Ok(mut v) = self.requests.lock() {
            v.push(record.clone());
        }
        Ok(())
    }

    fn task(&self, record: &TaskRecord) -> std::io::Result<()> {
        if let Ok(mut v) = self.tasks.lock() {
            v.push(record.clone());
        }
        Ok(())
    }
}

/// The records' JSON-lines sink, the one a classroom run ships with and
/// tests use: each record becomes one line written and flushed at once
/// ([`JsonlWriter`]: `kill -9` loses nothing finished), model calls to one
/// writer (`requests.jsonl`), coding requests to another (`tasks.jsonl`).
/// It also keeps every record in memory ([`JsonlSink::requests`],
/// [`JsonlSink::tasks`]), for a summary after an interruption.
pub struct JsonlSink<W: Write + Send = File> {
    memory: MemorySink,
    requests: Mutex<JsonlWriter<W, RequestRecord>>,
    tasks: Mutex<JsonlWriter<W, TaskRecord>>,
}

impl JsonlSink<File> {
    /// A sink appending to `requests.jsonl` and `tasks.jsonl` of `folder`.
    pub fn in_folder(folder: &RunFolder) -> Result<Self, crate::error::Error> {
        Ok(Self::from_writers(
            folder.appender(crate::results::REQUESTS_JSONL)?,
            folder.appender(crate::results::TASKS_JSONL)?,
        ))
    }
}

impl<W: Write + Send> JsonlSink<W> {
    /// A sink over two writers (for files, open them in append mode).
    pub fn new(requests: W, tasks: W) -> Self {
        Self::from_writers(JsonlWriter::new(requests), JsonlWriter::new(tasks))
    }

    /// A sink over two line writers.
    pub fn from_writers(
        requests: JsonlWriter<W, RequestRecord>,
        tasks: JsonlWriter<W, TaskRecord>,
    ) -> Self {
        JsonlSink {
            memory: MemorySink::default(),
            requests: Mutex::new(requests),
            tasks: Mutex::new(tasks),
        }
    }

    /// The model calls recorded so far.
    pub fn requests(&self) -> Vec<RequestRecord> {
        self.memory.requests()
    }

    /// The coding requests recorded so far.
    pub fn tasks(&self) -> Vec<TaskRecord> {
        self.memory.tasks()
    }

    /// Gives back the two writers.
    pub fn into_inner(self) -> (W, W) {
        let r = self
            .requests
            .into_inner()
            .unwrap_or_else(|p| p.into_inner());
        let t = self.tasks.into_inner().unwrap_or_else(|p| p.into_inner());
        (r.into_inner(), t.into_inner())
    }
}

/// Appends one line. A poisoned lock is taken over: the writer keeps no
/// state across lines that a panic could have left half done.
fn write_line<W: Write, T: Serialize>(
    w: &Mutex<JsonlWriter<W, T>>,
    value: &T,
) -> std::io::Result<()> {
    let mut w = w.lock().unwrap_or_else(|e| e.into_inner());
    w.append(value).map_err(|e| match e {
        ResultsError::Write(io) => io,
        ResultsError::JsonWrite(json) => std::io::Error::other(json),
        other => std::io::Error::other(other),
    })
}

impl<W: Write + Send> RecordSink for JsonlSink<W> {
    fn request(&self, record: &RequestRecord) -> std::io::Result<()> {
        self.memory.request(record)?;
        write_line(&self.requests, record)
    }

    fn task(&self, record: &TaskRecord) -> std::io::Result<()> {
        self.memory.task(record)?;
        write_line(&self.tasks, record)
    }
}
