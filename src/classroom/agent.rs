//! The OpenCode-like agent loop: every step resends the whole conversation
//! with the tools, runs the tool calls of the answer against the student's
//! project, and loops until the model answers without tool calls. Model calls
//! are retried like OpenCode's, and the context is compacted near the limit.

use std::sync::Mutex;
use std::time::Duration;

use futures::future::BoxFuture;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value};

use super::compaction::{self, compacted_messages, is_context_overflow, needs_compaction};
use super::config::ClassroomConfig;
use super::prompt::{self, tool_names};
use super::records::{CallKind, RecordSink, RequestRecord, TaskOutcome, TaskRecord};
use super::shell::ShellState;
use super::status::LiveStatus;
use super::tools::{execute, ToolContext, ToolResult, ToolStep};
use super::workspace::Workspace;
use crate::clock::Clock;
use crate::openai::{CallOutcome, CallRequest, Endpoint, ErrorKind, Transport};
use crate::target::Secret;

/// Most retries of one model call.
pub const MAX_RETRIES: u32 = 5;
/// First retry delay, seconds; doubles with each retry.
pub const RETRY_BASE_S: f64 = 2.0;
/// Largest retry delay (before jitter is capped too), seconds.
pub const RETRY_CAP_S: f64 = 30.0;
/// Jitter added to a retry delay, fraction of the delay (up to).
pub const RETRY_JITTER: f64 = 0.25;
/// `max_tokens` of a title request.
pub const TITLE_MAX_TOKENS: u64 = 1_024;

/// The delay before retry number `retry` (0-based) without a `retry-after`:
/// 2 s doubling, plus up to 25 % jitter, capped at 30 s.
pub fn retry_delay(retry: u32, rng: &mut impl Rng) -> Duration {
    let base = RETRY_BASE_S * 2f64.powi(retry.min(16) as i32);
    let jittered = base * (1.0 + rng.gen_range(0.0..=RETRY_JITTER));
    Duration::from_secs_f64(jittered.min(RETRY_CAP_S))
}

/// What every student shares during a run.
pub(crate) struct Shared {
    pub config: ClassroomConfig,
    pub transport: std::sync::Arc<dyn Transport>,
    pub clock: Clock,
    pub sink: std::sync::Arc<dyn RecordSink>,
    pub status: std::sync::Arc<LiveStatus>,
    /// Clock seconds at the run's start.
    pub origin: f64,
    pub requests: Mutex<Vec<RequestRecord>>,
    pub tasks: Mutex<Vec<TaskRecord>>,
    pub sink_error: Mutex<Option<std::io::Error>>,
}

impl Shared {
    /// Simulated seconds since the run started.
    pub fn now(&self) -> f64 {
        self.clock.now_secs() - self.origin
    }

    fn past_drain_limit(&self) -> bool {
        self.config
            .drain_limit
            .is_some_and(|d| self.now() >= (self.config.duration + d).as_secs_f64())
    }

    fn keep_sink_error(&self, result: std::io::Result<()>) {
        if let Err(e) = result {
            if let Ok(mut slot) = self.sink_error.lock() {
                slot.get_or_insert(e);
            }
        }
    }

    fn record_request(&self, r: &RequestRecord) {
        self.keep_sink_error(self.sink.request(r));
        if let Ok(mut v) = self.requests.lock() {
            v.push(r.clone());
        }
    }

    pub fn record_task(&self, t: &TaskRecord) {
        self.keep_sink_error(self.sink.task(t));
        if let Ok(mut v) = self.tasks.lock() {
            v.push(t.clone());
        }
    }
}

/// One student's private state.
pub(crate) struct Student {
    pub user: usize,
    pub key: Option<Secret>,
    pub rng: ChaCha8Rng,
    pub workspace: Workspace,
    pub shell: ShellState,
    pub titled: bool,
}

/// A new OpenCode-style session id (`ses_` + 24 hex digits), seeded.
pub(crate) fn session_id(rng: &mut impl Rng) -> String {
    format!("ses_{:024x}", rng.gen::<u128>() >> 32)
}

/// One session's conversation (the system message is kept apart).
pub(crate) struct Conversation {
    pub id: String,
    pub parent: Option<String>,
    pub kind: CallKind,
    pub system: String,
    pub tools: Vec<Value>,
    pub offered: Vec<String>,
    pub messages: Vec<Value>,
    pub step_cap: usize,
}

impl Conversation {
    pub fn main(config: &ClassroomConfig, id: String) -> Self {
        Conversation {
            id,
            parent: None,
            kind: CallKind::Agent,
            system: config.prompt.system.clone(),
            offered: tool_names(&config.prompt.tools),
            tools: config.prompt.tools.clone(),
            messages: Vec::new(),
            step_cap: config.step_cap,
        }
    }

    fn explore(config: &ClassroomConfig, id: String, parent: &str, task: &str) -> Self {
        Conversation {
            id,
            parent: Some(parent.to_string()),
            kind: CallKind::Subagent,
            system: config.prompt.explore_system.clone(),
            offered: tool_names(&config.prompt.explore_tools),
            tools: config.prompt.explore_tools.clone(),
            messages: vec![json!({"role": "user", "content": task})],
            step_cap: config.subagent_step_cap,
        }
    }
}

/// Running totals of one coding request.
pub(crate) struct TaskAcc {
    pub index: usize,
    pub model_time: f64,
    pub calls: usize,
    pub output_tokens: u64,
    pub tool_calls: usize,
    pub tool_errors: usize,
    pub compactions: usize,
}

impl TaskAcc {
    fn add(&mut self, r: &RequestRecord) {
        self.calls += 1;
        self.output_tokens += r.output_tokens;
        if r.kind != CallKind::Title {
            self.model_time += r.wait_s;
        }
    }
}

/// How an agent loop ended.
pub(crate) enum LoopEnd {
    Answered(String),
    Failed(ErrorKind),
    CutOff,
}

fn body(
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
struct Caller<'a> {
    user: usize,
    key: Option<&'a Secret>,
    session: &'a str,
    parent: Option<&'a str>,
    task: usize,
}

/// Sends one call with OpenCode's retries and records it.
async fn call_model(
    shared: &Shared,
    who: &Caller<'_>,
    kind: CallKind,
    body: Value,
    jitter_seed: u64,
) -> (CallOutcome, RequestRecord) {
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
    let mut retries = 0u32;
    let mut retried_kinds = Vec::new();
    let outcome = loop {
        shared
            .status
            .in_flight
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let outcome = shared.transport.call(request.clone()).await;
        shared
            .status
            .in_flight
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        match &outcome.error {
            Some(e) if e.kind.is_retryable() && retries < MAX_RETRIES => {
                let delay = e
                    .retry_after
                    .unwrap_or_else(|| retry_delay(retries, &mut rng));
                retries += 1;
                retried_kinds.push(e.kind);
                shared
                    .status
                    .retries
                    .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                shared.clock.sleep(delay).await;
            }
            _ => break outcome,
        }
    };
    let (output_tokens, token_source) = outcome.output_tokens();
    let record = RequestRecord {
        user: who.user,
        session: who.session.to_string(),
        task: who.task,
        kind,
        started_at: started,
        prompt_tokens: outcome.input_tokens(),
        output_tokens,
        token_source,
        ttft_s: outcome.ttft,
        duration_s: outcome.e2e,
        wait_s: (shared.now() - started).max(0.0),
        retries,
        retried_kinds,
        error_kind: outcome.error.as_ref().map(|e| e.kind),
        tool_calls: outcome.message.tool_calls.len(),
    };
    shared
        .status
        .calls
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let (true, Some(t)) = (record.is_ok(), record.ttft_s) {
        shared.status.add_ttft(t);
    }
    shared.record_request(&record);
    (outcome, record)
}

fn title_body(config: &ClassroomConfig, first_message: &str) -> Value {
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

/// The context limit to compact against: configured, or read from the
/// server's "maximum context length is N tokens", or 32,768.
fn limit_for(config: &ClassroomConfig, overflow_message: Option<&str>) -> u64 {
    config.context_limit.unwrap_or_else(|| {
        overflow_message
            .and_then(|m| m.split("maximum context length is ").nth(1))
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or(32_768)
    })
}

/// Summarises the conversation and restarts it from the summary.
async fn compact(
    shared: &Shared,
    st: &mut Student,
    conv: &mut Conversation,
    acc: &mut TaskAcc,
    overflow: Option<&str>,
) -> Result<(), ErrorKind> {
    let config = &shared.config;
    let limit = limit_for(config, overflow);
    let usable = limit.saturating_sub(compaction::output_reserve(config.output_limit) + 1_000);
    let max_chars = (usable as usize * 3).max(4_000);
    let user = compaction::compaction_prompt(&conv.messages, max_chars);
    let b = body(
        config,
        prompt::compaction_system(),
        &[json!({"role": "user", "content": user})],
        None,
        config.output_limit,
    );
    let who = Caller {
        user: st.user,
        key: st.key.as_ref(),
        session: &conv.id,
        parent: conv.parent.as_deref(),
        task: acc.index,
    };
    let (outcome, record) = call_model(shared, &who, CallKind::Compaction, b, st.rng.gen()).await;
    acc.add(&record);
    if let Some(e) = outcome.error {
        return Err(e.kind);
    }
    acc.compactions += 1;
    let summary = if outcome.message.content.trim().is_empty() {
        "(no summary was produced)".to_string()
    } else {
        outcome.message.content
    };
    let keep = compaction::keep_budget(limit, config.output_limit);
    conv.messages = compacted_messages(&conv.messages, &summary, keep, overflow.is_some());
    Ok(())
}

fn assistant_turn(outcome: &CallOutcome, step: usize) -> (Value, Vec<(String, String, String)>) {
    let calls: Vec<(String, String, String)> = outcome
        .message
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let id = if c.id.is_empty() {
                format!("call_{step}_{i}")
            } else {
                c.id.clone()
            };
            (id, c.name.clone(), c.arguments.clone())
        })
        .collect();
    let content = if outcome.message.content.is_empty() {
        Value::Null
    } else {
        json!(outcome.message.content)
    };
    let mut turn = json!({"role": "assistant", "content": content});
    if !calls.is_empty() {
        turn["tool_calls"] = calls
            .iter()
            .map(|(id, name, args)| json!({"id": id, "type": "function", "function": {"name": name, "arguments": args}}))
            .collect();
    }
    (turn, calls)
}

/// Runs steps until the model answers without tool calls.
pub(crate) fn run_loop<'a>(
    shared: &'a Shared,
    st: &'a mut Student,
    conv: &'a mut Conversation,
    acc: &'a mut TaskAcc,
) -> BoxFuture<'a, LoopEnd> {
    Box::pin(async move {
        let config = &shared.config;
        let mut overflows = 0;
        for step in 0..conv.step_cap {
            if shared.past_drain_limit() {
                return LoopEnd::CutOff;
            }
            let b = body(
                config,
                &conv.system,
                &conv.messages,
                Some(&conv.tools),
                config.output_limit,
            );
            let estimate = (b.to_string().len() / compaction::CHARS_PER_TOKEN) as u64;
            let kind = conv.kind;
            let title = (kind == CallKind::Agent && !st.titled).then(|| {
                st.titled = true;
                let first = conv
                    .messages
                    .iter()
                    .find(|m| m["role"] == "user")
                    .and_then(|m| m["content"].as_str())
                    .unwrap_or("");
                title_body(config, first)
            });
            let (seed_a, seed_b) = (st.rng.gen(), st.rng.gen());
            let who = Caller {
                user: st.user,
                key: st.key.as_ref(),
                session: &conv.id,
                parent: conv.parent.as_deref(),
                task: acc.index,
            };
            let (outcome, record) = match title {
                Some(tb) => {
                    let (step_call, title_call) = tokio::join!(
                        call_model(shared, &who, kind, b, seed_a),
                        call_model(shared, &who, CallKind::Title, tb, seed_b)
                    );
                    acc.add(&title_call.1);
                    step_call
                }
                None => call_model(shared, &who, kind, b, seed_a).await,
            };
            acc.add(&record);
            if let Some(err) = &outcome.error {
                if is_context_overflow(err) && overflows < 2 {
                    overflows += 1;
                    let message = err.message.clone();
                    if let Err(k) = compact(shared, st, conv, acc, Some(&message)).await {
                        return LoopEnd::Failed(k);
                    }
                    continue;
                }
                return LoopEnd::Failed(err.kind);
            }
            overflows = 0;
            let (turn, calls) = assistant_turn(&outcome, step);
            conv.messages.push(turn);
            let total = match outcome.usage {
                Some(u) => u.prompt_tokens + u.completion_tokens,
                None => estimate + record.output_tokens,
            };
            let compact_now = needs_compaction(total, config.context_limit, config.output_limit);
            if calls.is_empty() {
                if compact_now {
                    if let Err(k) = compact(shared, st, conv, acc, None).await {
                        return LoopEnd::Failed(k);
                    }
                    // The answer is final: the next user message follows the
                    // summary directly, without "continue".
                    conv.messages.pop();
                }
                return LoopEnd::Answered(outcome.message.content);
            }
            for (id, name, args) in calls {
                let result = run_tool(shared, st, conv, acc, &name, &args).await;
                let Some(result) = result else {
                    return LoopEnd::CutOff;
                };
                acc.tool_calls += 1;
                acc.tool_errors += usize::from(result.is_error);
                if !result.elapsed.is_zero() {
                    shared.clock.sleep(result.elapsed).await;
                }
                conv.messages
                    .push(json!({"role": "tool", "tool_call_id": id, "content": result.content}));
            }
            if compact_now {
                if let Err(k) = compact(shared, st, conv, acc, None).await {
                    return LoopEnd::Failed(k);
                }
            }
        }
        LoopEnd::CutOff
    })
}

/// Runs one tool call; a `task` runs a subagent. `None`: the run's drain
/// limit cut the subagent off.
async fn run_tool(
    shared: &Shared,
    st: &mut Student,
    conv: &Conversation,
    acc: &mut TaskAcc,
    name: &str,
    args: &str,
) -> Option<ToolResult> {
    let step = {
        let mut ctx = ToolContext {
            workspace: &mut st.workspace,
            shell: &mut st.shell,
            rng: &mut st.rng,
            offered: &conv.offered,
        };
        execute(&mut ctx, name, args)
    };
    let (description, prompt, subagent_type) = match step {
        ToolStep::Done(r) => return Some(r),
        ToolStep::Subagent {
            description,
            prompt,
            subagent_type,
        } => (description, prompt, subagent_type),
    };
    let error = |content: String| ToolResult {
        content,
        is_error: true,
        elapsed: Duration::ZERO,
    };
    if !matches!(subagent_type.as_str(), "explore" | "general") {
        return Some(error(format!(
            "Error: unknown subagent_type {subagent_type:?}; available: explore"
        )));
    }
    let id = session_id(&mut st.rng);
    let mut sub = Conversation::explore(&shared.config, id, &conv.id, &prompt);
    match run_loop(shared, st, &mut sub, acc).await {
        LoopEnd::Answered(text) if text.trim().is_empty() => Some(ToolResult { content: format!("(task {description:?} finished without an answer)"), is_error: false, elapsed: Duration::ZERO }),
        LoopEnd::Answered(text) => Some(ToolResult { content: text, is_error: false, elapsed: Duration::ZERO }),
        LoopEnd::Failed(kind) => Some(error(format!("Error: the {subagent_type} task {description:?} failed: {kind}"))),
        LoopEnd::CutOff if shared.past_drain_limit() => None,
        LoopEnd::CutOff => Some(error(format!("Error: the {subagent_type} task {description:?} stopped after {} steps without an answer", shared.config.subagent_step_cap))),
    }
}

/// Runs one coding request of a student to its end and records it.
pub(crate) async fn coding_request(
    shared: &Shared,
    st: &mut Student,
    conv: &mut Conversation,
    index: usize,
    text: &str,
) -> TaskRecord {
    let start = shared.now();
    conv.messages.push(json!({"role": "user", "content": text}));
    let mut acc = TaskAcc {
        index,
        model_time: 0.0,
        calls: 0,
        output_tokens: 0,
        tool_calls: 0,
        tool_errors: 0,
        compactions: 0,
    };
    let end = run_loop(shared, st, conv, &mut acc).await;
    let (outcome, error_kind) = match end {
        LoopEnd::Answered(_) => (TaskOutcome::Completed, None),
        LoopEnd::Failed(k) => (TaskOutcome::Failed, Some(k)),
        LoopEnd::CutOff => (TaskOutcome::CutOff, None),
    };
    let record = TaskRecord {
        user: st.user,
        index,
        start,
        end: shared.now(),
        model_time_s: acc.model_time,
        calls: acc.calls,
        output_tokens: acc.output_tokens,
        tool_calls: acc.tool_calls,
        tool_errors: acc.tool_errors,
        compactions: acc.compactions,
        outcome,
        error_kind,
    };
    let counter = if outcome == TaskOutcome::Completed {
        &shared.status.completed
    } else {
        &shared.status.failed
    };
    counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    shared.record_task(&record);
    record
}
