//! Checks of the capacity suite itself, run in process through the same
//! trials the harness (tests/capacity.rs) builds: an impossible target fails
//! exactly its trial with a useful message and a failing exit status; a
//! server answering 503 to everything fails the suite with the errors
//! counted; listing a live suite touches no network.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use codendum::acceptance::{Settings, Suite};
use libtest_mimic::Arguments;

/// The suite of `s`, sharing runs in the test binaries' temporary folder.
fn suite_of(s: Settings) -> Suite {
    let cache = codendum::acceptance::cache_dir(Path::new(env!("CARGO_TARGET_TMPDIR")));
    codendum::app::suite(s, cache)
}

/// The `[server]` part of the shipped classroom-64k profile.
fn server_section() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("profiles/classroom-64k.toml");
    let text = std::fs::read_to_string(path).expect("profile");
    let end = text.find("# Capacity targets").expect("targets comment");
    text[..end].to_string()
}

/// A profile `name` in `dir`: the shipped `[server]` with `targets`.
pub(crate) fn write_profile(dir: &Path, name: &str, targets: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("{}\n[targets]\n{targets}", server_section())).expect("write");
    path
}

fn settings(vars: &[(&str, &str)]) -> Settings {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Settings::from_lookup(|k| map.get(k).cloned()).expect("settings")
}

/// One thread, and the inner run's lines (its expected FAILED trials) in a
/// log file rather than in this test's output.
fn one_thread() -> Arguments {
    let log = std::env::temp_dir().join(format!(
        "codendum-capacity-checks-{}.log",
        std::process::id()
    ));
    Arguments {
        test_threads: Some(1),
        logfile: Some(log.to_string_lossy().into_owned()),
        ..Arguments::default()
    }
}

fn failure_of(suite: &Suite, name: &str) -> String {
    let spec = suite
        .trials()
        .into_iter()
        .find(|t| t.name == name)
        .unwrap_or_else(|| panic!("no trial {name}"));
    suite.run_trial(&spec).expect_err("the trial fails")
}

#[test]
fn an_impossible_target_fails_exactly_its_trial() {
    let dir = tempfile::tempdir().expect("tempdir");
    let results = dir.path().join("results");
    let profile = write_profile(
        dir.path(),
        "impossible",
        r#"
[[targets.quick.bench]]
shape = "short"
concurrency = 1
ttft_p95_s = 0.001
output_tok_per_s = 20
errors = 0
"#,
    );
    let s = settings(&[
        (
            "CODENDUM_CAPACITY_PROFILES",
            profile.to_str().expect("utf8"),
        ),
        ("CODENDUM_RESULTS_DIR", results.to_str().expect("utf8")),
    ]);
    let suite = Arc::new(suite_of(s));
    let names: Vec<String> = suite.trials().into_iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "impossible::bench-short-c1::ttft_p95",
            "impossible::bench-short-c1::output_tok_per_s",
            "impossible::bench-short-c1::errors"
        ]
    );
    let conclusion = libtest_mimic::run(&one_thread(), codendum::acceptance::trials(&suite));
    assert_eq!(
        (conclusion.num_passed, conclusion.num_failed),
        (2, 1),
        "{conclusion:?}"
    );
    assert_ne!(conclusion.exit_code(), ExitCode::SUCCESS);

    // The same shared run (not a second one) gives the message.
    let msg = failure_of(&suite, "impossible::bench-short-c1::ttft_p95");
    assert!(msg.starts_with("TTFT P95 "), "{msg}");
    assert!(
        msg.contains(" exceeds 0.001 s (bench, short prompts, 1 in flight, "),
        "{msg}"
    );
    let folder = msg
        .rsplit("; ")
        .next()
        .and_then(|f| f.strip_suffix(')'))
        .map(PathBuf::from)
        .expect("folder in the message");
    assert!(folder.starts_with(&results), "{msg}");
    let folders: Vec<_> = std::fs::read_dir(&results).expect("results").collect();
    assert_eq!(folders.len(), 1, "one run for three trials");
    let report = std::fs::read_to_string(folder.join("report.md")).expect("report");
    assert!(report.contains("2 of 3 targets met"), "{report}");
}

#[test]
fn a_target_at_a_rate_is_judged_on_its_rate_level() {
    let dir = tempfile::tempdir().expect("tempdir");
    let results = dir.path().join("results");
    let profile = write_profile(
        dir.path(),
        "at-a-rate",
        r#"
[[targets.quick.bench]]
shape = "short"
rate = 2
ttft_p95_s = 0.001
errors = 0
"#,
    );
    let s = settings(&[
        (
            "CODENDUM_CAPACITY_PROFILES",
            profile.to_str().expect("utf8"),
        ),
        ("CODENDUM_RESULTS_DIR", results.to_str().expect("utf8")),
    ]);
    let suite = Arc::new(suite_of(s));
    let names: Vec<String> = suite.trials().into_iter().map(|t| t.name).collect();
    assert_eq!(
        names,
        [
            "at-a-rate::bench-short-r2::ttft_p95",
            "at-a-rate::bench-short-r2::errors"
        ]
    );
    let conclusion = libtest_mimic::run(&one_thread(), codendum::acceptance::trials(&suite));
    assert_eq!(
        (conclusion.num_passed, conclusion.num_failed),
        (1, 1),
        "{conclusion:?}"
    );
    let ttft = failure_of(&suite, "at-a-rate::bench-short-r2::ttft_p95");
    assert!(
        ttft.contains("(bench, short prompts, 2 requests/s, "),
        "{ttft}"
    );
}

#[test]
fn a_server_answering_503_fails_with_errors_counted() {
    use wiremock::matchers::any;
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    // The server asks to be retried in a second, as a proxy in front of a
    // restarting vLLM does: the students' retries then take seconds instead
    // of OpenCode's backoff of a minute per call, and every call still
    // fails.
    let server = rt.block_on(async {
        let server = MockServer::start().await;
        Mock::given(any())
            .respond_with(
                ResponseTemplate::new(503)
                    .insert_header("retry-after", "1")
                    .set_body_string("Service Unavailable"),
            )
            .mount(&server)
            .await;
        server
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let results = dir.path().join("results");
    let profile = write_profile(
        dir.path(),
        "busy-box",
        r#"
[[targets.quick.bench]]
shape = "short"
concurrency = 2
ttft_p95_s = 30
errors = 0

[targets.quick.classroom]
ttft_p95_s = 75
server_errors = 0
"#,
    );
    let base = format!("{}/v1", server.uri());
    let s = settings(&[
        ("CODENDUM_BASE_URL", &base),
        ("CODENDUM_PROFILE", profile.to_str().expect("utf8")),
        ("CODENDUM_ALLOW_BUSY", "1"),
        ("CODENDUM_MODEL", "qwen3-coder"),
        ("CODENDUM_RESULTS_DIR", results.to_str().expect("utf8")),
    ]);
    let suite = Arc::new(suite_of(s));
    let judged: Vec<String> = suite
        .trials()
        .into_iter()
        .filter(|t| !t.ignored)
        .map(|t| t.name)
        .collect();
    // Four targets, and (live) whether the server runs the profile.
    assert_eq!(judged.len(), 5, "{judged:?}");
    assert_eq!(judged[0], "busy-box::server::matches_profile");
    assert!(judged.iter().all(|n| n.starts_with("busy-box::")));
    let conclusion = libtest_mimic::run(&one_thread(), codendum::acceptance::trials(&suite));
    assert_eq!(conclusion.num_failed, 5, "{conclusion:?}");
    assert!(
        conclusion.num_ignored > 0,
        "the shipped profiles are listed, ignored"
    );
    assert_ne!(conclusion.exit_code(), ExitCode::SUCCESS);

    let errors = failure_of(&suite, "busy-box::bench-short-c2::errors");
    assert!(errors.starts_with("Errors "), "{errors}");
    assert!(errors.contains("http_503"), "{errors}");
    assert!(
        errors.contains("exceeds 0 (bench, short prompts, 2 in flight"),
        "{errors}"
    );
    // The run's verdict is beside every trial's own message.
    assert!(
        errors.contains("the bench run failed: the server never answered (48 calls lost); no request succeeded at 2 concurrent (short)"),
        "{errors}"
    );
    let ttft = failure_of(&suite, "busy-box::bench-short-c2::ttft_p95");
    assert!(
        ttft.contains("not measured: no successful request"),
        "{ttft}"
    );
    let class = failure_of(&suite, "busy-box::classroom::server_errors");
    assert!(!class.is_empty());
    eprintln!("bench: {errors}\nclassroom: {class}");
    drop(server);
}

#[test]
fn a_live_suite_without_a_profile_lists_offline_and_says_what_is_missing() {
    // Port 9 (discard) is never contacted: listing touches no network.
    let s = settings(&[("CODENDUM_BASE_URL", "http://127.0.0.1:9/v1")]);
    let suite = suite_of(s);
    let trials = suite.trials();
    assert_eq!(trials[0].name, "capacity::profile");
    assert!(trials[1..].iter().all(|t| t.ignored));
    let msg = suite.run_trial(&trials[0]).expect_err("fails");
    assert!(msg.contains("CODENDUM_PROFILE"), "{msg}");

    let s = settings(&[
        ("CODENDUM_BASE_URL", "http://127.0.0.1:9/v1"),
        ("CODENDUM_PROFILE", "classroom-64k-high-concurrency"),
    ]);
    let suite = suite_of(s);
    for t in suite.trials() {
        let judged = t.name.starts_with("classroom-64k-high-concurrency::");
        assert_eq!(t.ignored, !judged, "{}", t.name);
    }
}

#[test]
fn a_profile_with_a_bad_target_becomes_a_failing_trial() {
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = write_profile(dir.path(), "typo", "[targets.classroom]\nttft_p59_s = 3\n");
    let s = settings(&[(
        "CODENDUM_CAPACITY_PROFILES",
        profile.to_str().expect("utf8"),
    )]);
    let suite = suite_of(s);
    let trials = suite.trials();
    assert_eq!(trials.len(), 1);
    assert_eq!(trials[0].name, "typo::targets");
    let msg = suite.run_trial(&trials[0]).expect_err("fails");
    assert!(
        msg.contains("ttft_p59_s") && msg.contains("targets.classroom"),
        "{msg}"
    );
}

/// A server whose `/metrics` shows requests running and waiting is not
/// loaded without `CODENDUM_ALLOW_BUSY=1` (one whose `/metrics` cannot be
/// read is: the suite then runs with the server figures empty).
#[test]
fn a_busy_server_is_refused_without_allow_busy() {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let server = rt.block_on(busy_server());
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = write_profile(
        dir.path(),
        "guarded",
        "[[targets.quick.bench]]\nshape = \"short\"\nconcurrency = 1\nerrors = 0\n",
    );
    let base = format!("{}/v1", server.uri());
    let results = dir.path().join("results");
    let s = settings(&[
        ("CODENDUM_BASE_URL", &base),
        ("CODENDUM_PROFILE", profile.to_str().expect("utf8")),
        ("CODENDUM_MODEL", "qwen3-coder"),
        ("CODENDUM_RESULTS_DIR", results.to_str().expect("utf8")),
    ]);
    let suite = suite_of(s);
    let msg = failure_of(&suite, "guarded::bench-short-c1::errors");
    assert!(
        msg.contains("did not start")
            && msg.contains("busy")
            && msg.contains("CODENDUM_ALLOW_BUSY=1"),
        "{msg}"
    );
    assert!(!results.exists(), "nothing ran");
    drop(server);
}

/// A server whose `/metrics` shows 16 requests running and 12 waiting, and
/// which answers 503 to everything else.
pub(crate) async fn busy_server() -> wiremock::MockServer {
    use wiremock::matchers::{any, path};
    use wiremock::{Mock, MockServer, ResponseTemplate};
    let server = MockServer::start().await;
    Mock::given(path("/metrics"))
        .respond_with(ResponseTemplate::new(200).set_body_string(include_str!(
            "../../fixtures/metrics/vllm-0.30-metrics-busy.txt"
        )))
        .mount(&server)
        .await;
    Mock::given(any())
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    server
}
