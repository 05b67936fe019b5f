//! The neutral vocabulary that results files hold and every layer shares:
//! which endpoint a call went to, the stable error kinds runs group failures
//! by, who counted a token figure, and the provenance recorded with a run.
//! It depends on nothing else in the crate, so `results` and `report` can use
//! it without reaching into the client (`openai`), the drivers or the twin;
//! those re-export these types from their old places.

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

/// Provenance recorded with every result (what to share with results: profile, image digest,
/// model revision, DGX OS version; plus the driver).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// Server profile name, e.g. `classroom-64k`.
    pub profile: Option<String>,
    /// vLLM image digest.
    pub image_digest: Option<String>,
    /// Model revision.
    pub model_revision: Option<String>,
    /// DGX OS version.
    pub dgx_os_version: Option<String>,
    /// NVIDIA driver version.
    pub driver_version: Option<String>,
}

/// Largest concurrency level accepted (`--concurrency`, bench targets).
pub const MAX_CONCURRENCY: u32 = 4096;

/// A prompt shape: a name and a target input size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// About 512 input tokens.
    Short,
    /// About 16,384 input tokens.
    Long,
    /// About this many input tokens (`--shapes 2048`), named by the number.
    Sized(u32),
}

impl Shape {
    /// Every shape, in default run order.
    pub const ALL: [Shape; 2] = [Shape::Short, Shape::Long];

    /// The name used in flags and results (`short`, `long`, or the number
    /// of input tokens).
    pub fn name(self) -> std::borrow::Cow<'static, str> {
        match self {
            Shape::Short => std::borrow::Cow::Borrowed("short"),
            Shape::Long => std::borrow::Cow::Borrowed("long"),
            Shape::Sized(n) => std::borrow::Cow::Owned(n.to_string()),
        }
    }

    /// The target input size, tokens.
    pub fn input_tokens(self) -> u64 {
        match self {
            Shape::Short => 512,
            Shape::Long => 16_384,
            Shape::Sized(n) => u64::from(n),
        }
    }

    /// Looks a shape up by name (case-insensitive), or a whole number of
    /// input tokens from 16 to 1,048,576.
    pub fn from_name(name: &str) -> Option<Shape> {
        let name = name.trim();
        if let Ok(n) = name.parse::<u32>() {
            return (16..=1 << 20).contains(&n).then_some(Shape::Sized(n));
        }
        Shape::ALL
            .into_iter()
            .find(|s| s.name().eq_ignore_ascii_case(name))
    }
}
