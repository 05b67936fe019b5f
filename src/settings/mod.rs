//! What a run was asked to do, typed and checked once: the values of the
//! flags ([`values`], parsed while the command line is read), the registry
//! of environment variables ([`mod@env`]), and the settings every run shares:
//! which server ([`Server`]: a live one, the embedded twin, a fleet of
//! twins), how requests are sent ([`ClientSettings`]) and how the run
//! starts and records itself ([`RunSettings`]). The binary's `resolve`
//! step builds these, one per command; the capacity suite builds the same
//! from the environment.
//!
//! What a run learns from the server is kept apart, in
//! [`crate::bench::ServerFacts`], and never written back here.

pub mod env;
pub mod values;

use std::path::PathBuf;

use codendum_core::access::{ClientSettings, Provenance, Target};
use codendum_core::profile::fleet::{FleetSpec, RouterPolicy};
use codendum_core::profile::Profile;

use crate::scrape::PrometheusOptions;

/// The seed of every random choice when none is given (`--seed`): the
/// same for every command.
pub const DEFAULT_SEED: u64 = 1;

/// The profile the embedded twin runs when none is given (`--profile`).
pub const DEFAULT_PROFILE: &str = "classroom-64k";

/// Where a run's requests go.
#[derive(Debug, Clone)]
pub enum Server {
    /// A live server.
    Live(LiveServer),
    /// The embedded twin, one engine, started on a loopback port.
    Twin(TwinSettings),
    /// A fleet of embedded twins behind one router (two replicas or more).
    Fleet(TwinSettings, FleetSpec),
    /// The embedded twin, one engine, in this process without a socket, on
    /// a virtual clock: the run must be driven on a paused runtime
    /// ([`crate::virtual_time::on_paused_runtime`]), where every wait
    /// passes at once and the figures do not move with the machine's load.
    /// Its `time_scale` is not used.
    Virtual(TwinSettings),
}

impl Server {
    /// The embedded twin running `twin`: one engine, or a fleet when
    /// `fleet` has several replicas.
    pub fn embedded(twin: TwinSettings, fleet: FleetSpec) -> Server {
        if fleet.replicas > 1 {
            Server::Fleet(twin, fleet)
        } else {
            Server::Twin(twin)
        }
    }

    /// The live server, if that is where the run goes.
    pub fn live(&self) -> Option<&LiveServer> {
        match self {
            Server::Live(l) => Some(l),
            Server::Twin(_) | Server::Fleet(..) | Server::Virtual(_) => None,
        }
    }

    /// Whether the run goes to the embedded twin (or a fleet of them).
    pub fn is_embedded(&self) -> bool {
        self.live().is_none()
    }
}

/// The embedded twin's fleet: `--replicas` and `--router` when given, else
/// the profile's `[fleet]` table. A router given for one replica is no
/// error but a note (returned, to be told): one replica is the single
/// server, whatever the router.
pub fn twin_fleet(
    profile: &Profile,
    replicas: Option<u32>,
    router: Option<RouterPolicy>,
) -> (FleetSpec, Option<String>) {
    let spec = FleetSpec {
        replicas: replicas.unwrap_or(profile.fleet.replicas),
        router: router.unwrap_or(profile.fleet.router),
    };
    let note = (spec.replicas == 1 && router.is_some()).then(|| {
        format!(
            "--router {} has no effect with one replica (the single server)",
            spec.router
        )
    });
    (spec, note)
}

/// A live server and how its figures are read.
#[derive(Debug, Clone)]
pub struct LiveServer {
    /// Where it is.
    pub target: Target,
    /// `--prometheus-url`: read the figures through this Prometheus instead
    /// of scraping `/metrics`.
    pub prometheus: Option<PrometheusOptions>,
}

/// The embedded twin a run starts.
#[derive(Debug, Clone)]
pub struct TwinSettings {
    /// Its profile (loaded while resolving, so a bad one is bad input).
    pub profile: Profile,
    /// How many times faster than real time it runs.
    pub time_scale: f64,
    /// Seed of its answers.
    pub seed: u64,
}

/// How a run starts and what its results record of that, the same for
/// `bench`, `classroom` and `replay`.
#[derive(Debug, Clone)]
pub struct RunSettings {
    /// How requests are sent.
    pub client: ClientSettings,
    /// What the user stated of the server (a live server's profile is
    /// unknown unless given; the twin's is learned from it).
    pub provenance: Provenance,
    /// The folder under which the run's folder is created.
    pub results_dir: PathBuf,
    /// Start although `/metrics` shows requests running or waiting.
    pub allow_busy: bool,
    /// Do not ask for confirmation.
    pub yes: bool,
    /// Write `report.md` and `report.html` at the end.
    pub write_report: bool,
    /// The share of calls that may fail (a fraction) before a completed
    /// run exits 1.
    pub max_error_rate: f64,
    /// Exit 1 also when the run completed but is not valid as a capacity
    /// figure (`--strict`).
    pub strict: bool,
    /// Runs of the same workload against the same server (`--repeat`; 1:
    /// one run).
    pub repeat: u32,
}

impl RunSettings {
    /// The defaults of every run flag, with `client`.
    pub fn new(client: ClientSettings) -> Self {
        RunSettings {
            client,
            provenance: Provenance::default(),
            results_dir: PathBuf::from(codendum_core::results::DEFAULT_RESULTS_ROOT),
            allow_busy: false,
            yes: false,
            write_report: true,
            max_error_rate: codendum_core::results::verdict::DEFAULT_MAX_ERROR_RATE,
            strict: false,
            repeat: 1,
        }
    }
}
