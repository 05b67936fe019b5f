//! One model call the way OpenCode makes it: the request body, the
//! session headers, and the retries (2 s doubling plus up to 25 % jitter,
//! capped at 30 s, at most 5; the server's `retry-after` wins).

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::config::ClassroomConfig;
use super::prompt;
use super::retry::retry_delay;
use super::session::Shared;
use codendum_core::access::Secret;
use codendum_core::openai::{CallOutcome, CallRequest, Endpoint};
use codendum_core::results::classroom_records::{CallKind, CallRecord};

/// `max_tokens` of a title request.
pub const TITLE_MAX_TOKENS: u64 = 1_024;

/// A chat body as OpenCode sends it: model, max_tokens, the system message
/// then `messages`, streaming with usage; with tools, `tool_choice: "auto"`.
pub(crate) fn body(
    config: &ClassroomConfig,
    system: &str,
    messages: &[Value],
    tools: Option<&[Value]>,
    max_tokens: u64,
) -> Value {
    let mut all = Vec::with_capacity(messages.len() + 1);
    all.push(json!({"role": "system", "content": system}));
    all.extend(messages.iter().cloned());
    let mut b = json!({
        "model": config.model,
        "max_tokens": max_tokens,
        "messages": all,
        "stream": true,
        "stream_options": {"include_usage": true},
    });
    if let Some(t) = tools {
        b["tools"] = Value::Array(t.to_vec());
        b["tool_choice"] = json!("auto");
    }
    b
}

/// Who is calling: the student, session and coding request of a call.
pub(crate) struct Caller<'a> {
    pub user: usize,
    pub key: Option<&'a Secret>,
    pub session: &'a str,
    pub parent: Option<&'a str>,
    pub task: usize,
}

/// Sends one call with OpenCode's retries and records it.
pub(crate) async fn call_model(
    shared: &Shared,
    who: &Caller<'_>,
    kind: CallKind,
    body: Value,
    jitter_seed: u64,
) -> (CallOutcome, CallRecord) {
    let mut rng = ChaCha8Rng::seed_from_u64(jitter_seed);
    let mut headers = vec![("x-session-id".to_string(), who.session.to_string())];
    if let Some(p) = who.parent {
        headers.push(("x-parent-session-id".to_string(), p.to_string()));
    }
    let request = CallRequest {
        endpoint: Endpoint::Chat,
        body,
        api_key: who.key.cloned(),
        headers,
        record_gaps: false,
    };
    let started = shared.now();
    let open = shared.status.call_opened(started);
    let mut retries = 0u32;
    let mut retried_kinds = Vec::new();
    let outcome = loop {
        shared.status.attempt(true);
        let outcome = shared.transport.call(request.clone()).await;
        shared.status.attempt(false);
        match &outcome.error {
            Some(e) if shared.sends_again(e.kind, retries) => {
                let delay = e
                    .retry_after
                    .unwrap_or_else(|| retry_delay(retries, &mut rng));
                retries += 1;
                retried_kinds.push(e.kind);
                shared.status.retried();
                shared.clock.sleep(delay).await;
            }
            _ => break outcome,
        }
    };
    let (output_tokens, tokens_counted_by) = outcome.output_tokens();
    let record = CallRecord {
        user: who.user,
        session: who.session.to_string(),
        task: who.task,
        kind,
        started_at: started,
        prompt_tokens: outcome.input_tokens(),
        output_tokens,
        tokens_counted_by,
        ttft_s: outcome.ttft,
        e2e_s: outcome.e2e,
        wait_s: (shared.now() - started).max(0.0),
        retries,
        retried_kinds,
        error_kind: outcome.error.as_ref().map(|e| e.kind),
        tool_calls: outcome.message.tool_calls.len(),
    };
    shared.status.call_recorded(&record);
    shared.record_request(&record);
    shared.status.closed(open);
    (outcome, record)
}

pub(crate) fn title_body(config: &ClassroomConfig, first_message: &str) -> Value {
    let user = format!(
        "Generate a title for this conversation:\n\n<message>\n{first_message}\n</message>"
    );
    body(
        config,
        prompt::title_system(),
        &[json!({"role": "user", "content": user})],
        None,
        TITLE_MAX_TOKENS,
    )
}
