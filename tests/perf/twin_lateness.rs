//! The twin's engine task records how late each step's tokens were handed
//! over (`StepLateness`) and shows it on `/metrics`.

use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_twin::runner::StepLateness;
use codendum_twin::{start, TwinOptions};
use serde_json::json;

#[test]
fn lateness_record_counts_on_time_steps_and_renders_a_histogram() {
    let _alone = crate::alone();
    let mut l = StepLateness::default();
    l.record(0.100, 0.004); // 4 % of the step: on time
    l.record(0.100, 0.006); // 6 %: late
    l.record(0.0, 0.001); // a zero-length step is never "late"
    assert_eq!((l.steps, l.on_time), (3, 2));
    assert_eq!(l.late_steps.len(), 1);
    assert_eq!(l.late_steps[0].0, 1);
    assert!((l.late_steps[0].1 - 0.06).abs() < 1e-9);
    assert!((l.max_seconds - 0.006).abs() < 1e-12);
    assert!((l.max_share - 0.06).abs() < 1e-9);
    assert!((l.on_time_share() - 2.0 / 3.0).abs() < 1e-12);
    let text = l.render();
    assert!(text.contains("codendum_twin_step_lateness_seconds_bucket{le=\"0.005\"} 2"));
    assert!(text.contains("codendum_twin_step_lateness_seconds_bucket{le=\"+Inf\"} 3"));
    assert!(text.contains("codendum_twin_step_lateness_seconds_count 3"));
    assert!(text.contains("codendum_twin_steps_on_time_total 2"));
    let page = codendum_core::prom::parse(&text).expect("valid exposition text");
    assert!(!page.samples.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn steps_are_measured_and_shown_on_metrics() {
    let _alone = crate::alone();
    let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
    opts.clock = Clock::scaled(20.0);
    let twin = start(opts, "127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("start");
    let client = reqwest::Client::new();
    let body = json!({"model": "qwen3-coder", "prompt": "hello", "max_tokens": 8,
        "ignore_eos": true, "stream": false});
    let resp = client
        .post(format!("{}/completions", twin.base_url()))
        .json(&body)
        .send()
        .await
        .expect("send");
    assert!(resp.status().is_success());
    let page = client
        .get(twin.metrics_url())
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("text");
    let count: u64 = page
        .lines()
        .find_map(|l| l.strip_prefix("codendum_twin_step_lateness_seconds_count "))
        .and_then(|n| n.trim().parse().ok())
        .expect("lateness count on /metrics");
    // One step per output token at least (the last may still be recording).
    assert!(count >= 7, "{count} steps");
    assert!(twin.state().step_lateness().steps >= count);
    twin.shutdown().await;
}
