//! The HTTP side (axum): OpenAI-compatible endpoints with vLLM's shapes,
//! errors and extras, plus `/health`, `/version`, `/tokenize`, `/metrics`.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;
use tokio::sync::mpsc;

use super::answer::Responder;
use super::chunks;
use super::faults::{self, FaultPlan, Injection, StreamContext};
use super::metrics::{self, MetricsContext};
use super::request_body::completions_prompt;
use super::runner::{EngineCmd, SharedLateness, SharedStats, StepLateness};
use super::tokenizer;
use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
mod admission;
pub use admission::{admit, Admitted, Refusal};

/// State shared by all handlers.
pub struct TwinState {
    /// The server profile.
    pub profile: Arc<Profile>,
    /// The clock (timestamps, `created`).
    pub clock: Clock,
    /// Decides what answers say.
    pub responder: Arc<dyn Responder>,
    /// Accepted API keys; empty: no authentication.
    pub api_keys: Vec<Secret>,
    /// Seed of ids and answers.
    pub seed: u64,
    /// Commands to the engine task.
    pub engine: mpsc::UnboundedSender<EngineCmd>,
    /// Latest engine statistics.
    pub stats: SharedStats,
    /// Unix seconds at start.
    pub started_unix: f64,
    /// Injected faults (`--faults`); `None`: none.
    pub faults: Option<Arc<FaultPlan>>,
    next_id: Arc<AtomicU64>,
    http: Mutex<BTreeMap<(String, String, String), u64>>,
    lateness: SharedLateness,
    prompts: Mutex<crate::tokenizer::PromptCache>,
    tools: crate::tool_sets::ToolSets<String>,
}

impl std::fmt::Debug for TwinState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TwinState")
            .field("profile", &self.profile.name)
            .field("api_keys", &self.api_keys.len())
            .finish_non_exhaustive()
    }
}

impl TwinState {
    /// Builds the state around a running engine task's command channel.
    pub fn new(
        profile: Arc<Profile>,
        clock: Clock,
        responder: Arc<dyn Responder>,
        api_keys: Vec<Secret>,
        seed: u64,
        engine: mpsc::UnboundedSender<EngineCmd>,
        stats: SharedStats,
    ) -> Self {
        let started_unix = clock.utc_now().timestamp_micros() as f64 / 1e6;
        TwinState {
            profile,
            clock,
            responder,
            api_keys,
            seed,
            engine,
            stats,
            started_unix,
            faults: None,
            next_id: Arc::new(AtomicU64::new(1)),
            http: Mutex::new(BTreeMap::new()),
            lateness: SharedLateness::default(),
            prompts: Mutex::new(crate::tokenizer::PromptCache::default()),
            tools: crate::tool_sets::ToolSets::default(),
        }
    }

    /// The tools block of `tools` ([`crate::tokenizer::render_tools`]), from
    /// the sets rendered before when it is one of them (an agent and its
    /// subagents each send one set at every step; the last
    /// [`crate::tool_sets::TOOL_SETS`] are kept).
    pub fn render_tools(&self, tools: &[serde_json::Value]) -> String {
        if tools.is_empty() {
            return String::new();
        }
        self.tools
            .get_or_derive(tools, crate::tokenizer::render_tools)
    }

    /// The token ids and hash of a prompt `session` sent, encoded from
    /// where it differs from that session's last prompt
    /// ([`crate::tokenizer::PromptCache`]); the same as
    /// [`crate::tokenizer::encode`] and [`crate::tokenizer::text_hash`].
    pub fn encode_prompt(&self, session: &str, text: &str) -> crate::tokenizer::Encoded {
        match self.prompts.lock() {
            Ok(mut cache) => cache.encode(session, text),
            Err(_) => crate::tokenizer::Encoded {
                ids: crate::tokenizer::encode(text),
                hash: crate::tokenizer::text_hash(text),
            },
        }
    }

    /// Shares the engine task's step-lateness record (shown on `/metrics`).
    pub fn with_step_lateness(mut self, lateness: SharedLateness) -> Self {
        self.lateness = lateness;
        self
    }

    /// Draws request ids from `ids` (shared by the replicas of a fleet, so
    /// that chunk ids stay unique across it).
    pub fn with_shared_ids(mut self, ids: Arc<AtomicU64>) -> Self {
        self.next_id = ids;
        self
    }

    /// HTTP requests answered so far by (handler, method, status class).
    pub fn http_counts(&self) -> BTreeMap<(String, String, String), u64> {
        self.http.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// The `/metrics` page as it reads now: the engine's figures after its
    /// latest step, the HTTP counters and the step lateness. The same text
    /// the HTTP route serves, for readers in the same process.
    pub fn metrics_page(&self) -> String {
        let stats = self.stats.lock().map(|s| s.clone()).unwrap_or_default();
        let http = self.http.lock().map(|m| m.clone()).unwrap_or_default();
        let ctx = MetricsContext {
            profile: &self.profile,
            started_unix: self.started_unix,
            http_requests: &http,
        };
        let mut page = metrics::render(&stats, &ctx);
        page.push_str(&self.step_lateness().render());
        page
    }

    /// A copy of the engine task's step-lateness record so far.
    pub fn step_lateness(&self) -> StepLateness {
        self.lateness.lock().map(|l| l.clone()).unwrap_or_default()
    }

    fn count(&self, handler: &str, method: &str, status: StatusCode) {
        let class = format!("{}xx", status.as_u16() / 100);
        if let Ok(mut m) = self.http.lock() {
            *m.entry((handler.into(), method.into(), class)).or_insert(0) += 1;
        }
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        if self.api_keys.is_empty() {
            return true;
        }
        let given = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        self.api_keys.iter().any(|k| k.expose() == given)
    }
}

/// The twin's routes over a shared state (a proxy layer can wrap this).
pub fn routes(state: Arc<TwinState>) -> Router {
    Router::new()
        .route("/v1/chat/completions", post(chat))
        .route("/v1/completions", post(completions))
        .route("/v1/models", get(models))
        .route("/health", get(health))
        .route("/version", get(version))
        .route("/tokenize", post(tokenize))
        .route("/metrics", get(metrics_page))
        .fallback(not_found)
        .with_state(state)
}

fn respond(status: StatusCode, content_type: &str, body: impl Into<Body>) -> Response {
    Response::builder()
        .status(status)
        .header(header::CONTENT_TYPE, content_type)
        .body(body.into())
        .unwrap_or_default()
}

fn json(status: StatusCode, body: String) -> Response {
    respond(status, "application/json", body)
}

fn bad_request(message: &str, param: Option<&str>) -> Response {
    json(
        StatusCode::BAD_REQUEST,
        chunks::error_body(message, "BadRequestError", param, 400),
    )
}

fn unauthorized() -> Response {
    json(
        StatusCode::UNAUTHORIZED,
        "{\"error\":\"Unauthorized\"}".into(),
    )
}

async fn not_found() -> Response {
    json(StatusCode::NOT_FOUND, "{\"detail\":\"Not Found\"}".into())
}

async fn health() -> Response {
    respond(StatusCode::OK, "application/json", Body::empty())
}

async fn version() -> Response {
    json(
        StatusCode::OK,
        format!("{{\"version\":\"{}\"}}", super::VLLM_VERSION),
    )
}

async fn models(State(st): State<Arc<TwinState>>, headers: HeaderMap) -> Response {
    if !st.authorized(&headers) {
        st.count("/v1/models", "GET", StatusCode::UNAUTHORIZED);
        return unauthorized();
    }
    st.count("/v1/models", "GET", StatusCode::OK);
    let s = &st.profile.server;
    let created = st.started_unix as i64;
    let body = serde_json::json!({
        "object": "list",
        "data": [{
            "id": s.served_model_name, "object": "model", "created": created,
            "owned_by": "vllm", "root": s.model, "parent": null,
            "max_model_len": s.max_model_len,
            "permission": [{
                "id": format!("modelperm-{:016x}", st.seed ^ 0x5eed), "object": "model_permission",
                "created": created, "allow_create_engine": false, "allow_sampling": true,
                "allow_logprobs": true, "allow_search_indices": false, "allow_view": true,
                "allow_fine_tuning": false, "organization": "*", "group": null, "is_blocking": false
            }]
        }]
    });
    json(StatusCode::OK, body.to_string())
}

async fn metrics_page(State(st): State<Arc<TwinState>>) -> Response {
    respond(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        st.metrics_page(),
    )
}

async fn tokenize(State(st): State<Arc<TwinState>>, body: Bytes) -> Response {
    let Ok(v) = serde_json::from_slice::<Value>(&body) else {
        return bad_request("the body is not valid JSON", None);
    };
    let text = if let Some(msgs) = v.get("messages").and_then(Value::as_array) {
        let tools = v.get("tools").and_then(Value::as_array).cloned();
        tokenizer::render_chat(msgs, tools.as_deref().unwrap_or(&[]))
    } else if let Some(p) = completions_prompt(&v) {
        p
    } else {
        return bad_request("prompt or messages is required", Some("prompt"));
    };
    st.count("/tokenize", "POST", StatusCode::OK);
    let ids = tokenizer::encode(&text);
    let body = serde_json::json!({
        "count": ids.len(), "max_model_len": st.profile.server.max_model_len,
        "tokens": ids, "token_strs": null
    });
    json(StatusCode::OK, body.to_string())
}

async fn chat(State(st): State<Arc<TwinState>>, headers: HeaderMap, body: Bytes) -> Response {
    serve_generation(st, headers, body, true).await
}

async fn completions(
    State(st): State<Arc<TwinState>>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    serve_generation(st, headers, body, false).await
}

/// One generation request against `st` (faults, admission, the stream or
/// the collected answer), counted in its HTTP counters; the fleet's routes
/// call it on the chosen replica.
pub(crate) async fn serve_generation(
    st: Arc<TwinState>,
    headers: HeaderMap,
    body: Bytes,
    chat: bool,
) -> Response {
    let handler = if chat {
        "/v1/chat/completions"
    } else {
        "/v1/completions"
    };
    let injection = st.faults.as_ref().and_then(|f| f.next_request());
    let resp = match faults::before_headers(injection.as_ref(), &st.clock).await {
        Some(r) => r,
        None => generate(&st, &headers, &body, chat, injection.as_ref()).await,
    };
    st.count(handler, "POST", resp.status());
    resp
}

async fn generate(
    st: &Arc<TwinState>,
    headers: &HeaderMap,
    body: &Bytes,
    chat: bool,
    injection: Option<&Injection>,
) -> Response {
    if !st.authorized(headers) {
        return unauthorized();
    }
    let v: Value = match serde_json::from_slice(body) {
        Ok(v) => v,
        Err(e) => return bad_request(&format!("the body is not valid JSON: {e}"), None),
    };
    let session = headers
        .get("x-session-id")
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    let Admitted { generation, stream } = match admit(st, Arc::new(v), chat, session) {
        Ok(a) => a,
        Err(r) => {
            let status = StatusCode::from_u16(r.status).unwrap_or(StatusCode::BAD_REQUEST);
            return json(status, r.body());
        }
    };
    if stream {
        let body = match injection {
            Some(i) => {
                let ctx = StreamContext {
                    head: generation.head.clone(),
                    chat,
                    clock: st.clock.clone(),
                };
                Body::from_stream(faults::inject_stream(generation.into_sse(), i, ctx))
            }
            None => Body::from_stream(generation.into_sse()),
        };
        return respond(StatusCode::OK, "text/event-stream; charset=utf-8", body);
    }
    match generation.collect().await {
        Ok(body) => json(StatusCode::OK, body),
        Err(msg) => json(
            StatusCode::INTERNAL_SERVER_ERROR,
            chunks::error_body(&msg, "InternalServerError", None, 500),
        ),
    }
}
