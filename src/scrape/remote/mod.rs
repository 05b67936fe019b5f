//! Server figures read through Prometheus instead of scraping `/metrics`:
//! the same vLLM gauges and counters per instance, by `query_range` over a
//! window with step = the sampling interval, rebuilt into the same
//! [`TimelineSample`]s (fleet sum) and [`ReplicaSample`]s (per instance) that
//! direct scraping records, so every figure is computed by the same code.
//!
//! Each step's series of one instance are written back as a Prometheus text
//! page and read by [`ServerSnapshot::from_exposition`]: old metric names,
//! engines and KV weighting behave exactly as on a scrape. The latency
//! histograms come the same way, so a window's time split (queue, prefill,
//! decode, server TTFT) is the one direct scraping gives.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use super::api::{unix_secs, PromApiError, PromClient, Series};
use codendum_core::prom::replicas::{split_replicas, timeline_sample, ReplicaSample, Scraped};
use codendum_core::prom::snapshot::{ServerSnapshot, SNAPSHOT_SAMPLE_NAMES};
use codendum_core::prom::window::TimelineSample;

/// The gauge that says whether Prometheus holds a vLLM instance (every vLLM
/// version exports it).
pub const PROBE_METRIC: &str = "vllm:num_requests_running";

/// How long to wait (real time) for Prometheus to scrape past the end of a
/// window before reading it anyway, beyond two sampling intervals.
pub const CATCH_UP_SLACK: Duration = Duration::from_secs(3);

/// Why the figures could not be read through Prometheus.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PromSourceError {
    /// The API call failed (unreachable, not Prometheus, rejected query).
    #[error(transparent)]
    Api(#[from] PromApiError),
    /// Prometheus holds no series of the metric under the filter.
    #[error("Prometheus at {url} has no series {metric}{{{filter}}}: {hint}")]
    NoSeries {
        /// The Prometheus base URL.
        url: String,
        /// The metric asked for.
        metric: String,
        /// The label filter, as written in PromQL (between the braces).
        filter: String,
        /// What to check.
        hint: String,
    },
}

/// A Prometheus holding a fleet's vLLM series.
#[derive(Debug, Clone)]
pub struct PromSource {
    client: PromClient,
    selector: String,
    /// Whether the operator gave the selector (else it names `expected`).
    chosen: bool,
    expected: Vec<String>,
    step: Duration,
}

/// The PromQL label filter that picks the given instances:
/// `instance=~"a|b"` with regex characters escaped.
pub fn instance_filter(instances: &[String]) -> String {
    let alternatives: Vec<String> = instances.iter().map(|i| regex_escape(i)).collect();
    format!("instance=~\"{}\"", alternatives.join("|"))
}

fn regex_escape(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            // A backslash inside a PromQL string is itself escaped.
            out.push_str("\\\\");
        }
        out.push(c);
    }
    out
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn go_float(v: f64) -> String {
    match v {
        v if v.is_nan() => "NaN".into(),
        v if v == f64::INFINITY => "+Inf".into(),
        v if v == f64::NEG_INFINITY => "-Inf".into(),
        v => format!("{v:?}"),
    }
}

/// One sample of a series at one step: its labels and value.
type LabelledValue<'a> = (&'a BTreeMap<String, String>, f64);

/// One instance's samples at one step written as a Prometheus text page
/// (`__name__` becomes the sample name; the other labels are kept).
pub fn page_of(samples: &[LabelledValue<'_>]) -> String {
    let mut page = String::new();
    for (labels, value) in samples {
        let Some(name) = labels.get("__name__") else {
            continue;
        };
        let rest: Vec<String> = labels
            .iter()
            .filter(|(k, _)| k.as_str() != "__name__")
            .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
            .collect();
        let _ = writeln!(page, "{name}{{{}}} {}", rest.join(","), go_float(*value));
    }
    page
}

/// The instance a series belongs to (`instance`, else `job`).
fn instance_of(series: &Series) -> String {
    series
        .label("instance")
        .or_else(|| series.label("job"))
        .unwrap_or("prometheus")
        .to_string()
}

/// Rebuilds timelines from range-query series on the grid
/// `t_from + k × step` (simulated seconds on the run's clock, `utc_at` giving
/// each step's time): the fleet sum per step (any instance without data at a
/// step fails it, as a failed scrape would) and, with several instances, one
/// sample per instance and step. `instances`: the replicas in order (those
/// that have no series get error samples).
pub fn rebuild_timelines(
    series: &[Series],
    instances: &[String],
    grid: &[(f64, chrono::DateTime<chrono::Utc>)],
) -> (Vec<TimelineSample>, Vec<ReplicaSample>) {
    // (instance, step index) → that step's samples
    let mut at: BTreeMap<(String, usize), Vec<LabelledValue<'_>>> = BTreeMap::new();
    let start = grid.first().map(|(_, u)| unix_secs(*u)).unwrap_or(0.0);
    let step = match grid {
        [a, b, ..] => unix_secs(b.1) - unix_secs(a.1),
        _ => 1.0,
    };
    for s in series {
        let instance = instance_of(s);
        for &(ts, v) in &s.points {
            let k = ((ts - start) / step).round();
            if k >= 0.0 && (k as usize) < grid.len() {
                at.entry((instance.clone(), k as usize))
                    .or_default()
                    .push((&s.labels, v));
            }
        }
    }
    let mut fleet = Vec::with_capacity(grid.len());
    let mut replicas = Vec::new();
    for (k, &(t, utc)) in grid.iter().enumerate() {
        let read: Vec<Result<Scraped, String>> = instances
            .iter()
            .map(|i| match at.get(&(i.clone(), k)) {
                Some(samples) => read_page(&page_of(samples)).map_err(|e| format!("{i}: {e}")),
                None => Err(format!("Prometheus has no sample of {i} at this step")),
            })
            .collect();
        replicas.extend(split_replicas(instances, &read, utc, t));
        let sum = read
            .into_iter()
            .map(|r| r.map(|s| s.total))
            .collect::<Result<Vec<_>, _>>()
            .and_then(|all| match all.as_slice() {
                [] => Err("no instance".to_string()),
                [one] => Ok(one.clone()),
                many => Ok(ServerSnapshot::sum(many)),
            });
        fleet.push(timeline_sample(utc, t, sum));
    }
    (fleet, replicas)
}

/// A page's figures, and each engine's.
fn read_page(text: &str) -> Result<Scraped, codendum_core::prom::parse::ParseError> {
    let page = codendum_core::prom::parse::parse(text)?;
    Ok(Scraped {
        total: ServerSnapshot::from_exposition(&page),
        engines: ServerSnapshot::per_engine(&page),
    })
}
mod source;

#[cfg(test)]
mod tests;

/// `--prometheus-url` and `--prometheus-selector`, as they were typed when
/// the command line was read (an http(s) URL, a non-empty filter).
#[derive(Debug, Clone, PartialEq)]
pub struct PrometheusOptions {
    /// Prometheus's base URL (`http://prom:9090`).
    pub url: String,
    /// A PromQL label filter (`job="vllm"`); `None`: the instances of
    /// `--metrics-url`.
    pub selector: Option<String>,
}
