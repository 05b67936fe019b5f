//! One request in flight: turns the engine's token events into answer
//! pieces ([`Generation::next_delivery`]), and those into vLLM's SSE chunks
//! (one token per chunk) or one JSON response. The in-process transport
//! ([`super::inproc`]) reads the same deliveries without the bytes.

use std::collections::VecDeque;
use std::convert::Infallible;

use bytes::Bytes;
use futures::Stream;
use tokio::sync::mpsc;

use super::chunks::{self, piece_at, ChunkHead, Piece};
use super::engine_stats::FinishReason;
use super::runner::{AbortOnDrop, EngineEvent};

/// Everything needed to answer one request.
#[derive(Debug)]
pub struct Generation {
    /// Shared chunk fields.
    pub head: ChunkHead,
    /// The planned answer, one entry per token.
    pub pieces: Vec<Piece>,
    /// Whether the answer contains tool calls.
    pub has_tools: bool,
    /// Prompt tokens (for usage).
    pub prompt_tokens: u64,
    /// Chat (`true`) or completions.
    pub chat: bool,
    /// `stream_options.include_usage`.
    pub include_usage: bool,
    /// `stream_options.continuous_usage_stats`.
    pub continuous_usage: bool,
    /// `system_fingerprint` of the usage chunk.
    pub fingerprint: String,
    /// Token events from the engine.
    pub events: mpsc::UnboundedReceiver<EngineEvent>,
    /// Aborts the request in the engine if this is dropped early.
    pub guard: AbortOnDrop,
    /// Tokens delivered so far (0 when built).
    pub produced: usize,
}

fn reason_text(reason: FinishReason, has_tools: bool, complete: bool) -> &'static str {
    match reason {
        FinishReason::Stop if has_tools && complete => "tool_calls",
        other => other.as_str(),
    }
}

/// The text a piece adds to a `/v1/completions` answer (a tool call's
/// header token shows its function name).
pub fn piece_text(piece: &Piece) -> &str {
    match piece {
        Piece::Text(t) | Piece::ToolArgs { text: t, .. } => t,
        Piece::ToolHead { name, .. } => name,
    }
}

/// What one engine event brought a request: its new tokens (one
/// [`Piece`] each, in order) and, with the last ones, the finish reason
/// as the API names it (`stop`, `length`, `tool_calls`, `abort`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The new tokens.
    pub pieces: Vec<Piece>,
    /// Tokens delivered before these (the index of the first new one).
    pub before: usize,
    /// Set when the request finished with this delivery.
    pub finish: Option<&'static str>,
}

struct StreamState {
    g: Generation,
    out: VecDeque<String>,
    done: bool,
}

impl StreamState {
    fn usage(&self, produced: usize) -> Option<String> {
        self.g
            .continuous_usage
            .then(|| chunks::usage_json(self.g.prompt_tokens, produced as u64))
    }

    fn on_delivery(&mut self, d: Result<Delivery, String>) {
        let d = match d {
            Ok(d) => d,
            Err(msg) => return self.fail(&msg),
        };
        for (i, piece) in d.pieces.iter().enumerate() {
            let usage = self.usage(d.before + i + 1);
            let chunk = if self.g.chat {
                self.g.head.chat_delta(piece, usage.as_deref())
            } else {
                self.g
                    .head
                    .text_chunk(piece_text(piece), None, usage.as_deref())
            };
            self.out.push_back(chunks::sse(&chunk));
        }
        if let Some(text) = d.finish {
            self.finish(text);
        }
    }

    fn finish(&mut self, text: &str) {
        let produced = self.g.produced;
        let usage = self.usage(produced);
        let chunk = if self.g.chat {
            self.g.head.chat_finish(text, usage.as_deref())
        } else {
            self.g.head.text_chunk("", Some(text), usage.as_deref())
        };
        self.out.push_back(chunks::sse(&chunk));
        if self.g.include_usage {
            let u = chunks::usage_json(self.g.prompt_tokens, produced as u64);
            let c = self
                .g
                .head
                .usage_chunk(self.g.chat, &u, &self.g.fingerprint);
            self.out.push_back(chunks::sse(&c));
        }
        self.out.push_back(chunks::sse("[DONE]"));
        self.done = true;
    }

    fn fail(&mut self, msg: &str) {
        let body = chunks::error_body(msg, "InternalServerError", None, 500);
        self.out.push_back(chunks::sse(&body));
        self.out.push_back(chunks::sse("[DONE]"));
        self.done = true;
    }
}

impl Generation {
    /// Waits for the engine's next event for this request and turns it into
    /// pieces: the one path from engine events to answer tokens, shared by
    /// the HTTP stream, the non-streaming response and the in-process
    /// transport. Past the planned answer the pieces are filler. The abort
    /// guard is disarmed when the request finishes or fails. `Err` carries
    /// a message when the engine refused the request or stopped.
    pub async fn next_delivery(&mut self) -> Result<Delivery, String> {
        let (count, finish) = match self.events.recv().await {
            Some(EngineEvent::Tokens { count, finish }) => (count, finish),
            Some(EngineEvent::Rejected(msg)) => {
                self.guard.disarm();
                return Err(msg);
            }
            None => {
                self.guard.disarm();
                return Err("the engine stopped".into());
            }
        };
        let before = self.produced;
        let pieces: Vec<Piece> = (before..before + count as usize)
            .map(|i| piece_at(&self.pieces, i))
            .collect();
        self.produced += pieces.len();
        let finish = finish.map(|reason| {
            self.guard.disarm();
            let complete = self.produced >= self.pieces.len();
            reason_text(reason, self.has_tools, complete)
        });
        Ok(Delivery {
            pieces,
            before,
            finish,
        })
    }

    /// The SSE body: role chunk (chat), a chunk per token, the finish chunk,
    /// the usage chunk if asked, `[DONE]`. Dropping it aborts the request.
    pub fn into_sse(self) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
        let mut first = VecDeque::new();
        if self.chat {
            let usage = self
                .continuous_usage
                .then(|| chunks::usage_json(self.prompt_tokens, 0));
            first.push_back(chunks::sse(&self.head.chat_role(usage.as_deref())));
        }
        let state = StreamState {
            g: self,
            out: first,
            done: false,
        };
        futures::stream::unfold(state, |mut st| async move {
            loop {
                if let Some(s) = st.out.pop_front() {
                    return Some((Ok(Bytes::from(s)), st));
                }
                if st.done {
                    return None;
                }
                let d = st.g.next_delivery().await;
                st.on_delivery(d);
            }
        })
    }

    /// Waits for the whole answer and renders the non-streaming response.
    /// `Err` carries a message when the engine refused or stopped.
    pub async fn collect(mut self) -> Result<String, String> {
        let mut content = String::new();
        let mut calls: Vec<(String, String, String)> = Vec::new();
        let finish = loop {
            let d = self.next_delivery().await?;
            for piece in d.pieces {
                match piece {
                    Piece::Text(t) => content.push_str(&t),
                    Piece::ToolHead { id, name, .. } => calls.push((id, name, String::new())),
                    Piece::ToolArgs { index, text } => {
                        if let Some(c) = calls.get_mut(index) {
                            c.2.push_str(&text);
                        }
                    }
                }
            }
            if let Some(f) = d.finish {
                break f;
            }
        };
        let usage = chunks::usage_json(self.prompt_tokens, self.produced as u64);
        let usage = format!(
            "{},\"prompt_tokens_details\":null}}",
            &usage[..usage.len() - 1]
        );
        let h = &self.head;
        let js = chunks::js;
        if !self.chat {
            return Ok(format!(
                "{{\"id\":{},\"object\":\"text_completion\",\"created\":{},\"model\":{},\"choices\":[{{\"index\":0,\"text\":{},\"logprobs\":null,\"finish_reason\":{},\"stop_reason\":null,\"prompt_logprobs\":null}}],\"service_tier\":null,\"system_fingerprint\":null,\"usage\":{usage},\"kv_transfer_params\":null}}",
                js(&h.id), h.created, js(&h.model), js(&content), js(finish)
            ));
        }
        let content_json = if content.is_empty() && !calls.is_empty() {
            "null".to_string()
        } else {
            js(&content)
        };
        let calls_json: Vec<String> = calls
            .iter()
            .map(|(id, name, args)| {
                format!(
                    "{{\"id\":{},\"type\":\"function\",\"function\":{{\"name\":{},\"arguments\":{}}}}}",
                    js(id),
                    js(name),
                    js(args)
                )
            })
            .collect();
        Ok(format!(
            "{{\"id\":{},\"object\":\"chat.completion\",\"created\":{},\"model\":{},\"choices\":[{{\"index\":0,\"message\":{{\"role\":\"assistant\",\"content\":{content_json},\"refusal\":null,\"annotations\":null,\"audio\":null,\"function_call\":null,\"tool_calls\":[{}],\"reasoning_content\":null}},\"logprobs\":null,\"finish_reason\":{},\"stop_reason\":null,\"token_ids\":null}}],\"service_tier\":null,\"system_fingerprint\":null,\"usage\":{usage},\"prompt_logprobs\":null,\"prompt_token_ids\":null,\"kv_transfer_params\":null}}",
            js(&h.id), h.created, js(&h.model), calls_json.join(","), js(finish)
        ))
    }
}
