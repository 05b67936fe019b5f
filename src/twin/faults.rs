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
//! FAULT    := "drop"                connection cut mid-stream (no terminating chunk)
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
use crate::clock::Clock;
use crate::error::ConfigError;

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
        for raw in spec.split(',').map(str::trim).filter(|t| !t.is_empty()) {
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

fn parse_term(raw: &str) -> Result<FaultTerm, ConfigError> {
    let (fault, rest) = raw
        .split_once('@')
        .ok_or_else(|| bad(raw, "expected FAULT@WHEN (e.g. drop@0.05)"))?;
    let mut parts: Vec<&str> = rest.split(':').map(str::trim).collect();
    let when_text = if parts.first() == Some(&"every") && parts.len() > 1 {
        let n = parts.remove(1);
        parts[0] = n;
        format!("every:{n}")
    } else {
        parts.first().map(|s| s.to_string()).unwrap_or_default()
    };
    let when = parse_when(raw, &when_text)?;
    let mut fault = parse_fault(raw, fault.trim())?;
    let mut after = None;
    for opt in &parts[1..] {
        let (key, value) = opt
            .split_once('=')
            .ok_or_else(|| bad(raw, format!("option {opt:?} is not KEY=VALUE")))?;
        match (key.trim(), &mut fault) {
            ("retry-after", Fault::Status { retry_after, .. }) => {
                *retry_after = Some(parse_duration(raw, value)?);
            }
            ("after", f) if f.is_mid_stream() => {
                after = Some(
                    value
                        .trim()
                        .parse()
                        .map_err(|_| bad(raw, "after= wants a whole number of events"))?,
                );
            }
            (k, _) => return Err(bad(raw, format!("option {k:?} does not apply here"))),
        }
    }
    Ok(FaultTerm { fault, when, after })
}

fn parse_when(raw: &str, text: &str) -> Result<When, ConfigError> {
    if let Some(n) = text.strip_prefix("every:") {
        let n: u64 = n
            .parse()
            .map_err(|_| bad(raw, "every: wants a whole number"))?;
        if n == 0 {
            return Err(bad(raw, "every:0 never strikes"));
        }
        return Ok(When::Every(n));
    }
    if let Some(range) = text.strip_prefix('#') {
        let (a, b) = range.split_once("..").unwrap_or((range, range));
        let num = |s: &str| {
            s.trim()
                .parse::<u64>()
                .map_err(|_| bad(raw, "#A..B wants request numbers"))
        };
        let (a, b) = (num(a)?, num(b)?);
        if a == 0 || b < a {
            return Err(bad(raw, "requests are numbered from 1 and A <= B"));
        }
        return Ok(When::Range(a, b));
    }
    let (number, scale) = match text.strip_suffix('%') {
        Some(p) => (p, 100.0),
        None => (text, 1.0),
    };
    let p: f64 = number
        .trim()
        .parse()
        .map_err(|_| bad(raw, "WHEN is a rate (0.05, 5%), every:N or #A..B"))?;
    let p = p / scale;
    if !(0.0..=1.0).contains(&p) {
        return Err(bad(raw, "a rate is between 0 and 1 (0% and 100%)"));
    }
    Ok(When::Rate(p))
}

fn parse_fault(raw: &str, text: &str) -> Result<Fault, ConfigError> {
    let (name, value) = match text.split_once('=') {
        Some((n, v)) => (n.trim(), Some(v.trim())),
        None => (text, None),
    };
    let need = |what: &str| value.ok_or_else(|| bad(raw, format!("{name} needs ={what}")));
    Ok(match name {
        "drop" | "malformed" | "no-done" | "bad-utf8" if value.is_some() => {
            return Err(bad(raw, format!("{name} takes no value")))
        }
        "drop" => Fault::Drop,
        "malformed" => Fault::Malformed,
        "no-done" => Fault::NoDone,
        "bad-utf8" => Fault::BadUtf8,
        "stall" => Fault::Stall(parse_duration(raw, need("DURATION")?)?),
        "slow-headers" => Fault::SlowHeaders(parse_duration(raw, need("DURATION")?)?),
        "huge-chunk" => Fault::HugeChunk(parse_size(raw, need("SIZE")?)?),
        "status" => {
            let code: u16 = need("CODE")?
                .parse()
                .map_err(|_| bad(raw, "status wants a number"))?;
            if !(400..=599).contains(&code) {
                return Err(bad(raw, "status must be in 400..=599"));
            }
            Fault::Status {
                code,
                retry_after: None,
            }
        }
        other => return Err(bad(raw, format!("unknown fault {other:?}"))),
    })
}

fn parse_duration(raw: &str, text: &str) -> Result<Duration, ConfigError> {
    let text = text.trim();
    let (number, unit) = if let Some(n) = text.strip_suffix("ms") {
        (n, 0.001)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('m') {
        (n, 60.0)
    } else {
        (text, 1.0)
    };
    let v: f64 = number
        .trim()
        .parse()
        .map_err(|_| bad(raw, format!("{text:?} is not a duration (30s, 500ms, 2m)")))?;
    let secs = v * unit;
    if !(secs.is_finite() && (0.0..=MAX_FAULT_SECONDS).contains(&secs)) {
        return Err(bad(raw, format!("{text:?} is outside 0..=1e6 s")));
    }
    Ok(Duration::from_secs_f64(secs))
}

fn parse_size(raw: &str, text: &str) -> Result<usize, ConfigError> {
    let units: [(&str, usize); 6] = [
        ("KiB", 1 << 10),
        ("MiB", 1 << 20),
        ("KB", 1000),
        ("MB", 1_000_000),
        ("B", 1),
        ("", 1),
    ];
    let (number, mult) = units
        .iter()
        .find_map(|(u, m)| text.strip_suffix(u).map(|n| (n, *m)))
        .unwrap_or((text, 1));
    let n: usize = number
        .trim()
        .parse()
        .map_err(|_| bad(raw, format!("{text:?} is not a size (1MiB, 512KiB)")))?;
    match n.checked_mul(mult) {
        Some(s) if s > 0 && s <= MAX_HUGE_CHUNK => Ok(s),
        _ => Err(bad(raw, "a huge chunk is 1 B to 64 MiB")),
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
#[path = "faults_tests.rs"]
mod tests;
