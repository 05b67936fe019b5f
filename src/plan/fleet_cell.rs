//! One cell of a plan on a fleet: the class against R in-process twins
//! behind a router ([`FleetTransport`]), in virtual time, with each
//! replica's peaks, hit rate and requests served in the summary's
//! `server_fleet`.

use std::sync::Arc;

use super::config::{CellSpec, PlanConfig};
use super::figures::{figures, CellResult, Window};
use crate::classroom::{run_classroom, ClassroomConfig, LiveStatus};
use crate::virtual_time::{NoRecords, SAMPLE_INTERVAL};
use codendum_core::error::Error;
use codendum_core::profile::fleet::FleetSpec;
use codendum_core::prom::{window_stats, TimelineSample};
use codendum_core::server_figures::FleetFigures;
use codendum_twin::fleet::{FleetSampler, FleetTransport};
use codendum_twin::TwinOptions;

/// `FleetFigures::source` of a simulated fleet: the twin's own engines.
pub const SOURCE_TWIN: &str = "twin";

/// Runs the class of `classroom` against a fleet of `opts.profile.fleet`
/// (replicas and router) on the current (paused) runtime.
pub(super) async fn simulate_fleet(
    spec: &CellSpec,
    config: &PlanConfig,
    classroom: &ClassroomConfig,
    opts: TwinOptions,
) -> Result<CellResult, Error> {
    let clock = opts.clock.clone();
    let fleet_spec = FleetSpec {
        replicas: opts.profile.fleet.replicas,
        router: opts.profile.fleet.router,
    };
    let fleet = Arc::new(FleetTransport::start(opts, fleet_spec));
    let sampler = FleetSampler::spawn(Arc::clone(&fleet), SAMPLE_INTERVAL);
    let origin = clock.now_secs();
    let status = Arc::new(LiveStatus::new(clock.clone()));
    let run = run_classroom(
        classroom,
        fleet.clone(),
        clock.clone(),
        Arc::new(NoRecords),
        status,
    )
    .await;
    let timeline = sampler.finish();
    let served = fleet.served();
    fleet.stop();
    let outcome = run?;
    let window = Window {
        origin,
        ramp_up: config.ramp_up().as_secs_f64(),
        duration: config.duration.as_secs_f64(),
    };
    let mut cell = figures(spec, outcome.summary, &timeline.fleet, window);
    cell.summary.server_fleet = Some(replica_figures(&timeline.replicas, &served));
    Ok(cell)
}

/// Each replica's figures over the whole run from its own timeline, with
/// the requests the router sent it (plain function). The imbalance is max
/// over mean of `served`.
pub fn replica_figures(timelines: &[Vec<TimelineSample>], served: &[u64]) -> FleetFigures {
    let replicas = timelines
        .iter()
        .enumerate()
        .map(|(i, line)| {
            let w = window_stats(line, f64::NEG_INFINITY, f64::INFINITY);
            codendum_core::prom::replicas::replica_figures(
                i.to_string(),
                &w,
                served.get(i).map(|s| *s as f64),
            )
        })
        .collect();
    FleetFigures::new(SOURCE_TWIN, replicas)
}
