//! `codendum bench` end to end, against a live server (a twin on
//! loopback, started in this test process) and against the embedded twin;
//! the results folder, every figure the lab asked for, percentiles that agree
//! with requests.jsonl, provenance from flags, environment and `.env`, and
//! the `scripts/bench.sh` command line.

use crate::cli_support;

use std::collections::BTreeMap;
use std::path::Path;

use cli_support::{
    codendum, numpy_percentile, only_folder, read_json, read_jsonl, run, runtime, start_twin,
    write_file,
};
use codendum_core::results::LEVEL_METRICS;
use serde_json::Value;

/// The figures the lab asked for at each level and prompt shape (summary.json
/// names). Server-side ones are present whenever /metrics was read.
const LEVEL_FIELDS: &[&str] = &[
    "shape",
    "concurrency",
    "requests",
    "successes",
    "errors",
    "mean_input_tokens",
    "mean_output_tokens",
    "wall_time_s",
    "requests_per_s",
    "output_tok_per_s",
    "total_tok_per_s",
    "ttft_p50_s",
    "ttft_p95_s",
    "ttft_p99_s",
    "e2e_p50_s",
    "e2e_p95_s",
    "tpot_mean_s",
    "preemptions",
    "peak_kv_usage",
    "peak_running",
    "peak_waiting",
];

fn is_utc_folder_name(name: &str) -> bool {
    // 2026-11-30T04-12-33Z
    let b = name.as_bytes();
    name.len() == 20
        && name.ends_with('Z')
        && b[10] == b'T'
        && [4, 7, 13, 16].iter().all(|&i| b[i] == b'-')
        && chrono::NaiveDateTime::parse_from_str(&name[..19], "%Y-%m-%dT%H-%M-%S").is_ok()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Checks every level of `summary` against the records of `requests`.
fn check_levels_against_requests(summary: &Value, requests: &[Value]) {
    let mut by_level: BTreeMap<(String, u64), Vec<&Value>> = BTreeMap::new();
    for r in requests {
        let key = (
            r["shape"].as_str().expect("shape").to_string(),
            r["concurrency"].as_u64().expect("concurrency"),
        );
        by_level.entry(key).or_default().push(r);
    }
    let levels = summary["levels"].as_array().expect("levels");
    assert_eq!(levels.len(), by_level.len(), "one summary per level");
    for level in levels {
        let key = (
            level["shape"].as_str().expect("shape").to_string(),
            level["concurrency"].as_u64().expect("concurrency"),
        );
        let records = &by_level[&key];
        assert_eq!(level["requests"].as_u64(), Some(records.len() as u64));
        let ok: Vec<&&Value> = records.iter().filter(|r| r["ok"] == true).collect();
        assert_eq!(level["successes"].as_u64(), Some(ok.len() as u64));
        let ttft: Vec<f64> = ok.iter().filter_map(|r| r["ttft_s"].as_f64()).collect();
        let e2e: Vec<f64> = ok.iter().filter_map(|r| r["e2e_s"].as_f64()).collect();
        for (field, values, p) in [
            ("ttft_p50_s", &ttft, 50.0),
            ("ttft_p95_s", &ttft, 95.0),
            ("ttft_p99_s", &ttft, 99.0),
            ("e2e_p50_s", &e2e, 50.0),
            ("e2e_p95_s", &e2e, 95.0),
        ] {
            let want = numpy_percentile(values, p);
            let got = level[field].as_f64().expect(field);
            assert!(close(got, want), "{key:?} {field}: {got} vs {want}");
        }
    }
}

#[test]
fn bench_against_a_live_server_writes_the_whole_folder() {
    let rt = runtime();
    let twin = start_twin(&rt, "classroom-64k", 1.0);
    let dir = tempfile::tempdir().expect("tempdir");
    let results = dir.path().join("results");
    let before = chrono::Utc::now();
    let mut cmd = codendum(dir.path());
    cmd.args([
        "bench",
        "--concurrency",
        "1,2",
        "--shapes",
        "short",
        "--requests-per-level",
        "3",
        "--output-tokens",
        "8",
        "--base-url",
        &twin.base_url(),
        "--yes",
        "--results-dir",
        results.to_str().expect("utf-8"),
        "--profile",
        "classroom-64k-high-concurrency",
        "--image-digest",
        "sha256:0123abcd",
        "--model-revision",
        "rev-2026-09",
        "--dgx-os-version",
        "7.2.3",
    ])
    .env("CODENDUM_DRIVER_VERSION", "580.178.04")
    .env("CODENDUM_MODEL_REVISION", "from-env-loses");
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(
        f.stderr.contains("Benchmark plan"),
        "plan shown: {}",
        f.stderr
    );

    let folder = only_folder(&results);
    let name = folder.file_name().expect("name").to_string_lossy();
    assert!(is_utc_folder_name(&name), "UTC timestamp folder: {name}");
    let stamp = chrono::NaiveDateTime::parse_from_str(&name[..19], "%Y-%m-%dT%H-%M-%S")
        .expect("timestamp")
        .and_utc();
    assert!(
        stamp >= before - chrono::Duration::seconds(2) && stamp <= chrono::Utc::now(),
        "the folder is named after the run's UTC start: {stamp} vs {before}"
    );
    for file in [
        "summary.csv",
        "summary.json",
        "requests.jsonl",
        "server-timeline.jsonl",
        "report.md",
        "report.html",
    ] {
        let len = std::fs::metadata(folder.join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"))
            .len();
        assert!(len > 0, "{file} is empty");
    }

    let summary = read_json(&folder.join("summary.json"));
    assert_eq!(
        summary["schema_version"],
        codendum_core::results::BENCH_SCHEMA_VERSION
    );
    assert_eq!(summary["kind"], "bench");
    assert_eq!(summary["interrupted"], false);
    let p = &summary["parameters"];
    assert_eq!(p["concurrency"], serde_json::json!([1, 2]));
    assert_eq!(p["shapes"], serde_json::json!(["short"]));
    assert_eq!(p["output_tokens"], 8);
    assert_eq!(p["requests_per_level"], 3);
    assert_eq!(p["yes"], true);
    assert_eq!(p["clock_scale"], 1.0, "a live server is timed in real time");
    let prov = &summary["provenance"];
    assert_eq!(prov["profile"], "classroom-64k-high-concurrency");
    assert_eq!(prov["image_digest"], "sha256:0123abcd");
    assert_eq!(prov["model_revision"], "rev-2026-09", "the flag wins");
    assert_eq!(prov["dgx_os_version"], "7.2.3");
    assert_eq!(prov["driver_version"], "580.178.04");
    let server = &summary["server"];
    assert_eq!(server["server_version"], "0.30.0");
    assert_eq!(server["model"], "qwen3-coder");
    assert_eq!(server["url"], twin.base_url().as_str());
    assert_eq!(server["metrics"], true);

    let levels = summary["levels"].as_array().expect("levels");
    assert_eq!(levels.len(), 2);
    for level in levels {
        for field in LEVEL_FIELDS {
            let v = &level[*field];
            assert!(!v.is_null(), "level field {field} missing: {level}");
        }
        assert_eq!(level["requests"], 3);
        assert_eq!(level["successes"], 3, "{level}");
        assert_eq!(level["errors"], serde_json::json!({}));
        assert_eq!(level["mean_output_tokens"], 8.0);
        let input = level["mean_input_tokens"].as_f64().expect("input");
        assert!(
            (500.0..600.0).contains(&input),
            "about 512 input tokens: {input}"
        );
        let n = level["concurrency"].as_f64().expect("n");
        let peak = level["peak_running"].as_f64().expect("peak running");
        assert!(
            (0.0..=n).contains(&peak),
            "peak running {peak} within N={n}"
        );
        let kv = level["peak_kv_usage"].as_f64().expect("kv");
        assert!((0.0..=1.0).contains(&kv), "kv usage is a fraction: {kv}");
        assert_eq!(level["preemptions"], 0.0);
        for rate in ["requests_per_s", "output_tok_per_s", "total_tok_per_s"] {
            assert!(level[rate].as_f64().expect(rate) > 0.0, "{rate}: {level}");
        }
    }

    let requests = read_jsonl(&folder.join("requests.jsonl"), false);
    assert_eq!(requests.len(), 6);
    check_levels_against_requests(&summary, &requests);

    let timeline = read_jsonl(&folder.join("server-timeline.jsonl"), false);
    assert!(!timeline.is_empty());
    for s in &timeline {
        assert!(s["t"].is_number() && s.get("snapshot").is_some(), "{s}");
    }

    let csv = std::fs::read_to_string(folder.join("summary.csv")).expect("csv");
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().expect("header").split(',').collect();
    assert_eq!(header, codendum_core::results::summary_csv_header());
    // The lab's figures, as summary.csv columns (`peak_kv_usage` is
    // `peak_kv_usage_pct`, `errors` is `errors` and `error_kinds`).
    for field in LEVEL_FIELDS {
        let columns: Vec<&str> = LEVEL_METRICS
            .iter()
            .filter(|m| m.field == *field)
            .map(|m| m.column)
            .collect();
        assert!(!columns.is_empty(), "no summary.csv column for {field}");
        for column in columns {
            assert!(
                header.contains(&column),
                "summary.csv has {column}: {header:?}"
            );
        }
    }
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 2);
    let col = |name: &str| header.iter().position(|h| *h == name).expect("column");
    for (row, level) in rows.iter().zip(levels) {
        assert_eq!(row[col("concurrency")], level["concurrency"].to_string());
        assert_eq!(row[col("requests")], "3");
        let csv_p95: f64 = row[col("ttft_p95_s")].parse().expect("number");
        let json_p95 = level["ttft_p95_s"].as_f64().expect("p95");
        assert!((csv_p95 - json_p95).abs() < 1e-5, "{csv_p95} vs {json_p95}");
    }

    let md = std::fs::read_to_string(folder.join("report.md")).expect("md");
    assert!(
        md.contains("0.30.0") && md.contains("sha256:0123abcd"),
        "{md}"
    );
    let html = std::fs::read_to_string(folder.join("report.html")).expect("html");
    assert!(html.contains("<html") && html.contains("sha256:0123abcd"));
    rt.block_on(twin.shutdown());
}

fn embedded_bench(cwd: &Path, extra: &[&str]) -> cli_support::Finished {
    let mut cmd = codendum(cwd);
    cmd.args([
        "bench",
        "--concurrency",
        "1",
        "--shapes",
        "short",
        "--requests-per-level",
        "2",
        "--output-tokens",
        "8",
        "--time-scale",
        "50",
        "--results-dir",
        "tmp",
    ])
    .args(extra);
    run(cmd)
}

#[test]
fn bench_without_a_server_runs_the_embedded_twin() {
    let dir = tempfile::tempdir().expect("tempdir");
    let f = embedded_bench(dir.path(), &[]);
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(f.stderr.contains("embedded twin"), "{}", f.stderr);
    let folder = only_folder(&dir.path().join("tmp"));
    assert!(is_utc_folder_name(
        &folder.file_name().expect("name").to_string_lossy()
    ));
    let summary = read_json(&folder.join("summary.json"));
    assert_eq!(summary["server"]["url"], "embedded twin");
    assert_eq!(summary["server"]["server_version"], "0.30.0");
    assert_eq!(summary["provenance"]["profile"], "classroom-64k");
    assert_eq!(summary["parameters"]["clock_scale"], 50.0);
    let requests = read_jsonl(&folder.join("requests.jsonl"), false);
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r["ok"] == true));
    check_levels_against_requests(&summary, &requests);
    for file in [
        "summary.csv",
        "server-timeline.jsonl",
        "report.md",
        "report.html",
    ] {
        assert!(folder.join(file).is_file(), "{file}");
    }
}

/// The README's first steps: `cp .env.example .env`, then a bench against
/// the twin. The example leaves the server, key and CA empty; an empty
/// setting is an unset one, from `.env` or from the environment.
#[test]
fn the_shipped_env_example_runs_the_embedded_twin() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join(".env.example"),
        dir.path().join(".env"),
    )
    .expect("copy .env.example");
    let f = embedded_bench(dir.path(), &["--no-report"]);
    assert_eq!(f.code, Some(0), "{}", f.both());
    assert!(f.stderr.contains("embedded twin"), "{}", f.stderr);
    // A copied example records no one else's server: its provenance stays empty.
    let summary = read_json(&only_folder(&dir.path().join("tmp")).join("summary.json"));
    for field in [
        "image_digest",
        "model_revision",
        "dgx_os_version",
        "driver_version",
    ] {
        assert!(summary["provenance"][field].is_null(), "{field}: {summary}");
    }
    let mut cmd = codendum(dir.path());
    cmd.args(["bench", "--concurrency", "1", "--shapes", "short"])
        .args(["--requests-per-level", "1", "--output-tokens", "4"])
        .args(["--time-scale", "50", "--no-report", "--results-dir", "tmp2"])
        .env("CODENDUM_CACERT", "")
        .env("CODENDUM_METRICS_URL", " ");
    let f = run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
}

/// Flags win over the environment, the environment over `.env`.
#[test]
fn flags_beat_environment_beat_dotenv() {
    let dir = tempfile::tempdir().expect("tempdir");
    write_file(
        dir.path(),
        ".env",
        "CODENDUM_PROFILE=classroom-64k-high-concurrency\n\
         CODENDUM_IMAGE_DIGEST=sha256:from-dotenv\n\
         CODENDUM_DGX_OS_VERSION=7.2.3-dotenv\n",
    );
    let provenance = |extra: &[&str], env: &[(&str, &str)]| {
        let results = tempfile::tempdir_in(dir.path()).expect("tempdir");
        let mut cmd = codendum(dir.path());
        cmd.args([
            "bench",
            "--concurrency",
            "1",
            "--shapes",
            "short",
            "--requests-per-level",
            "1",
            "--output-tokens",
            "4",
            "--time-scale",
            "50",
            "--no-report",
            "--results-dir",
            results.path().to_str().expect("utf-8"),
        ])
        .args(extra)
        .envs(env.iter().copied());
        let f = run(cmd);
        assert_eq!(f.code, Some(0), "{}", f.both());
        read_json(&only_folder(results.path()).join("summary.json"))["provenance"].clone()
    };

    let only_dotenv = provenance(&[], &[]);
    assert_eq!(only_dotenv["profile"], "classroom-64k-high-concurrency");
    assert_eq!(only_dotenv["image_digest"], "sha256:from-dotenv");
    assert_eq!(only_dotenv["dgx_os_version"], "7.2.3-dotenv");

    let env = [
        ("CODENDUM_PROFILE", "classroom-64k"),
        ("CODENDUM_IMAGE_DIGEST", "sha256:from-env"),
    ];
    let with_env = provenance(&[], &env);
    assert_eq!(with_env["profile"], "classroom-64k");
    assert_eq!(with_env["image_digest"], "sha256:from-env");
    assert_eq!(with_env["dgx_os_version"], "7.2.3-dotenv");

    let with_flags = provenance(
        &[
            "--profile",
            "classroom-64k-high-concurrency",
            "--image-digest",
            "sha256:from-flag",
        ],
        &env,
    );
    assert_eq!(with_flags["profile"], "classroom-64k-high-concurrency");
    assert_eq!(with_flags["image_digest"], "sha256:from-flag");
    assert_eq!(with_flags["dgx_os_version"], "7.2.3-dotenv");
}

/// The scripts in `scripts/` pass every argument through untouched. A stand-in
/// `cargo` on PATH prints what it was given, so nothing is built.
#[test]
fn scripts_pass_their_arguments_through() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let bin = tempfile::tempdir().expect("tempdir");
    let fake = write_file(
        bin.path(),
        "cargo",
        "#!/bin/sh\nfor a in \"$@\"; do printf '%s\\n' \"$a\"; done\n",
    );
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let path = format!(
        "{}:{}",
        bin.path().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (script, command, args) in [
        (
            "scripts/bench.sh",
            "bench",
            vec!["--concurrency", "1,8,16", "--shapes", "short", "--yes"],
        ),
        ("scripts/metrics.sh", "metrics", vec!["--watch", "5"]),
        (
            "scripts/bench-classroom.sh",
            "classroom",
            vec!["--api-keys-file", "keys/api keys.csv", "--users", "40"],
        ),
    ] {
        let out = std::process::Command::new("bash")
            .arg(root.join(script))
            .args(&args)
            .env("PATH", &path)
            .output()
            .expect("bash runs");
        assert!(out.status.success(), "{script}: {out:?}");
        let printed = String::from_utf8_lossy(&out.stdout);
        let given: Vec<&str> = printed.lines().collect();
        let dashes = given.iter().position(|a| *a == "--").expect("-- separator");
        assert!(
            given.contains(&"run") && given.contains(&"--release"),
            "{given:?}"
        );
        let mut want = vec![command];
        want.extend(args.iter().copied());
        assert_eq!(&given[dashes + 1..], want.as_slice(), "{script}");
    }
}
