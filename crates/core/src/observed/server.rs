//! The server's side of a class, from a timeline on the class's axis
//! (`codendum metrics --watch 5 --json` on the GPU host, re-timed by
//! [`crate::prom::align_timeline`]): the class's server figures over the
//! class's span, and what the server finished with an error or aborted.

use serde::{Deserialize, Serialize};

use crate::prom::window::{counter_increase, window_stats, TimelineSample};
use crate::results::ServerFigures;

/// The server over one window of a timeline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSide {
    /// The class's server figures: peaks over the window, counter increases
    /// over it, server output as generated tokens over the window's length.
    pub figures: ServerFigures,
    /// The window, seconds on the class's axis.
    pub window_s: (f64, f64),
    /// Samples in the window, failed ones included.
    pub samples: usize,
    /// Samples in the window whose scrape failed.
    pub failed_samples: usize,
    /// Requests the server finished with `finished_reason` `error` in the
    /// window (absent when it does not export the counter).
    pub finished_with_error: Option<f64>,
    /// Requests the server finished as `abort` (the client went away) in
    /// the window.
    pub aborted: Option<f64>,
}

/// The increase over the window of one reason of
/// `vllm:request_success_total`: from the last reading at or before `t0`
/// (else the first inside) to the last at or before `t1`.
fn reason_increase(timeline: &[TimelineSample], t0: f64, t1: f64, reason: &str) -> Option<f64> {
    let readings: Vec<(f64, f64)> = timeline
        .iter()
        .filter(|s| s.t <= t1)
        .filter_map(|s| {
            let by = s.snapshot.as_ref()?.finished_requests.as_ref()?;
            Some((s.t, by.get(reason).copied().unwrap_or(0.0)))
        })
        .collect();
    let start = readings.iter().rposition(|(t, _)| *t <= t0).unwrap_or(0);
    let window = readings.get(start..)?;
    if window.len() < 2 {
        return None;
    }
    Some(
        window
            .windows(2)
            .map(|w| counter_increase(w[0].1, w[1].1))
            .sum(),
    )
}

/// The server over `[t0, t1]` of `timeline` (sorted or not); `None` when
/// no sample in or around the window holds a reading.
pub fn server_side(timeline: &[TimelineSample], t0: f64, t1: f64) -> Option<ServerSide> {
    let mut ordered: Vec<TimelineSample> = timeline.to_vec();
    ordered.sort_by(|a, b| a.t.total_cmp(&b.t));
    let w = window_stats(&ordered, t0, t1);
    if w.samples == w.failed_scrapes {
        return None;
    }
    let starts: Vec<f64> = ordered
        .iter()
        .filter(|s| s.t >= t0 && s.t <= t1)
        .filter_map(|s| s.snapshot.as_ref()?.process_start_time_s)
        .collect();
    let span = t1 - t0;
    Some(ServerSide {
        figures: ServerFigures {
            peak_running: w.peak_running,
            peak_waiting: w.peak_waiting,
            peak_kv_cache_usage: w.peak_kv_usage,
            preemptions: w.preemptions.map(|p| p.round() as u64),
            prefix_cache_hit_rate: w.prefix_hit_rate,
            output_tokens_per_s: w.generation_tokens.filter(|_| span > 0.0).map(|g| g / span),
            time_split: w.time_split,
            server_restarted: starts.windows(2).any(|p| p[0] != p[1]),
        },
        window_s: (t0, t1),
        samples: w.samples,
        failed_samples: w.failed_scrapes,
        finished_with_error: reason_increase(&ordered, t0, t1, "error"),
        aborted: reason_increase(&ordered, t0, t1, "abort"),
    })
}
