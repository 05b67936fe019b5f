//! Does the live server run the profile? Against the recorded
//! vLLM 0.32 answers (fixtures/vllm-0.32/: `smollm2`, max_model_len 8192,
//! 128-token blocks, 93,184 KV tokens, prefix caching on): `bench` and
//! `classroom` with a stated profile warn on stderr and record
//! `profile_check` in summary.json; the capacity suite's
//! `<profile>::server::matches_profile` fails naming each difference, and
//! passes for fixtures/profiles/vllm-032-smollm2.toml, which matches.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use crate::cli_support::{codendum, only_folder, read_json, run_in, runtime, start_twin};
use codendum::acceptance::{Settings, Suite, TrialKind};
use codendum::server_match::{check_target, read_profile_check};
use codendum_core::profile::Profile;
use codendum_testkit::servers::fixture;

/// The warning for classroom-64k against the recorded server.
const WARNING: &str = "codendum: warning: the server does not run profile classroom-64k: \
    served_model_name smollm2 (profile qwen3-coder); max_model_len 8192 (profile 65536); \
    kv_cache_tokens 93184 (profile 1362640); block_size 128 (profile 16)";

fn matching_profile() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/profiles/vllm-032-smollm2.toml")
}

/// The recorded vLLM 0.32: /v1/models, /version, /metrics (22 running:
/// runs need --allow-busy), and one answer for every stream.
fn vllm_032(rt: &tokio::runtime::Runtime) -> MockServer {
    rt.block_on(async {
        let s = MockServer::start().await;
        let body = |name: &str, kind: &str| {
            ResponseTemplate::new(200)
                .insert_header("content-type", kind)
                .set_body_string(fixture(name))
        };
        let json = "application/json";
        Mock::given(method("GET"))
            .and(path("/v1/models"))
            .respond_with(body("vllm-0.32/models.json", json))
            .mount(&s)
            .await;
        Mock::given(method("GET"))
            .and(path("/version"))
            .respond_with(body("vllm-0.32/version.json", json))
            .mount(&s)
            .await;
        Mock::given(method("GET"))
            .and(path("/metrics"))
            .respond_with(body(
                "vllm-0.32/metrics-busy.txt",
                "text/plain; version=0.0.4",
            ))
            .mount(&s)
            .await;
        Mock::given(method("POST"))
            .and(path("/v1/chat/completions"))
            .respond_with(body("vllm-0.32/sse-chat-usage.txt", "text/event-stream"))
            .mount(&s)
            .await;
        s
    })
}

fn base(server: &MockServer) -> String {
    format!("{}/v1", server.uri())
}

fn bench(dir: &Path, server: &MockServer, profile: &str) -> crate::cli_support::Finished {
    let mut cmd = codendum(dir);
    cmd.args(["bench", "--base-url", &base(server), "--profile", profile])
        .args(["--concurrency", "1", "--requests-per-level", "2"])
        .args(["--shapes", "short", "--output-tokens", "16"])
        .args(["--yes", "--allow-busy", "--results-dir", "results"]);
    run_in(cmd, dir, "bench")
}

fn fields(check: &Value, list: &str) -> Vec<String> {
    check[list]
        .as_array()
        .unwrap_or_else(|| panic!("no {list} in {check}"))
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other["field"].as_str().unwrap_or("?").to_string(),
        })
        .collect()
}

#[test]
fn bench_warns_and_records_when_the_server_is_not_the_profile() {
    let rt = runtime();
    let server = vllm_032(&rt);
    let dir = tempfile::tempdir().expect("tempdir");
    let done = bench(dir.path(), &server, "classroom-64k");
    assert_eq!(done.code, Some(0), "{}", done.both());
    let warnings: Vec<&str> = done
        .stderr
        .lines()
        .filter(|l| l.contains("does not run profile"))
        .collect();
    assert_eq!(warnings, [WARNING], "{}", done.stderr);
    // Before the plan: seen before anything is sent.
    let plan = done.stderr.find("Benchmark plan").unwrap_or(usize::MAX);
    assert!(done.stderr.find(WARNING) < Some(plan), "{}", done.stderr);

    let folder = only_folder(&dir.path().join("results"));
    let summary = read_json(&folder.join("summary.json"));
    let check = &summary["profile_check"];
    assert_eq!(check["profile"], "classroom-64k", "{summary}");
    assert_eq!(
        fields(check, "differences"),
        [
            "served_model_name",
            "max_model_len",
            "kv_cache_tokens",
            "block_size"
        ]
    );
    assert_eq!(check["differences"][1]["profile"], 65_536);
    assert_eq!(check["differences"][1]["server"], 8192);
    assert_eq!(check["differences"][1]["source"], "/v1/models");
    assert_eq!(fields(check, "matched"), ["enable_prefix_caching"]);
    assert_eq!(summary["provenance"]["profile"], "classroom-64k");
    // Still schema 1 to every reader, the report included.
    let typed = codendum_core::results::read_bench_summary(&folder).expect("reads as schema 1");
    assert_eq!(typed.levels.len(), 1);
    assert!(folder.join("report.md").is_file());
    assert_eq!(
        read_profile_check(&folder).map(|c| c.differences.len()),
        Some(4)
    );
}

#[test]
fn bench_with_the_matching_profile_records_a_clean_check() {
    let rt = runtime();
    let server = vllm_032(&rt);
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = matching_profile();
    let done = bench(dir.path(), &server, profile.to_str().expect("utf8"));
    assert_eq!(done.code, Some(0), "{}", done.both());
    assert!(
        !done.stderr.contains("does not run profile"),
        "{}",
        done.stderr
    );
    let summary = read_json(&only_folder(&dir.path().join("results")).join("summary.json"));
    let check = &summary["profile_check"];
    assert_eq!(check["profile"], "vllm-032-smollm2", "{summary}");
    assert_eq!(check["differences"], Value::Array(Vec::new()));
    assert_eq!(fields(check, "matched").len(), 5, "{check}");
}

#[test]
fn without_a_stated_profile_nothing_is_checked() {
    let rt = runtime();
    let server = vllm_032(&rt);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--base-url", &base(&server)])
        .args(["--concurrency", "1", "--requests-per-level", "1"])
        .args(["--shapes", "short", "--output-tokens", "16"])
        .args(["--yes", "--allow-busy", "--results-dir", "results"]);
    let done = run_in(cmd, dir.path(), "bench");
    assert_eq!(done.code, Some(0), "{}", done.both());
    assert!(
        !done.stderr.contains("run profile") && !done.stderr.contains("against profile"),
        "{}",
        done.stderr
    );
    let summary = read_json(&only_folder(&dir.path().join("results")).join("summary.json"));
    assert!(summary.get("profile_check").is_none(), "{summary}");

    // A provenance label that is no profile: a note, the run goes on.
    let dir = tempfile::tempdir().expect("tempdir");
    let done = bench(dir.path(), &server, "lab-gb10-2026");
    assert_eq!(done.code, Some(0), "{}", done.both());
    let notes: Vec<&str> = done
        .stderr
        .lines()
        .filter(|l| l.contains("not checked against profile lab-gb10-2026"))
        .collect();
    assert_eq!(notes.len(), 1, "{}", done.stderr);
}

#[test]
fn classroom_warns_and_records_when_the_server_is_not_the_profile() {
    let rt = runtime();
    let server = vllm_032(&rt);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args(["classroom", "--base-url", &base(&server)])
        .args(["--profile", "classroom-64k"])
        .args(["--users", "1", "--duration", "2", "--ramp-up", "0"])
        .args(["--follow-ups", "0", "--pause-min", "0", "--pause-max", "0"])
        .args(["--output-limit", "64"])
        .args(["--yes", "--allow-busy", "--results-dir", "results"]);
    let done = run_in(cmd, dir.path(), "classroom");
    assert_eq!(done.code, Some(0), "{}", done.both());
    let warnings: Vec<&str> = done
        .stderr
        .lines()
        .filter(|l| l.contains("does not run profile"))
        .collect();
    assert_eq!(warnings, [WARNING], "{}", done.stderr);
    let folder = only_folder(&dir.path().join("results"));
    let summary = read_json(&folder.join("summary.json"));
    assert_eq!(summary["kind"], "classroom");
    assert_eq!(fields(&summary["profile_check"], "differences").len(), 4);
    codendum_core::results::read_classroom_folder_summary(&folder).expect("reads as schema 1");
}

fn live_suite(server: &MockServer, profile: &str, results: &Path) -> Suite {
    let vars: HashMap<String, String> = [
        ("CODENDUM_BASE_URL", base(server)),
        ("CODENDUM_PROFILE", profile.to_string()),
        ("CODENDUM_CAPACITY_PROFILES", profile.to_string()),
        ("CODENDUM_RESULTS_DIR", results.display().to_string()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let settings = Settings::from_lookup(|k| vars.get(k).cloned()).expect("settings");
    codendum::app::suite(
        settings,
        codendum::acceptance::cache_dir(std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))),
    )
}

fn requests_to(rt: &tokio::runtime::Runtime, server: &MockServer, to: &str) -> usize {
    rt.block_on(server.received_requests())
        .expect("recorded")
        .iter()
        .filter(|r| r.url.path() == to)
        .count()
}

#[test]
fn the_capacity_trial_fails_naming_each_difference_and_reads_once() {
    let rt = runtime();
    let server = vllm_032(&rt);
    let dir = tempfile::tempdir().expect("tempdir");
    let suite = live_suite(&server, "classroom-64k", dir.path());
    let trials = suite.trials();
    let judged: Vec<&str> = trials
        .iter()
        .filter(|t| !t.ignored)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(judged[0], "classroom-64k::server::matches_profile");
    assert_eq!(
        judged.iter().filter(|n| n.contains("::server::")).count(),
        1
    );
    // Listing touched no network.
    assert_eq!(requests_to(&rt, &server, "/v1/models"), 0);
    let spec = &trials
        .iter()
        .find(|t| matches!(t.kind, TrialKind::ServerMatch { .. }))
        .expect("the trial");
    let msg = suite
        .run_trial(spec)
        .expect_err("the server is not classroom-64k");
    let expected = WARNING.strip_prefix("codendum: warning: ").expect("prefix");
    assert!(msg.starts_with(expected), "{msg}");
    assert!(msg.ends_with(&format!("({})", base(&server))), "{msg}");
    // Read once, judged again from memory.
    assert_eq!(suite.run_trial(spec), Err(msg));
    assert_eq!(requests_to(&rt, &server, "/v1/models"), 1);
    assert_eq!(requests_to(&rt, &server, "/metrics"), 1);
    assert!(!dir.path().join("results").exists(), "no workload ran");
}

#[test]
fn the_capacity_trial_passes_for_the_matching_profile() {
    let rt = runtime();
    let server = vllm_032(&rt);
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = matching_profile();
    let suite = live_suite(&server, profile.to_str().expect("utf8"), dir.path());
    let trials = suite.trials();
    let names: Vec<&str> = trials.iter().map(|t| t.name.as_str()).collect();
    let judged: Vec<&str> = trials
        .iter()
        .filter(|t| !t.ignored)
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(
        judged,
        ["vllm-032-smollm2::server::matches_profile"],
        "{names:?}"
    );
    // Through the harness's own trials; their lines go to a log file.
    let args = libtest_mimic::Arguments {
        test_threads: Some(1),
        logfile: Some(dir.path().join("trials.log").display().to_string()),
        ..libtest_mimic::Arguments::default()
    };
    let conclusion = libtest_mimic::run(&args, codendum::acceptance::trials(&Arc::new(suite)));
    assert_eq!(
        (conclusion.num_passed, conclusion.num_failed),
        (1, 0),
        "{conclusion:?}"
    );
}

#[test]
fn against_the_twin_the_suite_lists_no_server_trial() {
    let vars: HashMap<String, String> = HashMap::new();
    let settings = Settings::from_lookup(|k| vars.get(k).cloned()).expect("settings");
    let suite = codendum::app::suite(
        settings,
        codendum::acceptance::cache_dir(std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))),
    );
    let trials = suite.trials();
    assert!(!trials.is_empty());
    assert!(
        trials.iter().all(|t| !t.name.contains("::server::")),
        "{trials:?}"
    );
}

#[test]
fn a_twin_started_from_a_profile_states_that_profile() {
    // The twin labels its metrics with the model path (real vLLM: the
    // served name); both are accepted.
    let rt = runtime();
    for name in ["classroom-64k", "classroom-64k-high-concurrency"] {
        let twin = start_twin(&rt, name, 1.0);
        let target = codendum_core::access::Target::at(
            codendum_core::access::BaseUrl::parse(twin.base_url()).expect("base URL"),
        );
        let client = codendum_core::access::ClientSettings::new(Duration::from_secs(10));
        let profile = Profile::load(name).expect("profile");
        let check = rt
            .block_on(check_target(&profile, (&target, &client), &[]))
            .expect("checked");
        assert!(check.differences.is_empty(), "{name}: {check:?}");
        assert_eq!(check.matched.len(), 5, "{name}: {check:?}");
        // (The two shipped profiles differ only in max_num_seqs, which no
        // server states: the check cannot tell them apart.)
        rt.block_on(twin.shutdown());
    }
}
