//! Where the server is: base URL, API key(s), CA, `/metrics` URLs, model, and
//! the provenance fields that results record. Validated from raw strings into
//! typed values; no clap here.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::ConfigError;

mod keys;

pub use crate::kinds::Provenance;
pub use keys::{parse_api_keys, read_api_keys};

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

/// A validated live server, or none (the embedded twin).
#[derive(Debug, Clone)]
pub struct Target {
    /// OpenAI base URL ending in `/v1`, without trailing slash. `None` means
    /// the embedded twin.
    pub base_url: Option<BaseUrl>,
    /// The API key for single-key commands.
    pub api_key: Option<Secret>,
    /// A PEM bundle that replaces the system roots, as curl's `--cacert`.
    pub cacert: Option<PathBuf>,
    /// `/metrics` URLs (several for replicas); empty: derived from the base URL.
    pub metrics_urls: Vec<String>,
    /// The model to request; `None`: the first id of `/v1/models`.
    pub model: Option<String>,
    /// Per-request time limit.
    pub request_timeout: Duration,
    /// The router's own Prometheus page (`--router-metrics-url`), read at
    /// the start and the end of a run; `None`: no router figures.
    pub router_metrics_url: Option<String>,
}

impl Target {
    /// Validates raw values. `base_url` must be http(s) and end in `/v1`
    /// (a trailing slash is tolerated).
    pub fn new(
        base_url: Option<&str>,
        api_key: Option<&str>,
        cacert: Option<&Path>,
        metrics_urls: Option<&str>,
        model: Option<&str>,
        request_timeout: Duration,
    ) -> Result<Self, ConfigError> {
        let base_url = base_url
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(BaseUrl::parse)
            .transpose()?;
        let api_key = api_key
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(Secret::new);
        if let Some(path) = cacert {
            read_pem_bundle(path)?;
        }
        let mut urls = Vec::new();
        for raw in crate::flags::list(metrics_urls.unwrap_or("")) {
            let (scheme, _) = split_scheme(raw).ok_or_else(|| {
                ConfigError::invalid("--metrics-url", format!("{raw} is not an http(s) URL"))
            })?;
            let _ = scheme;
            urls.push(raw.trim_end_matches('/').to_string());
        }
        if urls.is_empty() {
            if let Some(base) = &base_url {
                urls.push(default_metrics_url(base));
            }
        }
        if request_timeout.is_zero() {
            return Err(ConfigError::invalid("--timeout", "must be more than 0 s"));
        }
        Ok(Target {
            base_url,
            api_key,
            cacert: cacert.map(Path::to_path_buf),
            metrics_urls: urls,
            model: model
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from),
            request_timeout,
            router_metrics_url: None,
        })
    }

    /// The target with the router's own metrics page (`--router-metrics-url`):
    /// an http(s) URL; blank means none.
    pub fn with_router_metrics(mut self, url: Option<&str>) -> Result<Self, ConfigError> {
        let url = url.map(str::trim).filter(|s| !s.is_empty());
        if let Some(raw) = url {
            split_scheme(raw).ok_or_else(|| {
                ConfigError::invalid(
                    "--router-metrics-url",
                    format!("{raw} is not an http(s) URL"),
                )
            })?;
        }
        self.router_metrics_url = url.map(|u| u.trim_end_matches('/').to_string());
        Ok(self)
    }

    /// Whether the target is the embedded twin.
    pub fn is_embedded(&self) -> bool {
        self.base_url.is_none()
    }

    /// The base URL for display and results: never carries credentials.
    pub fn display_url(&self) -> String {
        match &self.base_url {
            Some(u) => strip_userinfo(u),
            None => "embedded twin".to_string(),
        }
    }

    /// Whether plain HTTP would carry an API key to a host that is not loopback.
    pub fn sends_key_in_clear(&self) -> bool {
        match (&self.base_url, &self.api_key) {
            (Some(u), Some(_)) => u.starts_with("http://") && !is_loopback_url(u),
            _ => false,
        }
    }
}

/// An OpenAI base URL, checked and normalised once ([`BaseUrl::parse`]):
/// http(s), a host, ending in `/v1`, no trailing slash. Read as `&str`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl(String);

impl BaseUrl {
    /// Checks and normalises `raw` (see [`normalize_base_url`]).
    pub fn parse(raw: impl AsRef<str>) -> Result<BaseUrl, ConfigError> {
        normalize_base_url(raw.as_ref()).map(BaseUrl)
    }

    /// The URL.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for BaseUrl {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks and normalises an OpenAI base URL: http(s), a host, ending in `/v1`.
pub fn normalize_base_url(raw: &str) -> Result<String, ConfigError> {
    let trimmed = raw.trim().trim_end_matches('/');
    let (_, rest) = split_scheme(trimmed).ok_or_else(|| {
        ConfigError::invalid(
            "--base-url",
            format!(
                "{} is not an http:// or https:// URL",
                strip_userinfo(trimmed)
            ),
        )
    })?;
    let host = rest.split('/').next().unwrap_or("");
    if host.is_empty() {
        return Err(ConfigError::invalid("--base-url", "the URL has no host"));
    }
    if !trimmed.ends_with("/v1") {
        return Err(ConfigError::invalid(
            "--base-url",
            format!(
                "{} must end in /v1 (the OpenAI base, e.g. https://llm.lab.example:8443/v1)",
                strip_userinfo(trimmed)
            ),
        ));
    }
    Ok(trimmed.to_string())
}

/// `scheme://host[:port]/metrics` for a base URL `scheme://host[:port]/.../v1`.
pub fn default_metrics_url(base_url: &str) -> String {
    format!("{}/metrics", origin(base_url))
}

/// `scheme://host[:port]` of a URL.
pub fn origin(url: &str) -> String {
    match split_scheme(url) {
        Some((scheme, rest)) => {
            let host = rest.split('/').next().unwrap_or("");
            format!("{scheme}://{host}")
        }
        None => url.to_string(),
    }
}

fn split_scheme(url: &str) -> Option<(&str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    match scheme.to_ascii_lowercase().as_str() {
        "http" | "https" => Some((scheme, rest)),
        _ => None,
    }
}

fn strip_userinfo(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let (authority, path) = match rest.find('/') {
                Some(i) => rest.split_at(i),
                None => (rest, ""),
            };
            let host = authority.rsplit('@').next().unwrap_or(authority);
            format!("{scheme}://{host}{path}")
        }
        None => url.to_string(),
    }
}

fn is_loopback_url(url: &str) -> bool {
    let host = match split_scheme(url) {
        Some((_, rest)) => rest.split('/').next().unwrap_or(""),
        None => return false,
    };
    let host = host.rsplit('@').next().unwrap_or(host);
    let host = if let Some(stripped) = host.strip_prefix('[') {
        stripped.split(']').next().unwrap_or("")
    } else {
        host.split(':').next().unwrap_or("")
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .map(|ip| ip.is_loopback())
            .unwrap_or(false)
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
    fn base_url_must_end_in_v1() {
        assert_eq!(
            normalize_base_url("http://127.0.0.1:8000/v1/").unwrap(),
            "http://127.0.0.1:8000/v1"
        );
        assert!(normalize_base_url("http://127.0.0.1:8000").is_err());
        assert!(normalize_base_url("htp://x/v1").is_err());
        assert!(normalize_base_url("https:///v1").is_err());
    }

    #[test]
    fn metrics_url_is_derived_from_origin() {
        assert_eq!(
            default_metrics_url("https://llm.lab.example:8443/v1"),
            "https://llm.lab.example:8443/metrics"
        );
        assert_eq!(default_metrics_url("http://h/proxy/v1"), "http://h/metrics");
    }

    #[test]
    fn secrets_never_print() {
        let s = Secret::new("sk-test-student-01");
        assert!(!format!("{s:?} {s}").contains("sk-test"));
        assert_eq!(s.short_id().len(), 8);
    }

    #[test]
    fn clear_text_key_warning_only_off_loopback() {
        let t = Target::new(
            Some("http://10.1.2.3:8000/v1"),
            Some("k"),
            None,
            None,
            None,
            Duration::from_secs(1),
        )
        .unwrap();
        assert!(t.sends_key_in_clear());
        let t = Target::new(
            Some("http://127.0.0.1:8000/v1"),
            Some("k"),
            None,
            None,
            None,
            Duration::from_secs(1),
        )
        .unwrap();
        assert!(!t.sends_key_in_clear());
        assert_eq!(
            t.metrics_urls,
            vec!["http://127.0.0.1:8000/metrics".to_string()]
        );
    }

    #[test]
    fn display_url_strips_credentials() {
        let t = Target::new(
            Some("https://user:pw@h.example/v1"),
            None,
            None,
            None,
            None,
            Duration::from_secs(1),
        )
        .unwrap();
        assert_eq!(t.display_url(), "https://h.example/v1");
    }
}
