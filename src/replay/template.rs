//! What a server's chat template adds around the messages of a prompt,
//! measured by probe calls before a replay, so every replayed prompt
//! reaches the server at its recorded size.

use codendum_core::openai::{CallRequest, Endpoint, Transport};

/// Tokens a server's chat template adds around the messages of a prompt,
/// measured by [`template_tokens`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Template {
    /// Around a one-message prompt (its role header, end marker and the
    /// generation prompt), tokens.
    pub message_tokens: u64,
    /// Around a turn added to a conversation: the end of the `assistant`
    /// answer and the new `user` message's own, tokens.
    pub turn_tokens: u64,
}

/// The prompt tokens the server counts for `messages` (or, for
/// completions, the last message's text), by a call of one output token.
async fn probe_prompt(
    transport: &dyn Transport,
    endpoint: Endpoint,
    model: &str,
    messages: serde_json::Value,
) -> Option<u64> {
    let mut body = crate::bench::prompt::request_body(endpoint, model, "hello", 1);
    if endpoint == Endpoint::Chat {
        body["messages"] = messages;
    }
    transport
        .call(CallRequest {
            endpoint,
            body: body.into(),
            api_key: None,
            headers: Vec::new(),
            record_gaps: false,
            first_token: None,
        })
        .await
        .input_tokens()
}

/// The tokens the server's chat template adds ([`Template`]), by probe
/// calls of one output token: a one-word user message (its prompt's count
/// less the word) and, for chat, that message answered by one word and
/// followed by another one-word message (what the second turn adds less its
/// two words). Unanswered probes count 0.
pub async fn template_tokens(
    transport: &dyn Transport,
    endpoint: Endpoint,
    model: &str,
) -> Template {
    let user = serde_json::json!({"role": "user", "content": "hello"});
    let one = probe_prompt(transport, endpoint, model, serde_json::json!([user])).await;
    let message_tokens = one.map_or(0, |n| n.saturating_sub(1));
    let turn_tokens = match (endpoint, one) {
        (Endpoint::Chat, Some(one)) => {
            let answer = serde_json::json!({"role": "assistant", "content": "hello"});
            let conversation = serde_json::json!([user, answer, user]);
            probe_prompt(transport, endpoint, model, conversation)
                .await
                .map_or(message_tokens, |two| two.saturating_sub(one + 2))
        }
        _ => message_tokens,
    };
    Template {
        message_tokens,
        turn_tokens,
    }
}
