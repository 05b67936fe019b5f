//! The rows of a bench results folder: one [`RequestRecord`] per finished
//! request (`requests.jsonl`) and one [`LevelSummary`] per level × shape
//! (`summary.csv`, and the `levels` of `summary.json`).
//!
//! Times are simulated seconds on the run's clock; token counts are tokens;
//! KV-cache usage and prefix-cache hit rate are fractions in `[0, 1]` here
//! and in JSON (the CSV shows them as percent, in columns named `_pct`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::openai::TokenSource;

/// One finished request, as written to `requests.jsonl` the moment it ends.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Prompt shape name (`short`, `long`).
    pub shape: String,
    /// Concurrency level N the request ran under.
    pub concurrency: u32,
    /// Index of the request within its level × shape (0-based, in start order).
    pub index: u64,
    /// When the request was started, seconds since the run started.
    pub started_at: f64,
    /// Time to first token, seconds; `None` if no text chunk arrived.
    pub ttft_s: Option<f64>,
    /// End-to-end latency, seconds (to `[DONE]`, end of body, or the failure).
    pub e2e_s: f64,
    /// Mean time per output token of this request, seconds:
    /// (E2E − TTFT) / (output tokens − 1). `None` for failures or < 2 tokens.
    pub tpot_s: Option<f64>,
    /// Prompt tokens as counted by the server; `None` when it sent no usage.
    /// Named `input_tokens` in folders before schema version 3.
    #[serde(alias = "input_tokens")]
    pub prompt_tokens: Option<u64>,
    /// Output tokens (server's usage, or the client's count of text chunks).
    pub output_tokens: u64,
    /// Who counted `output_tokens`.
    pub tokens_counted_by: TokenSource,
    /// The finish reason of the first choice (`length` for a full answer).
    pub finish_reason: Option<String>,
    /// Whether the request succeeded.
    pub ok: bool,
    /// Stable error kind (`http_503`, `timeout`, ...) when it failed.
    pub error_kind: Option<String>,
    /// The error message when it failed (never contains an API key).
    pub error_message: Option<String>,
    /// HTTP status, when one arrived.
    pub status: Option<u16>,
    /// On a rate level: when the request was due, seconds since the run
    /// started (`started_at` is then this instant, and TTFT and E2E count
    /// from it). Absent on closed-loop levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduled_at: Option<f64>,
    /// On a rate level: how late the client sent the request after it was
    /// due, seconds (the client's own queueing: `--max-concurrency` full,
    /// or a busy client).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_lag_s: Option<f64>,
}

impl RequestRecord {
    /// When the request ended, seconds since the run started: its start
    /// plus its end-to-end latency.
    pub fn ended_at(&self) -> f64 {
        self.started_at + self.e2e_s
    }
}

/// Failures of one kind within a level.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorGroup {
    /// How many requests failed with this kind.
    pub count: u64,
    /// The message of the first such failure.
    pub sample_message: String,
}

/// Why a level stopped starting new requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LevelEnd {
    /// All `requests_per_level` requests were started.
    #[default]
    Requests,
    /// The `level_duration` cap passed.
    Duration,
    /// The run was interrupted during this level.
    Interrupted,
}

/// The figures of one level × shape.
///
/// Server columns (`preemptions` … `failed_scrapes`) come from the `/metrics`
/// sampler's window over the level; they are absent (`None`, left out of the
/// JSON, empty in the CSV) when there was no `/metrics` — never zero.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LevelSummary {
    /// Prompt shape name.
    pub shape: String,
    /// Concurrency level N (requests kept in flight).
    pub concurrency: u32,
    /// Why the level stopped starting requests.
    pub ended_by: LevelEnd,
    /// Finished requests (successes + errors).
    pub requests: u64,
    /// Successful requests.
    pub successes: u64,
    /// Failures grouped by stable kind.
    pub errors: BTreeMap<String, ErrorGroup>,
    /// Requests that were in flight when an interruption's grace period
    /// ended; they have no record.
    #[serde(default)]
    pub abandoned: u64,
    /// Mean input tokens of successful requests, as counted by the server.
    pub mean_input_tokens: Option<f64>,
    /// Mean output tokens of successful requests.
    pub mean_output_tokens: Option<f64>,
    /// Whether any output count in this level was made by the client (the
    /// server sent no usage).
    pub tokens_client_counted: bool,
    /// When the level started, seconds since the run started.
    pub started_at_s: f64,
    /// Level wall time, seconds: its start to the end of its last request.
    pub wall_time_s: f64,
    /// Successful requests per second of wall time.
    pub requests_per_s: f64,
    /// Failed requests as a fraction of the level's requests (0..1);
    /// `None` when the level finished no request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_rate: Option<f64>,
    /// Output tokens of successful requests per second of wall time.
    pub output_tok_per_s: f64,
    /// Input + output tokens of successful requests per second of wall time.
    pub total_tok_per_s: f64,
    /// TTFT median over successful requests, seconds.
    pub ttft_p50_s: Option<f64>,
    /// TTFT 95th percentile, seconds.
    pub ttft_p95_s: Option<f64>,
    /// TTFT 99th percentile, seconds.
    pub ttft_p99_s: Option<f64>,
    /// End-to-end latency median over successful requests, seconds.
    pub e2e_p50_s: Option<f64>,
    /// End-to-end latency 95th percentile, seconds.
    pub e2e_p95_s: Option<f64>,
    /// Mean of the requests' time per output token over successes, seconds.
    pub tpot_mean_s: Option<f64>,
    /// Mean time to first token over successes, seconds (the client's side
    /// of the time split).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_mean_s: Option<f64>,
    /// Mean end-to-end latency over successes, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub e2e_mean_s: Option<f64>,
    /// Preemptions during the level (increase of the counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<f64>,
    /// Peak KV-cache usage during the level, fraction in `[0, 1]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_kv_usage: Option<f64>,
    /// Peak running requests sampled during the level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_running: Option<f64>,
    /// Peak waiting requests sampled during the level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_waiting: Option<f64>,
    /// Prefix-cache hit rate during the level, fraction in `[0, 1]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hit_rate: Option<f64>,
    /// Scrapes of `/metrics` that failed during the level.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_scrapes: Option<u64>,
    /// Where the time went: the server's timings over the level (vLLM's
    /// histograms) and the client's means beside them; absent without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_split: Option<crate::server_figures::TimeSplit>,
    /// Each replica's figures over the level and the fleet's imbalance,
    /// when the server is a fleet (several `--metrics-url`s, or several
    /// Prometheus instances); absent for one server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fleet: Option<crate::server_figures::FleetFigures>,
    /// A rate level's load: the asked rate, its arrival process, what the
    /// schedule offered and the client sent, how late it sent, and whether
    /// the level saturated. Absent on closed-loop levels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate: Option<RateFigures>,
    /// The share of the level's requests meeting `--slo` (a fraction;
    /// failures count as missing it). Absent without `--slo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slo_share: Option<f64>,
    /// Requests meeting `--slo` per second of wall time. Absent without
    /// `--slo`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goodput_per_s: Option<f64>,
    /// The server restarted before the level ended: its server figures are
    /// (at least partly) the restarted server's, counter increases summed
    /// per process ([`super::continuity`]). Absent when it did not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub server_restarted: bool,
    /// A closed-loop level's steady window: its bounds, the requests in it,
    /// its ramp-up and drain, and whether the figures come from it
    /// ([`super::steady`]). Absent on rate levels and in folders written
    /// before schema version 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steady: Option<SteadyWindow>,
    /// The 95 % interval of each figure that has one, by the figure's key
    /// ([`crate::results::metrics::LevelMetric::key`]: `ttft_p95_s`,
    /// `error_rate`, `output_tok_per_s`), in the figure's unit (a fraction
    /// for shares). Empty in folders written before schema version 2.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub intervals: BTreeMap<String, crate::stats::Interval>,
    /// The client process's CPU over the level, a fraction of one core
    /// (user and system time over the level's wall time); absent when not
    /// measured (against the embedded twin, which shares the process).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu: Option<f64>,
}

/// The open-loop side of a rate level (see [`LevelSummary::rate`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RateFigures {
    /// The rate asked (`--rate`, or a sweep's), requests per second.
    pub rate_per_s: f64,
    /// The arrival process: `constant`, `poisson` or `gamma(B)`.
    pub arrival: String,
    /// `--max-concurrency`: most requests the client keeps in flight;
    /// `None`: no cap.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
    /// What the schedule offered: requests per second between the first and
    /// the last due instant.
    pub offered_rate_per_s: Option<f64>,
    /// What the client sent: requests per second between the first and the
    /// last actual send.
    pub achieved_rate_per_s: Option<f64>,
    /// How late the client sent, seconds: median, 95th percentile, most.
    pub send_lag_p50_s: Option<f64>,
    /// See [`RateFigures::send_lag_p50_s`].
    pub send_lag_p95_s: Option<f64>,
    /// See [`RateFigures::send_lag_p50_s`].
    pub send_lag_max_s: Option<f64>,
    /// Whether the level saturated: the backlog of requests sent but not
    /// answered (or waiting on the server) grew through the level while
    /// fewer finished than were offered (see `bench::driver`).
    pub saturated: bool,
    /// The level's TTFT P95 over its P5: how far queueing stretched its
    /// TTFTs beyond the unloaded ones (1–2 for a level the server keeps up
    /// with). Absent in folders written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttft_stretch: Option<f64>,
}

/// A rate level whose TTFT P95 is more than this many times its P5 queued
/// for stretches as long as the level: levels the server keeps up with
/// stay below 2 on the twin, levels near saturation reach 10–30
/// (docs/validation.md, the interval coverage table).
pub const QUEUED_STRETCH: f64 = 3.0;

impl RateFigures {
    /// Whether the level queued for stretches as long as itself: it
    /// saturated, or its TTFT P95 is more than [`QUEUED_STRETCH`] times
    /// its P5. Such a level's tail depends on how its first minutes went,
    /// which one run cannot show: the upper bounds of its tail intervals
    /// are left open.
    pub fn queued(&self) -> bool {
        self.saturated || self.ttft_stretch.is_some_and(|s| s > QUEUED_STRETCH)
    }
}

impl LevelSummary {
    /// The level's name in tables and headings: `c16` (closed loop, 16 in
    /// flight) or `0.8/s` (a rate level).
    pub fn load_label(&self) -> String {
        match &self.rate {
            Some(r) => format!("{}/s", trim_rate(r.rate_per_s)),
            None => format!("c{}", self.concurrency),
        }
    }

    /// Failed requests of the level, all kinds.
    pub fn error_count(&self) -> u64 {
        self.errors.values().map(|g| g.count).sum()
    }
}

/// A rate as written in labels: at most three significant decimals, no
/// trailing zeros (`0.8`, `1.25`, `12`).
pub fn trim_rate(rate: f64) -> String {
    let text = format!("{rate:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    text.to_string()
}

/// The fewest requests a steady window must hold for the level's figures
/// to come from it (fewer: from the whole level, with a warning).
pub const MIN_STEADY_REQUESTS: u64 = 10;

/// Where a closed-loop level's steady window lies and what it holds.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SteadyWindow {
    /// Window start: the first request's end, seconds since the run started.
    pub start_s: f64,
    /// Window end: the last request's start, seconds since the run started.
    pub end_s: f64,
    /// Requests whose whole life lies in the window.
    pub requests: u64,
    /// Requests started before the window (the ramp-up).
    pub ramp_up: u64,
    /// Requests started in the window that ended after it (the drain).
    pub drain: u64,
    /// Whether the level's figures come from the window (`false`: it holds
    /// fewer than [`MIN_STEADY_REQUESTS`] requests and the figures are the
    /// whole level's).
    pub used: bool,
}

impl SteadyWindow {
    /// The window's length, seconds (0 when empty).
    pub fn length_s(&self) -> f64 {
        (self.end_s - self.start_s).max(0.0)
    }

    /// Whether the record's whole life lies in the window.
    pub fn holds(&self, r: &RequestRecord) -> bool {
        r.started_at >= self.start_s && r.ended_at() <= self.end_s
    }

    /// Whether any of the record's life lies inside the window: what its
    /// rates count, each for its share inside.
    pub fn overlaps(&self, r: &RequestRecord) -> bool {
        r.ended_at() > self.start_s && r.started_at < self.end_s
    }

    /// The warning a level gives when its window is too short:
    /// `short c16: steady window 0.0–0.0 s holds 0 requests (ramp-up 16,
    /// drain 16); figures over the whole level`. `None` when it is used.
    pub fn warning(&self, level: &str) -> Option<String> {
        (!self.used).then(|| {
            format!(
                "{level}: the steady window ({:.1}–{:.1} s) holds {} requests, fewer than {MIN_STEADY_REQUESTS} \
                 (ramp-up {}, drain {}); its figures are over the whole level, ramp-up and drain included",
                self.start_s, self.end_s, self.requests, self.ramp_up, self.drain
            )
        })
    }
}
