//! Context compaction as OpenCode does it: when a step's prompt + output
//! tokens reach `context limit − min(output limit, 32000)`, or when the
//! server rejects a prompt as too long, the conversation is summarised and
//! restarts from the summary and its most recent turns.

use serde_json::{json, Value};

use codendum_core::openai::{CallError, ErrorKind};

/// Characters of one tool output kept in the compaction transcript.
pub const TOOL_OUTPUT_CHARS: usize = 2_000;
/// Estimated characters per token, where the server's count is unknown.
pub const CHARS_PER_TOKEN: usize = 4;
/// The user turn that opens a compacted conversation.
pub const RECAP_QUESTION: &str = "What did we do so far?";
/// The user turn that closes a compacted conversation (threshold case).
pub const CONTINUE: &str =
    "Continue if you have next steps, or stop and ask for clarification if you are unsure how to proceed.";
/// The instruction after the transcript in the compaction request.
pub const SUMMARY_REQUEST: &str = "Summarise the conversation above for the assistant that will \
continue it, using the sections Goal, Done so far, Current state, Important details and Next steps.";

/// Tokens kept free for the answer: `min(output limit, 32000)`.
pub fn output_reserve(output_limit: u64) -> u64 {
    output_limit.min(32_000)
}

/// Whether a step that used `total_tokens` (prompt + output) calls for a
/// compaction. Never without a context limit.
pub fn needs_compaction(total_tokens: u64, context_limit: Option<u64>, output_limit: u64) -> bool {
    match context_limit {
        Some(limit) => total_tokens >= limit.saturating_sub(output_reserve(output_limit)),
        None => false,
    }
}

/// Whether a failure is the server rejecting the prompt as too long (vLLM's
/// HTTP 400 "maximum context length is N tokens").
pub fn is_context_overflow(error: &CallError) -> bool {
    error.kind == ErrorKind::Http400
        && error
            .message
            .to_ascii_lowercase()
            .contains("maximum context length")
}

/// Token budget of the recent turns kept after a compaction: a quarter of
/// the usable context, within 2,000–15,000 tokens.
pub fn keep_budget(context_limit: u64, output_limit: u64) -> u64 {
    let usable = context_limit.saturating_sub(output_reserve(output_limit));
    (usable / 4).clamp(2_000, 15_000)
}

/// Estimated tokens of a message (JSON length / 4).
pub fn estimate_tokens(message: &Value) -> u64 {
    (message.to_string().len() / CHARS_PER_TOKEN) as u64
}

fn role(message: &Value) -> &str {
    message.get("role").and_then(Value::as_str).unwrap_or("")
}

/// The transcript sent for summarising: one block per message, tool outputs
/// cut to [`TOOL_OUTPUT_CHARS`]. When longer than `max_chars`, the oldest
/// part is dropped.
pub fn transcript(messages: &[Value], max_chars: usize) -> String {
    let mut out = String::new();
    for m in messages {
        match role(m) {
            "tool" => {
                let text = codendum_core::openai::message_text(m);
                let cut: String = text.chars().take(TOOL_OUTPUT_CHARS).collect();
                let more = if cut.len() < text.len() {
                    "\n[output cut]"
                } else {
                    ""
                };
                out.push_str(&format!("[tool result]\n{cut}{more}\n\n"));
            }
            r => {
                out.push_str(&format!(
                    "[{r}]\n{}\n",
                    codendum_core::openai::message_text(m)
                ));
                for c in m
                    .get("tool_calls")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let name = c
                        .pointer("/function/name")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    let args = c
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .unwrap_or("");
                    out.push_str(&format!("[tool call] {name} {args}\n"));
                }
                out.push('\n');
            }
        }
    }
    if out.len() > max_chars {
        let mut start = out.len() - max_chars;
        while !out.is_char_boundary(start) {
            start += 1;
        }
        out = format!("[earlier part left out]\n{}", &out[start..]);
    }
    out
}

/// The user message of the compaction request.
pub fn compaction_prompt(messages: &[Value], max_chars: usize) -> String {
    format!(
        "Here is the conversation so far.\n\n<conversation>\n{}</conversation>\n\n{SUMMARY_REQUEST}",
        transcript(messages, max_chars)
    )
}

/// Splits messages into turns that must stay together: a user message, or
/// an assistant message with the tool messages answering it.
fn turns(messages: &[Value]) -> Vec<&[Value]> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, m) in messages.iter().enumerate() {
        if i > start && role(m) != "tool" {
            out.push(&messages[start..i]);
            start = i;
        }
    }
    if start < messages.len() {
        out.push(&messages[start..]);
    }
    out
}

/// The conversation after a compaction (the system message is not part of
/// `messages`; the caller keeps it):
/// - threshold case: user "What did we do so far?", assistant `summary`,
///   the most recent whole turns within `keep_tokens`, user "Continue ...";
/// - overflow case (the server rejected the prompt): user "What did we do
///   so far?", assistant `summary`, then the last user message again (the
///   recent turns are what overflowed, so none are kept).
pub fn compacted_messages(
    messages: &[Value],
    summary: &str,
    keep_tokens: u64,
    overflow: bool,
) -> Vec<Value> {
    let mut out = vec![
        json!({"role": "user", "content": RECAP_QUESTION}),
        json!({"role": "assistant", "content": summary}),
    ];
    if overflow {
        let last_user = messages
            .iter()
            .rev()
            .find(|m| role(m) == "user")
            .map(codendum_core::openai::message_text)
            .unwrap_or_else(|| CONTINUE.to_string());
        out.push(json!({"role": "user", "content": last_user}));
        return out;
    }
    let mut kept: Vec<&[Value]> = Vec::new();
    let mut used = 0u64;
    for turn in turns(messages).into_iter().rev() {
        let cost: u64 = turn.iter().map(estimate_tokens).sum();
        if used + cost > keep_tokens {
            break;
        }
        used += cost;
        kept.push(turn);
    }
    for turn in kept.into_iter().rev() {
        out.extend(turn.iter().cloned());
    }
    out.push(json!({"role": "user", "content": CONTINUE}));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trigger_is_context_minus_output_reserve() {
        assert!(!needs_compaction(57_343, Some(65_536), 8_192));
        assert!(needs_compaction(57_344, Some(65_536), 8_192));
        assert!(needs_compaction(33_536, Some(65_536), 64_000));
        assert!(!needs_compaction(33_535, Some(65_536), 64_000));
        assert!(!needs_compaction(1_000_000, None, 8_192));
        assert_eq!(keep_budget(65_536, 8_192), 14_336);
        assert_eq!(keep_budget(8_192, 4_096), 2_000);
    }

    #[test]
    fn overflow_is_a_400_about_context_length() {
        let e = |kind, msg: &str| CallError {
            kind,
            status: None,
            message: msg.into(),
            retry_after: None,
        };
        assert!(is_context_overflow(&e(ErrorKind::Http400, "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens")));
        assert!(!is_context_overflow(&e(
            ErrorKind::Http400,
            "bad temperature"
        )));
        assert!(!is_context_overflow(&e(
            ErrorKind::Http503,
            "maximum context length"
        )));
    }

    fn conversation() -> Vec<Value> {
        let big = "x".repeat(10_000);
        vec![
            json!({"role": "user", "content": "Add private messages"}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{\"filePath\":\"a\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c1", "content": big}),
            json!({"role": "assistant", "content": null, "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "bash", "arguments": "{\"command\":\"mvn test\"}"}}]}),
            json!({"role": "tool", "tool_call_id": "c2", "content": "BUILD SUCCESS"}),
        ]
    }

    #[test]
    fn transcript_cuts_tool_outputs() {
        let t = transcript(&conversation(), 1_000_000);
        assert!(t.contains("[tool call] read {\"filePath\":\"a\"}"));
        assert!(t.contains(&"x".repeat(TOOL_OUTPUT_CHARS)));
        assert!(!t.contains(&"x".repeat(TOOL_OUTPUT_CHARS + 1)));
        assert!(t.contains("[output cut]"));
        let short = transcript(&conversation(), 500);
        assert!(short.starts_with("[earlier part left out]") && short.len() < 600);
        assert!(compaction_prompt(&conversation(), 10_000).ends_with(SUMMARY_REQUEST));
    }

    #[test]
    fn compacted_layout_keeps_whole_recent_turns() {
        let msgs = compacted_messages(&conversation(), "SUMMARY", 2_000, false);
        let roles: Vec<&str> = msgs.iter().map(role).collect();
        assert_eq!(
            roles,
            vec!["user", "assistant", "assistant", "tool", "user"]
        );
        assert_eq!(
            codendum_core::openai::message_text(&msgs[0]),
            RECAP_QUESTION
        );
        assert_eq!(codendum_core::openai::message_text(&msgs[1]), "SUMMARY");
        assert_eq!(msgs[2]["tool_calls"][0]["id"], "c2");
        assert_eq!(codendum_core::openai::message_text(&msgs[4]), CONTINUE);
        let roomy = compacted_messages(&conversation(), "S", 100_000, false);
        assert_eq!(roomy.len(), 2 + 5 + 1);
    }

    #[test]
    fn overflow_layout_resends_the_last_user_message() {
        let msgs = compacted_messages(&conversation(), "SUMMARY", 2_000, true);
        let roles: Vec<&str> = msgs.iter().map(role).collect();
        assert_eq!(roles, vec!["user", "assistant", "user"]);
        assert_eq!(
            codendum_core::openai::message_text(&msgs[2]),
            "Add private messages"
        );
    }
}
