//! Prometheus's HTTP API, as far as codendum reads it: instant queries
//! (`/api/v1/query`) and range queries (`/api/v1/query_range`), answers
//! parsed into [`Series`] by the plain function [`parse_answer`].
//!
//! An answer that is not Prometheus's JSON envelope (`{"status": ...}`)
//! becomes [`PromApiError::NotPrometheus`] naming what answered: the HTTP
//! status, the content type and the start of the body.

use std::collections::BTreeMap;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::Deserialize;

use codendum_core::error::one_line;

/// How long one API call may take, real time.
pub const API_TIMEOUT: Duration = Duration::from_secs(10);

/// Most points Prometheus returns per series of one range query (it refuses
/// more than 11,000); longer ranges are split into chunks of this many steps.
pub const MAX_POINTS_PER_QUERY: usize = 10_000;

/// One series of an answer: its labels (`__name__` included) and its points
/// `(Unix seconds, value)` in time order (one point for an instant query).
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Label names and values, `__name__` included when Prometheus gives it.
    pub labels: BTreeMap<String, String>,
    /// `(Unix time in seconds, value)`, oldest first.
    pub points: Vec<(f64, f64)>,
}

impl Series {
    /// The value of a label, if the series has it.
    pub fn label(&self, name: &str) -> Option<&str> {
        self.labels.get(name).map(String::as_str)
    }
}

/// Why a Prometheus API call failed. Each message is one line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PromApiError {
    /// No HTTP answer at all (refused, DNS, TLS, timeout).
    #[error("Prometheus at {url} is unreachable: {reason}")]
    Unreachable {
        /// The Prometheus base URL.
        url: String,
        /// What went wrong.
        reason: String,
    },
    /// Something answered, but not Prometheus's API.
    #[error("{url} is not Prometheus: {what}")]
    NotPrometheus {
        /// The Prometheus base URL as given.
        url: String,
        /// What answered: status, content type and the start of the body.
        what: String,
    },
    /// Prometheus answered with an error (a bad query, a timeout).
    #[error("Prometheus at {url} rejected the query {query}: {error_type}: {error}")]
    Query {
        /// The Prometheus base URL.
        url: String,
        /// The PromQL expression.
        query: String,
        /// Prometheus's `errorType` (`bad_data`, `timeout`, ...).
        error_type: String,
        /// Prometheus's `error` text.
        error: String,
    },
}

/// What an answer's body says, before the URL and query are attached.
#[derive(Debug, Clone, PartialEq)]
pub enum AnswerProblem {
    /// Not Prometheus's JSON envelope; the text says what it is instead.
    NotPrometheus(String),
    /// `status: error` with its `errorType` and `error`.
    Rejected(String, String),
}

#[derive(Deserialize)]
struct Envelope {
    status: String,
    #[serde(default)]
    data: Option<Data>,
    #[serde(default, rename = "errorType")]
    error_type: Option<String>,
    #[serde(default)]
    error: Option<String>,
}

#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: serde_json::Value,
}

#[derive(Deserialize)]
struct RawSeries {
    #[serde(default)]
    metric: BTreeMap<String, String>,
    #[serde(default)]
    value: Option<(f64, String)>,
    #[serde(default)]
    values: Vec<(f64, String)>,
}

/// A float as Prometheus writes it in JSON: a string, `NaN`, `+Inf`, `-Inf`
/// included.
fn prom_float(text: &str) -> Option<f64> {
    match text {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        t => t.parse().ok(),
    }
}

/// The first characters of a body, on one line, for an error message.
pub fn body_excerpt(body: &str) -> String {
    let flat: String = body
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .take(60)
        .collect();
    if flat.is_empty() {
        "an empty body".into()
    } else {
        format!("\"{flat}\"")
    }
}

/// Parses the body of an `/api/v1/query` or `/api/v1/query_range` answer:
/// vectors, matrices and scalars become [`Series`] (a scalar: one series
/// without labels). Anything but Prometheus's envelope is
/// [`AnswerProblem::NotPrometheus`].
pub fn parse_answer(body: &str) -> Result<Vec<Series>, AnswerProblem> {
    let not_prom = || AnswerProblem::NotPrometheus(format!("it answered {}", body_excerpt(body)));
    let envelope: Envelope = serde_json::from_str(body).map_err(|_| not_prom())?;
    match envelope.status.as_str() {
        "success" => {}
        "error" => {
            return Err(AnswerProblem::Rejected(
                envelope.error_type.unwrap_or_default(),
                envelope.error.unwrap_or_default(),
            ))
        }
        _ => return Err(not_prom()),
    }
    let data = envelope.data.ok_or_else(not_prom)?;
    let raw: Vec<RawSeries> = match data.result_type.as_str() {
        "matrix" | "vector" => serde_json::from_value(data.result).map_err(|_| not_prom())?,
        "scalar" => {
            let point: (f64, String) =
                serde_json::from_value(data.result).map_err(|_| not_prom())?;
            vec![RawSeries {
                metric: BTreeMap::new(),
                value: Some(point),
                values: Vec::new(),
            }]
        }
        _ => return Err(not_prom()),
    };
    Ok(raw
        .into_iter()
        .map(|r| {
            let points = r
                .value
                .into_iter()
                .chain(r.values)
                .filter_map(|(t, v)| Some((t, prom_float(&v)?)))
                .collect();
            Series {
                labels: r.metric,
                points,
            }
        })
        .collect())
}

/// Unix seconds of a UTC time, with milliseconds.
pub fn unix_secs(utc: DateTime<Utc>) -> f64 {
    utc.timestamp_millis() as f64 / 1e3
}

/// A client of one Prometheus server's query API.
#[derive(Debug, Clone)]
pub struct PromClient {
    http: reqwest::Client,
    base: String,
}

impl PromClient {
    /// A client of the Prometheus at `base` (`http://prom:9090`, or a path
    /// prefix such as `https://host/prometheus`).
    pub fn new(http: reqwest::Client, base: &str) -> Self {
        PromClient {
            http,
            base: base.trim_end_matches('/').to_string(),
        }
    }

    /// The base URL as given (no trailing slash).
    pub fn base(&self) -> &str {
        &self.base
    }

    /// An instant query at `time` (Unix seconds).
    pub async fn query(&self, expr: &str, time: f64) -> Result<Vec<Series>, PromApiError> {
        let params = [("query", expr.to_string()), ("time", format!("{time:.3}"))];
        self.call("/api/v1/query", expr, &params).await
    }

    /// A range query from `start` to `end` (Unix seconds) every `step`
    /// seconds; split into chunks of [`MAX_POINTS_PER_QUERY`] steps, whose
    /// series are joined by label set.
    pub async fn query_range(
        &self,
        expr: &str,
        start: f64,
        end: f64,
        step: f64,
    ) -> Result<Vec<Series>, PromApiError> {
        let step = step.max(0.001);
        let mut joined: BTreeMap<BTreeMap<String, String>, Vec<(f64, f64)>> = BTreeMap::new();
        let mut from = start;
        while from <= end {
            let to = (from + step * (MAX_POINTS_PER_QUERY - 1) as f64).min(end);
            let params = [
                ("query", expr.to_string()),
                ("start", format!("{from:.3}")),
                ("end", format!("{to:.3}")),
                ("step", format!("{step}")),
            ];
            for s in self.call("/api/v1/query_range", expr, &params).await? {
                joined.entry(s.labels).or_default().extend(s.points);
            }
            from = to + step;
        }
        Ok(joined
            .into_iter()
            .map(|(labels, points)| Series { labels, points })
            .collect())
    }

    async fn call(
        &self,
        path: &str,
        expr: &str,
        params: &[(&str, String)],
    ) -> Result<Vec<Series>, PromApiError> {
        let url = format!("{}{path}", self.base);
        let response = self
            .http
            .post(&url)
            .form(params)
            .timeout(API_TIMEOUT)
            .send()
            .await
            .map_err(|e| self.unreachable(e))?;
        let status = response.status();
        let content_type = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("no content type")
            .to_string();
        let body = response.text().await.map_err(|e| self.unreachable(e))?;
        match parse_answer(&body) {
            Ok(series) => Ok(series),
            Err(AnswerProblem::Rejected(error_type, error)) => Err(PromApiError::Query {
                url: self.base.clone(),
                query: expr.to_string(),
                error_type,
                error,
            }),
            Err(AnswerProblem::NotPrometheus(_)) => Err(PromApiError::NotPrometheus {
                url: self.base.clone(),
                what: format!(
                    "POST {path} answered HTTP {} ({content_type}) with {}",
                    status.as_u16(),
                    body_excerpt(&body)
                ),
            }),
        }
    }

    fn unreachable(&self, e: reqwest::Error) -> PromApiError {
        PromApiError::Unreachable {
            url: self.base.clone(),
            reason: one_line(&e.without_url()),
        }
    }
}
