//! What a class-like run (a class, a replay of one) does beside its own
//! work: where it reads its server (the 1 s sampler recording into the
//! folder, or Prometheus after the run), the server figures of its
//! timelines, its live status, its `summary.json` and final table.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use super::workload::Finished;
use crate::classroom::{ClassroomConfig, LiveStatus};
use crate::connect::Connection;
use crate::events::{Event, Events};
use codendum_core::error::Error;
use codendum_core::prom::continuity::classify_run;
use codendum_core::prom::{
    align_timeline, fleet_figures, fleet_window, read_timeline, window_stats, ReplicaSample,
    TimelineSample,
};
use codendum_core::results::classroom_summary::{class_window, server_output_interval};
use codendum_core::results::classroom_summary::{ClassroomSummary, ServerFigures};
use codendum_core::results::metrics::class_summary_rows;
use codendum_core::results::{self, ClassroomRunSummary, MetricsContinuity, RunFolder, Verdict};
use codendum_report::format::class_row;

/// How long the calls in flight of a class-like run (a class, a replay,
/// a capacity search) may go on after Ctrl-C or SIGTERM (simulated
/// seconds), as bench's cancel grace.
pub const STOP_GRACE: Duration = crate::bench::config::DEFAULT_CANCEL_GRACE;

/// What a class-like run produced.
#[derive(Debug)]
pub struct ClassResult {
    /// The results folder.
    pub folder: PathBuf,
    /// `summary.json` as written.
    pub summary: ClassroomRunSummary,
}

impl Finished for ClassResult {
    fn folder(&self) -> &Path {
        &self.folder
    }

    fn verdict(&self) -> Option<&Verdict> {
        self.summary.verdict.as_ref()
    }

    fn interrupted(&self) -> bool {
        self.summary.header.interrupted
    }

    fn table(&self) -> String {
        render_summary(&self.summary)
    }
}

/// The server as a class-like run records it: what it said of itself, the
/// embedded twin's version marked as the twin's; `metrics`: whether it has
/// server figures.
pub fn class_server(
    conn: &Connection,
    facts: &crate::bench::ServerFacts,
    model: &str,
    metrics: bool,
) -> results::ServerDescription {
    results::ServerDescription {
        url: facts.label.clone(),
        model: model.to_string(),
        server_version: match conn.is_embedded() {
            true => Some(format!("{} (twin)", codendum_twin::VLLM_VERSION)),
            false => facts.server_version.clone(),
        },
        metrics,
        max_model_len: None,
        engine: None,
    }
}

/// Writes `summary.json` into the folder.
pub fn write_class_summary(
    folder: RunFolder,
    summary: ClassroomRunSummary,
) -> Result<ClassResult, Error> {
    folder.write_classroom_summary(&summary)?;
    Ok(ClassResult {
        folder: folder.into_path(),
        summary,
    })
}

/// The final table: the class summary table of the report
/// ([`class_summary_rows`]), one row per line.
pub fn render_summary(s: &ClassroomRunSummary) -> String {
    let mut out = String::new();
    for (name, figures) in class_summary_rows() {
        let value = class_row(&figures, &s.summary);
        out.push_str(&format!("{name:<52} {value}\n"));
    }
    out
}

/// The class's status every second (a reporter on a terminal redraws it
/// in place), until the task is aborted.
pub async fn show_status(status: Arc<LiveStatus>, events: Events) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        events.emit(Event::Status(status.snapshot().to_string()));
    }
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
