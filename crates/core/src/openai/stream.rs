//! Turns the bytes of a streamed response, with their arrival times, into a
//! [`CallOutcome`]: SSE decoding, chunk parsing, TTFT, gaps, E2E and the
//! stream-level failures (`stream_error`, `bad_json`, `incomplete`).
//!
//! Plain code: the caller reads the network and passes each piece with the
//! simulated time (seconds on the run's clock) at which it arrived.

use super::chunk::{parse_chunk, Assembler, ChunkError};
use super::sse::{SseDecoder, SseEvent};
use super::{CallError, CallOutcome, ErrorKind};

/// Longest error message kept, in characters.
pub const MAX_MESSAGE_CHARS: usize = 300;

/// Whether to keep reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// More events may come.
    Continue,
    /// `[DONE]` arrived, or the stream failed: stop measuring.
    Stop,
}

/// Measures one streamed response.
#[derive(Debug)]
pub struct StreamMeter {
    decoder: SseDecoder,
    assembler: Assembler,
    sent_at: f64,
    record_gaps: bool,
    ttft: Option<f64>,
    last_text_at: Option<f64>,
    gaps: Vec<f32>,
    done: bool,
    ended_at: Option<f64>,
    error: Option<CallError>,
    first_token: Option<super::FirstToken>,
}

impl StreamMeter {
    /// A meter for a request sent at `sent_at` (simulated seconds).
    pub fn new(sent_at: f64, record_gaps: bool) -> Self {
        Self {
            decoder: SseDecoder::new(),
            assembler: Assembler::new(),
            sent_at,
            record_gaps,
            ttft: None,
            last_text_at: None,
            gaps: Vec::new(),
            done: false,
            ended_at: None,
            error: None,
            first_token: None,
        }
    }

    /// Tells `first_token` the TTFT as soon as the first token arrives.
    pub fn telling(mut self, first_token: Option<super::FirstToken>) -> Self {
        self.first_token = first_token;
        self
    }

    /// Takes a piece of the body that arrived at `now` (simulated seconds).
    pub fn on_bytes(&mut self, bytes: &[u8], now: f64) -> Flow {
        if self.is_stopped() {
            return Flow::Stop;
        }
        self.decoder.push(bytes);
        loop {
            let result = match self.decoder.next_event() {
                None => return Flow::Continue,
                Some(SseEvent::Done) => Err(None),
                Some(SseEvent::Data(d)) => match parse_chunk(d) {
                    Ok(chunk) => Ok(self.assembler.apply(&chunk)),
                    Err(e) => Err(Some(e)),
                },
                Some(SseEvent::Oversized { limit }) => {
                    self.fail(ErrorKind::StreamError, &oversized_message(limit), now);
                    return Flow::Stop;
                }
            };
            if self.handle(result, now) == Flow::Stop {
                return Flow::Stop;
            }
        }
    }

    /// The body ended at `now` (cleanly or not): delivers a last event that
    /// had no blank line after it.
    pub fn on_end(&mut self, now: f64) {
        if self.is_stopped() {
            return;
        }
        let result = match self.decoder.finish() {
            None => Ok(false),
            Some(SseEvent::Done) => Err(None),
            Some(SseEvent::Data(d)) => match parse_chunk(d) {
                Ok(chunk) => Ok(self.assembler.apply(&chunk)),
                Err(e) => Err(Some(e)),
            },
            Some(SseEvent::Oversized { limit }) => {
                self.fail(ErrorKind::StreamError, &oversized_message(limit), now);
                Ok(false)
            }
        };
        self.handle(result, now);
        if self.ended_at.is_none() {
            self.ended_at = Some(now);
        }
    }

    /// Records a failure that happened at `now` (broken connection, timeout)
    /// unless the stream already ended or failed.
    pub fn fail(&mut self, kind: ErrorKind, message: &str, now: f64) {
        if self.is_stopped() {
            return;
        }
        self.error = Some(CallError {
            kind,
            status: Some(200),
            message: truncate_message(message),
            retry_after: None,
        });
        self.ended_at = Some(now);
    }

    /// Whether `[DONE]` arrived or the stream failed.
    pub fn is_stopped(&self) -> bool {
        self.done || self.error.is_some()
    }

    /// Whether `[DONE]` arrived.
    pub fn saw_done(&self) -> bool {
        self.done
    }

    /// The outcome: E2E to `[DONE]`, the end of the body or the failure
    /// (`now` if none of these happened yet). A body that ended without
    /// `[DONE]` and without a finish reason is `incomplete`.
    pub fn finish(self, status: u16, now: f64) -> CallOutcome {
        let ended_at = self.ended_at.unwrap_or(now);
        let mut error = self.error;
        if error.is_none() && !self.done && self.assembler.finish_reason.is_none() {
            error = Some(CallError {
                kind: ErrorKind::Incomplete,
                status: Some(status),
                message: "the body ended without [DONE] and without a finish reason".into(),
                retry_after: None,
            });
        }
        let m = &self.assembler.message;
        if error.is_none()
            && self.assembler.text_chunks == 0
            && m.content.is_empty()
            && m.reasoning.is_empty()
            && m.tool_calls.is_empty()
        {
            error = Some(CallError {
                kind: ErrorKind::EmptyAnswer,
                status: Some(status),
                message: "the stream ended without any text, reasoning or tool call".into(),
                retry_after: None,
            });
        }
        if let Some(e) = error.as_mut() {
            e.status = Some(status);
        }
        CallOutcome {
            sent_at: self.sent_at,
            ttft: self.ttft,
            e2e: (ended_at - self.sent_at).max(0.0),
            status: Some(status),
            usage: self.assembler.usage,
            text_chunks: self.assembler.text_chunks,
            gaps: self.gaps,
            finish_reason: self.assembler.finish_reason,
            message: self.assembler.message,
            error,
            tokenized_output: None,
            tokenized_input: None,
        }
    }

    /// Applies one event's result: `Ok(carries_text)`, `Err(None)` for
    /// `[DONE]`, `Err(Some(e))` for a bad or error chunk.
    fn handle(&mut self, result: Result<bool, Option<ChunkError>>, now: f64) -> Flow {
        match result {
            Ok(true) => {
                if self.ttft.is_none() {
                    let ttft = (now - self.sent_at).max(0.0);
                    self.ttft = Some(ttft);
                    if let Some(told) = &self.first_token {
                        told.note(ttft);
                    }
                }
                if self.record_gaps {
                    if let Some(prev) = self.last_text_at {
                        self.gaps.push((now - prev).max(0.0) as f32);
                    }
                }
                self.last_text_at = Some(now);
                Flow::Continue
            }
            Ok(false) => Flow::Continue,
            Err(None) => {
                self.done = true;
                self.ended_at = Some(now);
                Flow::Stop
            }
            Err(Some(e)) => {
                let kind = match e {
                    ChunkError::BadJson(_) => ErrorKind::BadJson,
                    ChunkError::Server(_) => ErrorKind::StreamError,
                };
                self.fail(kind, &e.to_string(), now);
                Flow::Stop
            }
        }
    }
}

fn oversized_message(limit: usize) -> String {
    format!("an SSE event or line passed the limit of {limit} bytes; the stream was abandoned")
}

/// Cuts a message to [`MAX_MESSAGE_CHARS`] characters (adding `…`).
pub fn truncate_message(message: &str) -> String {
    let message = message.trim();
    match message.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((i, _)) => format!("{}…", &message[..i]),
        None => message.to_string(),
    }
}
