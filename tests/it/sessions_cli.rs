//! Recorded sessions through the binary: `replay` of real conversations as
//! users against the embedded twin (the theoretical and measured hit rates
//! side by side in its summary, its report and on stderr; the source's
//! licence note kept), a partial source replayed and said, calls beyond the
//! server's context said in the verdict, `export-trace` of every format,
//! and bad flags as one line and exit 2.

use std::path::Path;

use crate::cli_support::{assert_one_line_error, codendum, run, write_file};
use crate::replay_cli::the_folder;
use crate::sessions_import::fixture;

/// `codendum replay SOURCE` against the embedded twin at 200x, its folder
/// under `cwd/results`, `extra` flags after.
fn replay(
    cwd: &Path,
    source: impl AsRef<std::ffi::OsStr>,
    results: &str,
    extra: &[&str],
) -> std::process::Command {
    let mut cmd = codendum(cwd);
    cmd.arg("replay")
        .arg(source)
        .args([
            "--time-scale",
            "200",
            "--results-dir",
            results,
            "--no-report",
        ])
        .args(extra);
    cmd
}

fn summary(folder: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(folder.join("summary.json")).expect("summary"))
        .expect("json")
}

#[test]
fn a_conversation_replayed_as_a_user_says_both_hit_rates_and_its_licence() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    let f = run(replay(
        cwd,
        fixture("claude-code/trace_0187.json"),
        "results",
        &["--users", "1"],
    ));
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(f.stderr.contains("(claude-code, "), "{}", f.stderr);
    let line = f
        .stderr
        .lines()
        .find(|l| l.starts_with("Prefix-cache hit rate:") && l.contains("theoretical"))
        .unwrap_or_else(|| panic!("no hit-rate line:\n{}", f.stderr));
    assert!(line.contains("measured"), "{line}");
    let folder = the_folder(&cwd.join("results"));
    let s = summary(&folder);
    let r = &s["replay"];
    assert_eq!(r["source_kind"], "claude-code");
    assert_eq!(r["users"], 1);
    assert_eq!(r["calls"], 3);
    assert_eq!(r["timing"], "after-answer");
    assert_eq!(
        r["licence"],
        "traces from callanjfox/kv-cache-tester (Apache-2.0)"
    );
    assert_eq!(r["sizes_counted"], 3);
    assert_eq!(r["sizes_within_1_pct"], 3, "{r}");
    assert!(
        f.stderr.contains("Prompt sizes: 3 of 3 calls within 1 %"),
        "{}",
        f.stderr
    );
    let theoretical = r["theoretical_hit_rate"].as_f64().expect("theoretical");
    let measured = s["summary"]["server"]["prefix_cache_hit_rate"]
        .as_f64()
        .expect("measured");
    assert!(
        (theoretical - measured).abs() <= 0.02,
        "{theoretical} {measured}"
    );
    let mut cmd = codendum(cwd);
    cmd.arg("report").arg(&folder);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    let report = std::fs::read_to_string(folder.join("report.md")).expect("report");
    assert!(
        report.contains("| prefix-cache hit rate, theoretical / measured |"),
        "{report}"
    );
    assert!(
        report.contains("| sessions started | as 1 users |"),
        "{report}"
    );
}

#[test]
fn a_partial_source_is_replayed_and_the_bad_line_said() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    write_file(
        cwd,
        "cut.jsonl",
        "{\"timestamp\": 0, \"input_length\": 300, \"output_length\": 4}\n\
         {\"timestamp\": 500, \"input_length\": 320, \"output_length\": 4}\n\
         {\"timestamp\": 900, \"input_len",
    );
    let f = run(replay(cwd, "cut.jsonl", "results", &[]));
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(
        f.stderr
            .lines()
            .any(|l| l.starts_with("codendum: warning: cut.jsonl line 3: not a trace line")),
        "{}",
        f.stderr
    );
    let last = f.stderr.lines().last().unwrap_or("");
    assert!(last.contains("the source was read in part"), "{last}");
    let s = summary(&the_folder(&cwd.join("results")));
    assert_eq!(s["summary"]["requests"], 2, "the calls before the bad line");
    assert_eq!(s["replay"]["unread"].as_array().map(Vec::len), Some(1));
}

#[test]
fn calls_beyond_the_context_are_said_in_the_verdict() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    write_file(
        cwd,
        "long.jsonl",
        "{\"timestamp\": 0, \"input_length\": 1000, \"output_length\": 4}\n\
         {\"timestamp\": 100, \"input_length\": 70000, \"output_length\": 4}\n",
    );
    for (mode, said, requests) in [
        (
            "skip",
            "1 calls beyond the server's max_model_len of 65536 tokens skipped",
            1,
        ),
        (
            "shorten",
            "1 calls beyond the server's max_model_len of 65536 tokens shortened from the front",
            2,
        ),
    ] {
        let f = run(replay(cwd, "long.jsonl", mode, &["--too-long", mode]));
        assert_eq!(f.code, Some(0), "{}", f.both());
        let last = f.stderr.lines().last().unwrap_or("");
        assert!(last.contains(said), "{mode}: {last}");
        let s = summary(&the_folder(&cwd.join(mode)));
        assert_eq!(s["summary"]["requests"], requests, "{mode}");
        assert_eq!(s["replay"]["max_model_len"], 65536);
        let longest = s["summary"]["prompt_tokens_max"].as_u64().expect("max");
        assert!(longest <= 65536 - 4, "{mode}: {longest}");
    }
}

#[test]
fn every_source_exports_as_mooncake_and_aiperf() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    for (source, format, calls) in [
        (fixture("claude-code"), None, 75usize),
        (
            fixture("tracelab/round_trace.jsonl.gz"),
            Some("tracelab"),
            19,
        ),
        (fixture("opencode-1.18.33"), None, 31),
        (fixture("opencode-1.18.33/capture"), Some("capture"), 32),
    ] {
        for out in ["mooncake", "aiperf"] {
            let mut cmd = codendum(cwd);
            cmd.arg("export-trace")
                .arg(&source)
                .args(["--format", out, "-o", "out.jsonl"]);
            if let Some(f) = format {
                cmd.args(["--source-format", f]);
            }
            let f = run(cmd);
            assert_eq!(f.code, Some(0), "{source:?} {out}: {}", f.both());
            let text = std::fs::read_to_string(cwd.join("out.jsonl")).expect("written");
            let lines = text.lines().count();
            assert_eq!(lines, calls, "{source:?} {out}");
            assert!(!text.contains("twin-test-key"));
        }
    }
}

#[test]
fn bad_session_flags_are_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    let conv = fixture("claude-code/trace_0187.json");
    let conv = conv.to_str().expect("utf-8 path");
    let cases: &[(&[&str], &str)] = &[
        (&["replay", conv, "--users", "0"], "--users"),
        (&["replay", conv, "--max-think=-1"], "--max-think"),
        (&["replay", conv, "--max-wait=nan"], "--max-wait"),
        (&["replay", conv, "--format", "csv"], "--format"),
        (&["replay", conv, "--format", "tracelab"], "line 1"),
        (
            &[
                "export-trace",
                conv,
                "--source-format",
                "csv",
                "-o",
                "x.jsonl",
            ],
            "--source-format",
        ),
    ];
    for (args, culprit) in cases {
        let mut cmd = codendum(cwd);
        cmd.args(*args);
        if args[0] == "replay" {
            cmd.arg("--no-report");
        }
        let f = run(cmd);
        assert_eq!(f.code, Some(2), "{args:?}:\n{}", f.both());
        assert_one_line_error(&f, culprit);
    }
    // --start-part-way needs --users (clap's usage error, exit 2).
    let mut cmd = codendum(cwd);
    cmd.args(["replay", conv, "--start-part-way", "--no-report"]);
    let f = run(cmd);
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert!(f.stderr.contains("--users"), "{}", f.stderr);
}
