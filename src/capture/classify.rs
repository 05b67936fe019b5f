//! What a request is, from its headers and body alone: the session, the
//! kind of call, the captured prompt, and what the client does after the
//! answer (the [`ClientTimeKind`] of its tool calls).
//!
//! The kind rule (OpenCode 1.x request shapes):
//! - a body that is not JSON, or a path other than `…/chat/completions` or
//!   `…/completions`: `other`;
//! - tools offered (a non-empty `tools` array): `subagent` with an
//!   `x-parent-session-id` header, else `agent`;
//! - no tools: `compaction` when the conversation holds an `assistant` or
//!   `tool` turn (the history is being summarised); else `title` when the
//!   system prompt or a user message speaks of a title; else `compaction`
//!   when a message asks for a summary ("summar…") or the text is over
//!   [`COMPACTION_MIN_CHARS`]; else `title` (OpenCode's title request has no
//!   tools and two short user messages).

use axum::http::HeaderMap;
use serde_json::Value;

use codendum_core::capture::{CaptureKind, RequestInfo};

use crate::classroom::client_times::ClientTimeKind;

/// A tool-less request whose messages hold more characters than this is a
/// compaction when nothing else says what it is.
pub const COMPACTION_MIN_CHARS: usize = 16_000;

fn header(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(String::from)
}

/// Reads a request (see the module rule for the kind).
pub fn inspect(headers: &HeaderMap, path: &str, body: &[u8]) -> (RequestInfo, Option<Value>) {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let parent = header(headers, "x-parent-session-id");
    let is_completion = path.ends_with("/chat/completions") || path.ends_with("/completions");
    let kind = match &parsed {
        Some(v) if is_completion && v.is_object() => kind_of(v, parent.is_some()),
        _ => CaptureKind::Other,
    };
    let get = |k: &str| parsed.as_ref().and_then(|v| v.get(k));
    let info = RequestInfo {
        session: header(headers, "x-session-id"),
        parent,
        kind,
        body_json: body.is_empty() || parsed.is_some(),
        stream: get("stream").and_then(Value::as_bool),
        model: get("model").and_then(Value::as_str).map(String::from),
        max_tokens: get("max_tokens")
            .or_else(|| get("max_completion_tokens"))
            .and_then(Value::as_u64),
        tools_offered: get("tools").and_then(Value::as_array).map_or(0, Vec::len),
        messages: get("messages")
            .and_then(Value::as_array)
            .map_or(0, Vec::len),
    };
    (info, parsed)
}

/// The kind of a completion request body (see the module rule).
pub fn kind_of(body: &Value, has_parent: bool) -> CaptureKind {
    let has_tools = body
        .get("tools")
        .and_then(Value::as_array)
        .is_some_and(|t| !t.is_empty());
    if has_tools {
        return if has_parent {
            CaptureKind::Subagent
        } else {
            CaptureKind::Agent
        };
    }
    let messages = body
        .get("messages")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    if messages.iter().any(|m| {
        matches!(
            m.get("role").and_then(Value::as_str),
            Some("assistant" | "tool")
        )
    }) {
        return CaptureKind::Compaction;
    }
    let texts: Vec<String> = messages
        .iter()
        .map(|m| codendum_core::openai::message_text(m).to_ascii_lowercase())
        .collect();
    if texts.iter().any(|t| t.contains("title")) {
        return CaptureKind::Title;
    }
    let chars: usize = texts.iter().map(String::len).sum();
    if texts.iter().any(|t| t.contains("summar")) || chars > COMPACTION_MIN_CHARS {
        CaptureKind::Compaction
    } else {
        CaptureKind::Title
    }
}

/// The `prompt.json` of an agent request body: `{"system": …, "tools": […]}`
/// as `classroom --prompt-file` reads it, or `None` when the body has no
/// system message or no tools.
pub fn prompt_of(body: &Value) -> Option<Value> {
    let text = body.to_string();
    let (system, tools) = crate::classroom::prompt::parse_prompt(&text).ok()?;
    Some(serde_json::json!({"system": system, "tools": tools}))
}

/// What the client does after an answer, until its session's next request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum After {
    /// Client time of this kind (a sample of the distribution).
    Kind(ClientTimeKind),
    /// The answer called `task`: the parent waits for a subagent session.
    Task,
    /// The call failed (an error status, a cut stream): what follows is
    /// OpenCode's retry back-off.
    Retry,
}

impl After {
    /// The name written in `calls.jsonl` (`client_time_kind`).
    pub fn as_str(self) -> &'static str {
        match self {
            After::Kind(k) => k.as_str(),
            After::Task => "task",
            After::Retry => "retry",
        }
    }
}

/// What follows an answer of `kind` whose tool calls are `(name, arguments)`;
/// `None` when nothing of the session is to follow (a title, `other`).
pub fn after_answer(kind: CaptureKind, ok: bool, tools: &[(String, String)]) -> Option<After> {
    if matches!(kind, CaptureKind::Title | CaptureKind::Other) {
        return None;
    }
    if !ok {
        return Some(After::Retry);
    }
    if tools.iter().any(|(n, _)| n == "task") {
        return Some(After::Task);
    }
    let heaviest = tools
        .iter()
        .filter_map(|(n, a)| ClientTimeKind::of_tool(n, a))
        .reduce(ClientTimeKind::heavier);
    Some(After::Kind(match heaviest {
        Some(k) => k,
        None if kind == CaptureKind::Compaction => ClientTimeKind::AfterCompaction,
        None => ClientTimeKind::UserPause,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn kinds_follow_the_request_shape() {
        let tools = json!([{"type": "function", "function": {"name": "read"}}]);
        let agent = json!({"messages": [{"role": "user", "content": "hi"}], "tools": tools});
        assert_eq!(kind_of(&agent, false), CaptureKind::Agent);
        assert_eq!(kind_of(&agent, true), CaptureKind::Subagent);
        let title = json!({"messages": [{"role": "system", "content": "You write a title"},
            {"role": "user", "content": "Generate a title"}, {"role": "user", "content": "add a method"}]});
        assert_eq!(kind_of(&title, false), CaptureKind::Title);
        let history = json!({"messages": [{"role": "user", "content": "x"},
            {"role": "assistant", "content": "y"}, {"role": "user", "content": "Summarize"}]});
        assert_eq!(kind_of(&history, false), CaptureKind::Compaction);
        let one = json!({"messages": [{"role": "user", "content": "Summarize this session: ..."}]});
        assert_eq!(kind_of(&one, false), CaptureKind::Compaction);
        let big = json!({"messages": [{"role": "user", "content": "x".repeat(20_000)}]});
        assert_eq!(kind_of(&big, false), CaptureKind::Compaction);
        let mut h = HeaderMap::new();
        h.insert("x-session-id", "ses_1".parse().unwrap());
        let (info, _) = inspect(&h, "/v1/chat/completions", b"not json");
        assert_eq!((info.kind, info.body_json), (CaptureKind::Other, false));
        assert_eq!(info.session.as_deref(), Some("ses_1"));
    }

    #[test]
    fn the_heaviest_tool_says_what_follows() {
        let t = |n: &str, a: &str| (n.to_string(), a.to_string());
        let calls = [t("read", "{}"), t("bash", r#"{"command":"mvn test"}"#)];
        assert_eq!(
            after_answer(CaptureKind::Agent, true, &calls),
            Some(After::Kind(ClientTimeKind::BuildTest))
        );
        assert_eq!(
            after_answer(CaptureKind::Agent, true, &[]),
            Some(After::Kind(ClientTimeKind::UserPause))
        );
        assert_eq!(
            after_answer(
                CaptureKind::Agent,
                true,
                &[t("task", "{}"), t("read", "{}")]
            ),
            Some(After::Task)
        );
        assert_eq!(
            after_answer(CaptureKind::Agent, false, &[]),
            Some(After::Retry)
        );
        assert_eq!(after_answer(CaptureKind::Title, true, &[]), None);
    }
}
