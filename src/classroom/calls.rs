//! One model call the way OpenCode makes it: the request body, the
//! session headers, and the retries (2 s doubling plus up to 25 % jitter,
//! capped at 30 s, at most 5; the server's `retry-after` wins).

use std::sync::Arc;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::config::ClassroomConfig;
use super::prompt;
use super::retry::retry_delay;
use super::session::{Conversation, Shared};
use codendum_core::access::Secret;
use codendum_core::openai::{CallOutcome, CallRequest, Endpoint, FirstToken};
use codendum_core::results::classroom_records::{CallKind, CallRecord};

/// `max_tokens` of a title request.
pub const TITLE_MAX_TOKENS: u64 = 1_024;

/// A chat body as OpenCode sends it: model, max_tokens, the system message
/// then `messages`, streaming with usage; with tools, `tool_choice: "auto"`.
/// It takes its parts whole: a step lends its conversation's parts to the
/// body and takes them back after the call ([`lend_conversation`]), so a
/// long conversation is not copied at every step.
pub(crate) fn body(
    config: &ClassroomConfig,
    system: String,
    messages: Vec<Value>,
    tools: Option<Vec<Value>>,
    max_tokens: u64,
) -> Value {
    let mut all = Vec::with_capacity(messages.len() + 1);
    let mut first = serde_json::Map::new();
    first.insert("role".into(), "system".into());
    first.insert("content".into(), Value::String(system));
    all.push(Value::Object(first));
    all.extend(messages);
    // Built field by field: `json!` would serialize (copy) the messages.
    let mut b = serde_json::Map::new();
    b.insert("model".into(), Value::String(config.model.clone()));
    b.insert("max_tokens".into(), max_tokens.into());
    b.insert("messages".into(), Value::Array(all));
    b.insert("stream".into(), true.into());
    b.insert("stream_options".into(), json!({"include_usage": true}));
    if let Some(t) = tools {
        b.insert("tools".into(), Value::Array(t));
        b.insert("tool_choice".into(), "auto".into());
    }
    Value::Object(b)
}

/// A step's body made of `conv`'s own system prompt, messages and tools,
/// which `conv` lends (left empty) until [`take_back`] returns them.
pub(crate) fn lend_conversation(config: &ClassroomConfig, conv: &mut Conversation) -> Arc<Value> {
    Arc::new(body(
        config,
        std::mem::take(&mut conv.system),
        std::mem::take(&mut conv.messages),
        Some(std::mem::take(&mut conv.tools)),
        config.output_limit,
    ))
}

/// Gives `conv` back the parts [`lend_conversation`] lent to `body`, once
/// the call is over (copied from the body if a transport still holds it).
pub(crate) fn take_back(conv: &mut Conversation, body: Arc<Value>) {
    let mut b = Arc::try_unwrap(body).unwrap_or_else(|held| (*held).clone());
    if let Value::Array(mut all) = b["messages"].take() {
        if !all.is_empty() {
            let mut system = all.remove(0);
            if let Value::String(text) = system["content"].take() {
                conv.system = text;
            }
        }
        conv.messages = all;
    }
    if let Value::Array(tools) = b["tools"].take() {
        conv.tools = tools;
    }
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
    body: Arc<Value>,
    jitter_seed: u64,
) -> (CallOutcome, CallRecord) {
    let mut rng = ChaCha8Rng::seed_from_u64(jitter_seed);
    let mut headers = vec![("x-session-id".to_string(), who.session.to_string())];
    if let Some(p) = who.parent {
        headers.push(("x-parent-session-id".to_string(), p.to_string()));
    }
    let first_token = FirstToken::default();
    let request = CallRequest {
        endpoint: Endpoint::Chat,
        body,
        api_key: who.key.cloned(),
        headers,
        record_gaps: false,
        first_token: Some(first_token.clone()),
    };
    let started = shared.now();
    let open = shared.status.call_opened(started, first_token.clone());
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
                // The attempt sent again waits for a first token of its own.
                first_token.clear();
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
        prompt::title_system().to_string(),
        vec![json!({"role": "user", "content": user})],
        None,
        TITLE_MAX_TOKENS,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lent_conversation_is_sent_whole_and_given_back_unchanged() {
        let config = ClassroomConfig::new("m", None);
        let mut conv = Conversation::main(&config, "ses_1".into());
        conv.messages = vec![
            json!({"role": "user", "content": "fix the build"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1"}]}),
        ];
        let before = (
            conv.system.clone(),
            conv.messages.clone(),
            conv.tools.clone(),
        );
        let lent = lend_conversation(&config, &mut conv);
        assert!(conv.messages.is_empty() && conv.system.is_empty());
        let sent = lent["messages"].as_array().expect("messages");
        assert_eq!(sent.len(), 3);
        assert_eq!(sent[0], json!({"role": "system", "content": before.0}));
        assert_eq!(&sent[1..], before.1.as_slice());
        assert_eq!(lent["tools"].as_array(), Some(&before.2));
        assert_eq!(lent["model"], "m");
        // A transport that still holds the body: the parts come back copied.
        let held = Arc::clone(&lent);
        take_back(&mut conv, lent);
        assert_eq!((conv.system, conv.messages, conv.tools), before);
        assert_eq!(Arc::strong_count(&held), 1);
    }
}
