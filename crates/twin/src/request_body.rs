//! Parsing and validating a `/v1/chat/completions` or `/v1/completions`
//! body the way vLLM does: plain code, no HTTP, so it can be fuzzed.

use std::sync::Arc;

use serde_json::Value;

use super::chunks;
use super::tokenizer;

/// Sampling and stream parameters of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Params {
    /// Output tokens asked for (`max_completion_tokens` or `max_tokens`, else
    /// what is left of the context).
    pub max_tokens: u32,
    /// `min_tokens` (vLLM extra), tokens.
    pub min_tokens: u32,
    /// `ignore_eos` (vLLM extra).
    pub ignore_eos: bool,
    /// `stream`.
    pub stream: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// `stream_options.continuous_usage_stats`.
    pub continuous_usage: bool,
}

/// A valid generation body.
#[derive(Debug, Clone, PartialEq)]
pub struct GenerationBody {
    /// The whole JSON body (shared with the request it came in).
    pub value: Arc<Value>,
    /// The prompt as the model sees it (the chat template applied for chat).
    pub prompt_text: String,
    /// The prompt's token ids (never empty).
    pub prompt_ids: Vec<u32>,
    /// [`tokenizer::text_hash`] of `prompt_text`.
    pub prompt_hash: u64,
    /// The parameters.
    pub params: Params,
}

impl GenerationBody {
    /// The chat messages (empty for completions).
    pub fn messages(&self) -> &[Value] {
        self.value
            .get("messages")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// The tool definitions (empty when none).
    pub fn tools(&self) -> &[Value] {
        self.value
            .get("tools")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// The body's `seed`, if any.
    pub fn seed(&self) -> Option<u64> {
        self.value.get("seed").and_then(Value::as_u64)
    }
}

/// Why a body was refused: the status and vLLM's error fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BodyError {
    /// HTTP status (400 or 404).
    pub status: u16,
    /// The message.
    pub message: String,
    /// vLLM's error type (`BadRequestError`, `NotFoundError`).
    pub kind: &'static str,
    /// The offending parameter, if any.
    pub param: Option<&'static str>,
}

impl BodyError {
    fn bad(message: impl Into<String>, param: Option<&'static str>) -> Self {
        BodyError {
            status: 400,
            message: message.into(),
            kind: "BadRequestError",
            param,
        }
    }

    /// vLLM's JSON error body.
    pub fn to_json(&self) -> String {
        chunks::error_body(&self.message, self.kind, self.param, self.status)
    }
}

/// The completions prompt: a string, or the first string of a list.
pub fn completions_prompt(v: &Value) -> Option<String> {
    match v.get("prompt")? {
        Value::String(s) => Some(s.clone()),
        Value::Array(items) => match items.first()? {
            Value::String(s) => Some(s.clone()),
            _ => None,
        },
        _ => None,
    }
}

/// Parses and validates a chat (`chat = true`) or completions body for a
/// server that serves `served_model` with a context of `max_model_len`
/// tokens. Never panics, whatever the bytes.
pub fn parse_generation_body(
    body: &[u8],
    chat: bool,
    served_model: &str,
    max_model_len: u32,
) -> Result<GenerationBody, BodyError> {
    let value: Value = serde_json::from_slice(body)
        .map_err(|e| BodyError::bad(format!("the body is not valid JSON: {e}"), None))?;
    generation_body_from_value(Arc::new(value), chat, served_model, max_model_len)
}

/// [`parse_generation_body`] for a body already parsed as JSON (the
/// in-process transport's path).
pub fn generation_body_from_value(
    value: Arc<Value>,
    chat: bool,
    served_model: &str,
    max_model_len: u32,
) -> Result<GenerationBody, BodyError> {
    let mut prompts = Prompts {
        tools: &mut |tools: &[Value]| tokenizer::render_tools(tools),
        encode: &mut |text: &str| tokenizer::Encoded {
            ids: tokenizer::encode(text),
            hash: tokenizer::text_hash(text),
        },
    };
    generation_body_encoded(value, chat, served_model, max_model_len, &mut prompts)
}

/// How a body's prompt is rendered and encoded: the tools block
/// ([`tokenizer::render_tools`]) and the ids and hash of the text
/// ([`tokenizer::encode`], [`tokenizer::text_hash`]), each as those
/// functions give them, found another way when a server keeps what it
/// rendered and encoded before (a session's [`tokenizer::PromptCache`]).
pub struct Prompts<'a> {
    /// The tools block of a set of tool definitions.
    pub tools: &'a mut dyn FnMut(&[Value]) -> String,
    /// The ids and hash of a prompt text.
    pub encode: &'a mut dyn FnMut(&str) -> tokenizer::Encoded,
}

/// [`generation_body_from_value`] with the prompt rendered and encoded by
/// `prompts`.
pub fn generation_body_encoded(
    value: Arc<Value>,
    chat: bool,
    served_model: &str,
    max_model_len: u32,
    prompts: &mut Prompts<'_>,
) -> Result<GenerationBody, BodyError> {
    if let Some(m) = value.get("model").and_then(Value::as_str) {
        if m != served_model {
            return Err(BodyError {
                status: 404,
                message: format!("The model `{m}` does not exist."),
                kind: "NotFoundError",
                param: Some("model"),
            });
        }
    }
    let prompt_text = if chat {
        let Some(messages) = value.get("messages").and_then(Value::as_array) else {
            return Err(BodyError::bad("messages is required", Some("messages")));
        };
        let tools = value.get("tools").and_then(Value::as_array);
        let tools_text = (prompts.tools)(tools.map_or(&[], Vec::as_slice));
        tokenizer::render_chat_with_tools(messages, &tools_text)
    } else {
        completions_prompt(&value)
            .ok_or_else(|| BodyError::bad("prompt is required", Some("prompt")))?
    };
    let tokenizer::Encoded {
        ids: prompt_ids,
        hash: prompt_hash,
    } = (prompts.encode)(&prompt_text);
    if prompt_ids.is_empty() {
        return Err(BodyError::bad("the prompt is empty", Some("prompt")));
    }
    let params = params(&value, prompt_ids.len(), max_model_len)?;
    Ok(GenerationBody {
        value,
        prompt_text,
        prompt_ids,
        prompt_hash,
        params,
    })
}

fn params(v: &Value, prompt_len: usize, max_model_len: u32) -> Result<Params, BodyError> {
    let requested = ["max_completion_tokens", "max_tokens"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_u64));
    let limit = u64::from(max_model_len);
    let p = prompt_len as u64;
    let max_tokens = requested.unwrap_or(limit.saturating_sub(p));
    let total = p.saturating_add(max_tokens);
    if total > limit || p >= limit {
        let msg = format!(
            "This model's maximum context length is {limit} tokens. However, you requested {max_tokens} output tokens and your prompt contains {p} input tokens, for a total of {total} tokens. Please reduce the length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value={p})"
        );
        return Err(BodyError::bad(msg, Some("input_tokens")));
    }
    if max_tokens == 0 {
        return Err(BodyError::bad(
            "max_tokens must be at least 1, got 0.",
            Some("max_tokens"),
        ));
    }
    let opts = v.get("stream_options");
    let flag = |o: Option<&Value>, k: &str| o.and_then(|o| o.get(k)).and_then(Value::as_bool);
    Ok(Params {
        max_tokens: u32::try_from(max_tokens).unwrap_or(u32::MAX),
        min_tokens: v
            .get("min_tokens")
            .and_then(Value::as_u64)
            .map_or(0, |m| u32::try_from(m).unwrap_or(u32::MAX)),
        ignore_eos: flag(Some(v), "ignore_eos").unwrap_or(false),
        stream: flag(Some(v), "stream").unwrap_or(false),
        include_usage: flag(opts, "include_usage").unwrap_or(false),
        continuous_usage: flag(opts, "continuous_usage_stats").unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn valid_and_invalid_bodies() {
        let ok = br#"{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":4,"stream":true}"#;
        let b = parse_generation_body(ok, true, "m", 1000).unwrap();
        assert_eq!(b.params.max_tokens, 4);
        assert!(b.params.stream && b.messages().len() == 1 && !b.prompt_ids.is_empty());
        assert_eq!(
            parse_generation_body(b"{", true, "m", 1000)
                .unwrap_err()
                .status,
            400
        );
        let e = parse_generation_body(br#"{"model":"x","prompt":"a"}"#, false, "m", 1000);
        assert_eq!(e.unwrap_err().status, 404);
        let e = parse_generation_body(br#"{"prompt":"a b c","max_tokens":999}"#, false, "m", 10)
            .unwrap_err();
        assert_eq!(e.param, Some("input_tokens"));
        let e =
            parse_generation_body(br#"{"prompt":"a","max_tokens":0}"#, false, "m", 10).unwrap_err();
        assert_eq!(e.param, Some("max_tokens"));
    }

    #[test]
    fn huge_max_tokens_does_not_overflow() {
        let body = format!(r#"{{"prompt":"a","max_tokens":{}}}"#, u64::MAX);
        let e = parse_generation_body(body.as_bytes(), false, "m", 10).unwrap_err();
        assert_eq!(e.param, Some("input_tokens"));
    }
}
