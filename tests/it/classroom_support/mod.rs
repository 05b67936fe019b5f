//! A scripted fake model for the classroom tests (a [`Transport`] that
//! plays an agent: tool calls, then a final answer), on a paused clock.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use codendum::classroom::compaction::{CONTINUE, RECAP_QUESTION};
use codendum::classroom::{
    run_classroom, ClassroomConfig, ClassroomOutcome, LiveStatus, MemorySink,
};
use codendum_core::clock::Clock;
use codendum_core::openai::{
    AssistantMessage, CallError, CallOutcome, CallRequest, ToolCall, Transport, Usage,
};

/// One call as the fake saw it.
#[derive(Debug, Clone)]
pub struct Seen {
    pub at: f64,
    pub body: Value,
    pub key: Option<String>,
    pub session: Option<String>,
    pub parent: Option<String>,
}

/// A scripted model. The main agent reads two things, asks an explore
/// subagent, edits the protocol, runs the tests and answers; the subagent
/// greps once and answers; titles and summaries are plain text.
pub struct ScriptedModel {
    clock: Clock,
    seen: Mutex<Vec<Seen>>,
    /// Errors handed to the next agent-step attempts (calls with tools).
    pub agent_failures: Mutex<VecDeque<CallError>>,
    /// Prompt tokens reported when the body holds this text (and no
    /// compaction has happened yet).
    pub big_prompt: Option<(&'static str, u64)>,
    counter: Mutex<u64>,
}

impl ScriptedModel {
    pub fn new(clock: Clock) -> Self {
        ScriptedModel {
            clock,
            seen: Mutex::new(Vec::new()),
            agent_failures: Mutex::new(VecDeque::new()),
            big_prompt: None,
            counter: Mutex::new(0),
        }
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }

    fn next_id(&self) -> String {
        let mut c = self.counter.lock().unwrap();
        *c += 1;
        format!("chatcmpl-tool-{c}")
    }

    fn call(&self, name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: self.next_id(),
            name: name.into(),
            arguments: args.to_string(),
        }
    }

    fn answer(&self, body: &Value) -> AssistantMessage {
        let msgs = body["messages"].as_array().cloned().unwrap_or_default();
        let system = msgs[0]["content"].as_str().unwrap_or("").to_string();
        let text = |t: &str| AssistantMessage {
            content: t.into(),
            ..Default::default()
        };
        if body.get("tools").is_none() {
            return if system.starts_with("You write titles") {
                text("Add private messages to chat")
            } else {
                text("## Goal\nPrivate messages.\n## Done so far\nRead and edited Message.java.\n## Next steps\nNone.")
            };
        }
        let last_user = msgs.iter().rposition(|m| m["role"] == "user").unwrap_or(0);
        if msgs[last_user]["content"] == CONTINUE {
            return text("All done after the summary.");
        }
        let step = msgs[last_user..]
            .iter()
            .filter(|m| m["role"] == "assistant")
            .count();
        let tools = |calls: Vec<ToolCall>| AssistantMessage {
            tool_calls: calls,
            ..Default::default()
        };
        if system.starts_with("You are Scout") {
            return match step {
                0 => tools(vec![self.call(
                    "grep",
                    json!({"pattern": "Message.parse", "include": "*.java"}),
                )]),
                _ => text("Message.parse is called in ChatServer.java and ChatClient.java."),
            };
        }
        match step {
            0 => tools(vec![
                self.call("read", json!({"filePath": "src/main/java/chat/Message.java"})),
                self.call("glob", json!({"pattern": "**/*Test.java"})),
            ]),
            1 => tools(vec![self.call("task", json!({"description": "find parse callers", "prompt": "Where is Message.parse called?", "subagent_type": "explore"}))]),
            2 => tools(vec![self.call("edit", json!({"filePath": "src/main/java/chat/Message.java", "oldString": "public enum Type { MSG, JOIN, LEAVE }", "newString": "public enum Type { MSG, JOIN, LEAVE, PRIVATE }"}))]),
            3 => tools(vec![self.call("bash", json!({"command": "mvn test", "timeout": 300000}))]),
            _ => text("Added the PRIVATE type; the tests pass."),
        }
    }
}

impl Transport for ScriptedModel {
    fn call(&self, request: CallRequest) -> BoxFuture<'_, CallOutcome> {
        Box::pin(async move {
            let header = |n: &str| {
                request
                    .headers
                    .iter()
                    .find(|(k, _)| k == n)
                    .map(|(_, v)| v.clone())
            };
            let sent_at = self.clock.now_secs();
            self.seen.lock().unwrap().push(Seen {
                at: sent_at,
                body: (*request.body).clone(),
                key: request.api_key.as_ref().map(|k| k.expose().to_string()),
                session: header("x-session-id"),
                parent: header("x-parent-session-id"),
            });
            if request.body.get("tools").is_some() {
                if let Some(error) = self.agent_failures.lock().unwrap().pop_front() {
                    return CallOutcome {
                        sent_at,
                        status: error.status,
                        error: Some(error),
                        ..Default::default()
                    };
                }
            }
            let message = self.answer(&request.body);
            let text = request.body.to_string();
            let mut prompt_tokens = (text.len() / 4) as u64;
            if let Some((marker, big)) = self.big_prompt {
                if text.contains(marker) && !text.contains(RECAP_QUESTION) {
                    prompt_tokens = prompt_tokens.max(big);
                }
            }
            self.clock.sleep(Duration::from_millis(500)).await;
            self.clock.sleep(Duration::from_millis(2500)).await;
            CallOutcome {
                sent_at,
                ttft: Some(0.5),
                e2e: 3.0,
                status: Some(200),
                usage: Some(Usage {
                    prompt_tokens,
                    completion_tokens: 50,
                }),
                text_chunks: 50,
                finish_reason: Some(
                    if message.tool_calls.is_empty() {
                        "stop"
                    } else {
                        "tool_calls"
                    }
                    .into(),
                ),
                message,
                ..Default::default()
            }
        })
    }
}

pub fn one_student(context_limit: Option<u64>) -> ClassroomConfig {
    let mut c = ClassroomConfig::new("test-model", context_limit);
    c.users = 1;
    c.ramp_up = Duration::ZERO;
    c.set_follow_ups(0);
    c.duration = Duration::from_secs(60);
    c
}

pub async fn run(
    config: &ClassroomConfig,
    model: Arc<ScriptedModel>,
    clock: Clock,
) -> (ClassroomOutcome, Arc<MemorySink>) {
    let sink = Arc::new(MemorySink::default());
    let status = Arc::new(LiveStatus::new(clock.clone()));
    let outcome = run_classroom(config, model, clock, sink.clone(), status)
        .await
        .expect("run");
    (outcome, sink)
}

pub fn agent_steps(seen: &[Seen]) -> Vec<&Seen> {
    seen.iter()
        .filter(|s| s.body.get("tools").is_some() && s.parent.is_none())
        .collect()
}
