//! The firehose: a minimal OpenAI-compatible streaming server for measuring
//! the *client*. It plans nothing and models nothing: a chat request gets a
//! role chunk, N content chunks in vLLM's shape (formatted by [`chunks`]),
//! a finish chunk, a usage chunk and `[DONE]`.
//!
//! Two modes, chosen per request by a `firehose` object in the JSON body
//! (other servers ignore unknown fields):
//! - **firehose** (default): the tokens go out as fast as the server can
//!   write them, [`FirehoseOptions::batch`] SSE events per write;
//! - **paced** (`"firehose": {"ttft_ms": 50, "itl_ms": 20}`): token *i* is
//!   written at `received + ttft + i × itl` (simulated time on the clock),
//!   one event per write, and its content is a stamp: the UTC time in
//!   nanoseconds at which the server wrote it (`s<ns> `), the first token
//!   also when the request arrived (`r<ns> s<ns> `). [`parse_stamps`] reads
//!   them back out of the assembled answer, so a client can compare its own
//!   TTFT and gaps with the server's.
//!
//! The number of tokens is the request's `max_tokens` (or
//! `max_completion_tokens`), else [`FirehoseOptions::tokens`].

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use futures::Stream;
use serde_json::Value;

use super::chunks::{self, ChunkHead, Piece};
use super::TwinError;
use codendum_core::clock::Clock;

/// Most tokens one request may ask for.
pub const MAX_TOKENS: u32 = 1 << 24;

/// The text of every firehose token.
const TOKEN_TEXT: &str = " tok";

/// How the firehose serves.
#[derive(Debug, Clone)]
pub struct FirehoseOptions {
    /// Output tokens of a request that names no `max_tokens`.
    pub tokens: u32,
    /// Token events per write in firehose mode (at least 1).
    pub batch: usize,
    /// The clock pacing sleeps on and stamps are read from.
    pub clock: Clock,
}

impl Default for FirehoseOptions {
    /// 4,096 tokens, 64 events per write, the real-time clock.
    fn default() -> Self {
        FirehoseOptions {
            tokens: 4096,
            batch: 64,
            clock: Clock::real(),
        }
    }
}

/// Pacing of one request (simulated time).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pacing {
    /// Request received → first token.
    pub ttft: Duration,
    /// Between consecutive tokens.
    pub itl: Duration,
}

/// What a request asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Plan {
    tokens: u32,
    pacing: Option<Pacing>,
}

fn plan(body: &[u8], default_tokens: u32) -> Result<Plan, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("bad JSON: {e}"))?;
    let tokens = ["max_completion_tokens", "max_tokens"]
        .iter()
        .find_map(|k| v.get(*k).and_then(Value::as_u64))
        .map_or(default_tokens, |n| {
            u32::try_from(n).unwrap_or(MAX_TOKENS).min(MAX_TOKENS)
        });
    if tokens == 0 {
        return Err("max_tokens must be at least 1".into());
    }
    let ms = |k: &str| {
        v.get("firehose")
            .and_then(|f| f.get(k))
            .and_then(Value::as_f64)
            .filter(|x| x.is_finite() && *x >= 0.0)
            .map(|x| Duration::from_secs_f64(x / 1e3))
    };
    let pacing = match (ms("ttft_ms"), ms("itl_ms")) {
        (None, None) => None,
        (ttft, itl) => Some(Pacing {
            ttft: ttft.unwrap_or_default(),
            itl: itl.unwrap_or_default(),
        }),
    };
    Ok(Plan { tokens, pacing })
}

struct FirehoseState {
    opts: FirehoseOptions,
    next_id: std::sync::atomic::AtomicU64,
}

/// Nanoseconds since the Unix epoch of the clock's "now".
fn utc_nanos(clock: &Clock) -> i64 {
    clock.utc_now().timestamp_nanos_opt().unwrap_or(0)
}

/// The routes: `POST /v1/chat/completions` (always streamed).
pub fn router(opts: FirehoseOptions) -> Router {
    let state = Arc::new(FirehoseState {
        opts,
        next_id: std::sync::atomic::AtomicU64::new(1),
    });
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .with_state(state)
}

async fn chat(State(st): State<Arc<FirehoseState>>, body: Bytes) -> Response {
    let received = utc_nanos(&st.opts.clock);
    let received_at = st.opts.clock.now();
    let plan = match plan(&body, st.opts.tokens) {
        Ok(p) => p,
        Err(msg) => {
            return Response::builder()
                .status(StatusCode::BAD_REQUEST)
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(chunks::error_body(
                    &msg,
                    "BadRequestError",
                    None,
                    400,
                )))
                .unwrap_or_default();
        }
    };
    let n = st
        .next_id
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let head = ChunkHead {
        id: format!("chatcmpl-{n:016x}"),
        created: received / 1_000_000_000,
        model: "firehose".into(),
    };
    let body = match plan.pacing {
        None => Body::from_stream(firehose_stream(head, plan.tokens, st.opts.batch)),
        Some(p) => Body::from_stream(paced_stream(
            head,
            plan.tokens,
            p,
            st.opts.clock.clone(),
            received,
            received_at,
        )),
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "text/event-stream; charset=utf-8")
        .body(body)
        .unwrap_or_default()
}

/// Finish chunk, usage chunk and `[DONE]`.
fn tail(head: &ChunkHead, tokens: u32) -> String {
    let usage = chunks::usage_json(1, u64::from(tokens));
    let mut s = chunks::sse(&head.chat_finish("length", None));
    s.push_str(&chunks::sse(&head.usage_chunk(true, &usage, "firehose")));
    s.push_str(&chunks::sse("[DONE]"));
    s
}

/// Role chunk, then `tokens` identical content events in writes of `batch`,
/// then the tail. Every write after the first shares one buffer.
fn firehose_stream(
    head: ChunkHead,
    tokens: u32,
    batch: usize,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
    let event = chunks::sse(&head.chat_delta(&Piece::Text(TOKEN_TEXT.into()), None));
    let batch = batch.max(1);
    let block = Bytes::from(event.repeat(batch));
    let first = Bytes::from(chunks::sse(&head.chat_role(None)));
    let end = Bytes::from(tail(&head, tokens));
    let tokens = tokens as usize;
    let rest = tokens % batch;
    let part = (rest > 0).then(|| block.slice(..rest * event.len()));
    let all = std::iter::once(first)
        .chain(std::iter::repeat_n(block, tokens / batch))
        .chain(part)
        .chain(std::iter::once(end));
    futures::stream::iter(all.map(Ok))
}

/// Role chunk at once, then each token at its paced time with its stamp.
fn paced_stream(
    head: ChunkHead,
    tokens: u32,
    pacing: Pacing,
    clock: Clock,
    received: i64,
    received_at: Duration,
) -> impl Stream<Item = Result<Bytes, Infallible>> + Send {
    let first = Bytes::from(chunks::sse(&head.chat_role(None)));
    let state = (head, 0u32, Some(first), false);
    futures::stream::unfold(state, move |(head, i, pending, done)| {
        let clock = clock.clone();
        async move {
            if let Some(b) = pending {
                return Some((Ok(b), (head, i, None, done)));
            }
            if done {
                return None;
            }
            if i == tokens {
                let end = Bytes::from(tail(&head, tokens));
                return Some((Ok(end), (head, i, None, true)));
            }
            clock
                .sleep_until(received_at + pacing.ttft + pacing.itl * i)
                .await;
            let sent = utc_nanos(&clock);
            let text = if i == 0 {
                format!("r{received} s{sent} ")
            } else {
                format!("s{sent} ")
            };
            let event = chunks::sse(&head.chat_delta(&Piece::Text(text), None));
            Some((Ok(Bytes::from(event)), (head, i + 1, None, false)))
        }
    })
}

/// The stamps of a paced answer, UTC nanoseconds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Stamps {
    /// When the server received the request.
    pub received: Option<i64>,
    /// When the server wrote each token, in order.
    pub sent: Vec<i64>,
}

/// Reads the stamps out of a paced answer's assembled content.
pub fn parse_stamps(content: &str) -> Stamps {
    let mut out = Stamps::default();
    for word in content.split_ascii_whitespace() {
        if let Some(ns) = word.strip_prefix('r').and_then(|d| d.parse().ok()) {
            out.received = Some(ns);
        } else if let Some(ns) = word.strip_prefix('s').and_then(|d| d.parse().ok()) {
            out.sent.push(ns);
        }
    }
    out
}

/// A running firehose server.
#[derive(Debug)]
pub struct FirehoseHandle {
    addr: SocketAddr,
    server: tokio::task::JoinHandle<()>,
}

impl FirehoseHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/v1`.
    pub fn base_url(&self) -> String {
        crate::base_url_at(self.addr)
    }

    /// Stops serving.
    pub async fn shutdown(self) {
        self.server.abort();
        let _ = self.server.await;
    }
}

/// Binds `addr` (port 0 for any) and serves the firehose (TCP_NODELAY on).
pub async fn start(opts: FirehoseOptions, addr: SocketAddr) -> Result<FirehoseHandle, TwinError> {
    let (listener, bound) = crate::bind(addr).await?;
    let app = router(opts);
    let server = crate::serve_no_delay(listener, app);
    Ok(FirehoseHandle {
        addr: bound,
        server,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_reads_tokens_and_pacing() {
        let p = plan(br#"{"max_tokens":7}"#, 9).expect("plan");
        assert_eq!(
            p,
            Plan {
                tokens: 7,
                pacing: None
            }
        );
        let p = plan(br#"{"firehose":{"ttft_ms":50,"itl_ms":20}}"#, 9).expect("plan");
        assert_eq!(p.tokens, 9);
        assert_eq!(
            p.pacing,
            Some(Pacing {
                ttft: Duration::from_millis(50),
                itl: Duration::from_millis(20)
            })
        );
        assert!(plan(br#"{"max_tokens":0}"#, 9).is_err());
        assert!(plan(b"nope", 9).is_err());
    }

    #[test]
    fn stamps_round_trip() {
        let s = parse_stamps("r100 s150 s170 junk s190 ");
        assert_eq!(s.received, Some(100));
        assert_eq!(s.sent, vec![150, 170, 190]);
        assert_eq!(parse_stamps("é"), Stamps::default());
    }
}
