//! Whether a `/metrics` URL is one server, against pages recorded from two
//! real vLLM 0.32 processes (the same model and cache, started at different
//! times): in turn they are several servers behind one URL (a load
//! balancer); one after the other, a restart.

use std::time::Duration;

use chrono::DateTime;
use codendum::scrape::{Sampler, Scraper};
use codendum_core::clock::Clock;
use codendum_core::prom::continuity::{classify, ContinuityStatus};
use codendum_core::prom::{window_stats, ServerSnapshot, TimelineSample};
use codendum_testkit::servers::fixture;
use codendum_testkit::turns::TurnTakingMetrics;

use crate::cli_support::{codendum, only_folder, read_json, run_in, runtime, start_twin};

/// A process 20 minutes into a capacity run: 22 running, 19,122 tokens out.
fn busy() -> String {
    fixture("vllm-0.32/metrics-busy.txt")
}

/// Another process of the same server, just started: every counter 0.
fn fresh() -> String {
    fixture("vllm-0.32/metrics-idle-other-process.txt")
}

fn timeline(pages: &[&str]) -> Vec<TimelineSample> {
    pages
        .iter()
        .enumerate()
        .map(|(i, page)| TimelineSample {
            utc: DateTime::from_timestamp(1_796_190_000 + i as i64, 0).unwrap(),
            t: i as f64,
            snapshot: Some(ServerSnapshot::from_text(page).expect("a recorded page")),
            error: None,
        })
        .collect()
}

#[test]
fn the_recorded_pages_are_two_processes_of_one_configuration() {
    let (a, b) = (
        ServerSnapshot::from_text(&busy()).unwrap(),
        ServerSnapshot::from_text(&fresh()).unwrap(),
    );
    assert_eq!(a.process_start_time_s, Some(1.79611065539e9));
    assert_eq!(b.process_start_time_s, Some(1.79618828478e9));
    assert_eq!(a.model_name, b.model_name);
    assert_eq!(a.kv_capacity_tokens, b.kv_capacity_tokens);
    assert_eq!(a.block_size, b.block_size);
    assert_eq!(b.generation_tokens, Some(0.0));
}

#[test]
fn two_recorded_pages_in_turn_are_several_servers_and_their_sums_meaningless() {
    let (a, b) = (busy(), fresh());
    let pages = [&a, &b, &a, &b, &a, &b].map(String::as_str);
    let reads = timeline(&pages);
    let c = classify(&reads);
    assert_eq!(c.status, ContinuityStatus::SeveralServers, "{c:?}");
    let several = c.several.expect("evidence");
    assert_eq!(
        several.seen_at_s, 2.0,
        "the first read back at the busy one"
    );
    assert!(
        several.evidence.contains("process start time"),
        "{several:?}"
    );
    // What a reset-aware sum makes of them: the busy server's whole count,
    // once per turn, although neither server generated a token.
    let w = window_stats(&reads, 0.0, 5.0);
    assert_eq!(w.generation_tokens, Some(2.0 * 19_122.0));
}

#[test]
fn one_recorded_process_then_the_other_is_a_restart_counted_once() {
    let (a, b) = (busy(), fresh());
    let reads = timeline(&[&a, &a, &b, &b]);
    let c = classify(&reads);
    assert_eq!(c.status, ContinuityStatus::Restarted, "{c:?}");
    assert_eq!(c.restarts.len(), 1);
    assert_eq!(c.restarts[0].at_s, 2.0);
    assert_eq!(
        c.restarts[0].process_started_utc.map(|u| u.timestamp()),
        Some(1_796_188_284)
    );
    // Nothing generated on either side of the restart: no increase, and
    // never the old process's total again.
    let w = window_stats(&reads, 0.0, 3.0);
    assert_eq!(w.generation_tokens, Some(0.0));
    assert_eq!(w.requests_finished, Some(0.0));
}

#[test]
fn the_sampler_tells_a_url_of_two_servers_from_a_steady_one() {
    let rt = runtime();
    let turns = TurnTakingMetrics::start(vec![busy(), fresh()]);
    let steady = TurnTakingMetrics::start(vec![busy()]);
    let http = reqwest::Client::new();
    let read = |url: &str| {
        let scraper = Scraper::new(http.clone(), vec![url.to_string()]);
        rt.block_on(async {
            let sampler = Sampler::start(scraper, Clock::real(), Duration::from_millis(20));
            while sampler
                .timeline()
                .iter()
                .filter(|s| s.snapshot.is_some())
                .count()
                < 6
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let found = sampler.continuity();
            sampler.stop().await;
            found
        })
    };
    let found = read(&turns.url);
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].0, turns.url.trim_end_matches("/metrics")[7..]);
    assert_eq!(found[0].1.status, ContinuityStatus::SeveralServers);
    let found = read(&steady.url);
    assert_eq!(found[0].1.status, ContinuityStatus::Steady);
}

#[test]
fn bench_says_once_that_a_metrics_url_is_several_servers_and_reports_no_peak() {
    let rt = runtime();
    let twin = start_twin(&rt, "classroom-64k", 4.0);
    let turns = TurnTakingMetrics::start(vec![busy(), fresh()]);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--base-url", &twin.base_url()])
        .args(["--metrics-url", &turns.url])
        .args(["--concurrency", "1,2", "--shapes", "short"])
        .args(["--output-tokens", "16", "--requests-per-level", "4"])
        .args(["--yes", "--allow-busy", "--results-dir", "results"]);
    let run = run_in(cmd, dir.path(), "bench");
    assert_eq!(run.code, Some(0), "{}", run.both());
    let said = run
        .stderr
        .matches("answers /metrics for more than one server")
        .count();
    assert_eq!(said, 1, "said once: {}", run.both());
    assert!(
        run.stderr.contains("--metrics-url per replica"),
        "with the fix: {}",
        run.both()
    );
    let folder = only_folder(&dir.path().join("results"));
    let summary = read_json(&folder.join("summary.json"));
    for level in summary["levels"].as_array().expect("levels") {
        for field in [
            "peak_running",
            "peak_kv_usage",
            "preemptions",
            "prefix_hit_rate",
        ] {
            assert!(level[field].is_null(), "{field} left empty: {level}");
        }
        assert_eq!(level["successes"], 4);
    }
    let found = &summary["metrics_continuity"][0];
    assert_eq!(found["status"], "several_servers", "{summary}");
    assert!(found["note"].as_str().unwrap().contains("left empty"));
    let csv = std::fs::read_to_string(folder.join("summary.csv")).expect("csv");
    assert!(
        !csv.contains(",22,"),
        "no peak of 22 running in the CSV: {csv}"
    );
    let report = std::fs::read_to_string(folder.join("report.md")).expect("report");
    assert!(
        report.contains("answers /metrics for more than one server"),
        "the report says why: {report}"
    );
}
