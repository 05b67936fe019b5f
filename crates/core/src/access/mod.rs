//! Where the server is and how to get in: its base URL, CA and `/metrics`
//! URLs (a [`Target`]), how requests are
//! sent (API key, model, time limit), API keys, and the provenance fields
//! that results record. Typed values, parsed once; no clap here.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::ConfigError;

mod base_url;
mod keys;

pub use base_url::{http_url, BaseUrl};
pub use keys::{parse_api_keys, read_api_keys};

/// Provenance recorded with every result (what to share with results: profile, image digest,
/// model revision, DGX OS version; plus the driver).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// Server profile name, e.g. `classroom-64k`.
    pub profile: Option<String>,
    /// vLLM image digest.
    pub image_digest: Option<String>,
    /// Model revision.
    pub model_revision: Option<String>,
    /// DGX OS version.
    pub dgx_os_version: Option<String>,
    /// NVIDIA driver version.
    pub driver_version: Option<String>,
}

/// An API key. Its `Debug` and `Display` never show the key; results name a
/// key by index or by [`Secret::short_id`].
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Secret(key.into())
    }

    /// The key itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A short, stable, non-reversible id (8 hex digits of a 64-bit hash).
    pub fn short_id(&self) -> String {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in self.0.bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        format!("{:08x}", (h >> 32) as u32)
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Secret(key#{})", self.short_id())
    }
}

impl fmt::Display for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key#{}", self.short_id())
    }
}

/// A live server: where it is and where its pages are. Built from typed
/// values (the base URL parsed once), so nothing below checks it again.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The OpenAI base URL (ending in `/v1`).
    pub base_url: BaseUrl,
    /// A PEM bundle that replaces the system roots, as curl's `--cacert`.
    pub cacert: Option<PathBuf>,
    /// `/metrics` URLs (several for replicas); by default the one beside
    /// the base URL.
    pub metrics_urls: Vec<String>,
    /// The router's own Prometheus page (`--router-metrics-url`), read at
    /// the start and the end of a run; `None`: no router figures.
    pub router_metrics_url: Option<String>,
}

impl Target {
    /// The server at `base_url`, its `/metrics` beside it, the system roots.
    pub fn at(base_url: BaseUrl) -> Self {
        Target {
            metrics_urls: vec![base_url.metrics_url()],
            base_url,
            cacert: None,
            router_metrics_url: None,
        }
    }

    /// The base URL for display and results: never carries credentials.
    pub fn display_url(&self) -> String {
        self.base_url.display()
    }
}

/// How every request is sent, to a live server or to the embedded twin.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    /// The API key of single-key commands (the side calls' key too).
    pub api_key: Option<Secret>,
    /// The model to request; `None`: the first id of `/v1/models`.
    pub model: Option<String>,
    /// Per-request time limit.
    pub request_timeout: Duration,
}

impl ClientSettings {
    /// No key, the server's first model, `request_timeout` per request.
    pub fn new(request_timeout: Duration) -> Self {
        ClientSettings {
            api_key: None,
            model: None,
            request_timeout,
        }
    }

    /// Whether plain HTTP would carry the API key to a host that is not
    /// this machine.
    pub fn sends_key_in_clear(&self, base_url: &BaseUrl) -> bool {
        self.api_key.is_some() && base_url.is_http() && !base_url.is_loopback()
    }
}

/// Reads a PEM bundle and checks that it holds at least one certificate.
pub fn read_pem_bundle(path: &Path) -> Result<Vec<u8>, ConfigError> {
    let pem = std::fs::read(path).map_err(|source| ConfigError::Unreadable {
        what: "CA file",
        path: path.to_path_buf(),
        source,
    })?;
    let text = String::from_utf8_lossy(&pem);
    if !text.contains("-----BEGIN CERTIFICATE-----") {
        return Err(ConfigError::BadFile {
            what: "CA file",
            path: path.to_path_buf(),
            reason: "no PEM certificate (-----BEGIN CERTIFICATE-----) in it".into(),
        });
    }
    Ok(pem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_target_reads_metrics_beside_its_base_url() {
        let t = Target::at(BaseUrl::parse("https://llm.lab.example:8443/v1").unwrap());
        assert_eq!(t.metrics_urls, ["https://llm.lab.example:8443/metrics"]);
        let t = Target::at(BaseUrl::parse("https://user:pw@h.example/v1").unwrap());
        assert_eq!(t.display_url(), "https://h.example/v1");
    }

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("sk-test-student-01");
        assert!(!format!("{s:?} {s}").contains("sk-test"));
        assert_eq!(s.short_id().len(), 8);
    }

    #[test]
    fn clear_text_key_warning_only_off_loopback() {
        let mut client = ClientSettings::new(Duration::from_secs(1));
        let far = BaseUrl::parse("http://10.1.2.3:8000/v1").unwrap();
        assert!(
            !client.sends_key_in_clear(&far),
            "no key, nothing to warn of"
        );
        client.api_key = Some(Secret::new("k"));
        assert!(client.sends_key_in_clear(&far));
        for near in [
            "http://127.0.0.1:8000/v1",
            "http://localhost/v1",
            "https://10.1.2.3/v1",
        ] {
            assert!(
                !client.sends_key_in_clear(&BaseUrl::parse(near).unwrap()),
                "{near}"
            );
        }
    }
}
