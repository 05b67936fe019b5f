//! `codendum replay` as a workload of the run lifecycle ([`super::run`]):
//! the trace read before connecting, its calls sent again with their sizes,
//! prefix sharing and timing, a classroom-like folder written
//! (`replay-<UTC>/`: `requests.jsonl`, `tasks.jsonl`,
//! `server-timeline.jsonl`, `summary.json` of kind `replay`). And `codendum
//! export-trace`: a capture or a classroom run as a trace file.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::class_side::{class_server, class_server_side, write_class_summary, ClassResult};
use super::guard::TimelineFlag;
use super::run::Ran;
use super::workload::{Ctx, RunIo, Started, Workload};
use crate::classroom::{ClassroomConfig, JsonlSink};
use crate::events::Events;
use crate::replay::{self, ReplayConfig, Schedule};
use crate::settings::{RunSettings, Server};
use codendum_core::error::{ConfigError, Error};
use codendum_core::openai::{Endpoint, Transport};
use codendum_core::results::classroom_summary::ClassroomSummary;
use codendum_core::results::{
    self, ClassroomParameters, ClassroomRunSummary, FolderKind, RunHeader,
};
use codendum_core::trace::detect::ImportOptions;
use codendum_core::trace::{mooncake, timing, SourceFormat, Trace};

/// What a replay was asked to do besides the run settings.
#[derive(Debug, Clone)]
pub struct ReplaySettings {
    /// The capture folder, results folder, store, conversations or trace file.
    pub source: PathBuf,
    /// Its format (`None`: detected).
    pub format: Option<SourceFormat>,
    /// How sessions are started and paced (`--users`, `--timing`, …).
    pub schedule: Schedule,
    /// Tokens per block of a trace file's `hash_ids` (and of the blocks
    /// rebuilt for a folder).
    pub block_size: u32,
    /// Timeline compression (> 0).
    pub speed: f64,
    /// Root sessions to replay (`None`: as recorded).
    pub sessions: Option<usize>,
    /// Chat or completions.
    pub endpoint: Endpoint,
    /// Seed of the synthetic text.
    pub seed: u64,
}

/// What a replay produced (`summary.json` and its folder).
pub type ReplayResult = ClassResult;

/// Reads the trace a replay or an export starts from, with `sessions`
/// root sessions when given; what could not be read of the source is a
/// warning each (the trace keeps the rest).
pub fn read_trace(
    source: &Path,
    format: Option<SourceFormat>,
    block_size: u32,
    sessions: Option<usize>,
    events: &Events,
) -> Result<Trace, Error> {
    let trace = replay::source::read(
        source,
        format,
        ImportOptions {
            block_size,
            max_sessions: sessions,
        },
    )?;
    for u in &trace.unread {
        events.warn(u.to_string());
    }
    if trace.calls.is_empty() {
        return Err(ConfigError::BadFile {
            what: "replay source",
            path: source.to_path_buf(),
            reason: "holds no model call".into(),
        }
        .into());
    }
    Ok(match sessions {
        Some(n) => timing::resize_sessions(&trace, n),
        None => trace,
    })
}

/// Runs the replay against `server` as the settings ask (once, or
/// `--repeat` times); an interrupted one writes its folder and returns
/// [`Error::Interrupted`].
pub async fn run(
    server: &Server,
    settings: &RunSettings,
    replay: &ReplaySettings,
    io: RunIo<'_>,
) -> Result<Ran<ReplayResult>, Error> {
    let trace = read_trace(
        &replay.source,
        replay.format,
        replay.block_size,
        replay.sessions,
        &io.events,
    )?;
    let kind = trace
        .source
        .as_ref()
        .map_or(SourceFormat::Mooncake, |s| s.format);
    let steady = replay::source::steady_window(&replay.source, kind, &trace);
    let workload = Replay {
        replay,
        kind,
        steady,
        trace,
    };
    super::run::run_as_asked(server, settings, &workload, io).await
}

/// The replay workload: the trace, read before connecting.
struct Replay<'a> {
    replay: &'a ReplaySettings,
    kind: SourceFormat,
    /// The source's steady window (its ramp-up and its window for new
    /// coding requests), when it is a class.
    steady: Option<(f64, f64)>,
    trace: Trace,
}

impl Workload for Replay<'_> {
    /// The model to request.
    type Prepared = String;
    type Output = ClassResult;
    const TIMELINE: TimelineFlag = TimelineFlag::Report;
    const KIND: FolderKind = FolderKind::Replay;

    fn max_in_flight(&self) -> usize {
        // A session's call and its subagent's, for every session that can
        // run at once.
        let sessions = self.trace.sessions().len().max(1);
        self.replay
            .schedule
            .users
            .map_or(sessions, |u| u.min(sessions))
            * 2
    }

    fn plan_on_twin(&self) -> bool {
        true
    }

    fn seed(&self) -> u64 {
        self.replay.seed
    }

    fn again(&self, model: &String) -> Option<String> {
        Some(model.clone())
    }

    fn run_estimate_s(&self, _model: &String, _ctx: &Ctx<'_>) -> Option<f64> {
        Some(self.trace.calls.last().map_or(0.0, |c| c.at_s) / self.replay.speed)
    }

    async fn prepare(&self, ctx: &Ctx<'_>) -> Result<(String, String), Error> {
        let (replay, trace) = (self.replay, &self.trace);
        let model = ctx.facts.model.clone();
        let recorded_span = trace.calls.last().map_or(0.0, |c| c.at_s);
        let plan = format!(
            "Replay: {} calls of {} sessions from {} ({}, {:.0} s recorded at speed {}{}) against {}, model {}; results in {}",
            trace.calls.len(),
            trace.sessions().len(),
            replay.source.display(),
            self.kind.as_str(),
            recorded_span,
            replay.speed,
            replay
                .schedule
                .users
                .map_or(String::new(), |u| format!(", {u} users at once")),
            ctx.facts.label,
            model,
            ctx.run.results_dir.display()
        );
        Ok((model, plan))
    }

    async fn execute(
        &self,
        model: String,
        ctx: &Ctx<'_>,
        started: Started,
    ) -> Result<ClassResult, Error> {
        run_replay(self, model, ctx, started).await
    }
}

async fn run_replay(
    workload: &Replay<'_>,
    model: String,
    ctx: &Ctx<'_>,
    started: Started,
) -> Result<ClassResult, Error> {
    let (replay, steady, trace) = (workload.replay, workload.steady, &workload.trace);
    let (conn, events) = (ctx.conn, ctx.events);
    let recorded_span = trace.calls.last().map_or(0.0, |c| c.at_s) / replay.speed;
    let transport: Arc<dyn Transport> = conn.client.transport();
    let template = replay::template_tokens(transport.as_ref(), replay.endpoint, &model).await;
    let config = ReplayConfig {
        model: model.clone(),
        speed: replay.speed,
        // Under --repeat, the run at index i (from 0) salts its synthetic text with --seed + i.
        salt: replay.seed.wrapping_add(u64::from(ctx.run_index)),
        endpoint: replay.endpoint,
        api_key: ctx.run.client.api_key.clone(),
        template,
        schedule: replay.schedule,
        max_model_len: ctx.facts.max_model_len,
    };
    let clock = conn.clock.clone();
    let Started {
        folder,
        started_utc,
        sampling,
        router,
    } = started;
    let sink = Arc::new(JsonlSink::in_folder(&folder)?);
    let origin = clock.now_secs();
    let outcome = replay::run_replay(
        trace,
        &config,
        transport,
        clock.clone(),
        sink.clone(),
        Some(ctx.stop.clone()),
    )
    .await;
    let interrupted = *ctx.stop.borrow();
    sampling.mark_end().await;
    let span = clock.now_secs() - origin;
    let read = sampling
        .finish(&clock, &folder, (origin, origin + span), events)
        .await;
    let mut summary =
        ClassroomSummary::from_records(outcome.users, &outcome.requests, &outcome.tasks);
    let verdict = codendum_core::results::verdict::class_verdict(
        &outcome.requests,
        &outcome.tasks,
        ctx.run.max_error_rate,
    );
    let answered = verdict.answered_until_s.map_or(span, |t| t.min(span));
    // The steady window: the recorded class's own (or, as users, the
    // replay's), so a class and its replay measure the same stretch; else
    // the whole replay.
    let steady = replay::summary::steady_stretch(steady, &config, &outcome);
    let (ramp_up_s, window_s) = match steady {
        Some((ramp, window)) => (ramp, window.min(answered)),
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
    let metrics_continuity = class_server_side(
        &mut summary,
        (&read.fleet, &read.replicas, read.source),
        (origin, answered_span),
        &window,
        (&name_of_metrics, figures_source == "sampler", successes),
        events,
    );
    let mut verdict =
        verdict.with_restarts(metrics_continuity.iter().flat_map(|m| m.restart_times()));
    if let Some(note) = replay::summary::verdict_note(trace, &config, &outcome) {
        verdict.line = format!("{}; {note}", verdict.line);
    }
    let router = super::router_watch::finish_class(router, &summary.errors_by_kind, events).await;
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
            class: None,
            context_limit: None,
            output_limit: 0,
            seed: replay.seed.wrapping_add(u64::from(ctx.run_index)),
            prompt_file: None,
            client_times: None,
            api_keys: usize::from(ctx.run.client.api_key.is_some()),
            clock_scale: clock.scale(),
        },
        server: class_server(conn, ctx.facts, &model, figures_source != "none"),
        provenance: ctx.facts.provenance(&ctx.run.provenance),
        server_figures_source: figures_source.into(),
        key_note: None,
        summary,
        profile_check: None,
        verdict: Some(verdict),
        metrics_continuity,
        router,
        replay: Some(replay::summary::parameters(
            &replay.source,
            trace,
            &config,
            &outcome,
        )),
    };
    events.line(replay::summary::sizes_line(&outcome.sizes));
    events.line(replay::summary::hit_rate_line(
        outcome.theoretical_hit_rate(),
        run_summary.summary.server.prefix_cache_hit_rate,
    ));
    write_class_summary(folder, run_summary)
}

/// The formats `codendum export-trace` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TraceFormat {
    /// Open loop: a line per call with its `timestamp`.
    Mooncake,
    /// AIPerf's `mooncake_trace` sessions (`session_id`, `delay`).
    Aiperf,
}

/// Writes the trace of `source` (any source `replay` reads, its format
/// `source_format` or detected) as `format` into `out` (`-`: into `stdout`,
/// the binary's standard output); returns the calls written, what could
/// not be read of the source said through `events`.
pub fn export_trace(
    source: &Path,
    source_format: Option<SourceFormat>,
    block_size: u32,
    format: TraceFormat,
    out: &Path,
    stdout: &mut dyn Write,
    events: &Events,
) -> Result<usize, Error> {
    let trace = read_trace(source, source_format, block_size, None, events)?;
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
