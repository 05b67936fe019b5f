//! The records of a classroom run: one line per model call
//! (`requests.jsonl`) and one per coding request (`tasks.jsonl`). Plain data,
//! so that reports read them without the classroom; the classroom writes
//! them through its record sinks as they finish.

use serde::{Deserialize, Serialize};

use crate::openai::{ErrorKind, TokenSource};

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
pub struct CallRecord {
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
    /// Who counted `output_tokens`. Named `token_source` in folders before
    /// schema version 3.
    #[serde(alias = "token_source")]
    pub tokens_counted_by: TokenSource,
    /// Time to first token of the last attempt, seconds.
    pub ttft_s: Option<f64>,
    /// End-to-end latency (sent → end of stream) of the last attempt,
    /// seconds. Named `duration_s` in folders before schema version 3.
    #[serde(alias = "duration_s")]
    pub e2e_s: f64,
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

impl CallRecord {
    /// Whether the call succeeded in the end.
    pub fn is_ok(&self) -> bool {
        self.error_kind.is_none()
    }

    /// When the call ended, seconds since the run started: its first
    /// attempt's start plus what the student waited (every attempt and the
    /// waits between them), not just the last attempt's duration.
    pub fn ended_at(&self) -> f64 {
        self.started_at + self.wait_s.max(self.e2e_s)
    }

    /// Output speed while generating, tokens per second:
    /// output tokens / (E2E − TTFT). `None` for failures, a missing
    /// TTFT, fewer than 2 output tokens or no generation time.
    pub fn output_speed(&self) -> Option<f64> {
        let ttft = self.ttft_s?;
        let gen = self.e2e_s - ttft;
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
    /// Sum of the waits ([`CallRecord::wait_s`]) of this request's agent,
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

impl TaskRecord {
    /// [`TaskRecord::model_time_s`] of a coding request's calls: the sum of
    /// their waits, the title's left out (it runs beside the first step).
    pub fn model_time_of<'a>(calls: impl IntoIterator<Item = &'a CallRecord>) -> f64 {
        calls
            .into_iter()
            .filter(|r| r.kind != CallKind::Title)
            .map(|r| r.wait_s)
            .sum()
    }
}
