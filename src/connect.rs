//! Reaching the model: a live server named by a [`Target`], or the embedded
//! twin (or a fleet of twins) started in process on a loopback port, as
//! the run's [`Server`] says.

use std::sync::Arc;
use std::time::Duration;

use crate::client::{build_http_client, ClientOptions, HttpClient};
use crate::scrape::Scraper;
use crate::settings::{ClientSettings, Server, TwinSettings};
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::profile::fleet::FleetSpec;
use codendum_core::profile::Profile;
use codendum_core::target::{BaseUrl, Secret, Target};
use codendum_twin::fleet::{start_fleet, FleetHandle};
use codendum_twin::persona::AgentPersona;
use codendum_twin::proxy::ProxyConfig;
use codendum_twin::{TwinHandle, TwinOptions};

/// Default speed-up of the embedded twin for `bench` (simulated seconds per
/// real second): the README's first command ends in about two minutes.
pub const BENCH_TIME_SCALE: f64 = 4.0;
/// Default speed-up of the embedded twin for `classroom`: a 15-minute class
/// and its drain take about a minute.
pub const CLASSROOM_TIME_SCALE: f64 = 25.0;

/// Connections a run may keep open beside what it keeps in flight.
pub const POOL_SLACK: usize = 8;
/// Connections a run may keep open at least.
pub const POOL_MIN: usize = 64;

/// The connections a run may keep open when it keeps up to `in_flight`
/// requests going: the one formula of every workload.
pub fn pool_size(in_flight: usize) -> usize {
    (in_flight + POOL_SLACK).max(POOL_MIN)
}

/// What a run needs of its connection besides the server.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    /// Connections the client may keep open ([`pool_size`]).
    pub max_connections: usize,
    /// The students' keys. With keys, the embedded twin is fronted by the
    /// lab's proxy: each key is accepted and limited on its own, as in
    /// class. Against either server, the first one signs the side calls
    /// (`/v1/models`) when no `--api-key` is given.
    pub student_keys: Vec<Secret>,
    /// The agent spread the embedded twin's persona draws its calls and
    /// output sizes from (a class's, `--class`); `None`: the `lab`
    /// class's. A live server's model decides for itself.
    pub agent: Option<Arc<codendum_core::class::AgentSpread>>,
}

/// A reachable model: the client, the `/metrics` scraper, the clock that
/// every wait and measurement uses, and the twin when it is embedded.
pub struct Connection {
    /// The OpenAI client.
    pub client: Arc<HttpClient>,
    /// The `/metrics` scraper (`None`: no URL to read).
    pub scraper: Option<Scraper>,
    /// Real time for a live server; scaled for the embedded twin.
    pub clock: Clock,
    /// The embedded twin, when no server was named (one replica).
    pub twin: Option<TwinHandle>,
    /// The embedded fleet, when no server was named and it has several
    /// replicas (`twin` is then `None`).
    pub fleet: Option<FleetHandle>,
    /// The twin's profile when embedded.
    pub profile: Option<Profile>,
    /// What to call the target in messages and results (no credentials).
    pub label: String,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("label", &self.label)
            .field("embedded", &self.is_embedded())
            .finish_non_exhaustive()
    }
}

impl Connection {
    /// Connects to the live server, or starts the embedded twin (or its
    /// fleet) on a loopback port.
    pub async fn open(
        server: &Server,
        client: &ClientSettings,
        opts: &ConnectOptions,
    ) -> Result<Connection, Error> {
        match server {
            Server::Live(live) => Self::live(&live.target, client, opts),
            Server::Twin(twin) => Self::embedded(twin, None, client, opts).await,
            Server::Fleet(twin, fleet) => Self::embedded(twin, Some(*fleet), client, opts).await,
        }
    }

    fn live(
        target: &Target,
        client: &ClientSettings,
        opts: &ConnectOptions,
    ) -> Result<Connection, Error> {
        let clock = Clock::real();
        let http_client = HttpClient::new(
            &target.base_url,
            ClientOptions {
                cacert: target.cacert.clone(),
                timeout: client.request_timeout,
                max_connections: opts.max_connections.max(1),
                clock: clock.clone(),
                api_key: side_key(client, opts),
            },
        )?;
        let http = build_http_client(target.cacert.as_deref(), 4)?;
        let scraper =
            Scraper::new(http, target.metrics_urls.clone()).with_timeout(Duration::from_secs(5));
        Ok(Connection {
            client: Arc::new(http_client),
            scraper: Some(scraper),
            clock,
            twin: None,
            fleet: None,
            profile: None,
            label: target.display_url(),
        })
    }

    async fn embedded(
        settings: &TwinSettings,
        fleet: Option<FleetSpec>,
        client: &ClientSettings,
        opts: &ConnectOptions,
    ) -> Result<Connection, Error> {
        let profile = settings.profile.clone();
        let clock = Clock::scaled(settings.time_scale);
        let mut twin_opts = TwinOptions::new(profile.clone());
        twin_opts.clock = clock.clone();
        twin_opts.responder = Arc::new(match &opts.agent {
            Some(spread) => AgentPersona::with_spread(settings.seed, Arc::clone(spread)),
            None => AgentPersona::new(settings.seed),
        });
        twin_opts.seed = settings.seed;
        if !opts.student_keys.is_empty() {
            twin_opts.proxy = Some(ProxyConfig {
                keys: opts.student_keys.clone(),
                per_key_in_flight: Some(4),
                per_key_per_minute: Some(120),
                global_in_flight: None,
            });
        }
        let loopback = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
        let failed = |e: codendum_twin::TwinError| {
            Error::Failed(format!("cannot start the embedded twin: {e}"))
        };
        let (twin, fleet_handle, base_url, metrics_url) = match fleet {
            Some(spec) => {
                let f = start_fleet(twin_opts, spec, loopback)
                    .await
                    .map_err(failed)?;
                let urls = (f.base_url(), f.metrics_url());
                (None, Some(f), urls.0, urls.1)
            }
            None => {
                let t = codendum_twin::start(twin_opts, loopback)
                    .await
                    .map_err(failed)?;
                let urls = (t.base_url(), t.metrics_url());
                (Some(t), None, urls.0, urls.1)
            }
        };
        let http_client = HttpClient::new(
            &BaseUrl::parse(&base_url)?,
            ClientOptions {
                cacert: None,
                timeout: client.request_timeout,
                max_connections: opts.max_connections.max(1),
                clock: clock.clone(),
                api_key: side_key(client, opts),
            },
        )?;
        let http = build_http_client(None, 4)?;
        let scraper = Scraper::new(http, vec![metrics_url]);
        let fleet_label = fleet.map_or(String::new(), |spec| {
            format!(
                ", {} replicas behind a {} router",
                spec.replicas, spec.router
            )
        });
        let label = format!(
            "embedded twin (vLLM {} on a GB10, profile {}, {}x real time{fleet_label})",
            codendum_twin::vllm_series(),
            profile.name,
            settings.time_scale
        );
        Ok(Connection {
            client: Arc::new(http_client),
            scraper: Some(scraper),
            clock,
            twin,
            fleet: fleet_handle,
            profile: Some(profile),
            label,
        })
    }

    /// Whether the target is the embedded twin.
    pub fn is_embedded(&self) -> bool {
        self.twin.is_some() || self.fleet.is_some()
    }

    /// Stops the embedded twin or fleet, if any.
    pub async fn close(self) {
        if let Some(t) = self.twin {
            t.shutdown().await;
        }
        if let Some(f) = self.fleet {
            f.shutdown().await;
        }
    }
}

/// The key of the side calls (`/v1/models`): `--api-key`, else the first
/// student key (a proxy in front of the server accepts no other).
fn side_key(client: &ClientSettings, opts: &ConnectOptions) -> Option<Secret> {
    client
        .api_key
        .clone()
        .or_else(|| opts.student_keys.first().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_calls_use_the_api_key_else_the_first_student_key() {
        let mut client = ClientSettings::new(Duration::from_secs(5));
        let mut opts = ConnectOptions::default();
        assert!(side_key(&client, &opts).is_none());
        opts.student_keys = vec![Secret::new("student-1"), Secret::new("student-2")];
        let key = side_key(&client, &opts).expect("a key");
        assert_eq!(key.expose(), "student-1");
        client.api_key = Some(Secret::new("operator"));
        let key = side_key(&client, &opts).expect("a key");
        assert_eq!(key.expose(), "operator");
    }

    #[test]
    fn one_pool_formula_for_every_workload() {
        assert_eq!(pool_size(1), POOL_MIN);
        assert_eq!(pool_size(200), 208);
    }
}
