//! The suite's settings, from the environment and `.env` (the environment
//! wins; `.env` never overrides it): the same variables, `.env` and
//! "empty is unset" rule as the command line
//! ([`codendum::settings::env`]), parsed into the same typed values.

use std::path::PathBuf;
use std::str::FromStr;

use super::workload::{Mode, REQUEST_TIMEOUT};
use codendum::settings::env::{self, *};
use codendum::settings::values::{CaFile, HttpUrls};
use codendum::settings::ClientSettings;
use codendum_core::error::ConfigError;
use codendum_core::profile::known_profiles;
use codendum_core::target::{read_api_keys, BaseUrl, Provenance, Secret, Target};

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
    /// judged in live mode.
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
        let var = |name: &str| env::value(get(name));
        let target = match var(BASE_URL) {
            None => None,
            Some(raw) => {
                let mut t = Target::at(BaseUrl::parse_for(BASE_URL, &raw)?);
                if let Some(ca) = parsed::<CaFile>(&var, CACERT)? {
                    t.cacert = Some(ca.0);
                }
                if let Some(urls) = parsed::<HttpUrls>(&var, METRICS_URL)? {
                    t.metrics_urls = urls.0;
                }
                Some(t)
            }
        };
        let client = ClientSettings {
            api_key: var(API_KEY).map(Secret::new),
            model: var(MODEL),
            request_timeout: REQUEST_TIMEOUT,
        };
        let api_keys = match var(API_KEYS_FILE) {
            Some(path) => read_api_keys(std::path::Path::new(&path))?,
            None => client.api_key.iter().cloned().collect(),
        };
        let mode = match var(CAPACITY) {
            None => Mode::Quick,
            Some(m) => Mode::from_name(&m).ok_or_else(|| {
                ConfigError::invalid(CAPACITY, format!("{m:?} is neither quick nor full"))
            })?,
        };
        let profiles = match var(CAPACITY_PROFILES) {
            Some(list) => codendum_core::flags::names(&list),
            None => known_profiles().into_iter().map(String::from).collect(),
        };
        let live_profile = var(PROFILE);
        let allow_busy = var(ALLOW_BUSY).is_some_and(|v| truthy(&v));
        let reuse_window_s = match var(CAPACITY_REUSE_S) {
            None => 0,
            Some(v) => v.parse().map_err(|_| {
                ConfigError::invalid(CAPACITY_REUSE_S, format!("{v:?} is not whole seconds"))
            })?,
        };
        let provenance = Provenance {
            profile: live_profile.clone(),
            image_digest: var(IMAGE_DIGEST),
            model_revision: var(MODEL_REVISION),
            dgx_os_version: var(DGX_OS_VERSION),
            driver_version: var(DRIVER_VERSION),
        };
        Ok(Settings {
            target,
            client,
            api_keys,
            profiles,
            live_profile,
            mode,
            allow_busy,
            results_dir: var(RESULTS_DIR)
                .map(PathBuf::from)
                .unwrap_or_else(|| PathBuf::from(codendum_core::results::DEFAULT_RESULTS_ROOT)),
            provenance,
            reuse_window_s,
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

fn truthy(v: &str) -> bool {
    matches!(v.to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on")
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
