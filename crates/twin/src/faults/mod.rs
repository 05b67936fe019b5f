//! Fault injection for the twin (`codendum serve --faults SPEC`): broken
//! streams, error bursts and slow answers, drawn per request from a seeded
//! plan so that a run can be repeated.
//!
//! # SPEC grammar
//!
//! ```text
//! SPEC     := TERM ("," TERM)*
//! TERM     := FAULT "@" WHEN (":" OPTION)*      a fault and when it strikes
//!           | "seed=" INTEGER                   seed of the rate draws (default 0)
//! FAULT    := "drop"                connection cut mid-stream, after the head (no terminating chunk)
//!           | "malformed"           a JSON chunk cut in half mid-stream
//!           | "no-done"             the stream ends cleanly before the finish chunk and [DONE]
//!           | "bad-utf8"            a chunk holding invalid UTF-8 mid-stream
//!           | "stall=" DURATION     the stream pauses that long mid-stream
//!           | "huge-chunk=" SIZE    one valid content chunk of about SIZE bytes mid-stream
//!           | "slow-headers=" DURATION  the response headers wait that long
//!           | "status=" CODE        an error answer (400..=599) instead of generating
//! WHEN     := RATE                  probability per request: 0.05 or 5%
//!           | "every:" N            requests N, 2N, 3N, ...
//!           | "#" A [".." B]        request A (or A to B, inclusive)
//! OPTION   := "retry-after=" SECONDS      (status only) a Retry-After header
//!           | "after=" N                  (mid-stream faults) SSE events sent first
//! DURATION := NUMBER ("ms" | "s" | "m")?  simulated time; bare numbers are seconds
//! SIZE     := INTEGER ("B" | "KiB" | "MiB" | "KB" | "MB")?  at most 64 MiB
//! ```
//!
//! Requests are the `/v1/chat/completions` and `/v1/completions` calls the
//! twin receives, numbered from 1 in arrival order. Each request gets at most
//! one fault: the terms are tried in order and the first that strikes wins.
//! A rate term strikes when a draw from `(seed, request number, term
//! position)` falls below the rate, so the same spec and seed give the same
//! faults to the same request numbers. Mid-stream faults strike after `after`
//! SSE events (default: 1 to 4, drawn), or just before the finish chunk if
//! the answer is shorter; they do not touch non-streaming requests. Durations
//! are simulated seconds on the twin's clock.
//!
//! Example: `drop@0.05,status=503@every:10:retry-after=2,stall=30s@#5..8`.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::body::Body;
use axum::http::{header, StatusCode};
use axum::response::Response;
use bytes::Bytes;
use futures::{Stream, StreamExt};

use super::chunks::{self, ChunkHead, Piece};
use codendum_core::clock::Clock;
use codendum_core::error::ConfigError;
use spec::parse_term;

mod spec;

/// Largest `huge-chunk` size, bytes.
pub const MAX_HUGE_CHUNK: usize = 64 * 1024 * 1024;
/// Longest `stall` / `slow-headers` / `retry-after`, simulated seconds.
pub const MAX_FAULT_SECONDS: f64 = 1.0e6;

/// One kind of fault.
#[derive(Debug, Clone, PartialEq)]
pub enum Fault {
    /// The connection is cut mid-stream (the body ends with an error).
    Drop,
    /// A chunk whose JSON is cut in half.
    Malformed,
    /// The body ends cleanly before the finish chunk and `[DONE]`.
    NoDone,
    /// A chunk holding bytes that are not UTF-8.
    BadUtf8,
    /// The stream pauses this long (simulated) mid-stream.
    Stall(Duration),
    /// One valid content chunk of about this many bytes.
    HugeChunk(usize),
    /// The response headers wait this long (simulated), then the request is
    /// served normally.
    SlowHeaders(Duration),
    /// An error answer with this status instead of generating.
    Status {
        /// HTTP status, 400..=599.
        code: u16,
        /// The `Retry-After` header (whole seconds, rounded up), if any.
        retry_after: Option<Duration>,
    },
}

impl Fault {
    /// Whether the fault acts inside the SSE body (after the headers).
    pub fn is_mid_stream(&self) -> bool {
        !matches!(self, Fault::SlowHeaders(_) | Fault::Status { .. })
    }
}

/// When a term strikes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum When {
    /// With this probability per request (fraction in `[0, 1]`).
    Rate(f64),
    /// Every N-th request (N, 2N, ...).
    Every(u64),
    /// Requests `first..=last` (numbered from 1).
    Range(u64, u64),
}

/// One term of a plan: a fault, when it strikes, and where in the stream.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultTerm {
    /// The fault.
    pub fault: Fault,
    /// When it strikes.
    pub when: When,
    /// SSE events sent before a mid-stream fault; `None`: drawn in 1..=4.
    pub after: Option<u32>,
}

/// The fault chosen for one request.
#[derive(Debug, Clone, PartialEq)]
pub struct Injection {
    /// The request number (from 1, in arrival order).
    pub request: u64,
    /// The fault.
    pub fault: Fault,
    /// SSE events sent before a mid-stream fault.
    pub after_events: u32,
}

/// A parsed `--faults` spec with its request counter.
#[derive(Debug)]
pub struct FaultPlan {
    terms: Vec<FaultTerm>,
    seed: u64,
    requests: AtomicU64,
}

fn bad(term: &str, reason: impl std::fmt::Display) -> ConfigError {
    ConfigError::invalid("--faults", format!("term {term:?}: {reason}"))
}

fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl FaultPlan {
    /// Parses a spec (see the module documentation). Errors name the bad term.
    pub fn parse(spec: &str) -> Result<FaultPlan, ConfigError> {
        let mut terms = Vec::new();
        let mut seed = 0;
        for raw in codendum_core::flags::list(spec) {
            if let Some(s) = raw.strip_prefix("seed=") {
                seed = s
                    .trim()
                    .parse()
                    .map_err(|_| bad(raw, "seed is not a whole number"))?;
                continue;
            }
            terms.push(parse_term(raw)?);
        }
        if terms.is_empty() {
            return Err(ConfigError::invalid("--faults", "no fault given"));
        }
        Ok(FaultPlan {
            terms,
            seed,
            requests: AtomicU64::new(0),
        })
    }

    /// The same plan with another seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// The seed of the rate draws.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The terms, in spec order.
    pub fn terms(&self) -> &[FaultTerm] {
        &self.terms
    }

    /// Requests numbered so far.
    pub fn requests_seen(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Numbers the next request and returns its fault, if any.
    pub fn next_request(&self) -> Option<Injection> {
        let n = self.requests.fetch_add(1, Ordering::Relaxed) + 1;
        self.decide(n)
    }

    /// The fault of request `n` (from 1). A pure function of the plan and `n`.
    pub fn decide(&self, n: u64) -> Option<Injection> {
        self.terms.iter().enumerate().find_map(|(i, term)| {
            let draw = mix(mix(self.seed, n), i as u64 + 1);
            let strikes = match term.when {
                When::Rate(p) => ((draw >> 11) as f64 / (1u64 << 53) as f64) < p,
                When::Every(k) => k > 0 && n % k == 0,
                When::Range(a, b) => (a..=b).contains(&n),
            };
            strikes.then(|| Injection {
                request: n,
                fault: term.fault.clone(),
                after_events: term.after.unwrap_or(1 + (mix(draw, 7) % 4) as u32),
            })
        })
    }
}

/// Applies a before-the-headers fault: waits out `slow-headers` (then
/// returns `None`: serve normally) or builds the `status` answer.
pub async fn before_headers(injection: Option<&Injection>, clock: &Clock) -> Option<Response> {
    match &injection?.fault {
        Fault::SlowHeaders(d) => {
            clock.sleep(*d).await;
            None
        }
        Fault::Status { code, retry_after } => Some(status_response(*code, *retry_after)),
        _ => None,
    }
}

/// An error answer with vLLM's error body and an optional `Retry-After`
/// (whole seconds, rounded up).
pub fn status_response(code: u16, retry_after: Option<Duration>) -> Response {
    let status = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let message = format!(
        "fault injected: {} {}",
        status.as_u16(),
        status.canonical_reason().unwrap_or("")
    );
    let body = chunks::error_body(message.trim_end(), "InjectedFault", None, status.as_u16());
    let mut builder = Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, "application/json");
    if let Some(d) = retry_after {
        builder = builder.header(header::RETRY_AFTER, d.as_secs_f64().ceil().to_string());
    }
    builder.body(Body::from(body)).unwrap_or_default()
}

/// What a mid-stream fault needs to write valid-looking chunks.
#[derive(Debug, Clone)]
pub struct StreamContext {
    /// The response's shared chunk fields.
    pub head: ChunkHead,
    /// Chat (`true`) or completions chunk shapes.
    pub chat: bool,
    /// The twin's clock (for `stall`).
    pub clock: Clock,
}

/// Whether an SSE event is the finish chunk, an error event or `[DONE]`.
fn is_terminal(event: &[u8]) -> bool {
    let has = |needle: &[u8]| event.windows(needle.len()).any(|w| w == needle);
    event.starts_with(b"data: [DONE]") || has(b"\"finish_reason\":\"") || has(b"{\"error\":")
}

fn content_event(ctx: &StreamContext, text: &str) -> String {
    let chunk = if ctx.chat {
        ctx.head.chat_delta(&Piece::Text(text.into()), None)
    } else {
        ctx.head.text_chunk(text, None, None)
    };
    chunks::sse(&chunk)
}

/// The bytes a `malformed`, `bad-utf8` or `huge-chunk` fault inserts.
pub fn fault_event(ctx: &StreamContext, fault: &Fault) -> Option<Bytes> {
    match fault {
        Fault::Malformed => {
            let event = content_event(ctx, "cut");
            let json = event.trim_end().as_bytes();
            let mut out = json[..json.len() / 2].to_vec();
            out.extend_from_slice(b"\n\n");
            Some(Bytes::from(out))
        }
        Fault::BadUtf8 => {
            let event = content_event(ctx, "@@");
            let bytes = event.replace("@@", "\u{1}").into_bytes();
            let bad: Vec<u8> = bytes
                .into_iter()
                .flat_map(|b| {
                    if b == 1 {
                        vec![0xC3, 0x28, 0xFF]
                    } else {
                        vec![b]
                    }
                })
                .collect();
            Some(Bytes::from(bad))
        }
        Fault::HugeChunk(size) => Some(Bytes::from(content_event(ctx, &"x".repeat(*size)))),
        _ => None,
    }
}

struct Injecting<S> {
    inner: std::pin::Pin<Box<S>>,
    ctx: StreamContext,
    fault: Option<Fault>,
    after: u32,
    sent: u32,
    queue: std::collections::VecDeque<Result<Bytes, std::io::Error>>,
    ended: bool,
}

/// Wraps a twin SSE body (one event per item) so that `injection`'s
/// mid-stream fault happens after `after_events` events, or before the
/// finish chunk if the stream is shorter. Other faults pass it through.
pub fn inject_stream<S>(
    inner: S,
    injection: &Injection,
    ctx: StreamContext,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static
where
    S: Stream<Item = Result<Bytes, Infallible>> + Send + 'static,
{
    let state = Injecting {
        inner: Box::pin(inner),
        ctx,
        fault: Some(injection.fault.clone()).filter(Fault::is_mid_stream),
        after: injection.after_events,
        sent: 0,
        queue: Default::default(),
        ended: false,
    };
    futures::stream::unfold(state, |mut st| async move {
        loop {
            if let Some(item) = st.queue.pop_front() {
                return Some((item, st));
            }
            if st.ended {
                return None;
            }
            let Some(Ok(event)) = st.inner.next().await else {
                return None;
            };
            let due = st.sent >= st.after || is_terminal(&event);
            st.sent = st.sent.saturating_add(1);
            match st.fault.take_if(|_| due) {
                None => st.queue.push_back(Ok(event)),
                Some(Fault::Drop) => {
                    // Hand control back once first: the server writes out the
                    // response head and the events before this one when the
                    // body has nothing ready, so the cut always comes after
                    // the head (a client must see a broken stream, never a
                    // connection closed with nothing sent).
                    tokio::task::yield_now().await;
                    st.queue.push_back(Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "fault injected: connection dropped",
                    )));
                    st.ended = true;
                }
                Some(Fault::NoDone) => st.ended = true,
                Some(Fault::Stall(d)) => {
                    st.ctx.clock.sleep(d).await;
                    st.queue.push_back(Ok(event));
                }
                Some(f) => {
                    if let Some(extra) = fault_event(&st.ctx, &f) {
                        st.queue.push_back(Ok(extra));
                    }
                    st.queue.push_back(Ok(event));
                }
            }
        }
    })
}

#[cfg(test)]
mod tests;
