//! `codendum replay` end to end: read the trace, connect (or start the
//! twin), guard and confirm against a live server, sample `/metrics`, send
//! the calls again, write a classroom-like folder (`replay-<UTC>/`:
//! `requests.jsonl`, `tasks.jsonl`, `server-timeline.jsonl`,
//! `summary.json` of kind `replay`) and its report. And `codendum
//! export-trace`: a capture or a classroom run as a trace file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::bench::Confirm;
use crate::bench::{busy_guard, ServerInfo, TimelineFlag};
use crate::classroom::{ClassroomConfig, ClassroomSummary, JsonlSink};
use crate::connect::{ConnectOptions, Connection};
use crate::events::{Event, Events};
use crate::replay::{self, ReplayConfig, SourceKind};
use codendum_core::error::{ConfigError, Error};
use codendum_core::openai::{Endpoint, Transport};
use codendum_core::results::{
    self, ClassroomParameters, ClassroomRunSummary, FolderKind, ReplayParameters, RunFolder,
    RunHeader, ServerDescription,
};
use codendum_core::target::{Provenance, Target};
use codendum_core::trace::{mooncake, timing, Trace};

/// Everything `codendum replay` needs.
pub struct ReplayRun<'a> {
    /// The capture folder, results folder or trace file.
    pub source: PathBuf,
    /// Tokens per block of a trace file's `hash_ids` (and of the blocks
    /// rebuilt for a folder).
    pub block_size: u32,
    /// Timeline compression (> 0).
    pub speed: f64,
    /// Root sessions to replay (`None`: as recorded).
    pub sessions: Option<usize>,
    /// Chat or completions.
    pub endpoint: Endpoint,
    /// The server (no base URL: the embedded twin).
    pub target: Target,
    /// Provenance recorded with the results.
    pub provenance: Provenance,
    /// How to start the embedded twin.
    pub connect: ConnectOptions,
    /// Results root.
    pub results_dir: PathBuf,
    /// Seed of the synthetic text.
    pub seed: u64,
    /// Start on a busy server.
    pub allow_busy: bool,
    /// `--max-error-rate` (a fraction).
    pub max_error_rate: f64,
    /// Do not ask.
    pub yes: bool,
    /// Asked before a live run without `--yes`.
    pub confirm: &'a Confirm,
    /// Becomes `true` on Ctrl-C / SIGTERM.
    pub stop: watch::Receiver<bool>,
    /// Write `report.md` / `report.html` at the end.
    pub write_report: bool,
    /// Where the replay tells its plan, notes and results.
    pub events: Events,
}

/// What a replay produced.
#[derive(Debug)]
pub struct ReplayResult {
    /// The results folder.
    pub folder: PathBuf,
    /// `summary.json` as written.
    pub summary: ClassroomRunSummary,
}

/// Reads the trace a replay or an export starts from, with `sessions`
/// root sessions when given.
pub fn read_trace(
    source: &Path,
    block_size: u32,
    sessions: Option<usize>,
) -> Result<(SourceKind, Trace), Error> {
    let (kind, trace) = replay::load(source, block_size)?;
    if trace.calls.is_empty() {
        return Err(ConfigError::BadFile {
            what: "replay source",
            path: source.to_path_buf(),
            reason: "holds no model call".into(),
        }
        .into());
    }
    let trace = match sessions {
        Some(n) => timing::resize_sessions(&trace, n),
        None => trace,
    };
    Ok((kind, trace))
}

/// Runs the replay; an interrupted one writes its folder and returns
/// [`Error::Interrupted`].
pub async fn run(run: ReplayRun<'_>) -> Result<ReplayResult, Error> {
    let (kind, trace) = read_trace(&run.source, run.block_size, run.sessions)?;
    let mut connect = run.connect.clone();
    let sessions = trace.sessions().len().max(1);
    connect.max_connections = connect.max_connections.max(sessions * 2 + 8);
    let conn = Connection::open(&run.target, &connect).await?;
    let steady = replay::source::steady_window(&run.source, kind);
    let result = run_connected(&run, &conn, (kind, steady), &trace).await;
    conn.close().await;
    let result = result?;
    if run.write_report {
        super::report::write_report_at_end(&result.folder, &run.events);
    }
    if result.summary.header.interrupted {
        return Err(Error::Interrupted(result.folder));
    }
    Ok(result)
}

async fn run_connected(
    run: &ReplayRun<'_>,
    conn: &Connection,
    (kind, steady): (SourceKind, Option<(f64, f64)>),
    trace: &Trace,
) -> Result<ReplayResult, Error> {
    // Before any request through the base URL: the router's figures cover
    // every call of the command.
    let router = super::router::watch(&run.target, &run.events).await?;
    let models = conn.client.models().await.map_err(|e| {
        Error::Failed(format!(
            "cannot list the server's models at /v1/models: {}",
            e.message
        ))
    })?;
    let model = match &run.target.model {
        Some(m) => m.clone(),
        None => models
            .first()
            .map(|m| m.id.clone())
            .ok_or_else(|| Error::Failed("the server lists no model; pass --model".into()))?,
    };
    let recorded_span = trace.calls.last().map_or(0.0, |c| c.at_s) / run.speed;
    let mut plan = format!(
        "Replay: {} calls of {} sessions from {} ({:.0} s recorded at speed {}) against {}, model {}; results in {}",
        trace.calls.len(),
        trace.sessions().len(),
        run.source.display(),
        recorded_span * run.speed,
        run.speed,
        conn.label,
        model,
        run.results_dir.display()
    );
    let mut reachable = None;
    if !conn.is_embedded() {
        let load = match &conn.scraper {
            Some(s) => super::seams::load_now(s).await,
            None => None,
        };
        reachable = Some(load.is_some());
        let guard = busy_guard(load, run.allow_busy, TimelineFlag::Report)?;
        if let Some(w) = guard.warning() {
            run.events.warn(w);
        }
        if !guard.checked() {
            plan.push_str("; the server's load was not checked (/metrics could not be read)");
        }
    }
    run.events.emit(Event::Plan(plan.clone()));
    if !conn.is_embedded() && !run.yes && !(run.confirm)(&plan) {
        return Err(Error::Refused(
            "not confirmed: pass --yes to run without asking".into(),
        ));
    }
    let transport: Arc<dyn Transport> = conn.client.clone();
    let template = replay::template_tokens(transport.as_ref(), run.endpoint, &model).await;
    let config = ReplayConfig {
        model: model.clone(),
        speed: run.speed,
        salt: run.seed,
        endpoint: run.endpoint,
        api_key: run.target.api_key.clone(),
        template,
    };
    let clock = conn.clock.clone();
    let started_utc = clock.utc_now();
    let folder = RunFolder::create(&run.results_dir, FolderKind::Replay, started_utc)?;
    let sink = Arc::new(JsonlSink::in_folder(&folder)?);
    let sampling =
        super::classroom::class_sampling(None, conn, &folder, reachable, &run.events).await?;
    let origin = clock.now_secs();
    let outcome = replay::run_replay(
        trace,
        &config,
        transport,
        clock.clone(),
        sink.clone(),
        Some(run.stop.clone()),
    )
    .await;
    let interrupted = *run.stop.borrow();
    sampling.mark_end().await;
    let span = clock.now_secs() - origin;
    let read = sampling
        .finish(&clock, &folder, (origin, origin + span), &run.events)
        .await;
    let mut summary =
        ClassroomSummary::from_records(outcome.users, &outcome.requests, &outcome.tasks);
    let verdict = codendum_core::results::verdict::class_verdict(
        &outcome.requests,
        &outcome.tasks,
        run.max_error_rate,
    );
    let answered = verdict.answered_until_s.map_or(span, |t| t.min(span));
    // The steady window: a classroom source's own (its ramp-up to the end
    // of its window for new coding requests, at the replay's speed), so a
    // class and its replay measure the same stretch; else the whole replay
    // (no ramp-up is known).
    let (ramp_up_s, window_s) = match steady {
        Some((ramp, window)) => (ramp / run.speed, (window / run.speed).min(answered)),
        None => (0.0, answered),
    };
    let mut window = ClassroomConfig::new(model.clone(), None);
    window.ramp_up = Duration::from_secs_f64(ramp_up_s);
    window.duration = Duration::from_secs_f64(window_s.max(ramp_up_s + 1.0));
    let figures_source = if read.fleet.is_empty() {
        "none"
    } else {
        "sampler"
    };
    let answered_span = answered + 2.0 * read.lag_s;
    let name_of_metrics = conn
        .scraper
        .as_ref()
        .map(crate::scrape::sampler::fleet_name)
        .unwrap_or_default();
    let successes = outcome
        .requests
        .iter()
        .filter(|r| r.error_kind.is_none())
        .count() as u64;
    let metrics_continuity = super::classroom::class_server_side(
        &mut summary,
        (&read.fleet, &read.replicas, read.source),
        (origin, answered_span),
        &window,
        (&name_of_metrics, figures_source == "sampler", successes),
        &run.events,
    );
    let verdict = verdict.with_restarts(metrics_continuity.iter().flat_map(|m| m.restart_times()));
    let router = super::router::finish_class(router, &summary.errors_by_kind, &run.events).await;
    let server_version = if conn.is_embedded() {
        Some(format!("{} (twin)", codendum_twin::VLLM_VERSION))
    } else {
        ServerInfo::server_version(conn.client.as_ref()).await
    };
    let mut provenance = run.provenance.clone();
    if let (true, Some(p)) = (conn.is_embedded(), &conn.profile) {
        provenance.profile = Some(p.name.clone());
    }
    let name = run.source.file_name().map_or_else(
        || run.source.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let run_summary = ClassroomRunSummary {
        header: RunHeader {
            schema_version: results::CLASSROOM_SCHEMA_VERSION,
            kind: results::REPLAY_KIND.into(),
            run_id: format!("replay-{}", started_utc.format("%Y%m%dT%H%M%SZ")),
            started_utc,
            finished_utc: clock.utc_now(),
            interrupted,
        },
        parameters: ClassroomParameters {
            users: outcome.users as u32,
            scenario: "replay".into(),
            // The class's window when it is the steady one, else the span
            // of the recorded arrivals.
            duration_s: match steady {
                Some(_) => window.duration.as_secs_f64(),
                None => recorded_span,
            },
            ramp_up_s,
            pause_min_s: 0.0,
            pause_max_s: 0.0,
            follow_ups: 0,
            context_limit: None,
            output_limit: 0,
            seed: run.seed,
            prompt_file: None,
            client_times: None,
            api_keys: usize::from(run.target.api_key.is_some()),
            clock_scale: clock.scale(),
        },
        server: ServerDescription {
            url: conn.label.clone(),
            model,
            server_version,
            metrics: figures_source != "none",
            max_model_len: None,
            engine: None,
        },
        provenance,
        server_figures_source: figures_source.into(),
        key_note: None,
        summary,
        profile_check: None,
        verdict: Some(verdict),
        metrics_continuity,
        router,
        replay: Some(ReplayParameters {
            source: name,
            source_kind: kind.as_str().into(),
            block_size: trace.block_size,
            speed: run.speed,
            sessions: trace.sessions().len(),
            calls: trace.calls.len(),
            shared_block_fraction: trace.shared_block_fraction(),
            template_tokens: template.message_tokens,
        }),
    };
    let written = super::classroom::write_summary(folder, run_summary, &run.events)?;
    Ok(ReplayResult {
        folder: written.folder,
        summary: written.summary,
    })
}

/// The command's answer for a finished replay: `Ok` unless its verdict
/// asks for exit 1.
pub fn check_result(result: &ReplayResult) -> Result<(), Error> {
    match &result.summary.verdict {
        Some(v) if v.exit_code() != 0 => Err(Error::Failed(format!(
            "{}; results in {}",
            v.line,
            result.folder.display()
        ))),
        _ => Ok(()),
    }
}

/// The formats `codendum export-trace` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// Open loop: a line per call with its `timestamp`.
    Mooncake,
    /// AIPerf's `mooncake_trace` sessions (`session_id`, `delay`).
    Aiperf,
}

/// Writes the trace of `source` (a capture or a classroom/replay folder, or
/// a trace file) as `format` into `out` (`-`: into `stdout`, the binary's
/// standard output); returns the calls written.
pub fn export_trace(
    source: &Path,
    block_size: u32,
    format: TraceFormat,
    out: &Path,
    stdout: &mut dyn Write,
) -> Result<usize, Error> {
    let (_, trace) = read_trace(source, block_size, None)?;
    let write = |w: &mut dyn Write| match format {
        TraceFormat::Mooncake => mooncake::write_mooncake(&trace, w),
        TraceFormat::Aiperf => mooncake::write_aiperf_sessions(&trace, w),
    };
    if out == Path::new("-") {
        write(stdout)
            .and_then(|()| stdout.flush())
            .map_err(|e| Error::io("cannot write the trace to stdout", e))?;
    } else {
        let tmp = out.with_extension("tmp");
        let file = std::fs::File::create(&tmp)
            .map_err(|e| Error::io(format!("cannot write {}", tmp.display()), e))?;
        let mut w = std::io::BufWriter::new(file);
        write(&mut w)
            .and_then(|()| w.flush())
            .and_then(|()| std::fs::rename(&tmp, out))
            .map_err(|e| Error::io(format!("cannot write {}", out.display()), e))?;
    }
    Ok(trace.calls.len())
}
