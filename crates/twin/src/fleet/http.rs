//! The HTTP fleet: replicas behind one OpenAI endpoint. Generation requests
//! go to the replica the router picks (session key: `x-session-id`, else the
//! bearer key); `/metrics` shows every replica (`engine="N"`),
//! `/metrics/replica/N` one; `/v1/models`, `/health`, `/version` and
//! `/tokenize` are answered by replica 0 (every replica would say the same).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use futures::StreamExt;

use super::pages::{fleet_page, replica_page};
use super::{FleetCore, FleetSpec};
use crate::request_body::parse_generation_body;
use crate::runner::EngineThread;
use crate::server::{serve_generation, TwinState};
use crate::{proxy, routes, start_replica, TwinError, TwinOptions};

/// A running HTTP fleet.
#[derive(Debug)]
pub struct FleetHandle {
    addr: SocketAddr,
    server: tokio::task::JoinHandle<()>,
    engines: Vec<EngineThread>,
    shared: Arc<Shared>,
}

#[derive(Debug)]
struct Shared {
    core: Arc<FleetCore>,
    replicas: Vec<Arc<TwinState>>,
}

impl FleetHandle {
    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:PORT/v1`.
    pub fn base_url(&self) -> String {
        crate::base_url_at(self.addr)
    }

    /// `http://127.0.0.1:PORT/metrics` (every replica).
    pub fn metrics_url(&self) -> String {
        crate::metrics_url_at(self.addr)
    }

    /// `http://127.0.0.1:PORT/metrics/replica/<index>`.
    pub fn replica_metrics_url(&self, index: usize) -> String {
        format!("{}/replica/{index}", self.metrics_url())
    }

    /// Each replica's state (engine statistics, step lateness).
    pub fn replicas(&self) -> &[Arc<TwinState>] {
        &self.shared.replicas
    }

    /// The router and the loads.
    pub fn core(&self) -> &Arc<FleetCore> {
        &self.shared.core
    }

    /// Whether every replica's engine thread runs at the raised priority it
    /// asks for ([`crate::runner::ENGINE_NICENESS`]).
    pub fn engine_priority_raised(&self) -> bool {
        self.engines.iter().all(|e| e.priority_raised())
    }

    /// Stops serving: closes the listener and every connection, ends the engines.
    pub async fn shutdown(self) {
        self.server.abort();
        let _ = self.server.await;
        let engines = self.engines;
        let _ =
            tokio::task::spawn_blocking(move || engines.into_iter().for_each(|e| e.stop())).await;
    }
}

/// Binds `addr` and serves a fleet of `spec.replicas` twins of `opts`
/// (same profile, clock, responder, keys, seed and faults each; the proxy,
/// if any, in front of the whole fleet), each engine on its own thread.
pub async fn start_fleet(
    opts: TwinOptions,
    spec: FleetSpec,
    addr: SocketAddr,
) -> Result<FleetHandle, TwinError> {
    let (listener, bound) = crate::bind(addr).await?;
    let proxy = opts
        .proxy
        .clone()
        .map(|config| proxy::ProxyState::new(config, opts.clock.clone()));
    let core = Arc::new(FleetCore::new(spec, &opts.profile, opts.seed));
    let mut replicas = Vec::new();
    let mut engines = Vec::new();
    for _ in 0..spec.replicas.max(1) {
        let (state, engine) = start_replica(opts.clone(), Some(core.ids.clone()))?;
        replicas.push(state);
        engines.push(engine);
    }
    let shared = Arc::new(Shared { core, replicas });
    let app = fleet_router(shared.clone());
    let app = match &proxy {
        Some(p) => p.wrap(app),
        None => app,
    };
    let server = crate::serve_no_delay(listener, app);
    Ok(FleetHandle {
        addr: bound,
        server,
        engines,
        shared,
    })
}

fn fleet_router(shared: Arc<Shared>) -> axum::Router {
    let first = routes(shared.replicas[0].clone());
    axum::Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/metrics", get(metrics))
        .route("/metrics/replica/{n}", get(one_replica))
        .with_state(shared)
        .fallback_service(first)
}

fn text(status: StatusCode, body: String) -> Response {
    Response::builder()
        .status(status)
        .header(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )
        .body(Body::from(body))
        .unwrap_or_default()
}

async fn metrics(State(sh): State<Arc<Shared>>) -> Response {
    text(StatusCode::OK, fleet_page(&sh.replicas))
}

async fn one_replica(State(sh): State<Arc<Shared>>, Path(n): Path<String>) -> Response {
    match n.parse().ok().and_then(|i| replica_page(&sh.replicas, i)) {
        Some(page) => text(StatusCode::OK, page),
        None => text(
            StatusCode::NOT_FOUND,
            format!(
                "no replica {n:?}: this fleet has replicas 0 to {}\n",
                sh.replicas.len() - 1
            ),
        ),
    }
}

async fn chat(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    route(sh, headers, body, true).await
}

async fn completions(State(sh): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> Response {
    route(sh, headers, body, false).await
}

/// Picks the replica, serves the request there and keeps it counted in
/// flight until its body has been sent (or the client went away).
async fn route(sh: Arc<Shared>, headers: HeaderMap, body: Bytes, chat: bool) -> Response {
    let value = |name: &str| headers.get(name).and_then(|h| h.to_str().ok());
    let session = value("x-session-id");
    let key = value(header::AUTHORIZATION.as_str()).and_then(|v| v.strip_prefix("Bearer "));
    let prompt = sh.core.wants_prompt().then(|| {
        let s = &sh.replicas[0].profile.server;
        parse_generation_body(&body, chat, &s.served_model_name, s.max_model_len)
            .map(|b| b.prompt_ids)
            .unwrap_or_default()
    });
    let guard = sh.core.route(session, key, prompt.as_deref());
    let st = sh.replicas[guard.replica()].clone();
    let resp = serve_generation(st, headers, body, chat).await;
    let (parts, body) = resp.into_parts();
    let stream = body.into_data_stream().map(move |chunk| {
        let _held = &guard;
        chunk
    });
    Response::from_parts(parts, Body::from_stream(stream))
}
