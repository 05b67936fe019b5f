//! `codendum capture`: a recording reverse proxy between OpenCode and the
//! lab's server, for one real session or a whole class.
//!
//! Requests and answers pass through unchanged, streams piece by piece as
//! the upstream delivers them (nothing is buffered but the request body,
//! which is read whole before it is sent on); see [`forward`] for the
//! headers. It writes into its folder:
//! - `capture.json`: the header (`schema_version`
//!   `CAPTURE_SCHEMA_VERSION`, upstream without credentials, start, end);
//! - `calls.jsonl`: a line per call ([`codendum_core::capture::CallLine`]): session and
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
//! a notice. Keys are forwarded, never written or printed; each key becomes
//! a student ordinal (`student` in `calls.jsonl`).
//!
//! On the lab's network: with a certificate and key ([`tls`]) it listens
//! with TLS; beyond loopback without them it is plain HTTP and
//! [`plain_http_warning`] says so. Its files are written off the calls'
//! path ([`recorder`]): a slow or full disk costs records, counted, never
//! a student's call.

pub mod classify;
pub mod files;
pub mod forward;
pub mod notice;
pub mod observe;
pub mod recorder;
pub mod store;
pub mod tap;
pub mod tls;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::sync::oneshot;

pub use notice::{CaptureNotice, Notifier};
pub use recorder::{CaptureDisk, FolderDisk, Losses};
pub use store::{Store, StoreOptions};
pub use tls::TlsFiles;

use crate::events::Events;
use codendum_core::access::BaseUrl;
use codendum_core::capture::CaptureHeader;
use codendum_core::capture::CAPTURE_HEADER_FILE;
use codendum_core::error::{ConfigError, Error};

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
    /// Listen with TLS, with this certificate and key.
    pub tls: Option<TlsFiles>,
    /// Records that may wait for the disk ([`recorder::DEFAULT_QUEUE`]).
    pub queue: usize,
    /// Where the capture tells what happens to it (an upstream out of
    /// reach, a disk that fails or falls behind, a failed TLS handshake).
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
            tls: None,
            queue: recorder::DEFAULT_QUEUE,
            events: Events::silent(),
        })
    }
}

/// The one-line warning for a capture that listens on `addr` beyond
/// loopback in plain HTTP (`tls` false): every student's key would cross
/// the lab's network unencrypted. `None` on loopback or with TLS.
pub fn plain_http_warning(addr: SocketAddr, tls: bool) -> Option<String> {
    (!tls && !addr.ip().is_loopback()).then(|| {
        format!(
            "listening on {addr} in plain HTTP: the students' API keys and code cross the network unencrypted; give --tls-cert and --tls-key (a certificate of the lab's CA) to listen with TLS"
        )
    })
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

/// What a capture did, at its end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureSummary {
    /// Calls passed on.
    pub calls: u64,
    /// Students (distinct API keys).
    pub students: usize,
    /// What could not be recorded.
    pub losses: Losses,
    /// Clients whose TLS handshake failed.
    pub tls_failures: u64,
    /// Whether `capture.json` holds the end (the disk took it in time).
    pub header_written: bool,
}

impl CaptureSummary {
    /// The closing sentence: calls, students, and what was lost.
    pub fn line(&self, out: &std::path::Path) -> String {
        let mut text = format!(
            "{} of {} passed on",
            counted(self.calls, "call"),
            counted(self.students as u64, "student")
        );
        let lost = self.losses.calls_lost();
        if lost == 0 {
            text.push_str(&format!(", every one recorded in {}", out.display()));
        } else {
            text.push_str(&format!(
                "; {lost} not recorded ({}); the other {} are in {}",
                self.losses.reason().unwrap_or_default(),
                self.calls.saturating_sub(lost),
                out.display()
            ));
        }
        if self.losses.files_failed > 0 {
            text.push_str(&format!(
                "; {} writes of prompt.json, client-times.json or capture.json failed",
                self.losses.files_failed
            ));
        }
        if !self.header_written {
            text.push_str("; capture.json does not hold the end (the disk did not take it)");
        }
        if self.tls_failures > 0 {
            text.push_str(&format!(
                "; {} failed",
                counted(self.tls_failures, "TLS handshake")
            ));
        }
        text
    }
}

/// `1 call`, `2 calls`.
fn counted(n: u64, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A running capture.
pub struct CaptureHandle {
    addr: SocketAddr,
    base_url: String,
    store: Arc<Store>,
    header: CaptureHeader,
    stop: Option<oneshot::Sender<()>>,
    server: tokio::task::JoinHandle<()>,
    tls_failures: Arc<AtomicU64>,
}

impl CaptureHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/v1` (`https://` with TLS): the base URL to give OpenCode.
    pub fn base_url(&self) -> String {
        self.base_url.clone()
    }

    /// The warning for listening beyond loopback in plain HTTP, if it does
    /// ([`plain_http_warning`]).
    pub fn plain_http_warning(&self) -> Option<String> {
        plain_http_warning(self.addr, self.base_url.starts_with("https://"))
    }

    /// The records so far.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Waits up to `within` for every record queued so far to reach the
    /// disk (or fail); whether it did.
    pub async fn flushed(&self, within: Duration) -> bool {
        self.store.settle(within).await
    }

    /// Stops listening, lets answers in flight finish for up to `grace`,
    /// gives the disk up to `grace` more for the records still waiting,
    /// then writes `client-times.json` and the header's end. Returns the
    /// calls passed on.
    pub async fn shutdown(self, grace: Duration) -> Result<u64, codendum_core::error::Error> {
        Ok(self.finish(grace).await.calls)
    }

    /// [`CaptureHandle::shutdown`], saying what was recorded and lost.
    pub async fn finish(mut self, grace: Duration) -> CaptureSummary {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if tokio::time::timeout(grace, &mut self.server).await.is_err() {
            self.server.abort();
        }
        let settled = self.store.flush(grace).await;
        let losses = self.store.losses();
        let mut header = self.header.clone();
        header.ended_utc = Some(chrono::Utc::now());
        header.calls = Some(self.store.calls());
        let lost = losses.calls_lost();
        header.calls_not_recorded = (lost > 0).then_some(lost);
        header.loss = losses.reason();
        let mut header_written = false;
        if settled {
            if let Some(bytes) = store::pretty(&header) {
                self.store.write_file(CAPTURE_HEADER_FILE, bytes);
                header_written = self.store.flush(grace).await
                    && self.store.losses().files_failed == losses.files_failed;
            }
        }
        CaptureSummary {
            calls: self.store.calls(),
            students: self.store.students(),
            losses,
            tls_failures: self.tls_failures.load(Ordering::SeqCst),
            header_written,
        }
    }
}

/// Prepares the folder, binds, and serves until [`CaptureHandle::shutdown`].
pub async fn start(config: CaptureConfig) -> Result<CaptureHandle, Error> {
    files::prepare_folder(&config.out)?;
    let out = config.out.clone();
    launch(config, move || {
        FolderDisk::open(&out)
            .map(|d| Box::new(d) as Box<dyn CaptureDisk>)
            .map_err(|e| Error::io(format!("cannot write into {}", out.display()), e))
    })
    .await
}

/// [`start`] writing the records to `disk` instead of the folder's files
/// (the folder must exist; its `capture.json` is still written there at
/// the start).
pub async fn start_on(
    config: CaptureConfig,
    disk: Box<dyn CaptureDisk>,
) -> Result<CaptureHandle, Error> {
    launch(config, move || Ok(disk)).await
}

async fn launch(
    config: CaptureConfig,
    disk: impl FnOnce() -> Result<Box<dyn CaptureDisk>, Error>,
) -> Result<CaptureHandle, Error> {
    let http = upstream_client(&config)?;
    let tls = config.tls.as_ref().map(tls::server_config).transpose()?;
    let tcp = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|e| Error::io(format!("cannot listen on {}", config.listen), e))?;
    let addr = tcp
        .local_addr()
        .map_err(|e| Error::io("cannot read the bound address", e))?;
    let base_url = match &tls {
        Some(_) => format!("https://{addr}/v1"),
        None => codendum_twin::base_url_at(addr),
    };
    let upstream = display(&config.upstream);
    let mut header = CaptureHeader::new(upstream.clone(), base_url.clone());
    header.text = Some(config.keep_text);
    files::write_header(&config.out, &header)?;
    let disk = disk()?;
    let notifier = Notifier::new(config.events.clone());
    let store = Arc::new(Store::with_disk(
        disk,
        StoreOptions {
            folder: config.out.display().to_string(),
            source: format!("codendum capture of {upstream}"),
            keep_text: config.keep_text,
            queue: config.queue,
        },
        notifier.clone(),
    )?);
    let fwd = Arc::new(forward::Forwarder {
        http,
        base: config.upstream.clone(),
        origin: BaseUrl::parse_for("--upstream", &config.upstream)?.origin(),
        store: store.clone(),
        notices: notifier.clone(),
    });
    let app = Router::new().fallback(forward::handle).with_state(fwd);
    let (tx, rx) = oneshot::channel::<()>();
    let tls_failures = Arc::new(AtomicU64::new(0));
    let stop = async move {
        let _ = rx.await;
    };
    let server = match tls {
        Some(config) => {
            let listener = tls::TlsListener::new(tcp, config, tls_failures.clone(), notifier)
                .map_err(|e| Error::io("cannot read the bound address", e))?;
            tokio::spawn(async move {
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(stop)
                    .await;
            })
        }
        None => {
            // Every client connection with `TCP_NODELAY`, as the twin's: an
            // SSE answer is many small writes, and without it Nagle's
            // algorithm holds one back until the client's delayed ACK
            // (~40 ms on Linux), which the client sees as latency the
            // capture added.
            let listener = axum::serve::ListenerExt::tap_io(tcp, |tcp| {
                let _ = tcp.set_nodelay(true);
            });
            tokio::spawn(async move {
                let _ = axum::serve(listener, app)
                    .with_graceful_shutdown(stop)
                    .await;
            })
        }
    };
    Ok(CaptureHandle {
        addr,
        base_url,
        store,
        header,
        stop: Some(tx),
        server,
        tls_failures,
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
    if BaseUrl::parse_for("--upstream", &config.upstream)?.is_loopback() {
        builder = builder.no_proxy();
    }
    if let Some(path) = &config.cacert {
        builder = crate::client::trust_only(builder, path)?;
    }
    builder
        .build()
        .map_err(|e| ConfigError::invalid("--upstream", codendum_core::error::one_line(&e)))
}
