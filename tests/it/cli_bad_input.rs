//! Bad input: every mistake is a one-line error on stderr that
//! names the culprit, exit code 2, never a panic. None of these commands
//! reaches the network: validation fails first (the base URLs point at
//! loopback port 9 or at a documentation address that is never contacted).

use crate::cli_support;

use std::path::Path;

use cli_support::{assert_one_line_error, codendum, holds_no_file, run, write_file, Finished};

/// A tiny embedded bench with `extra` flags, in `cwd`.
fn bench(cwd: &Path, extra: &[&str]) -> Finished {
    let mut cmd = codendum(cwd);
    cmd.args([
        "bench",
        "--shapes",
        "short",
        "--requests-per-level",
        "2",
        "--output-tokens",
        "8",
        "--yes",
        "--results-dir",
        "results",
    ])
    .args(extra);
    run(with_scale(cmd, extra))
}

/// Adds `--time-scale 50` unless `extra` sets a speed-up of its own.
fn with_scale(mut cmd: std::process::Command, extra: &[&str]) -> std::process::Command {
    if !extra.iter().any(|a| a.starts_with("--time-scale")) {
        cmd.args(["--time-scale", "50"]);
    }
    cmd
}

/// A tiny embedded classroom with `extra` flags, in `cwd`.
fn classroom(cwd: &Path, extra: &[&str]) -> Finished {
    let mut cmd = codendum(cwd);
    cmd.args([
        "classroom",
        "--users",
        "2",
        "--duration",
        "60",
        "--ramp-up",
        "5",
        "--pause-min",
        "1",
        "--pause-max",
        "2",
        "--follow-ups",
        "0",
        "--yes",
        "--results-dir",
        "results",
    ])
    .args(extra);
    run(with_scale(cmd, extra))
}

fn assert_bad_input(f: &Finished, culprit: &str) {
    assert_eq!(f.code, Some(2), "exit 2 for bad input:\n{}", f.both());
    assert_one_line_error(f, culprit);
}

#[test]
fn bad_concurrency_lists_are_refused_by_name() {
    let dir = tempfile::tempdir().expect("tempdir");
    for bad in ["0", "a,b", "", " , ", "1,1", "5000", "-1", "1.5"] {
        let f = bench(dir.path(), &[&format!("--concurrency={bad}")]);
        assert_bad_input(&f, "--concurrency");
    }
    assert!(
        holds_no_file(&dir.path().join("results")),
        "nothing written"
    );
}

#[test]
fn malformed_api_keys_files_name_the_file_and_line_but_not_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = write_file(dir.path(), "empty.csv", "");
    let comments = write_file(dir.path(), "comments.csv", "# nothing here\n\n");
    let header_only = write_file(dir.path(), "header.csv", "user,key\n");
    let duplicate = write_file(
        dir.path(),
        "dup.csv",
        "user,key\nalice,sk-test-student-01\nbob,sk-test-student-02\ncarol,sk-test-student-01\n",
    );
    let blank_key = write_file(dir.path(), "blank.csv", "user,key\nalice,\n");
    for (path, detail) in [
        (&empty, "no keys"),
        (&comments, "no keys"),
        (&header_only, "no keys"),
        (&duplicate, "line 4"),
        (&blank_key, "line 2"),
    ] {
        let f = classroom(
            dir.path(),
            &["--api-keys-file", path.to_str().expect("utf-8 path")],
        );
        assert_bad_input(&f, "API-keys file");
        assert!(f.stderr.contains(detail), "{detail}: {}", f.stderr);
        assert!(!f.stderr.contains("sk-test"), "a key leaked: {}", f.stderr);
    }
    let missing = dir.path().join("no-such-keys.csv");
    let f = classroom(
        dir.path(),
        &["--api-keys-file", missing.to_str().expect("utf-8 path")],
    );
    assert_bad_input(&f, "no-such-keys.csv");
    assert!(holds_no_file(&dir.path().join("results")));
}

#[test]
fn unknown_profiles_and_unknown_profile_keys_are_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = bench(
        dir.path(),
        &["--concurrency", "1", "--profile", "classroom-128k"],
    );
    assert_bad_input(&f, "classroom-128k");
    assert!(
        f.stderr.contains("classroom-64k"),
        "lists the known: {}",
        f.stderr
    );

    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cli/profile-unknown-key.toml");
    let fixture = fixture.to_str().expect("utf-8 path");
    let f = bench(dir.path(), &["--concurrency", "1", "--profile", fixture]);
    assert_bad_input(&f, "gpu_memory_utilisation");

    let mut serve = codendum(dir.path());
    serve.args(["serve", "--port", "0", "--profile", fixture]);
    assert_bad_input(&run(serve), "gpu_memory_utilisation");

    let f = bench(
        dir.path(),
        &["--concurrency", "1", "--profile", "profiles/missing.toml"],
    );
    assert_bad_input(&f, "profiles/missing.toml");
    assert!(holds_no_file(&dir.path().join("results")));
}

#[test]
fn unreadable_or_invalid_ca_files_are_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let junk = write_file(dir.path(), "ca.pem", "this is not a certificate\n");
    let missing = dir.path().join("missing-ca.pem");
    for (path, culprit) in [(&junk, "ca.pem"), (&missing, "missing-ca.pem")] {
        let ca = path.to_str().expect("utf-8 path");
        let f = bench(
            dir.path(),
            &[
                "--concurrency",
                "1",
                "--base-url",
                "https://127.0.0.1:9/v1",
                "--cacert",
                ca,
            ],
        );
        assert_bad_input(&f, culprit);
        assert!(f.stderr.contains("CA file"), "{}", f.stderr);
        let mut metrics = codendum(dir.path());
        metrics.args(["metrics", "--metrics-url", "https://127.0.0.1:9/metrics"]);
        metrics.args(["--cacert", ca]);
        let f = run(metrics);
        assert_eq!(f.code, Some(2), "{}", f.both());
        assert!(!f.stderr.contains("panicked"), "{}", f.both());
    }
}

#[test]
fn base_urls_without_v1_or_with_a_typo_scheme_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    for url in [
        "http://127.0.0.1:9",
        "http://127.0.0.1:9/v2",
        "htps://127.0.0.1:9/v1",
        "127.0.0.1:9/v1",
        "http:///v1",
    ] {
        let f = bench(dir.path(), &["--concurrency", "1", "--base-url", url]);
        assert_bad_input(&f, "--base-url");
        let f = classroom(dir.path(), &["--base-url", url]);
        assert_bad_input(&f, "--base-url");
    }
    // The environment is checked the same way.
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--concurrency", "1", "--yes"])
        .env("CODENDUM_BASE_URL", "htps://llm.lab.example/v1");
    assert_bad_input(&run(cmd), "--base-url");
}

#[test]
fn credentials_in_a_base_url_never_reach_stderr() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = bench(
        dir.path(),
        &[
            "--concurrency",
            "1",
            "--base-url",
            "htps://user:sk-test-in-url@127.0.0.1:9/v1",
        ],
    );
    assert_bad_input(&f, "--base-url");
    assert!(!f.stderr.contains("sk-test-in-url"), "{}", f.stderr);
}

/// A key over plain http:// to a host that is not loopback earns a warning,
/// not an error. `--max-concurrency` without a rate mode is refused right
/// after the server is resolved, so nothing is ever sent to 203.0.113.1.
#[test]
fn clear_text_key_off_loopback_is_a_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = bench(
        dir.path(),
        &[
            "--max-concurrency",
            "4",
            "--timeout",
            "1",
            "--base-url",
            "http://203.0.113.1:8000/v1",
            "--api-key",
            "sk-test-clear-01",
        ],
    );
    assert_eq!(f.code, Some(2), "{}", f.both());
    let lines: Vec<&str> = f.stderr.lines().filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2, "warning + error:\n{}", f.both());
    assert!(
        lines[0].contains("warning") && lines[0].contains("http://203.0.113.1:8000/v1"),
        "{}",
        lines[0]
    );
    assert!(lines[1].contains("--max-concurrency"), "{}", lines[1]);
    assert!(!f.stderr.contains("sk-test-clear-01"));
    assert!(!f.stderr.contains("panicked"));

    // Loopback or https: no warning (same early failure).
    for url in ["http://127.0.0.1:9/v1", "https://203.0.113.1:8443/v1"] {
        let f = bench(
            dir.path(),
            &[
                "--max-concurrency",
                "4",
                "--base-url",
                url,
                "--api-key",
                "sk-test-clear-01",
            ],
        );
        assert_bad_input(&f, "--max-concurrency");
    }
}

#[test]
fn unknown_scenario_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = classroom(dir.path(), &["--scenario", "rust"]);
    assert_bad_input(&f, "rust");
    assert!(f.stderr.contains("--scenario"), "{}", f.stderr);
}

#[test]
fn zero_or_absurd_time_scales_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    for scale in ["0", "NaN", "inf", "100000"] {
        let f = bench(
            dir.path(),
            &["--concurrency", "1", &format!("--time-scale={scale}")],
        );
        assert_bad_input(&f, "--time-scale");
        let f = classroom(dir.path(), &[&format!("--time-scale={scale}")]);
        assert_bad_input(&f, "--time-scale");
    }
    let mut serve = codendum(dir.path());
    serve.args(["serve", "--port", "0", "--time-scale", "0"]);
    assert_bad_input(&run(serve), "--time-scale");
    assert!(holds_no_file(&dir.path().join("results")));
}

#[test]
fn metrics_with_nothing_named_says_what_to_give() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.arg("metrics");
    let f = run(cmd);
    assert_bad_input(&f, "--metrics-url");
    assert!(f.stderr.contains("--base-url"), "{}", f.stderr);

    let mut cmd = codendum(dir.path());
    cmd.args(["metrics", "--metrics-url", "ftp://127.0.0.1:9/metrics"]);
    assert_bad_input(&run(cmd), "--metrics-url");

    let mut cmd = codendum(dir.path());
    cmd.args([
        "metrics",
        "--base-url",
        "http://127.0.0.1:9",
        "--count",
        "1",
    ]);
    assert_bad_input(&run(cmd), "--base-url");
}

#[test]
fn report_and_compare_of_missing_folders_are_bad_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args(["report", "no-such-run"]);
    assert_bad_input(&run(cmd), "no-such-run");
    let mut cmd = codendum(dir.path());
    cmd.args(["compare", "no-such-a", "no-such-b"]);
    assert_bad_input(&run(cmd), "no-such-a");
}

#[test]
fn a_broken_dotenv_is_named() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_file(dir.path(), ".env", "CODENDUM_PROFILE='unterminated\n");
    let mut cmd = codendum(dir.path());
    cmd.arg("metrics");
    assert_bad_input(&run(cmd), ".env");
}

#[test]
fn usage_mistakes_are_one_line_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (args, culprit) in [
        (vec!["bench", "--concurency", "1"], "--concurency"),
        (
            vec!["bench", "--requests-per-level", "many"],
            "--requests-per-level",
        ),
        (vec!["bench", "--output-tokens"], "--output-tokens"),
        (vec!["classroom", "--users", "-3"], "-3"),
        (vec!["compare", "only-one"], "FOLDERS"),
        (vec!["benchmark"], "benchmark"),
    ] {
        let mut cmd = codendum(dir.path());
        cmd.args(&args);
        let f = run(cmd);
        assert_bad_input(&f, culprit);
        assert!(!f.stderr.contains("Usage:"), "{}", f.stderr);
    }
    // Help still prints in full, with success.
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--help"]);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(f.stdout.contains("--concurrency"), "{}", f.stdout);
}
