//! The twin without sockets: an [`openai::Transport`](codendum_core::openai::Transport)
//! that hands each request straight to the twin's engine task.
//!
//! It reuses every piece the HTTP twin uses: [`super::server::admit`] (body →
//! rendered and tokenized prompt → `max_model_len` check → session-mixed
//! seed → the responder's planned answer → engine request) and
//! [`Generation::next_delivery`](super::generation::Generation::next_delivery)
//! (engine events → answer pieces). Only the bytes are skipped: no SSE, no
//! JSON chunks, no TCP. Times are taken on the twin's [`Clock`], so on a
//! tokio runtime with paused time a whole classroom runs in virtual time.
//!
//! Differences from a call through codendum's HTTP client (`codendum::client::HttpClient`):
//! no network delay; a non-streaming request is measured like a streaming
//! one; `usage` is present only when the body asked for it
//! (`stream_options.include_usage`), as over HTTP.
//!
//! The engine's statistics are read directly ([`InProcTransport::snapshot`],
//! [`snapshot_from_stats`]) and sampled on the clock ([`StatsSampler`]) into
//! the same [`TimelineSample`]s a `/metrics` sampler writes, so server
//! figures come from [`codendum_core::prom::window_stats`] as in a live run.

use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;

use super::chunks::Piece;
use super::engine_stats::EngineStats;
use super::server::{admit, TwinState};
use super::{build_state_shared, TwinOptions};
use codendum_core::clock::Clock;
use codendum_core::openai::stream::truncate_message;
use codendum_core::openai::{
    AssistantMessage, CallError, CallOutcome, CallRequest, Endpoint, ErrorKind, ToolCall,
    Transport, Usage,
};
use codendum_core::prom::{ServerSnapshot, TimelineSample};
mod stats;
pub use stats::{snapshot_from_stats, StatsSampler};

/// Default per-request time limit, simulated seconds: the CLI's `--timeout`
/// default, so an overloaded class times out and retries as it would live.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(900);

/// The twin's engine behind a [`Transport`], in the same process.
#[derive(Debug)]
pub struct InProcTransport {
    state: Arc<TwinState>,
    engine: tokio::task::JoinHandle<()>,
    timeout: Option<Duration>,
}

impl InProcTransport {
    /// Builds the twin's state from `opts` (profile, clock, responder, keys,
    /// seed; the proxy is not used) and spawns its engine task on the
    /// current tokio runtime. Per-request limit: [`DEFAULT_TIMEOUT`].
    ///
    /// # Panics
    /// When called outside a tokio runtime (as `tokio::spawn`).
    pub fn start(opts: TwinOptions) -> Self {
        Self::start_shared(opts, None)
    }

    /// [`InProcTransport::start`] for one replica of a fleet: request ids
    /// drawn from `ids` when given (shared by the replicas).
    pub fn start_shared(opts: TwinOptions, ids: Option<Arc<AtomicU64>>) -> Self {
        let (state, engine) = build_state_shared(opts, ids);
        InProcTransport {
            state,
            engine,
            timeout: Some(DEFAULT_TIMEOUT),
        }
    }

    /// Sets the per-request time limit (simulated time; `None`: no limit).
    /// A request past it fails with [`ErrorKind::Timeout`] and is aborted in
    /// the engine, as when an HTTP client gives up.
    pub fn with_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// The twin's shared state (profile, clock, engine statistics).
    pub fn state(&self) -> &Arc<TwinState> {
        &self.state
    }

    /// The clock the twin measures on.
    pub fn clock(&self) -> &Clock {
        &self.state.clock
    }

    /// The engine statistics after its latest step.
    pub fn engine_stats(&self) -> EngineStats {
        self.state
            .stats
            .lock()
            .map(|s| s.clone())
            .unwrap_or_default()
    }

    /// The engine statistics as a `/metrics` reader would see them.
    pub fn snapshot(&self) -> ServerSnapshot {
        match self.state.stats.lock() {
            Ok(s) => snapshot_from_stats(&s, &self.state.profile),
            Err(_) => ServerSnapshot::default(),
        }
    }

    /// One timeline sample at the clock's current time.
    pub fn sample(&self) -> TimelineSample {
        let clock = &self.state.clock;
        let now = clock.now();
        TimelineSample {
            utc: clock.utc_at(now),
            t: now.as_secs_f64(),
            snapshot: Some(self.snapshot()),
            error: None,
        }
    }

    /// Stops the engine task (requests still in flight fail).
    pub fn stop(&self) {
        self.engine.abort();
    }

    /// Sends one request to the engine and measures it (see [`Transport::call`]).
    pub async fn call_direct(&self, request: CallRequest) -> CallOutcome {
        let clock = self.state.clock.clone();
        let sent_at = clock.now_secs();
        let measured = self.exchange(request, sent_at);
        let mut outcome = match self.timeout {
            Some(limit) => match clock.timeout(limit, measured).await {
                Ok(o) => o,
                Err(_) => CallOutcome {
                    sent_at,
                    status: Some(200),
                    error: Some(CallError {
                        kind: ErrorKind::Timeout,
                        status: None,
                        message: format!("no complete answer within {} s", limit.as_secs_f64()),
                        retry_after: None,
                    }),
                    ..CallOutcome::default()
                },
            },
            None => measured.await,
        };
        outcome.e2e = (clock.now_secs() - sent_at).max(0.0);
        outcome
    }

    fn authorized(&self, request: &CallRequest) -> bool {
        let keys = &self.state.api_keys;
        keys.is_empty()
            || request
                .api_key
                .as_ref()
                .is_some_and(|given| keys.iter().any(|k| k.expose() == given.expose()))
    }

    async fn exchange(&self, request: CallRequest, sent_at: f64) -> CallOutcome {
        let mut outcome = CallOutcome {
            sent_at,
            ..CallOutcome::default()
        };
        if !self.authorized(&request) {
            outcome.status = Some(401);
            outcome.error = Some(refused(401, "Unauthorized"));
            return outcome;
        }
        let session = request
            .headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("x-session-id"))
            .map_or("", |(_, v)| v.as_str());
        let chat = request.endpoint == Endpoint::Chat;
        let first_token = request.first_token;
        let mut generation = match admit(&self.state, request.body, chat, session) {
            Ok(a) => a.generation,
            Err(r) => {
                outcome.status = Some(r.status);
                outcome.error = Some(refused(r.status, &r.message));
                return outcome;
            }
        };
        outcome.status = Some(200);
        let clock = &self.state.clock;
        let mut answer = Assembly::new(chat);
        let mut last_text_at: Option<f64> = None;
        loop {
            let delivery = match generation.next_delivery().await {
                Ok(d) => d,
                Err(message) => {
                    outcome.error = Some(CallError {
                        kind: ErrorKind::StreamError,
                        status: Some(200),
                        message: truncate_message(&message),
                        retry_after: None,
                    });
                    break;
                }
            };
            if !delivery.pieces.is_empty() {
                let now = clock.now_secs() - sent_at;
                if outcome.ttft.is_none() {
                    outcome.ttft = Some(now);
                    if let Some(told) = &first_token {
                        told.note(now);
                    }
                }
                if request.record_gaps {
                    for (i, _) in delivery.pieces.iter().enumerate() {
                        if let Some(last) = last_text_at {
                            let gap = if i == 0 { now - last } else { 0.0 };
                            outcome.gaps.push(gap as f32);
                        }
                        last_text_at = Some(now);
                    }
                }
                outcome.text_chunks += delivery.pieces.len() as u64;
                for piece in delivery.pieces {
                    answer.add(piece);
                }
            }
            if let Some(reason) = delivery.finish {
                outcome.finish_reason = Some(reason.to_string());
                if generation.include_usage {
                    outcome.usage = Some(Usage {
                        prompt_tokens: generation.prompt_tokens,
                        completion_tokens: generation.produced as u64,
                    });
                }
                break;
            }
        }
        outcome.message = answer.message;
        outcome
    }
}

impl Drop for InProcTransport {
    fn drop(&mut self) {
        self.engine.abort();
    }
}

impl Transport for InProcTransport {
    fn call(&self, request: CallRequest) -> BoxFuture<'_, CallOutcome> {
        Box::pin(self.call_direct(request))
    }
}

fn refused(status: u16, message: &str) -> CallError {
    CallError {
        kind: ErrorKind::from_status(status),
        status: Some(status),
        message: truncate_message(message),
        retry_after: None,
    }
}

/// Builds the assistant message from pieces, as a client assembles deltas.
struct Assembly {
    chat: bool,
    message: AssistantMessage,
}

impl Assembly {
    fn new(chat: bool) -> Self {
        Assembly {
            chat,
            message: AssistantMessage::default(),
        }
    }

    fn add(&mut self, piece: Piece) {
        let m = &mut self.message;
        match piece {
            Piece::Text(t) => m.content.push_str(&t),
            Piece::ToolHead { name, .. } if !self.chat => m.content.push_str(&name),
            Piece::ToolArgs { text, .. } if !self.chat => m.content.push_str(&text),
            Piece::ToolHead { index, id, name } => {
                if m.tool_calls.len() <= index {
                    m.tool_calls.resize_with(index + 1, ToolCall::default);
                }
                m.tool_calls[index].id = id;
                m.tool_calls[index].name = name;
            }
            Piece::ToolArgs { index, text } => {
                if let Some(call) = m.tool_calls.get_mut(index) {
                    call.arguments.push_str(&text);
                }
            }
        }
    }
}
