//! `codendum classroom` end to end: connect (or start the twin, with the
//! lab's proxy when there are keys), guard and confirm, sample `/metrics`,
//! run the students, fold in a host timeline, write the folder and report.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::bench::Confirm;
pub use super::classroom_output::render_summary;
use super::classroom_output::show_status;
use super::fleet::{open_prometheus, ClassSampling, RunTimelines};
use crate::bench::ServerInfo;
use crate::classroom::{
    run_classroom_until, ClassroomConfig, ClassroomSummary, JsonlSink, LiveStatus, ServerFigures,
};
use crate::connect::{ConnectOptions, Connection};
use crate::events::{Event, Events, Written};
use crate::scrape::{Sampler, SamplerHandle, Scraper};
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::prom::continuity::classify_run;
use codendum_core::prom::{
    align_timeline, fleet_figures, fleet_window, read_timeline, window_stats, ReplicaSample,
    TimelineSample,
};
use codendum_core::results::classroom_summary::{class_window, server_output_interval};
use codendum_core::results::{
    self, ClassroomParameters, ClassroomRunSummary, FolderKind, MetricsContinuity, RunFolder,
    RunHeader, ServerDescription,
};
use codendum_core::target::{Provenance, Target};

/// How long the calls in flight may go on after Ctrl-C or SIGTERM
/// (simulated seconds), as bench's cancel grace.
pub const STOP_GRACE: Duration = crate::bench::config::DEFAULT_CANCEL_GRACE;

/// Everything `codendum classroom` needs.
pub struct ClassroomRun<'a> {
    /// The students (its `model` may be empty: then the server's first model;
    /// its `context_limit` `None`: then the server's `max_model_len`).
    pub config: ClassroomConfig,
    /// The server (no base URL: the embedded twin).
    pub target: Target,
    /// Provenance recorded with the results.
    pub provenance: Provenance,
    /// How to start the embedded twin.
    pub connect: ConnectOptions,
    /// Whether `--context-limit` was given (else the server's limit is used).
    pub context_limit_given: bool,
    /// A host recording (`codendum metrics --watch 5 --json`) to fold in.
    pub server_timeline: Option<PathBuf>,
    /// The captured prompt file's name, for the parameters block.
    pub prompt_file: Option<String>,
    /// Results root (`bench-results`).
    pub results_dir: PathBuf,
    /// Start on a busy server.
    pub allow_busy: bool,
    /// `--max-error-rate` (a fraction): see [`codendum_core::results::verdict`].
    pub max_error_rate: f64,
    /// Do not ask.
    pub yes: bool,
    /// Asked before a live run without `--yes`.
    pub confirm: &'a Confirm,
    /// Becomes `true` on Ctrl-C / SIGTERM.
    pub stop: watch::Receiver<bool>,
    /// Where the class tells its status, notes and results.
    pub events: Events,
    /// Write `report.md` / `report.html` at the end.
    pub write_report: bool,
}

/// What a classroom run produced.
#[derive(Debug)]
pub struct ClassroomResult {
    /// The results folder.
    pub folder: PathBuf,
    /// `summary.json` as written.
    pub summary: ClassroomRunSummary,
}

/// Runs the class; an interrupted run writes its folder and returns
/// [`Error::Interrupted`].
pub async fn run(run: ClassroomRun<'_>) -> Result<ClassroomResult, Error> {
    let mut connect = run.connect.clone();
    connect.max_connections = connect.max_connections.max(run.config.users * 2 + 8);
    connect.student_keys = run.config.api_keys.clone();
    let conn = Connection::open(&run.target, &connect).await?;
    let result = run_connected(&run, &conn).await;
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
    run: &ClassroomRun<'_>,
    conn: &Connection,
) -> Result<ClassroomResult, Error> {
    let prometheus = match &run.connect.prometheus {
        Some(p) => Some(open_prometheus(p, &run.target, &run.events).await?),
        None => None,
    };
    // Before any request through the base URL: the router's figures cover
    // every call of the command.
    let router = super::router::watch(&run.target, &run.events).await?;
    let ready = super::classroom_prepare::prepare(run, conn).await?;
    let config = &ready.config;
    let clock = conn.clock.clone();
    let started_utc = clock.utc_now();
    let folder = RunFolder::create(&run.results_dir, FolderKind::Classroom, started_utc)?;
    // Every record is kept in memory (for a summary after an interruption)
    // and written as a flushed JSON line at once (`kill -9` loses nothing
    // finished).
    let sink = Arc::new(JsonlSink::in_folder(&folder)?);
    let sampling = class_sampling(
        prometheus,
        conn,
        &folder,
        ready.metrics_reachable,
        &run.events,
    )
    .await?;
    let status = Arc::new(LiveStatus::new(clock.clone()));
    let status_task = tokio::spawn(show_status(status.clone(), run.events.clone()));

    let origin = clock.now_secs();
    let stop = run.stop.clone();
    let outcome = run_until_stopped(config, conn, &clock, sink.clone(), status, stop).await;
    status_task.abort();
    run.events.emit(Event::StatusDone);
    sampling.mark_end().await;
    let span = clock.now_secs() - origin;
    let read = sampling
        .finish(&clock, &folder, (origin, origin + span), &run.events)
        .await;
    let (interrupted, mut summary, key_note) = match outcome {
        Some(Ok(o)) => (false, o.summary, o.key_note),
        Some(Err(Error::Io { context, source })) => {
            run.events.warn(format!("{context}: {source}"));
            (false, summary_from(config, &sink), None)
        }
        Some(Err(e)) => return Err(e),
        None => (true, summary_from(config, &sink), config.key_sharing_note()),
    };
    let verdict = codendum_core::results::verdict::class_verdict(
        &sink.requests(),
        &sink.tasks(),
        run.max_error_rate,
    );
    // The figures over time cover the minutes the server answered.
    let answered = verdict.answered_until_s.map_or(span, |t| t.min(span));
    let window = (started_utc, origin, answered);
    let name = conn
        .scraper
        .as_ref()
        .map(crate::scrape::sampler::fleet_name)
        .unwrap_or_default();
    let (figures_source, metrics_continuity) =
        fill_server_figures(run, config, &mut summary, &sink, (read, &name), window)?;
    let verdict = verdict.with_restarts(metrics_continuity.iter().flat_map(|m| m.restart_times()));
    let router = super::router::finish_class(router, &summary.errors_by_kind, &run.events).await;
    if let Some(p) = &conn.profile {
        let batch = summary.server.peak_running.map(|v| v.round() as u32);
        if let Some(w) = p.region_warning(summary.prompt_tokens_max, batch) {
            run.events.warn(w);
        }
    }
    let server_version = if conn.is_embedded() {
        Some(format!("{} (twin)", codendum_twin::VLLM_VERSION))
    } else {
        ServerInfo::server_version(conn.client.as_ref()).await
    };
    let run_summary = ClassroomRunSummary {
        header: RunHeader {
            schema_version: results::CLASSROOM_SCHEMA_VERSION,
            kind: results::CLASSROOM_KIND.into(),
            run_id: format!("classroom-{}", started_utc.format("%Y%m%dT%H%M%SZ")),
            started_utc,
            finished_utc: clock.utc_now(),
            interrupted,
        },
        parameters: parameters(config, run, clock.scale()),
        server: ServerDescription {
            url: conn.label.clone(),
            model: config.model.clone(),
            server_version,
            metrics: figures_source != "none",
            max_model_len: None,
            engine: None,
        },
        provenance: ready.provenance,
        server_figures_source: figures_source.into(),
        key_note,
        summary,
        profile_check: ready.profile_check,
        verdict: Some(verdict),
        replay: None,
        metrics_continuity,
        router,
    };
    write_summary(folder, run_summary, &run.events)
}

/// Writes `summary.json` and shows the final table.
pub(crate) fn write_summary(
    folder: RunFolder,
    run_summary: ClassroomRunSummary,
    events: &Events,
) -> Result<ClassroomResult, Error> {
    folder.write_classroom_summary(&run_summary)?;
    let folder = folder.into_path();
    events.table(render_summary(&run_summary));
    events.written(Written::Results, &folder);
    // A verdict that fails the run is the command's error, said last by
    // the binary; any other ends the output here.
    if let Some(v) = run_summary.verdict.as_ref().filter(|v| v.exit_code() == 0) {
        events.emit(Event::Verdict(v.line.clone()));
    }
    Ok(ClassroomResult {
        folder,
        summary: run_summary,
    })
}

/// The server figures of the run (from the sampler's timeline, or the host
/// recording given with `--server-timeline`) and the client's means beside
/// the server's time split; returns where the figures came from and what
/// the reads showed of each `/metrics` URL (a restart, several servers
/// behind one; those figures are marked or left empty).
/// `read`: the timelines and the server's name; `window`: the run's UTC
/// start, its start on the clock and its length (simulated seconds).
fn fill_server_figures(
    run: &ClassroomRun<'_>,
    config: &ClassroomConfig,
    summary: &mut ClassroomSummary,
    sink: &JsonlSink,
    (read, name): (RunTimelines, &str),
    window: (chrono::DateTime<chrono::Utc>, f64, f64),
) -> Result<(&'static str, Vec<MetricsContinuity>), Error> {
    let (started_utc, origin, span) = window;
    let (source, timeline, t0) = match &run.server_timeline {
        Some(path) => ("timeline-file", read_host_timeline(path, started_utc)?, 0.0),
        None if read.fleet.is_empty() => ("none", read.fleet, origin),
        None if read.read_after_run => ("prometheus", read.fleet, origin),
        None => ("sampler", read.fleet, origin),
    };
    // A class starts and ends idle: reading Prometheus two steps (twice its
    // lag) past the end takes in a scrape after it, and no gauge moves then.
    let span = span + 2.0 * read.lag_s;
    let replicas: &[ReplicaSample] = if run.server_timeline.is_none() {
        &read.replicas
    } else {
        &[]
    };
    let successes = sink
        .requests()
        .iter()
        .filter(|r| r.error_kind.is_none())
        .count() as u64;
    let sampled = source == "sampler";
    let timelines = (timeline.as_slice(), replicas, read.source);
    let continuity = class_server_side(
        summary,
        timelines,
        (t0, span),
        config,
        (name, sampled, successes),
        &run.events,
    );
    if let Some(fleet) = &summary.server_fleet {
        run.events
            .table(super::fleet::class_fleet_table(&summary.server, fleet));
    }
    if let Some(split) = summary.server.time_split.as_mut() {
        let calls = sink.requests();
        let ok = calls.iter().filter(|r| r.error_kind.is_none());
        split.client_ttft_mean_s = codendum_core::stats::mean(ok.clone().filter_map(|r| r.ttft_s));
        split.client_e2e_mean_s = codendum_core::stats::mean(ok.map(|r| r.duration_s));
    }
    Ok((source, continuity))
}

/// The server side of a class-like run (a class or a replay) from its
/// timelines (`(fleet, replicas, source of the replicas' figures)`) over
/// `(t0, span)`: the server and fleet figures into `summary`, and what the
/// reads of each `/metrics` URL showed (a restart, several servers behind
/// one URL), applied to those figures. `(name, sampled, successes)`: the
/// server's name, whether codendum sampled `/metrics` itself, and the
/// run's successful calls (a single sampled URL that counted far fewer was
/// several servers).
pub fn class_server_side(
    summary: &mut ClassroomSummary,
    (timeline, replicas, source): (&[TimelineSample], &[ReplicaSample], &str),
    (t0, span): (f64, f64),
    config: &ClassroomConfig,
    (name, sampled, successes): (&str, bool, u64),
    events: &Events,
) -> Vec<MetricsContinuity> {
    summary.server = server_figures(timeline, replicas, t0, span, config);
    let window = class_window(
        config.ramp_up.as_secs_f64(),
        config.duration.as_secs_f64(),
        span,
    );
    let output = summary
        .server
        .output_tokens_per_s
        .and_then(|_| server_output_interval(timeline, replicas, t0, window));
    summary.set_steady_window(window, output);
    summary.server_fleet = fleet_figures(replicas, source, t0, t0 + span);
    let reads = classify_run(timeline, replicas, name);
    let mut continuity: Vec<MetricsContinuity> = reads
        .iter()
        .filter_map(|(replica, c)| MetricsContinuity::new(replica, c.clone(), t0))
        .collect();
    if let ([(name, _)], true) = (reads.as_slice(), sampled) {
        let added = codendum_core::results::continuity::check_coverage(
            &mut continuity,
            name,
            window_stats(timeline, t0, t0 + span).requests_finished,
            successes,
            span,
        );
        if let Some(note) = added {
            events.note(note);
        }
    }
    codendum_core::results::continuity::apply_to_class(summary, &continuity);
    continuity
}

fn summary_from(config: &ClassroomConfig, sink: &JsonlSink) -> ClassroomSummary {
    ClassroomSummary::from_records(config.users, &sink.requests(), &sink.tasks())
}

fn parameters(config: &ClassroomConfig, run: &ClassroomRun<'_>, scale: f64) -> ClassroomParameters {
    ClassroomParameters {
        users: config.users as u32,
        scenario: config.scenario.name().into(),
        duration_s: config.duration.as_secs_f64(),
        ramp_up_s: config.ramp_up.as_secs_f64(),
        pause_min_s: config.pause_min.as_secs_f64(),
        pause_max_s: config.pause_max.as_secs_f64(),
        follow_ups: config.follow_ups as u32,
        context_limit: config.context_limit,
        output_limit: config.output_limit,
        seed: config.seed,
        prompt_file: run.prompt_file.clone(),
        client_times: config.client_times.source().map(|p| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        }),
        api_keys: config.api_keys.len(),
        clock_scale: scale,
    }
}

/// Server figures over the run: peaks over the whole run `[t0, t0 + span]`;
/// steady-state output tokens/s over the window for new requests after the
/// ramp-up (`[t0 + ramp_up, t0 + duration]`, clipped to the run). With
/// each replica's samples, counter increases are the replicas' own summed
/// ([`fleet_window`]).
pub fn server_figures(
    timeline: &[TimelineSample],
    replicas: &[ReplicaSample],
    t0: f64,
    span: f64,
    config: &ClassroomConfig,
) -> ServerFigures {
    if timeline.iter().all(|s| s.snapshot.is_none()) {
        return ServerFigures::default();
    }
    let whole = fleet_window(timeline, replicas, t0, t0 + span);
    let window = class_window(
        config.ramp_up.as_secs_f64(),
        config.duration.as_secs_f64(),
        span,
    );
    let (steady_start, steady_end) = (window.start_s, window.end_s);
    let steady = fleet_window(timeline, replicas, t0 + steady_start, t0 + steady_end);
    let output = match (steady.generation_tokens, steady_end - steady_start) {
        (Some(tokens), dt) if dt > 0.0 => Some(tokens / dt),
        _ => None,
    };
    ServerFigures {
        peak_running: whole.peak_running,
        peak_waiting: whole.peak_waiting,
        peak_kv_cache_usage: whole.peak_kv_usage,
        preemptions: whole.preemptions.map(|p| p.round() as u64),
        prefix_cache_hit_rate: whole.prefix_hit_rate,
        output_tokens_per_s: output,
        time_split: whole.time_split,
        server_restarted: false,
    }
}

/// Reads a host recording and puts it on the run's time axis (seconds since
/// `run_start`, by UTC timestamps).
pub fn read_host_timeline(
    path: &Path,
    run_start: chrono::DateTime<chrono::Utc>,
) -> Result<Vec<TimelineSample>, Error> {
    let samples = read_timeline(path).map_err(|e| {
        Error::Config(codendum_core::error::ConfigError::BadFile {
            what: "server timeline",
            path: path.to_path_buf(),
            reason: e.to_string(),
        })
    })?;
    Ok(align_timeline(samples, run_start))
}

/// Where the class reads its server: Prometheus when given, else the
/// sampler of the connection's `/metrics` (when it can be read).
pub(crate) async fn class_sampling(
    prometheus: Option<super::fleet::OpenedPrometheus>,
    conn: &Connection,
    folder: &RunFolder,
    reachable: Option<bool>,
    events: &Events,
) -> Result<ClassSampling, Error> {
    Ok(match (prometheus, &conn.scraper) {
        (Some(p), _) => ClassSampling::Prometheus(p),
        (None, Some(s)) => start_sampler(s, &conn.clock, folder, reachable, events)
            .await?
            .map_or(ClassSampling::Off, ClassSampling::Sampler),
        (None, None) => ClassSampling::Off,
    })
}

/// Starts the 1 s `/metrics` sampler, which appends every sample to the
/// folder's `server-timeline.jsonl` as it is taken. `reachable` is what the
/// busy guard found (`None`: not asked, so one scrape decides). An
/// unreachable `/metrics` is said once and the class runs without it.
async fn start_sampler(
    scraper: &Scraper,
    clock: &Clock,
    folder: &RunFolder,
    reachable: Option<bool>,
    events: &Events,
) -> Result<Option<SamplerHandle>, Error> {
    let reachable = match reachable {
        // The busy guard has said so already.
        Some(false) => return Ok(None),
        Some(true) => true,
        None => scraper.scrape().await.is_ok(),
    };
    if !reachable {
        events.warn(format!(
            "/metrics is out of reach ({}); server figures stay empty unless you fold in a host recording with --server-timeline",
            scraper.urls().join(", ")
        ));
        return Ok(None);
    }
    let file = folder.appender(results::SERVER_TIMELINE_JSONL)?;
    let recording = crate::scrape::Recording {
        fleet: Some(file),
        replicas: None,
    };
    Ok(Some(Sampler::start_with(
        scraper.clone(),
        clock.clone(),
        Duration::from_secs(1),
        recording,
        events.clone(),
    )))
}

/// Runs the students until the class ends by itself (`Some`) or a stop is
/// asked for (`None`): then no student starts another call, and the calls
/// in flight get [`STOP_GRACE`] (simulated) to finish and be recorded.
async fn run_until_stopped(
    config: &ClassroomConfig,
    conn: &Connection,
    clock: &Clock,
    sink: Arc<JsonlSink>,
    status: Arc<LiveStatus>,
    mut stop: watch::Receiver<bool>,
) -> Option<Result<crate::classroom::ClassroomOutcome, Error>> {
    let transport: Arc<dyn codendum_core::openai::Transport> = conn.client.clone();
    let class = run_classroom_until(
        config,
        transport,
        clock.clone(),
        sink,
        status,
        Some(stop.clone()),
    );
    tokio::pin!(class);
    tokio::select! {
        r = &mut class => return Some(r),
        _ = stop.wait_for(|s| *s) => {}
    }
    // Whatever the students finish within the grace is already recorded by
    // the sink; the class is marked interrupted either way.
    let _ = clock.timeout(STOP_GRACE, class).await;
    None
}

/// The command's answer for a finished class: `Ok` unless its verdict asks
/// for exit 1 (the class failed, or its errors exceed `--max-error-rate`);
/// the error names the verdict and the folder.
pub fn check_result(result: &ClassroomResult) -> Result<(), Error> {
    match &result.summary.verdict {
        Some(v) if v.exit_code() != 0 => Err(Error::Failed(format!(
            "{}; results in {}",
            v.line,
            result.folder.display()
        ))),
        _ => Ok(()),
    }
}
