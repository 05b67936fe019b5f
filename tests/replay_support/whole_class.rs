//! A whole class through one capture: `n` scripted OpenCode sessions at
//! once (each its own session id, four streamed steps with short pauses),
//! for `tests/it` (nothing lost, no key written) and `tests/perf` (the
//! latency the capture adds at that load). The including binary has the
//! capture tests' `capture_support` module.

#![allow(dead_code)]

use std::time::Duration;

use crate::capture_support::timed_session;

/// `n` sessions at once through `base`, `pause_s` seconds between steps;
/// every step's wall time.
pub async fn class_through(base: &str, n: usize, pause_s: f64) -> Vec<Duration> {
    let mut set = tokio::task::JoinSet::new();
    for i in 0..n {
        let base = base.to_string();
        set.spawn(async move {
            let id = format!("ses_student_{i:02}");
            timed_session(&base, &id, &[pause_s; 10]).await.1
        });
    }
    let mut all = Vec::new();
    while let Some(times) = set.join_next().await {
        all.extend(times.expect("a session"));
    }
    all
}
