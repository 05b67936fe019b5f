//! `codendum check`, the capacity suite from the binary, as a user runs it:
//! the trials and names of `cargo test --test capacity` (from the flags or
//! the same variables), a listing that sends nothing, a name filter, and
//! the exit codes: 0 all passed, 1 a trial failed (named, with why, one
//! line each), 2 bad input, 3 the server refused the workloads (busy).

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::capacity_checks::{busy_server, write_profile};
use crate::cli_support::{codendum, run, Finished};
use codendum::acceptance::Settings;

/// The quick bench at one request in flight: a few seconds on the twin.
const ONE_LEVEL: &str = r#"
[[targets.quick.bench]]
shape = "short"
concurrency = 1
ttft_p95_s = 0.001
output_tok_per_s = 20
errors = 0
"#;

fn check(dir: &Path, args: &[&str]) -> Command {
    let mut cmd = codendum(dir);
    cmd.arg("check").args(args);
    cmd
}

fn stdout_lines(f: &Finished) -> Vec<String> {
    f.stdout.lines().map(str::to_string).collect()
}

/// The suite's trial names for these variables, as the test harness
/// (tests/capacity.rs) builds them, ignored ones marked as the listing
/// marks them.
fn harness_names(vars: &[(&str, &str)], cache: &Path) -> Vec<String> {
    let map: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let settings = Settings::from_lookup(|k| map.get(k).cloned()).expect("settings");
    codendum::app::suite(settings, cache.to_path_buf())
        .trials()
        .into_iter()
        .map(|t| match t.ignored {
            false => t.name,
            true => format!("{} (ignored)", t.name),
        })
        .collect()
}

#[test]
fn the_listing_is_the_harness_s_trials_from_flags_or_variables_and_sends_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cache = dir.path().join("cache");
    let twin = run(check(dir.path(), &["--list"]));
    assert_eq!(twin.code, Some(0), "{}", twin.both());
    assert_eq!(stdout_lines(&twin), harness_names(&[], &cache));
    assert!(twin
        .stdout
        .contains("classroom-64k::bench-short-c16::ttft_p95\n"));

    // Port 9 (discard) is never contacted: listing touches no network.
    let live = [
        ("CODENDUM_BASE_URL", "http://127.0.0.1:9/v1"),
        ("CODENDUM_PROFILE", "classroom-64k-high-concurrency"),
    ];
    let mut by_env = check(dir.path(), &["--list"]);
    by_env.envs(live);
    let by_env = run(by_env);
    assert_eq!(by_env.code, Some(0), "{}", by_env.both());
    let by_flags = run(check(
        dir.path(),
        &[
            "--list",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--profile",
            "classroom-64k-high-concurrency",
        ],
    ));
    assert_eq!(by_flags.stdout, by_env.stdout);
    let names = stdout_lines(&by_env);
    assert_eq!(names, harness_names(&live, &cache));
    assert!(names.contains(&"classroom-64k-high-concurrency::server::matches_profile".to_string()));
    assert!(names.contains(&"classroom-64k::classroom::ttft_p95 (ignored)".to_string()));

    let filtered = run(check(
        dir.path(),
        &["--list", "::classroom::", "c24::errors"],
    ));
    let names = stdout_lines(&filtered);
    assert!(!names.is_empty());
    assert!(
        names
            .iter()
            .all(|n| n.contains("::classroom::") || n.ends_with("c24::errors")),
        "{names:?}"
    );
}

/// `codendum check --list | head -1`: the reader closes the pipe before the
/// listing is written (here at once, before the binary has read its
/// profiles); the listing ends quietly with exit 0, no panic.
#[test]
fn a_listing_whose_reader_stops_early_ends_quietly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut cmd = check(dir.path(), &["--list"]);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn codendum check");
    drop(child.stdout.take());
    let out = child.wait_with_output().expect("wait for codendum check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_failing_target_exits_1_naming_the_trial_and_why() {
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = write_profile(dir.path(), "impossible", ONE_LEVEL);
    let results = dir.path().join("results");
    let mut cmd = check(
        dir.path(),
        &[
            "--results-dir",
            results.to_str().expect("utf8"),
            "impossible::bench-short-c1::",
        ],
    );
    cmd.env("CODENDUM_CAPACITY_PROFILES", &profile);
    let f = run(cmd);
    assert_eq!(f.code, Some(1), "{}", f.both());
    let lines: Vec<&str> = f.stderr.lines().collect();
    assert!(
        lines.contains(&"impossible::bench-short-c1::errors ... ok"),
        "{}",
        f.stderr
    );
    let failed = lines
        .iter()
        .find(|l| l.starts_with("impossible::bench-short-c1::ttft_p95 ... FAILED: TTFT P95 "))
        .unwrap_or_else(|| panic!("no FAILED line:\n{}", f.stderr));
    // The measured figure with its 95 % interval, then the target.
    assert!(
        failed.contains(") exceeds 0.001 s (bench, short prompts, 1 in flight, "),
        "{failed}"
    );
    assert!(
        lines.contains(&"failures:")
            && lines
                .iter()
                .any(|l| l.starts_with("    impossible::bench-short-c1::ttft_p95: TTFT P95 ")),
        "{}",
        f.stderr
    );
    assert_eq!(
        lines.last().copied(),
        Some("codendum: 1 of 3 trials failed: impossible::bench-short-c1::ttft_p95")
    );
    // One workload, with its report, for the three trials.
    let folders: Vec<_> = std::fs::read_dir(&results)
        .expect("results")
        .flatten()
        .collect();
    let runs: Vec<_> = folders
        .iter()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert_eq!(runs.len(), 1, "{folders:?}");
    let report = std::fs::read_to_string(runs[0].path().join("report.md")).expect("report");
    assert!(report.contains("2 of 3 targets met"), "{report}");

    // The passing trials alone, judged from that run again: exit 0.
    let mut again = check(
        dir.path(),
        &[
            "--results-dir",
            results.to_str().expect("utf8"),
            "--reuse-s",
            "3600",
            "--exact",
            "impossible::bench-short-c1::errors",
            "impossible::bench-short-c1::output_tok_per_s",
        ],
    );
    again.env("CODENDUM_CAPACITY_PROFILES", &profile);
    let again = run(again);
    assert_eq!(again.code, Some(0), "{}", again.both());
    assert!(
        again.stderr.contains("judged from the run in"),
        "{}",
        again.stderr
    );
    assert!(
        again.stderr.ends_with("codendum: 2 of 2 trials passed\n"),
        "{}",
        again.stderr
    );
}

/// Capacity targets on a two-seat server: one search in virtual time
/// answers both tiers; twelve students at five seconds are not carried;
/// two at a one-minute TTFT ceiling cannot be called from the quick
/// trial's two-minute windows (their few calls leave the TTFT P95 without
/// an upper bound), so that trial is indeterminate, with its range. The
/// listing names both trials.
const TWO_SEAT_CAPACITY: &str = r#"
[targets.quick.capacity.easy]
students = 2
ttft_p95_s = 60

[targets.quick.capacity.hard]
students = 12
ttft_p95_s = 5
"#;

#[test]
fn a_capacity_target_is_met_or_missed_by_the_search_on_the_twin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = dir.path().join("two-seats.toml");
    std::fs::write(
        &profile,
        format!(
            "{}\n[targets]\n{TWO_SEAT_CAPACITY}",
            codendum_testkit::profiles::gb10_with_seats(2)
        ),
    )
    .expect("profile written");
    let results = dir.path().join("results");
    let results = results.to_str().expect("utf8");
    let mut list = check(dir.path(), &["--list"]);
    list.env("CODENDUM_CAPACITY_PROFILES", &profile);
    let listed = run(list);
    assert_eq!(listed.code, Some(0), "{}", listed.both());
    assert_eq!(
        stdout_lines(&listed),
        vec![
            "two-seats::capacity-easy::students",
            "two-seats::capacity-hard::students"
        ]
    );
    let mut cmd = check(dir.path(), &["--results-dir", results]);
    cmd.env("CODENDUM_CAPACITY_PROFILES", &profile);
    let f = run(cmd);
    assert_eq!(f.code, Some(1), "{}", f.both());
    let lines: Vec<&str> = f.stderr.lines().collect();
    assert!(
        lines.iter().any(|l| l
            .starts_with("two-seats::capacity-easy::students ... indeterminate: the answer 0 to ")),
        "{}",
        f.stderr
    );
    let failed = lines
        .iter()
        .find(|l| {
            l.starts_with(
                "two-seats::capacity-hard::students ... FAILED: fewer than the 12 students asked for: hard: carries ",
            )
        })
        .unwrap_or_else(|| panic!("no FAILED line:\n{}", f.stderr));
    assert!(
        failed.contains("(the embedded twin of two-seats in virtual time, "),
        "{failed}"
    );
    // Each tier's answer is said, the undecided one's too.
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("codendum: note: two-seats: easy: carries ")),
        "{}",
        f.stderr
    );
    assert_eq!(
        lines.last().copied(),
        Some("codendum: 1 of 2 trials failed, 1 indeterminate: two-seats::capacity-hard::students")
    );
}

#[test]
fn bad_input_exits_2_in_one_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let typo = write_profile(dir.path(), "typo", "[targets.classroom]\nttft_p59_s = 3\n");
    let typo = typo.to_str().expect("utf8");
    let nobody = write_profile(dir.path(), "nobody", "[targets.capacity]\nstudents = 0\n");
    let nobody = nobody.to_str().expect("utf8");
    let mut by_env = check(dir.path(), &["--list"]);
    by_env.env("CODENDUM_CAPACITY", "slow");
    let cases: Vec<(Command, &str)> = vec![
        (
            check(dir.path(), &["--mode", "slow"]),
            "\"slow\" is neither quick nor full",
        ),
        (by_env, "\"slow\" is neither quick nor full"),
        (check(dir.path(), &["--profiles", typo]), "ttft_p59_s"),
        (
            check(dir.path(), &["--profiles", nobody]),
            "targets.capacity: students = 0 is not at least 1 student",
        ),
        (
            check(dir.path(), &["no-such-trial"]),
            "no trial matches no-such-trial",
        ),
        (
            check(dir.path(), &["--base-url", "http://127.0.0.1:9/v1"]),
            "not the profile it runs (CODENDUM_PROFILE or --profile",
        ),
    ];
    for (cmd, says) in cases {
        let f = run(cmd);
        assert_eq!(f.code, Some(2), "{}", f.both());
        assert_eq!(f.stderr.lines().count(), 1, "{}", f.both());
        assert!(f.stderr.contains(says), "{}", f.both());
    }
}

/// A server whose `/metrics` shows requests running and waiting: every
/// workload is refused, nothing is sent or written, exit 3.
#[test]
fn a_busy_server_exits_3() {
    let rt = crate::cli_support::runtime();
    let server = rt.block_on(busy_server());
    let dir = tempfile::tempdir().expect("tempdir");
    let profile = write_profile(dir.path(), "guarded", ONE_LEVEL);
    let results = dir.path().join("results");
    let base = format!("{}/v1", server.uri());
    let f = run(check(
        dir.path(),
        &[
            "--base-url",
            &base,
            "--profile",
            profile.to_str().expect("utf8"),
            "--profiles",
            profile.to_str().expect("utf8"),
            "--model",
            "qwen3-coder",
            "--results-dir",
            results.to_str().expect("utf8"),
            "guarded::bench",
        ],
    ));
    assert_eq!(f.code, Some(3), "{}", f.both());
    assert!(
        f.stderr.contains("did not start") && f.stderr.contains("--allow-busy"),
        "{}",
        f.stderr
    );
    assert!(
        f.stderr.lines().last().is_some_and(
            |l| l.starts_with("codendum: 3 of 3 trials failed: guarded::bench-short-c1::")
        ),
        "{}",
        f.stderr
    );
    let sent: Vec<_> = rt
        .block_on(server.received_requests())
        .unwrap_or_default()
        .into_iter()
        .filter(|r| r.url.path().ends_with("/completions"))
        .collect();
    assert!(sent.is_empty(), "no request was sent");
    let written: Vec<_> = std::fs::read_dir(&results)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .collect();
    assert!(written.is_empty(), "nothing ran: {written:?}");
}

/// Ctrl-C during a workload: the run stops and writes what it measured,
/// the next workload does not start, and the check exits 130.
#[test]
fn an_interrupted_check_exits_130_and_starts_nothing_more() {
    use crate::cli_support::Running;
    use codendum_testkit::servers::has_requests;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().expect("tempdir");
    let targets = format!("{ONE_LEVEL}\n[targets.quick.classroom]\nttft_p95_s = 75\n");
    let profile = write_profile(dir.path(), "stopped", &targets);
    let results = dir.path().join("results");
    let cmd = check(
        dir.path(),
        &[
            "--profiles",
            profile.to_str().expect("utf8"),
            "--results-dir",
            results.to_str().expect("utf8"),
        ],
    );
    let mut running = Running::spawn(cmd, dir.path(), "check");
    let start = Instant::now();
    while !has_requests(&results) {
        assert!(
            !running.has_exited(),
            "the check ended before a request finished"
        );
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "no request within 90 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    running.signal("INT");
    let f = running.wait(Duration::from_secs(60));
    assert_eq!(f.code, Some(130), "{}", f.both());
    assert!(
        f.stderr
            .contains("stopped::classroom::ttft_p95 ... FAILED: the classroom workload was not started: the suite was interrupted"),
        "{}",
        f.stderr
    );
    assert!(
        f.stderr
            .lines()
            .last()
            .is_some_and(|l| l.starts_with("codendum: interrupted")),
        "{}",
        f.stderr
    );
    let runs: Vec<_> = std::fs::read_dir(&results)
        .expect("results")
        .flatten()
        .filter(|e| e.path().join("summary.json").is_file())
        .collect();
    assert_eq!(runs.len(), 1, "the bench wrote what it measured");
}
