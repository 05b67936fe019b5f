//! Interruption: SIGINT or SIGTERM during `bench` or
//! `classroom` ends with exit 130 and a results folder whose summary.json
//! says `"interrupted": true` and whose requests.jsonl is valid line by
//! line; after `kill -9` requests.jsonl is valid up to its last complete
//! line and `codendum report` can still read the folder.

use crate::cli_support;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cli_support::{codendum, read_json, read_jsonl, run, Running};

/// A bench on the embedded twin that takes tens of seconds uninterrupted.
fn long_bench(cwd: &Path) -> std::process::Command {
    let mut cmd = codendum(cwd);
    cmd.args([
        "bench",
        "--concurrency",
        "1,2,4",
        "--shapes",
        "short",
        "--requests-per-level",
        "8",
        "--output-tokens",
        "64",
        "--time-scale",
        "5",
        "--results-dir",
        "results",
    ]);
    cmd
}

/// A class on the embedded twin that takes tens of seconds uninterrupted.
fn long_classroom(cwd: &Path) -> std::process::Command {
    let mut cmd = codendum(cwd);
    cmd.args([
        "classroom",
        "--users",
        "2",
        "--duration",
        "600",
        "--ramp-up",
        "5",
        "--pause-min",
        "1",
        "--pause-max",
        "2",
        "--follow-ups",
        "0",
        "--time-scale",
        "10",
        "--results-dir",
        "results",
    ]);
    cmd
}

/// Waits until the run's requests.jsonl holds `lines` complete lines and
/// returns the run folder (fails after 30 s or if the process ends).
fn wait_for_lines(running: &mut Running, results: &Path, lines: usize) -> PathBuf {
    let start = Instant::now();
    loop {
        if let Ok(entries) = std::fs::read_dir(results) {
            for e in entries.flatten() {
                let text =
                    std::fs::read_to_string(e.path().join("requests.jsonl")).unwrap_or_default();
                if text.matches('\n').count() >= lines {
                    return e.path();
                }
            }
        }
        assert!(
            !running.has_exited(),
            "the run ended before it was interrupted"
        );
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "no request finished within 90 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn interrupt(command: std::process::Command, cwd: &Path, signal: &str) -> PathBuf {
    let logs = tempfile::tempdir().expect("tempdir");
    let mut running = Running::spawn(command, logs.path(), signal);
    let folder = wait_for_lines(&mut running, &cwd.join("results"), 1);
    running.signal(signal);
    let f = running.wait(Duration::from_secs(30));
    assert_eq!(
        f.code,
        Some(130),
        "exit 130 after SIG{signal}:\n{}",
        f.both()
    );
    assert!(f.stderr.contains("interrupted"), "{}", f.stderr);
    assert!(!f.stderr.contains("panicked"), "{}", f.both());
    let summary = read_json(&folder.join("summary.json"));
    assert_eq!(summary["interrupted"], true, "{summary}");
    let requests = read_jsonl(&folder.join("requests.jsonl"), false);
    assert!(!requests.is_empty());
    folder
}

#[test]
fn sigint_and_sigterm_during_bench_keep_partial_results() {
    for signal in ["INT", "TERM"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = interrupt(long_bench(dir.path()), dir.path(), signal);
        let summary = read_json(&folder.join("summary.json"));
        let levels = summary["levels"].as_array().expect("levels");
        assert!(!levels.is_empty(), "the level in progress is summarised");
        assert_eq!(
            levels.last().expect("level")["ended_by"],
            "interrupted",
            "{levels:?}"
        );
        assert!(levels.len() < 3, "later levels did not start: {levels:?}");
        let requests = read_jsonl(&folder.join("requests.jsonl"), false);
        let counted: u64 = levels
            .iter()
            .map(|l| l["requests"].as_u64().expect("requests"))
            .sum();
        assert_eq!(counted, requests.len() as u64, "summary and lines agree");
        assert!(folder.join("summary.csv").is_file());
        assert!(folder.join("report.md").is_file(), "the report is written");
    }
}

#[test]
fn sigint_and_sigterm_during_classroom_keep_partial_results() {
    for signal in ["INT", "TERM"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let folder = interrupt(long_classroom(dir.path()), dir.path(), signal);
        let name = folder
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        assert!(name.starts_with("classroom-"), "{name}");
        // tasks.jsonl is valid line by line too.
        read_jsonl(&folder.join("tasks.jsonl"), false);
        let summary = read_json(&folder.join("summary.json"));
        assert_eq!(summary["kind"], "classroom");
    }
}

#[test]
fn after_kill_9_the_folder_is_still_readable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let logs = tempfile::tempdir().expect("tempdir");
    let mut running = Running::spawn(long_bench(dir.path()), logs.path(), "kill9");
    let folder = wait_for_lines(&mut running, &dir.path().join("results"), 3);
    running.signal("KILL");
    let f = running.wait(Duration::from_secs(30));
    assert_eq!(f.code, None, "killed by a signal");
    assert!(!folder.join("summary.json").exists(), "no time to write it");
    let requests = read_jsonl(&folder.join("requests.jsonl"), true);
    assert!(requests.len() >= 3);
    // The /metrics samples were written as the run went, not only at the
    // end of a level.
    let samples = read_jsonl(&folder.join("server-timeline.jsonl"), true);
    assert!(!samples.is_empty(), "no server samples kept after kill -9");

    let mut report = codendum(dir.path());
    report.arg("report").arg(&folder);
    let f = run(report);
    assert_eq!(f.code, Some(0), "report reads the folder:\n{}", f.both());
    let md = std::fs::read_to_string(folder.join("report.md")).expect("report.md");
    assert!(md.to_lowercase().contains("interrupted"), "{md}");
    assert!(folder.join("report.html").is_file());
    // Reading the folder did not invent a summary.json.
    assert!(!folder.join("summary.json").exists());

    // A torn last line (the run died mid-write) is tolerated too.
    let mut text = std::fs::read_to_string(folder.join("requests.jsonl")).expect("lines");
    text.push_str("{\"shape\":\"short\",\"concurr");
    std::fs::write(folder.join("requests.jsonl"), text).expect("write");
    let mut report = codendum(dir.path());
    report.arg("report").arg(&folder);
    let f = run(report);
    assert_eq!(f.code, Some(0), "{}", f.both());
}
