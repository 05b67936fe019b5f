//! The HTTPS proxy in front of the server, as a classroom has it: API keys,
//! per-key and global limits answered with 429 + `Retry-After`, and counters.
//!
//! [`ProxyState::wrap`] puts the proxy in front of any axum [`Router`] (the
//! twin's, or a test's). Rules:
//! - `/v1/*` needs `Authorization: Bearer <key>` with a configured key;
//!   anything else (`/metrics`, `/health`, `/version`, ...) passes without one.
//! - Limits, checked in this order: requests per key per minute (a sliding
//!   window of 60 simulated seconds on the [`Clock`]), requests in flight per
//!   key, requests in flight in total. A request counts as in flight until its
//!   response body has been sent completely or the client went away.
//! - Counters are Prometheus text under the `codendum_proxy_` prefix. The
//!   layer appends them to every successful `/metrics` response it passes on,
//!   so the wrapped router's `/metrics` handler must NOT append
//!   [`ProxyState::render_metrics`] itself; that method is for callers that
//!   expose the counters some other way.

use std::collections::{HashMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use serde_json::json;

use codendum_core::access::{read_api_keys, Secret};
use codendum_core::clock::Clock;
use codendum_core::error::ConfigError;

/// The window of the per-minute limit, simulated seconds.
const WINDOW: Duration = Duration::from_secs(60);
/// `Retry-After` for in-flight limits, seconds.
const IN_FLIGHT_RETRY_AFTER_SECS: u64 = 1;
mod layer;

/// The proxy's keys and limits (`None` = no limit).
#[derive(Debug, Clone, Default)]
pub struct ProxyConfig {
    /// Accepted API keys; a key's index in this list names it in metrics.
    pub keys: Vec<Secret>,
    /// Requests in flight per key.
    pub per_key_in_flight: Option<u32>,
    /// Requests admitted per key per 60 simulated seconds.
    pub per_key_per_minute: Option<u32>,
    /// Requests in flight over all keys.
    pub global_in_flight: Option<u32>,
}

impl ProxyConfig {
    /// Keys from an API-keys file (see [`read_api_keys`]) and these limits.
    pub fn from_keys_file(
        path: &Path,
        per_key_in_flight: Option<u32>,
        per_key_per_minute: Option<u32>,
        global_in_flight: Option<u32>,
    ) -> Result<Self, ConfigError> {
        Ok(ProxyConfig {
            keys: read_api_keys(path)?,
            per_key_in_flight,
            per_key_per_minute,
            global_in_flight,
        })
    }
}

/// Which limit turned a request away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// [`ProxyConfig::per_key_per_minute`].
    PerKeyPerMinute,
    /// [`ProxyConfig::per_key_in_flight`].
    PerKeyInFlight,
    /// [`ProxyConfig::global_in_flight`].
    GlobalInFlight,
}

impl Limit {
    /// The label value used in metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            Limit::PerKeyPerMinute => "per_key_per_minute",
            Limit::PerKeyInFlight => "per_key_in_flight",
            Limit::GlobalInFlight => "global_in_flight",
        }
    }
}

/// Why a request was not admitted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// No `Authorization: Bearer` header, or an unknown key (401).
    Unauthorized,
    /// A limit is reached (429); retry after this many seconds.
    TooManyRequests {
        /// The limit that was hit.
        limit: Limit,
        /// Seconds until a retry can succeed (at least 1).
        retry_after_secs: u64,
    },
}

impl IntoResponse for Rejection {
    fn into_response(self) -> Response {
        match self {
            Rejection::Unauthorized => error_response(
                StatusCode::UNAUTHORIZED,
                "AuthenticationError",
                "Invalid or missing API key. Send Authorization: Bearer <key>.".into(),
                None,
            ),
            Rejection::TooManyRequests {
                limit,
                retry_after_secs,
            } => error_response(
                StatusCode::TOO_MANY_REQUESTS,
                "RateLimitError",
                format!(
                    "Rate limit reached ({}). Retry after {retry_after_secs} s.",
                    limit.as_str()
                ),
                Some(retry_after_secs),
            ),
        }
    }
}

fn error_response(status: StatusCode, kind: &str, message: String, retry: Option<u64>) -> Response {
    let body = json!({"error": {"message": message, "type": kind, "param": null, "code": status.as_u16()}});
    let mut resp = (status, axum::Json(body)).into_response();
    if let Some(secs) = retry {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    resp
}

#[derive(Debug, Default)]
struct KeyCounters {
    in_flight: u32,
    admitted_at: VecDeque<Duration>,
    requests: u64,
    rate_limited: u64,
}

#[derive(Debug, Default)]
struct Counters {
    keys: Vec<KeyCounters>,
    in_flight: u32,
    unauthorized: u64,
    by_limit: [u64; 3],
}

#[derive(Debug)]
struct Inner {
    config: ProxyConfig,
    index: HashMap<String, usize>,
    clock: Clock,
    counters: Mutex<Counters>,
}

/// The proxy's shared state: configuration, limits and counters. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ProxyState {
    inner: Arc<Inner>,
}

/// An admitted request. Dropping it releases its in-flight slots.
#[derive(Debug)]
pub struct Permit {
    state: ProxyState,
    key: usize,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut c = self.state.lock();
        c.in_flight = c.in_flight.saturating_sub(1);
        if let Some(k) = c.keys.get_mut(self.key) {
            k.in_flight = k.in_flight.saturating_sub(1);
        }
    }
}

impl ProxyState {
    /// A proxy with these keys and limits, measuring time on `clock`.
    pub fn new(config: ProxyConfig, clock: Clock) -> Self {
        let index = config
            .keys
            .iter()
            .enumerate()
            .map(|(i, k)| (k.expose().to_string(), i))
            .collect();
        let counters = Counters {
            keys: config.keys.iter().map(|_| KeyCounters::default()).collect(),
            ..Counters::default()
        };
        ProxyState {
            inner: Arc::new(Inner {
                config,
                index,
                clock,
                counters: Mutex::new(counters),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Counters> {
        self.inner
            .counters
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Admits a request with this `Authorization` header value, or says why not.
    pub fn admit(&self, authorization: Option<&str>) -> Result<Permit, Rejection> {
        let key = authorization
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .and_then(|k| self.inner.index.get(k.trim()).copied());
        let cfg = &self.inner.config;
        let now = self.inner.clock.now();
        let mut guard = self.lock();
        let c = &mut *guard;
        let Some((key, k)) = key.and_then(|i| c.keys.get_mut(i).map(|k| (i, k))) else {
            c.unauthorized += 1;
            return Err(Rejection::Unauthorized);
        };
        let global_in_flight = c.in_flight;
        while k
            .admitted_at
            .front()
            .is_some_and(|t| now.saturating_sub(*t) >= WINDOW)
        {
            k.admitted_at.pop_front();
        }
        let verdict = if cfg
            .per_key_per_minute
            .is_some_and(|n| k.admitted_at.len() >= n as usize)
        {
            let oldest = k.admitted_at.front().copied().unwrap_or(now);
            let wait = (oldest + WINDOW).saturating_sub(now);
            Some((
                Limit::PerKeyPerMinute,
                wait.as_secs_f64().ceil().max(1.0) as u64,
            ))
        } else if cfg.per_key_in_flight.is_some_and(|n| k.in_flight >= n) {
            Some((Limit::PerKeyInFlight, IN_FLIGHT_RETRY_AFTER_SECS))
        } else if cfg.global_in_flight.is_some_and(|n| global_in_flight >= n) {
            Some((Limit::GlobalInFlight, IN_FLIGHT_RETRY_AFTER_SECS))
        } else {
            None
        };
        if let Some((limit, retry_after_secs)) = verdict {
            k.rate_limited += 1;
            c.by_limit[limit as usize] += 1;
            return Err(Rejection::TooManyRequests {
                limit,
                retry_after_secs,
            });
        }
        k.admitted_at.push_back(now);
        k.requests += 1;
        k.in_flight += 1;
        c.in_flight += 1;
        drop(guard);
        Ok(Permit {
            state: self.clone(),
            key,
        })
    }

    /// Requests in flight now, over all keys.
    pub fn in_flight(&self) -> u32 {
        self.lock().in_flight
    }

    /// The counters as Prometheus text (format 0.0.4), `codendum_proxy_*`
    /// families; keys are labelled by index and [`Secret::short_id`].
    pub fn render_metrics(&self) -> String {
        let c = self.lock();
        let mut out = String::new();
        let mut family = |name: &str, kind: &str, help: &str, lines: Vec<(String, String)>| {
            out.push_str(&format!("# HELP codendum_proxy_{name} {help}\n"));
            out.push_str(&format!("# TYPE codendum_proxy_{name} {kind}\n"));
            for (labels, value) in lines {
                out.push_str(&format!("codendum_proxy_{name}{labels} {value}\n"));
            }
        };
        let per_key = |f: &dyn Fn(&KeyCounters) -> String| -> Vec<(String, String)> {
            self.inner
                .config
                .keys
                .iter()
                .zip(&c.keys)
                .enumerate()
                .map(|(i, (secret, k))| {
                    (
                        format!("{{key=\"{i}\",key_id=\"{}\"}}", secret.short_id()),
                        f(k),
                    )
                })
                .collect()
        };
        family(
            "requests_total",
            "counter",
            "Requests admitted, per API key.",
            per_key(&|k| k.requests.to_string()),
        );
        family(
            "rate_limited_total",
            "counter",
            "Requests answered with 429, per API key.",
            per_key(&|k| k.rate_limited.to_string()),
        );
        family(
            "key_in_flight",
            "gauge",
            "Requests in flight, per API key.",
            per_key(&|k| k.in_flight.to_string()),
        );
        let limits = [
            Limit::PerKeyPerMinute,
            Limit::PerKeyInFlight,
            Limit::GlobalInFlight,
        ];
        family(
            "rate_limited_by_limit_total",
            "counter",
            "Requests answered with 429, per limit.",
            limits
                .iter()
                .map(|l| {
                    (
                        format!("{{limit=\"{}\"}}", l.as_str()),
                        c.by_limit[*l as usize].to_string(),
                    )
                })
                .collect(),
        );
        family(
            "unauthorized_total",
            "counter",
            "Requests answered with 401 (missing or unknown key).",
            vec![(String::new(), c.unauthorized.to_string())],
        );
        family(
            "in_flight",
            "gauge",
            "Requests in flight over all keys.",
            vec![(String::new(), c.in_flight.to_string())],
        );
        out
    }

    /// Puts the proxy in front of a router (see the module documentation).
    pub fn wrap<S>(&self, router: Router<S>) -> Router<S>
    where
        S: Clone + Send + Sync + 'static,
    {
        router.layer(axum::middleware::from_fn_with_state(
            self.clone(),
            layer::proxy,
        ))
    }
}
