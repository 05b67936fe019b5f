//! When the server fails during a run: the run says when, how much was
//! lost, and exits 1. Against real processes: `codendum serve` killed with
//! SIGKILL mid-class and mid-bench, a listener that accepts and never
//! answers (a black hole), and a twin whose streams stall after their
//! headers. A clean run still exits 0 with a clean verdict.

use std::net::TcpListener;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::cli_support::{codendum, only_folder, read_json, run_in, Finished, Running};
use codendum_testkit::servers::has_requests;

/// Starts `codendum serve` on a free port with `extra` flags; returns the
/// process and its base URL (read from its first stderr line).
fn serve(dir: &Path, extra: &[&str]) -> (Running, String) {
    serve_on(dir, 0, "serve", extra)
}

/// Starts `codendum serve` on `port` (0: a free one) at 10× real time,
/// its output in `<dir>/<name>.stderr`; returns the process and its base URL.
pub fn serve_on(dir: &Path, port: u16, name: &str, extra: &[&str]) -> (Running, String) {
    let mut cmd = codendum(dir);
    cmd.args(["serve", "--port", &port.to_string(), "--time-scale", "10"]);
    cmd.args(extra);
    let server = Running::spawn(cmd, dir, name);
    let log = dir.join(format!("{name}.stderr"));
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(url) = text
            .split_whitespace()
            .find(|w| w.starts_with("http://127.0.0.1:") && w.ends_with("/v1"))
        {
            return (server, url.to_string());
        }
        assert!(Instant::now() < deadline, "serve did not start: {text}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until a run under `root` has recorded a finished request.
pub fn wait_for_a_request(root: &Path) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while !has_requests(root) {
        assert!(Instant::now() < deadline, "no request finished within 90 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn verdict_of(folder: &Path) -> serde_json::Value {
    read_json(&folder.join("summary.json"))["verdict"].clone()
}

/// The last line of stderr that carries the verdict.
fn verdict_line(f: &Finished) -> String {
    f.stderr
        .lines()
        .rfind(|l| l.starts_with("codendum: failed") || l.starts_with("codendum: completed"))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn a_class_whose_server_is_killed_names_the_outage_and_exits_1() {
    let dir = tempfile::tempdir().expect("tempdir");
    let results = dir.path().join("results");
    let (server, base) = serve(dir.path(), &[]);
    let mut cmd = codendum(dir.path());
    cmd.args(["classroom", "--base-url", &base, "--users", "3"]);
    cmd.args(["--duration", "12", "--ramp-up", "1", "--pause-min", "1"]);
    cmd.args([
        "--pause-max",
        "2",
        "--timeout",
        "5",
        "--yes",
        "--allow-busy",
    ]);
    cmd.arg("--results-dir").arg(&results);
    let class = Running::spawn(cmd, dir.path(), "classroom");
    wait_for_a_request(&results);
    std::thread::sleep(Duration::from_millis(500));
    server.signal("KILL");
    let done = class.wait(Duration::from_secs(120));
    assert_eq!(done.code, Some(1), "{}", done.both());
    let folder = only_folder(&results);
    let v = verdict_of(&folder);
    assert_eq!(v["status"], "failed", "{v:#}");
    let outage = v["outages"]
        .as_array()
        .and_then(|o| o.last())
        .expect("an outage");
    assert!(outage["end_s"].is_null(), "lasts until the end: {v:#}");
    assert!(outage["calls_lost"].as_u64() >= Some(1), "{v:#}");
    let line = verdict_line(&done);
    assert!(
        line.starts_with("codendum: failed: the server stopped answering at "),
        "{}",
        done.both()
    );
    // The figures over time cover the part of the class the server answered.
    let answered = v["answered_until_s"].as_f64().expect("answered until");
    assert!(
        answered < outage["start_s"].as_f64().unwrap() + 1e-9,
        "{v:#}"
    );
    let report = std::fs::read_to_string(folder.join("report.md")).expect("report");
    assert!(
        report.contains("## Verdict") && report.contains("until the end"),
        "{report}"
    );
}

#[test]
fn a_bench_whose_server_is_killed_exits_1_and_keeps_what_it_measured() {
    let dir = tempfile::tempdir().expect("tempdir");
    let results = dir.path().join("results");
    let (server, base) = serve(dir.path(), &[]);
    let mut cmd = codendum(dir.path());
    cmd.args([
        "bench",
        "--base-url",
        &base,
        "--concurrency",
        "2",
        "--shapes",
        "short",
    ]);
    cmd.args([
        "--requests-per-level",
        "40",
        "--output-tokens",
        "64",
        "--timeout",
        "5",
    ]);
    cmd.args(["--yes", "--allow-busy", "--no-report"]);
    cmd.arg("--results-dir").arg(&results);
    let bench = Running::spawn(cmd, dir.path(), "bench");
    wait_for_a_request(&results);
    server.signal("KILL");
    let done = bench.wait(Duration::from_secs(120));
    assert_eq!(done.code, Some(1), "{}", done.both());
    let folder = only_folder(&results);
    let v = verdict_of(&folder);
    assert_eq!(v["status"], "failed", "{v:#}");
    assert!(v["errors"].as_u64() >= Some(1), "{v:#}");
    assert!(
        v["calls"].as_u64() > v["errors"].as_u64(),
        "the successes before the kill are kept: {v:#}"
    );
    assert!(
        verdict_line(&done).contains("the server stopped answering"),
        "{}",
        done.both()
    );
}

#[test]
fn a_black_hole_ends_by_the_time_out_and_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Accepts connections and never answers; the backlog holds them.
    let hole = TcpListener::bind("127.0.0.1:0").expect("bind");
    let base = format!("http://{}/v1", hole.local_addr().expect("addr"));
    let mut cmd = codendum(dir.path());
    cmd.args([
        "bench",
        "--base-url",
        &base,
        "--model",
        "m",
        "--concurrency",
        "1",
    ]);
    cmd.args([
        "--shapes",
        "short",
        "--requests-per-level",
        "2",
        "--timeout",
        "1",
    ]);
    cmd.args([
        "--yes",
        "--allow-busy",
        "--no-report",
        "--results-dir",
        "results",
    ]);
    let done = run_in(cmd, dir.path(), "bench");
    assert_eq!(done.code, Some(1), "{}", done.both());
    let v = verdict_of(&only_folder(&dir.path().join("results")));
    assert_eq!(v["status"], "failed", "{v:#}");
    assert!(v["errors_by_kind"]["timeout"].as_u64() >= Some(2), "{v:#}");
    let line = verdict_line(&done);
    assert!(line.contains("timeout"), "{}", done.both());
    drop(hole);
}

#[test]
fn streams_that_stall_after_their_headers_end_by_the_time_out() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Every request from the third on stalls for an hour after its first
    // events: the server answered headers, then went silent.
    let (server, base) = serve(dir.path(), &["--faults", "stall=3600s@#3..1000:after=1"]);
    let mut cmd = codendum(dir.path());
    cmd.args([
        "bench",
        "--base-url",
        &base,
        "--concurrency",
        "1",
        "--shapes",
        "short",
    ]);
    cmd.args([
        "--requests-per-level",
        "5",
        "--output-tokens",
        "16",
        "--timeout",
        "2",
    ]);
    cmd.args([
        "--yes",
        "--allow-busy",
        "--no-report",
        "--results-dir",
        "results",
    ]);
    let done = run_in(cmd, dir.path(), "bench");
    server.signal("KILL");
    assert_eq!(done.code, Some(1), "{}", done.both());
    let v = verdict_of(&only_folder(&dir.path().join("results")));
    assert_eq!(v["status"], "failed", "{v:#}");
    assert!(v["errors_by_kind"]["timeout"].as_u64() >= Some(2), "{v:#}");
    assert!(v["outages"][0]["end_s"].is_null(), "{v:#}");
    assert!(verdict_line(&done).contains("timeout"), "{}", done.both());
}

#[test]
fn a_clean_run_exits_0_with_a_clean_verdict() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--concurrency", "2", "--shapes", "short"]);
    cmd.args([
        "--requests-per-level",
        "4",
        "--output-tokens",
        "16",
        "--time-scale",
        "20",
    ]);
    cmd.args(["--no-report", "--results-dir", "results"]);
    let done = run_in(cmd, dir.path(), "bench");
    assert_eq!(done.code, Some(0), "{}", done.both());
    let v = verdict_of(&only_folder(&dir.path().join("results")));
    assert_eq!(v["status"], "clean", "{v:#}");
    assert_eq!(v["errors"], 0);
    assert!(v.get("outages").is_none(), "{v:#}");
    // Four requests at two in flight leave no steady window: the run
    // completed cleanly, and says its figures are not a capacity figure.
    let line = verdict_line(&done);
    assert!(
        line.starts_with("codendum: completed cleanly: 4 calls, no errors; measured, but not valid as a capacity figure: short c2's steady window holds 0 requests"),
        "{line}"
    );
    assert_eq!(v["not_valid"].as_array().map(Vec::len), Some(1), "{v:#}");
}

#[test]
fn a_max_error_rate_outside_0_to_1_is_bad_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--max-error-rate", "5", "--results-dir", "results"]);
    let done = run_in(cmd, dir.path(), "bench");
    assert_eq!(done.code, Some(2), "{}", done.both());
    crate::cli_support::assert_one_line_error(&done, "--max-error-rate");
}
