//! URLs of the server, parsed once with the `url` crate and kept as such:
//! the OpenAI base URL ([`BaseUrl`]) and the other http(s) URLs a run reads
//! (`/metrics`, Prometheus, the router's page: [`http_url`]). Errors name
//! the flag and never show a URL's user or password.

use std::fmt;
use std::str::FromStr;

use url::Url;

use crate::error::ConfigError;

/// An OpenAI base URL: http or https, a host, a path ending in `/v1` (a
/// trailing slash is dropped). Everything below reads it from here: the
/// client's host and port, the origin, the default `/metrics` URL, the
/// display without credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl(Url);

impl BaseUrl {
    /// Parses `--base-url` (see [`BaseUrl::parse_for`]).
    pub fn parse(raw: impl AsRef<str>) -> Result<BaseUrl, ConfigError> {
        Self::parse_for("--base-url", raw.as_ref())
    }

    /// Parses a base URL given as `flag`; the error names the flag.
    pub fn parse_for(flag: &str, raw: &str) -> Result<BaseUrl, ConfigError> {
        raw.parse()
            .map_err(|reason| ConfigError::invalid(flag, reason))
    }

    /// The URL as sent (without a trailing slash; user and password kept).
    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// The parsed URL.
    pub fn url(&self) -> &Url {
        &self.0
    }

    /// `scheme://host[:port]`.
    pub fn origin(&self) -> String {
        self.0.origin().ascii_serialization()
    }

    /// vLLM's `/metrics` beside the base URL: `<origin>/metrics`.
    pub fn metrics_url(&self) -> String {
        format!("{}/metrics", self.origin())
    }

    /// The URL for messages and results: never with a user or password.
    pub fn display(&self) -> String {
        without_credentials(&self.0)
    }

    /// Whether the scheme is plain `http`.
    pub fn is_http(&self) -> bool {
        self.0.scheme() == "http"
    }

    /// The host, as it goes in a `Host` header (IPv6 in brackets).
    pub fn host(&self) -> String {
        match self.0.host() {
            Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
            Some(h) => h.to_string(),
            None => String::new(),
        }
    }

    /// The port, or the scheme's default.
    pub fn port(&self) -> u16 {
        self.0.port_or_known_default().unwrap_or(80)
    }

    /// The path (`/v1`, or `/proxy/v1`).
    pub fn path(&self) -> &str {
        self.0.path()
    }

    /// Whether the host is this machine (`localhost`, 127.0.0.0/8, `::1`).
    pub fn is_loopback(&self) -> bool {
        match self.0.host() {
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            None => false,
        }
    }
}

impl FromStr for BaseUrl {
    type Err = String;

    /// Checks and normalises a base URL; the error says why in a few words
    /// (without the URL's credentials).
    fn from_str(raw: &str) -> Result<Self, String> {
        let url = http_url_value(raw)?;
        if !url.path().ends_with("/v1") {
            return Err(format!(
                "{} must end in /v1 (the OpenAI base, e.g. https://llm.lab.example:8443/v1)",
                without_credentials(&url)
            ));
        }
        Ok(BaseUrl(url))
    }
}

impl fmt::Display for BaseUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An http(s) URL with a host given as `flag` (`--metrics-url`,
/// `--prometheus-url`, `--router-metrics-url`), without a trailing slash.
pub fn http_url(flag: &str, raw: &str) -> Result<String, ConfigError> {
    http_url_value(raw)
        .map(|u| u.as_str().to_string())
        .map_err(|reason| ConfigError::invalid(flag, reason))
}

/// Parses an http(s) URL with a host; a trailing slash is dropped.
fn http_url_value(raw: &str) -> Result<Url, String> {
    let trimmed = raw.trim().trim_end_matches('/');
    let url = Url::parse(trimmed).map_err(|e| match e {
        url::ParseError::RelativeUrlWithoutBase => {
            "is not a URL: it needs http:// or https:// in front".to_string()
        }
        other => format!("is not a URL ({other})"),
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!(
            "{} is not an http:// or https:// URL",
            without_credentials(&url)
        ));
    }
    if url.host().is_none() {
        return Err(format!("{} has no host", without_credentials(&url)));
    }
    Ok(url)
}

/// The URL without its user and password, as it may be shown.
fn without_credentials(url: &Url) -> String {
    let mut shown = url.clone();
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.as_str().trim_end_matches('/').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_url_ends_in_v1_and_loses_its_trailing_slash() {
        let b = BaseUrl::parse("http://127.0.0.1:8000/v1/").unwrap();
        assert_eq!(b.as_str(), "http://127.0.0.1:8000/v1");
        assert_eq!(b.origin(), "http://127.0.0.1:8000");
        assert_eq!(b.metrics_url(), "http://127.0.0.1:8000/metrics");
        assert_eq!(
            (b.host(), b.port(), b.path()),
            ("127.0.0.1".to_string(), 8000, "/v1")
        );
        assert!(b.is_http() && b.is_loopback());
        let proxied = BaseUrl::parse("https://llm.lab.example/proxy/v1").unwrap();
        assert_eq!(proxied.metrics_url(), "https://llm.lab.example/metrics");
        assert_eq!(proxied.port(), 443);
        assert!(!proxied.is_http() && !proxied.is_loopback());
        let v6 = BaseUrl::parse("http://[::1]:9/v1").unwrap();
        assert_eq!(v6.host(), "[::1]");
        assert!(v6.is_loopback());
    }

    #[test]
    fn bad_base_urls_name_the_flag_and_hide_credentials() {
        for bad in [
            "http://127.0.0.1:8000",
            "http://127.0.0.1:8000/v2",
            "htp://x/v1",
            "127.0.0.1:9/v1",
            "https:///v1",
            "",
        ] {
            let e = BaseUrl::parse(bad).unwrap_err().to_string();
            assert!(e.contains("--base-url"), "{bad}: {e}");
        }
        let e = BaseUrl::parse("htps://user:sk-secret@h.example/v1")
            .unwrap_err()
            .to_string();
        assert!(!e.contains("sk-secret") && !e.contains("user"), "{e}");
        let b = BaseUrl::parse("https://user:sk-secret@h.example/v1").unwrap();
        assert_eq!(b.display(), "https://h.example/v1");
        let e = BaseUrl::parse_for("--upstream", "ftp://h/v1").unwrap_err();
        assert!(e.to_string().contains("--upstream"), "{e}");
    }

    #[test]
    fn other_urls_are_http_with_a_host() {
        assert_eq!(
            http_url("--metrics-url", "http://gpu1:8000/metrics/").unwrap(),
            "http://gpu1:8000/metrics"
        );
        for bad in ["gpu1:8000/metrics", "file:///metrics", "http://"] {
            let e = http_url("--metrics-url", bad).unwrap_err().to_string();
            assert!(e.contains("--metrics-url"), "{bad}: {e}");
        }
    }
}
