//! Reaching the model: a live server named by a [`Target`], the embedded
//! twin (or a fleet of twins) started in process on a loopback port, or the
//! twin in process on a virtual clock, as the run's [`Server`] says.

use std::sync::Arc;
use std::time::Duration;

use crate::bench::ServerInfo;
use crate::client::{build_http_client, ClientOptions, HttpClient};
use crate::scrape::Scraper;
use crate::settings::{Server, TwinSettings};
use crate::virtual_time::VirtualTwin;
use codendum_core::access::ClientSettings;
use codendum_core::access::{BaseUrl, Secret, Target};
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::openai::Transport;
use codendum_core::profile::fleet::FleetSpec;
use codendum_core::profile::Profile;
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

/// How a run's requests reach the model.
#[derive(Clone)]
pub enum ModelClient {
    /// HTTP(S): a live server, or the embedded twin on a loopback port.
    Http(Arc<HttpClient>),
    /// The twin in this process, on a virtual clock.
    InProcess(Arc<VirtualTwin>),
}

impl ModelClient {
    /// The client as the drivers send through it.
    pub fn transport(&self) -> Arc<dyn Transport> {
        match self {
            ModelClient::Http(c) => c.clone(),
            ModelClient::InProcess(t) => t.clone(),
        }
    }

    /// The client as the bench driver borrows it to send.
    pub fn sender(&self) -> &dyn Transport {
        match self {
            ModelClient::Http(c) => c.as_ref(),
            ModelClient::InProcess(t) => t.as_ref(),
        }
    }

    /// The client as the drivers ask the server about itself through it.
    pub fn info(&self) -> &dyn ServerInfo {
        match self {
            ModelClient::Http(c) => c.as_ref(),
            ModelClient::InProcess(t) => t.as_ref(),
        }
    }

    /// The HTTP client, for what only a server on the network answers
    /// (`/v1/models` with its status, the stated profile's check).
    pub fn http(&self) -> Result<&HttpClient, Error> {
        match self {
            ModelClient::Http(c) => Ok(c),
            ModelClient::InProcess(_) => Err(Error::Failed(
                "the twin in virtual time has no HTTP client to ask".into(),
            )),
        }
    }
}

/// A reachable model: the client, the `/metrics` scraper, the clock that
/// every wait and measurement uses, and the twin when it is embedded.
pub struct Connection {
    /// The OpenAI client.
    pub client: ModelClient,
    /// The `/metrics` scraper (`None`: no URL to read).
    pub scraper: Option<Scraper>,
    /// Real time for a live server; scaled for the embedded twin; virtual
    /// for the twin in virtual time.
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
            Server::Virtual(twin) => Ok(Self::in_virtual_time(twin, client, opts)),
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
            client: ModelClient::Http(Arc::new(http_client)),
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
        let mut twin_opts = twin_options(settings, opts, &clock);
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
            client: ModelClient::Http(Arc::new(http_client)),
            scraper: Some(scraper),
            clock,
            twin,
            fleet: fleet_handle,
            profile: Some(profile),
            label,
        })
    }

    /// Whether the target is the embedded twin (on a socket or in virtual
    /// time).
    pub fn is_embedded(&self) -> bool {
        self.twin.is_some() || self.fleet.is_some() || self.profile.is_some()
    }

    /// The twin of `settings` in this process on a virtual clock (the
    /// caller's runtime must be paused): requests go to its engine without a
    /// socket, `/metrics` is its page written on demand. The proxy of the
    /// students' keys is not simulated there.
    fn in_virtual_time(
        settings: &TwinSettings,
        client: &ClientSettings,
        opts: &ConnectOptions,
    ) -> Connection {
        let profile = settings.profile.clone();
        let clock = Clock::scaled(1.0);
        let twin_opts = twin_options(settings, opts, &clock);
        let twin = Arc::new(VirtualTwin::start(twin_opts, client.request_timeout));
        let page = twin.page();
        let url = format!("in-process://{}/metrics", profile.name);
        let label = format!(
            "embedded twin (vLLM {} on a GB10, profile {}, in virtual time)",
            codendum_twin::vllm_series(),
            profile.name
        );
        Connection {
            client: ModelClient::InProcess(twin),
            scraper: Some(Scraper::in_process(url, page)),
            clock,
            twin: None,
            fleet: None,
            profile: Some(profile),
            label,
        }
    }

    /// Stops the embedded twin or fleet, if any.
    pub async fn close(self) {
        if let ModelClient::InProcess(t) = &self.client {
            t.stop();
        }
        if let Some(t) = self.twin {
            t.shutdown().await;
        }
        if let Some(f) = self.fleet {
            f.shutdown().await;
        }
    }
}

/// The twin of `settings` on `clock`, its persona drawing from the
/// class's agent spread when one is given.
fn twin_options(settings: &TwinSettings, opts: &ConnectOptions, clock: &Clock) -> TwinOptions {
    let mut twin_opts = TwinOptions::new(settings.profile.clone());
    twin_opts.clock = clock.clone();
    twin_opts.responder = Arc::new(match &opts.agent {
        Some(spread) => AgentPersona::with_spread(settings.seed, Arc::clone(spread)),
        None => AgentPersona::new(settings.seed),
    });
    twin_opts.seed = settings.seed;
    twin_opts
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
