//! The OpenCode-like agent loop: every step resends the whole conversation
//! with the tools, runs the tool calls of the answer against the student's
//! project, and loops until the model answers without tool calls. Model calls
//! are retried like OpenCode's, and the context is compacted near the limit.

use std::sync::Arc;
use std::time::Duration;

use futures::future::BoxFuture;
use rand::Rng;
use serde_json::{json, Value};

use super::calls::{body, call_model, lend_conversation, take_back, title_body, Caller};
use super::compaction::{self, compacted_messages, is_context_overflow, needs_compaction};
use super::config::ClassroomConfig;
use super::prompt;
use super::session::{session_id, Conversation, LoopEnd, Shared, Student, TaskAcc};
use super::status::RunningTask;
use super::tools::{execute, ToolContext, ToolResult, ToolStep};
use codendum_core::class::sessions;
use codendum_core::openai::{CallOutcome, ErrorKind};
use codendum_core::results::classroom_records::{CallKind, CallRecord, TaskOutcome, TaskRecord};

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
        prompt::compaction_system().to_string(),
        vec![json!({"role": "user", "content": user})],
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
    let seed = st.rng.gen();
    let (outcome, record) = call_model(shared, &who, CallKind::Compaction, b.into(), seed).await;
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
            if shared.past_drain_limit() || shared.stopping() || st.leaving() {
                return LoopEnd::CutOff;
            }
            let (outcome, record) = step_call(shared, st, conv, acc).await;
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
            conv.steps_done += 1;
            let total = match outcome.usage {
                Some(u) => u.prompt_tokens + u.completion_tokens,
                None => conversation_estimate(conv) + record.output_tokens,
            };
            let (turn, calls) = assistant_turn(&outcome, step);
            if conv.first_answer.is_none() {
                if conv.kind == CallKind::Agent {
                    conv.row = config
                        .class
                        .agent
                        .sessions
                        .as_ref()
                        .filter(|sh| sh.prompt_tokens.is_some())
                        .map(|sh| sessions::row_index_for(sh, &turn));
                }
                conv.first_answer = Some(turn.clone());
            }
            conv.messages.push(turn);
            let compact_now = needs_compaction(total, config.context_limit, config.output_limit)
                || conv.compact_at.is_some_and(|at| total >= at);
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
            if run_tool_calls(shared, st, conv, acc, calls, step)
                .await
                .is_none()
            {
                return LoopEnd::CutOff;
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

/// One step's model call (with the session's title call alongside on the
/// agent's first step), added to the task. The conversation lends its parts
/// to the call's body for the call's time. Returns the outcome and its
/// record.
async fn step_call(
    shared: &Shared,
    st: &mut Student,
    conv: &mut Conversation,
    acc: &mut TaskAcc,
) -> (CallOutcome, CallRecord) {
    let config = &shared.config;
    let kind = conv.kind;
    let title = (kind == CallKind::Agent && !st.titled).then(|| {
        st.titled = true;
        let first = conv
            .messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .unwrap_or("");
        Arc::new(title_body(config, first))
    });
    let b = lend_conversation(config, conv);
    let (seed_a, seed_b) = (st.rng.gen(), st.rng.gen());
    let who = Caller {
        user: st.user,
        key: st.key.as_ref(),
        session: &conv.id,
        parent: conv.parent.as_deref(),
        task: acc.index,
    };
    let sent = Arc::clone(&b);
    let (outcome, record) = match title {
        Some(tb) => {
            let (step_call, title_call) = tokio::join!(
                call_model(shared, &who, kind, sent, seed_a),
                call_model(shared, &who, CallKind::Title, tb, seed_b)
            );
            acc.add(&title_call.1);
            step_call
        }
        None => call_model(shared, &who, kind, sent, seed_a).await,
    };
    take_back(conv, b);
    acc.add(&record);
    (outcome, record)
}

/// The client's estimate, in tokens, of the conversation's prompt as it
/// stands (system prompt, tools and messages): what a step's size is taken
/// to be when the server reports no usage, and what a sized row's growth
/// is measured against.
fn conversation_estimate(conv: &Conversation) -> u64 {
    super::sizes::estimate(
        conv.system.len()
            + serde_json::to_string(&conv.tools).map_or(0, |t| t.len())
            + serde_json::to_string(&conv.messages).map_or(0, |m| m.len()),
    )
}

/// Tokens of notes that grow the session's next prompt as its recorded
/// row grew at main-agent call `step` of coding request `request` (the
/// row's prompts by call, [`SessionShapes::prompt_tokens_at`]); `None`
/// when the session has no sized row, or is past its row's requests.
///
/// After a step (`tools_added`: the tokens its tool results hold), the
/// call grows by one draw of the class's appended tokens scaled so that
/// its mean is the row's growth at this call: the recorded burstiness
/// (most steps add little, a few add a file) around the row's own pace,
/// the tools' results counted in. At a follow-up request (`None`), the
/// person's message takes the prompt up to the row's size at the
/// request's first call, by at most the row's growth between the
/// requests. A session's prompts never shrink.
///
/// [`SessionShapes::prompt_tokens_at`]: codendum_core::class::SessionShapes::prompt_tokens_at
pub(crate) fn row_growth(
    config: &ClassroomConfig,
    rng: &mut impl Rng,
    conv: &Conversation,
    request: usize,
    step: u32,
    tools_added: Option<u64>,
) -> Option<u64> {
    let shapes = config.class.agent.sessions.as_ref()?;
    let row = conv.row?;
    let target = shapes.prompt_tokens_at(row, request, step)?;
    let before = match (step, request) {
        (0, 0) => target,
        (0, r) => shapes
            .prompt_tokens_at(row, r - 1, u32::MAX)
            .unwrap_or(target),
        (s, r) => shapes.prompt_tokens_at(row, r, s - 1).unwrap_or(target),
    };
    let recorded = target.saturating_sub(before);
    let Some(added) = tools_added else {
        return Some(
            target
                .saturating_sub(conversation_estimate(conv))
                .min(recorded),
        );
    };
    let want = match &config.class.agent.appended_tokens {
        Some(d) if d.mean() > 0.0 => {
            (d.sample(rng).max(0.0) * recorded as f64 / d.mean()).round() as u64
        }
        _ => recorded,
    };
    Some(want.saturating_sub(added))
}

/// Appends `pad` tokens of notes (at `offset`) to a message's text.
fn pad_message(message: &mut Value, pad: u64, offset: usize) {
    let padded = format!(
        "{}\n\n{}",
        message["content"].as_str().unwrap_or(""),
        super::sizes::notes(pad, offset)
    );
    message["content"] = json!(padded);
}

/// Runs an answer's tool calls in order, each result appended to the
/// conversation; `step` is the answer's step in its coding request. `None`:
/// the run's drain limit cut a subagent off.
async fn run_tool_calls(
    shared: &Shared,
    st: &mut Student,
    conv: &mut Conversation,
    acc: &mut TaskAcc,
    calls: Vec<(String, String, String)>,
    step: usize,
) -> Option<()> {
    let first = conv.messages.len();
    let mut results_len = 0;
    for (id, name, args) in calls {
        let result = run_tool(shared, st, conv, acc, &name, &args).await?;
        acc.tool_calls += 1;
        acc.tool_errors += usize::from(result.is_error);
        if !result.elapsed.is_zero() {
            shared.clock.sleep(result.elapsed).await;
        }
        results_len += result.content.len();
        conv.messages
            .push(json!({"role": "tool", "tool_call_id": id, "content": result.content}));
    }
    let agent = &shared.config.class.agent;
    // The session's recorded row, when it has sizes, takes precedence: the
    // next call's prompt grows towards the row's size at the next step.
    let next = u32::try_from(step + 1).unwrap_or(u32::MAX);
    let added = super::sizes::estimate(results_len);
    if let Some(pad) = row_growth(
        &shared.config,
        &mut st.rng,
        conv,
        acc.index,
        next,
        Some(added),
    ) {
        let offset = conv.messages.len();
        if let Some(last) = conv.messages[first..].last_mut().filter(|_| pad > 0) {
            pad_message(last, pad, offset);
        }
        return Some(());
    }
    // The class's prompt sizes by call: the next call's prompt grows by
    // notes towards the size at the session's rank, by at most one draw of
    // the appended tokens (a step adds what a step adds; a session whose
    // rank puts it far below its place's sizes catches up over steps, not
    // in one prefill), and never shrinks.
    let by_call = conv
        .growth_rank
        .and_then(|u| agent.prompt_tokens_at(conv.steps_done, u));
    if let Some(target) = by_call {
        let have = conversation_estimate(conv);
        let step = agent
            .appended_tokens
            .as_ref()
            .map_or(u64::MAX, |d| d.sample(&mut st.rng).max(0.0) as u64);
        let pad = (target.max(0.0) as u64).saturating_sub(have).min(step);
        let offset = conv.messages.len();
        if let Some(last) = conv.messages[first..].last_mut().filter(|_| pad > 0) {
            pad_message(last, pad, offset);
        }
        return Some(());
    }
    // The class's appended tokens: the step's results grow by notes up to
    // the drawn size (never shrink: the agent needs what its tools said).
    if let Some(d) = &agent.appended_tokens {
        let target = d.sample(&mut st.rng).max(0.0) as u64;
        let have = super::sizes::estimate(results_len);
        // Notes of another offset for each step, as tool output differs.
        let offset = conv.messages.len();
        if let Some(last) = conv.messages[first..].last_mut().filter(|_| target > have) {
            pad_message(last, target - have, offset);
        }
    }
    Some(())
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
        LoopEnd::CutOff if shared.past_drain_limit() || shared.stopping() || st.leaving() => None,
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
    let open = shared.status.task_opened(RunningTask {
        user: st.user,
        index,
        start_s: start,
    });
    conv.messages.push(json!({"role": "user", "content": text}));
    // A follow-up of a session on a sized row: the person's message grows
    // the prompt towards the row's size at the request's first call.
    if let Some(pad) = row_growth(&shared.config, &mut st.rng, conv, index, 0, None) {
        let offset = conv.messages.len();
        if let Some(last) = conv.messages.last_mut().filter(|_| pad > 0) {
            pad_message(last, pad, offset);
        }
    }
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
    shared.status.task_recorded(outcome);
    shared.record_task(&record);
    shared.status.closed(open);
    record
}

#[cfg(test)]
mod row_growth_tests {
    use super::*;
    use codendum_core::class::sessions::RequestPrompt;
    use codendum_core::class::{Class, Distribution, SessionShapes};
    use rand::SeedableRng;
    use rand_chacha::ChaCha8Rng;

    /// A config whose class draws one sized row: 6 calls from 10K to 20K
    /// (2K a call), then a follow-up at 23K; appended tokens `appended`.
    fn config(appended: Option<Distribution>) -> ClassroomConfig {
        let mut class = (*Class::lab()).clone();
        let sized = |first, last| RequestPrompt { first, last };
        class.agent.sessions = SessionShapes::from_rows_and_prompts(
            "t",
            vec![(
                vec![6, 3],
                Some(vec![sized(10_000, 20_000), sized(23_000, 24_000)]),
            )],
        );
        class.agent.appended_tokens = appended;
        let mut c = ClassroomConfig::new("m", Some(65_536));
        c.class = Arc::new(class);
        c
    }

    #[test]
    fn a_step_grows_by_appended_draws_scaled_to_the_row_s_pace() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        // Three steps in four add nothing, one adds 4×: the mean is 1.
        let bursty = Distribution::from_observations("t", &[0.0, 0.0, 0.0, 4.0], 10);
        let c = config(bursty);
        let mut conv = Conversation::main(&c, "ses_a".into());
        assert_eq!(
            row_growth(&c, &mut rng, &conv, 0, 1, Some(0)),
            None,
            "no row yet"
        );
        conv.row = Some(0);
        let pads: Vec<u64> = (0..400)
            .map(|_| row_growth(&c, &mut rng, &conv, 0, 1, Some(100)).unwrap())
            .collect();
        // 0 or 4 × 2K, less the 100 tokens the tools returned.
        assert!(pads.iter().all(|&p| p == 0 || p == 7_900), "{pads:?}");
        let mean = pads.iter().sum::<u64>() as f64 / pads.len() as f64;
        assert!((1_500.0..=2_500.0).contains(&mean), "mean {mean}");
        // Past the row's requests: the class's other fields decide.
        assert_eq!(row_growth(&c, &mut rng, &conv, 2, 0, Some(0)), None);
    }

    #[test]
    fn without_appended_tokens_a_step_grows_by_the_row_s_pace_and_a_follow_up_catches_up() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        let c = config(None);
        let mut conv = Conversation::main(&c, "ses_b".into());
        conv.row = Some(0);
        assert_eq!(
            row_growth(&c, &mut rng, &conv, 0, 3, Some(500)),
            Some(1_500)
        );
        // The follow-up's message: from the conversation's size up to 23K,
        // by at most the recorded 3K between the requests.
        let have = conversation_estimate(&conv);
        assert!(have < 20_000, "{have}");
        assert_eq!(row_growth(&c, &mut rng, &conv, 1, 0, None), Some(3_000));
        // A conversation already at about 21.5K: up to 23K exactly.
        let more = 4 * (21_500 - have) as usize;
        conv.messages
            .push(json!({"role": "user", "content": "x".repeat(more)}));
        let have = conversation_estimate(&conv);
        assert!((21_500..22_000).contains(&have), "{have}");
        assert_eq!(
            row_growth(&c, &mut rng, &conv, 1, 0, None),
            Some(23_000 - have)
        );
    }
}
