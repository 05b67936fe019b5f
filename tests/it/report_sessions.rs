//! After class from the students' own tools: `codendum report` of sessions
//! OpenCode stored (the store the real OpenCode 1.18.33 wrote), of Claude
//! Code conversations and of TraceLab rows, through the binary; the host
//! timeline placed on the store's clock; `--out` refused where it does not
//! apply.

use std::path::Path;

use crate::cli_support::{assert_one_line_error, codendum, run};
use crate::sessions_import::fixture;
use codendum_core::prom::{ServerSnapshot, TimelineSample};
use codendum_core::trace::detect::ImportOptions;
use codendum_testkit::servers::fixture as server_fixture;

fn report(cwd: &Path, source: &Path, extra: &[&str]) -> crate::cli_support::Finished {
    let mut cmd = codendum(cwd);
    cmd.arg("report").arg(source).args(extra);
    run(cmd)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn opencodes_store_becomes_a_class_report_with_the_servers_side() {
    let dir = tempfile::tempdir().expect("dir");
    let store = fixture("opencode-1.18.33/opencode.db.gz");
    // A host timeline over the store's own hour: the busy page every 5 s.
    let trace = codendum::replay::source::read(
        &store,
        None,
        ImportOptions {
            block_size: 16,
            max_sessions: None,
        },
    )
    .expect("the store");
    let start = trace
        .clock_utc
        .expect("the store keeps the student's clock");
    let page = ServerSnapshot::from_text(&server_fixture("metrics/vllm-0.30-metrics-busy.txt"))
        .expect("page");
    let lines: String = (-12..60)
        .map(|k| {
            let sample = TimelineSample {
                utc: start + chrono::Duration::seconds(5 * k),
                t: 5.0 * (k + 12) as f64,
                snapshot: Some(page.clone()),
                error: None,
            };
            serde_json::to_string(&sample).expect("json") + "\n"
        })
        .collect();
    let timeline = dir.path().join("tl.jsonl");
    std::fs::write(&timeline, lines).expect("timeline");

    let f = report(
        dir.path(),
        &store,
        &["--server-timeline", timeline.to_str().expect("utf-8")],
    );
    assert_eq!(f.code, Some(0), "{}", f.both());
    // Beside the working directory, named after the source.
    assert_eq!(
        f.stdout.lines().collect::<Vec<_>>(),
        ["report-opencode/report.md", "report-opencode/report.html"]
    );
    let out = dir.path().join("report-opencode");
    let md = read(&out.join("report.md"));
    assert!(
        md.contains("OpenCode's session store (1 file, 1 session, 31 model calls)"),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "| Started | {} UTC |",
            start.format("%Y-%m-%d %H:%M:%S")
        )),
        "{md}"
    );
    assert!(md.contains("| Students | 1 |"), "{md}");
    // The server's side from the timeline: its peaks are the busy page's.
    let peaks = md
        .lines()
        .find(|l| l.starts_with("| Peak running / waiting requests"))
        .expect("peaks row");
    assert!(!peaks.contains("– / –"), "{peaks}");
    assert!(!md.contains("no UTC start"), "{md}");
    // Sizes and timing only: no prompt text of the session is written.
    let html = read(&out.join("report.html"));
    assert!(html.contains("<html"), "not HTML");
    // The store keeps no first-token time: no empty TTFT or speed chart is
    // drawn, the coding requests' curve and the host's queue are.
    assert!(md.contains("0 requests with a first token"), "{md}");
    assert!(!html.contains(">Time to first token<"), "an empty chart");
    assert!(!html.contains(">Output speed per user<"), "an empty chart");
    assert!(html.contains(">Time to complete a coding request<"));
    assert!(html.contains(">Server queue over time<"));
}

#[test]
fn claude_code_conversations_and_tracelab_rows_are_reported_into_out() {
    let dir = tempfile::tempdir().expect("dir");
    let f = report(
        dir.path(),
        &fixture("claude-code"),
        &["--out", "after-class"],
    );
    assert_eq!(f.code, Some(0), "{}", f.both());
    let md = read(&dir.path().join("after-class/report.md"));
    assert!(
        md.contains("Claude Code conversations (6 files, 6 sessions"),
        "{md}"
    );
    assert!(md.contains("| Students | 6 |"), "{md}");
    assert!(
        md.contains("errors, retries and abandoned calls are not counted"),
        "{md}"
    );

    // TraceLab lays its sessions out from one start: no clock for a timeline.
    let timeline = dir.path().join("tl.jsonl");
    std::fs::write(&timeline, "").expect("timeline");
    let f = report(
        dir.path(),
        &fixture("tracelab/round_trace.jsonl"),
        &["--server-timeline", timeline.to_str().expect("utf-8")],
    );
    assert_eq!(f.code, Some(0), "{}", f.both());
    let md = read(&dir.path().join("report-round_trace/report.md"));
    assert!(md.contains("TraceLab rows (1 file, "), "{md}");
    assert!(md.contains("no UTC start to place the timeline on"), "{md}");
}

#[test]
fn out_goes_only_with_recorded_sessions() {
    let dir = tempfile::tempdir().expect("dir");
    let folder = dir.path().join("results");
    std::fs::create_dir_all(&folder).expect("dir");
    std::fs::write(folder.join("summary.json"), r#"{"kind":"bench"}"#).expect("summary");
    let f = report(dir.path(), &folder, &["--out", "elsewhere"]);
    assert_one_line_error(&f, "--out");
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert!(!dir.path().join("elsewhere").exists());
}
