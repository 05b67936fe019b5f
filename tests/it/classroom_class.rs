//! A small class (3 students) against a scripted fake model on a paused
//! clock: the records, the summary, the live status and repeatability.

use crate::classroom_support;

use std::sync::Arc;
use std::time::Duration;

use classroom_support::{run, ScriptedModel};
use codendum::classroom::{
    run_classroom, ClassroomConfig, ClassroomOutcome, JsonlSink, LiveStatus,
};
use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::results::classroom_records::{CallKind, TaskOutcome};

#[tokio::test(start_paused = true)]
async fn a_small_class_produces_task_and_request_records_and_a_summary() {
    let clock = Clock::real();
    let model = Arc::new(ScriptedModel::new(clock.clone()));
    let mut config = ClassroomConfig::new("test-model", Some(65_536));
    config.users = 3;
    config.duration = Duration::from_secs(240);
    config.ramp_up = Duration::from_secs(60);
    config
        .set_pauses(Duration::from_secs(20), Duration::from_secs(30))
        .expect("pauses");
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
    // The sink the app ships: every record kept in memory too.
    assert_eq!(sink.requests(), outcome.requests);
    assert_eq!(sink.tasks().len(), outcome.tasks.len());
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
