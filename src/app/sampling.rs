//! How a run reads its server, started by the run lifecycle for every
//! workload: the 1 s sampler of every `/metrics` URL, recording into the
//! folder's `server-timeline.jsonl` as it goes; or Prometheus, read once
//! the run is over (a live fleet whose `/metrics` are out of reach); or
//! nothing, when `/metrics` cannot be read (said once).

use super::fleet::{open_prometheus, write_timelines, RunTimelines, SAMPLING_INTERVAL};
use super::fleet_bench::PromMetrics;
use super::seams::SampledMetrics;
use crate::bench::ServerMetrics;
use crate::connect::Connection;
use crate::events::Events;
use crate::scrape::{Recording, Sampler, SamplerHandle};
use crate::settings::LiveServer;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::results::{RunFolder, SERVER_TIMELINE_JSONL};
use codendum_core::server_figures::{SOURCE_PROMETHEUS, SOURCE_SCRAPE};

/// Where a run reads its server.
#[derive(Debug)]
pub enum Sampling {
    /// The sampler of every `/metrics` URL.
    Sampler(SamplerHandle),
    /// Prometheus, read after the run.
    Prometheus(Box<PromMetrics>),
    /// No server figures.
    Off,
}

impl Sampling {
    /// Opens Prometheus when the live server names one (checking it holds
    /// the replicas), else starts the sampler of the connection's
    /// `/metrics` when it can be read: `reachable` is what the busy guard
    /// found (`None`: not asked, so one scrape decides). An unreachable
    /// `/metrics` is said once (unless the guard said it) and the run goes
    /// on without it.
    pub async fn start(
        live: Option<&LiveServer>,
        conn: &Connection,
        folder: &RunFolder,
        reachable: Option<bool>,
        events: &Events,
    ) -> Result<Sampling, Error> {
        if let Some((p, live)) = live.and_then(|l| Some((l.prometheus.as_ref()?, l))) {
            let opened = open_prometheus(p, &live.target, events).await?;
            return Ok(Sampling::Prometheus(Box::new(PromMetrics::new(opened))));
        }
        let Some(scraper) = &conn.scraper else {
            return Ok(Sampling::Off);
        };
        let reachable = match reachable {
            // The busy guard has said so already.
            Some(false) => return Ok(Sampling::Off),
            Some(true) => true,
            None => scraper.scrape().await.is_ok(),
        };
        if !reachable {
            events.warn(format!(
                "/metrics is out of reach ({}); server figures stay empty unless you fold in a host recording with --server-timeline",
                scraper.urls().join(", ")
            ));
            return Ok(Sampling::Off);
        }
        let recording = Recording {
            fleet: Some(folder.appender(SERVER_TIMELINE_JSONL)?),
            replicas: None,
        };
        Ok(Sampling::Sampler(Sampler::start_with(
            scraper.clone(),
            conn.clock.clone(),
            SAMPLING_INTERVAL,
            recording,
            events.clone(),
        )))
    }

    /// The sampling seen as the bench driver's [`ServerMetrics`] (fresh
    /// readings, windows of the timeline); `None` without server figures.
    pub fn metrics<'a>(&'a self, conn: &'a Connection) -> Option<RunMetrics<'a>> {
        match (self, &conn.scraper) {
            (Sampling::Sampler(s), Some(scraper)) => {
                Some(RunMetrics::Sampled(SampledMetrics::new(scraper, s)))
            }
            (Sampling::Prometheus(p), _) => Some(RunMetrics::Prometheus(p)),
            _ => None,
        }
    }

    /// Takes a last reading now, at the run's end, so that its counters
    /// are whole (the sampler's; Prometheus is read one step later anyway).
    pub async fn mark_end(&self) {
        if let Sampling::Sampler(s) = self {
            s.sample_now().await;
        }
    }

    /// Stops sampling (or reads Prometheus over `(t0, t1)`, seconds on
    /// `clock`) and writes what was read after the run and each replica's
    /// samples into `folder`. A Prometheus that cannot be read leaves the
    /// figures empty, with a warning.
    pub async fn finish(
        self,
        clock: &Clock,
        folder: &RunFolder,
        (t0, t1): (f64, f64),
        events: &Events,
    ) -> RunTimelines {
        let read = match self {
            Sampling::Sampler(s) => {
                let (fleet, replicas) = s.stop_fleet().await;
                RunTimelines {
                    fleet,
                    replicas,
                    source: SOURCE_SCRAPE,
                    read_after_run: false,
                    lag_s: 0.0,
                }
            }
            Sampling::Prometheus(p) => {
                let opened = p.opened();
                let lag_s = opened.source.step().as_secs_f64();
                match opened
                    .source
                    .fetch(&opened.instances, clock, t0.floor(), t1 + 2.0 * lag_s)
                    .await
                {
                    Ok((fleet, replicas)) => RunTimelines {
                        fleet,
                        replicas,
                        source: SOURCE_PROMETHEUS,
                        read_after_run: true,
                        lag_s,
                    },
                    Err(e) => {
                        events.warn(format!(
                            "Prometheus could not be read ({e}); server figures stay empty"
                        ));
                        RunTimelines::default()
                    }
                }
            }
            Sampling::Off => RunTimelines::default(),
        };
        if let Err(e) = write_timelines(folder, &read) {
            events.warn(e.to_string());
        }
        read
    }
}

/// A run's server figures as the bench driver reads them.
pub enum RunMetrics<'a> {
    /// The sampler's timeline.
    Sampled(SampledMetrics<'a>),
    /// Prometheus (its windows are filled in after the run).
    Prometheus(&'a PromMetrics),
}

impl RunMetrics<'_> {
    /// As the driver's interface.
    pub fn as_dyn(&self) -> &dyn ServerMetrics {
        match self {
            RunMetrics::Sampled(m) => m,
            RunMetrics::Prometheus(p) => *p,
        }
    }
}
