//! The bench's side of a live fleet: Prometheus as the driver's
//! [`ServerMetrics`], which sampler runs, and the figures filled in after
//! the run (per replica; everything, from Prometheus).

use crate::scrape::PrometheusOptions;
use futures::future::BoxFuture;

use super::fleet::{
    clock_secs_at, open_prometheus, write_timelines, OpenedPrometheus, RunTimelines,
    SAMPLING_INTERVAL,
};
use crate::bench::{BenchOutcome, ServerLoad, ServerMetrics, ServerWindow};
use crate::connect::Connection;
use crate::events::Events;
use crate::scrape::replicas_render::{render_fleet_table, FleetRow};
use crate::scrape::{Sampler, SamplerHandle};
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::prom::{fleet_figures_with, lagged_window, ReplicaSample, TimelineSample};
use codendum_core::results::replicas::{SOURCE_PROMETHEUS, SOURCE_SCRAPE};
use codendum_core::results::{apply_server_window, FleetFigures, RunFolder};
use codendum_core::target::Target;

/// Where a bench reads its server: Prometheus, or the 1 s sampler of every
/// `/metrics` URL, or nothing.
#[derive(Debug)]
pub enum BenchSampling {
    /// `--prometheus-url`.
    Prometheus(Box<PromMetrics>),
    /// The sampler of the connection's scraper.
    Sampler(SamplerHandle),
    /// No `/metrics` to read.
    Off,
}

impl BenchSampling {
    /// Opens Prometheus (checking it holds the replicas) or starts the
    /// sampler.
    pub async fn start(
        prometheus: Option<&PrometheusOptions>,
        target: &Target,
        conn: &Connection,
        events: &Events,
    ) -> Result<Self, Error> {
        if let Some(p) = prometheus {
            let opened = open_prometheus(p, target, events).await?;
            return Ok(BenchSampling::Prometheus(Box::new(PromMetrics::new(
                opened,
                conn.clock.clone(),
            ))));
        }
        Ok(match conn.scraper.clone() {
            Some(s) => BenchSampling::Sampler(Sampler::start_with(
                s,
                conn.clock.clone(),
                SAMPLING_INTERVAL,
                crate::scrape::Recording::default(),
                events.clone(),
            )),
            None => BenchSampling::Off,
        })
    }

    /// The running sampler, if that is the source.
    pub fn sampler(&self) -> Option<&SamplerHandle> {
        match self {
            BenchSampling::Sampler(s) => Some(s),
            _ => None,
        }
    }

    /// Prometheus, if that is the source.
    pub fn prometheus(&self) -> Option<&PromMetrics> {
        match self {
            BenchSampling::Prometheus(p) => Some(p),
            _ => None,
        }
    }

    /// Stops sampling (or reads the run from Prometheus) and fills in what
    /// the driver could not ([`finish_bench`]). A Prometheus that cannot be
    /// read leaves the server columns empty, with a note.
    pub async fn finish(
        self,
        outcome: &mut Result<BenchOutcome, Error>,
        clock: &Clock,
        events: &Events,
    ) -> Result<(), Error> {
        let read = match self {
            BenchSampling::Sampler(s) => {
                let (fleet, replicas) = s.stop_fleet().await;
                RunTimelines {
                    fleet,
                    replicas,
                    source: SOURCE_SCRAPE,
                    read_after_run: false,
                    lag_s: 0.0,
                }
            }
            BenchSampling::Prometheus(p) => {
                let from = outcome
                    .as_ref()
                    .ok()
                    .map(|o| clock_secs_at(clock, o.summary.header.started_utc));
                match p.fetch_run(from).await {
                    Ok((fleet, replicas)) => RunTimelines {
                        fleet,
                        replicas,
                        source: SOURCE_PROMETHEUS,
                        read_after_run: true,
                        lag_s: p.step_s(),
                    },
                    Err(e) => {
                        events.warn(format!("{e}; the server columns stay empty"));
                        return Ok(());
                    }
                }
            }
            BenchSampling::Off => return Ok(()),
        };
        match outcome {
            Ok(o) => finish_bench(o, clock, &read, events),
            Err(_) => Ok(()),
        }
    }
}

/// Prometheus seen as the bench driver's [`ServerMetrics`]: the busy
/// guard's load from an instant query; the levels' windows stay empty
/// during the run and are filled at its end from one `query_range` over the
/// whole run ([`PromMetrics::fetch_run`]), once Prometheus has scraped past
/// its end (waiting for it at each level's end would lengthen the levels).
#[derive(Debug)]
pub struct PromMetrics {
    opened: OpenedPrometheus,
    clock: Clock,
    t_from: f64,
}

impl PromMetrics {
    /// Reads `opened` on `clock`'s time axis (a live server's real clock)
    /// from now on.
    pub fn new(opened: OpenedPrometheus, clock: Clock) -> Self {
        let t_from = clock.now_secs().floor();
        PromMetrics {
            opened,
            clock,
            t_from,
        }
    }

    /// The sampling interval (the range queries' step), seconds.
    pub fn step_s(&self) -> f64 {
        self.opened.source.step().as_secs_f64()
    }

    /// The fleet's and each replica's timeline from the start until now,
    /// one sample per [`SAMPLING_INTERVAL`].
    /// `from`: the run's start on the clock when known (the timeline then
    /// starts at the run, not at the busy guard before it).
    pub async fn fetch_run(
        &self,
        from: Option<f64>,
    ) -> Result<(Vec<TimelineSample>, Vec<ReplicaSample>), Error> {
        let t_from = from.map_or(self.t_from, |t| t.floor().max(self.t_from));
        // Two steps past now: a step whose scrape is surely after the end.
        let now = self.clock.now_secs() + 2.0 * self.opened.source.step().as_secs_f64();
        self.opened
            .source
            .fetch(&self.opened.instances, &self.clock, t_from, now)
            .await
            .map_err(|e| Error::Failed(format!("the server figures could not be read: {e}")))
    }
}

impl ServerMetrics for PromMetrics {
    fn load_now(&self) -> BoxFuture<'_, Option<ServerLoad>> {
        Box::pin(async move {
            let (running, waiting) = self.opened.source.load_now().await?;
            Some(ServerLoad { running, waiting })
        })
    }

    fn window(&self, _t0: f64, _t1: f64) -> ServerWindow {
        ServerWindow::default()
    }
}

/// Fills in what the bench driver could not: each level's per-replica
/// figures, and (Prometheus) its server figures; writes
/// `replica-timeline.jsonl`, `server-timeline.jsonl` (Prometheus) and
/// `summary.json` again. Nothing to do for one directly scraped server.
pub fn finish_bench(
    outcome: &mut BenchOutcome,
    clock: &Clock,
    read: &RunTimelines,
    events: &Events,
) -> Result<(), Error> {
    if read.replicas.is_empty() && !read.read_after_run {
        return Ok(());
    }
    let run_t0 = clock_secs_at(clock, outcome.summary.header.started_utc);
    for level in &mut outcome.summary.levels {
        let t0 = run_t0 + level.started_at_s;
        let t1 = t0 + level.wall_time_s;
        let window = |timeline: &[TimelineSample]| lagged_window(timeline, t0, t1, read.lag_s);
        if read.read_after_run {
            apply_server_window(level, &window(&read.fleet).server_window());
        }
        level.fleet = fleet_figures_with(&read.replicas, read.source, window);
    }
    // A replica whose URL answered for several servers has no figures.
    codendum_core::results::continuity::apply_to_levels(
        &mut outcome.summary.levels,
        &outcome.summary.metrics_continuity,
    );
    outcome.levels = outcome.summary.levels.clone();
    events.table(bench_fleet_table(&outcome.summary.levels, read.source));
    let folder = RunFolder::at(&outcome.folder);
    write_timelines(&folder, read)?;
    folder.write_bench_summary(&outcome.summary)
}

/// The per-replica table of a bench's levels (empty for one server).
/// With Prometheus read after the run, the fleet rows stand in for the
/// server columns the run's own table could not show yet.
fn bench_fleet_table(levels: &[codendum_core::results::LevelSummary], source: &str) -> String {
    let no_replicas = FleetFigures::new(source, Vec::new());
    let rows: Vec<FleetRow<'_>> = levels
        .iter()
        .filter_map(|l| {
            let fleet = match (&l.fleet, source) {
                (Some(f), _) => f,
                (None, codendum_core::results::replicas::SOURCE_PROMETHEUS) => &no_replicas,
                (None, _) => return None,
            };
            Some(FleetRow {
                label: format!("{} c{}", l.shape, l.concurrency),
                fleet: [
                    l.peak_running,
                    l.peak_waiting,
                    l.peak_kv_usage,
                    l.preemptions,
                    l.prefix_hit_rate,
                ],
                served: (!fleet.replicas.is_empty())
                    .then(|| fleet.replicas.iter().map(|r| r.requests_served).sum())
                    .flatten(),
                replicas: fleet,
            })
        })
        .collect();
    render_fleet_table(&rows)
}
