//! Reading a live server's `/metrics`: HTTP scrapes, the background 1 s
//! [`Sampler`], and the same figures through a Prometheus server's HTTP API
//! ([`PromSource`]). What the pages mean is `codendum_core::prom`'s.
//!
//! - [`sampler`]: [`Scraper`] (HTTP) and the background [`Sampler`].
//! - [`recording`]: the timeline files the sampler appends to.
//! - [`api`] and [`remote`]: `query_range` against Prometheus.
//! - [`router_reader`]: the vLLM Router's own page, read at a run's start and end.
//! - [`render`]: the table and `--watch` line of `codendum metrics` (the
//!   command itself is `codendum metrics`).

pub mod api;
pub mod recording;
pub mod remote;
pub mod render;
pub mod replicas_render;
pub mod router_reader;
pub mod sampler;

pub use recording::Recording;
pub use remote::{PromSource, PromSourceError, PrometheusOptions};
pub use sampler::{sample_fleet, sample_once, Sampler, SamplerHandle, ScrapeError, Scraper};
