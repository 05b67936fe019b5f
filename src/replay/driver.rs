//! Sends a trace again: every call with a prompt of its recorded size built
//! from its blocks ([`codendum_core::trace::text`]), its recorded output
//! length (`max_tokens` = `min_tokens`, `ignore_eos`), its session headers,
//! and its timing: a call with a dependency waits for that call's answer
//! plus the recorded gap, the others start at their recorded arrival;
//! `speed` divides both.
//!
//! A session's conversation is carried forward as an agent carries it: a
//! chat call that shares the whole prompt of its session's previous call
//! (its blocks say so, [`Trace::conversations`]) sends that call's
//! messages, the answer the server gave it as an `assistant` message, and
//! a new `user` message for the rest of its recorded length, whatever the
//! call waited for (a main agent's step after a subagent waits for the
//! subagent's answer but carries on its own conversation). So the server's
//! prefix cache sees the answer again, as it does in a real session (vLLM
//! caches the blocks of generated tokens too).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::classroom::{CallRecord, RecordSink, TaskOutcome, TaskRecord};
use codendum_core::clock::Clock;
use codendum_core::openai::{CallRequest, Endpoint, Transport};
use codendum_core::results::classroom_records::CallKind;
use codendum_core::target::Secret;
use codendum_core::trace::text::prompt_text;
use codendum_core::trace::Trace;

/// How a trace is sent.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// The model requested.
    pub model: String,
    /// Timeline compression: 2 sends twice as fast as recorded.
    pub speed: f64,
    /// Salt of the synthetic text (a new salt: nothing cached from an
    /// earlier replay is hit).
    pub salt: u64,
    /// Chat or completions.
    pub endpoint: Endpoint,
    /// The key presented (never written).
    pub api_key: Option<Secret>,
    /// What the server's chat template adds, taken off each recorded
    /// prompt length.
    pub template: Template,
}

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

/// What a replay returns: every call's record and every coding request's.
#[derive(Debug, Clone, Default)]
pub struct ReplayOutcome {
    /// The calls, in the order they finished.
    pub requests: Vec<CallRecord>,
    /// The coding requests (where the trace tells them).
    pub tasks: Vec<TaskRecord>,
    /// Root sessions (the `user` of the records).
    pub users: usize,
}

/// What a sent call leaves for the calls that wait for it.
#[derive(Debug)]
struct Sent {
    /// When its answer ended, seconds since the replay started.
    end: f64,
    /// Whether it succeeded.
    ok: bool,
    /// The messages it sent.
    messages: Vec<serde_json::Value>,
    /// The answer's text.
    answer: String,
}

/// The request body of one call.
pub fn call_body(config: &ReplayConfig, prompt: &str, output_tokens: u64) -> serde_json::Value {
    crate::bench::prompt::request_body(
        config.endpoint,
        &config.model,
        prompt,
        output_tokens.clamp(1, u64::from(u32::MAX)) as u32,
    )
}

/// The `user` index of every call: its root session's place among the
/// roots in order of their first call; calls without a session share one
/// index after the roots. Returns the indices and the number of users.
fn users_of(trace: &Trace) -> (Vec<usize>, usize) {
    let roots = trace.roots();
    let mut index: HashMap<String, usize> = HashMap::new();
    for r in roots.iter().flatten() {
        let n = index.len();
        index.entry(r.clone()).or_insert(n);
    }
    let lone = index.len();
    let users = roots
        .iter()
        .map(|r| r.as_ref().map_or(lone, |r| index[r]))
        .collect::<Vec<_>>();
    let count = if users.contains(&lone) {
        lone + 1
    } else {
        lone
    };
    (users, count.max(1))
}

/// Replays `trace` through `transport` on `clock`; records go to `sink` as
/// calls finish. Once `stop` turns true no further call is sent (those in
/// flight finish).
pub async fn run_replay(
    trace: &Trace,
    config: &ReplayConfig,
    transport: Arc<dyn Transport>,
    clock: Clock,
    sink: Arc<dyn RecordSink>,
    stop: Option<watch::Receiver<bool>>,
) -> ReplayOutcome {
    let origin = clock.now_secs();
    let speed = if config.speed > 0.0 {
        config.speed
    } else {
        1.0
    };
    let (users, user_count) = users_of(trace);
    let mut senders = Vec::with_capacity(trace.calls.len());
    let mut receivers = Vec::with_capacity(trace.calls.len());
    for _ in &trace.calls {
        let (tx, rx) = watch::channel(None::<Arc<Sent>>);
        senders.push(tx);
        receivers.push(rx);
    }
    let records = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut tasks = tokio::task::JoinSet::new();
    let conversations = trace.conversations();
    for (i, (call, done)) in trace.calls.iter().cloned().zip(senders).enumerate() {
        let wait_for = call.after.map(|d| (receivers[d.call].clone(), d.gap_s));
        // The earlier call whose conversation this call carries on, with the
        // tokens it covered (its prompt and answer).
        let carries = conversations[i]
            .filter(|_| config.endpoint == Endpoint::Chat)
            .map(|j| {
                let previous = &trace.calls[j];
                (
                    receivers[j].clone(),
                    previous.input_tokens + previous.output_tokens,
                )
            });
        let transport = transport.clone();
        let clock = clock.clone();
        let sink = sink.clone();
        let records = records.clone();
        let stop = stop.clone();
        let user = users[i];
        let template = config.template;
        let block_size = trace.block_size;
        let salt = config.salt;
        let fresh_body = move |covered: Option<u64>| {
            // The recorded prompt less what the history already holds and
            // what the template adds (around a lone message, or a new turn).
            let (covered, added) = match covered {
                Some(c) => (c, template.turn_tokens),
                None => (0, template.message_tokens),
            };
            let tokens = call
                .input_tokens
                .saturating_sub(covered)
                .saturating_sub(added)
                .max(1);
            let skip = (covered / u64::from(block_size.max(1))) as usize;
            let ids = call.hash_ids.get(skip..).unwrap_or(&[]);
            prompt_text(ids, tokens, block_size, salt, i as u64)
        };
        let base_body = call_body(config, "", call.output_tokens);
        let api_key = config.api_key.clone();
        let endpoint = config.endpoint;
        tasks.spawn(async move {
            let start = match wait_for {
                Some((rx, gap)) => {
                    // A dependency that never ends (its task is gone): go now.
                    let end = match answer_of(rx).await {
                        Some(p) => p.end,
                        None => clock.now_secs() - origin,
                    };
                    end + gap / speed
                }
                None => call.at_s / speed,
            };
            // The carried call has ended before the call it waits for in
            // any recording; waiting for it anyway costs nothing then.
            let previous = match carries {
                Some((rx, covered)) => answer_of(rx).await.map(|p| (p, covered)),
                None => None,
            };
            let mut messages = Vec::new();
            let covered = match &previous {
                Some((p, covered)) if p.ok => {
                    messages.extend(p.messages.iter().cloned());
                    messages.push(serde_json::json!({"role": "assistant", "content": p.answer}));
                    Some(*covered)
                }
                _ => None,
            };
            messages.push(serde_json::json!({"role": "user", "content": fresh_body(covered)}));
            let mut body = base_body;
            match endpoint {
                Endpoint::Chat => body["messages"] = serde_json::Value::Array(messages.clone()),
                Endpoint::Completions => {
                    body["prompt"] = messages[messages.len() - 1]["content"].clone()
                }
            }
            clock
                .sleep_until(Duration::from_secs_f64(origin + start.max(0.0)))
                .await;
            if stop.as_ref().is_some_and(|s| *s.borrow()) {
                return;
            }
            let mut headers = Vec::new();
            if let Some(s) = &call.session {
                headers.push(("x-session-id".to_string(), s.clone()));
            }
            if let Some(p) = &call.parent {
                headers.push(("x-parent-session-id".to_string(), p.clone()));
            }
            let started_at = clock.now_secs() - origin;
            let outcome = transport
                .call(CallRequest {
                    endpoint,
                    body,
                    api_key,
                    headers,
                    record_gaps: false,
                })
                .await;
            let ended = clock.now_secs() - origin;
            let (output_tokens, token_source) = outcome.output_tokens();
            let record = CallRecord {
                user,
                session: call.session.clone().unwrap_or_else(|| format!("call-{i}")),
                task: call.task.unwrap_or(0),
                kind: call.kind.unwrap_or(CallKind::Agent),
                started_at,
                prompt_tokens: outcome.input_tokens(),
                output_tokens,
                token_source,
                ttft_s: outcome.ttft,
                duration_s: outcome.e2e,
                wait_s: ended - started_at,
                retries: 0,
                retried_kinds: Vec::new(),
                error_kind: outcome.error.as_ref().map(|e| e.kind),
                tool_calls: outcome.message.tool_calls.len(),
            };
            let _ = sink.request(&record);
            if let Ok(mut v) = records.lock() {
                v.push((call.task.is_some(), record));
            }
            let _ = done.send(Some(Arc::new(Sent {
                end: ended,
                ok: outcome.is_ok(),
                messages,
                answer: outcome.message.content.clone(),
            })));
        });
    }
    drop(receivers);
    while tasks.join_next().await.is_some() {}
    let done: Vec<(bool, CallRecord)> = records.lock().map(|v| v.clone()).unwrap_or_default();
    let with_task: Vec<CallRecord> = done
        .iter()
        .filter(|(t, _)| *t)
        .map(|(_, r)| r.clone())
        .collect();
    let task_records = tasks_of(&with_task);
    for t in &task_records {
        let _ = sink.task(t);
    }
    ReplayOutcome {
        requests: done.into_iter().map(|(_, r)| r).collect(),
        tasks: task_records,
        users: user_count,
    }
}

/// What a sent call left, once it ended (`None`: its task is gone).
async fn answer_of(mut rx: watch::Receiver<Option<Arc<Sent>>>) -> Option<Arc<Sent>> {
    rx.wait_for(Option::is_some)
        .await
        .ok()
        .and_then(|v| v.clone())
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
            body,
            api_key: None,
            headers: Vec::new(),
            record_gaps: false,
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

/// The coding requests of replayed calls: per (user, task), from the first
/// call's start to the last one's end; completed when every call succeeded.
pub fn tasks_of(records: &[CallRecord]) -> Vec<TaskRecord> {
    let mut groups: BTreeMap<(usize, usize), Vec<&CallRecord>> = BTreeMap::new();
    for r in records {
        groups.entry((r.user, r.task)).or_default().push(r);
    }
    groups
        .into_iter()
        .map(|((user, index), calls)| {
            let failed = calls.iter().find(|r| !r.is_ok());
            TaskRecord {
                user,
                index,
                start: calls.iter().map(|r| r.started_at).fold(f64::MAX, f64::min),
                end: calls
                    .iter()
                    .map(|r| r.started_at + r.wait_s)
                    .fold(0.0, f64::max),
                model_time_s: TaskRecord::model_time_of(calls.iter().copied()),
                calls: calls.len(),
                output_tokens: calls.iter().map(|r| r.output_tokens).sum(),
                tool_calls: 0,
                tool_errors: 0,
                compactions: calls
                    .iter()
                    .filter(|r| r.kind == CallKind::Compaction)
                    .count(),
                outcome: if failed.is_some() {
                    TaskOutcome::Failed
                } else {
                    TaskOutcome::Completed
                },
                error_kind: failed.and_then(|r| r.error_kind),
            }
        })
        .collect()
}
