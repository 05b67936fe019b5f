//! Results files of a bench run: snapshots of summary.csv and summary.json
//! built from fixed records, and the readers (schema checks, truncated
//! requests.jsonl, the fixture folder).

use std::collections::BTreeMap;
use std::path::Path;

use chrono::{TimeZone, Utc};
use codendum_core::access::Provenance;
use codendum_core::openai::{Endpoint, TokenSource};
use codendum_core::results::level::{summarize_level, LevelFrame};
use codendum_core::results::{
    read_bench_requests, read_bench_summary, read_summary_json, write_summary_csv,
    write_summary_json, BenchParameters, BenchSummary, LevelEnd, PromptSizing, RequestRecord,
    ResultsError, RunHeader, ServerDescription, ShapeSizing, SizingMethod,
};
use codendum_core::server_figures::ServerWindow;

fn fixture(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/bench")
        .join(name)
}

fn record(shape: &str, n: u32, index: u64, started: f64, ttft: f64, e2e: f64) -> RequestRecord {
    RequestRecord {
        shape: shape.into(),
        concurrency: n,
        index,
        started_at: started,
        ttft_s: Some(ttft),
        e2e_s: e2e,
        tpot_s: Some((e2e - ttft) / 255.0),
        prompt_tokens: Some(if shape == "short" { 512 } else { 16_390 }),
        output_tokens: 256,
        tokens_counted_by: TokenSource::Server,
        finish_reason: Some("length".into()),
        ok: true,
        error_kind: None,
        error_message: None,
        status: Some(200),
        scheduled_at: None,
        send_lag_s: None,
    }
}

fn failed(shape: &str, n: u32, index: u64, started: f64, kind: &str, msg: &str) -> RequestRecord {
    RequestRecord {
        ttft_s: None,
        tpot_s: None,
        prompt_tokens: None,
        output_tokens: 0,
        tokens_counted_by: TokenSource::Client,
        finish_reason: None,
        ok: false,
        error_kind: Some(kind.into()),
        error_message: Some(msg.into()),
        status: kind.strip_prefix("http_").and_then(|s| s.parse().ok()),
        scheduled_at: None,
        send_lag_s: None,
        ..record(shape, n, index, started, 0.0, 0.25)
    }
}

fn fixed_summary() -> BenchSummary {
    let short1 = vec![
        record("short", 1, 0, 0.5, 0.21, 8.4),
        record("short", 1, 1, 8.9, 0.19, 8.3),
        record("short", 1, 2, 17.2, 0.25, 8.6),
        record("short", 1, 3, 25.8, 0.2, 8.2),
    ];
    let short8: Vec<RequestRecord> = (0..8)
        .map(|i| {
            let i_f = i as f64;
            record(
                "short",
                8,
                i,
                34.0 + 0.01 * i_f,
                0.3 + 0.1 * i_f,
                12.0 + 0.5 * i_f,
            )
        })
        .chain([
            failed(
                "short",
                8,
                8,
                46.0,
                "http_503",
                "Service Unavailable: queue full",
            ),
            failed("short", 8, 9, 46.1, "timeout", "no answer within 600 s"),
            failed("short", 8, 10, 46.2, "http_503", "Service Unavailable"),
        ])
        .collect();
    let frame = |n: u32, start: f64, wall: f64, ended_by| LevelFrame {
        shape: "short",
        concurrency: n,
        ended_by,
        started_at_s: start,
        wall_time_s: wall,
        abandoned: 0,
        rate: None,
        slo: None,
    };
    let window = ServerWindow {
        preemptions: Some(0.0),
        peak_kv_usage: Some(0.0853),
        peak_running: Some(8.0),
        peak_waiting: Some(3.0),
        prefix_hit_rate: Some(0.012),
        failed_scrapes: 0,
        time_split: None,
    };
    let levels = vec![
        summarize_level(frame(1, 0.5, 33.5, LevelEnd::Requests), &short1, None),
        summarize_level(
            frame(8, 34.0, 16.0, LevelEnd::Duration),
            &short8,
            Some(window),
        ),
    ];
    BenchSummary {
        header: RunHeader {
            schema_version: 1,
            kind: "bench".into(),
            run_id: "20261130T041233Z-0000abcd".into(),
            started_utc: Utc.with_ymd_and_hms(2026, 11, 30, 4, 12, 33).unwrap(),
            finished_utc: Utc.with_ymd_and_hms(2026, 11, 30, 4, 13, 23).unwrap(),
            interrupted: false,
        },
        parameters: BenchParameters {
            concurrency: vec![1, 8],
            shapes: vec!["short".into()],
            output_tokens: 256,
            requests_per_level: None,
            requests_by_concurrency: BTreeMap::from([(1, 16), (8, 32)]),
            level_duration_s: Some(12.0),
            endpoint: Endpoint::Chat,
            seed: 7,
            allow_busy: false,
            yes: true,
            timeout_s: 600.0,
            cancel_grace_s: 5.0,
            clock_scale: 1.0,
            calibration: false,
        },
        server: ServerDescription {
            url: "https://llm.lab.example:8443/v1".into(),
            model: "lab/coder-30b".into(),
            server_version: Some("0.30.0".into()),
            metrics: true,
            max_model_len: None,
            engine: None,
        },
        provenance: Provenance {
            profile: Some("classroom-64k".into()),
            image_digest: Some("sha256:0123abcd".into()),
            model_revision: None,
            dgx_os_version: Some("7.2.3".into()),
            driver_version: Some("580.178.04".into()),
        },
        prompt_sizing: PromptSizing {
            method: SizingMethod::Tokenize,
            shapes: vec![ShapeSizing {
                shape: "short".into(),
                target_input_tokens: 512,
                body_chars: 2330,
                chars_per_token: 4.55,
                measured_tokens: Some(512),
            }],
        },
        levels,
        skipped_shapes: Vec::new(),
        profile_check: None,
        verdict: None,
        rate_search: Vec::new(),
        metrics_continuity: Vec::new(),
        router: None,
    }
}

/// Equality up to the last bits of floats: serde_json's default parser may
/// read a shortest-representation float back one ulp off.
fn assert_same(a: &BenchSummary, b: &BenchSummary) {
    fn walk(a: &serde_json::Value, b: &serde_json::Value, path: &str) {
        use serde_json::Value::*;
        match (a, b) {
            (Number(x), Number(y)) => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                assert!(
                    (x - y).abs() <= 1e-12 * x.abs().max(1.0),
                    "{path}: {x} != {y}"
                );
            }
            (Array(x), Array(y)) => {
                assert_eq!(x.len(), y.len(), "{path}");
                for (i, (x, y)) in x.iter().zip(y).enumerate() {
                    walk(x, y, &format!("{path}[{i}]"));
                }
            }
            (Object(x), Object(y)) => {
                assert_eq!(
                    x.keys().collect::<Vec<_>>(),
                    y.keys().collect::<Vec<_>>(),
                    "{path}"
                );
                for (k, v) in x {
                    walk(v, &y[k], &format!("{path}.{k}"));
                }
            }
            _ => assert_eq!(a, b, "{path}"),
        }
    }
    walk(
        &serde_json::to_value(a).unwrap(),
        &serde_json::to_value(b).unwrap(),
        "",
    );
}

fn json_text(s: &BenchSummary) -> String {
    let mut out = Vec::new();
    write_summary_json(&mut out, s).unwrap();
    String::from_utf8(out).unwrap()
}

#[test]
fn summary_csv_snapshot() {
    let mut out = Vec::new();
    write_summary_csv(&mut out, &fixed_summary().levels).unwrap();
    let text = String::from_utf8(out).unwrap();
    results_snapshots().bind(|| insta::assert_snapshot!("bench_summary_csv", text));
}

#[test]
fn summary_json_snapshot_and_round_trip() {
    let s = fixed_summary();
    let text = json_text(&s);
    results_snapshots().bind(|| insta::assert_snapshot!("bench_summary_json", text.clone()));
    assert_same(&read_summary_json(text.as_bytes()).unwrap(), &s);
}

#[test]
fn level_figures_of_the_fixed_records() {
    let s = fixed_summary();
    let l1 = &s.levels[0];
    // TTFTs 0.19, 0.2, 0.21, 0.25: median 0.205, P95 = 0.21 + 0.85·0.04.
    assert!((l1.ttft_p50_s.unwrap() - 0.205).abs() < 1e-12);
    assert!((l1.ttft_p95_s.unwrap() - 0.244).abs() < 1e-12);
    assert!((l1.output_tok_per_s - 4.0 * 256.0 / 33.5).abs() < 1e-9);
    assert_eq!(l1.peak_kv_usage, None);
    let l8 = &s.levels[1];
    assert_eq!((l8.requests, l8.successes), (11, 8));
    assert_eq!(l8.errors["http_503"].count, 2);
    assert_eq!(
        l8.errors["http_503"].sample_message,
        "Service Unavailable: queue full"
    );
    assert_eq!(l8.errors["timeout"].count, 1);
    assert!(
        l8.tokens_client_counted,
        "failed requests were client-counted"
    );
    assert_eq!(l8.mean_input_tokens, Some(512.0));
}

#[test]
fn reader_rejects_other_kinds_and_newer_schemas() {
    let text = json_text(&fixed_summary());
    for version in [2, 3] {
        let known = text.replacen(
            "\"schema_version\": 1",
            &format!("\"schema_version\": {version}"),
            1,
        );
        assert!(
            read_summary_json(known.as_bytes()).is_ok(),
            "version {version} reads"
        );
    }
    let newer = text.replacen("\"schema_version\": 1", "\"schema_version\": 4", 1);
    let e = read_summary_json(newer.as_bytes()).unwrap_err();
    assert!(matches!(
        e,
        ResultsError::UnsupportedSchema {
            found: 4,
            supported: 3
        }
    ));
    assert!(e.to_string().contains("schema_version 4"), "{e}");
    let classroom = text.replacen("\"kind\": \"bench\"", "\"kind\": \"classroom\"", 1);
    assert!(matches!(
        read_summary_json(classroom.as_bytes()).unwrap_err(),
        ResultsError::WrongKind { .. }
    ));
    let unversioned = text.replacen("\"schema_version\": 1,", "", 1);
    assert!(matches!(
        read_summary_json(unversioned.as_bytes()).unwrap_err(),
        ResultsError::MissingSchemaVersion
    ));
    assert!(matches!(
        read_summary_json(&b"{not json"[..]).unwrap_err(),
        ResultsError::BadJson { .. }
    ));
    let e = read_bench_summary(&fixture("future-schema")).unwrap_err();
    assert!(
        matches!(e, ResultsError::UnsupportedSchema { found: 99, .. }),
        "{e}"
    );
}

#[test]
fn fixture_folder_reads_back_with_a_killed_last_line() {
    // The fixture was written at schema version 1, before steady windows
    // and intervals: it still reads, as the same summary without them.
    let dir = fixture("sample-run");
    let summary = read_bench_summary(&dir).unwrap();
    let mut v1 = fixed_summary();
    for l in &mut v1.levels {
        l.steady = None;
        l.intervals.clear();
    }
    assert_same(&summary, &v1);
    let requests = read_bench_requests(&dir).unwrap();
    assert!(requests.truncated_last_line);
    assert_eq!(requests.items.len(), 3);
    assert_eq!(requests.items[2].error_kind.as_deref(), Some("http_503"));
}

/// Snapshots in `snapshots/results/`.
fn results_snapshots() -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("snapshots/results"),
    );
    s.set_prepend_module_to_snapshot(false);
    s
}

/// `compare` refuses runs of different workloads by name: a rate run
/// beside a closed-loop run, or two rate runs with other arrivals; two runs
/// of the same rates compare.
#[test]
fn compare_names_the_workload_that_differs() {
    use codendum_core::results::RateFigures;
    use codendum_report::files::{load_run, workload_differences};
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, s: &BenchSummary| {
        let folder = dir.path().join(name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("summary.json"), json_text(s)).unwrap();
        load_run(&folder, None).unwrap()
    };
    let closed = fixed_summary();
    let at_rate = |arrival: &str| {
        let mut s = fixed_summary();
        for (l, rate) in s.levels.iter_mut().zip([0.5, 1.0]) {
            l.rate = Some(RateFigures {
                rate_per_s: rate,
                arrival: arrival.into(),
                ..RateFigures::default()
            });
        }
        s
    };
    let runs = [
        write("closed", &closed),
        write("poisson", &at_rate("poisson")),
        write("poisson-again", &at_rate("poisson")),
        write("constant", &at_rate("constant")),
    ];
    let mixed = workload_differences(&runs[..2]);
    assert!(
        mixed
            .iter()
            .any(|d| d == "rates: none (run 1) vs 0.5/s poisson, 1/s poisson (run 2)"),
        "{mixed:?}"
    );
    assert!(workload_differences(&runs[1..3]).is_empty());
    assert_eq!(
        workload_differences(&[runs[1].clone(), runs[3].clone()]),
        vec!["rates: 0.5/s poisson, 1/s poisson (run 1) vs 0.5/s constant, 1/s constant (run 2)"]
    );
}

/// The report of a run of rate levels only names its rates (not the unused
/// concurrency list) and leaves out the charts against concurrency, which
/// would be empty, keeping the chart against the offered rate.
#[test]
fn a_rate_runs_report_has_no_empty_concurrency_charts() {
    use codendum_core::results::RateFigures;
    let mut s = fixed_summary();
    for (l, rate) in s.levels.iter_mut().zip([0.5, 1.0]) {
        l.rate = Some(RateFigures {
            rate_per_s: rate,
            arrival: "poisson".into(),
            ..RateFigures::default()
        });
    }
    let html = |s: &BenchSummary, name: &str| {
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().join(name);
        std::fs::create_dir_all(&folder).unwrap();
        std::fs::write(folder.join("summary.json"), json_text(s)).unwrap();
        codendum_report::files::write_report(&folder, None).unwrap();
        std::fs::read_to_string(folder.join("report.html")).unwrap()
    };
    let rated = html(&s, "rates");
    assert!(!rated.contains("against concurrency"), "no empty chart");
    assert!(!rated.contains("Time to first token, short prompts"));
    assert!(rated.contains("Latency against the offered rate"));
    assert!(
        rated.contains("0.5/s poisson, 1/s poisson"),
        "the rates named"
    );
    // A closed-loop run keeps its charts.
    let closed = html(&fixed_summary(), "closed");
    assert!(closed.contains("Output tokens per second against concurrency"));
}
