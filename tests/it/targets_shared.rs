//! One definition of `[targets.classroom]`: `codendum plan`
//! and the capacity suite read a profile's classroom targets alike and give
//! the same verdicts on the same class, server errors included (calls whose
//! final outcome is a 503 or another 5xx, not retried attempts); both refuse
//! an unknown key by name, plan with a one-line error and exit 2.

use crate::cli_support;

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use cli_support::{assert_one_line_error, codendum, holds_no_file, run};
use codendum::acceptance::runner::judge_all;
use codendum::acceptance::runner::{WorkloadResults, WorkloadSummary};
use codendum::acceptance::{Settings, Suite, TrialKind, WorkloadKind};
use codendum::plan::figures::{figures, Window};
use codendum::plan::{classroom_targets, judge_cell, CellResult, CellSpec};
use codendum_core::openai::{ErrorKind, TokenSource};
use codendum_core::profile::Profile;
use codendum_core::prom::{ServerSnapshot, TimelineSample};
use codendum_core::results::classroom_records::{CallKind, CallRecord, TaskOutcome, TaskRecord};
use codendum_core::results::classroom_summary::ClassroomSummary;
use codendum_core::results::{
    ClassroomParameters, ClassroomRunSummary, RunHeader, ServerDescription,
};
use codendum_core::targets::bench::parse_targets;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/targets")
        .join(name)
}

fn load(name: &str) -> Profile {
    Profile::load(fixture(name).to_str().expect("utf-8 path")).expect("profile")
}

/// A model call: succeeded (`error` `None`) or failed for good with
/// `error`, after one retried attempt per entry of `retried`.
fn call(n: usize, ttft_s: f64, retried: &[ErrorKind], error: Option<ErrorKind>) -> CallRecord {
    CallRecord {
        user: n % 4,
        session: format!("s{}", n % 4),
        task: 0,
        kind: CallKind::Agent,
        started_at: n as f64,
        prompt_tokens: error.is_none().then_some(2_000),
        output_tokens: if error.is_none() { 200 } else { 0 },
        tokens_counted_by: TokenSource::Server,
        ttft_s: error.is_none().then_some(ttft_s),
        e2e_s: ttft_s + 10.0,
        wait_s: ttft_s + 10.0,
        retries: retried.len() as u32,
        retried_kinds: retried.to_vec(),
        error_kind: error,
        tool_calls: 0,
    }
}

/// 20 calls that succeeded (TTFT 1..20 s; 3 of them after a retried 503),
/// 2 that failed for good with a 503 (after two retried 503s each) and one
/// that failed with a mid-stream error.
fn calls() -> Vec<CallRecord> {
    let mut out: Vec<CallRecord> = (0..20)
        .map(|n| {
            let retried: &[ErrorKind] = if n < 3 { &[ErrorKind::Http503] } else { &[] };
            call(n, 1.0 + n as f64, retried, None)
        })
        .collect();
    let twice = [ErrorKind::Http503, ErrorKind::Http503];
    out.push(call(20, 0.0, &twice, Some(ErrorKind::Http503)));
    out.push(call(21, 0.0, &twice, Some(ErrorKind::Http503)));
    out.push(call(22, 0.0, &[], Some(ErrorKind::StreamError)));
    out
}

/// The old plan count: every 503, 5xx or stream error, retried attempts
/// included.
fn attempts_with_server_errors(calls: &[CallRecord]) -> usize {
    let server = |k: &ErrorKind| {
        matches!(
            k,
            ErrorKind::Http503 | ErrorKind::Http5xx | ErrorKind::StreamError
        )
    };
    calls
        .iter()
        .map(|r| {
            r.retried_kinds.iter().filter(|k| server(k)).count()
                + r.error_kind.iter().filter(|k| server(k)).count()
        })
        .sum()
}

fn task(user: usize, wall_s: f64) -> TaskRecord {
    TaskRecord {
        user,
        index: 0,
        start: 0.0,
        end: wall_s,
        model_time_s: wall_s / 2.0,
        calls: 5,
        output_tokens: 1_000,
        tool_calls: 4,
        tool_errors: 0,
        compactions: 0,
        outcome: TaskOutcome::Completed,
        error_kind: None,
    }
}

/// One sample a second over 60 s: 100 output tokens a second, one
/// preemption at 30 s.
fn timeline() -> Vec<TimelineSample> {
    (0..=60)
        .map(|t| TimelineSample {
            utc: chrono::Utc::now(),
            t: f64::from(t),
            snapshot: Some(ServerSnapshot {
                running: Some(4.0),
                waiting: Some(0.0),
                kv_usage: Some(0.1),
                preemptions: Some(if t >= 30 { 1.0 } else { 0.0 }),
                generation_tokens: Some(100.0 * f64::from(t)),
                ..ServerSnapshot::default()
            }),
            error: None,
        })
        .collect()
}

/// The class as plan's cell: records → summary → figures.
fn plan_cell() -> CellResult {
    let summary = ClassroomSummary::from_records(4, &calls(), &[task(0, 500.0), task(1, 700.0)]);
    let spec = CellSpec {
        profile: "classroom-mixed".into(),
        max_num_seqs: 16,
        overridden: false,
        users: 4,
        seed: None,
    };
    let window = Window {
        origin: 0.0,
        ramp_up: 10.0,
        duration: 60.0,
    };
    figures(&spec, summary, &timeline(), window)
}

/// The same class as the capacity suite's classroom workload left it.
fn capacity_results(summary: ClassroomSummary) -> WorkloadResults {
    let now = chrono::Utc::now();
    let run = ClassroomRunSummary {
        header: RunHeader {
            schema_version: 1,
            kind: "classroom".into(),
            run_id: "classroom-mixed".into(),
            started_utc: now,
            finished_utc: now,
            interrupted: false,
        },
        parameters: ClassroomParameters {
            users: 4,
            scenario: "java".into(),
            duration_s: 60.0,
            ramp_up_s: 10.0,
            pause_min_s: 5.0,
            pause_max_s: 20.0,
            follow_ups: 0,
            class: None,
            context_limit: Some(65_536),
            output_limit: 8_192,
            seed: 1,
            prompt_file: None,
            client_times: None,
            api_keys: 1,
            clock_scale: 1.0,
        },
        server: ServerDescription {
            url: "embedded twin".into(),
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
    };
    WorkloadResults {
        folder: PathBuf::from("bench-results/classroom-mixed"),
        summary: WorkloadSummary::Classroom(Box::new(run)),
        reused: false,
    }
}

#[test]
fn plan_and_the_capacity_suite_give_the_same_verdicts_on_one_class() {
    let profile = load("classroom-mixed.toml");
    let cell = plan_cell();
    // The class the old plan count and the suite's count disagree on.
    assert_eq!(attempts_with_server_errors(&calls()), 10);
    assert_eq!(cell.server_errors, 2, "finally failed 503s only");

    let plan_targets = classroom_targets(&profile.name, &profile.targets).expect("plan reads it");
    let plan: Vec<(String, Option<f64>, bool)> = judge_cell(&plan_targets, &cell)
        .into_iter()
        .map(|c| (c.key, c.measured, c.met))
        .collect();

    let suite_targets = parse_targets(&profile.targets).expect("the suite reads it");
    let results = capacity_results(cell.summary.clone());
    let suite: Vec<(String, Option<f64>, bool)> =
        judge_all(&suite_targets.full, WorkloadKind::Classroom, &results)
            .into_iter()
            .map(|j| (j.metric, j.figure, j.passed))
            .collect();

    let expected = [
        ("ttft_p95_s", "ttft_p95", true),
        ("coding_request_p50_s", "coding_request_p50", false),
        ("server_output_tok_per_s", "server_output_tok_per_s", true),
        ("preemptions", "preemptions", false),
        ("server_errors", "server_errors", true),
    ];
    assert_eq!(plan.len(), expected.len(), "{plan:?}");
    assert_eq!(suite.len(), expected.len(), "{suite:?}");
    for ((p, s), (key, metric, passed)) in plan.iter().zip(&suite).zip(expected) {
        assert_eq!((p.0.as_str(), p.2), (key, passed), "plan: {p:?}");
        assert_eq!((s.0.as_str(), s.2), (metric, passed), "suite: {s:?}");
        assert_eq!(p.1, s.1, "{key}: the same figure");
    }
    assert_eq!(
        plan[2].1,
        Some(100.0),
        "server output over the steady window"
    );
    assert_eq!(plan[3].1, Some(1.0), "one preemption");
}

fn suite_with(profile: &Path) -> Suite {
    let vars: HashMap<String, String> = [(
        "CODENDUM_CAPACITY_PROFILES".to_string(),
        profile.to_string_lossy().into_owned(),
    )]
    .into();
    let settings = Settings::from_lookup(|k| vars.get(k).cloned()).expect("settings");
    let cache = tempfile::tempdir().expect("tempdir");
    codendum::app::suite(settings, cache.path().to_path_buf())
}

#[test]
fn plan_and_the_capacity_suite_refuse_the_same_unknown_key() {
    let path = fixture("classroom-unknown-key.toml");
    let profile = load("classroom-unknown-key.toml");
    let e = classroom_targets(&profile.name, &profile.targets)
        .expect_err("plan refuses it")
        .to_string();
    assert!(
        e.contains("classroom-unknown-key") && e.contains("ttft_p99_s") && !e.contains('\n'),
        "{e}"
    );
    let trials = suite_with(&path).trials();
    assert_eq!(trials.len(), 1, "{trials:?}");
    assert_eq!(trials[0].name, "classroom-unknown-key::targets");
    let TrialKind::Broken(msg) = &trials[0].kind else {
        panic!("a broken trial: {trials:?}");
    };
    assert!(
        msg.contains("classroom-unknown-key") && msg.contains("ttft_p99_s"),
        "{msg}"
    );
}

#[test]
fn plan_refuses_an_unknown_target_key_with_one_line_and_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = fixture("classroom-unknown-key.toml");
    let mut cmd = codendum(dir.path());
    cmd.args(["plan", "--users", "2", "--duration", "60", "--jobs", "1"])
        .args(["--results-dir", "results", "--profile"])
        .arg(&path);
    let f = run(cmd);
    assert_eq!(f.code, Some(2), "exit 2 for bad input:\n{}", f.both());
    assert_one_line_error(&f, "ttft_p99_s");
    assert!(f.stderr.contains("classroom-unknown-key"), "{}", f.stderr);
    assert!(
        holds_no_file(&dir.path().join("results")),
        "nothing written"
    );
}
