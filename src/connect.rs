//! Reaching the model: a live server named by a [`Target`], or the embedded
//! twin started in process on a loopback port when no server is named.

use std::sync::Arc;
use std::time::Duration;

use crate::client::{build_http_client, ClientOptions, HttpClient};
use crate::scrape::Scraper;
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

/// How to reach the model when the target is the embedded twin.
#[derive(Debug, Clone)]
pub struct ConnectOptions {
    /// The twin's profile (a name in `profiles/` or a `.toml` path).
    pub profile: String,
    /// Speed-up of the embedded twin (ignored for a live server).
    pub time_scale: f64,
    /// Seed of the twin's answers.
    pub seed: u64,
    /// Connections the client may keep open (at least the concurrency).
    pub max_connections: usize,
    /// The students' keys. With keys, the embedded twin is fronted by the
    /// lab's proxy: each key is accepted and limited on its own, as in
    /// class. Against either server, the first one signs the side calls
    /// (`/v1/models`) when no `--api-key` is given.
    pub student_keys: Vec<Secret>,
    /// Replicas of the embedded twin (`--replicas`); `None`: the profile's
    /// `[fleet] replicas`, else 1. An error against a live server.
    pub replicas: Option<u32>,
    /// Router in front of the replicas (`--router`); `None`: the profile's
    /// `[fleet] router`, else `round-robin`. An error against a live server.
    pub router: Option<String>,
    /// `--prometheus-url`: read the server figures through this Prometheus
    /// instead of scraping `/metrics` (a live fleet only).
    pub prometheus: Option<crate::scrape::PrometheusOptions>,
    /// Where a note about the twin's fleet is told.
    pub events: crate::events::Events,
}

impl ConnectOptions {
    /// Options with the given profile and speed-up.
    pub fn new(profile: impl Into<String>, time_scale: f64) -> Self {
        ConnectOptions {
            profile: profile.into(),
            time_scale,
            seed: 1,
            max_connections: 64,
            student_keys: Vec::new(),
            replicas: None,
            router: None,
            prometheus: None,
            events: crate::events::Events::silent(),
        }
    }
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
    /// Connects to `target`, or starts the embedded twin when it names no
    /// server.
    pub async fn open(target: &Target, opts: &ConnectOptions) -> Result<Connection, Error> {
        match &target.base_url {
            Some(base) => Self::live(target, base, opts),
            None => Self::embedded(target, opts).await,
        }
    }

    fn live(target: &Target, base: &BaseUrl, opts: &ConnectOptions) -> Result<Connection, Error> {
        for (flag, given) in [
            ("--replicas", opts.replicas.is_some()),
            ("--router", opts.router.is_some()),
        ] {
            if given {
                return Err(codendum_core::error::ConfigError::invalid(
                    flag,
                    "applies to the embedded twin only: a live fleet is routed by its own router",
                )
                .into());
            }
        }
        let clock = Clock::real();
        let client = HttpClient::new(
            base,
            ClientOptions {
                cacert: target.cacert.clone(),
                timeout: target.request_timeout,
                max_connections: opts.max_connections,
                clock: clock.clone(),
                api_key: side_key(target, opts),
            },
        )?;
        let scraper = if target.metrics_urls.is_empty() {
            None
        } else {
            let http = build_http_client(target.cacert.as_deref(), 4)?;
            Some(
                Scraper::new(http, target.metrics_urls.clone())
                    .with_timeout(Duration::from_secs(5)),
            )
        };
        Ok(Connection {
            client: Arc::new(client),
            scraper,
            clock,
            twin: None,
            fleet: None,
            profile: None,
            label: target.display_url(),
        })
    }

    async fn embedded(target: &Target, opts: &ConnectOptions) -> Result<Connection, Error> {
        let profile = Profile::load(&opts.profile)?;
        let (spec, note) = resolve_fleet(&profile, opts.replicas, opts.router.as_deref())?;
        if let Some(note) = note {
            opts.events.note(note);
        }
        if !(opts.time_scale.is_finite() && opts.time_scale > 0.0 && opts.time_scale <= 10_000.0) {
            return Err(codendum_core::error::ConfigError::invalid(
                "--time-scale",
                format!("{} is not a speed-up between 0 and 10000", opts.time_scale),
            )
            .into());
        }
        let clock = Clock::scaled(opts.time_scale);
        let mut twin_opts = TwinOptions::new(profile.clone());
        twin_opts.clock = clock.clone();
        twin_opts.responder = Arc::new(AgentPersona::new(opts.seed));
        twin_opts.seed = opts.seed;
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
        let (twin, fleet, base_url, metrics_url) = if spec.replicas > 1 {
            let f = start_fleet(twin_opts, spec, loopback)
                .await
                .map_err(failed)?;
            let urls = (f.base_url(), f.metrics_url());
            (None, Some(f), urls.0, urls.1)
        } else {
            let t = codendum_twin::start(twin_opts, loopback)
                .await
                .map_err(failed)?;
            let urls = (t.base_url(), t.metrics_url());
            (Some(t), None, urls.0, urls.1)
        };
        let client = HttpClient::new(
            &BaseUrl::parse(&base_url)?,
            ClientOptions {
                cacert: None,
                timeout: target.request_timeout,
                max_connections: opts.max_connections,
                clock: clock.clone(),
                api_key: side_key(target, opts),
            },
        )?;
        let http = build_http_client(None, 4)?;
        let scraper = Scraper::new(http, vec![metrics_url]);
        let fleet_label = if spec.replicas > 1 {
            format!(
                ", {} replicas behind a {} router",
                spec.replicas, spec.router
            )
        } else {
            String::new()
        };
        let label = format!(
            "embedded twin (vLLM {} on a GB10, profile {}, {}x real time{fleet_label})",
            codendum_twin::vllm_series(),
            profile.name,
            opts.time_scale
        );
        Ok(Connection {
            client: Arc::new(client),
            scraper: Some(scraper),
            clock,
            twin,
            fleet,
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

/// The embedded twin's fleet: `--replicas` and `--router` when given, else
/// the profile's `[fleet]` table. Errors name the flag (`--replicas 0`, an
/// unknown router with the valid ones); a router given for one replica is
/// no error but a note (returned, for stderr): one replica is the single
/// server, whatever the router.
pub fn resolve_fleet(
    profile: &Profile,
    replicas: Option<u32>,
    router: Option<&str>,
) -> Result<(FleetSpec, Option<String>), codendum_core::error::ConfigError> {
    let n = replicas.unwrap_or(profile.fleet.replicas);
    let policy = match router {
        Some(name) => codendum_core::flags::router("--router", name)?,
        None => profile.fleet.router,
    };
    let spec = FleetSpec {
        replicas: n,
        router: policy,
    };
    codendum_core::flags::replicas("--replicas", spec.replicas)?;
    let note = (n == 1 && router.is_some())
        .then(|| format!("--router {policy} has no effect with one replica (the single server)"));
    Ok((spec, note))
}

/// The key of the side calls (`/v1/models`): `--api-key`, else the first
/// student key (a proxy in front of the server accepts no other).
fn side_key(target: &Target, opts: &ConnectOptions) -> Option<Secret> {
    target
        .api_key
        .clone()
        .or_else(|| opts.student_keys.first().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn side_calls_use_the_api_key_else_the_first_student_key() {
        let t = |key: Option<&str>| {
            Target::new(
                Some("http://127.0.0.1:9/v1"),
                key,
                None,
                None,
                None,
                Duration::from_secs(5),
            )
            .expect("target")
        };
        let mut opts = ConnectOptions::new("classroom-64k", 1.0);
        assert!(side_key(&t(None), &opts).is_none());
        opts.student_keys = vec![Secret::new("student-1"), Secret::new("student-2")];
        let key = side_key(&t(None), &opts).expect("a key");
        assert_eq!(key.expose(), "student-1");
        let key = side_key(&t(Some("operator")), &opts).expect("a key");
        assert_eq!(key.expose(), "operator");
    }
}
