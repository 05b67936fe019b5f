//! The classroom simulator against a scripted fake model on a paused tokio
//! clock: retries, per-user keys, compaction, and a small class end to end.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::{json, Value};

use codendum::classroom::compaction::{CONTINUE, RECAP_QUESTION};
use codendum::classroom::{
    run_classroom, CallKind, ClassroomConfig, ClassroomOutcome, JsonlSink, LiveStatus, MemorySink,
    TaskOutcome,
};
use codendum::clock::Clock;
use codendum::openai::{
    AssistantMessage, CallError, CallOutcome, CallRequest, ErrorKind, ToolCall, Transport, Usage,
};
use codendum::target::Secret;

/// One call as the fake saw it.
#[derive(Debug, Clone)]
struct Seen {
    at: f64,
    body: Value,
    key: Option<String>,
    session: Option<String>,
    parent: Option<String>,
}

/// A scripted model. The main agent reads two things, asks an explore
/// subagent, edits the protocol, runs the tests and answers; the subagent
/// greps once and answers; titles and summaries are plain text.
struct ScriptedModel {
    clock: Clock,
    seen: Mutex<Vec<Seen>>,
    /// Errors handed to the next agent-step attempts (calls with tools).
    agent_failures: Mutex<VecDeque<CallError>>,
    /// Prompt tokens reported when the body holds this text (and no
    /// compaction has happened yet).
    big_prompt: Option<(&'static str, u64)>,
    counter: Mutex<u64>,
}

impl ScriptedModel {
    fn new(clock: Clock) -> Self {
        ScriptedModel {
            clock,
            seen: Mutex::new(Vec::new()),
            agent_failures: Mutex::new(VecDeque::new()),
            big_prompt: None,
            counter: Mutex::new(0),
        }
    }

    fn seen(&self) -> Vec<Seen> {
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
            3 => tools(vec![self.call("bash", json!({"command": "mvn -q test", "timeout": 300000}))]),
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
                body: request.body.clone(),
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

fn one_student(context_limit: Option<u64>) -> ClassroomConfig {
    let mut c = ClassroomConfig::new("test-model", context_limit);
    c.users = 1;
    c.ramp_up = Duration::ZERO;
    c.follow_ups = 0;
    c.duration = Duration::from_secs(60);
    c
}

async fn run(
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

fn agent_steps(seen: &[Seen]) -> Vec<&Seen> {
    seen.iter()
        .filter(|s| s.body.get("tools").is_some() && s.parent.is_none())
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_429_with_retry_after_is_retried_after_it_and_counted() {
    let clock = Clock::real();
    let model = Arc::new(ScriptedModel::new(clock.clone()));
    model.agent_failures.lock().unwrap().push_back(CallError {
        kind: ErrorKind::Http429,
        status: Some(429),
        message: "rate limited".into(),
        retry_after: Some(Duration::from_secs(2)),
    });
    let (outcome, _) = run(&one_student(None), model.clone(), clock).await;
    let seen = model.seen();
    let steps = agent_steps(&seen);
    assert!(
        (steps[1].at - steps[0].at - 2.0).abs() < 1e-6,
        "retry at {} after {}",
        steps[1].at,
        steps[0].at
    );
    let first = &outcome
        .requests
        .iter()
        .find(|r| r.kind == CallKind::Agent)
        .unwrap();
    assert_eq!(first.retries, 1);
    assert_eq!(first.retried_kinds, vec![ErrorKind::Http429]);
    assert!(first.error_kind.is_none());
    assert!((first.wait_s - 5.0).abs() < 1e-6, "{}", first.wait_s);
    assert_eq!(outcome.summary.retries, 1);
    assert_eq!(outcome.summary.retries_after_429_503, 1);
    assert_eq!(outcome.summary.errors, 0);
    assert_eq!(outcome.tasks[0].outcome, TaskOutcome::Completed);
}

#[tokio::test(start_paused = true)]
async fn retries_back_off_and_give_up_after_five() {
    let clock = Clock::real();
    let model = Arc::new(ScriptedModel::new(clock.clone()));
    for _ in 0..6 {
        model.agent_failures.lock().unwrap().push_back(CallError {
            kind: ErrorKind::Http503,
            status: Some(503),
            message: "queue full".into(),
            retry_after: None,
        });
    }
    let (outcome, _) = run(&one_student(None), model.clone(), clock).await;
    let seen = model.seen();
    let times: Vec<f64> = agent_steps(&seen).iter().map(|s| s.at).collect();
    assert_eq!(times.len(), 6);
    for (i, w) in times.windows(2).enumerate() {
        let base = (2.0 * 2f64.powi(i as i32)).min(30.0);
        let gap = w[1] - w[0];
        assert!(
            gap >= base - 1e-6 && gap <= (base * 1.25).min(30.0) + 1e-6,
            "retry {i}: {gap}"
        );
    }
    let task = &outcome.tasks[0];
    assert_eq!(task.outcome, TaskOutcome::Failed);
    assert_eq!(task.error_kind, Some(ErrorKind::Http503));
    assert_eq!(outcome.summary.retries_after_429_503, 5);
    assert_eq!(
        outcome.summary.errors_by_kind.get(&ErrorKind::Http503),
        Some(&1)
    );
}

#[tokio::test(start_paused = true)]
async fn each_user_sends_its_own_key_and_session() {
    let clock = Clock::real();
    let model = Arc::new(ScriptedModel::new(clock.clone()));
    let mut config = one_student(None);
    config.users = 3;
    config.api_keys = (0..3)
        .map(|i| Secret::new(format!("sk-student-{i}")))
        .collect();
    let (outcome, _) = run(&config, model.clone(), clock).await;
    let seen = model.seen();
    assert_eq!(seen.len(), outcome.requests.len());
    for user in 0..3 {
        let sessions: Vec<&str> = outcome
            .requests
            .iter()
            .filter(|r| r.user == user && r.kind != CallKind::Subagent)
            .map(|r| r.session.as_str())
            .collect();
        let main = sessions[0];
        assert!(main.starts_with("ses_") && sessions.iter().all(|s| *s == main));
        let calls: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.session.as_deref() == Some(main) || s.parent.as_deref() == Some(main))
            .collect();
        assert_eq!(calls.len(), 8, "title + 5 agent steps + 2 subagent steps");
        assert!(calls
            .iter()
            .all(|s| s.key.as_deref() == Some(format!("sk-student-{user}").as_str())));
    }
    let text = serde_json::to_string(&outcome.requests).unwrap();
    assert!(!text.contains("sk-student"));
    assert!(outcome.key_note.is_none());
}

#[tokio::test(start_paused = true)]
async fn steps_resend_the_conversation_like_opencode() {
    let clock = Clock::real();
    let model = Arc::new(ScriptedModel::new(clock.clone()));
    let (outcome, _) = run(&one_student(Some(65_536)), model.clone(), clock).await;
    let seen = model.seen();
    let title = seen.iter().find(|s| s.body.get("tools").is_none()).unwrap();
    assert_eq!(title.at, 0.0);
    let title_tokens = title.body.to_string().len() / 4;
    assert!(
        (350..=800).contains(&title_tokens),
        "title ≈ {title_tokens} tokens"
    );
    let steps = agent_steps(&seen);
    assert_eq!(steps.len(), 5);
    let first = &steps[0].body;
    assert_eq!(first["tool_choice"], "auto");
    assert_eq!(first["stream"], true);
    assert_eq!(first["stream_options"]["include_usage"], true);
    assert_eq!(first["max_tokens"], 8192);
    let first_tokens = first.to_string().len() / 4;
    assert!(
        (6_500..=8_500).contains(&first_tokens),
        "first step ≈ {first_tokens} tokens"
    );
    let second = steps[1].body["messages"].as_array().unwrap();
    assert_eq!(second[2]["role"], "assistant");
    let id = second[2]["tool_calls"][0]["id"].as_str().unwrap();
    assert_eq!(second[3]["tool_call_id"], id);
    assert!(second[3]["content"]
        .as_str()
        .unwrap()
        .starts_with("1: package chat;"));
    let sub: Vec<&Seen> = seen.iter().filter(|s| s.parent.is_some()).collect();
    assert_eq!(sub.len(), 2);
    assert_eq!(sub[0].parent, steps[0].session);
    assert_ne!(sub[0].session, steps[0].session);
    let names: Vec<&str> = sub[0].body["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["function"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, vec!["bash", "read", "glob", "grep"]);
    let third = steps[2].body["messages"].as_array().unwrap();
    assert!(third.last().unwrap()["content"]
        .as_str()
        .unwrap()
        .contains("ChatServer.java and ChatClient.java"));
    let task = &outcome.tasks[0];
    assert_eq!(
        (
            task.calls,
            task.tool_calls,
            task.tool_errors,
            task.compactions
        ),
        (8, 6, 0, 0)
    );
    assert!(
        (task.model_time_s - 7.0 * 3.0).abs() < 1e-6,
        "{}",
        task.model_time_s
    );
    assert!(task.end - task.start >= 7.0 * 3.0 + 3.0);
}

#[tokio::test(start_paused = true)]
async fn a_context_overflow_compacts_and_resends_instead_of_retrying() {
    let clock = Clock::real();
    let model = Arc::new(ScriptedModel::new(clock.clone()));
    model.agent_failures.lock().unwrap().push_back(CallError {
        kind: ErrorKind::Http400,
        status: Some(400),
        message: "This model's maximum context length is 65536 tokens. However, you requested 70000 tokens.".into(),
        retry_after: None,
    });
    let config = one_student(Some(65_536));
    let (outcome, _) = run(&config, model.clone(), clock).await;
    let seen = model.seen();
    let kinds: Vec<CallKind> = outcome
        .requests
        .iter()
        .filter(|r| r.kind != CallKind::Title)
        .map(|r| r.kind)
        .collect();
    assert_eq!(
        &kinds[..3],
        &[CallKind::Agent, CallKind::Compaction, CallKind::Agent]
    );
    let failed = outcome
        .requests
        .iter()
        .find(|r| r.kind == CallKind::Agent)
        .unwrap();
    assert_eq!(
        (failed.error_kind, failed.retries),
        (Some(ErrorKind::Http400), 0)
    );
    let compaction = seen
        .iter()
        .find(|s| {
            s.body.get("tools").is_none()
                && !s.body["messages"][0]["content"]
                    .as_str()
                    .unwrap()
                    .starts_with("You write titles")
        })
        .unwrap();
    assert_eq!(compaction.body["messages"].as_array().unwrap().len(), 2);
    let resent = agent_steps(&seen)[1].body["messages"]
        .as_array()
        .unwrap()
        .clone();
    let roles: Vec<&str> = resent.iter().map(|m| m["role"].as_str().unwrap()).collect();
    assert_eq!(roles, vec!["system", "user", "assistant", "user"]);
    assert_eq!(resent[1]["content"], RECAP_QUESTION);
    assert!(resent[2]["content"]
        .as_str()
        .unwrap()
        .starts_with("## Goal"));
    assert_eq!(resent[3]["content"], config.scenario.exercise());
    assert_eq!(outcome.tasks[0].outcome, TaskOutcome::Completed);
    assert_eq!(outcome.summary.compactions, 1);
}

#[tokio::test(start_paused = true)]
async fn reaching_the_threshold_compacts_with_the_new_layout() {
    let clock = Clock::real();
    let mut fake = ScriptedModel::new(clock.clone());
    fake.big_prompt = Some(("PRIVATE }", 60_000));
    let model = Arc::new(fake);
    let (outcome, _) = run(&one_student(Some(65_536)), model.clone(), clock).await;
    let seen = model.seen();
    let steps = agent_steps(&seen);
    let compaction = seen
        .iter()
        .find(|s| {
            s.body.get("tools").is_none()
                && s.body["messages"][1]["content"]
                    .as_str()
                    .unwrap_or("")
                    .starts_with("Here is the conversation")
        })
        .expect("a compaction request");
    assert!(compaction.body["messages"][1]["content"]
        .as_str()
        .unwrap()
        .contains("[tool call] bash"));
    let after = steps.last().unwrap().body["messages"].as_array().unwrap();
    assert_eq!(after[1]["content"], RECAP_QUESTION);
    assert_eq!(after.last().unwrap()["content"], CONTINUE);
    assert_eq!(
        after[after.len() - 2]["role"],
        "tool",
        "the most recent turn is kept"
    );
    assert_eq!(outcome.tasks[0].compactions, 1);
    assert_eq!(outcome.tasks[0].outcome, TaskOutcome::Completed);
}

#[tokio::test(start_paused = true)]
async fn a_small_class_produces_task_and_request_records_and_a_summary() {
    let clock = Clock::real();
    let model = Arc::new(ScriptedModel::new(clock.clone()));
    let mut config = ClassroomConfig::new("test-model", Some(65_536));
    config.users = 3;
    config.duration = Duration::from_secs(240);
    config.ramp_up = Duration::from_secs(60);
    config.pause_min = Duration::from_secs(20);
    config.pause_max = Duration::from_secs(30);
    config.api_keys = vec![Secret::new("sk-a"), Secret::new("sk-b")];
    config.seed = 7;
    let sink = Arc::new(JsonlSink::new(Vec::new(), Vec::new()));
    let status = Arc::new(LiveStatus::new(clock.clone()));
    let outcome = run_classroom(
        &config,
        model.clone(),
        clock.clone(),
        sink.clone(),
        status.clone(),
    )
    .await
    .expect("run");
    let (req_lines, task_lines) = Arc::try_unwrap(sink).ok().expect("sole owner").into_inner();
    assert_eq!(
        String::from_utf8(req_lines).unwrap().lines().count(),
        outcome.requests.len()
    );
    assert_eq!(
        String::from_utf8(task_lines).unwrap().lines().count(),
        outcome.tasks.len()
    );

    let s = &outcome.summary;
    assert!(outcome
        .key_note
        .as_deref()
        .unwrap_or("")
        .contains("2 API keys for 3 students"));
    for user in 0..3 {
        let mine: Vec<_> = outcome.tasks.iter().filter(|t| t.user == user).collect();
        assert!(!mine.is_empty());
        assert!(mine
            .iter()
            .enumerate()
            .all(|(i, t)| t.index == i && t.outcome == TaskOutcome::Completed));
        assert!(mine.iter().all(|t| t.start < 240.0));
        for t in &mine {
            let expected_calls = if t.index == 0 { 8 } else { 7 };
            assert_eq!(t.calls, expected_calls, "user {user} task {}", t.index);
            assert_eq!(
                t.tool_errors,
                usize::from(t.index > 0),
                "the protocol edit is already done after the first task"
            );
        }
        let titles = outcome
            .requests
            .iter()
            .filter(|r| r.user == user && r.kind == CallKind::Title)
            .count();
        assert_eq!(titles, 1);
    }
    assert_eq!(s.coding_requests, outcome.tasks.len() as u64);
    assert_eq!(s.completed, s.coding_requests);
    assert!(s.coding_requests >= 6, "{}", s.coding_requests);
    assert_eq!(s.requests, outcome.requests.len() as u64);
    assert_eq!(s.requests_by_kind.get(&CallKind::Title), Some(&3));
    assert_eq!(s.errors, 0);
    assert_eq!(s.ttft_p50_s, Some(0.5));
    assert_eq!(s.request_time_p95_s, Some(3.0));
    assert_eq!(s.output_speed_p50_tok_s, Some(20.0));
    assert!((s.model_time_p50_s.unwrap() - 21.0).abs() < 1e-6);
    assert!(s.prompt_tokens_max.unwrap() > 7_000);
    assert_eq!(s.tool_calls, 6 * s.coding_requests);
    assert_eq!(s.tool_errors, s.coding_requests - 3);
    let per_hour = s.completed_per_hour.unwrap();
    assert!((per_hour - s.completed as f64 * 3600.0 / s.wall_s).abs() < 1e-9);
    let snap = status.snapshot();
    assert_eq!(
        (snap.active_users, snap.in_flight, snap.completed),
        (0, 0, s.completed)
    );
    assert_eq!(snap.ttft_p50_s, Some(0.5));

    let again = Arc::new(ScriptedModel::new(clock.clone()));
    let (second, _) = run(&config, again, clock).await;
    let shape = |o: &ClassroomOutcome| {
        let mut v: Vec<(usize, usize, f64)> = o
            .tasks
            .iter()
            .map(|t| (t.user, t.index, ((t.end - t.start) * 1e6).round() / 1e6))
            .collect();
        v.sort_by(|x, y| x.partial_cmp(y).unwrap());
        v
    };
    assert_eq!(
        shape(&outcome),
        shape(&second),
        "the same seed gives the same run"
    );
}

#[tokio::test(start_paused = true)]
async fn a_final_answer_past_the_threshold_compacts_without_continue() {
    let clock = Clock::real();
    let mut fake = ScriptedModel::new(clock.clone());
    fake.big_prompt = Some(("T E S T S", 60_000));
    let model = Arc::new(fake);
    let mut config = one_student(Some(65_536));
    config.follow_ups = 1;
    config.pause_min = Duration::from_secs(1);
    config.pause_max = Duration::from_secs(1);
    let (outcome, _) = run(&config, model.clone(), clock).await;
    assert_eq!(outcome.tasks.len(), 2);
    assert_eq!(outcome.tasks[0].compactions, 1);
    let seen = model.seen();
    let follow_up = agent_steps(&seen)
        .into_iter()
        .find(|s| s.body.to_string().contains(config.scenario.follow_ups()[0]))
        .expect("follow-up step");
    let msgs = follow_up.body["messages"].as_array().unwrap();
    assert_eq!(msgs[1]["content"], RECAP_QUESTION);
    assert_eq!(
        msgs.last().unwrap()["content"],
        config.scenario.follow_ups()[0]
    );
    assert!(msgs.iter().all(|m| m["content"] != CONTINUE));
}
