//! The server's side of a run: vLLM's `/metrics`.
//!
//! - [`mod@parse`]: our own parser of the Prometheus text format 0.0.4 (names with
//!   colons, generic labels, Go-style floats); plain functions.
//! - [`snapshot`]: [`ServerSnapshot`], the vLLM figures of one scrape (or of
//!   several replicas summed); every field optional, never a fake zero.
//! - [`window`]: [`TimelineSample`] timelines, [`WindowStats`] (peaks,
//!   reset-aware counter increases, hit rate over a window), interval rates,
//!   reading `server-timeline.jsonl` back and aligning it by UTC.
//! - [`sampler`]: [`Scraper`] (HTTP) and the background [`Sampler`].
//! - [`render`]: the table and `--watch` line of `codendum metrics` (the
//!   command itself is [`crate::app::metrics`]).

pub mod api;
pub mod latency;
mod lex;
pub mod parse;
pub mod remote;
pub mod render;
pub mod replicas;
pub mod replicas_render;
pub mod sampler;
pub mod snapshot;
pub mod window;

pub use latency::{Histogram, LatencyHistograms, Phase};
pub use parse::{parse, Exposition, LineProblem, MetricType, ParseError, Sample};
pub use remote::{PromSource, PromSourceError};
pub use replicas::{
    fleet_figures, fleet_figures_with, lagged_window, replica_name, ReplicaSample,
    REPLICA_TIMELINE_JSONL,
};
pub use sampler::{
    sample_fleet, sample_once, Recording, Sampler, SamplerHandle, ScrapeError, Scraper,
};
pub use snapshot::ServerSnapshot;
pub use window::{
    align_timeline, counter_increase, parse_timeline, read_timeline, window_stats, IntervalRates,
    TimelineError, TimelineSample, WindowStats,
};
