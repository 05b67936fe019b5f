//! vLLM's `/metrics` as data: plain functions, no I/O.
//!
//! - [`mod@parse`]: our own parser of the Prometheus text format 0.0.4 (names with
//!   colons, generic labels, Go-style floats).
//! - [`snapshot`]: [`ServerSnapshot`], the vLLM figures of one scrape (or of
//!   several replicas summed); every field optional, never a fake zero.
//! - [`window`]: [`TimelineSample`] timelines, [`WindowStats`] (peaks,
//!   reset-aware counter increases, hit rate over a window), interval rates,
//!   reading `server-timeline.jsonl` back and aligning it by UTC.
//! - [`continuity`]: whether reads of one URL are one server, a restarted
//!   one, or several in turn.
//! - [`latency`]: vLLM's latency histograms and the time split they give.
//! - [`replicas`]: one timeline per replica of a fleet and the fleet's figures.
//! - [`router_page`]: the vLLM Router's own page and what it did between two reads.
//!
//! Reading a live server (HTTP scrapes, the 1 s sampler, Prometheus's API)
//! is `codendum::scrape`'s.

pub mod continuity;
pub mod latency;
mod lex;
pub mod parse;
pub mod replicas;
pub mod router_page;
pub mod snapshot;
pub mod window;

pub use latency::{Histogram, LatencyHistograms, Phase};
pub use lex::LineProblem;
pub use parse::{parse, Exposition, MetricType, ParseError, Sample};
pub use replicas::{
    fleet_figures, fleet_figures_with, fleet_window, lagged_window, replica_name, ReplicaSample,
    REPLICA_TIMELINE_JSONL,
};
pub use snapshot::ServerSnapshot;
pub use window::{
    align_timeline, counter_increase, parse_timeline, read_timeline, window_stats, IntervalRates,
    TimelineError, TimelineSample, WindowStats,
};
