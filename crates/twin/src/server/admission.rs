//! Admission: the one path from a generation request body to a queued engine
//! request, shared by HTTP and the in-process transport (see [`admit`]).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::mpsc;

use super::TwinState;
use crate::answer::AnswerRequest;
use crate::chunks::{self, plan_pieces, ChunkHead};
use crate::engine::EngineRequest;
use crate::generation::Generation;
use crate::request_body::{generation_body_encoded, BodyError, Prompts};
use crate::runner::{AbortOnDrop, EngineCmd, EngineEvent};
use crate::tokenizer;
use crate::VLLM_VERSION;

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
pub fn admit(
    st: &TwinState,
    v: Arc<Value>,
    chat: bool,
    session: &str,
) -> Result<Admitted, Refusal> {
    // vLLM times a request from its receipt by the API server.
    let arrived = st.clock.now();
    let server = &st.profile.server;
    // A session's prompts grow step by step: the cache encodes only what
    // changed since its last one.
    let mut prompts = Prompts {
        tools: &mut |tools| st.render_tools(tools),
        encode: &mut |text| st.encode_prompt(session, text),
    };
    let mut parsed = generation_body_encoded(
        v,
        chat,
        &server.served_model_name,
        server.max_model_len,
        &mut prompts,
    )
    .map_err(body_refusal)?;
    // The engine takes the ids; nothing below reads them from the body.
    let ids = std::mem::take(&mut parsed.prompt_ids);
    let (messages, tools, p) = (parsed.messages(), parsed.tools(), parsed.params);
    let prompt_text = &parsed.prompt_text;
    let seed = tokenizer::request_seed_hashed(
        st.seed ^ tokenizer::text_hash(session),
        parsed.seed(),
        || parsed.prompt_hash,
    );
    let answer = st.responder.plan(&AnswerRequest {
        messages,
        tools,
        prompt: if chat { "" } else { prompt_text },
        max_tokens: p.max_tokens,
        ignore_eos: p.ignore_eos,
        seed,
        session,
    });
    let n = st.next_id.fetch_add(1, Ordering::Relaxed);
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
    let events = enqueue(st, request, arrived)?;
    let generation = Generation {
        head: chunk_head(st, n, chat),
        has_tools: answer.has_tool_calls(),
        pieces,
        prompt_tokens,
        chat,
        include_usage: p.include_usage,
        continuous_usage: p.continuous_usage,
        fingerprint: fingerprint(st.seed),
        events,
        guard: AbortOnDrop::new(n, st.engine.clone()),
        produced: 0,
    };
    Ok(Admitted {
        generation,
        stream: p.stream,
    })
}

/// The refusal for a body that does not parse or does not fit.
fn body_refusal(e: BodyError) -> Refusal {
    Refusal {
        status: e.status,
        message: e.message,
        error_type: e.kind,
        param: e.param,
    }
}

/// Queues `request` in the engine task; its token events come back on the
/// returned channel. A 503 refusal when the engine task is gone.
fn enqueue(
    st: &TwinState,
    request: EngineRequest,
    arrived: Duration,
) -> Result<mpsc::UnboundedReceiver<EngineEvent>, Refusal> {
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
    Ok(events)
}

/// The id, `created` and model every chunk of request `n` carries.
fn chunk_head(st: &TwinState, n: u64, chat: bool) -> ChunkHead {
    let hex = format!("{:016x}", mix(st.seed, n));
    let id = if chat {
        format!("chatcmpl-{hex}")
    } else {
        format!("cmpl-{hex}")
    };
    ChunkHead {
        id,
        created: st.clock.utc_now().timestamp(),
        model: st.profile.server.served_model_name.clone(),
    }
}

/// The `system_fingerprint` of the twin's answers.
fn fingerprint(seed: u64) -> String {
    format!("vllm-{}-{:08x}", VLLM_VERSION, (seed as u32) ^ 0x3f9a_1c2e)
}

/// SplitMix64-style mixing of two words (ids of requests and tool calls).
fn mix(a: u64, b: u64) -> u64 {
    let mut z = a ^ b.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}
