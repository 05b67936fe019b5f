//! `codendum serve` end to end: start the embedded twin as an HTTP server
//! (optionally behind the lab's proxy, with injected faults), say where it
//! listens, and run until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use crate::events::Events;
use codendum_core::access::Secret;
use codendum_core::error::{ConfigError, Error};
use codendum_core::profile::fleet::FleetSpec;
use codendum_core::profile::Profile;
use codendum_twin::faults::FaultPlan;
use codendum_twin::fleet::start_fleet;
use codendum_twin::persona::AgentPersona;
use codendum_twin::proxy::ProxyConfig;
use codendum_twin::TwinOptions;

/// The proxy's limits (`--proxy`); `None` fields are the proxy's defaults.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProxyLimits {
    /// Requests in flight per key.
    pub per_key_in_flight: Option<u32>,
    /// Requests per minute per key.
    pub per_key_per_minute: Option<u32>,
    /// Requests in flight over all keys.
    pub global_in_flight: Option<u32>,
}

/// What `codendum serve` was asked to run.
pub struct ServeConfig {
    /// The server profile the twin runs.
    pub profile: Profile,
    /// Speed-up over real time (typed when parsed: above 0).
    pub time_scale: f64,
    /// Accepted API keys (none: any request is accepted).
    pub keys: Vec<Secret>,
    /// Put the lab's proxy in front, with these limits (needs keys).
    pub proxy: Option<ProxyLimits>,
    /// Where to listen.
    pub addr: SocketAddr,
    /// Seed for the twin's text and agent persona.
    pub seed: u64,
    /// The agent spread the persona draws its calls and output sizes from
    /// (`--class`; the `lab` class's by default).
    pub agent: Arc<codendum_core::class::AgentSpread>,
    /// Faults to inject (already seeded).
    pub faults: Option<FaultPlan>,
    /// Becomes `true` on Ctrl-C / SIGTERM: the normal end.
    pub stop: watch::Receiver<bool>,
    /// Replicas and router (`--replicas`, `--router`, the profile's
    /// `[fleet]`); one replica is the single twin.
    pub fleet: FleetSpec,
    /// Where the server says where it listens.
    pub events: Events,
}

impl ServeConfig {
    /// Checks that a proxy has keys to check.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.proxy.is_some() && self.keys.is_empty() {
            return Err(ConfigError::invalid(
                "--proxy",
                "needs --api-keys-file or --api-key",
            ));
        }
        Ok(())
    }
}

/// Serves until stopped; streams still open get 5 s to finish.
pub async fn run(config: ServeConfig) -> Result<(), Error> {
    config.validate()?;
    let ServeConfig {
        profile,
        time_scale,
        keys,
        proxy,
        addr,
        seed,
        agent,
        faults,
        mut stop,
        fleet,
        events,
    } = config;
    let profile_name = profile.name.clone();
    let mut opts = TwinOptions::new(profile);
    opts.clock = codendum_core::clock::Clock::scaled(time_scale);
    opts.responder = Arc::new(AgentPersona::with_spread(seed, agent));
    opts.seed = seed;
    match proxy {
        Some(limits) => {
            opts.proxy = Some(ProxyConfig {
                keys,
                per_key_in_flight: limits.per_key_in_flight,
                per_key_per_minute: limits.per_key_per_minute,
                global_in_flight: limits.global_in_flight,
            });
        }
        None => opts.api_keys = keys,
    }
    opts.faults = faults.map(Arc::new);
    let failed = |e: codendum_twin::TwinError| Error::Failed(e.to_string());
    let banner = |url: String, what: String, raised: bool| {
        events.line(format!(
            "codendum serve: {what} of vLLM {} on a GB10, profile {profile_name}, {}x real time, listening on {url} (Ctrl-C stops)",
            codendum_twin::vllm_series(),
            time_scale,
        ));
        if !raised {
            events.note(format!(
                "the engine threads run at normal priority (raising it to nice {} needs root or CAP_SYS_NICE): under load, steps may start late",
                codendum_twin::runner::ENGINE_NICENESS
            ));
        }
    };
    if fleet.replicas > 1 {
        let handle = start_fleet(opts, fleet, addr).await.map_err(failed)?;
        let what = format!(
            "fleet of {} twins behind a {} router (/metrics: engine=\"0\"..; /metrics/replica/N)",
            fleet.replicas, fleet.router
        );
        banner(handle.base_url(), what, handle.engine_priority_raised());
        let _ = stop.wait_for(|s| *s).await;
        let _ = tokio::time::timeout(Duration::from_secs(5), handle.shutdown()).await;
        return Ok(());
    }
    let handle = codendum_twin::start(opts, addr).await.map_err(failed)?;
    banner(
        handle.base_url(),
        "twin".into(),
        handle.engine_priority_raised(),
    );
    let _ = stop.wait_for(|s| *s).await;
    // Streams still open get the grace; then the twin is dropped.
    let _ = tokio::time::timeout(Duration::from_secs(5), handle.shutdown()).await;
    Ok(())
}
