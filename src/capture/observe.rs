//! Reads a response as it passes: an SSE stream event by event (the first
//! chunk carrying generated text, the usage, the tool calls), or a plain
//! JSON body from a bounded copy at its end. It only looks; the bytes go
//! on unchanged.

use std::time::Instant;

use serde_json::Value;

use codendum_core::capture::ToolCallLine;

use codendum_core::openai::chunk::{parse_chunk, Assembler};
use codendum_core::openai::sse::{SseDecoder, SseEvent};

/// The most bytes of a non-streaming body kept to read its usage and tool
/// calls (the body itself always passes in full).
pub const JSON_COPY_LIMIT: usize = 16 << 20;

/// What was read off a finished response.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Answer {
    /// Prompt tokens from the usage, if the server sent any.
    pub prompt_tokens: Option<u64>,
    /// Output tokens from the usage, if the server sent any.
    pub completion_tokens: Option<u64>,
    /// Chunks that carried generated text (the client's count).
    pub text_chunks: u64,
    /// When the first chunk carrying generated text arrived.
    pub first_token: Option<Instant>,
    /// The finish reason of choice 0.
    pub finish_reason: Option<String>,
    /// The answer's tool calls: (name, arguments). Arguments stay in
    /// memory only, to tell a build from other shell commands.
    pub tool_calls: Vec<(String, String)>,
    /// `[DONE]` was seen (SSE).
    pub done: bool,
    /// Data events that were not chunk JSON (or were error events).
    pub bad_events: u64,
    /// Bytes passed on.
    pub bytes: u64,
}

/// Watches one response body.
pub struct Observer {
    sse: Option<SseDecoder>,
    copy: Vec<u8>,
    assembler: Assembler,
    answer: Answer,
}

impl Observer {
    /// An observer for an SSE body (`sse`) or any other body.
    pub fn new(sse: bool) -> Self {
        Observer {
            sse: sse.then(SseDecoder::new),
            copy: Vec::new(),
            assembler: Assembler::new(),
            answer: Answer::default(),
        }
    }

    /// Takes in one piece of the body, which arrived at `now`.
    pub fn feed(&mut self, bytes: &[u8], now: Instant) {
        self.answer.bytes += bytes.len() as u64;
        let Some(decoder) = self.sse.as_mut() else {
            if self.copy.len() + bytes.len() <= JSON_COPY_LIMIT {
                self.copy.extend_from_slice(bytes);
            }
            return;
        };
        decoder.push(bytes);
        while let Some(event) = decoder.next_event() {
            take_event(&mut self.assembler, &mut self.answer, event, now);
        }
    }

    /// The body ended (or was cut): what was read.
    pub fn finish(mut self) -> Answer {
        let now = Instant::now();
        match self.sse.as_mut() {
            Some(decoder) => {
                if let Some(event) = decoder.finish() {
                    take_event(&mut self.assembler, &mut self.answer, event, now);
                }
                let a = &self.assembler;
                let usage = a.usage;
                self.answer.prompt_tokens = usage.map(|u| u.prompt_tokens);
                self.answer.completion_tokens = usage.map(|u| u.completion_tokens);
                self.answer.text_chunks = a.text_chunks;
                self.answer.finish_reason = a.finish_reason.clone();
                self.answer.tool_calls = a
                    .message
                    .tool_calls
                    .iter()
                    .map(|c| (c.name.clone(), c.arguments.clone()))
                    .collect();
            }
            None => read_json(&self.copy, &mut self.answer),
        }
        self.answer
    }
}

fn take_event(assembler: &mut Assembler, answer: &mut Answer, event: SseEvent<'_>, now: Instant) {
    match event {
        SseEvent::Data(data) => match parse_chunk(data) {
            Ok(chunk) => {
                if assembler.apply(&chunk) && answer.first_token.is_none() {
                    answer.first_token = Some(now);
                }
            }
            Err(_) => answer.bad_events += 1,
        },
        SseEvent::Done => answer.done = true,
        SseEvent::Oversized { .. } => answer.bad_events += 1,
    }
}

/// A non-streaming completion: usage, finish reason and tool calls.
fn read_json(body: &[u8], answer: &mut Answer) {
    let Ok(v) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    let usage = |k: &str| v.pointer(&format!("/usage/{k}")).and_then(Value::as_u64);
    answer.prompt_tokens = usage("prompt_tokens");
    answer.completion_tokens = usage("completion_tokens");
    let choice = v.pointer("/choices/0");
    answer.finish_reason = choice
        .and_then(|c| c.get("finish_reason"))
        .and_then(Value::as_str)
        .map(String::from);
    answer.tool_calls = choice
        .and_then(|c| c.pointer("/message/tool_calls"))
        .and_then(Value::as_array)
        .map(|calls| {
            calls
                .iter()
                .map(|c| {
                    let f = |k: &str| {
                        c.pointer(&format!("/function/{k}"))
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_string()
                    };
                    (f("name"), f("arguments"))
                })
                .collect()
        })
        .unwrap_or_default();
}

/// The recorded form of tool calls: names and argument sizes only.
pub fn tool_lines(calls: &[(String, String)]) -> Vec<ToolCallLine> {
    calls
        .iter()
        .map(|(name, args)| ToolCallLine {
            name: name.clone(),
            argument_bytes: args.len(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_a_stream_split_anywhere() {
        let body = concat!(
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"read\",\"arguments\":\"{\\\"filePath\\\":\"}}]}}]}\n\n",
            "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\\\"a\\\"}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n",
            "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":12,\"completion_tokens\":5}}\n\n",
            "data: [DONE]\n\n"
        );
        let mut o = Observer::new(true);
        let t0 = Instant::now();
        for piece in body.as_bytes().chunks(7) {
            o.feed(piece, t0);
        }
        let a = o.finish();
        assert_eq!(a.prompt_tokens, Some(12));
        assert_eq!(a.completion_tokens, Some(5));
        assert_eq!(a.text_chunks, 2, "the role chunk carries no text");
        assert!(a.done && a.first_token.is_some());
        assert_eq!(
            tool_lines(&a.tool_calls),
            vec![ToolCallLine {
                name: "read".into(),
                argument_bytes: 16
            }]
        );
    }

    #[test]
    fn reads_a_plain_json_answer() {
        let body = br#"{"choices":[{"message":{"tool_calls":[{"function":{"name":"bash","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}"#;
        let mut o = Observer::new(false);
        o.feed(body, Instant::now());
        let a = o.finish();
        assert_eq!((a.prompt_tokens, a.completion_tokens), (Some(3), Some(4)));
        assert_eq!(a.tool_calls, vec![("bash".to_string(), "{}".to_string())]);
    }
}
