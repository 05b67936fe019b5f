//! The server's own figures over a window of a run, as [`crate::prom`]
//! computes them from `/metrics` and [`crate::results`] keeps them in a
//! results folder: defined here, below both, so neither imports the other
//! for them.
//!
//! - [`window`]: [`ServerWindow`], the peaks, counter increases and hit rate
//!   over one bench level;
//! - [`time_split`]: [`TimeSplit`], where a request's time goes (the
//!   server's timings next to the client's);
//! - [`fleet`]: [`ReplicaFigures`] and [`FleetFigures`], each replica of a
//!   fleet side by side;
//! - [`router_figures`]: what the vLLM Router in front of the replicas
//!   counted over a run.

pub mod fleet;
pub mod router_figures;
pub mod time_split;
pub mod window;

pub use self::fleet::{imbalance, FleetFigures, ReplicaFigures, SOURCE_PROMETHEUS, SOURCE_SCRAPE};
pub use self::time_split::{PhaseTime, TimeSplit};
pub use self::window::ServerWindow;
