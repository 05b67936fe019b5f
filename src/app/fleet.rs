//! Server figures of a live fleet for `bench` and `classroom`: each
//! replica's figures from the 1 s sampler of several `--metrics-url`s, or
//! everything through Prometheus (`--prometheus-url`) when the replicas'
//! `/metrics` are out of reach but their Prometheus is not.

use std::time::Duration;

use crate::bench::ServerLoad;
use crate::events::Events;
use crate::scrape::api::{PromApiError, PromClient};
use crate::scrape::replicas_render::{render_fleet_table, FleetRow};
use crate::scrape::{PromSource, PromSourceError, PrometheusOptions};
use codendum_core::access::Target;
use codendum_core::clock::Clock;
use codendum_core::error::{ConfigError, Error};
use codendum_core::prom::replicas::replica_name;
use codendum_core::prom::{ReplicaSample, TimelineSample, REPLICA_TIMELINE_JSONL};
use codendum_core::results::{RunFolder, SERVER_TIMELINE_JSONL};
use codendum_core::server_figures::FleetFigures;

/// The sampling interval of a run's server figures (and the step of its
/// Prometheus range queries), simulated seconds.
pub const SAMPLING_INTERVAL: Duration = Duration::from_secs(1);

/// A Prometheus that holds the fleet, and the instances found in it.
#[derive(Debug, Clone)]
pub struct OpenedPrometheus {
    /// The queries.
    pub source: PromSource,
    /// The replicas (Prometheus instances), in `--metrics-url` order.
    pub instances: Vec<String>,
}

/// Checks that `opts` names a Prometheus holding the target's replicas
/// (the `host:port` of each `--metrics-url`, unless a selector is given).
/// Unreachable: exit 1; not Prometheus, or no series: exit 2.
pub async fn open_prometheus(
    opts: &PrometheusOptions,
    target: &Target,
    events: &Events,
) -> Result<OpenedPrometheus, Error> {
    let http = crate::client::build_http_client(target.cacert.as_deref(), 4)?;
    let expected = target
        .metrics_urls
        .iter()
        .map(|u| replica_name(u))
        .collect();
    let source = PromSource::new(
        PromClient::new(http, &opts.url),
        opts.selector.clone(),
        expected,
        SAMPLING_INTERVAL,
    );
    let instances = source
        .instances()
        .await
        .map_err(|e| source_error(opts, e))?;
    events.line(format!(
        "Server figures: Prometheus at {} ({} {{{}}})",
        source.url(),
        if instances.len() > 1 {
            "instances"
        } else {
            "instance"
        },
        source.selector()
    ));
    Ok(OpenedPrometheus { source, instances })
}

/// The command's error for a Prometheus problem.
pub fn source_error(opts: &PrometheusOptions, e: PromSourceError) -> Error {
    match e {
        PromSourceError::Api(PromApiError::Unreachable { .. }) => Error::Failed(e.to_string()),
        PromSourceError::NoSeries { .. } => {
            let flag = match opts.selector {
                Some(_) => "--prometheus-selector",
                None => "--metrics-url",
            };
            ConfigError::invalid(flag, e.to_string()).into()
        }
        PromSourceError::Api(_) => ConfigError::invalid("--prometheus-url", e.to_string()).into(),
    }
}

/// What a run read of the server, for the figures filled in after it.
#[derive(Debug, Default)]
pub struct RunTimelines {
    /// The fleet's samples (the sum over replicas).
    pub fleet: Vec<TimelineSample>,
    /// Each replica's samples (empty for one server).
    pub replicas: Vec<ReplicaSample>,
    /// [`codendum_core::server_figures::SOURCE_SCRAPE`] or `SOURCE_PROMETHEUS`.
    pub source: &'static str,
    /// Whether the fleet's figures were read after the run (Prometheus):
    /// then the levels' server figures and `server-timeline.jsonl` are
    /// written from `fleet` here.
    pub read_after_run: bool,
    /// How much later a window is read on this timeline, seconds: one step
    /// for Prometheus (its reading at a step is its latest scrape, up to
    /// one scrape interval older), 0 for direct scraping.
    pub lag_s: f64,
}

/// The seconds on `clock` at which a run that started at `started_utc` began.
pub fn clock_secs_at(clock: &Clock, started_utc: chrono::DateTime<chrono::Utc>) -> f64 {
    let origin = clock.utc_at(Duration::ZERO);
    let offset = started_utc.signed_duration_since(origin);
    offset
        .num_microseconds()
        .map_or(offset.num_milliseconds() as f64 / 1e3, |us| us as f64 / 1e6)
}

/// Appends the fleet's samples read after the run (Prometheus) to
/// `server-timeline.jsonl`, and writes each replica's to
/// `replica-timeline.jsonl`.
pub fn write_timelines(folder: &RunFolder, read: &RunTimelines) -> Result<(), Error> {
    if read.read_after_run {
        let mut file = folder.appender::<TimelineSample>(SERVER_TIMELINE_JSONL)?;
        for s in &read.fleet {
            file.append(s)?;
        }
    }
    if !read.replicas.is_empty() {
        let mut file = folder.appender::<ReplicaSample>(REPLICA_TIMELINE_JSONL)?;
        for s in &read.replicas {
            file.append(s)?;
        }
    }
    Ok(())
}

/// The busy guard's load through Prometheus; `Ok(None)` when Prometheus
/// answers but cannot tell. A Prometheus that cannot be used at all (out
/// of reach, not Prometheus, no series under the filter) is the command's
/// error before anything runs, as the sampling would fail on it anyway.
pub async fn prometheus_load(
    opts: &PrometheusOptions,
    target: &Target,
    events: &Events,
) -> Result<Option<ServerLoad>, Error> {
    let opened = open_prometheus(opts, target, events).await?;
    Ok(opened
        .source
        .load_now()
        .await
        .map(|(running, waiting)| ServerLoad { running, waiting }))
}

/// The per-replica table of a class (the fleet row from `server`).
pub fn class_fleet_table(
    server: &codendum_core::results::ServerFigures,
    fleet: &FleetFigures,
) -> String {
    render_fleet_table(&[FleetRow {
        label: "class".into(),
        fleet: [
            server.peak_running,
            server.peak_waiting,
            server.peak_kv_cache_usage,
            server.preemptions.map(|p| p as f64),
            server.prefix_cache_hit_rate,
        ],
        served: fleet.replicas.iter().map(|r| r.requests_served).sum(),
        replicas: fleet,
    }])
}
