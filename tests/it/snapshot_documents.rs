//! Snapshots of the documents a user reads that no other snapshot covers
//! (the reports' are in report_documents): the classroom summary of a small
//! class on the paused clock, and a plan's
//! `plan.md` and `plan.json`. Volatile parts (UTC times, folder names,
//! the version) are redacted; everything else must stay as it was or be
//! re-accepted on purpose.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use codendum::classroom::{run_classroom, ClassroomConfig, LiveStatus, MemorySink};
use codendum::plan::{plan, PlanConfig};
use codendum_core::clock::Clock;
use codendum_core::profile::Profile;
use codendum_twin::inproc::InProcTransport;
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

/// Snapshots in `snapshots/<folder>/`, with the volatile parts redacted.
fn settings(folder: &str) -> insta::Settings {
    settings_naming(folder, &[])
}

/// [`settings`], and first each exact path of `paths` replaced by its
/// placeholder (before the catch-all for temporary folders, so what follows
/// such a path, a file name, stays in the snapshot).
pub(crate) fn settings_naming(folder: &str, paths: &[(&str, &str)]) -> insta::Settings {
    let mut s = insta::Settings::clone_current();
    s.set_snapshot_path(
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("snapshots")
            .join(folder),
    );
    s.set_prepend_module_to_snapshot(false);
    for (path, placeholder) in paths {
        s.add_filter(&regex::escape(path), *placeholder);
    }
    s.add_filter(
        r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|\+00:00| UTC)?",
        "[UTC]",
    );
    s.add_filter(r"\d{8}T\d{6}Z", "[STAMP]");
    s.add_filter(r#"codendum \d+\.\d+\.\d+"#, "codendum [VERSION]");
    s.add_filter(r#"/tmp/[^"\s<)]*"#, "[TMP]");
    s
}

#[test]
fn classroom_summary_of_a_small_class() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .expect("paused runtime");
    let summary = runtime.block_on(async {
        let clock = Clock::scaled(1.0);
        let mut opts = TwinOptions::new(Profile::load("classroom-64k").expect("profile"));
        opts.clock = clock.clone();
        opts.responder = Arc::new(AgentPersona::new(5));
        opts.seed = 5;
        let transport = Arc::new(InProcTransport::start(opts));
        let mut config = ClassroomConfig::new("qwen3-coder", Some(65_536));
        config.users = 4;
        config.duration = Duration::from_secs(300);
        config.ramp_up = Duration::from_secs(30);
        config.seed = 5;
        let status = Arc::new(LiveStatus::new(clock.clone()));
        let sink = Arc::new(MemorySink::default());
        let outcome = run_classroom(&config, transport.clone(), clock, sink, status)
            .await
            .expect("class");
        transport.stop();
        outcome.summary
    });
    let json = serde_json::to_string_pretty(&summary).expect("json");
    settings("classroom").bind(|| insta::assert_snapshot!("classroom_summary_4_users", json));
}

#[test]
fn plan_documents() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = PlanConfig {
        users: vec![4, 8],
        profiles: vec!["classroom-64k".into()],
        duration: Duration::from_secs(120),
        seed: 5,
        jobs: 1,
        results_dir: dir.path().to_path_buf(),
        ..PlanConfig::new()
    };
    let (_, folder) = plan(&config, &|_| {}).expect("plan runs");
    let md = std::fs::read_to_string(folder.join("plan.md")).expect("plan.md");
    let json = std::fs::read_to_string(folder.join("plan.json")).expect("plan.json");
    let s = settings("plan");
    s.bind(|| {
        insta::assert_snapshot!("plan_md", md);
        insta::assert_snapshot!("plan_json", json);
    });
}
