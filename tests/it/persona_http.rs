//! The persona driven through HTTP by the classroom's own OpenCode-like
//! client and built-in scenario tools: 50 students, one coding request each,
//! against the twin on a loopback port. Checks that the requests make the
//! calls and output tokens the default class draws (its means, with the
//! title beside each first step) and that the persona's tool calls are valid
//! for the offered schemas.

use std::sync::Arc;
use std::time::Duration;

use codendum::classroom::{run_classroom, ClassroomConfig, LiveStatus, MemorySink};
use codendum::client::{ClientOptions, HttpClient};
use codendum_core::clock::Clock;
use codendum_core::openai::Transport;
use codendum_core::profile::Profile;
use codendum_core::results::classroom_records::{CallKind, TaskOutcome};
use codendum_twin::persona::AgentPersona;
use codendum_twin::{start, TwinOptions};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifty_sessions_over_http_follow_the_class() {
    // Fast enough for CI, slow enough for a loaded machine: at 200x a
    // 2-core machine cannot keep up with the clock (the students fall
    // behind and 6-12 of 50 were cut off at the end of the run), and at
    // 100x with 16 test threads beside it 6 of 50 were (2026-12-02, load
    // 7); at 40x the same counts come out with room to spare.
    let clock = Clock::scaled(40.0);
    let profile = Profile::load("classroom-64k-high-concurrency").expect("profile");
    let mut opts = TwinOptions::new(profile);
    opts.clock = clock.clone();
    opts.responder = Arc::new(AgentPersona::new(11));
    opts.seed = 11;
    let twin = start(opts, "127.0.0.1:0".parse().unwrap())
        .await
        .expect("twin");
    let client = HttpClient::new(
        &codendum_core::access::BaseUrl::parse(twin.base_url()).expect("base URL"),
        ClientOptions {
            clock: clock.clone(),
            max_connections: 128,
            ..ClientOptions::default()
        },
    )
    .expect("client");
    let transport: Arc<dyn Transport> = Arc::new(client);

    let mut config = ClassroomConfig::new("qwen3-coder", Some(65_536));
    config.users = 50;
    config.set_follow_ups(0);
    config.duration = Duration::from_secs(60);
    config.ramp_up = Duration::from_secs(30);
    config.seed = 5;
    let sink = Arc::new(MemorySink::default());
    let status = Arc::new(LiveStatus::new(clock.clone()));
    let outcome = run_classroom(&config, transport, clock, sink, status)
        .await
        .expect("class");
    twin.shutdown().await;

    let done: Vec<_> = outcome
        .tasks
        .iter()
        .filter(|t| t.outcome == TaskOutcome::Completed)
        .collect();
    let others: Vec<String> = outcome
        .tasks
        .iter()
        .filter(|t| t.outcome != TaskOutcome::Completed)
        .map(|t| format!("{:?} after {} calls", t.outcome, t.calls))
        .collect();
    assert!(
        done.len() >= 45,
        "{} of 50 coding requests completed; the others: {others:?}",
        done.len()
    );
    let n = done.len() as f64;
    let calls = done.iter().map(|t| t.calls as f64).sum::<f64>() / n;
    let tokens = done.iter().map(|t| t.output_tokens as f64).sum::<f64>() / n;
    let tool_calls: usize = done.iter().map(|t| t.tool_calls).sum();
    let tool_errors: usize = done.iter().map(|t| t.tool_errors).sum();
    eprintln!(
        "{} coding requests: {calls:.1} model calls and {tokens:.0} output tokens each; {tool_calls} tool calls, {tool_errors} tool errors",
        done.len()
    );
    // What the class implies for a first request: its calls and a title,
    // its subagents' steps at their size, one final answer, agent steps for
    // the rest (answers never shorter than what they must say, hence the
    // wider upper bound).
    let a = &config.class.agent;
    let class_calls = a.calls_per_request.mean() + 1.0;
    let sub_calls = a.subagent_share * a.subagent_calls.mean();
    let o = &a.output_tokens;
    let implied = (class_calls - 2.0 - sub_calls) * o.agent_step.mean()
        + sub_calls * o.subagent_step.mean()
        + o.final_answer.mean()
        + o.title.mean();
    assert!(
        (0.7 * class_calls..=1.35 * class_calls).contains(&calls),
        "calls per coding request {calls:.1} against the class's {class_calls:.1}"
    );
    assert!(
        (0.75 * implied..=1.4 * implied).contains(&tokens),
        "output tokens per coding request {tokens:.0} against the class's {implied:.0}"
    );
    // Every call parses against its schema: no invalid-argument errors. An
    // edit may still miss when a file changed under it; allow a few.
    assert!(
        (tool_errors as f64) <= 0.03 * tool_calls as f64,
        "{tool_errors} tool errors of {tool_calls} calls"
    );
    assert!(
        outcome.summary.errors == 0,
        "model call errors: {:?}",
        outcome.summary.errors_by_kind
    );
    assert!(
        outcome
            .requests
            .iter()
            .any(|r| r.kind == CallKind::Subagent),
        "no subagent was ever used"
    );
}
