//! Parsing of streamed chunks (the JSON of each SSE data event) and assembly
//! of the assistant's answer from them.
//!
//! The serde structs borrow from the event's bytes: strings without escapes
//! are not copied. Unknown fields (`logprobs`, `token_ids`, ...) are skipped.

use std::borrow::Cow;

use serde::Deserialize;

use super::{AssistantMessage, ToolCall, Usage};

/// A JSON string that borrows from the input when it has no escapes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(transparent)]
pub struct JsonStr<'a>(#[serde(borrow)] pub Cow<'a, str>);

impl JsonStr<'_> {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// One streamed chunk: chat (`chat.completion.chunk`), completions
/// (`text_completion`), the final usage chunk (`choices: []`), or an error
/// event (`{"error": ...}`).
#[derive(Debug, Default, Deserialize)]
pub struct Chunk<'a> {
    /// The choices; empty in the final usage chunk.
    #[serde(borrow, default, deserialize_with = "null_as_default")]
    pub choices: Vec<Choice<'a>>,
    /// Token usage (the final chunk, or every chunk with
    /// `continuous_usage_stats`).
    #[serde(default)]
    pub usage: Option<ChunkUsage>,
    /// An error event's payload: an object with `message`, or a string.
    #[serde(default)]
    pub error: Option<serde_json::Value>,
    /// `object`; an old-style error event says `"error"` here.
    #[serde(borrow, default)]
    pub object: Option<JsonStr<'a>>,
    /// The message of an old-style error event (`{"object":"error",...}`).
    #[serde(borrow, default)]
    pub message: Option<JsonStr<'a>>,
}

/// One choice of a chunk.
#[derive(Debug, Default, Deserialize)]
pub struct Choice<'a> {
    /// The choice index (0 unless `n` > 1).
    #[serde(default)]
    pub index: u32,
    /// Chat: the delta.
    #[serde(borrow, default)]
    pub delta: Option<Delta<'a>>,
    /// Completions: the generated text.
    #[serde(borrow, default)]
    pub text: Option<JsonStr<'a>>,
    /// `stop`, `length`, `tool_calls`, `abort`, or null.
    #[serde(borrow, default)]
    pub finish_reason: Option<JsonStr<'a>>,
}

/// A chat delta.
#[derive(Debug, Default, Deserialize)]
pub struct Delta<'a> {
    /// `assistant` in the first chunk.
    #[serde(borrow, default)]
    pub role: Option<JsonStr<'a>>,
    /// A piece of the answer's content.
    #[serde(borrow, default)]
    pub content: Option<JsonStr<'a>>,
    /// A piece of reasoning (vLLM's older field name).
    #[serde(borrow, default)]
    pub reasoning_content: Option<JsonStr<'a>>,
    /// A piece of reasoning (vLLM's newer field name).
    #[serde(borrow, default)]
    pub reasoning: Option<JsonStr<'a>>,
    /// Tool-call deltas.
    #[serde(borrow, default, deserialize_with = "null_as_default")]
    pub tool_calls: Vec<ToolCallDelta<'a>>,
}

/// One tool-call delta: the first of a call has `id` and `function.name`,
/// the later ones fragments of `function.arguments`.
#[derive(Debug, Default, Deserialize)]
pub struct ToolCallDelta<'a> {
    /// Which call (0, 1, ... for parallel calls); absent on some servers.
    #[serde(default)]
    pub index: Option<u32>,
    /// The call's id (first delta only).
    #[serde(borrow, default)]
    pub id: Option<JsonStr<'a>>,
    /// Name and argument fragment.
    #[serde(borrow, default)]
    pub function: Option<FunctionDelta<'a>>,
}

/// The function part of a tool-call delta.
#[derive(Debug, Default, Deserialize)]
pub struct FunctionDelta<'a> {
    /// The function name (first delta only).
    #[serde(borrow, default)]
    pub name: Option<JsonStr<'a>>,
    /// A fragment of the JSON arguments.
    #[serde(borrow, default)]
    pub arguments: Option<JsonStr<'a>>,
}

/// `usage` as sent in a chunk (tokens).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
pub struct ChunkUsage {
    /// Prompt tokens.
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    /// Generated tokens.
    #[serde(default)]
    pub completion_tokens: Option<u64>,
}

fn null_as_default<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

fn non_empty(s: &Option<JsonStr<'_>>) -> bool {
    s.as_ref().is_some_and(|s| !s.0.is_empty())
}

impl Chunk<'_> {
    /// Whether the chunk carries generated text of any kind: non-empty
    /// content, reasoning, completions text, or any tool-call delta. A
    /// role-only chunk with empty content does not.
    pub fn carries_text(&self) -> bool {
        self.choices.iter().any(|c| {
            non_empty(&c.text)
                || c.delta.as_ref().is_some_and(|d| {
                    non_empty(&d.content)
                        || non_empty(&d.reasoning_content)
                        || non_empty(&d.reasoning)
                        || !d.tool_calls.is_empty()
                })
        })
    }

    /// The server's error message if this is an error event.
    pub fn error_message(&self) -> Option<String> {
        if let Some(e) = &self.error {
            return Some(match e {
                serde_json::Value::String(s) => s.clone(),
                serde_json::Value::Object(o) => match o.get("message") {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    _ => e.to_string(),
                },
                other => other.to_string(),
            });
        }
        if self.object.as_ref().is_some_and(|o| o.as_str() == "error") {
            return Some(
                self.message
                    .as_ref()
                    .map_or_else(|| "error event".to_string(), |m| m.as_str().to_string()),
            );
        }
        None
    }
}

/// Why a chunk could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ChunkError {
    /// Not valid JSON (or not valid UTF-8, or not a chunk).
    #[error("bad chunk JSON: {0}")]
    BadJson(String),
    /// The server sent an error event mid-stream; its message.
    #[error("server error in stream: {0}")]
    Server(String),
}

/// Parses one data event. Error events come back as [`ChunkError::Server`].
pub fn parse_chunk(data: &[u8]) -> Result<Chunk<'_>, ChunkError> {
    let chunk: Chunk<'_> =
        serde_json::from_slice(data).map_err(|e| ChunkError::BadJson(e.to_string()))?;
    match chunk.error_message() {
        Some(m) => Err(ChunkError::Server(m)),
        None => Ok(chunk),
    }
}

/// Most tool calls one answer may open; larger indexes are folded into the
/// last one (a guard against a hostile index allocating memory).
const MAX_TOOL_CALLS: usize = 256;

/// Builds the answer, the finish reason and the usage from chunks.
#[derive(Debug, Default, Clone)]
pub struct Assembler {
    /// The answer so far.
    pub message: AssistantMessage,
    /// The finish reason of choice 0, once seen.
    pub finish_reason: Option<String>,
    /// The last usage seen.
    pub usage: Option<Usage>,
    /// Chunks that carried generated text.
    pub text_chunks: u64,
    /// Index of the tool call the last index-less delta went to.
    last_tool: usize,
}

impl Assembler {
    /// A fresh assembler.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes one chunk in. Returns whether it carried generated text.
    pub fn apply(&mut self, chunk: &Chunk<'_>) -> bool {
        if let Some(u) = chunk.usage {
            if u.prompt_tokens.is_some() || u.completion_tokens.is_some() {
                self.usage = Some(Usage {
                    prompt_tokens: u.prompt_tokens.unwrap_or(0),
                    completion_tokens: u.completion_tokens.unwrap_or(0),
                });
            }
        }
        let carries = chunk.carries_text();
        if carries {
            self.text_chunks += 1;
        }
        for choice in chunk.choices.iter().filter(|c| c.index == 0) {
            if let Some(t) = &choice.text {
                self.message.content.push_str(t.as_str());
            }
            if let Some(d) = &choice.delta {
                self.apply_delta(d);
            }
            if let Some(f) = &choice.finish_reason {
                self.finish_reason = Some(f.as_str().to_string());
            }
        }
        carries
    }

    fn apply_delta(&mut self, d: &Delta<'_>) {
        if let Some(c) = &d.content {
            self.message.content.push_str(c.as_str());
        }
        if let Some(r) = d.reasoning_content.as_ref().or(d.reasoning.as_ref()) {
            self.message.reasoning.push_str(r.as_str());
        }
        for tc in &d.tool_calls {
            let idx = match tc.index {
                Some(i) => (i as usize).min(MAX_TOOL_CALLS - 1),
                None => self.last_tool,
            };
            self.last_tool = idx;
            let calls = &mut self.message.tool_calls;
            if calls.len() <= idx {
                calls.resize_with(idx + 1, ToolCall::default);
            }
            let call = &mut calls[idx];
            if let Some(id) = &tc.id {
                if call.id.is_empty() {
                    call.id = id.as_str().to_string();
                }
            }
            if let Some(f) = &tc.function {
                if let Some(n) = &f.name {
                    if call.name.is_empty() {
                        call.name = n.as_str().to_string();
                    }
                }
                if let Some(a) = &f.arguments {
                    call.arguments.push_str(a.as_str());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_strings_are_borrowed() {
        let c = parse_chunk(br#"{"choices":[{"index":0,"delta":{"content":"hi"}}]}"#).unwrap();
        let content = &c.choices[0].delta.as_ref().unwrap().content;
        assert!(matches!(content.as_ref().unwrap().0, Cow::Borrowed("hi")));
        let c = parse_chunk(br#"{"choices":[{"index":0,"delta":{"content":"a\nb"}}]}"#).unwrap();
        let content = &c.choices[0].delta.as_ref().unwrap().content;
        assert_eq!(content.as_ref().unwrap().as_str(), "a\nb");
    }

    #[test]
    fn nulls_are_tolerated() {
        let c = parse_chunk(
            br#"{"choices":null,"usage":null,"error":null,"object":"chat.completion.chunk"}"#,
        )
        .unwrap();
        assert!(c.choices.is_empty() && !c.carries_text());
    }
}
