//! Every command ends by itself, and within its grace after Ctrl-C or
//! SIGTERM, whatever `/metrics` does: fine, 404, refused,
//! accepting and never answering, not Prometheus, 401. The server is not
//! ours: llama.cpp's recorded answers (comment lines, no usage in streams).
//! Each command has a hard deadline: a test fails, never hangs.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::cli_support::{codendum, read_json, Finished, Running};
use codendum_testkit::servers::{has_requests, MetricsCase, Servers};

/// The longest a whole command may take here (the silent `/metrics` costs
/// one scrape timeout of 5 s before the run, another while it samples).
const DEADLINE: Duration = Duration::from_secs(45);
/// A hang guard, not a measurement: a run must end within the 5 s grace
/// it gives the requests in flight; 7 s more covers a loaded machine.
const AFTER_SIGNAL: Duration = Duration::from_secs(12);

fn bench(dir: &Path, servers: &Servers, case: MetricsCase, requests: u32) -> Command {
    let mut cmd = codendum(dir);
    cmd.args(["bench", "--base-url", &servers.base_url()])
        .args(["--metrics-url", &servers.metrics_url(case)])
        .args([
            "--concurrency",
            "1",
            "--shapes",
            "short",
            "--output-tokens",
            "16",
        ])
        .args(["--requests-per-level", &requests.to_string()])
        .args(["--yes", "--allow-busy", "--results-dir", "results"]);
    cmd
}

fn classroom(dir: &Path, servers: &Servers, case: MetricsCase, duration: u32) -> Command {
    let mut cmd = codendum(dir);
    cmd.args(["classroom", "--base-url", &servers.base_url()])
        .args(["--metrics-url", &servers.metrics_url(case)])
        .args(["--users", "2", "--duration", &duration.to_string()])
        .args([
            "--ramp-up",
            "1",
            "--follow-ups",
            "1",
            "--pause-min",
            "1",
            "--pause-max",
            "1",
        ])
        .args(["--context-limit", "8192", "--output-limit", "64"])
        .args(["--yes", "--allow-busy", "--results-dir", "results"]);
    cmd
}

fn metrics(dir: &Path, servers: &Servers, case: MetricsCase, extra: &[&str]) -> Command {
    let mut cmd = codendum(dir);
    cmd.args(["metrics", "--metrics-url", &servers.metrics_url(case)])
        .args(extra);
    cmd
}

/// Runs `make(dir, case)` for every case at once, each in a folder of its
/// own, each within [`DEADLINE`]; returns (case, folder, what it left).
fn each_case(
    make: impl Fn(&Path, MetricsCase) -> Command + Sync,
) -> Vec<(MetricsCase, tempfile::TempDir, Finished)> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = MetricsCase::ALL
            .iter()
            .map(|&case| {
                let make = &make;
                scope.spawn(move || {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let cmd = make(dir.path(), case);
                    let done = Running::spawn(cmd, dir.path(), case.name()).wait(DEADLINE);
                    (case, dir, done)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a case panicked"))
            .collect()
    })
}

fn run_folder(dir: &Path) -> PathBuf {
    crate::cli_support::only_folder(&dir.join("results"))
}

#[test]
fn bench_ends_whatever_metrics_does() {
    // 0.8 s an answer: the level outlasts two 1 s samples of /metrics.
    let servers = Servers::start(Duration::from_millis(800));
    for (case, dir, done) in each_case(|d, c| bench(d, &servers, c, 3)) {
        assert_eq!(done.code, Some(0), "{}: {}", case.name(), done.both());
        let summary = read_json(&run_folder(dir.path()).join("summary.json"));
        let level = &summary["levels"][0];
        assert_eq!(level["successes"], 3, "{}: {level}", case.name());
        // llama.cpp sends no usage in streams: tokens are the client's
        // count, and the prompts were sized from a non-streamed answer.
        assert_eq!(level["tokens_client_counted"], true, "{}", case.name());
        assert_eq!(
            summary["prompt_sizing"]["method"],
            "probe",
            "{}",
            case.name()
        );
        let report =
            std::fs::read_to_string(run_folder(dir.path()).join("report.md")).expect("report.md");
        assert!(
            report.contains("counted by the client, one per stream chunk"),
            "{report}"
        );
        if case == MetricsCase::Fine {
            assert_eq!(level["peak_running"], 0.0, "{}", case.name());
        } else {
            assert!(level["peak_running"].is_null(), "{}: {level}", case.name());
            assert!(level["peak_kv_usage"].is_null(), "{}: {level}", case.name());
        }
    }
}

#[test]
fn classroom_ends_whatever_metrics_does() {
    let servers = Servers::start(Duration::ZERO);
    for (case, dir, done) in each_case(|d, c| classroom(d, &servers, c, 4)) {
        assert_eq!(done.code, Some(0), "{}: {}", case.name(), done.both());
        let folder = run_folder(dir.path());
        let summary = read_json(&folder.join("summary.json"));
        assert_eq!(summary["interrupted"], false, "{}", case.name());
        let source = if case == MetricsCase::Fine {
            "sampler"
        } else {
            "none"
        };
        assert_eq!(summary["server_figures_source"], source, "{}", case.name());
        assert!(
            summary["summary"]["completed"].as_u64().unwrap_or(0) >= 2,
            "{}: {}",
            case.name(),
            summary["summary"]
        );
        let report = std::fs::read_to_string(folder.join("report.md")).expect("report.md");
        assert!(
            report.contains("Model calls counted this way"),
            "{}",
            case.name()
        );
        if case != MetricsCase::Fine {
            let said = done.stderr.matches("/metrics is out of reach").count()
                + done.stderr.matches("/metrics could not be read").count();
            assert!(said >= 1, "{}: {}", case.name(), done.stderr);
        }
    }
}

#[test]
fn metrics_command_answers_whatever_metrics_does() {
    let servers = Servers::start(Duration::ZERO);
    for (case, _dir, done) in each_case(|d, c| metrics(d, &servers, c, &[])) {
        if case == MetricsCase::Fine {
            assert_eq!(done.code, Some(0), "{}", done.both());
            continue;
        }
        assert_eq!(done.code, Some(1), "{}: {}", case.name(), done.both());
        let lines: Vec<&str> = done.stderr.lines().collect();
        assert_eq!(lines.len(), 1, "{}: {}", case.name(), done.stderr);
        assert!(
            lines[0].contains("/metrics"),
            "{}: {}",
            case.name(),
            lines[0]
        );
    }
    // Watching goes on through failures and stops after its count.
    for (case, _dir, done) in
        each_case(|d, c| metrics(d, &servers, c, &["--watch", "1", "--count", "2"]))
    {
        assert_eq!(done.code, Some(0), "{}: {}", case.name(), done.both());
        let failures = done.stderr.matches("scrape failed").count();
        let expected = if case == MetricsCase::Fine { 0 } else { 2 };
        assert_eq!(failures, expected, "{}: {}", case.name(), done.stderr);
    }
}

/// Starts `cmd`, waits until `ready` holds (or 20 s), sends SIGINT, and
/// returns what it left and how long it took to end after the signal.
fn interrupted(
    cmd: Command,
    dir: &Path,
    name: &str,
    ready: impl Fn() -> bool,
) -> (Finished, Duration) {
    let mut running = Running::spawn(cmd, dir, name);
    let start = Instant::now();
    while !ready() && start.elapsed() < Duration::from_secs(20) {
        assert!(!running.has_exited(), "{name} ended before the signal");
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(300));
    let signalled = Instant::now();
    running.signal("INT");
    let done = running.wait(AFTER_SIGNAL + Duration::from_secs(5));
    (done, signalled.elapsed())
}

#[test]
fn ctrl_c_ends_every_command_in_every_case() {
    // Each answer takes 0.4 s: the runs would last minutes.
    let servers = Servers::start(Duration::from_millis(400));
    // bench and classroom exit 130 (interrupted); for `metrics --watch` a
    // signal is its normal end (exit 0).
    let check = |what: &str, case: MetricsCase, done: &Finished, took: Duration| {
        let code = if what.starts_with("metrics") { 0 } else { 130 };
        assert_eq!(
            done.code,
            Some(code),
            "{what} {}: {}",
            case.name(),
            done.both()
        );
        assert!(
            took < AFTER_SIGNAL,
            "{what} {} took {took:?} after the signal",
            case.name()
        );
    };
    for (case, dir, (done, took)) in each_interrupt(|d, c| {
        interrupted(bench(d, &servers, c, 400), d, "bench", || {
            has_requests(&d.join("results"))
        })
    }) {
        check("bench", case, &done, took);
        let summary = read_json(&run_folder(dir.path()).join("summary.json"));
        assert_eq!(summary["interrupted"], true, "bench {}", case.name());
    }
    for (case, dir, (done, took)) in each_interrupt(|d, c| {
        interrupted(classroom(d, &servers, c, 600), d, "classroom", || {
            has_requests(&d.join("results"))
        })
    }) {
        check("classroom", case, &done, took);
        let folder = run_folder(dir.path());
        let summary = read_json(&folder.join("summary.json"));
        assert_eq!(summary["interrupted"], true, "classroom {}", case.name());
        assert!(
            folder.join("report.md").is_file(),
            "classroom {}",
            case.name()
        );
    }
    for (case, _dir, (done, took)) in each_interrupt(|d, c| {
        let start = Instant::now();
        interrupted(
            metrics(d, &servers, c, &["--watch", "1"]),
            d,
            "metrics",
            move || start.elapsed() > Duration::from_millis(1500),
        )
    }) {
        check("metrics --watch", case, &done, took);
    }
}

fn each_interrupt<T: Send>(
    run: impl Fn(&Path, MetricsCase) -> T + Sync,
) -> Vec<(MetricsCase, tempfile::TempDir, T)> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = MetricsCase::ALL
            .iter()
            .map(|&case| {
                let run = &run;
                scope.spawn(move || {
                    let dir = tempfile::tempdir().expect("tempdir");
                    let out = run(dir.path(), case);
                    (case, dir, out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a case panicked"))
            .collect()
    })
}
