//! Bad `--prometheus-url` input: one line naming the culprit, exit 2 (1 for
//! an unreachable Prometheus, as `metrics` does for an unreachable server),
//! and no results folder. The "no series" case asks a real Prometheus.

use std::path::Path;
use std::process::Command;

use codendum_testkit::cli::{
    assert_one_line_error, codendum, holds_no_file, run_in, runtime, start_twin,
};
use codendum_testkit::live::Prometheus;

fn bench(dir: &Path, base: &str, extra: &[&str]) -> Command {
    let mut cmd = codendum(dir);
    cmd.args(["bench", "--base-url", base])
        .args([
            "--concurrency",
            "1",
            "--shapes",
            "short",
            "--output-tokens",
            "8",
        ])
        .args([
            "--requests-per-level",
            "2",
            "--yes",
            "--results-dir",
            "results",
        ])
        .args(extra);
    cmd
}

fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    l.local_addr().expect("addr").port()
}

pub fn a_url_that_is_not_prometheus_says_what_answered() {
    let rt = runtime();
    let twin = start_twin(&rt, "classroom-64k", 1.0);
    let dir = tempfile::tempdir().expect("tempdir");
    // The twin itself: a vLLM look-alike that answers /api/v1/query with 404.
    let origin = format!("http://{}", twin.addr());
    let f = run_in(
        bench(dir.path(), &twin.base_url(), &["--prometheus-url", &origin]),
        dir.path(),
        "bench",
    );
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "is not Prometheus");
    assert!(
        f.stderr.contains(&origin) && f.stderr.contains("HTTP 404"),
        "{}",
        f.stderr
    );
    assert!(holds_no_file(&dir.path().join("results")));
}

pub fn an_unreachable_prometheus_is_exit_1_and_other_misuse_exit_2() {
    let rt = runtime();
    let twin = start_twin(&rt, "classroom-64k", 1.0);
    let dir = tempfile::tempdir().expect("tempdir");
    let gone = format!("http://127.0.0.1:{}", closed_port());
    let f = run_in(
        bench(dir.path(), &twin.base_url(), &["--prometheus-url", &gone]),
        dir.path(),
        "gone",
    );
    assert_eq!(f.code, Some(1), "{}", f.both());
    assert_one_line_error(&f, "unreachable");
    assert!(f.stderr.contains(&gone), "{}", f.stderr);

    let f = run_in(
        bench(
            dir.path(),
            &twin.base_url(),
            &["--prometheus-url", "ftp://prom:21"],
        ),
        dir.path(),
        "ftp",
    );
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "--prometheus-url");

    // The embedded twin is in no Prometheus.
    let mut cmd = codendum(dir.path());
    cmd.args([
        "bench",
        "--prometheus-url",
        &gone,
        "--results-dir",
        "results",
        "--yes",
    ]);
    let f = run_in(cmd, dir.path(), "embedded");
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert!(
        f.stderr.contains("--prometheus-url") && f.stderr.contains("--base-url"),
        "{}",
        f.stderr
    );

    let f = run_in(
        bench(
            dir.path(),
            &twin.base_url(),
            &["--prometheus-selector", "job=\"vllm\""],
        ),
        dir.path(),
        "sel",
    );
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert!(f.stderr.contains("--prometheus-url"), "{}", f.stderr);
    assert!(holds_no_file(&dir.path().join("results")));
}

pub fn a_filter_without_series_names_the_metric_and_the_filter() {
    let rt = runtime();
    let twin = start_twin(&rt, "classroom-64k", 1.0);
    let prom = Prometheus::start(&[twin.addr().to_string()]);
    let dir = tempfile::tempdir().expect("tempdir");
    // A replica Prometheus does not scrape.
    let elsewhere = format!("http://127.0.0.1:{}/metrics", closed_port());
    let both = format!("{},{elsewhere}", twin.metrics_url());
    let args = [
        "--prometheus-url",
        prom.url.as_str(),
        "--metrics-url",
        both.as_str(),
    ];
    let f = run_in(
        bench(dir.path(), &twin.base_url(), &args),
        dir.path(),
        "missing",
    );
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "vllm:num_requests_running{instance=\"127.0.0.1:");
    assert!(
        f.stderr.contains("--metrics-url") && f.stderr.contains(&twin.addr().to_string()),
        "{}",
        f.stderr
    );

    // A selector that matches nothing, in a classroom.
    let mut cmd = codendum(dir.path());
    cmd.args(["classroom", "--base-url", &twin.base_url()])
        .args([
            "--prometheus-url",
            &prom.url,
            "--prometheus-selector",
            "job=\"nothing\"",
        ])
        .args([
            "--users",
            "1",
            "--duration",
            "5",
            "--ramp-up",
            "1",
            "--yes",
            "--results-dir",
            "results",
        ]);
    let f = run_in(cmd, dir.path(), "selector");
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "vllm:num_requests_running{job=\"nothing\"}");
    assert!(holds_no_file(&dir.path().join("results")));
}
