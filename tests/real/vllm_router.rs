//! The REAL vLLM Router (PyPI `vllm-router` 0.1.17, `consistent_hash`) in
//! front of two twins, each behind a tap that records the
//! sessions the router sends it:
//!
//! - a bench with one `--metrics-url` per replica and
//!   `--router-metrics-url`: the replicas' own counts of requests served
//!   match the router's per worker (the router also counts the side calls,
//!   `/tokenize` and `/version`, which carry no session and so all go to one
//!   worker);
//! - a bench reading the router's own `/metrics` (the default): it is named
//!   several servers (the router forwards that read to one worker), and no
//!   peak is reported;
//! - a short class through it: every student session stays on one replica.

use std::collections::BTreeMap;

use serde_json::Value;

use codendum_testkit::cli::{codendum, only_folder, read_json, run_in, runtime, start_twin};
use codendum_testkit::vllm_router::{SessionTap, VllmRouter};

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("a number: {v}"))
}

pub fn real_router_in_front_of_two_twins() {
    let rt = runtime();
    let twins = [
        start_twin(&rt, "classroom-64k", 10.0),
        start_twin(&rt, "classroom-64k", 10.0),
    ];
    let taps: Vec<SessionTap> = twins
        .iter()
        .map(|t| SessionTap::start(&rt, t.addr()))
        .collect();
    let origins: Vec<String> = taps.iter().map(|t| t.origin.clone()).collect();
    let router = VllmRouter::start("consistent_hash", &origins);
    let per_replica = twins
        .iter()
        .map(|t| t.metrics_url())
        .collect::<Vec<_>>()
        .join(",");
    let dir = tempfile::tempdir().expect("tempdir");

    // 1. Per replica and the router's own counts. What the taps saw before
    // (the router's start-up checks of its workers) is not the bench's.
    let before: Vec<usize> = taps.iter().map(|t| t.paths().len()).collect();
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--base-url", &router.base_url])
        .args(["--metrics-url", &per_replica])
        .args(["--router-metrics-url", &router.metrics_url])
        .args(["--concurrency", "2,4", "--shapes", "short"])
        .args(["--output-tokens", "32", "--requests-per-level", "12"])
        .args([
            "--yes",
            "--allow-busy",
            "--no-report",
            "--results-dir",
            "per-replica",
        ]);
    let run = run_in(cmd, dir.path(), "bench-per-replica");
    assert_eq!(run.code, Some(0), "{}", run.both());
    assert!(
        run.stderr.contains("Router (from its own metrics)"),
        "{}",
        run.both()
    );
    let summary = read_json(&only_folder(&dir.path().join("per-replica")).join("summary.json"));
    let r = &summary["router"];
    let mut served: BTreeMap<String, f64> = BTreeMap::new();
    for level in summary["levels"].as_array().expect("levels") {
        for replica in level["fleet"]["replicas"].as_array().expect("replicas") {
            let name = replica["replica"].as_str().unwrap().to_string();
            *served.entry(name).or_default() += num(&replica["requests_served"]);
        }
    }
    assert_eq!(served.values().sum::<f64>(), 24.0, "{served:?}");
    assert_eq!(num(&r["model_calls"]), 24.0, "{r:#}");
    assert_eq!(num(&r["retries"]), 0.0, "{r:#}");
    // The router names workers by the taps; each tap fronts one twin and
    // saw every request the router sent it, side calls too.
    let mut side_calls = 0.0;
    for ((tap, twin), from) in taps.iter().zip(&twins).zip(before) {
        let worker = r["workers"]
            .as_array()
            .unwrap()
            .iter()
            .find(|w| w["worker"] == tap.origin.as_str())
            .unwrap_or_else(|| panic!("the router names {}: {r:#}", tap.origin));
        // Its health checks and its reads of /v1/models (it answers that
        // route itself, from a worker's list) are not routed requests.
        let paths: Vec<String> = tap.paths()[from..]
            .iter()
            .filter(|p| !matches!(p.as_str(), "/health" | "/v1/models"))
            .cloned()
            .collect();
        let side = paths
            .iter()
            .filter(|p| !p.starts_with("/v1/chat/completions"))
            .count() as f64;
        side_calls += side;
        let replica = twin.addr().to_string();
        assert_eq!(
            num(&worker["routed"]),
            paths.len() as f64,
            "the router's count of {} is what reached it",
            tap.origin
        );
        assert_eq!(
            num(&worker["routed"]) - side,
            served[&replica],
            "{replica}: the router's model calls = the replica's own count served"
        );
    }
    assert_eq!(side_calls, num(&r["requests"]) - num(&r["model_calls"]));

    // 2. The router's own /metrics, the default: several servers, no peak.
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--base-url", &router.base_url])
        .args(["--concurrency", "4", "--shapes", "short"])
        .args(["--output-tokens", "32", "--requests-per-level", "16"])
        .args([
            "--yes",
            "--allow-busy",
            "--no-report",
            "--results-dir",
            "default",
        ]);
    let run = run_in(cmd, dir.path(), "bench-default");
    assert_eq!(run.code, Some(0), "{}", run.both());
    assert_eq!(
        run.stderr
            .matches("answers /metrics for more than one server")
            .count(),
        1,
        "said once: {}",
        run.both()
    );
    let summary = read_json(&only_folder(&dir.path().join("default")).join("summary.json"));
    assert_eq!(
        summary["metrics_continuity"][0]["status"], "several_servers",
        "{summary:#}"
    );
    for level in summary["levels"].as_array().unwrap() {
        assert!(level["peak_running"].is_null(), "no wrong peak: {level}");
    }

    // 3. A short class: every session on one replica.
    let mut cmd = codendum(dir.path());
    cmd.args(["classroom", "--base-url", &router.base_url])
        .args(["--metrics-url", &per_replica])
        .args(["--router-metrics-url", &router.metrics_url])
        .args(["--users", "4", "--duration", "15", "--ramp-up", "2"])
        .args(["--pause-min", "1", "--pause-max", "2", "--follow-ups", "1"])
        .args([
            "--yes",
            "--allow-busy",
            "--no-report",
            "--results-dir",
            "class",
        ]);
    let run = run_in(cmd, dir.path(), "classroom");
    assert_eq!(run.code, Some(0), "{}", run.both());
    let sessions: Vec<_> = taps.iter().map(SessionTap::sessions).collect();
    let students: Vec<&String> = sessions
        .iter()
        .flatten()
        .filter(|s| !s.starts_with("codendum-bench"))
        .collect();
    assert!(!students.is_empty(), "the taps saw the class's sessions");
    let both: Vec<_> = sessions[0].intersection(&sessions[1]).collect();
    assert!(both.is_empty(), "sessions on both replicas: {both:?}");
    let summary = read_json(&only_folder(&dir.path().join("class")).join("summary.json"));
    assert!(
        summary["router"]["model_calls"].as_f64() > Some(0.0),
        "{summary:#}"
    );
}
