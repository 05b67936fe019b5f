//! After class: a class captured through `codendum capture` in front of
//! the twin, OpenCode-like students each with their own key (one of them
//! meets a 503 and retries), and the host timeline `codendum metrics
//! --watch --json` wrote meanwhile, turned into reports by the binary:
//! the class alone, the class with the server's side, the timeline alone,
//! and two captured classes compared.

use std::path::Path;
use std::time::Duration;

use codendum::capture;

use crate::capture_support::{class_twin, opencode_session};
use crate::cli_support::{assert_one_line_error, codendum, run, runtime, Running};

const KEYS: [&str; 3] = ["sk-lab-student-1", "sk-lab-student-2", "sk-lab-student-3"];

/// Captures a class of three students into `out` while `metrics --json`
/// records the twin's timeline into `<logs>/timeline.stdout`.
fn capture_a_class(rt: &tokio::runtime::Runtime, logs: &Path, out: &Path) -> std::path::PathBuf {
    // The fifth model call of the day is answered with a 503.
    let twin = rt.block_on(class_twin(&KEYS, 200.0, Some("status=503@#5")));
    let mut metrics = codendum(logs);
    metrics.args([
        "metrics",
        "--metrics-url",
        &format!("{}/metrics", twin.base_url().trim_end_matches("/v1")),
        "--watch",
        "0.05",
        "--json",
    ]);
    let watching = Running::spawn(metrics, logs, "timeline");
    let timeline = logs.join("timeline.stdout");
    // The watch has its first sample before the class starts.
    while std::fs::read_to_string(&timeline)
        .unwrap_or_default()
        .lines()
        .count()
        < 2
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    let summary = rt.block_on(async {
        let config =
            capture::CaptureConfig::new(&twin.base_url(), "127.0.0.1:0", out.to_path_buf())
                .expect("config");
        let cap = capture::start(config).await.expect("capture");
        let base = cap.base_url();
        let mut class = tokio::task::JoinSet::new();
        for (i, (key, requests)) in KEYS.iter().zip([2, 1, 1]).enumerate() {
            let base = base.clone();
            class.spawn(async move {
                opencode_session(&base, key, &format!("ses_student_{i}"), requests, 0.02).await
            });
        }
        let mut statuses = Vec::new();
        while let Some(s) = class.join_next().await {
            statuses.extend(s.expect("a student"));
        }
        assert_eq!(
            statuses.iter().filter(|s| **s == 503).count(),
            1,
            "{statuses:?}"
        );
        cap.finish(Duration::from_secs(5)).await
    });
    assert_eq!(summary.losses.calls_lost(), 0);
    assert_eq!(summary.students, 3);
    // A few samples after the class, then the watch is stopped.
    let lines = std::fs::read_to_string(&timeline)
        .unwrap_or_default()
        .lines()
        .count();
    while std::fs::read_to_string(&timeline)
        .unwrap_or_default()
        .lines()
        .count()
        < lines + 2
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    watching.signal("INT");
    let f = watching.wait(Duration::from_secs(20));
    assert_eq!(f.code, Some(0), "{}", f.both());
    rt.block_on(twin.shutdown());
    timeline
}

fn report(dir: &Path, args: &[&str]) -> String {
    let mut cmd = codendum(dir);
    cmd.arg("report").args(args);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    f.stdout
}

#[test]
fn a_captured_class_and_its_host_timeline_become_reports() {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    let cap = d.join("monday");
    let timeline = capture_a_class(&rt, d, &cap);
    let tl = d.join("tl.jsonl");
    std::fs::copy(&timeline, &tl).expect("copy timeline");

    // The class alone: the students' side.
    let printed = report(d, &["monday"]);
    assert!(
        printed.contains("report.md") && printed.contains("report.html"),
        "{printed}"
    );
    let md = std::fs::read_to_string(cap.join("report.md")).expect("report.md");
    assert!(md.starts_with("# Class report: http://127.0.0.1:"), "{md}");
    assert!(md.contains("Completed cleanly"), "{md}");
    assert!(md.contains("| Students | 3 |"), "{md}");
    for s in ["student 1", "student 2", "student 3"] {
        assert!(md.contains(&format!("| {s} |")), "{s}: {md}");
    }
    assert!(
        md.contains("Coding requests completed / per hour | 4 /"),
        "{md}"
    );
    // The 503 was retried: one retry, no failed call.
    assert!(md.contains("/ 0 / 1 |"), "calls / failed / retries: {md}");
    assert!(
        md.contains("- Retried by the clients (each a failed attempt the student waited through): http_503 × 1."),
        "{md}"
    );
    assert!(
        md.contains("give the timeline recorded on the GPU host"),
        "{md}"
    );
    assert!(
        !md.contains(KEYS[0]) && !md.contains("sk-lab"),
        "no key in the report"
    );

    // With the host timeline: the server's side.
    report(d, &["monday", "--server-timeline", "tl.jsonl"]);
    let md = std::fs::read_to_string(cap.join("report.md")).expect("report.md");
    assert!(md.contains("comes from the host timeline"), "{md}");
    let peaks = md
        .lines()
        .find(|l| l.starts_with("| Peak running / waiting requests |"))
        .expect("peaks row");
    assert!(
        !peaks.contains("– / –"),
        "the server's peaks are read: {peaks}"
    );
    let html = std::fs::read_to_string(cap.join("report.html")).expect("report.html");
    assert!(html.contains("<svg") && html.contains("Students"));

    // The timeline alone: the server's day.
    let printed = report(d, &["tl.jsonl"]);
    assert!(printed.contains("tl-report.md"), "{printed}");
    let md = std::fs::read_to_string(d.join("tl-report.md")).expect("tl-report.md");
    assert!(md.starts_with("# Server timeline: tl.jsonl"), "{md}");
    assert!(
        md.contains("| Requests finished / with an error / aborted |"),
        "{md}"
    );
    assert!(d.join("tl-report.html").is_file());

    // Two captured classes side by side.
    let again = d.join("tuesday");
    capture_a_class(&rt, d, &again);
    let mut cmd = codendum(d);
    cmd.args(["compare", "monday", "tuesday", "--out", "cmp"]);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    let cmp = std::fs::read_to_string(d.join("cmp/compare.md")).expect("compare.md");
    assert!(cmp.contains("monday") && cmp.contains("tuesday"), "{cmp}");
}

#[test]
fn what_report_cannot_read_is_named() {
    let dir = tempfile::tempdir().expect("dir");
    let d = dir.path();
    std::fs::write(d.join("tl.jsonl"), "").expect("empty");
    let mut cmd = codendum(d);
    cmd.args(["report", "tl.jsonl"]);
    let f = run(cmd);
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "holds no sample");
    let mut cmd = codendum(d);
    cmd.args(["report", "tl.jsonl", "--server-timeline", "tl.jsonl"]);
    let f = run(cmd);
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "--server-timeline");
    std::fs::create_dir(d.join("cap")).expect("mkdir");
    std::fs::write(d.join("cap/capture.json"), "{\"schema_version\": 1}").expect("header");
    std::fs::write(d.join("cap/calls.jsonl"), "").expect("calls");
    let mut cmd = codendum(d);
    cmd.args(["report", "cap"]);
    let f = run(cmd);
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "capture header");
}
