//! `codendum replay` and `codendum export-trace` through the binary: bad
//! input is one line naming the flag or file (exit 2); a session trace
//! replayed with more sessions than recorded against the embedded twin
//! gives a replay folder that `report` and `compare` read.

use crate::cli_support;

use cli_support::{assert_one_line_error, codendum, run, write_file};

/// Two sessions of two turns in AIPerf's form (the second turn adds 64
/// tokens to the history), sharing a 512-token prefix.
pub const TRACE: &str = concat!(
    r#"{"session_id":"a","timestamp":0,"input_length":576,"output_length":8,"hash_ids":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,100,101,102,103]}"#,
    "\n",
    r#"{"session_id":"a","delay":500,"input_length":64,"output_length":8,"hash_ids":[104,105,106,107]}"#,
    "\n",
    r#"{"session_id":"b","timestamp":1000,"input_length":576,"output_length":8,"hash_ids":[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30,31,32,200,201,202,203]}"#,
    "\n",
    r#"{"session_id":"b","delay":500,"input_length":64,"output_length":8,"hash_ids":[204,205,206,207]}"#,
    "\n",
);

#[test]
fn bad_replay_and_export_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    write_file(
        cwd,
        "bad.jsonl",
        "not json\n{\"timestamp\":0,\"input_length\":10}\n",
    );
    write_file(cwd, "good.jsonl", TRACE);
    std::fs::create_dir_all(cwd.join("empty")).expect("dir");
    let cases: &[(&[&str], &str)] = &[
        (&["replay", "missing.jsonl"], "missing.jsonl"),
        (&["replay", "bad.jsonl"], "line 1"),
        (&["replay", "good.jsonl", "--speed", "0"], "--speed"),
        (&["replay", "good.jsonl", "--sessions", "0"], "--sessions"),
        (
            &["replay", "good.jsonl", "--block-size", "0"],
            "--block-size",
        ),
        (
            &["replay", "good.jsonl", "--block-size", "64"],
            "block size",
        ),
        (&["replay", "empty"], "empty"),
        (&["export-trace", "empty", "-o", "x.jsonl"], "empty"),
        (&["export-trace", "good.jsonl"], "--out"),
    ];
    for (args, culprit) in cases {
        let mut cmd = codendum(cwd);
        cmd.args(*args)
            .args(["--no-report"].iter().filter(|_| args[0] == "replay"));
        let f = run(cmd);
        assert_eq!(f.code, Some(2), "{args:?}:\n{}", f.both());
        assert_one_line_error(&f, culprit);
    }
}

/// The one run folder under `results`.
pub fn the_folder(results: &std::path::Path) -> std::path::PathBuf {
    let folders: Vec<_> = std::fs::read_dir(results)
        .expect("results")
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(folders.len(), 1, "{folders:?}");
    folders[0].clone()
}

#[test]
fn a_replay_folder_reads_as_a_class_in_report_and_compare() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    write_file(cwd, "sessions.jsonl", TRACE);
    let mut cmd = codendum(cwd);
    cmd.args([
        "replay",
        "sessions.jsonl",
        "--sessions",
        "4",
        "--time-scale",
        "100",
        "--results-dir",
        "results",
        "--no-report",
    ]);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    let folder = &the_folder(&cwd.join("results"));
    assert!(folder
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("replay-")));
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(folder.join("summary.json")).expect("summary"),
    )
    .expect("json");
    assert_eq!(summary["kind"], "replay");
    assert_eq!(summary["replay"]["sessions"], 4, "two sessions repeated");
    assert_eq!(summary["replay"]["calls"], 8);
    assert_eq!(summary["summary"]["requests"], 8);
    assert_eq!(summary["summary"]["errors"], 0);
    let requests = std::fs::read_to_string(folder.join("requests.jsonl")).expect("requests");
    assert_eq!(requests.lines().count(), 8);
    // The second turn carries the first one's prompt and answer: 576 + 8 +
    // 64 tokens, give or take the template of the extra messages.
    let second: Vec<u64> = requests
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["prompt_tokens"].as_u64())
        .filter(|&p| p > 576)
        .collect();
    assert_eq!(second.len(), 4, "{requests}");
    assert!(second.iter().all(|p| (644..=652).contains(p)), "{second:?}");
    let mut cmd = codendum(cwd);
    cmd.arg("report").arg(folder);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    let report = std::fs::read_to_string(folder.join("report.md")).expect("report.md");
    assert!(report.starts_with("# Replay report"), "{report}");
    assert!(
        report.contains("| replayed | sessions.jsonl (mooncake) |"),
        "{report}"
    );
    assert!(
        report.contains("| steady window | the whole replay |"),
        "{report}"
    );
    let mut cmd = codendum(cwd);
    cmd.arg("compare").arg(folder).arg(folder);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(folder.join("compare.md").is_file());
}

#[test]
fn a_replayed_classroom_keeps_its_steady_window() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    let mut cmd = codendum(cwd);
    cmd.args([
        "classroom",
        "--users",
        "2",
        "--duration",
        "120",
        "--ramp-up",
        "30",
        "--time-scale",
        "200",
        "--results-dir",
        "class",
        "--no-report",
        "--yes",
    ]);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    let class = the_folder(&cwd.join("class"));
    let mut cmd = codendum(cwd);
    cmd.arg("replay").arg(&class).args([
        "--speed",
        "2",
        "--time-scale",
        "200",
        "--results-dir",
        "again",
        "--no-report",
    ]);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    let replay = the_folder(&cwd.join("again"));
    let summary: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(replay.join("summary.json")).expect("summary"),
    )
    .expect("json");
    // The class's ramp-up and window at twice the speed: its steady state
    // is the same stretch of the class.
    let p = &summary["parameters"];
    assert_eq!(p["ramp_up_s"], 15.0, "{p}");
    let window = p["duration_s"].as_f64().expect("duration_s");
    assert!(window > 15.0 && window <= 60.0, "{p}");
    let mut cmd = codendum(cwd);
    cmd.arg("report").arg(&replay);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    let report = std::fs::read_to_string(replay.join("report.md")).expect("report.md");
    let line = format!("| steady window | 15–{window:.0} s (the class's own) |");
    assert!(report.contains(&line), "{line} in\n{report}");
}
