//! Where the time goes: the server's own timings per bench
//! level and for a class, from vLLM's histograms, next to the client's.

use std::path::Path;

use crate::cli_support::{codendum, only_folder, read_json, run_in, runtime, start_twin};
use codendum_testkit::servers::fixture;

fn phase_mean(split: &serde_json::Value, phase: &str) -> f64 {
    split[phase]["mean_s"]
        .as_f64()
        .unwrap_or_else(|| panic!("no {phase} in {split}"))
}

fn bench_over_http(dir: &Path, base_url: &str) -> serde_json::Value {
    let mut cmd = codendum(dir);
    cmd.args(["bench", "--base-url", base_url])
        .args([
            "--concurrency",
            "1,4",
            "--shapes",
            "short",
            "--requests-per-level",
            "4",
        ])
        .args(["--output-tokens", "16", "--yes", "--results-dir", "results"]);
    let done = run_in(cmd, dir, "bench");
    assert_eq!(done.code, Some(0), "{}", done.both());
    let folder = only_folder(&dir.join("results"));
    let report = std::fs::read_to_string(folder.join("report.md"))
        .unwrap_or_else(|e| panic!("report.md: {e}\n{}", done.stderr));
    assert!(report.contains("## Where the time goes"), "{report}");
    read_json(&folder.join("summary.json"))
}

#[test]
fn each_level_has_the_servers_split_of_its_own_requests() {
    let rt = runtime();
    // Real time: the client's clock and the twin's agree.
    let twin = start_twin(&rt, "classroom-64k", 1.0);
    let dir = tempfile::tempdir().expect("tempdir");
    let summary = bench_over_http(dir.path(), &twin.base_url());
    for level in summary["levels"].as_array().expect("levels") {
        let split = &level["time_split"];
        // The level's own requests, no more, no fewer: the window runs
        // from a reading at its start to one at its end.
        assert_eq!(split["e2e"]["requests"], level["successes"], "{level}");
        for phase in [
            "queue",
            "prefill",
            "decode",
            "inference",
            "ttft",
            "inter_token",
        ] {
            assert!(phase_mean(split, phase) >= 0.0);
        }
        let server = phase_mean(split, "ttft");
        let client = split["client_ttft_mean_s"].as_f64().expect("client mean");
        // Loopback: the path is a few milliseconds.
        assert!(
            client >= server - 0.002,
            "client {client} < server {server}"
        );
        assert!(client - server < 0.1, "path {} s: {split}", client - server);
        let p95 = split["ttft"]["p95_estimate_s"].as_f64().expect("estimate");
        assert!(p95 >= split["ttft"]["p50_estimate_s"].as_f64().expect("p50"));
    }
}

#[test]
fn a_twin_served_faster_than_real_time_has_no_path() {
    let rt = runtime();
    // At 20x the twin's histograms count its own seconds, twenty of the
    // client's each: no path can be read from the difference.
    let twin = start_twin(&rt, "classroom-64k", 20.0);
    let dir = tempfile::tempdir().expect("tempdir");
    bench_over_http(dir.path(), &twin.base_url());
    let folder = only_folder(&dir.path().join("results"));
    let report = std::fs::read_to_string(folder.join("report.md")).expect("report.md");
    assert!(
        report.contains("do not count in the same seconds"),
        "{report}"
    );
    let section = report
        .split("## Where the time goes")
        .nth(1)
        .expect("section");
    assert!(
        !section.lines().take(12).any(|l| l.contains("| -")),
        "a negative path: {section}"
    );
}

#[test]
fn a_server_without_histograms_leaves_the_split_out() {
    // vLLM 0.30's busy page, its histograms removed: an older server.
    let page: String = fixture("metrics/vllm-0.30-metrics-idle.txt")
        .lines()
        .filter(|l| !l.contains("_bucket") && !l.contains("_sum") && !l.contains("_count"))
        .map(|l| format!("{l}\n"))
        .collect();
    let s = codendum_core::prom::ServerSnapshot::from_text(&page).expect("parses");
    assert!(s.latency.is_none());
    let full =
        codendum_core::prom::ServerSnapshot::from_text(&fixture("vllm-0.32/metrics-busy.txt"))
            .expect("parses");
    let latency = full.latency.expect("0.32 exports its histograms");
    let ttft = &latency.phases[&codendum_core::prom::Phase::Ttft];
    assert!(ttft.count > 0.0);
    assert!(ttft
        .buckets
        .iter()
        .all(|(le, cum)| le.is_finite() && *cum <= ttft.count));
}
