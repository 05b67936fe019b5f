//! Per-level summaries from request records (plain functions, no I/O), and
//! the server figures over a level's window that they fold in.

use super::records::RateFigures;
use super::slo::{slo_figures, Slo};
use std::collections::BTreeMap;

use crate::kinds::TokenSource;
use crate::results::{ErrorGroup, LevelEnd, LevelSummary, RequestRecord};
use crate::stats::{mean, percentile, sorted_finite};

/// Server figures over a window of the run (one level). Each figure is
/// `None` when the metric was not seen in the window.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ServerWindow {
    /// Increase of the preemptions counter.
    pub preemptions: Option<f64>,
    /// Peak KV-cache usage, fraction in `[0, 1]`.
    pub peak_kv_usage: Option<f64>,
    /// Peak running requests.
    pub peak_running: Option<f64>,
    /// Peak waiting requests.
    pub peak_waiting: Option<f64>,
    /// Prefix-cache hit rate over the window, fraction in `[0, 1]`.
    pub prefix_hit_rate: Option<f64>,
    /// Scrapes that failed in the window.
    pub failed_scrapes: u64,
    /// The server's own timings of the requests that ended in the window.
    pub time_split: Option<crate::results::TimeSplit>,
}

/// What the driver knows about a level besides its records.
#[derive(Debug, Clone, PartialEq)]
pub struct LevelFrame<'a> {
    /// Shape name.
    pub shape: &'a str,
    /// Concurrency N.
    pub concurrency: u32,
    /// Why it stopped starting requests.
    pub ended_by: LevelEnd,
    /// Level start, seconds since the run started.
    pub started_at_s: f64,
    /// Level start to the end of its last request, seconds.
    pub wall_time_s: f64,
    /// In-flight requests dropped after an interruption's grace.
    pub abandoned: u64,
    /// A rate level's load, as the driver saw it (`None`: closed loop); the
    /// send lags are filled in from the records.
    pub rate: Option<RateFigures>,
    /// `--slo`, for the level's SLO share and goodput.
    pub slo: Option<&'a Slo>,
}

/// Puts the server figures of `window` into `level` (what
/// [`summarize_level`] does with a window; used again when the figures come
/// in after the run, from Prometheus). The client means of the time split
/// are kept.
pub fn apply_server_window(level: &mut LevelSummary, window: &ServerWindow) {
    level.preemptions = window.preemptions;
    level.peak_kv_usage = window.peak_kv_usage;
    level.peak_running = window.peak_running;
    level.peak_waiting = window.peak_waiting;
    level.prefix_hit_rate = window.prefix_hit_rate;
    level.failed_scrapes = Some(window.failed_scrapes);
    level.time_split = window.time_split.map(|mut split| {
        split.client_ttft_mean_s = level.ttft_mean_s;
        split.client_e2e_mean_s = level.e2e_mean_s;
        split
    });
}

/// Summarises one level. Throughputs and latencies use successful requests;
/// percentiles are taken from the raw values. `window` is `None` when there
/// was no `/metrics`: the server columns are then absent, not zero.
pub fn summarize_level(
    frame: LevelFrame<'_>,
    records: &[RequestRecord],
    window: Option<ServerWindow>,
) -> LevelSummary {
    let ok: Vec<&RequestRecord> = records.iter().filter(|r| r.ok).collect();
    let ttft_mean_s = mean(ok.iter().filter_map(|r| r.ttft_s));
    let e2e_mean_s = mean(ok.iter().map(|r| r.e2e_s));
    let mut errors: BTreeMap<String, ErrorGroup> = BTreeMap::new();
    for r in records.iter().filter(|r| !r.ok) {
        let kind = r.error_kind.clone().unwrap_or_else(|| "unknown".into());
        let group = errors.entry(kind).or_insert_with(|| ErrorGroup {
            count: 0,
            sample_message: r.error_message.clone().unwrap_or_default(),
        });
        group.count += 1;
    }
    let input_sum: u64 = ok.iter().filter_map(|r| r.input_tokens).sum();
    let output_sum: u64 = ok.iter().map(|r| r.output_tokens).sum();
    let wall = frame.wall_time_s;
    let rate = |x: f64| if wall > 0.0 { x / wall } else { 0.0 };
    let ttft = sorted_finite(ok.iter().filter_map(|r| r.ttft_s));
    let e2e = sorted_finite(ok.iter().map(|r| r.e2e_s));
    LevelSummary {
        shape: frame.shape.to_string(),
        concurrency: frame.concurrency,
        ended_by: frame.ended_by,
        requests: records.len() as u64,
        successes: ok.len() as u64,
        errors,
        abandoned: frame.abandoned,
        mean_input_tokens: mean(ok.iter().filter_map(|r| r.input_tokens.map(|t| t as f64))),
        mean_output_tokens: mean(ok.iter().map(|r| r.output_tokens as f64)),
        tokens_client_counted: records
            .iter()
            .any(|r| r.tokens_counted_by == TokenSource::Client),
        started_at_s: frame.started_at_s,
        wall_time_s: wall,
        requests_per_s: rate(ok.len() as f64),
        error_rate: (!records.is_empty())
            .then(|| (records.len() - ok.len()) as f64 / records.len() as f64),
        output_tok_per_s: rate(output_sum as f64),
        total_tok_per_s: rate((input_sum + output_sum) as f64),
        ttft_p50_s: percentile(&ttft, 50.0),
        ttft_p95_s: percentile(&ttft, 95.0),
        ttft_p99_s: percentile(&ttft, 99.0),
        e2e_p50_s: percentile(&e2e, 50.0),
        e2e_p95_s: percentile(&e2e, 95.0),
        tpot_mean_s: mean(ok.iter().filter_map(|r| r.tpot_s)),
        ttft_mean_s,
        e2e_mean_s,
        preemptions: window.and_then(|w| w.preemptions),
        peak_kv_usage: window.and_then(|w| w.peak_kv_usage),
        peak_running: window.and_then(|w| w.peak_running),
        peak_waiting: window.and_then(|w| w.peak_waiting),
        prefix_hit_rate: window.and_then(|w| w.prefix_hit_rate),
        failed_scrapes: window.map(|w| w.failed_scrapes),
        time_split: window.and_then(|w| w.time_split).map(|mut split| {
            split.client_ttft_mean_s = ttft_mean_s;
            split.client_e2e_mean_s = e2e_mean_s;
            split
        }),
        fleet: None,
        rate: frame.rate.map(|mut r| {
            let lags = sorted_finite(records.iter().filter_map(|r| r.send_lag_s));
            r.send_lag_p50_s = percentile(&lags, 50.0);
            r.send_lag_p95_s = percentile(&lags, 95.0);
            r.send_lag_max_s = lags.last().copied();
            r
        }),
        slo_share: frame.slo.and_then(|s| slo_figures(s, records, wall).0),
        goodput_per_s: frame.slo.and_then(|s| slo_figures(s, records, wall).1),
        server_restarted: false,
    }
}
