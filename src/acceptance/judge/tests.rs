use std::path::{Path, PathBuf};

use super::*;
use codendum_core::openai::ErrorKind;
use codendum_core::results::classroom_summary::ClassroomSummary;
use codendum_core::results::{ClassroomParameters, RunHeader, ServerDescription};

fn sample_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/bench/sample-run")
}

fn sample() -> BenchSummary {
    codendum_core::results::read_bench_summary(&sample_folder()).expect("fixture summary")
}

fn level(shape: &str, n: u32) -> BenchLevelTargets {
    BenchLevelTargets {
        shape: shape.into(),
        concurrency: n,
        ..Default::default()
    }
}

#[test]
fn a_slow_level_fails_with_figure_target_workload_and_folder() {
    let t = level("short", 8)
        .with("errors", 0.0)
        .with("output_tok_per_s", 100.0)
        .with("ttft_p95_s", 0.5);
    let js = judge_bench_level(&sample(), &t, Path::new("bench-results/2026-x"));
    let names: Vec<&str> = js.iter().map(|j| j.metric.as_str()).collect();
    assert_eq!(names, t.metrics());
    let ttft = &js[0];
    assert!(!ttft.passed);
    assert_eq!(
        ttft.failure.as_deref(),
        Some("TTFT P95 0.97 s exceeds 0.5 s (bench, short prompts, 8 in flight, 11 requests; bench-results/2026-x)")
    );
    assert_eq!(ttft.verdict.target, "≤ 0.5 s");
    assert_eq!(ttft.verdict.name, "TTFT P95 at 8 in flight (short)");
    let output = &js[1];
    assert!(output.passed && output.failure.is_none(), "{output:?}");
    assert_eq!(output.verdict.figure, "128 tok/s");
    let errors = &js[2];
    assert_eq!(errors.figure, Some(3.0));
    let msg = errors.failure.as_deref().unwrap_or_default();
    assert!(
        msg.starts_with(
            "Errors 3 [http_503 2, timeout 1] exceeds 0 (bench, short prompts, 8 in flight"
        ),
        "{msg}"
    );
}

#[test]
fn floors_pass_at_the_limit_and_fail_below() {
    let t = level("SHORT", 1)
        .with("output_tok_per_s", 30.0)
        .with("ttft_p95_s", 0.244);
    let js = judge_bench_level(&sample(), &t, &sample_folder());
    assert!(js.iter().all(|j| j.passed), "{js:?}");
    let t = t.with("output_tok_per_s", 31.0);
    let js = judge_bench_level(&sample(), &t, &sample_folder());
    let msg = js[1].failure.as_deref().unwrap_or_default();
    assert!(
        msg.starts_with(
            "Output 30.6 tok/s is below 31 tok/s (bench, short prompts, 1 in flight, 4 requests; "
        ),
        "{msg}"
    );
}

#[test]
fn a_level_that_did_not_run_fails_every_check() {
    let t = level("long", 40)
        .with("ttft_p95_s", 10.0)
        .with("errors", 0.0)
        .with("preemptions", 0.0);
    let js = judge_bench_level(&sample(), &t, &sample_folder());
    assert_eq!(js.len(), 3);
    for j in &js {
        assert!(!j.passed);
        let msg = j.failure.as_deref().unwrap_or_default();
        assert!(msg.contains("the run has no such level"), "{msg}");
        assert!(
            msg.contains(" not measured: the level did not run "),
            "{msg}"
        );
        assert_eq!(j.verdict.figure, "not measured");
    }
    let want = format!(
        "Preemptions not measured: the level did not run (target 0; bench, long prompts, \
         40 in flight: the run has no such level; {})",
        sample_folder().display()
    );
    assert_eq!(js[2].failure.as_deref(), Some(want.as_str()));
}

fn class(summary: ClassroomSummary) -> ClassroomRunSummary {
    let now = chrono::Utc::now();
    ClassroomRunSummary {
        header: RunHeader {
            schema_version: 1,
            kind: "classroom".into(),
            run_id: "classroom-x".into(),
            started_utc: now,
            finished_utc: now,
            interrupted: false,
        },
        parameters: ClassroomParameters {
            users: 40,
            scenario: "java".into(),
            duration_s: 900.0,
            ramp_up_s: 120.0,
            pause_min_s: 20.0,
            pause_max_s: 90.0,
            follow_ups: 3,
            class: None,
            context_limit: Some(65_536),
            output_limit: 8_192,
            seed: 42,
            prompt_file: None,
            client_times: None,
            api_keys: 40,
            clock_scale: 1.0,
        },
        server: ServerDescription {
            url: "https://llm.lab.example:8443/v1".into(),
            model: "qwen3-coder".into(),
            server_version: None,
            metrics: true,
            max_model_len: None,
            engine: None,
        },
        provenance: Default::default(),
        server_figures_source: "sampler".into(),
        key_note: None,
        summary,
        profile_check: None,
        verdict: None,
        replay: None,
        metrics_continuity: Vec::new(),
        router: None,
    }
}

fn seed_targets() -> ClassroomTargets {
    ClassroomTargets {
        ttft_p95_s: Some(75.0),
        coding_request_p50_s: Some(900.0),
        server_output_tok_per_s: Some(95.0),
        preemptions: Some(0),
        server_errors: Some(0),
        ..Default::default()
    }
}

#[test]
fn the_seed_class_meets_its_targets() {
    let mut m = ClassroomSummary::from_records(40, &[], &[]);
    m.requests = 700;
    m.ttft_p95_s = Some(60.0);
    m.task_time_p50_s = Some(660.0);
    m.server.output_tokens_per_s = Some(110.0);
    m.server.preemptions = Some(0);
    m.errors_by_kind.insert(ErrorKind::Connect, 7);
    let t = seed_targets();
    let js = judge_classroom(&class(m), &t, Path::new("bench-results/classroom-x"));
    let names: Vec<&str> = js.iter().map(|j| j.metric.as_str()).collect();
    assert_eq!(names, t.metrics());
    assert!(js.iter().all(|j| j.passed), "{js:?}");
}

#[test]
fn server_errors_count_503_and_5xx_only_and_missing_metrics_fail() {
    let mut m = ClassroomSummary::from_records(40, &[], &[]);
    m.ttft_p95_s = Some(80.0);
    m.task_time_p50_s = None;
    m.errors_by_kind.insert(ErrorKind::Http503, 4);
    m.errors_by_kind.insert(ErrorKind::Http5xx, 1);
    m.errors_by_kind.insert(ErrorKind::Http429, 9);
    let mut s = class(m);
    s.server.metrics = false;
    let js = judge_classroom(&s, &seed_targets(), Path::new("bench-results/classroom-x"));
    let by = |metric: &str| {
        js.iter()
            .find(|j| j.metric == metric)
            .and_then(|j| j.failure.clone())
            .unwrap_or_default()
    };
    assert!(
        by("ttft_p95")
            .starts_with("TTFT P95 80 s exceeds 75 s (classroom, 40 students, 900 s window"),
        "{}",
        by("ttft_p95")
    );
    assert!(by("coding_request_p50").contains("not measured: no coding request completed"));
    assert!(by("server_output_tok_per_s").contains("/metrics was not readable"));
    assert!(by("preemptions").contains("not measured"));
    let errors = by("server_errors");
    assert!(
        errors
            .starts_with("Server errors 5 [errors: http_429 9, http_503 4, http_5xx 1] exceeds 0"),
        "{errors}"
    );
}

#[test]
fn numbers_are_formatted_for_people() {
    assert_eq!(format_number(41.26), "41.3");
    assert_eq!(format_number(0.4312), "0.43");
    assert_eq!(format_number(146.7), "147");
    assert_eq!(format_number(3.0), "3");
}

#[test]
fn a_figure_whose_interval_straddles_the_target_is_indeterminate() {
    use codendum_core::stats::Interval;
    let mut s = sample();
    let c8 = s
        .levels
        .iter_mut()
        .find(|l| l.concurrency == 8)
        .expect("a c8 level");
    c8.ttft_p95_s = Some(29.5);
    c8.intervals
        .insert("ttft_p95_s".into(), Interval::closed(27.8, 31.3));
    let folder = Path::new("bench-results/2026-x");
    let j = &judge_bench_level(&s, &level("short", 8).with("ttft_p95_s", 30.0), folder)[0];
    assert!(j.passed, "the value alone meets it");
    assert_eq!(j.outcome, codendum_core::bound::Outcome::Indeterminate);
    assert!(j.failure.is_none());
    let why = j.undecided.as_deref().unwrap_or_default();
    assert!(
        why.starts_with("indeterminate: TTFT P95 29.5 s (27.8–31.3) against ≤ 30 s"),
        "{why}"
    );
    assert_eq!(j.verdict.figure, "29.5 s (27.8–31.3)");
    // The same figure with a narrow interval is met, a high one missed.
    let met = &judge_bench_level(&s, &level("short", 8).with("ttft_p95_s", 32.0), folder)[0];
    assert_eq!(met.outcome, codendum_core::bound::Outcome::Met);
    let missed = &judge_bench_level(&s, &level("short", 8).with("ttft_p95_s", 27.0), folder)[0];
    assert_eq!(missed.outcome, codendum_core::bound::Outcome::Missed);
    assert!(
        missed
            .failure
            .as_deref()
            .unwrap_or_default()
            .starts_with("TTFT P95 29.5 s (27.8–31.3) exceeds 27 s"),
        "{:?}",
        missed.failure
    );
}
