//! The classroom agent against a scripted fake model on a paused clock:
//! retries, per-user keys and sessions, and the OpenCode-like request shape.

use crate::classroom_support;

use std::sync::Arc;
use std::time::Duration;

use classroom_support::{agent_steps, one_student, run, ScriptedModel, Seen};
use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::openai::{CallError, ErrorKind};
use codendum_core::results::classroom_records::{CallKind, TaskOutcome};

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
    let explore_tokens = sub[0].body.to_string().len() / 4;
    assert!(
        (2_600..=3_700).contains(&explore_tokens),
        "explore ≈ {explore_tokens} tokens (OpenCode: 3,194)"
    );
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
async fn a_401_is_not_retried_and_fails_the_request() {
    let clock = Clock::real();
    let model = Arc::new(ScriptedModel::new(clock.clone()));
    model.agent_failures.lock().unwrap().push_back(CallError {
        kind: ErrorKind::Http401,
        status: Some(401),
        message: "invalid key".into(),
        retry_after: None,
    });
    let (outcome, _) = run(&one_student(None), model.clone(), clock).await;
    assert_eq!(agent_steps(&model.seen()).len(), 1);
    let task = &outcome.tasks[0];
    assert_eq!(
        (task.outcome, task.error_kind),
        (TaskOutcome::Failed, Some(ErrorKind::Http401))
    );
    assert_eq!(outcome.summary.retries, 0);
    assert_eq!(
        outcome.summary.errors_by_kind.get(&ErrorKind::Http401),
        Some(&1)
    );
}

#[tokio::test(start_paused = true)]
async fn the_step_cap_and_the_drain_limit_cut_requests_off() {
    let clock = Clock::real();
    let model = Arc::new(ScriptedModel::new(clock.clone()));
    let mut config = one_student(None);
    config.step_cap = 2;
    let (outcome, _) = run(&config, model.clone(), clock.clone()).await;
    assert_eq!(agent_steps(&model.seen()).len(), 2);
    assert_eq!(outcome.tasks[0].outcome, TaskOutcome::CutOff);
    assert_eq!(outcome.summary.cut_off, 1);

    let model = Arc::new(ScriptedModel::new(clock.clone()));
    let mut config = one_student(None);
    config.duration = Duration::from_secs(4);
    config.drain_limit = Some(Duration::from_secs(1));
    let (outcome, _) = run(&config, model.clone(), clock).await;
    let task = &outcome.tasks[0];
    assert_eq!(task.outcome, TaskOutcome::CutOff);
    assert!(
        task.end >= 5.0 && task.end < 5.0 + 3.0 + 12.0,
        "{}",
        task.end
    );
    assert_eq!(
        agent_steps(&model.seen()).len(),
        2,
        "steps start at 0 s and 3 s; the next one would start past 5 s"
    );
}
