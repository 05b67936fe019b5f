//! The suite's settings, from the environment and `.env` (the environment
//! wins; `.env` never overrides it) or from `codendum check`'s flags: the
//! same variables, `.env` and "empty is unset" rule as the command line
//! ([`crate::settings::env`]), parsed into the same typed values
//! ([`Given`]) and resolved in one place ([`Settings::resolve`]).

use std::path::PathBuf;
use std::str::FromStr;

use super::workload::{Mode, REQUEST_TIMEOUT};
use crate::settings::env::{self, *};
use crate::settings::values::{CaFile, HttpUrls, Names};
use codendum_core::access::ClientSettings;
use codendum_core::access::{read_api_keys, BaseUrl, Provenance, Secret, Target};
use codendum_core::error::ConfigError;
use codendum_core::profile::known_profiles;

/// Everything the suite reads from the environment.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The live server; `None`: the embedded twin, each profile judged
    /// against a twin running it.
    pub target: Option<Target>,
    /// How requests are sent (`CODENDUM_API_KEY`, `CODENDUM_MODEL`).
    pub client: ClientSettings,
    /// Keys for the class, one per student (`CODENDUM_API_KEYS_FILE`; else
    /// the single `CODENDUM_API_KEY`).
    pub api_keys: Vec<Secret>,
    /// Profiles the trials are listed for (`CODENDUM_CAPACITY_PROFILES`,
    /// names or `.toml` paths; default: the embedded profiles).
    pub profiles: Vec<String>,
    /// The profile the live server runs (`CODENDUM_PROFILE`): the only one
    /// judged (against the live server, or without one against its twin).
    pub live_profile: Option<String>,
    /// Quick or full workloads (`CODENDUM_CAPACITY`, default quick).
    pub mode: Mode,
    /// Start on a busy server (`CODENDUM_ALLOW_BUSY=1`).
    pub allow_busy: bool,
    /// Root of results folders (`CODENDUM_RESULTS_DIR`, default
    /// `bench-results`).
    pub results_dir: PathBuf,
    /// Provenance recorded with the results.
    pub provenance: Provenance,
    /// Seconds within which a finished run of the same workload is reused by
    /// another process (`CODENDUM_CAPACITY_REUSE_S`; 0: only within one
    /// nextest run).
    pub reuse_window_s: u64,
}

impl Settings {
    /// Whether the target is a live server.
    pub fn is_live(&self) -> bool {
        self.target.is_some()
    }

    /// The server as results and messages name it.
    pub fn server_label(&self) -> String {
        self.target
            .as_ref()
            .map_or_else(|| "embedded twin".to_string(), Target::display_url)
    }

    /// Loads `.env` (for what the environment does not set), then reads
    /// the settings from the environment.
    pub fn from_env() -> Result<Settings, ConfigError> {
        env::load_dotenv().map_err(|e| ConfigError::invalid(".env", e))?;
        Settings::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads settings through `get` (a variable's value, if set).
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Settings, ConfigError> {
        Settings::resolve(Given::from_lookup(get)?)
    }

    /// The settings of what was given, with the defaults of what was not;
    /// reads the API keys file.
    pub fn resolve(given: Given) -> Result<Settings, ConfigError> {
        let target = given.base_url.map(|base_url| {
            let mut t = Target::at(base_url);
            if let Some(ca) = given.cacert {
                t.cacert = Some(ca.0);
            }
            if let Some(urls) = given.metrics_url {
                t.metrics_urls = urls.0;
            }
            t
        });
        let client = ClientSettings {
            api_key: given.api_key.map(Secret::new),
            model: given.model,
            request_timeout: REQUEST_TIMEOUT,
        };
        let api_keys = match &given.api_keys_file {
            Some(path) => read_api_keys(path)?,
            None => client.api_key.iter().cloned().collect(),
        };
        let profiles = given.profiles.map_or_else(
            || known_profiles().into_iter().map(String::from).collect(),
            |names| names.0,
        );
        let provenance = Provenance {
            profile: given.profile.clone(),
            ..given.provenance
        };
        Ok(Settings {
            target,
            client,
            api_keys,
            profiles,
            live_profile: given.profile,
            mode: given.mode.unwrap_or(Mode::Quick),
            allow_busy: given.allow_busy,
            results_dir: given
                .results_dir
                .unwrap_or_else(|| PathBuf::from(codendum_core::results::DEFAULT_RESULTS_ROOT)),
            provenance,
            reuse_window_s: given.reuse_window_s.unwrap_or(0),
        })
    }
}

/// The suite's settings as given, each value typed and nothing defaulted:
/// read from the environment ([`Given::from_lookup`]) for the test harness,
/// or from `codendum check`'s flags, which clap reads from the same
/// variables. [`Settings::resolve`] turns either into [`Settings`].
#[derive(Debug, Clone, Default)]
pub struct Given {
    /// The live server (`CODENDUM_BASE_URL`); `None`: the embedded twin.
    pub base_url: Option<BaseUrl>,
    /// The private CA (`CODENDUM_CACERT`).
    pub cacert: Option<CaFile>,
    /// `/metrics` URLs (`CODENDUM_METRICS_URL`).
    pub metrics_url: Option<HttpUrls>,
    /// The API key (`CODENDUM_API_KEY`).
    pub api_key: Option<String>,
    /// One key per student (`CODENDUM_API_KEYS_FILE`).
    pub api_keys_file: Option<PathBuf>,
    /// The model to request (`CODENDUM_MODEL`).
    pub model: Option<String>,
    /// The profile the live server runs (`CODENDUM_PROFILE`).
    pub profile: Option<String>,
    /// The profiles whose trials are listed (`CODENDUM_CAPACITY_PROFILES`).
    pub profiles: Option<Names>,
    /// Quick or full (`CODENDUM_CAPACITY`).
    pub mode: Option<Mode>,
    /// Start on a busy server (`CODENDUM_ALLOW_BUSY`).
    pub allow_busy: bool,
    /// The results root (`CODENDUM_RESULTS_DIR`).
    pub results_dir: Option<PathBuf>,
    /// The reuse window, seconds (`CODENDUM_CAPACITY_REUSE_S`).
    pub reuse_window_s: Option<u64>,
    /// Image digest, model revision, DGX OS and driver versions
    /// (`CODENDUM_IMAGE_DIGEST`, …); its `profile` is [`Given::profile`]'s.
    pub provenance: Provenance,
}

impl Given {
    /// The variables read through `get` (a variable's value, if set), each
    /// parsed by its flag's own type; an error names the variable.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Given, ConfigError> {
        let var = |name: &str| env::value(get(name));
        let reuse_window_s = match var(CAPACITY_REUSE_S) {
            None => None,
            Some(v) => Some(v.parse().map_err(|_| {
                ConfigError::invalid(CAPACITY_REUSE_S, format!("{v:?} is not whole seconds"))
            })?),
        };
        let allow_busy = match var(ALLOW_BUSY) {
            None => false,
            Some(v) => {
                env::switch(&v).map_err(|reason| ConfigError::invalid(ALLOW_BUSY, reason))?
            }
        };
        Ok(Given {
            base_url: var(BASE_URL)
                .map(|raw| BaseUrl::parse_for(BASE_URL, &raw))
                .transpose()?,
            cacert: parsed(&var, CACERT)?,
            metrics_url: parsed(&var, METRICS_URL)?,
            api_key: var(API_KEY),
            api_keys_file: var(API_KEYS_FILE).map(PathBuf::from),
            model: var(MODEL),
            profile: var(PROFILE),
            profiles: parsed(&var, CAPACITY_PROFILES)?,
            mode: parsed(&var, CAPACITY)?,
            allow_busy,
            results_dir: var(RESULTS_DIR).map(PathBuf::from),
            reuse_window_s,
            provenance: Provenance {
                profile: None,
                image_digest: var(IMAGE_DIGEST),
                model_revision: var(MODEL_REVISION),
                dgx_os_version: var(DGX_OS_VERSION),
                driver_version: var(DRIVER_VERSION),
            },
        })
    }
}

/// A variable's value as the flag's typed value; the error names the
/// variable.
fn parsed<T: FromStr<Err = String>>(
    var: &impl Fn(&str) -> Option<String>,
    name: &str,
) -> Result<Option<T>, ConfigError> {
    var(name)
        .map(|raw| T::from_str(&raw).map_err(|reason| ConfigError::invalid(name, reason)))
        .transpose()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn settings(vars: &[(&str, &str)]) -> Result<Settings, ConfigError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Settings::from_lookup(|k| map.get(k).cloned())
    }

    #[test]
    fn no_base_url_means_the_twin_and_every_embedded_profile() {
        let s = settings(&[]).expect("defaults");
        assert!(!s.is_live());
        assert_eq!(s.mode, Mode::Quick);
        assert_eq!(s.profiles, known_profiles());
        assert_eq!(s.results_dir, PathBuf::from("bench-results"));
    }

    #[test]
    fn live_settings_are_read() {
        let s = settings(&[
            ("CODENDUM_BASE_URL", "http://127.0.0.1:9/v1"),
            ("CODENDUM_API_KEY", "sk-secret"),
            ("CODENDUM_PROFILE", "classroom-64k"),
            ("CODENDUM_CAPACITY", "full"),
            ("CODENDUM_ALLOW_BUSY", "1"),
            ("CODENDUM_CAPACITY_PROFILES", "a.toml, classroom-64k"),
        ])
        .expect("live");
        assert!(s.is_live() && s.allow_busy);
        assert_eq!(s.mode, Mode::Full);
        assert_eq!(s.api_keys.len(), 1);
        assert_eq!(s.profiles, vec!["a.toml", "classroom-64k"]);
        let target = s.target.expect("a live server");
        assert_eq!(target.metrics_urls, vec!["http://127.0.0.1:9/metrics"]);
        assert_eq!(s.provenance.profile.as_deref(), Some("classroom-64k"));
    }

    #[test]
    fn every_variable_read_is_in_the_registry() {
        let read = std::cell::RefCell::new(Vec::new());
        let _ = Settings::from_lookup(|name| {
            read.borrow_mut().push(name.to_string());
            None
        });
        for name in read.into_inner() {
            assert!(env::var(&name).is_some(), "{name} is not in the registry");
        }
    }

    #[test]
    fn bad_values_name_the_variable() {
        let e = settings(&[("CODENDUM_BASE_URL", "htps://h/v1")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("CODENDUM_BASE_URL"), "{e}");
        let e = settings(&[("CODENDUM_CAPACITY", "slow")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("CODENDUM_CAPACITY"), "{e}");
        let e = settings(&[("CODENDUM_CAPACITY_REUSE_S", "soon")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("CODENDUM_CAPACITY_REUSE_S"), "{e}");
    }
}
