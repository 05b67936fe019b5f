//! The bench's side of a live fleet: Prometheus as the driver's
//! [`ServerMetrics`], and the figures filled in after the run (per
//! replica; everything, from Prometheus).

use futures::future::BoxFuture;

use super::fleet::{clock_secs_at, OpenedPrometheus, RunTimelines};
use crate::bench::{BenchOutcome, ServerLoad, ServerMetrics};
use crate::events::Events;
use crate::scrape::replicas_render::{render_fleet_table, FleetRow};
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::prom::{fleet_figures_with, lagged_window, TimelineSample};
use codendum_core::results::{apply_server_window, RunFolder};
use codendum_core::server_figures::FleetFigures;
use codendum_core::server_figures::ServerWindow;

/// Prometheus seen as the bench driver's [`ServerMetrics`]: the busy
/// guard's load from an instant query; the levels' windows stay empty
/// during the run and are filled at its end from one `query_range` over the
/// whole run ([`super::sampling::Sampling::finish`]), once Prometheus has
/// scraped past its end (waiting for it at each level's end would lengthen
/// the levels).
#[derive(Debug)]
pub struct PromMetrics {
    opened: OpenedPrometheus,
}

impl PromMetrics {
    /// Reads the fleet `opened` names.
    pub fn new(opened: OpenedPrometheus) -> Self {
        PromMetrics { opened }
    }

    /// The Prometheus and the instances read.
    pub fn opened(&self) -> &OpenedPrometheus {
        &self.opened
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
/// figures, and (Prometheus) its server figures; writes `summary.json`
/// again. Nothing to do for one directly scraped server.
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
    RunFolder::at(&outcome.folder).write_bench_summary(&outcome.summary)
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
                (None, codendum_core::server_figures::SOURCE_PROMETHEUS) => &no_replicas,
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
