//! The records of a capture: the folder's header and one line per call.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::openai::TokenSource;
use crate::results::classroom_records::CallKind;
use crate::results::schema::{CAPTURE_KIND, CAPTURE_SCHEMA_VERSION};

/// Why the client made a call (the rule that tells them apart is the
/// proxy's, from the request's headers and body).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CaptureKind {
    /// The session title (no tools).
    Title,
    /// A step of the main agent (tools, no parent session).
    Agent,
    /// A step of a subagent (tools, `x-parent-session-id`).
    Subagent,
    /// A compaction (summary) request.
    Compaction,
    /// Anything else (`/v1/models`, a body that is not JSON, …).
    Other,
}

impl CaptureKind {
    /// The classroom's kind of a model call; `None` for `other`.
    pub fn call_kind(self) -> Option<CallKind> {
        match self {
            CaptureKind::Title => Some(CallKind::Title),
            CaptureKind::Agent => Some(CallKind::Agent),
            CaptureKind::Subagent => Some(CallKind::Subagent),
            CaptureKind::Compaction => Some(CallKind::Compaction),
            CaptureKind::Other => None,
        }
    }
}

/// What the capture reads off a request before forwarding it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestInfo {
    /// `x-session-id`.
    pub session: Option<String>,
    /// `x-parent-session-id` (`parent_session` in `calls.jsonl`).
    #[serde(rename = "parent_session")]
    pub parent: Option<String>,
    /// Why the call was made.
    pub kind: CaptureKind,
    /// Whether the body parsed as JSON (an empty body counts as JSON-less
    /// but not as bad: `false` only for a non-empty body that is not JSON).
    pub body_json: bool,
    /// `stream` of the body.
    pub stream: Option<bool>,
    /// `model` of the body.
    pub model: Option<String>,
    /// `max_tokens` (or `max_completion_tokens`) of the body, tokens.
    pub max_tokens: Option<u64>,
    /// Tool definitions offered.
    pub tools_offered: usize,
    /// Messages sent.
    pub messages: usize,
}

/// One tool call of an answer, as recorded: its name and the size of its
/// arguments (never their content).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallLine {
    /// The tool's name.
    pub name: String,
    /// Bytes of the JSON arguments.
    pub argument_bytes: usize,
}

/// One line of `calls.jsonl`. Times are seconds; nothing of the request or
/// answer text is kept beyond tool names (and never a key).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallLine {
    /// 1, 2, … in the order requests arrived.
    pub seq: u64,
    /// When the request arrived, seconds since the capture started.
    pub started_at_s: f64,
    /// When the request arrived, UTC.
    pub started_utc: DateTime<Utc>,
    /// HTTP method.
    pub method: String,
    /// Request path (without the query).
    pub path: String,
    /// The student: 1 for the first API key the capture saw, 2 for the
    /// second, … (an ordinal within this capture, never the key); absent
    /// for a request without a key and in captures made before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub student: Option<u32>,
    /// What the request said of itself: session and parent session, kind,
    /// and the body's `stream`, `model`, `max_tokens`, tools and messages
    /// (flattened: one level of fields in `calls.jsonl`).
    #[serde(flatten)]
    pub request: RequestInfo,
    /// Request body, bytes.
    pub request_bytes: usize,
    /// The upstream's status (502: the upstream could not be reached).
    pub status: u16,
    /// Prompt tokens, from the usage.
    pub prompt_tokens: Option<u64>,
    /// Output tokens: the usage's, else the chunks carrying text.
    pub output_tokens: Option<u64>,
    /// Who counted `output_tokens`: `server` (usage) or `client` (chunks).
    pub tokens_counted_by: Option<TokenSource>,
    /// Request arrived → first chunk carrying generated text, seconds.
    pub ttft_s: Option<f64>,
    /// Request arrived → last byte of the answer passed on, seconds.
    pub duration_s: f64,
    /// `finish_reason` of choice 0.
    pub finish_reason: Option<String>,
    /// The answer's tool calls: names and argument sizes.
    pub tool_calls: Vec<ToolCallLine>,
    /// End of this session's previous answer → this request, seconds.
    pub client_time_s: Option<f64>,
    /// What the client did in that time: a client-time kind
    /// (`user_pause`: the student read the answer and wrote a new message),
    /// `task` (a subagent ran) or `retry` (the previous call failed).
    pub client_time_kind: Option<String>,
    /// Response body passed on, bytes.
    pub response_bytes: u64,
    /// What went wrong, if anything (upstream unreachable, stream cut, …).
    pub error: Option<String>,
}

impl CallLine {
    /// Whether the call got a 2xx answer that arrived whole.
    pub fn is_ok(&self) -> bool {
        (200..300).contains(&self.status) && self.error.is_none()
    }
}

/// `capture.json`: what was captured, from where, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureHeader {
    /// [`CAPTURE_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// Always `"capture"`.
    pub kind: String,
    /// The codendum version that captured.
    pub codendum_version: String,
    /// The upstream base URL, without credentials.
    pub upstream: String,
    /// Where the capture listened (`http://ADDR/v1` or `https://ADDR/v1`,
    /// the base URL given to OpenCode).
    pub listen: String,
    /// When the capture started, UTC.
    pub started_utc: DateTime<Utc>,
    /// When it ended (written on exit), UTC.
    pub ended_utc: Option<DateTime<Utc>>,
    /// Calls passed on (written on exit), recorded or not.
    pub calls: Option<u64>,
    /// Whether `prompt.json` (message text) is kept; `false` for
    /// `--no-text`; absent in captures from before the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<bool>,
    /// Calls passed on whose line is not in `calls.jsonl` (the disk was
    /// full, failing or too slow); absent when every call was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub calls_not_recorded: Option<u64>,
    /// Why lines were lost, in a few words (the first write error, or the
    /// disk not keeping up); absent when none was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<String>,
}

impl CaptureHeader {
    /// The header of a capture from `upstream`, listening on `listen`,
    /// starting now.
    pub fn new(upstream: String, listen: String) -> Self {
        CaptureHeader {
            schema_version: CAPTURE_SCHEMA_VERSION,
            kind: CAPTURE_KIND.into(),
            codendum_version: env!("CARGO_PKG_VERSION").into(),
            upstream,
            listen,
            started_utc: Utc::now(),
            ended_utc: None,
            calls: None,
            text: None,
            calls_not_recorded: None,
            loss: None,
        }
    }
}
