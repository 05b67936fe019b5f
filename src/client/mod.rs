//! The HTTP client: an OpenAI-compatible streaming [`Transport`], plus the
//! small side calls a run needs (`/v1/models`, `/tokenize`, `/version`).
//! Streaming calls to `https://` and every side call go through reqwest
//! (rustls, HTTP/1.1); streaming calls to plain `http://` through our own
//! HTTP/1.1 connections (`h1`), which read each socket in the call's task.
//!
//! Every time is taken on the run's [`Clock`] (simulated seconds), and the
//! per-request time limit is simulated time too.

use std::path::{Path, PathBuf};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::StreamExt;
use reqwest::header::{ACCEPT, CONTENT_TYPE};

mod h1;
pub mod h1_wire;
mod side_calls;

pub use side_calls::ModelInfo;

use self::h1::H1Pool;
use codendum_core::access::{read_pem_bundle, BaseUrl, Secret};
use codendum_core::clock::Clock;
use codendum_core::error::ConfigError;
use codendum_core::openai::http_error::{error_message, retry_after};
use codendum_core::openai::stream::{truncate_message, Flow, StreamMeter};
use codendum_core::openai::{CallError, CallOutcome, CallRequest, ErrorKind, Transport};

/// How long to keep reading after `[DONE]` so the connection can go back to
/// the pool (simulated time; vLLM ends the body right after `[DONE]`).
pub(super) const DRAIN_AFTER_DONE: Duration = Duration::from_secs(1);

/// Most bytes of an error body read for its message.
pub(super) const MAX_ERROR_BODY: usize = 64 * 1024;

/// Settings of an [`HttpClient`].
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// A PEM bundle that replaces the built-in roots (as curl's `--cacert`).
    pub cacert: Option<PathBuf>,
    /// Per-request time limit, simulated seconds on `clock`.
    pub timeout: Duration,
    /// Connections kept per host; set it to at least the concurrency (the
    /// pool never caps active connections, only idle ones).
    pub max_connections: usize,
    /// The run's clock.
    pub clock: Clock,
    /// The key for the side calls (`models`, `tokenize`, `version`);
    /// streaming calls use [`CallRequest::api_key`].
    pub api_key: Option<Secret>,
}

impl Default for ClientOptions {
    /// No CA file, 600 s limit, 64 connections, real-time clock, no key.
    fn default() -> Self {
        Self {
            cacert: None,
            timeout: Duration::from_secs(600),
            max_connections: 64,
            clock: Clock::real(),
            api_key: None,
        }
    }
}

/// Builds the reqwest client every HTTP user of a target shares: rustls,
/// HTTP/1.1, `max_connections` idle connections per host, and with
/// `cacert` only the certificates of that PEM bundle as roots.
pub fn build_http_client(
    cacert: Option<&Path>,
    max_connections: usize,
) -> Result<reqwest::Client, ConfigError> {
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .http1_only()
        .tcp_nodelay(true)
        .pool_max_idle_per_host(max_connections.max(1));
    if let Some(path) = cacert {
        builder = trust_only(builder, path)?;
    }
    builder
        .build()
        .map_err(|e| ConfigError::invalid("HTTP client", error_chain(&e)))
}

/// Trusts only the CAs of the PEM bundle at `path` (the private CA), as
/// curl's `--cacert`: the system roots are dropped.
pub fn trust_only(
    builder: reqwest::ClientBuilder,
    path: &std::path::Path,
) -> Result<reqwest::ClientBuilder, ConfigError> {
    let pem = read_pem_bundle(path)?;
    let certs = reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| ConfigError::BadFile {
        what: "CA file",
        path: path.to_path_buf(),
        reason: format!("not a usable PEM bundle: {e}"),
    })?;
    let mut builder = builder.tls_built_in_root_certs(false);
    for cert in certs {
        builder = builder.add_root_certificate(cert);
    }
    Ok(builder)
}

/// The streaming OpenAI-compatible client.
#[derive(Debug, Clone)]
pub struct HttpClient {
    http: reqwest::Client,
    /// Streaming calls to a plain `http://` base URL go through our own
    /// HTTP/1.1 client (see `h1`); https through reqwest.
    h1: Option<std::sync::Arc<H1Pool>>,
    base_url: String,
    origin: String,
    timeout: Duration,
    clock: Clock,
    api_key: Option<Secret>,
}

impl HttpClient {
    /// A client for `base_url` (checked once, where it was parsed).
    pub fn new(base_url: &BaseUrl, opts: ClientOptions) -> Result<Self, ConfigError> {
        let http = build_http_client(opts.cacert.as_deref(), opts.max_connections)?;
        let h1 = H1Pool::for_base_url(base_url, opts.max_connections).map(std::sync::Arc::new);
        Ok(Self {
            h1,
            origin: base_url.origin(),
            base_url: base_url.as_str().to_string(),
            http,
            timeout: opts.timeout,
            clock: opts.clock,
            api_key: opts.api_key,
        })
    }

    /// The base URL (ending in `/v1`).
    pub fn base_url(&self) -> &str {
        &self.base_url
    }

    /// Sends one streaming request and measures it (see [`Transport::call`]).
    pub async fn call_streaming(&self, request: CallRequest) -> CallOutcome {
        let sent_at = self.clock.now_secs();
        let mut slot: Option<(u16, StreamMeter)> = None;
        let exchange = self.exchange(&request, sent_at, &mut slot);
        let result = self.clock.timeout(self.timeout, exchange).await;
        match result {
            Ok(outcome) => outcome,
            Err(_) => {
                let now = self.clock.now_secs();
                let message = format!(
                    "no complete answer within {:.1} s",
                    self.timeout.as_secs_f64()
                );
                match slot.take() {
                    Some((status, mut meter)) => {
                        meter.fail(ErrorKind::Timeout, &message, now);
                        meter.finish(status, now)
                    }
                    None => failed(sent_at, now, ErrorKind::Timeout, None, message, None),
                }
            }
        }
    }

    async fn exchange(
        &self,
        request: &CallRequest,
        sent_at: f64,
        slot: &mut Option<(u16, StreamMeter)>,
    ) -> CallOutcome {
        let body = match serde_json::to_vec(&*request.body) {
            Ok(b) => b,
            Err(e) => {
                let now = self.clock.now_secs();
                let msg = format!("cannot encode the request body: {e}");
                return failed(sent_at, now, ErrorKind::BadJson, None, msg, None);
            }
        };
        if let Some(pool) = &self.h1 {
            let ended = h1::exchange(pool, &self.clock, request, &body, sent_at, slot).await;
            let now = self.clock.now_secs();
            return match ended {
                h1::Ended::Failed(kind, message) => failed(sent_at, now, kind, None, message, None),
                h1::Ended::Status(e) => {
                    failed(sent_at, now, e.kind, e.status, e.message, e.retry_after)
                }
                h1::Ended::Streamed => finished(slot, sent_at, now),
            };
        }
        self.exchange_reqwest(request, body, sent_at, slot).await
    }

    /// A streaming call through reqwest (every `https://` server).
    async fn exchange_reqwest(
        &self,
        request: &CallRequest,
        body: Vec<u8>,
        sent_at: f64,
        slot: &mut Option<(u16, StreamMeter)>,
    ) -> CallOutcome {
        let url = format!("{}{}", self.base_url, request.endpoint.path());
        let mut rb = self
            .http
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "text/event-stream")
            .body(body);
        if let Some(key) = &request.api_key {
            rb = rb.bearer_auth(key.expose());
        }
        for (name, value) in &request.headers {
            rb = rb.header(name.as_str(), value.as_str());
        }
        let response = match rb.send().await {
            Ok(r) => r,
            Err(e) => {
                let now = self.clock.now_secs();
                return failed(
                    sent_at,
                    now,
                    send_error_kind(&e),
                    None,
                    error_chain(&e),
                    None,
                );
            }
        };
        let status = response.status().as_u16();
        if !response.status().is_success() {
            let err = read_error(response).await;
            let now = self.clock.now_secs();
            return failed(
                sent_at,
                now,
                err.kind,
                Some(status),
                err.message,
                err.retry_after,
            );
        }
        let (_, meter) = slot.insert((
            status,
            StreamMeter::new(sent_at, request.record_gaps).telling(request.first_token.clone()),
        ));
        let mut stream = response.bytes_stream();
        self.read_stream(&mut stream, meter).await;
        if meter.saw_done() {
            let drain = async { while let Some(Ok(_)) = stream.next().await {} };
            let _ = self.clock.timeout(DRAIN_AFTER_DONE, drain).await;
        }
        finished(slot, sent_at, self.clock.now_secs())
    }

    /// Feeds the body to `meter` until it ends, fails or the meter stops.
    async fn read_stream(
        &self,
        stream: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
        meter: &mut StreamMeter,
    ) {
        loop {
            let item = stream.next().await;
            let now = self.clock.now_secs();
            match item {
                Some(Ok(bytes)) => {
                    if meter.on_bytes(&bytes, now) == Flow::Stop {
                        break;
                    }
                }
                Some(Err(e)) => {
                    let kind = if e.is_timeout() {
                        ErrorKind::Timeout
                    } else {
                        ErrorKind::StreamError
                    };
                    meter.fail(
                        kind,
                        &format!("reading the stream: {}", error_chain(&e)),
                        now,
                    );
                    break;
                }
                None => {
                    meter.on_end(now);
                    break;
                }
            }
        }
    }
}

impl Transport for HttpClient {
    fn call(&self, request: CallRequest) -> BoxFuture<'_, CallOutcome> {
        Box::pin(self.call_streaming(request))
    }
}

/// Reads an error answer (at most [`MAX_ERROR_BODY`] bytes of it).
async fn read_error(mut response: reqwest::Response) -> CallError {
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let retry = retry_after(
        header("retry-after-ms").as_deref(),
        header("retry-after").as_deref(),
        chrono::Utc::now(),
    );
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        let room = MAX_ERROR_BODY.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= MAX_ERROR_BODY {
            break;
        }
    }
    CallError {
        kind: ErrorKind::from_status(status),
        status: Some(status),
        message: error_message(status, &body),
        retry_after: retry,
    }
}

fn send_error_kind(e: &reqwest::Error) -> ErrorKind {
    if e.is_timeout() {
        ErrorKind::Timeout
    } else if e.is_connect() && is_tls_failure(e) {
        ErrorKind::Tls
    } else if e.is_connect() || e.is_builder() || e.is_request() {
        ErrorKind::Connect
    } else {
        ErrorKind::StreamError
    }
}

/// Whether a connection failed in its TLS handshake: a cause speaks of the
/// peer's certificate (rustls: `invalid peer certificate: UnknownIssuer`,
/// `… Expired`, `… NotValidForName`).
fn is_tls_failure(e: &reqwest::Error) -> bool {
    let mut cause: Option<&dyn std::error::Error> = Some(e);
    while let Some(c) = cause {
        let text = c.to_string();
        if text.contains("certificate") || text.contains("HandshakeFailure") {
            return true;
        }
        cause = c.source();
    }
    false
}

/// An error and its causes on one line ([`codendum_core::error::one_line`]), without
/// the URL.
fn error_chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    if let Some(url) = e.url() {
        text = text.replace(&format!(" for url ({url})"), "");
    }
    codendum_core::error::one_line_from(text, std::error::Error::source(e))
}

/// The outcome of a measured stream (the meter in `slot`).
fn finished(slot: &mut Option<(u16, StreamMeter)>, sent_at: f64, now: f64) -> CallOutcome {
    match slot.take() {
        Some((status, meter)) => meter.finish(status, now),
        None => failed(
            sent_at,
            now,
            ErrorKind::StreamError,
            None,
            "the stream was not measured".into(),
            None,
        ),
    }
}

fn failed(
    sent_at: f64,
    now: f64,
    kind: ErrorKind,
    status: Option<u16>,
    message: String,
    retry_after: Option<Duration>,
) -> CallOutcome {
    CallOutcome {
        sent_at,
        e2e: (now - sent_at).max(0.0),
        status,
        error: Some(CallError {
            kind,
            status,
            message: truncate_message(&message),
            retry_after,
        }),
        ..Default::default()
    }
}
