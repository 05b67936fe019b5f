//! Compaction in the classroom agent: at the threshold, after a final
//! answer, and when the server rejects a prompt as too long.

use crate::classroom_support;

use std::sync::Arc;
use std::time::Duration;

use classroom_support::{agent_steps, one_student, run, ScriptedModel};
use codendum::classroom::compaction::{CONTINUE, RECAP_QUESTION};
use codendum_core::clock::Clock;
use codendum_core::openai::{CallError, ErrorKind};
use codendum_core::results::classroom_records::{CallKind, TaskOutcome};

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
async fn a_final_answer_past_the_threshold_compacts_without_continue() {
    let clock = Clock::real();
    let mut fake = ScriptedModel::new(clock.clone());
    fake.big_prompt = Some(("T E S T S", 60_000));
    let model = Arc::new(fake);
    let mut config = one_student(Some(65_536));
    config.set_follow_ups(1);
    config
        .set_pauses(Duration::from_secs(1), Duration::from_secs(1))
        .expect("pauses");
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
