//! The busy guard and the confirmation (seed: "refuses to start while
//! requests are running or waiting, unless you pass --allow-busy, and asks
//! for confirmation unless you pass --yes"), against a wiremock server that
//! serves the recorded vLLM 0.30 /metrics pages, /v1/models, a short valid
//! chat stream, and no /tokenize.

use crate::cli_support;

use std::path::Path;

use cli_support::{codendum, holds_no_file, only_folder, read_json, run, runtime, Finished};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const BUSY: &str = include_str!("../../fixtures/metrics/vllm-0.30-metrics-busy.txt");
const IDLE: &str = include_str!("../../fixtures/metrics/vllm-0.30-metrics-idle.txt");

/// A chat stream as vLLM 0.30 sends it: role, four text chunks, finish,
/// usage, `[DONE]`.
fn chat_stream() -> String {
    let chunk = |delta: &str, finish: &str| {
        format!(
            "data: {{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1790690000,\"model\":\"qwen3-coder\",\"choices\":[{{\"index\":0,\"delta\":{delta},\"logprobs\":null,\"finish_reason\":{finish}}}]}}\n\n"
        )
    };
    let mut s = chunk("{\"role\":\"assistant\",\"content\":\"\"}", "null");
    for word in ["The", " quick", " brown", " fox"] {
        s.push_str(&chunk(&format!("{{\"content\":\"{word}\"}}"), "null"));
    }
    s.push_str(&chunk("{}", "\"length\""));
    s.push_str(
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1790690000,\"model\":\"qwen3-coder\",\"choices\":[],\"usage\":{\"prompt_tokens\":530,\"total_tokens\":534,\"completion_tokens\":4}}\n\n",
    );
    s.push_str("data: [DONE]\n\n");
    s
}

/// A fake vLLM whose /metrics shows `page`.
async fn fake_vllm(page: &'static str) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path("/metrics"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/plain; version=0.0.4; charset=utf-8")
                .set_body_string(page),
        )
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/v1/models"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "object": "list",
            "data": [{"id": "qwen3-coder", "object": "model", "owned_by": "vllm",
                      "max_model_len": 65536}]
        })))
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/v1/chat/completions"))
        .respond_with(
            ResponseTemplate::new(200)
                .insert_header("content-type", "text/event-stream")
                .set_body_string(chat_stream())
                // Long enough that the 1 s /metrics sampler sees the level.
                .set_delay(std::time::Duration::from_millis(1000)),
        )
        .mount(&server)
        .await;
    server
}

fn bench(cwd: &Path, base_url: &str, extra: &[&str]) -> Finished {
    let mut cmd = codendum(cwd);
    cmd.args([
        "bench",
        "--concurrency",
        "1,2",
        "--shapes",
        "short",
        "--requests-per-level",
        "2",
        "--output-tokens",
        "4",
        "--timeout",
        "10",
        "--no-report",
        "--results-dir",
        "results",
        "--base-url",
        base_url,
    ])
    .args(extra);
    run(cmd)
}

fn classroom(cwd: &Path, base_url: &str, extra: &[&str]) -> Finished {
    let mut cmd = codendum(cwd);
    cmd.args([
        "classroom",
        "--users",
        "1",
        "--duration",
        "5",
        "--ramp-up",
        "0",
        "--follow-ups",
        "0",
        "--no-report",
        "--results-dir",
        "results",
        "--base-url",
        base_url,
    ])
    .args(extra);
    run(cmd)
}

fn chat_calls(rt: &tokio::runtime::Runtime, server: &MockServer) -> usize {
    rt.block_on(server.received_requests())
        .unwrap_or_default()
        .iter()
        .filter(|r| r.url.path() == "/v1/chat/completions")
        .count()
}

fn assert_refused(f: &Finished, words: &[&str]) {
    assert_eq!(f.code, Some(3), "refused with exit 3:\n{}", f.both());
    assert!(!f.stderr.contains("panicked"), "{}", f.both());
    let last = f.stderr.lines().last().unwrap_or("");
    assert!(last.starts_with("codendum: "), "{}", f.stderr);
    for w in words {
        assert!(last.contains(w), "the refusal names {w:?}: {last}");
    }
}

#[test]
fn a_busy_server_is_refused_and_nothing_is_written() {
    let rt = runtime();
    let server = rt.block_on(fake_vllm(BUSY));
    let base = format!("{}/v1", server.uri());
    let dir = tempfile::tempdir().expect("tempdir");
    let f = bench(dir.path(), &base, &["--yes"]);
    assert_refused(&f, &["16 running", "12 waiting", "--allow-busy"]);
    let f = classroom(dir.path(), &base, &["--yes"]);
    assert_refused(&f, &["16 running", "12 waiting", "--allow-busy"]);
    assert!(
        holds_no_file(&dir.path().join("results")),
        "nothing written"
    );
    assert_eq!(chat_calls(&rt, &server), 0, "no request was sent");
}

#[test]
fn allow_busy_goes_on_with_a_warning() {
    let rt = runtime();
    let server = rt.block_on(fake_vllm(BUSY));
    let base = format!("{}/v1", server.uri());
    let dir = tempfile::tempdir().expect("tempdir");
    let f = bench(dir.path(), &base, &["--allow-busy", "--yes"]);
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(
        f.stderr.contains("busy") && f.stderr.contains("--allow-busy"),
        "warned: {}",
        f.stderr
    );
    let summary = read_json(&only_folder(&dir.path().join("results")).join("summary.json"));
    assert_eq!(summary["parameters"]["allow_busy"], true);
    let levels = summary["levels"].as_array().expect("levels");
    for level in levels {
        assert_eq!(level["successes"], 2, "{level}");
        assert_eq!(level["mean_output_tokens"], 4.0);
        assert_eq!(level["mean_input_tokens"], 530.0);
        // The recorded busy page is what /metrics showed all along (a
        // level without a sample inside it has no server figures).
        for (field, value) in [("peak_running", 16.0), ("peak_waiting", 12.0)] {
            assert!(
                level[field].is_null() || level[field] == value,
                "{field}: {level}"
            );
        }
    }
    assert!(
        levels.iter().any(|l| l["peak_running"] == 16.0),
        "the first level (2 s) holds a sample: {levels:?}"
    );
    assert!(chat_calls(&rt, &server) >= 4);
}

#[test]
fn an_idle_server_still_needs_yes_without_a_terminal() {
    let rt = runtime();
    let server = rt.block_on(fake_vllm(IDLE));
    let base = format!("{}/v1", server.uri());
    let dir = tempfile::tempdir().expect("tempdir");
    let f = bench(dir.path(), &base, &[]);
    assert_refused(&f, &["--yes"]);
    assert!(
        f.stderr.contains("Benchmark plan"),
        "the plan is shown: {}",
        f.stderr
    );
    let f = classroom(dir.path(), &base, &[]);
    assert_refused(&f, &["--yes"]);
    assert!(
        holds_no_file(&dir.path().join("results")),
        "nothing written"
    );
    assert_eq!(chat_calls(&rt, &server), 0, "no request was sent");

    // With --yes the idle server is benchmarked.
    let f = bench(dir.path(), &base, &["--yes"]);
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(!f.stderr.contains("busy"), "{}", f.stderr);
}

/// A live server whose `/metrics` answers 404 or refuses the connection
/// (what a workstation behind the lab's proxy usually meets): bench and
/// classroom say in one line what to do, show a plan saying the load was
/// not checked, and run; the run's server figures stay empty.
#[test]
fn unreadable_metrics_is_said_and_the_run_goes_on() {
    use codendum_testkit::servers::{MetricsCase, Servers};
    let servers = Servers::start(std::time::Duration::ZERO);
    let base = servers.base_url();
    for case in [MetricsCase::NotFound, MetricsCase::Refused] {
        let metrics = servers.metrics_url(case);
        let dir = tempfile::tempdir().expect("tempdir");
        let f = bench(dir.path(), &base, &["--yes", "--metrics-url", &metrics]);
        assert_eq!(f.code, Some(0), "{}: {}", case.name(), f.both());
        assert_unchecked_said(&f, "bench", case);
        let summary = read_json(&only_folder(&dir.path().join("results")).join("summary.json"));
        for level in summary["levels"].as_array().expect("levels") {
            assert_eq!(level["successes"], 2, "{level}");
            assert!(level["peak_running"].is_null(), "no figures: {level}");
        }

        let dir = tempfile::tempdir().expect("tempdir");
        let mut cmd = codendum(dir.path());
        cmd.args(["classroom", "--base-url", &base, "--metrics-url", &metrics])
            .args(["--users", "1", "--duration", "3", "--ramp-up", "0"])
            .args(["--follow-ups", "0", "--pause-min", "1", "--pause-max", "1"])
            .args(["--context-limit", "8192", "--output-limit", "64"])
            .args(["--yes", "--no-report", "--results-dir", "results"]);
        let f = run(cmd);
        assert_eq!(f.code, Some(0), "{}: {}", case.name(), f.both());
        assert_unchecked_said(&f, "classroom", case);
        let folder = only_folder(&dir.path().join("results"));
        assert_eq!(
            read_json(&folder.join("summary.json"))["server_figures_source"],
            "none"
        );
    }

    // Without --yes and without a terminal the plan is still shown (saying
    // the server was not checked) and the run is refused for --yes.
    let dir = tempfile::tempdir().expect("tempdir");
    let metrics = servers.metrics_url(MetricsCase::NotFound);
    let f = bench(dir.path(), &base, &["--metrics-url", &metrics]);
    assert_refused(&f, &["--yes"]);
    assert!(f.stderr.contains("not checked"), "{}", f.stderr);
    assert!(holds_no_file(&dir.path().join("results")));
}

/// One warning line with the three ways out, and the plan saying the load
/// was not checked.
fn assert_unchecked_said(
    f: &Finished,
    command: &str,
    case: codendum_testkit::servers::MetricsCase,
) {
    let warnings: Vec<&str> = f
        .stderr
        .lines()
        .filter(|l| l.starts_with("codendum: warning: /metrics could not be read"))
        .collect();
    assert_eq!(warnings.len(), 1, "{command} {}: {}", case.name(), f.stderr);
    for advice in [
        "--metrics-url http://<gpu-host>:8000/metrics",
        "codendum metrics --watch 5 --json",
        "--server-timeline",
        "--allow-busy",
    ] {
        assert!(
            warnings[0].contains(advice),
            "{command}: {advice}: {}",
            warnings[0]
        );
    }
    assert!(
        f.stderr
            .lines()
            .any(|l| l.contains("not checked") && !l.starts_with("codendum:")),
        "{command}: the plan says the server was not checked: {}",
        f.stderr
    );
    let said = f
        .stderr
        .lines()
        .filter(|l| l.starts_with("Results in "))
        .count();
    assert_eq!(said, 1, "{command}: the folder is said once: {}", f.stderr);
}
