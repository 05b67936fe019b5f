//! `--repeat N` on `bench`, `classroom` and `replay` against the embedded
//! twin: one folder per run (each a normal results folder), `repeat.json`
//! and a report beside them; the coefficient of variation recomputed by
//! hand from the runs' own summaries; the pooled interval narrower than a
//! single run's; the targets judged on the pooled figures; a Ctrl-C keeps
//! what the finished runs measured.

use crate::cli_support;

use std::time::{Duration, Instant};

use crate::replay_cli::{the_folder, TRACE};
use cli_support::{assert_one_line_error, codendum, read_json, run, write_file, Running};
use codendum_core::bound::{Bound, Outcome};
use codendum_core::stats::wilson;
use serde_json::Value;

/// The figure `key` of the group labelled `label` in `repeat.json`.
fn figure<'a>(repeat: &'a Value, label: &str, key: &str) -> &'a Value {
    repeat["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["label"] == label)
        .and_then(|g| {
            g["figures"]
                .as_array()
                .expect("figures")
                .iter()
                .find(|f| f["key"] == key)
        })
        .unwrap_or_else(|| panic!("{label} {key} in {repeat}"))
}

/// Mean, sample standard deviation and CV of `v`, by hand.
fn spread(v: &[f64]) -> (f64, f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let sd = (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
    (mean, sd, sd / mean)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// `codendum bench` of short prompts with 16 output tokens against the
/// twin at 50×, into `results/`, with `args` added.
fn short_bench(cwd: &std::path::Path, args: &[&str]) -> std::process::Command {
    let mut cmd = codendum(cwd);
    cmd.args(["bench", "--shapes", "short", "--output-tokens", "16"]);
    cmd.args(["--time-scale", "50", "--results-dir", "results"]);
    cmd.args(args);
    cmd
}

/// `codendum compare` of a repetition's folder against its own first run,
/// into `cmp/`; its `compare.md`.
fn compare_with_first_run(cwd: &std::path::Path, top: &std::path::Path) -> String {
    let mut cmd = codendum(cwd);
    cmd.arg("compare")
        .arg(top)
        .arg(top.join("run-1"))
        .args(["--out", "cmp"]);
    let c = run(cmd);
    assert_eq!(c.code, Some(0), "{}", c.both());
    std::fs::read_to_string(cwd.join("cmp").join("compare.md")).expect("compare.md")
}

fn width(interval: &Value) -> f64 {
    interval["hi"].as_f64().expect("hi") - interval["lo"].as_f64().expect("lo")
}

#[test]
fn bench_repeat_writes_each_run_and_the_figures_across_them() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    let f = run(short_bench(
        cwd,
        &[
            "--concurrency",
            "4",
            "--requests-per-level",
            "32",
            "--slo",
            "ttft=60s",
            "--seed",
            "7",
            "--repeat",
            "3",
        ],
    ));
    assert_eq!(f.code, Some(0), "{}", f.both());
    for i in 1..=3 {
        assert!(
            f.stderr.contains(&format!("Run {i}/3 (seed {})", 6 + i)),
            "{}",
            f.stderr
        );
    }
    assert!(
        f.stderr.contains("repeat:             3 runs"),
        "{}",
        f.stderr
    );
    assert!(f.stderr.contains("Across 3 runs"), "{}", f.stderr);
    let top = the_folder(&cwd.join("results"));
    let repeat = read_json(&top.join("repeat.json"));
    assert_eq!(repeat["kind"], "repeat");
    assert_eq!(repeat["schema_version"], 1);
    assert_eq!(repeat["of"], "bench");
    assert_eq!(repeat["stopped_early"], false);
    assert!(top.join("report.md").is_file() && top.join("report.html").is_file());
    let mut summaries = Vec::new();
    for i in 1..=3u64 {
        let run = top.join(format!("run-{i}"));
        let s = read_json(&run.join("summary.json"));
        assert_eq!(s["parameters"]["seed"], 6 + i, "run {i}'s own seed");
        assert!(run.join("requests.jsonl").is_file() && run.join("report.md").is_file());
        summaries.push(s);
    }
    // CV from the runs' own figures, by hand.
    let per_run: Vec<f64> = summaries
        .iter()
        .map(|s| s["levels"][0]["output_tok_per_s"].as_f64().expect("rate"))
        .collect();
    let (mean, sd, cv) = spread(&per_run);
    let out = figure(&repeat, "short, N=4", "output_tok_per_s");
    assert!(close(out["mean"].as_f64().expect("mean"), mean), "{out}");
    assert!(close(out["sd"].as_f64().expect("sd"), sd), "{out}");
    assert!(close(out["cv"].as_f64().expect("cv"), cv), "{out}");
    let values: Vec<f64> = out["values"]
        .as_array()
        .expect("values")
        .iter()
        .map(|v| v.as_f64().expect("value"))
        .collect();
    assert_eq!(values, per_run);
    // The shares are pooled over every run's requests: with none failing
    // and every one meeting the SLO, three runs pin both down more narrowly
    // than one (a percentile's pooled interval also carries how far the
    // runs sit apart, so it need not shrink on a loaded machine).
    for key in ["error_rate", "slo_share"] {
        let pooled = width(&figure(&repeat, "short, N=4", key)["pooled_interval"]);
        for s in &summaries {
            let single = width(&s["levels"][0]["intervals"][key]);
            assert!(
                pooled < single,
                "{key}: pooled {pooled} vs one run's {single}"
            );
        }
    }
    // The SLO is judged on the pooled share, by the one rule.
    let (met, n) = summaries.iter().fold((0u64, 0u64), |(m, n), s| {
        let l = &s["levels"][0];
        let requests = l["requests"].as_u64().expect("requests");
        let share = l["slo_share"].as_f64().expect("share");
        (m + (share * requests as f64).round() as u64, n + requests)
    });
    let judged = repeat["judgements"]
        .as_array()
        .expect("judgements")
        .iter()
        .find(|j| j["figure"] == "slo_share")
        .expect("slo judged");
    let expected = Bound::Min.judge(Some(met as f64 / n as f64), wilson(met, n), 0.95);
    assert_eq!(
        judged["outcome"],
        serde_json::to_value(expected).expect("outcome")
    );
    assert_eq!(expected, Outcome::Met, "every request meets a 60 s TTFT");
    // The verdict counts every run's calls.
    let calls: u64 = summaries
        .iter()
        .map(|s| s["verdict"]["calls"].as_u64().expect("calls"))
        .sum();
    assert_eq!(repeat["verdict"]["calls"], calls);
    let report = std::fs::read_to_string(top.join("report.md")).expect("report");
    assert!(report.contains("| Figure | Pooled (95 % interval) | Mean ± sd | Min–max | CV % | Run 1 | Run 2 | Run 3 |"), "{report}");
    // `report` rebuilds it from the files, and each run still reads alone.
    std::fs::remove_file(top.join("report.md")).expect("rm");
    let mut cmd = codendum(cwd);
    cmd.arg("report").arg(&top);
    let r = run(cmd);
    assert_eq!(r.code, Some(0), "{}", r.both());
    assert!(top.join("report.md").is_file());
    let mut cmd = codendum(cwd);
    cmd.arg("compare")
        .arg(top.join("run-1"))
        .arg(top.join("run-2"));
    let c = run(cmd);
    assert_eq!(c.code, Some(0), "{}", c.both());
    // The repetition itself compares by its pooled figures: against its
    // own first run, the output rate (pooled as the runs' mean, its
    // interval by Student's t over three runs, which holds every run's
    // value) cannot be a real change.
    let md = compare_with_first_run(cwd, &top);
    let name = top
        .file_name()
        .expect("name")
        .to_string_lossy()
        .into_owned();
    assert!(
        md.contains(&format!("Repeated runs: {name} (3 runs)")),
        "{md}"
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| Output "))
        .unwrap_or_else(|| panic!("an output row in {md}"));
    let pooled = out["pooled"].as_f64().expect("pooled");
    assert!(row.contains(&format!("{pooled:.1}")), "{row} vs {pooled}");
    assert!(row.trim_end().ends_with("| within noise |"), "{row}");
}

#[test]
fn a_repeated_sweep_pools_each_rate_by_its_place_and_compares_by_it() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    let f = run(short_bench(
        cwd,
        &[
            "--sweep",
            "2",
            "--concurrency",
            "4",
            "--requests-per-level",
            "16",
            "--seed",
            "3",
            "--repeat",
            "2",
            "--no-report",
        ],
    ));
    assert_eq!(f.code, Some(0), "{}", f.both());
    let top = the_folder(&cwd.join("results"));
    let repeat = read_json(&top.join("repeat.json"));
    let rates_of = |i: u32| -> Vec<f64> {
        let s = read_json(&top.join(format!("run-{i}")).join("summary.json"));
        s["levels"]
            .as_array()
            .expect("levels")
            .iter()
            .filter_map(|l| l["rate"]["rate_per_s"].as_f64())
            .collect()
    };
    let (a, b) = (rates_of(1), rates_of(2));
    assert_eq!((a.len(), b.len()), (2, 2), "{a:?} {b:?}");
    let labels: Vec<&str> = repeat["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .map(|g| g["label"].as_str().expect("label"))
        .collect();
    // Two closed-loop levels and two rate levels, each pooled over both
    // runs: no level left alone in a group of one run.
    assert_eq!(labels.len(), 4, "{labels:?}");
    for g in repeat["groups"].as_array().expect("groups") {
        assert_eq!(g["runs"], serde_json::json!([1, 2]), "{g}");
    }
    for k in 0..2 {
        let label = labels
            .iter()
            .find(|l| l.contains(&format!("sweep rate {}", k + 1)))
            .or_else(|| {
                labels
                    .iter()
                    .find(|l| l.ends_with(&format!("{} req/s", a[k])))
            })
            .unwrap_or_else(|| panic!("rate {} in {labels:?}", k + 1));
        if a[k] != b[k] {
            let rate = figure(&repeat, label, "rate_per_s");
            assert_eq!(rate["values"], serde_json::json!([a[k], b[k]]), "{rate}");
        }
    }
    // Compared with its own first run, every level of the repetition,
    // the sweep's rates included, finds its pooled figures.
    let md = compare_with_first_run(cwd, &top);
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with("| Output ")).collect();
    assert_eq!(rows.len(), 4, "{md}");
    for row in rows {
        let pooled_cell = row.split('|').nth(2).expect("a cell").trim();
        assert_ne!(pooled_cell, "–", "{row}");
    }
}

#[test]
fn classroom_repeat_pools_the_class_and_refuses_zero_runs() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    let class = |repeat: &str| {
        let mut cmd = codendum(cwd);
        cmd.args([
            "classroom",
            "--users",
            "3",
            "--duration",
            "120",
            "--ramp-up",
            "10",
            "--time-scale",
            "100",
            "--repeat",
            repeat,
            "--results-dir",
            "results",
            "--no-report",
        ]);
        cmd
    };
    let f = run(class("0"));
    assert_eq!(f.code, Some(2), "{}", f.both());
    assert_one_line_error(&f, "--repeat");
    let f = run(class("2"));
    assert_eq!(f.code, Some(0), "{}", f.both());
    let top = the_folder(&cwd.join("results"));
    assert!(top
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("classroom-")));
    let repeat = read_json(&top.join("repeat.json"));
    assert_eq!(repeat["of"], "classroom");
    let runs: Vec<Value> = (1..=2)
        .map(|i| read_json(&top.join(format!("run-{i}")).join("summary.json")))
        .collect();
    let per_run: Vec<f64> = runs
        .iter()
        .map(|s| s["summary"]["ttft_p95_s"].as_f64().expect("ttft"))
        .collect();
    let ttft = figure(&repeat, "class", "ttft_p95_s");
    let (mean, _, cv) = spread(&per_run);
    assert!(close(ttft["mean"].as_f64().expect("mean"), mean), "{ttft}");
    match ttft["cv"].as_f64() {
        Some(got) => assert!(close(got, cv), "{ttft}"),
        None => assert_eq!(mean, 0.0),
    }
    assert_eq!(ttft["unstable"].as_bool(), Some(cv > 0.10), "{ttft}");
    let calls: u64 = runs
        .iter()
        .map(|s| s["verdict"]["calls"].as_u64().expect("calls"))
        .sum();
    assert_eq!(repeat["verdict"]["calls"], calls);
    assert!(!top.join("report.md").exists(), "--no-report");
}

#[test]
fn replay_repeat_replays_the_trace_once_per_run() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    write_file(cwd, "sessions.jsonl", TRACE);
    let mut cmd = codendum(cwd);
    cmd.args([
        "replay",
        "sessions.jsonl",
        "--time-scale",
        "100",
        "--repeat",
        "2",
        "--results-dir",
        "results",
    ]);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    let top = the_folder(&cwd.join("results"));
    let repeat = read_json(&top.join("repeat.json"));
    assert_eq!(repeat["of"], "replay");
    for i in 1..=2u64 {
        let s = read_json(&top.join(format!("run-{i}")).join("summary.json"));
        assert_eq!(s["kind"], "replay");
        assert_eq!(s["summary"]["requests"], 4);
        assert_eq!(
            repeat["runs"][(i - 1) as usize]["seed"],
            s["parameters"]["seed"]
        );
    }
    assert_eq!(repeat["verdict"]["calls"], 8);
    let html = std::fs::read_to_string(top.join("report.html")).expect("html");
    assert!(html.contains("replay repeated 2 times"), "{html}");
}

#[test]
fn ctrl_c_keeps_the_finished_runs_and_their_summary() {
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    let mut cmd = codendum(cwd);
    cmd.args([
        "classroom",
        "--users",
        "2",
        "--duration",
        "90",
        "--ramp-up",
        "5",
        "--time-scale",
        "50",
        "--repeat",
        "6",
        "--results-dir",
        "results",
        "--no-report",
    ]);
    let logs = tempfile::tempdir().expect("logs");
    let mut running = Running::spawn(cmd, logs.path(), "repeat");
    let start = Instant::now();
    // Once the second run has recorded a call, the first is over.
    loop {
        let second = std::fs::read_dir(cwd.join("results"))
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("run-2").join("requests.jsonl"))
            .any(|p| std::fs::read_to_string(p).is_ok_and(|t| t.contains('\n')));
        if second {
            break;
        }
        assert!(!running.has_exited(), "the runs ended before the interrupt");
        assert!(start.elapsed() < Duration::from_secs(120), "no second run");
        std::thread::sleep(Duration::from_millis(50));
    }
    running.signal("INT");
    let f = running.wait(Duration::from_secs(120));
    assert_eq!(f.code, Some(130), "{}", f.both());
    let top = the_folder(&cwd.join("results"));
    let repeat = read_json(&top.join("repeat.json"));
    assert_eq!(repeat["stopped_early"], true);
    assert!(
        repeat["stop_reason"]
            .as_str()
            .is_some_and(|s| s.contains("interrupted")),
        "{repeat}"
    );
    let runs = repeat["runs"].as_array().expect("runs");
    let finished: Vec<u64> = runs
        .iter()
        .filter(|r| r["interrupted"] == false)
        .map(|r| r["index"].as_u64().expect("index"))
        .collect();
    assert!(!finished.is_empty() && finished.len() < 6, "{repeat}");
    let class = repeat["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .find(|g| g["label"] == "class")
        .expect("the finished runs' class");
    let pooled_runs: Vec<u64> = class["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|v| v.as_u64().expect("run"))
        .collect();
    assert_eq!(pooled_runs, finished, "only finished runs are pooled");
    assert!(f.stderr.contains("runs made"), "{}", f.stderr);
}

#[test]
fn a_live_server_is_checked_and_confirmed_once_and_read_between_runs() {
    let rt = cli_support::runtime();
    let twin = cli_support::start_twin(&rt, "classroom-64k", 20.0);
    let dir = tempfile::tempdir().expect("dir");
    let cwd = dir.path();
    let mut cmd = codendum(cwd);
    cmd.args([
        "bench",
        "--concurrency",
        "2",
        "--shapes",
        "short",
        "--requests-per-level",
        "6",
        "--output-tokens",
        "8",
        "--base-url",
        &twin.base_url(),
        "--yes",
        "--repeat",
        "2",
        "--results-dir",
        "results",
        "--no-report",
    ]);
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert_eq!(
        f.stderr.matches("Benchmark plan").count(),
        1,
        "{}",
        f.stderr
    );
    assert!(f.stderr.contains("seeds 1–2"), "{}", f.stderr);
    let top = the_folder(&cwd.join("results"));
    for i in 1..=2 {
        let run = top.join(format!("run-{i}"));
        // Each run read the server's /metrics over its own span.
        assert!(run.join("server-timeline.jsonl").is_file(), "run {i}");
    }
    let repeat = read_json(&top.join("repeat.json"));
    assert_eq!(repeat["verdict"]["calls"], 12);
}
