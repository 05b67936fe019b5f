//! The embedded twin: an OpenAI-compatible server that schedules, caches,
//! streams and reports like vLLM 0.30 on a GB10, timed by a physical model.
//!
//! Layers: [`engine`] (scheduler, [`kv`] blocks and prefix cache) timed by
//! [`model`]; [`runner`] (the tokio task that owns the engine and sleeps each
//! step on the [`Clock`]); [`server`] (axum routes, vLLM's chunk shapes in
//! [`chunks`] and [`generation`], `/metrics` in [`metrics`]).
//!
//! # Plugging in a responder
//! What the model *says* comes from a [`Responder`]
//! ([`answer`]); when and how fast it comes out is the engine's business.
//! The default is [`filler::FillerResponder`]. An agent persona implements
//! `Responder` (deterministic for [`answer::AnswerRequest::seed`]) and is
//! passed as `TwinOptions { responder: Arc::new(MyPersona::new()), .. }`.
//! The twin plans the answer once at admission, cuts it into tokens with
//! [`tokenizer`] (a tool call = one header token with the name, then its
//! argument pieces) and streams one token per engine step; the engine stops
//! it at `max_tokens` (finish `length`) or at its natural end (`stop`, or
//! `tool_calls` when the answer had tool calls).

pub mod answer;
pub mod chunks;
pub mod engine;
pub mod engine_stats;
pub mod faults;
pub mod filler;
pub mod firehose;
pub mod fleet;
pub mod generation;
pub mod inproc;
pub mod kv;
pub mod metrics;
pub mod model;
pub mod persona;
pub mod proxy;
pub mod request_body;
pub mod routing;
pub mod runner;
pub mod server;
pub mod tokenizer;
pub mod tool_sets;

#[cfg(test)]
mod engine_tests;

use std::net::SocketAddr;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use answer::Responder;
use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use engine::{Engine, EngineConfig};
pub use server::{routes, TwinState};

/// The vLLM version the twin speaks: its `/version`, the system fingerprint
/// of its answers, the server version a run against it records.
pub const VLLM_VERSION: &str = "0.30.0";

/// The release series of [`VLLM_VERSION`] (`0.30`), as the banners name it.
pub fn vllm_series() -> &'static str {
    VLLM_VERSION
        .rsplit_once('.')
        .map_or(VLLM_VERSION, |(series, _)| series)
}

/// How to run a twin.
#[derive(Clone)]
pub struct TwinOptions {
    /// Server profile (settings, hardware model).
    pub profile: Profile,
    /// The clock steps are slept on (scaled: N× faster).
    pub clock: Clock,
    /// What answers say.
    pub responder: Arc<dyn Responder>,
    /// Accepted API keys (`--api-key`); empty: no authentication.
    pub api_keys: Vec<Secret>,
    /// Seed of answers and ids.
    pub seed: u64,
    /// The lab's proxy in front of the twin (per-key limits, 429s), if any.
    pub proxy: Option<proxy::ProxyConfig>,
    /// Injected faults (`--faults`, see [`faults`]); `None`: a healthy twin.
    pub faults: Option<Arc<faults::FaultPlan>>,
    /// Keep every request's TTFT in the engine's own clock
    /// ([`engine_stats::EngineStats::ttft_log`]; 8 bytes a request, for
    /// tests that compare runs); `false` by default.
    pub ttft_log: bool,
}

impl TwinOptions {
    /// A profile with the real-time clock, the filler responder, no keys, seed 0.
    pub fn new(profile: Profile) -> Self {
        TwinOptions {
            profile,
            clock: Clock::real(),
            responder: Arc::new(filler::FillerResponder::default()),
            api_keys: Vec::new(),
            seed: 0,
            proxy: None,
            faults: None,
            ttft_log: false,
        }
    }
}

impl std::fmt::Debug for TwinOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwinOptions")
            .field("profile", &self.profile.name)
            .field("clock_scale", &self.clock.scale())
            .field("api_keys", &self.api_keys)
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

/// Why the twin could not start.
#[derive(Debug, thiserror::Error)]
pub enum TwinError {
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The engine's thread could not be started.
    #[error("cannot start the engine thread: {source}")]
    EngineThread {
        /// The I/O error.
        source: std::io::Error,
    },
}

/// Builds the shared state and spawns the engine task (needs a tokio
/// runtime). For wrapping [`routes`] in another layer; [`start`] does this
/// with the engine on its own thread.
pub fn build_state(opts: TwinOptions) -> (Arc<TwinState>, tokio::task::JoinHandle<()>) {
    build_state_shared(opts, None)
}

/// [`build_state`] for one replica of a fleet: request ids are drawn from
/// `ids` when given (shared by the replicas).
pub fn build_state_shared(
    opts: TwinOptions,
    ids: Option<Arc<AtomicU64>>,
) -> (Arc<TwinState>, tokio::task::JoinHandle<()>) {
    assemble(opts, ids, |engine, clock, stats, lateness| {
        Ok::<_, std::convert::Infallible>(runner::spawn_engine_timed(
            engine, clock, stats, lateness,
        ))
    })
    .unwrap_or_else(|never| match never {})
}

type Spawned<R> = (tokio::sync::mpsc::UnboundedSender<runner::EngineCmd>, R);

/// The state around an engine started by `spawn`.
fn assemble<R, E>(
    opts: TwinOptions,
    ids: Option<Arc<AtomicU64>>,
    spawn: impl FnOnce(
        Engine,
        Clock,
        runner::SharedStats,
        runner::SharedLateness,
    ) -> Result<Spawned<R>, E>,
) -> Result<(Arc<TwinState>, R), E> {
    let mut engine = Engine::new(EngineConfig::from_profile(&opts.profile));
    if opts.ttft_log {
        engine.keep_ttft_log();
    }
    let stats = Arc::new(Mutex::new(engine.stats().clone()));
    let lateness = runner::SharedLateness::default();
    let (tx, runner) = spawn(engine, opts.clock.clone(), stats.clone(), lateness.clone())?;
    let mut state = TwinState::new(
        Arc::new(opts.profile),
        opts.clock,
        opts.responder,
        opts.api_keys,
        opts.seed,
        tx,
        stats,
    )
    .with_step_lateness(lateness);
    if let Some(ids) = ids {
        state = state.with_shared_ids(ids);
    }
    state.faults = opts.faults;
    Ok((Arc::new(state), runner))
}

/// Binds `addr` (port 0: any free one); the listener and the address it got.
pub(crate) async fn bind(
    addr: SocketAddr,
) -> Result<(tokio::net::TcpListener, SocketAddr), TwinError> {
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| TwinError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| TwinError::Bind { addr, source })?;
    Ok((listener, bound))
}

/// Serves `app` on `listener` in a task, every connection with
/// `TCP_NODELAY`: each SSE chunk is a small write, and without it Nagle's
/// algorithm holds a chunk back until the client's delayed ACK (~40 ms),
/// which would show up as client-side latency the twin never modelled.
pub(crate) fn serve_no_delay(
    listener: tokio::net::TcpListener,
    app: axum::Router,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let listener = axum::serve::ListenerExt::tap_io(listener, |tcp| {
            let _ = tcp.set_nodelay(true);
        });
        let _ = axum::serve(listener, app).await;
    })
}

/// `http://ADDR/v1`: the OpenAI base URL of a server listening at `addr`
/// (the twin, a fleet, the firehose, a capture proxy).
pub fn base_url_at(addr: SocketAddr) -> String {
    format!("http://{addr}/v1")
}

/// `http://ADDR/metrics`: its Prometheus page.
pub fn metrics_url_at(addr: SocketAddr) -> String {
    format!("http://{addr}/metrics")
}

/// A running twin.
#[derive(Debug)]
pub struct TwinHandle {
    addr: SocketAddr,
    server: tokio::task::JoinHandle<()>,
    engine: runner::EngineThread,
    state: Arc<TwinState>,
}

impl TwinHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        base_url_at(self.addr)
    }

    /// `http://127.0.0.1:PORT/metrics`.
    pub fn metrics_url(&self) -> String {
        metrics_url_at(self.addr)
    }

    /// The shared state (engine statistics, profile).
    pub fn state(&self) -> &Arc<TwinState> {
        &self.state
    }

    /// Whether the engine thread runs at the raised priority it asks for
    /// ([`runner::ENGINE_NICENESS`]).
    pub fn engine_priority_raised(&self) -> bool {
        self.engine.priority_raised()
    }

    /// Stops serving: closes the listener and every connection, ends the engine.
    pub async fn shutdown(self) {
        self.server.abort();
        let _ = self.server.await;
        let engine = self.engine;
        let _ = tokio::task::spawn_blocking(move || engine.stop()).await;
    }
}

/// The state of one twin (or fleet replica) with its engine on a thread of
/// its own; request ids drawn from `ids` when given.
fn start_replica(
    opts: TwinOptions,
    ids: Option<Arc<AtomicU64>>,
) -> Result<(Arc<TwinState>, runner::EngineThread), TwinError> {
    assemble(opts, ids, |engine, clock, stats, lateness| {
        runner::spawn_engine_thread(engine, clock, stats, lateness)
    })
    .map_err(|source| TwinError::EngineThread { source })
}

/// Binds `addr` (use `127.0.0.1:0` in tests) and serves the twin.
pub async fn start(opts: TwinOptions, addr: SocketAddr) -> Result<TwinHandle, TwinError> {
    let (listener, bound) = crate::bind(addr).await?;
    let proxy = opts
        .proxy
        .clone()
        .map(|config| proxy::ProxyState::new(config, opts.clock.clone()));
    // The engine runs on its own thread: stream tasks never delay a step.
    let (state, engine) = start_replica(opts, None)?;
    let app = match &proxy {
        Some(p) => p.wrap(routes(state.clone())),
        None => routes(state.clone()),
    };
    let server = crate::serve_no_delay(listener, app);
    Ok(TwinHandle {
        addr: bound,
        server,
        engine,
        state,
    })
}

#[cfg(test)]
mod version_tests {
    #[test]
    fn the_series_is_the_version_without_its_patch() {
        assert_eq!(super::VLLM_VERSION, "0.30.0");
        assert_eq!(super::vllm_series(), "0.30");
    }
}
