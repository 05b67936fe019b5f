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

/// Which OpenAI endpoint a call goes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Endpoint {
    /// `POST {base}/chat/completions`
    #[default]
    Chat,
    /// `POST {base}/completions`
    Completions,
}

impl Endpoint {
    /// The path below the base URL (which ends in `/v1`).
    pub fn path(self) -> &'static str {
        match self {
            Endpoint::Chat => "/chat/completions",
            Endpoint::Completions => "/completions",
        }
    }
}

/// A stable, groupable kind of failure. Runs count errors by kind, never by
/// message text; the serialized names (`http_429`, `timeout`, ...) are part of
/// the results format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum ErrorKind {
    /// HTTP 400 (for vLLM: prompt too long, bad parameters).
    #[serde(rename = "http_400")]
    Http400,
    /// HTTP 401 (bad or missing API key).
    #[serde(rename = "http_401")]
    Http401,
    /// Any other 4xx status.
    #[serde(rename = "http_4xx")]
    Http4xx,
    /// HTTP 429 (a proxy's rate limit).
    #[serde(rename = "http_429")]
    Http429,
    /// HTTP 503 (queue full, or the engine is down).
    #[serde(rename = "http_503")]
    Http503,
    /// Any other 5xx status.
    #[serde(rename = "http_5xx")]
    Http5xx,
    /// The request or the stream exceeded the per-request timeout.
    #[serde(rename = "timeout")]
    Timeout,
    /// The connection could not be made (refused, DNS, TLS handshake).
    #[serde(rename = "connect")]
    Connect,
    /// The TLS handshake failed: the server's certificate is not trusted by
    /// the CA given, has expired, or names another host (a proxy whose
    /// certificate lapsed mid-class).
    #[serde(rename = "tls")]
    Tls,
    /// The server sent an `{"error": ...}` event mid-stream, or the
    /// connection broke while the body was being read.
    #[serde(rename = "stream_error")]
    StreamError,
    /// A chunk was not valid JSON (or not valid UTF-8).
    #[serde(rename = "bad_json")]
    BadJson,
    /// The body ended without `[DONE]` and without a finish reason.
    #[serde(rename = "incomplete")]
    Incomplete,
    /// The stream ended properly (`[DONE]` or a finish reason) without any
    /// text, reasoning or tool call: an answer with nothing in it (seen from
    /// llama.cpp's server as a role chunk followed by `[DONE]`).
    #[serde(rename = "empty_answer")]
    EmptyAnswer,
}

impl ErrorKind {
    /// The stable name used in results files (`http_429`, `timeout`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Http400 => "http_400",
            ErrorKind::Http401 => "http_401",
            ErrorKind::Http4xx => "http_4xx",
            ErrorKind::Http429 => "http_429",
            ErrorKind::Http503 => "http_503",
            ErrorKind::Http5xx => "http_5xx",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Connect => "connect",
            ErrorKind::Tls => "tls",
            ErrorKind::StreamError => "stream_error",
            ErrorKind::BadJson => "bad_json",
            ErrorKind::Incomplete => "incomplete",
            ErrorKind::EmptyAnswer => "empty_answer",
        }
    }

    /// The kind for an HTTP error status.
    pub fn from_status(status: u16) -> Self {
        match status {
            400 => ErrorKind::Http400,
            401 => ErrorKind::Http401,
            429 => ErrorKind::Http429,
            503 => ErrorKind::Http503,
            500..=599 => ErrorKind::Http5xx,
            _ => ErrorKind::Http4xx,
        }
    }

    /// Whether an OpenCode-like client retries this failure (408, 409, 429,
    /// 5xx, connection problems and time-outs; a stream cut off before its
    /// end counts as a connection reset). A 400 is never retried.
    pub fn is_retryable(self) -> bool {
        matches!(
            self,
            ErrorKind::Http429
                | ErrorKind::Http503
                | ErrorKind::Http5xx
                | ErrorKind::Timeout
                | ErrorKind::Connect
                | ErrorKind::StreamError
                | ErrorKind::Incomplete
        )
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who counted a token figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// The server's `usage`.
    Server,
    /// The client, counting chunks that carried generated text (the server sent
    /// no usage). A chunk can carry several tokens: a lower bound.
    Client,
    /// The server's `/tokenize`, asked by the client for the text received
    /// (and the prompt sent) when the stream carried no usage: exact.
    Tokenized,
}

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
    /// The JSON body (see [`body`] for builders), shared: a call retried
    /// sends the same body again without copying a long conversation.
    pub body: std::sync::Arc<serde_json::Value>,
    /// Bearer token, if any (never logged).
    pub api_key: Option<crate::access::Secret>,
    /// Extra headers (for example OpenCode's `x-session-id`).
    pub headers: Vec<(String, String)>,
    /// Record gaps between text chunks in [`CallOutcome::gaps`].
    pub record_gaps: bool,
    /// Told the call's TTFT as soon as its first token arrives, before the
    /// call ends; `None` when nobody watches.
    pub first_token: Option<FirstToken>,
}

/// A call's first token, told while the call still streams: the TTFT,
/// seconds from the attempt's send, once one has arrived. Clones share one
/// value, so the caller keeps a clone and the transport notes it.
#[derive(Debug, Clone)]
pub struct FirstToken(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl Default for FirstToken {
    fn default() -> Self {
        FirstToken(std::sync::Arc::new(std::sync::atomic::AtomicU64::new(
            f64::NAN.to_bits(),
        )))
    }
}

impl FirstToken {
    /// Notes the first token `ttft_s` seconds after the attempt was sent
    /// (the first note of an attempt holds).
    pub fn note(&self, ttft_s: f64) {
        use std::sync::atomic::Ordering;
        let _ = self.0.compare_exchange(
            f64::NAN.to_bits(),
            ttft_s.to_bits(),
            Ordering::Relaxed,
            Ordering::Relaxed,
        );
    }

    /// Forgets the note, for an attempt sent again after a failure.
    pub fn clear(&self) {
        self.0
            .store(f64::NAN.to_bits(), std::sync::atomic::Ordering::Relaxed);
    }

    /// The TTFT noted, seconds; `None` before the first token.
    pub fn get(&self) -> Option<f64> {
        let v = f64::from_bits(self.0.load(std::sync::atomic::Ordering::Relaxed));
        (!v.is_nan()).then_some(v)
    }
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
