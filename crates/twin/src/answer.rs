//! What the twin answers: the seam between the engine/HTTP layer (which
//! decides *when* tokens come out) and a [`Responder`] (which decides *what*
//! they say). The default responder writes filler prose or code; the agent
//! persona answers tool-using conversations with tool calls.

use serde_json::Value;

/// A request as a responder sees it.
#[derive(Debug, Clone)]
pub struct AnswerRequest<'a> {
    /// Chat messages in OpenAI form (empty for `/v1/completions`).
    pub messages: &'a [Value],
    /// Tool definitions in OpenAI form (`{"type":"function","function":{...}}`).
    pub tools: &'a [Value],
    /// The prompt text for `/v1/completions` (empty for chat).
    pub prompt: &'a str,
    /// The request's output limit, tokens.
    pub max_tokens: u32,
    /// Whether the request asked to ignore end-of-sequence (generate exactly
    /// `max_tokens`).
    pub ignore_eos: bool,
    /// A seed derived from the request content and the twin's seed, so the same
    /// conversation gets the same answer.
    pub seed: u64,
    /// The client's session id (its `x-session-id` header, such as
    /// OpenCode's), empty when it sent none: what ties a session's
    /// conversations together when the client compacts them.
    pub session: &'a str,
}

/// One part of an answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerPart {
    /// Plain text (`content` deltas).
    Text(String),
    /// A tool call: `function.name` and its JSON arguments as text.
    ToolCall {
        /// The function name, one of the offered tools.
        name: String,
        /// A JSON object, as text.
        arguments: String,
    },
}

/// The whole answer, before it is cut into tokens.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PlannedAnswer {
    /// Text and tool calls in order. Text, when present, comes first.
    pub parts: Vec<AnswerPart>,
}

impl PlannedAnswer {
    /// An answer of plain text.
    pub fn text(text: impl Into<String>) -> Self {
        PlannedAnswer {
            parts: vec![AnswerPart::Text(text.into())],
        }
    }

    /// The text parts joined, as a client's `content` would read (tool
    /// calls left out).
    pub fn content(&self) -> String {
        self.parts
            .iter()
            .filter_map(|p| match p {
                AnswerPart::Text(t) => Some(t.as_str()),
                AnswerPart::ToolCall { .. } => None,
            })
            .collect()
    }

    /// Whether any part is a tool call.
    pub fn has_tool_calls(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, AnswerPart::ToolCall { .. }))
    }
}

/// Decides what the model says. Implementations are deterministic for a given
/// [`AnswerRequest::seed`].
pub trait Responder: Send + Sync {
    /// Plans the answer to one request.
    fn plan(&self, request: &AnswerRequest<'_>) -> PlannedAnswer;
}
