//! `codendum capture`: a recording reverse proxy between OpenCode and the
//! lab's server, for one real session or a whole class.
//!
//! Requests and answers pass through unchanged, streams piece by piece as
//! the upstream delivers them (nothing is buffered but the request body,
//! which is read whole before it is sent on); see [`forward`] for the
//! headers. It writes into its folder:
//! - `capture.json`: the header (`schema_version`
//!   `CAPTURE_SCHEMA_VERSION`, upstream without credentials, start, end);
//! - `calls.jsonl`: a line per call ([`store::CallLine`]): session and
//!   parent session (`x-session-id`, `x-parent-session-id`), kind (title,
//!   agent, subagent, compaction, other; the rule is in [`classify`]), prompt
//!   and output tokens (the stream's usage, else the chunks carrying text,
//!   marked `tokens_counted_by: client`), TTFT and duration (seconds, from the
//!   request's arrival), the answer's tool calls (names and argument sizes),
//!   and the **client time**: end of the session's previous answer → this
//!   request, with what the client did in it;
//! - `prompt.json`: the first agent request's system prompt and tools, as
//!   `classroom --prompt-file` reads them (not with `--no-text`: then no
//!   file of the folder holds any message text);
//! - `client-times.json`: the client-time samples per kind with their
//!   quantiles, as `classroom --client-times` reads them
//!   ([`crate::classroom::client_times`]), rewritten with every new sample
//!   and on exit.
//!
//! An upstream that cannot be reached gets a 502 in vLLM's error shape and
//! one line on stderr. Keys are forwarded, never written or printed.

pub mod classify;
pub mod files;
pub mod forward;
pub mod observe;
pub mod store;
pub mod tap;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::sync::oneshot;

pub use crate::classroom::client_times::CAPTURE_HEADER_FILE;
pub use files::{CaptureHeader, PROMPT_FILE};
pub use store::{CallLine, Store, CALLS_FILE};

use crate::events::Events;
use codendum_core::error::{ConfigError, Error};
use codendum_core::target::origin;

/// What a capture runs with.
#[derive(Debug, Clone)]
pub struct CaptureConfig {
    /// The upstream's OpenAI base URL, ending in `/v1`.
    pub upstream: String,
    /// Where to listen.
    pub listen: SocketAddr,
    /// The capture folder (created; must not hold a capture yet).
    pub out: PathBuf,
    /// PEM bundle of the upstream's private CA (replaces the system roots).
    pub cacert: Option<PathBuf>,
    /// Write `prompt.json` (the system prompt and tools); `false`
    /// (`--no-text`): the folder holds no message text at all, only sizes,
    /// times, kinds, sessions and tool names.
    pub keep_text: bool,
    /// Where the capture tells what it could not do (an upstream out of
    /// reach, a write that failed).
    pub events: Events,
}

impl CaptureConfig {
    /// Checks `--upstream` (http or https, a host; `/v1` is added when the
    /// URL has no path) and `--listen` (`IP:PORT`).
    pub fn new(upstream: &str, listen: &str, out: PathBuf) -> Result<Self, ConfigError> {
        let trimmed = upstream.trim().trim_end_matches('/');
        let rest = trimmed
            .strip_prefix("http://")
            .or_else(|| trimmed.strip_prefix("https://"));
        let Some(rest) = rest.filter(|r| !r.is_empty() && !r.starts_with('/')) else {
            return Err(ConfigError::invalid(
                "--upstream",
                format!(
                    "{} is not an http:// or https:// URL with a host",
                    display(trimmed)
                ),
            ));
        };
        let upstream = if rest.contains('/') {
            trimmed.to_string()
        } else {
            format!("{trimmed}/v1")
        };
        if !upstream.ends_with("/v1") {
            return Err(ConfigError::invalid(
                "--upstream",
                format!("{} must end in /v1 (the OpenAI base)", display(&upstream)),
            ));
        }
        let listen = listen.trim().parse().map_err(|_| {
            ConfigError::invalid(
                "--listen",
                format!("{listen} is not IP:PORT (e.g. 127.0.0.1:8001)"),
            )
        })?;
        Ok(CaptureConfig {
            upstream,
            listen,
            out,
            cacert: None,
            keep_text: true,
            events: Events::silent(),
        })
    }
}

/// A URL without `user:password@`.
fn display(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_string(),
    }
}

/// A running capture.
pub struct CaptureHandle {
    addr: SocketAddr,
    store: Arc<Store>,
    header: CaptureHeader,
    out: PathBuf,
    stop: Option<oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<()>,
}

impl CaptureHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/v1`: the base URL to give OpenCode.
    pub fn base_url(&self) -> String {
        codendum_twin::base_url_at(self.addr)
    }

    /// The records so far.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Stops listening, lets answers in flight finish for up to `grace`,
    /// and writes `client-times.json` and the header's end.
    pub async fn shutdown(mut self, grace: Duration) -> Result<u64, Error> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if tokio::time::timeout(grace, &mut self.server).await.is_err() {
            self.server.abort();
        }
        self.store.flush()?;
        let calls = self.store.calls();
        let mut header = self.header.clone();
        header.ended_utc = Some(chrono::Utc::now());
        header.calls = Some(calls);
        files::write_header(&self.out, &header)?;
        Ok(calls)
    }
}

/// Prepares the folder, binds, and serves until [`CaptureHandle::shutdown`].
pub async fn start(config: CaptureConfig) -> Result<CaptureHandle, Error> {
    let http = upstream_client(&config)?;
    files::prepare_folder(&config.out)?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| Error::io(format!("cannot listen on {}", config.listen), e))?;
    let addr = listener
        .local_addr()
        .map_err(|e| Error::io("cannot read the bound address", e))?;
    let upstream = display(&config.upstream);
    let mut header = CaptureHeader::new(upstream.clone(), codendum_twin::base_url_at(addr));
    header.text = Some(config.keep_text);
    files::write_header(&config.out, &header)?;
    let store = Arc::new(
        Store::open_keeping(
            &config.out,
            format!("codendum capture of {upstream}"),
            config.keep_text,
        )?
        .with_events(config.events.clone()),
    );
    store.flush()?;
    let fwd = Arc::new(forward::Forwarder {
        http,
        base: config.upstream.clone(),
        origin: origin(&config.upstream),
        store: store.clone(),
        events: config.events.clone(),
    });
    let app = Router::new().fallback(forward::handle).with_state(fwd);
    let (tx, rx) = oneshot::channel::<()>();
    // Every client connection with `TCP_NODELAY`, as the twin's: an SSE
    // answer is many small writes, and without it Nagle's algorithm holds
    // one back until the client's delayed ACK (~40 ms on Linux), which the
    // client sees as latency the capture added.
    let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
        let _ = tcp.set_nodelay(true);
    });
    let server = tokio::spawn(async move {
        let _ = axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = rx.await;
            })
            .await;
    });
    Ok(CaptureHandle {
        addr,
        store,
        header,
        out: config.out,
        stop: Some(tx),
        server,
    })
}

/// The upstream client: rustls, HTTP/1.1, no total time limit (answers
/// stream for minutes), `--cacert` as the only roots when given; proxy
/// variables are honoured except for a loopback upstream.
fn upstream_client(config: &CaptureConfig) -> Result<reqwest::Client, ConfigError> {
    let mut builder = reqwest::Client::builder()
        .use_rustls_tls()
        .http1_only()
        .tcp_nodelay(true)
        .connect_timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(256);
    let host = origin(&config.upstream);
    if host.contains("://127.") || host.contains("://localhost") || host.contains("://[::1]") {
        builder = builder.no_proxy();
    }
    if let Some(path) = &config.cacert {
        builder = crate::client::trust_only(builder, path)?;
    }
    builder
        .build()
        .map_err(|e| ConfigError::invalid("--upstream", codendum_core::error::one_line(&e)))
}
