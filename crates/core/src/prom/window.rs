//! A server timeline (one sample per scrape) and the figures of a time window:
//! gauge peaks, reset-aware counter increases, the prefix-cache hit rate over
//! the window, and rates between two samples. Plain functions, no I/O except
//! [`read_timeline`].

use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::latency::LatencyHistograms;
use super::snapshot::ServerSnapshot;
use crate::server_figures::{ServerWindow, TimeSplit};

/// One scrape of the server: a snapshot, or the reason the scrape failed.
/// One JSON object per line in `server-timeline.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimelineSample {
    /// UTC time of the scrape (on a scaled clock: the clock's UTC origin plus
    /// the simulated offset).
    pub utc: DateTime<Utc>,
    /// Simulated seconds since the run's clock started.
    pub t: f64,
    /// What the server said; absent when the scrape failed.
    #[serde(default)]
    pub snapshot: Option<ServerSnapshot>,
    /// Why the scrape failed; absent when it succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Figures of a window [t0, t1] of a timeline (simulated seconds).
///
/// Counter increases run from the last successful sample at or before `t0`
/// (the baseline; the first sample in the window when there is none) to the
/// last one at or before `t1`, so contiguous windows share no increment. A
/// counter that drops means the server restarted: its new value counts as the
/// increase from 0. Increases are never negative.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WindowStats {
    /// Window start, simulated seconds.
    pub t0: f64,
    /// Window end, simulated seconds.
    pub t1: f64,
    /// Scrapes with `t` in [t0, t1], failed ones included.
    pub samples: usize,
    /// Failed scrapes with `t` in [t0, t1].
    pub failed_scrapes: usize,
    /// Highest running-request count seen in the window.
    pub peak_running: Option<f64>,
    /// Highest waiting-request count seen in the window.
    pub peak_waiting: Option<f64>,
    /// Highest KV-cache usage seen in the window, FRACTION 0..1.
    pub peak_kv_usage: Option<f64>,
    /// Preemptions during the window.
    pub preemptions: Option<f64>,
    /// Prompt tokens processed during the window.
    pub prompt_tokens: Option<f64>,
    /// Generated tokens during the window.
    pub generation_tokens: Option<f64>,
    /// Prompt tokens looked up in the prefix cache during the window.
    pub prefix_cache_queries: Option<f64>,
    /// Prompt tokens found in the prefix cache during the window.
    pub prefix_cache_hits: Option<f64>,
    /// Δhits / Δqueries over the window, FRACTION 0..1 (absent without queries).
    pub prefix_hit_rate: Option<f64>,
    /// Requests finished during the window, every reason together
    /// (`vllm:request_success_total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_finished: Option<f64>,
    /// The server's latency histograms over the window (from the baseline
    /// to the last reading); absent when the server exports none. The
    /// client means are left for the caller.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_split: Option<TimeSplit>,
}

/// Rates between two successive samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct IntervalRates {
    /// Length of the interval, simulated seconds.
    pub dt: f64,
    /// Prompt tokens per simulated second.
    pub prompt_tokens_per_s: Option<f64>,
    /// Generated tokens per simulated second.
    pub generation_tokens_per_s: Option<f64>,
    /// Δhits / Δqueries over the interval, FRACTION 0..1.
    pub prefix_hit_rate: Option<f64>,
    /// Preemptions during the interval.
    pub preemptions: Option<f64>,
}

/// Increase of a counter from `before` to `after`, reset-aware: a drop means
/// the counter restarted from 0, so the increase is `after` itself.
pub fn counter_increase(before: f64, after: f64) -> f64 {
    if after >= before {
        after - before
    } else {
        after.max(0.0)
    }
}

/// Sums reset-aware increases of one counter over successive values, each
/// with its process start time when known: a new start time begins a new
/// segment (the process restarted, its counter counts from 0) even when the
/// value did not fall, so every segment is summed once and nothing twice.
fn total_increase(values: impl Iterator<Item = (f64, Option<f64>)>) -> Option<f64> {
    let mut previous: Option<(f64, Option<f64>)> = None;
    let mut total: Option<f64> = None;
    for (value, started) in values {
        if let Some((before, started_before)) = previous {
            let restarted = matches!((started_before, started), (Some(a), Some(b)) if a != b);
            *total.get_or_insert(0.0) += if restarted {
                value.max(0.0)
            } else {
                counter_increase(before, value)
            };
        }
        previous = Some((value, started));
    }
    total
}

fn max_of(values: impl Iterator<Item = f64>) -> Option<f64> {
    values.fold(None, |acc, v| Some(acc.map_or(v, |a: f64| a.max(v))))
}

/// Hit rate Δhits / Δqueries, when there were queries.
fn hit_rate(hits: Option<f64>, queries: Option<f64>) -> Option<f64> {
    let (hits, queries) = (hits?, queries?);
    (queries > 0.0).then(|| (hits / queries).clamp(0.0, 1.0))
}

/// The figures of the window [t0, t1] (simulated seconds) of a timeline.
/// Samples need not be sorted.
pub fn window_stats(timeline: &[TimelineSample], t0: f64, t1: f64) -> WindowStats {
    let mut ordered: Vec<&TimelineSample> = timeline.iter().collect();
    ordered.sort_by(|a, b| a.t.total_cmp(&b.t));
    let inside: Vec<&TimelineSample> = ordered
        .iter()
        .copied()
        .filter(|s| s.t >= t0 && s.t <= t1)
        .collect();
    let snaps: Vec<&ServerSnapshot> = inside.iter().filter_map(|s| s.snapshot.as_ref()).collect();
    let baseline = ordered
        .iter()
        .rev()
        .find(|s| s.t <= t0 && s.snapshot.is_some())
        .and_then(|s| s.snapshot.as_ref());
    // Baseline first (unless it is already the first sample inside), then the window.
    let mut counted: Vec<&ServerSnapshot> = Vec::with_capacity(snaps.len() + 1);
    if let Some(base) = baseline {
        if snaps
            .first()
            .is_none_or(|first| !std::ptr::eq(*first, base))
        {
            counted.push(base);
        }
    }
    counted.extend(snaps.iter().copied());
    let increase = |field: fn(&ServerSnapshot) -> Option<f64>| {
        total_increase(
            counted
                .iter()
                .filter_map(|s| Some((field(s)?, s.process_start_time_s))),
        )
    };
    let with_latency: Vec<(&LatencyHistograms, Option<f64>)> = counted
        .iter()
        .filter_map(|s| Some((s.latency.as_ref()?, s.process_start_time_s)))
        .collect();
    let time_split = match (with_latency.first(), with_latency.last()) {
        // A restart inside the window: the restarted process's histograms
        // from its start (the earlier process's part is not comparable).
        (Some((_, Some(a))), Some((last, Some(b)))) if a != b => {
            last.split_since(&LatencyHistograms::default())
        }
        (Some((first, _)), Some((last, _))) if with_latency.len() > 1 => last.split_since(first),
        _ => None,
    };
    let prefix_cache_queries = increase(|s| s.prefix_cache_queries);
    let prefix_cache_hits = increase(|s| s.prefix_cache_hits);
    WindowStats {
        t0,
        t1,
        samples: inside.len(),
        failed_scrapes: inside.iter().filter(|s| s.snapshot.is_none()).count(),
        peak_running: max_of(snaps.iter().filter_map(|s| s.running)),
        peak_waiting: max_of(snaps.iter().filter_map(|s| s.waiting)),
        peak_kv_usage: max_of(snaps.iter().filter_map(|s| s.kv_usage)),
        preemptions: increase(|s| s.preemptions),
        prompt_tokens: increase(|s| s.prompt_tokens),
        generation_tokens: increase(|s| s.generation_tokens),
        prefix_hit_rate: hit_rate(prefix_cache_hits, prefix_cache_queries),
        requests_finished: increase(ServerSnapshot::finished_total),
        prefix_cache_queries,
        prefix_cache_hits,
        time_split,
    }
}

impl WindowStats {
    /// The figures a bench level folds in ([`ServerWindow`]).
    pub fn server_window(&self) -> ServerWindow {
        ServerWindow {
            preemptions: self.preemptions,
            peak_kv_usage: self.peak_kv_usage,
            peak_running: self.peak_running,
            peak_waiting: self.peak_waiting,
            prefix_hit_rate: self.prefix_hit_rate,
            failed_scrapes: self.failed_scrapes as u64,
            time_split: self.time_split,
        }
    }
}

impl IntervalRates {
    /// Rates from `previous` to `current` (both need a snapshot and
    /// `current.t > previous.t`); counter drops are treated as restarts.
    pub fn between(previous: &TimelineSample, current: &TimelineSample) -> Option<IntervalRates> {
        let (a, b) = (previous.snapshot.as_ref()?, current.snapshot.as_ref()?);
        let dt = current.t - previous.t;
        if dt.is_nan() || dt <= 0.0 {
            return None;
        }
        let delta = |field: fn(&ServerSnapshot) -> Option<f64>| {
            Some(counter_increase(field(a)?, field(b)?))
        };
        Some(IntervalRates {
            dt,
            prompt_tokens_per_s: delta(|s| s.prompt_tokens).map(|d| d / dt),
            generation_tokens_per_s: delta(|s| s.generation_tokens).map(|d| d / dt),
            prefix_hit_rate: hit_rate(
                delta(|s| s.prefix_cache_hits),
                delta(|s| s.prefix_cache_queries),
            ),
            preemptions: delta(|s| s.preemptions),
        })
    }
}

/// Why a timeline file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum TimelineError {
    /// The file could not be read.
    #[error("cannot read timeline {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line other than the last is not a timeline sample.
    #[error("timeline line {line}: {reason}")]
    BadLine {
        /// 1-based line number.
        line: usize,
        /// What serde said.
        reason: String,
    },
}

/// Reads a `server-timeline.jsonl` file (or the output of `metrics --json`):
/// one sample per line, blank lines skipped, a broken LAST line (a write cut
/// short) ignored.
pub fn read_timeline(path: &Path) -> Result<Vec<TimelineSample>, TimelineError> {
    let text = std::fs::read_to_string(path).map_err(|source| TimelineError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse_timeline(&text)
}

/// Parses timeline text; see [`read_timeline`].
pub fn parse_timeline(text: &str) -> Result<Vec<TimelineSample>, TimelineError> {
    let lines: Vec<(usize, &str)> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .collect();
    let mut samples = Vec::with_capacity(lines.len());
    for (position, (index, line)) in lines.iter().enumerate() {
        match serde_json::from_str::<TimelineSample>(line) {
            Ok(sample) => samples.push(sample),
            Err(_) if position + 1 == lines.len() => break,
            Err(e) => {
                return Err(TimelineError::BadLine {
                    line: index + 1,
                    reason: e.to_string(),
                })
            }
        }
    }
    Ok(samples)
}

/// Re-times a timeline recorded elsewhere (e.g. an operator's
/// `codendum metrics --watch 5 --json` file): each `t` becomes the seconds
/// from `utc_start` to the sample's `utc` (negative before the start), and
/// the samples are sorted by `t`.
pub fn align_timeline(
    mut samples: Vec<TimelineSample>,
    utc_start: DateTime<Utc>,
) -> Vec<TimelineSample> {
    for sample in &mut samples {
        let offset = sample.utc.signed_duration_since(utc_start);
        sample.t = offset.num_microseconds().map_or_else(
            || offset.num_milliseconds() as f64 / 1e3,
            |us| us as f64 / 1e6,
        );
    }
    samples.sort_by(|a, b| a.t.total_cmp(&b.t));
    samples
}
