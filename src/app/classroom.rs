//! `codendum classroom` as a workload of the run lifecycle
//! ([`super::run`]): the class resolved against the server (its model and
//! context limit), the students run until the window closes or a stop, the
//! server's side folded in (the sampler, Prometheus or a host recording),
//! `summary.json` written.

use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::watch;

use super::class_side::{
    class_server, class_server_side, read_host_timeline, show_status, write_class_summary,
    ClassResult, STOP_GRACE,
};
use super::fleet::RunTimelines;
use super::guard::TimelineFlag;
use super::run::Ran;
use super::workload::{Ctx, RunIo, Started, Workload};
use crate::classroom::{run_classroom_until, ClassroomConfig, JsonlSink, LiveStatus};
use crate::connect::Connection;
use crate::events::{Event, Events};
use crate::settings::{RunSettings, Server};
use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::error::{Check, Error};
use codendum_core::prom::ReplicaSample;
use codendum_core::results::classroom_summary::ClassroomSummary;
use codendum_core::results::{
    self, ClassroomParameters, ClassroomRunSummary, FolderKind, MetricsContinuity, RunHeader,
};

/// What a class was asked to do besides the run settings.
#[derive(Debug, Clone)]
pub struct ClassroomSettings {
    /// The students. Its `model` is the server's (or `--model`), set once
    /// the server is known; its `context_limit` `None`: the server's
    /// `max_model_len`.
    pub config: ClassroomConfig,
    /// A host recording (`codendum metrics --watch 5 --json`) to fold in.
    pub server_timeline: Option<PathBuf>,
    /// The captured prompt file's name, for the parameters block.
    pub prompt_file: Option<String>,
}

/// What a class produced (`summary.json` and its folder).
pub type ClassroomResult = ClassResult;

/// Runs the class against `server`; an interrupted one writes its folder
/// and returns [`Error::Interrupted`].
pub async fn run(
    server: &Server,
    settings: &RunSettings,
    class: &ClassroomSettings,
    io: RunIo<'_>,
) -> Result<ClassroomResult, Error> {
    super::run::run(server, settings, &Classroom(class), io).await
}

/// Runs the class as the settings ask: once, or `--repeat` times.
pub async fn run_as_asked(
    server: &Server,
    settings: &RunSettings,
    class: &ClassroomSettings,
    io: RunIo<'_>,
) -> Result<Ran<ClassroomResult>, Error> {
    super::run::run_as_asked(server, settings, &Classroom(class), io).await
}

/// The classroom workload.
struct Classroom<'a>(&'a ClassroomSettings);

impl Workload for Classroom<'_> {
    type Prepared = ClassroomConfig;
    type Output = ClassResult;
    const TIMELINE: TimelineFlag = TimelineFlag::Run;
    const KIND: FolderKind = FolderKind::Classroom;

    fn max_in_flight(&self) -> usize {
        // A student's agent step and its subagent's or title call.
        self.0.config.users * 2
    }

    fn student_keys(&self) -> Vec<Secret> {
        self.0.config.api_keys.clone()
    }

    fn agent_spread(&self) -> Option<std::sync::Arc<codendum_core::class::AgentSpread>> {
        Some(self.0.config.agent_spread())
    }

    fn seed(&self) -> u64 {
        self.0.config.seed
    }

    fn again(&self, config: &ClassroomConfig) -> Option<ClassroomConfig> {
        Some(config.clone())
    }

    fn run_estimate_s(&self, config: &ClassroomConfig, _ctx: &Ctx<'_>) -> Option<f64> {
        // New coding requests stop at the window's end; the last ones
        // finish after it.
        Some(config.duration.as_secs_f64())
    }

    async fn prepare(&self, ctx: &Ctx<'_>) -> Result<(ClassroomConfig, String), Error> {
        let config = resolve_config(&self.0.config, ctx);
        // The server's context limit with the output limit asked for.
        config.check()?;
        if let Some(note) = config.key_sharing_note() {
            ctx.events.note(note);
        }
        let plan = format!(
            "Classroom: {} students ({} scenario) against {}, model {}, new requests for {:.0} s after a {:.0} s ramp-up; results in {}",
            config.users,
            config.scenario.name(),
            ctx.facts.label,
            config.model,
            config.duration.as_secs_f64(),
            config.ramp_up.as_secs_f64(),
            ctx.run.results_dir.display()
        );
        Ok((config, plan))
    }

    async fn execute(
        &self,
        mut config: ClassroomConfig,
        ctx: &Ctx<'_>,
        started: Started,
    ) -> Result<ClassResult, Error> {
        // Under --repeat, the run at index i (from 0) draws its students from --seed + i.
        config.seed = config.seed.wrapping_add(u64::from(ctx.run_index));
        let (conn, events) = (ctx.conn, ctx.events);
        let Started {
            folder,
            started_utc,
            sampling,
            router,
        } = started;
        let clock = conn.clock.clone();
        // Every record is kept in memory (for a summary after an
        // interruption) and written as a flushed JSON line at once (`kill
        // -9` loses nothing finished).
        let sink = Arc::new(JsonlSink::in_folder(&folder)?);
        let status = Arc::new(LiveStatus::new(clock.clone()));
        let status_task = tokio::spawn(show_status(status.clone(), events.clone()));
        let origin = clock.now_secs();
        let outcome = run_until_stopped(
            &config,
            conn,
            &clock,
            sink.clone(),
            status,
            ctx.stop.clone(),
        )
        .await;
        status_task.abort();
        events.emit(Event::StatusDone);
        sampling.mark_end().await;
        let span = clock.now_secs() - origin;
        let read = sampling
            .finish(&clock, &folder, (origin, origin + span), events)
            .await;
        let (interrupted, mut summary, key_note) = match outcome {
            Some(Ok(o)) => (false, o.summary, o.key_note),
            Some(Err(Error::Io { context, source })) => {
                events.warn(format!("{context}: {source}"));
                (false, summary_from(&config, &sink), None)
            }
            Some(Err(e)) => return Err(e),
            None => (
                true,
                summary_from(&config, &sink),
                config.key_sharing_note(),
            ),
        };
        let verdict = codendum_core::results::verdict::class_verdict(
            &sink.requests(),
            &sink.tasks(),
            ctx.run.max_error_rate,
        );
        // The figures over time cover the minutes the server answered.
        let answered = verdict.answered_until_s.map_or(span, |t| t.min(span));
        let window = (started_utc, origin, answered);
        let name = conn
            .scraper
            .as_ref()
            .map(crate::scrape::sampler::fleet_name)
            .unwrap_or_default();
        let (figures_source, metrics_continuity) = fill_server_figures(
            (self.0, events),
            &config,
            &mut summary,
            &sink,
            (read, &name),
            window,
        )?;
        let verdict =
            verdict.with_restarts(metrics_continuity.iter().flat_map(|m| m.restart_times()));
        let router =
            super::router_watch::finish_class(router, &summary.errors_by_kind, events).await;
        if let Some(p) = &conn.profile {
            let batch = summary.server.peak_running.map(|v| v.round() as u32);
            if let Some(w) = p.region_warning(summary.prompt_tokens_max, batch) {
                events.warn(w);
            }
        }
        let run_summary = ClassroomRunSummary {
            header: RunHeader {
                schema_version: results::CLASSROOM_SCHEMA_VERSION,
                kind: results::CLASSROOM_KIND.into(),
                run_id: format!("classroom-{}", started_utc.format("%Y%m%dT%H%M%SZ")),
                started_utc,
                finished_utc: clock.utc_now(),
                interrupted,
            },
            parameters: parameters(&config, self.0, clock.scale()),
            server: class_server(conn, ctx.facts, &config.model, figures_source != "none"),
            provenance: ctx.facts.provenance(&ctx.run.provenance),
            server_figures_source: figures_source.into(),
            key_note,
            summary,
            profile_check: ctx.facts.profile_check.clone(),
            verdict: Some(verdict),
            replay: None,
            metrics_continuity,
            router,
        };
        write_class_summary(folder, run_summary)
    }
}

/// The class against this server: its model (`--model`, else the server's
/// first) and its context limit (`--context-limit`, else the server's
/// `max_model_len`).
fn resolve_config(asked: &ClassroomConfig, ctx: &Ctx<'_>) -> ClassroomConfig {
    let mut config = asked.clone();
    config.model = ctx.facts.model.clone();
    if config.context_limit.is_none() {
        config.context_limit = ctx.facts.max_model_len;
    }
    config
}

/// The server figures of the run (from the sampler's timeline, or the host
/// recording given with `--server-timeline`) and the client's means beside
/// the server's time split; returns where the figures came from and what
/// the reads showed of each `/metrics` URL (a restart, several servers
/// behind one; those figures are marked or left empty).
/// `read`: the timelines and the server's name; `window`: the run's UTC
/// start, its start on the clock and its length (simulated seconds).
fn fill_server_figures(
    (settings, events): (&ClassroomSettings, &Events),
    config: &ClassroomConfig,
    summary: &mut ClassroomSummary,
    sink: &JsonlSink,
    (read, name): (RunTimelines, &str),
    window: (chrono::DateTime<chrono::Utc>, f64, f64),
) -> Result<(&'static str, Vec<MetricsContinuity>), Error> {
    let (started_utc, origin, span) = window;
    let (source, timeline, t0) = match &settings.server_timeline {
        Some(path) => ("timeline-file", read_host_timeline(path, started_utc)?, 0.0),
        None if read.fleet.is_empty() => ("none", read.fleet, origin),
        None if read.read_after_run => ("prometheus", read.fleet, origin),
        None => ("sampler", read.fleet, origin),
    };
    // A class starts and ends idle: reading Prometheus two steps (twice its
    // lag) past the end takes in a scrape after it, and no gauge moves then.
    let span = span + 2.0 * read.lag_s;
    let replicas: &[ReplicaSample] = if settings.server_timeline.is_none() {
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
        events,
    );
    if let Some(fleet) = &summary.server_fleet {
        events.table(super::fleet::class_fleet_table(&summary.server, fleet));
    }
    if let Some(split) = summary.server.time_split.as_mut() {
        let calls = sink.requests();
        let ok = calls.iter().filter(|r| r.error_kind.is_none());
        split.client_ttft_mean_s = codendum_core::stats::mean(ok.clone().filter_map(|r| r.ttft_s));
        split.client_e2e_mean_s = codendum_core::stats::mean(ok.map(|r| r.e2e_s));
    }
    Ok((source, continuity))
}

fn summary_from(config: &ClassroomConfig, sink: &JsonlSink) -> ClassroomSummary {
    ClassroomSummary::from_records(config.users, &sink.requests(), &sink.tasks())
}

fn parameters(
    config: &ClassroomConfig,
    settings: &ClassroomSettings,
    scale: f64,
) -> ClassroomParameters {
    ClassroomParameters {
        users: config.users as u32,
        scenario: config.scenario.name().into(),
        duration_s: config.duration.as_secs_f64(),
        ramp_up_s: config.ramp_up.as_secs_f64(),
        pause_min_s: config.class.person.pause_s.min(),
        pause_max_s: config.class.person.pause_s.max(),
        follow_ups: config.class.most_follow_ups(),
        class: Some(config.class.name.clone()),
        context_limit: config.context_limit,
        output_limit: config.output_limit,
        seed: config.seed,
        prompt_file: settings.prompt_file.clone(),
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
    let transport = conn.client.transport();
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
