//! Running a workload for the suite: through `app::bench::run` and
//! `app::classroom::run` (the CLI's own paths), one workload at a time, then
//! the report with the verdicts; or reusing a run another process made.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use tokio::sync::watch;

use super::capacity::{search_on_twin, CapacityFound};
use super::judge::{judge_bench_level, judge_classroom, Judgement};
use super::lifecycle::{Lifecycle, RunVoice};
use super::profile::SuiteProfile;
use super::reuse::{short_hash, RunCache};
use super::settings::Settings;
use super::workload::{bench_config, classroom_config, twin_time_scale, WorkloadKind};
use crate::capacity::settings::CapacitySettings;
use crate::events::{Events, Written};
use crate::settings::{LiveServer, RunSettings, Server, TwinSettings};
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::results::{BenchSummary, ClassroomRunSummary};
use codendum_core::targets::bench::ModeTargets;
use codendum_report::model::Verdict;

/// The summary a workload left.
#[derive(Debug, Clone)]
pub enum WorkloadSummary {
    /// A bench run's `summary.json`.
    Bench(Box<BenchSummary>),
    /// A classroom run's `summary.json`.
    Classroom(Box<ClassroomRunSummary>),
}

impl WorkloadSummary {
    /// The run's verdict, when it asks for exit 1 (the run failed, or its
    /// errors exceed the limit): every trial of the workload then fails
    /// with its line.
    pub fn failing_verdict(&self) -> Option<&codendum_core::results::Verdict> {
        let verdict = match self {
            WorkloadSummary::Bench(s) => s.verdict.as_ref(),
            WorkloadSummary::Classroom(s) => s.verdict.as_ref(),
        }?;
        (verdict.exit_code() != 0).then_some(verdict)
    }
}

/// What every trial of a workload says when the run's verdict failed it
/// (the server stopped answering, too many errors): the verdict's line.
pub fn verdict_message(kind: WorkloadKind, results: &WorkloadResults) -> Option<String> {
    results.summary.failing_verdict().map(|v| {
        format!(
            "the {} run {} (results in {})",
            kind.name(),
            v.line,
            results.folder.display()
        )
    })
}

/// A finished workload.
#[derive(Debug, Clone)]
pub struct WorkloadResults {
    /// Its results folder.
    pub folder: PathBuf,
    /// Its summary.
    pub summary: WorkloadSummary,
    /// Whether another process ran it (this one only judges it).
    pub reused: bool,
}

/// One workload at a time in this process (the run lock does the same
/// across processes).
static RUNNING: Mutex<()> = Mutex::new(());

/// Set once a workload was stopped by Ctrl-C or SIGTERM: no further
/// workload starts in this process (their trials fail saying so).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether a workload of this process was stopped by Ctrl-C or SIGTERM.
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// Why a workload has no results: the message every trial of it fails
/// with, and whether the server refused it (busy, the busy guard's exit 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadFailure {
    /// What every trial of the workload says.
    pub message: String,
    /// The run did not start because the server was busy.
    pub refused: bool,
}

impl From<String> for WorkloadFailure {
    fn from(message: String) -> Self {
        WorkloadFailure {
            message,
            refused: false,
        }
    }
}

/// The run-cache key of a workload: profile, workload, mode, and a hash of
/// everything that shapes the run (target, profile settings, checked levels,
/// results root).
pub fn cache_key(
    settings: &Settings,
    p: &SuiteProfile,
    targets: &ModeTargets,
    kind: WorkloadKind,
) -> String {
    let shaping = format!(
        "{}|{}|{:?}|{:?}|{}",
        settings.server_label(),
        p.spec,
        p.profile.server,
        targets
            .bench
            .iter()
            .map(|b| b.group_name())
            .collect::<Vec<_>>(),
        settings.results_dir.display()
    );
    format!(
        "{}--{}--{}--{}",
        p.profile.name,
        kind.name(),
        settings.mode.name(),
        short_hash(&shaping)
    )
}

/// Runs a workload (or reuses another process's run of it), writes its
/// report with the verdicts of every target of the workload, and prints the
/// report's path. `events` hears the suite's lines (what runs, what is
/// reused, the report), `workload_events` the run itself (its plan,
/// progress and tables). `Err` says why every trial of the workload fails.
pub fn run_workload(
    (settings, lifecycle): (&Settings, &dyn Lifecycle),
    (p, targets, kind): (&SuiteProfile, &ModeTargets, WorkloadKind),
    cache: &RunCache,
    events: &Events,
    workload_events: &Events,
) -> Result<WorkloadResults, WorkloadFailure> {
    let _one_at_a_time = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    if interrupted() {
        return Err(format!(
            "the {} workload was not started: the suite was interrupted",
            kind.name()
        )
        .into());
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
    rt.block_on(run_locked(
        (settings, lifecycle),
        (p, targets, kind),
        cache,
        (events, workload_events),
    ))
}

async fn run_locked(
    (settings, lifecycle): (&Settings, &dyn Lifecycle),
    (p, targets, kind): (&SuiteProfile, &ModeTargets, WorkloadKind),
    cache: &RunCache,
    (events, workload_events): (&Events, &Events),
) -> Result<WorkloadResults, WorkloadFailure> {
    let clock = Clock::real();
    let _lock = cache
        .lock_telling(&clock, events)
        .await
        .map_err(|e| format!("cannot take the run lock in {}: {e}", cache.dir.display()))?;
    let key = cache_key(settings, p, targets, kind);
    if let Some(record) = cache.lookup(&key, clock.utc_now().timestamp()) {
        let summary = load_summary(&record.folder, kind)?;
        events.note(format!(
            "{} {} judged from the run in {}",
            p.profile.name,
            kind.name(),
            record.folder.display()
        ));
        return Ok(WorkloadResults {
            folder: record.folder,
            summary,
            reused: true,
        });
    }
    let server = server(settings, p, kind);
    events.note(format!(
        "running the {} {} workload of {} against {}",
        settings.mode.name(),
        kind.name(),
        p.profile.name,
        match &server {
            Server::Live(_) => settings.server_label(),
            Server::Virtual(_) => "its twin in virtual time".to_string(),
            Server::Twin(t) | Server::Fleet(t, _) =>
                format!("its twin at {}x real time on a loopback port", t.time_scale),
        }
    ));
    // Ctrl-C or SIGTERM during a workload stops it as it stops the command:
    // its folder is written and every trial of it fails as interrupted.
    let stop = lifecycle.stop_on_signal(events.clone());
    let virtual_time = matches!(server, Server::Virtual(_));
    let server = &server;
    let run = || {
        let voice = voice(stop.clone(), workload_events);
        async move {
            let run = run_settings(settings, p);
            let (folder, summary) = match kind {
                WorkloadKind::Bench => {
                    let config = bench_config(settings.mode, targets);
                    let (folder, s) = lifecycle.bench((server, &run), &config, voice).await?;
                    (folder, WorkloadSummary::Bench(Box::new(s)))
                }
                WorkloadKind::Classroom => {
                    let mut class = classroom_config(settings.mode);
                    class.api_keys = settings.api_keys.clone();
                    let (folder, s) = lifecycle.classroom((server, &run), class, voice).await?;
                    (folder, WorkloadSummary::Classroom(Box::new(s)))
                }
            };
            Ok(WorkloadResults {
                folder,
                summary,
                reused: false,
            })
        }
    };
    // The twin in virtual time runs on a paused runtime of its own: the
    // whole workload takes seconds and its figures do not move with the
    // machine's load.
    let outcome = match virtual_time {
        true => crate::virtual_time::on_paused_runtime_with(run),
        false => run().await,
    };
    if *stop.borrow() {
        INTERRUPTED.store(true, Ordering::Relaxed);
    }
    let results = outcome.map_err(|e| explain(kind.name(), e))?;
    let verdicts: Vec<Verdict> = judge_all(targets, kind, &results)
        .into_iter()
        .map(|j| j.verdict)
        .collect();
    match codendum_report::files::write_report_with(&results.folder, None, &verdicts) {
        Ok(paths) => {
            for path in paths {
                events.written(Written::Report, path);
            }
        }
        Err(e) => events.warn(format!("the report could not be written: {e}")),
    }
    if let Err(e) = cache.store(&key, &results.folder, clock.utc_now().timestamp()) {
        events.warn(format!(
            "cannot record the run in {}: {e}",
            cache.dir.display()
        ));
    }
    Ok(results)
}

fn explain(name: &str, e: Error) -> WorkloadFailure {
    match e {
        Error::Refused(msg) => WorkloadFailure {
            message: format!(
                "the {name} workload did not start: {msg} (the suite never asks; --allow-busy or CODENDUM_ALLOW_BUSY=1 starts it anyway)"
            ),
            refused: true,
        },
        other => format!("the {name} workload failed: {other}").into(),
    }
}

/// The capacity search of a profile's `[targets.capacity]`, one workload
/// at a time as the others (its CPU would otherwise slow a workload on a
/// scaled clock): without a live server, against the profile's twin in
/// virtual time ([`super::capacity::search_on_twin`]); with one,
/// `codendum capacity`'s own run (the twin's prediction, the steps,
/// `capacity.json` and its report), never asking, its folder under the
/// suite's root. `Err` says why every capacity trial of the profile fails.
pub fn run_capacity(
    (settings, lifecycle): (&Settings, &dyn Lifecycle),
    (p, search): (&SuiteProfile, &CapacitySettings),
    cache: &RunCache,
    (events, workload_events): (&Events, &Events),
) -> Result<CapacityFound, WorkloadFailure> {
    let _one_at_a_time = RUNNING.lock().unwrap_or_else(|e| e.into_inner());
    if interrupted() {
        return Err(
            "the capacity search was not started: the suite was interrupted"
                .to_string()
                .into(),
        );
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start a tokio runtime: {e}"))?;
    rt.block_on(async {
        let clock = Clock::real();
        let _lock = cache
            .lock_telling(&clock, events)
            .await
            .map_err(|e| format!("cannot take the run lock in {}: {e}", cache.dir.display()))?;
        events.note(format!(
            "running the capacity search of {} against {}",
            p.profile.name,
            match settings.is_live() {
                true => settings.server_label(),
                false => "its twin in virtual time".to_string(),
            }
        ));
        if !settings.is_live() {
            return search_on_twin(search, p).map_err(WorkloadFailure::from);
        }
        let stop = lifecycle.stop_on_signal(events.clone());
        let server = server(settings, p, WorkloadKind::Classroom);
        let run = run_settings(settings, p);
        let voice = voice(stop.clone(), workload_events);
        let outcome = lifecycle.capacity((&server, &run), search, voice).await;
        if *stop.borrow() {
            INTERRUPTED.store(true, Ordering::Relaxed);
        }
        let (folder, answers) = outcome.map_err(|e| explain("capacity", e))?;
        Ok(CapacityFound {
            answers,
            place: format!("results in {}", folder.display()),
        })
    })
}

/// Where a workload runs: the live server; else the profile's twin in
/// virtual time; a profile with a `[fleet]` of several replicas, or a class
/// signing in with the students' keys (the lab's proxy in front), runs on
/// twins on loopback ports at the workload's speed-up instead.
fn server(settings: &Settings, p: &SuiteProfile, kind: WorkloadKind) -> Server {
    let twin = TwinSettings {
        profile: p.profile.clone(),
        time_scale: twin_time_scale(kind),
        seed: 1,
    };
    match &settings.target {
        Some(target) => Server::Live(LiveServer {
            target: target.clone(),
            prometheus: None,
        }),
        None if p.profile.fleet.replicas <= 1 && settings.api_keys.is_empty() => {
            Server::Virtual(twin)
        }
        None => Server::embedded(twin, p.profile.fleet),
    }
}

/// How a workload runs: never asking, no report of its own (the suite
/// writes one with the verdicts), its results under the suite's root.
fn run_settings(settings: &Settings, p: &SuiteProfile) -> RunSettings {
    let mut provenance = settings.provenance.clone();
    if provenance.profile.is_none() || !settings.is_live() {
        provenance.profile = Some(p.profile.name.clone());
    }
    RunSettings {
        client: settings.client.clone(),
        provenance,
        results_dir: settings.results_dir.clone(),
        allow_busy: settings.allow_busy,
        yes: true,
        write_report: false,
        max_error_rate: codendum_core::results::verdict::DEFAULT_MAX_ERROR_RATE,
        strict: false,
        repeat: 1,
    }
}

/// What a workload's run says goes to `events` (silent under the test
/// harness, the terminal under `codendum check`); it stops with `stop`.
fn voice(stop: watch::Receiver<bool>, events: &Events) -> RunVoice {
    RunVoice {
        events: events.clone(),
        stop,
    }
}

/// Judges a workload's results against a mode's targets.
pub fn judge_all(targets: &ModeTargets, kind: WorkloadKind, r: &WorkloadResults) -> Vec<Judgement> {
    match (&r.summary, kind) {
        (WorkloadSummary::Bench(s), WorkloadKind::Bench) => targets
            .bench
            .iter()
            .flat_map(|t| judge_bench_level(s, t, &r.folder))
            .collect(),
        (WorkloadSummary::Classroom(s), WorkloadKind::Classroom) => targets
            .classroom
            .as_ref()
            .map(|t| judge_classroom(s, t, &r.folder))
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Reads back the summary of a results folder.
pub fn load_summary(folder: &Path, kind: WorkloadKind) -> Result<WorkloadSummary, String> {
    let read_err = |e: codendum_core::results::ResultsError| {
        format!("cannot read the results in {}: {e}", folder.display())
    };
    match kind {
        WorkloadKind::Bench => codendum_core::results::read_bench_summary(folder)
            .map(|s| WorkloadSummary::Bench(Box::new(s)))
            .map_err(read_err),
        WorkloadKind::Classroom => codendum_core::results::read_classroom_folder_summary(folder)
            .map(|s| WorkloadSummary::Classroom(Box::new(s)))
            .map_err(read_err),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codendum_core::access::Secret;
    use codendum_core::profile::Profile;
    use codendum_core::targets::bench::ProfileTargets;

    fn suite_profile(replicas: u32) -> SuiteProfile {
        let mut profile = Profile::load("classroom-64k").expect("shipped profile");
        profile.fleet.replicas = replicas;
        SuiteProfile {
            spec: "classroom-64k".into(),
            profile,
            targets: ProfileTargets::default(),
            judged: true,
        }
    }

    fn offline() -> Settings {
        Settings::from_lookup(|_| None).expect("no variables")
    }

    #[test]
    fn a_single_twin_runs_in_virtual_time_a_fleet_or_a_proxy_on_sockets() {
        let s = offline();
        let one = server(&s, &suite_profile(1), WorkloadKind::Classroom);
        assert!(matches!(one, Server::Virtual(_)), "{one:?}");
        match server(&s, &suite_profile(2), WorkloadKind::Classroom) {
            Server::Fleet(t, f) => {
                assert_eq!(f.replicas, 2);
                assert_eq!(
                    t.time_scale,
                    super::super::workload::TWIN_CLASSROOM_TIME_SCALE
                );
            }
            other => panic!("a fleet runs on loopback ports: {other:?}"),
        }
        let mut keyed = offline();
        keyed.api_keys = vec![Secret::new("student-1")];
        match server(&keyed, &suite_profile(1), WorkloadKind::Bench) {
            Server::Twin(t) => {
                assert_eq!(t.time_scale, super::super::workload::TWIN_BENCH_TIME_SCALE)
            }
            other => panic!("the students' keys need the proxy on a socket: {other:?}"),
        }
    }
}
