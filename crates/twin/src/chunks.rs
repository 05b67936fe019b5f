//! The bytes vLLM 0.30 writes: stream chunks and whole responses, with its
//! field order. Plain string building (no `Map` reordering).

use super::answer::{AnswerPart, PlannedAnswer};
use super::filler::padding_piece;
use super::tokenizer;

/// One output token of an answer, as it streams.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// A piece of `content` text.
    Text(String),
    /// The first token of a tool call: index, call id, function name.
    ToolHead {
        /// Parallel-call index (0, 1, ...).
        index: usize,
        /// `chatcmpl-tool-<16 hex>`.
        id: String,
        /// Function name.
        name: String,
    },
    /// A fragment of a tool call's arguments.
    ToolArgs {
        /// Parallel-call index.
        index: usize,
        /// The fragment.
        text: String,
    },
}

impl Piece {
    /// The token id the engine hashes for this piece.
    pub fn token_id(&self) -> u32 {
        match self {
            Piece::Text(t) | Piece::ToolArgs { text: t, .. } => tokenizer::piece_id(t),
            Piece::ToolHead { name, .. } => tokenizer::piece_id(name) ^ 0x4000,
        }
    }
}

/// Cuts a planned answer into streamed tokens. `tool_id` makes the id of
/// the n-th tool call.
pub fn plan_pieces(answer: &PlannedAnswer, tool_id: impl Fn(usize) -> String) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut index = 0;
    for part in &answer.parts {
        match part {
            AnswerPart::Text(t) => out.extend(
                tokenizer::pieces(t)
                    .into_iter()
                    .map(|p| Piece::Text(p.into())),
            ),
            AnswerPart::ToolCall { name, arguments } => {
                out.push(Piece::ToolHead {
                    index,
                    id: tool_id(index),
                    name: name.clone(),
                });
                out.extend(
                    tokenizer::pieces(arguments)
                        .into_iter()
                        .map(|p| Piece::ToolArgs {
                            index,
                            text: p.into(),
                        }),
                );
                index += 1;
            }
        }
    }
    out
}

/// The piece for output position `i` (padding past the answer).
pub fn piece_at(pieces: &[Piece], i: usize) -> Piece {
    pieces
        .get(i)
        .cloned()
        .unwrap_or_else(|| Piece::Text(padding_piece(i - pieces.len()).to_string()))
}

/// JSON string literal.
pub fn js(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// `{"prompt_tokens":P,"total_tokens":T,"completion_tokens":C}`.
pub fn usage_json(prompt: u64, completion: u64) -> String {
    format!(
        "{{\"prompt_tokens\":{prompt},\"total_tokens\":{},\"completion_tokens\":{completion}}}",
        prompt + completion
    )
}

/// Fields every chunk of one response shares.
#[derive(Debug, Clone)]
pub struct ChunkHead {
    /// `chatcmpl-…` or `cmpl-…`.
    pub id: String,
    /// Unix seconds.
    pub created: i64,
    /// Served model name.
    pub model: String,
}

impl ChunkHead {
    fn open(&self, object: &str) -> String {
        format!(
            "{{\"id\":{},\"object\":\"{object}\",\"created\":{},\"model\":{}",
            js(&self.id),
            self.created,
            js(&self.model)
        )
    }

    /// The role-only first chat chunk.
    pub fn chat_role(&self, usage: Option<&str>) -> String {
        let mut s = self.open("chat.completion.chunk");
        s.push_str(",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,\"finish_reason\":null}],\"prompt_token_ids\":null,\"prompt_text\":null");
        close(s, usage)
    }

    /// A chat chunk carrying one token's delta.
    pub fn chat_delta(&self, piece: &Piece, usage: Option<&str>) -> String {
        let delta = match piece {
            Piece::Text(t) => format!("{{\"content\":{}}}", js(t)),
            Piece::ToolHead { index, id, name } => format!(
                "{{\"tool_calls\":[{{\"id\":{},\"type\":\"function\",\"index\":{index},\"function\":{{\"name\":{}}}}}]}}",
                js(id),
                js(name)
            ),
            Piece::ToolArgs { index, text } => format!(
                "{{\"tool_calls\":[{{\"index\":{index},\"function\":{{\"arguments\":{}}}}}]}}",
                js(text)
            ),
        };
        let mut s = self.open("chat.completion.chunk");
        s.push_str(&format!(
            ",\"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":null,\"token_ids\":null}}]"
        ));
        close(s, usage)
    }

    /// The chat chunk with the finish reason and an empty delta.
    pub fn chat_finish(&self, reason: &str, usage: Option<&str>) -> String {
        let mut s = self.open("chat.completion.chunk");
        s.push_str(&format!(
            ",\"choices\":[{{\"index\":0,\"delta\":{{}},\"logprobs\":null,\"finish_reason\":{},\"stop_reason\":null,\"token_ids\":null}}]",
            js(reason)
        ));
        close(s, usage)
    }

    /// The final usage-only chunk (`stream_options.include_usage`).
    pub fn usage_chunk(&self, chat: bool, usage: &str, fingerprint: &str) -> String {
        let object = if chat {
            "chat.completion.chunk"
        } else {
            "text_completion"
        };
        let mut s = self.open(object);
        s.push_str(&format!(",\"choices\":[],\"usage\":{usage}"));
        if chat {
            s.push_str(&format!(",\"system_fingerprint\":{}", js(fingerprint)));
        }
        s.push('}');
        s
    }

    /// A `/v1/completions` chunk (text and optional finish reason).
    pub fn text_chunk(&self, text: &str, finish: Option<&str>, usage: Option<&str>) -> String {
        let mut s = self.open("text_completion");
        let finish = finish.map(js).unwrap_or_else(|| "null".into());
        s.push_str(&format!(
            ",\"choices\":[{{\"index\":0,\"text\":{},\"logprobs\":null,\"finish_reason\":{finish},\"stop_reason\":null,\"prompt_token_ids\":null,\"token_ids\":null}}]",
            js(text)
        ));
        close(s, usage)
    }
}

fn close(mut s: String, usage: Option<&str>) -> String {
    if let Some(u) = usage {
        s.push_str(",\"usage\":");
        s.push_str(u);
    }
    s.push('}');
    s
}

/// An SSE event: `data: <json>\n\n`.
pub fn sse(data: &str) -> String {
    format!("data: {data}\n\n")
}

/// vLLM's error body.
pub fn error_body(message: &str, kind: &str, param: Option<&str>, code: u16) -> String {
    format!(
        "{{\"error\":{{\"message\":{},\"type\":{},\"param\":{},\"code\":{code}}}}}",
        js(message),
        js(kind),
        param.map(js).unwrap_or_else(|| "null".into())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_valid_json_with_vllm_fields() {
        let h = ChunkHead {
            id: "chatcmpl-8c1f2a9d3b7e4056".into(),
            created: 1_790_690_000,
            model: "qwen3-coder".into(),
        };
        let v: serde_json::Value =
            serde_json::from_str(&h.chat_delta(&Piece::Text("I'll".into()), None)).expect("json");
        assert_eq!(v["choices"][0]["delta"]["content"], "I'll");
        assert!(v["choices"][0]["token_ids"].is_null());
        let head = Piece::ToolHead {
            index: 0,
            id: "chatcmpl-tool-5f0c6e1a9b2d4c7e".into(),
            name: "read".into(),
        };
        let v: serde_json::Value = serde_json::from_str(&h.chat_delta(&head, None)).expect("json");
        assert_eq!(
            v["choices"][0]["delta"]["tool_calls"][0]["function"]["name"],
            "read"
        );
        let u = usage_json(7412, 41);
        let v: serde_json::Value =
            serde_json::from_str(&h.usage_chunk(true, &u, "fp")).expect("json");
        assert_eq!(v["usage"]["total_tokens"], 7453);
        let v: serde_json::Value = serde_json::from_str(&error_body(
            "x \"y\"",
            "BadRequestError",
            Some("input_tokens"),
            400,
        ))
        .expect("json");
        assert_eq!(v["error"]["code"], 400);
    }
}
