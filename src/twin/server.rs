//! The HTTP side (axum): OpenAI-compatible endpoints with vLLM's shapes,
//! errors and extras, plus `/health`, `/version`, `/tokenize`, `/metrics`.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::Response;
use axum::routing::{get, post};
use axum::Router;
use serde_json::Value;
use tokio::sync::mpsc;

use super::answer::{AnswerRequest, Responder};
use super::chunks::{self, plan_pieces, ChunkHead};
use super::engine::EngineRequest;
use super::faults::{self, FaultPlan, Injection, StreamContext};
use super::generation::Generation;
use super::metrics::{self, MetricsContext};
use super::request_body::{completions_prompt, generation_body_from_value};
use super::runner::{AbortOnDrop, EngineCmd, SharedLateness, SharedStats, StepLateness};
use super::tokenizer;
use crate::clock::Clock;
use crate::profile::Profile;
use crate::target::Secret;

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
    next_id: AtomicU64,
    http: Mutex<BTreeMap<(String, String, String), u64>>,
    lateness: SharedLateness,
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
            next_id: AtomicU64::new(1),
            http: Mutex::new(BTreeMap::new()),
            lateness: SharedLateness::default(),
        }
    }

    /// Shares the engine task's step-lateness record (shown on `/metrics`).
    pub fn with_step_lateness(mut self, lateness: SharedLateness) -> Self {
        self.lateness = lateness;
        self
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
pub fn router(state: Arc<TwinState>) -> Router {
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
    let stats = st.stats.lock().map(|s| s.clone()).unwrap_or_default();
    let http = st.http.lock().map(|m| m.clone()).unwrap_or_default();
    let ctx = MetricsContext {
        profile: &st.profile,
        started_unix: st.started_unix,
        http_requests: &http,
    };
    let mut page = metrics::render(&stats, &ctx);
    page.push_str(&st.step_lateness().render());
    respond(
        StatusCode::OK,
        "text/plain; version=0.0.4; charset=utf-8",
        page,
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

fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
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

async fn serve_generation(
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
    let Admitted { generation, stream } = match admit(st, v, chat, session) {
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

/// Why the twin refused a generation request before it reached the engine:
/// the HTTP status and the fields of vLLM's error body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// HTTP status (400 bad request, 404 unknown model, 503 engine down).
    pub status: u16,
    /// vLLM's message (for a prompt that is too long: "This model's maximum
    /// context length is N tokens. However, ...").
    pub message: String,
    /// vLLM's error type (`BadRequestError`, ...).
    pub error_type: &'static str,
    /// The offending parameter, if vLLM names one.
    pub param: Option<&'static str>,
}

impl Refusal {
    /// vLLM's JSON error body.
    pub fn body(&self) -> String {
        chunks::error_body(&self.message, self.error_type, self.param, self.status)
    }
}

/// A generation request the twin accepted and queued in the engine.
#[derive(Debug)]
pub struct Admitted {
    /// The answer being generated: its pieces and the engine's events.
    pub generation: Generation,
    /// Whether the client asked for a stream (`"stream": true`).
    pub stream: bool,
}

/// The one path from a request body to a queued engine request, shared by
/// HTTP and the in-process transport: reads the body (chat `messages` +
/// `tools`, or a completions `prompt`), renders and tokenizes the prompt,
/// checks it against `max_model_len`, derives the answer seed (the twin's
/// seed, the client's session id such as OpenCode's `x-session-id`, the
/// request's `seed` and the prompt), plans the answer with the responder,
/// cuts it into pieces and queues the engine request. Authentication is the
/// caller's business. `session` is empty when the client sent none.
pub fn admit(st: &TwinState, v: Value, chat: bool, session: &str) -> Result<Admitted, Refusal> {
    // vLLM times a request from its receipt by the API server.
    let arrived = st.clock.now();
    let server = &st.profile.server;
    let parsed =
        generation_body_from_value(v, chat, &server.served_model_name, server.max_model_len)
            .map_err(|e| Refusal {
                status: e.status,
                message: e.message,
                error_type: e.kind,
                param: e.param,
            })?;
    let (messages, tools, p) = (parsed.messages(), parsed.tools(), parsed.params);
    let prompt_text = &parsed.prompt_text;
    let ids = parsed.prompt_ids.clone();
    let seed = tokenizer::request_seed(
        st.seed ^ tokenizer::text_hash(session),
        parsed.seed(),
        prompt_text,
    );
    let answer = st.responder.plan(&AnswerRequest {
        messages,
        tools,
        prompt: if chat { "" } else { prompt_text },
        max_tokens: p.max_tokens,
        ignore_eos: p.ignore_eos,
        seed,
    });
    let n = st.next_id.fetch_add(1, Ordering::Relaxed);
    let hex = format!("{:016x}", mix(st.seed, n));
    let pieces = plan_pieces(&answer, |i| {
        format!("chatcmpl-tool-{:016x}", mix(seed, i as u64 + 1))
    });
    let prompt_tokens = ids.len() as u64;
    let request = EngineRequest {
        id: n,
        prompt: ids,
        max_tokens: p.max_tokens,
        min_tokens: p.min_tokens,
        ignore_eos: p.ignore_eos,
        natural_len: u32::try_from(pieces.len()).unwrap_or(u32::MAX),
        // What the next prompt will hold of this answer (see render_answer).
        answer_ids: tokenizer::encode(&tokenizer::render_answer(&answer)),
    };
    let (events_tx, events) = mpsc::unbounded_channel();
    let cmd = EngineCmd::Add {
        request,
        arrived,
        events: events_tx,
    };
    if st.engine.send(cmd).is_err() {
        return Err(Refusal {
            status: 503,
            message: "the engine is not running".into(),
            error_type: "ServiceUnavailableError",
            param: None,
        });
    }
    let id = if chat {
        format!("chatcmpl-{hex}")
    } else {
        format!("cmpl-{hex}")
    };
    let generation = Generation {
        head: ChunkHead {
            id,
            created: st.clock.utc_now().timestamp(),
            model: st.profile.server.served_model_name.clone(),
        },
        has_tools: answer.has_tool_calls(),
        pieces,
        prompt_tokens,
        chat,
        include_usage: p.include_usage,
        continuous_usage: p.continuous_usage,
        fingerprint: format!(
            "vllm-{}-{:08x}",
            super::VLLM_VERSION,
            (st.seed as u32) ^ 0x3f9a_1c2e
        ),
        events,
        guard: AbortOnDrop::new(n, st.engine.clone()),
        produced: 0,
    };
    Ok(Admitted {
        generation,
        stream: p.stream,
    })
}
