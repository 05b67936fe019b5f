//! capture → client-times.json → classroom: a session captured through the
//! twin gives the distribution, and the simulated students then spend
//! exactly those measured times between their steps (paused clock), where
//! the built-in model would have drawn 0.05–0.5 s, 1–4 s and 3–12 s.

use std::sync::Arc;
use std::time::Duration;

use codendum::classroom::{ClientTimeKind, ClientTimes};
use codendum_core::clock::Clock;

use crate::capture_support::{capture, session, twin};
use crate::classroom_support::{agent_steps, one_student, run, ScriptedModel};

/// Captures one session with these pauses after read, edit and the tests.
fn captured(pauses: [f64; 3]) -> (tempfile::TempDir, ClientTimes) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("dir");
    rt.block_on(async {
        let twin = twin().await;
        let cap = capture(&twin.base_url(), dir.path()).await;
        session(&cap.base_url(), "ses_rt", &pauses).await;
        cap.shutdown(Duration::from_secs(2))
            .await
            .expect("shutdown");
        twin.shutdown().await;
    });
    let times = ClientTimes::from_path(dir.path()).expect("the capture folder reads");
    (dir, times)
}

/// The gaps between the scripted agent's step starts (5 steps: read+glob,
/// task, edit, mvn test, answer), seconds of the paused clock.
fn step_gaps(times: ClientTimes) -> Vec<f64> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("paused runtime");
    rt.block_on(async {
        let clock = Clock::real();
        let model = Arc::new(ScriptedModel::new(clock.clone()));
        let mut config = one_student(Some(65_536));
        config.client_times = Arc::new(times);
        run(&config, model.clone(), clock).await;
        let seen = model.seen();
        let steps = agent_steps(&seen);
        assert_eq!(steps.len(), 5);
        steps.windows(2).map(|w| w[1].at - w[0].at).collect()
    })
}

#[test]
fn a_captured_distribution_drives_the_students_pauses() {
    let (_dir, times) = captured([0.20, 0.50, 0.80]);
    let one = |k: ClientTimeKind| {
        let s = times.samples(k);
        assert_eq!(s.len(), 1, "{k:?}: {s:?}");
        s[0]
    };
    let (file, edit, build) = (
        one(ClientTimeKind::FileTool),
        one(ClientTimeKind::AfterEdit),
        one(ClientTimeKind::BuildTest),
    );
    assert!(
        (0.20..0.45).contains(&file)
            && (0.50..0.75).contains(&edit)
            && (0.80..1.05).contains(&build)
    );
    let call = 3.0; // every scripted call takes 3 s
    let gaps = step_gaps(times);
    // The paused clock's timers fire on whole milliseconds.
    let close = |a: f64, b: f64| (a - b).abs() < 0.005;
    assert!(
        close(gaps[0], call + 2.0 * file),
        "read + glob: {gaps:?} vs {file}"
    );
    assert!(close(gaps[2], call + edit), "edit: {gaps:?} vs {edit}");
    assert!(
        close(gaps[3], call + build),
        "mvn test: {gaps:?} vs {build}"
    );

    let built_in = step_gaps(ClientTimes::built_in());
    assert!(
        (call + 1.0..=call + 4.0).contains(&built_in[2]),
        "built-in edit time: {built_in:?}"
    );
    assert!(
        (call + 3.0..=call + 12.0).contains(&built_in[3]),
        "built-in test time: {built_in:?}"
    );
}

#[test]
fn the_classroom_binary_runs_with_a_captured_folder() {
    let (dir, _) = captured([0.10, 0.20, 0.30]);
    let work = tempfile::tempdir().expect("work dir");
    let mut cmd = crate::cli_support::codendum(work.path());
    cmd.args([
        "classroom",
        "--users",
        "1",
        "--duration",
        "30",
        "--ramp-up",
        "0",
    ])
    .args([
        "--follow-ups",
        "0",
        "--time-scale",
        "5",
        "--yes",
        "--no-report",
    ])
    .args(["--results-dir", "r", "--client-times"])
    .arg(dir.path())
    .arg("--prompt-file")
    .arg(dir.path().join("prompt.json"));
    let f = crate::cli_support::run(cmd);
    assert_eq!(f.code, Some(0), "{}", f.both());
    let run = crate::cli_support::only_folder(&work.path().join("r"));
    let mut calls = crate::cli_support::read_jsonl(&run.join("requests.jsonl"), false);
    calls.retain(|c| c["kind"] != "title");
    calls.sort_by(|a, b| {
        a["started_at"]
            .as_f64()
            .partial_cmp(&b["started_at"].as_f64())
            .expect("times")
    });
    assert!(calls.len() >= 3, "{} calls", calls.len());
    // That the students spend exactly the captured times is held on a
    // paused clock above (a_captured_distribution_drives_the_students_pauses);
    // on this scaled wall clock a loaded machine adds lateness to every
    // gap, so here the run only has to name the files it used.
    // The run says which client times it used.
    let summary = crate::cli_support::read_json(&run.join("summary.json"));
    let named = summary["parameters"]["client_times"].as_str().unwrap_or("");
    assert!(
        named.ends_with(".json") || dir.path().ends_with(named),
        "parameters.client_times: {:?}",
        summary["parameters"]["client_times"]
    );
    assert!(!named.is_empty());
    let prompt = summary["parameters"]["prompt_file"].as_str().unwrap_or("");
    assert!(
        prompt.ends_with("prompt.json"),
        "parameters.prompt_file: {prompt:?}"
    );
}
