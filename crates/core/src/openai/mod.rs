//! The OpenAI-compatible side: request bodies, SSE decoding, stream events,
//! token usage and the stable error kinds that runs group failures by.
//!
//! Drivers (`bench`, `classroom`) talk to a model only through [`Transport`]:
//! codendum's HTTP client, the twin in process, or anything else that yields
//! a [`CallOutcome`].

pub mod body;
pub mod chunk;
pub mod http_error;
pub mod sse;
pub mod stream;

use std::time::Duration;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use crate::kinds::{Endpoint, ErrorKind, TokenSource};

/// A failed call: its kind, the HTTP status if one arrived, and one message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallError {
    /// Stable kind for grouping.
    pub kind: ErrorKind,
    /// HTTP status, when the server answered.
    pub status: Option<u16>,
    /// A human message (the server's error message when it sent one). Never
    /// contains the API key.
    pub message: String,
    /// The server's `retry-after` / `retry-after-ms`, when present.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub retry_after: Option<Duration>,
}

/// Token usage as the server reported it (`usage` in the last chunk).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt (input) tokens, as counted by the server.
    pub prompt_tokens: u64,
    /// Generated (output) tokens, as counted by the server.
    pub completion_tokens: u64,
}

/// One tool call assembled from the streamed deltas.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ToolCall {
    /// The id the server issued (`chatcmpl-tool-...`).
    pub id: String,
    /// The function name.
    pub name: String,
    /// The concatenated argument fragments (a JSON object as text).
    pub arguments: String,
}

/// The assistant's answer assembled from a stream.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AssistantMessage {
    /// Concatenated `content` (or `text` for completions).
    pub content: String,
    /// Concatenated `reasoning_content` / `reasoning`.
    pub reasoning: String,
    /// Tool calls in index order.
    pub tool_calls: Vec<ToolCall>,
}

/// Everything measured about one call. Times are simulated seconds on the
/// run's [`crate::clock::Clock`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct CallOutcome {
    /// When the request was sent, seconds since the clock's origin.
    pub sent_at: f64,
    /// Request sent → first chunk carrying generated text (content, reasoning
    /// or a tool-call delta), seconds. `None` if no such chunk arrived.
    pub ttft: Option<f64>,
    /// Request sent → `[DONE]` or end of body (or the failure), seconds.
    pub e2e: f64,
    /// HTTP status of the response, if one arrived.
    pub status: Option<u16>,
    /// Usage as reported by the server, if it sent any.
    pub usage: Option<Usage>,
    /// Chunks that carried generated text, as counted by the client.
    pub text_chunks: u64,
    /// Gaps between consecutive text-carrying chunks, seconds (only when the
    /// caller asked for them).
    pub gaps: Vec<f32>,
    /// The finish reason of the (first) choice.
    pub finish_reason: Option<String>,
    /// The assembled answer.
    pub message: AssistantMessage,
    /// `Some` when the call failed.
    pub error: Option<CallError>,
    /// Tokens of the output text by the server's `/tokenize`, when the
    /// stream carried no usage and the caller asked (see
    /// [`TokenSource::Tokenized`]).
    pub tokenized_output: Option<u64>,
    /// Tokens of the prompt by the server's `/tokenize` (chat template
    /// included), in the same case.
    pub tokenized_input: Option<u64>,
}

impl CallOutcome {
    /// Whether the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.error.is_none()
    }

    /// Output tokens and who counted them: the server's usage when present,
    /// otherwise the client's count of text-carrying chunks.
    pub fn output_tokens(&self) -> (u64, TokenSource) {
        match (self.usage, self.tokenized_output) {
            (Some(u), _) => (u.completion_tokens, TokenSource::Server),
            (None, Some(n)) => (n, TokenSource::Tokenized),
            (None, None) => (self.text_chunks, TokenSource::Client),
        }
    }

    /// Input tokens as counted by the server: its usage, else its
    /// `/tokenize` of the prompt when the caller asked.
    pub fn input_tokens(&self) -> Option<u64> {
        self.usage.map(|u| u.prompt_tokens).or(self.tokenized_input)
    }

    /// Mean time per output token, seconds: (E2E − TTFT) / (output tokens − 1).
    /// `None` for failures, a missing TTFT or fewer than two output tokens.
    pub fn tpot(&self) -> Option<f64> {
        let ttft = self.ttft?;
        let (n, _) = self.output_tokens();
        if self.error.is_some() || n < 2 {
            return None;
        }
        Some((self.e2e - ttft) / (n - 1) as f64)
    }
}

/// A request to send: endpoint, JSON body and the API key to present.
#[derive(Debug, Clone)]
pub struct CallRequest {
    /// Chat or completions.
    pub endpoint: Endpoint,
    /// The JSON body (see [`body`] for builders).
    pub body: serde_json::Value,
    /// Bearer token, if any (never logged).
    pub api_key: Option<crate::target::Secret>,
    /// Extra headers (for example OpenCode's `x-session-id`).
    pub headers: Vec<(String, String)>,
    /// Record gaps between text chunks in [`CallOutcome::gaps`].
    pub record_gaps: bool,
}

/// How drivers reach a model: HTTP, or an in-process engine.
pub trait Transport: Send + Sync {
    /// Sends one streaming request and measures it. Never panics and never
    /// returns early without an outcome: failures are in [`CallOutcome::error`].
    fn call(&self, request: CallRequest) -> BoxFuture<'_, CallOutcome>;
}

/// The plain text of a chat message's `content`: the string, or the `text`
/// of each part of an array, one per line; empty for anything else.
pub fn message_text(message: &serde_json::Value) -> String {
    use serde_json::Value;
    match message.get("content") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .filter_map(|p| p.get("text").and_then(Value::as_str))
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kind_names_are_stable() {
        assert_eq!(ErrorKind::from_status(429).as_str(), "http_429");
        assert_eq!(ErrorKind::from_status(502).as_str(), "http_5xx");
        assert_eq!(ErrorKind::from_status(404).as_str(), "http_4xx");
        assert_eq!(
            serde_json::to_string(&ErrorKind::StreamError).unwrap(),
            "\"stream_error\""
        );
    }

    #[test]
    fn tpot_uses_server_usage() {
        let o = CallOutcome {
            ttft: Some(0.5),
            e2e: 3.05,
            usage: Some(Usage {
                prompt_tokens: 10,
                completion_tokens: 256,
            }),
            ..Default::default()
        };
        assert!((o.tpot().unwrap() - 0.01).abs() < 1e-12);
        assert_eq!(o.output_tokens(), (256, TokenSource::Server));
    }
}
