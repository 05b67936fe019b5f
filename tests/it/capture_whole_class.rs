//! A whole class through one capture: 40 scripted OpenCode sessions at
//! once lose no call, keep every session apart, and write no key. (The
//! latency the capture adds at that load is measured in `tests/perf`.)

use std::collections::BTreeMap;
use std::time::Duration;

#[path = "../replay_support/whole_class.rs"]
mod whole_class_support;

use crate::capture_support::{any_file_contains, calls, capture, twin, KEY};
use whole_class_support::class_through;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forty_sessions_at_once_lose_nothing() {
    let twin = twin().await;
    let dir = tempfile::tempdir().expect("dir");
    let cap = capture(&twin.base_url(), dir.path()).await;
    let steps = class_through(&cap.base_url(), 40, 0.005).await;
    let recorded = cap
        .shutdown(Duration::from_secs(5))
        .await
        .expect("shutdown");
    twin.shutdown().await;
    assert_eq!(steps.len(), 160, "four steps a session");
    assert_eq!(recorded, 160);
    let calls = calls(dir.path());
    assert_eq!(calls.len(), 160, "a line for every call");
    let mut per_session: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for c in &calls {
        assert_eq!(c["status"], 200);
        assert!(c["error"].is_null(), "{c}");
        assert!(c["prompt_tokens"].as_u64().is_some() && c["output_tokens"].as_u64().is_some());
        per_session
            .entry(c["session"].as_str().expect("session").to_string())
            .or_default()
            .push(c["seq"].as_u64().expect("seq"));
    }
    assert_eq!(per_session.len(), 40);
    assert!(per_session.values().all(|s| s.len() == 4));
    // Every session's later steps have their own client time.
    let timed = calls
        .iter()
        .filter(|c| c["client_time_s"].as_f64().is_some())
        .count();
    assert_eq!(timed, 120);
    let mut seqs: Vec<u64> = calls.iter().filter_map(|c| c["seq"].as_u64()).collect();
    seqs.sort_unstable();
    assert_eq!(seqs, (1..=160).collect::<Vec<_>>());
    assert!(!any_file_contains(dir.path(), KEY));
}
