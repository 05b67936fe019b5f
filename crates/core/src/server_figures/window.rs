//! The server's figures over one window of a run (a bench level).

use super::TimeSplit;

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
    pub time_split: Option<TimeSplit>,
}
