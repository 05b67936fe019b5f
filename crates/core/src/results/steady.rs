//! The steady window of a closed-loop level: the stretch in which the
//! client held the level's N requests in flight and replaced each one that
//! finished, without the ramp-up before it and the drain after it (plain
//! functions of the records).
//!
//! - The level starts N requests at once against a server that was idle
//!   (or draining the level before): until the first of them finishes, the
//!   server sees one burst, not the level's steady load. The window starts
//!   at that first end; the requests started before it are the **ramp-up**.
//! - After the level's last request is sent, finished requests are no
//!   longer replaced and the load falls: the window ends at that last
//!   start; the requests still running then are the **drain**.
//! - A request is **in the window** when its whole life lies inside it.
//!   The level's latency figures (percentiles, means) come from those
//!   requests, its rates from what was delivered inside the window (each
//!   request for the share of its life there), over the window's length.
//!
//! A window holding fewer than [`MIN_STEADY_REQUESTS`] requests is too
//! short to judge: the level then keeps the figures of all its requests,
//! ramp-up and drain included, and says so ([`SteadyWindow::used`]); the
//! run's verdict names it as a reason the run is not valid as a capacity
//! figure.

use serde::{Deserialize, Serialize};

use super::records::RequestRecord;

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
        r.started_at >= self.start_s && end_of(r) <= self.end_s
    }

    /// Whether any of the record's life lies inside the window: what its
    /// rates count, each for its share inside.
    pub fn overlaps(&self, r: &RequestRecord) -> bool {
        end_of(r) > self.start_s && r.started_at < self.end_s
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

/// When a record ended, seconds since the run started.
pub fn end_of(r: &RequestRecord) -> f64 {
    r.started_at + r.e2e_s
}

/// The steady window of a closed-loop level's records (any order); `None`
/// without records.
pub fn steady_window(records: &[RequestRecord]) -> Option<SteadyWindow> {
    let first_end = records.iter().map(end_of).reduce(f64::min)?;
    let last_start = records.iter().map(|r| r.started_at).reduce(f64::max)?;
    let (start_s, end_s) = (first_end, last_start.max(first_end));
    let mut w = SteadyWindow {
        start_s,
        end_s,
        requests: 0,
        ramp_up: 0,
        drain: 0,
        used: false,
    };
    for r in records {
        if r.started_at < start_s {
            w.ramp_up += 1;
        } else if end_of(r) > end_s {
            w.drain += 1;
        } else {
            w.requests += 1;
        }
    }
    w.used = w.requests >= MIN_STEADY_REQUESTS && end_s > start_s;
    Some(w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::openai::TokenSource;

    fn record(started_at: f64, e2e_s: f64) -> RequestRecord {
        RequestRecord {
            shape: "short".into(),
            concurrency: 2,
            index: 0,
            started_at,
            ttft_s: Some(0.1),
            e2e_s,
            tpot_s: None,
            input_tokens: Some(10),
            output_tokens: 10,
            tokens_counted_by: TokenSource::Server,
            finish_reason: None,
            ok: true,
            error_kind: None,
            error_message: None,
            status: Some(200),
            scheduled_at: None,
            send_lag_s: None,
        }
    }

    /// Two slots, each running requests of 1 s back to back from t = 0:
    /// waves at 0, 1, 2, …, 9 (20 requests).
    fn waves(n: usize) -> Vec<RequestRecord> {
        (0..n)
            .flat_map(|i| [record(i as f64, 1.0), record(i as f64, 1.0)])
            .collect()
    }

    #[test]
    fn the_first_and_last_waves_are_ramp_up_and_drain() {
        let w = steady_window(&waves(10)).expect("records");
        assert_eq!((w.start_s, w.end_s), (1.0, 9.0));
        assert_eq!((w.ramp_up, w.requests, w.drain), (2, 16, 2));
        assert!(w.used);
        assert!(w.warning("short c2").is_none());
        let inside = waves(10).iter().filter(|r| w.overlaps(r)).count();
        assert_eq!(inside, 16, "waves 1 to 8 run from 1 … 9");
    }

    #[test]
    fn a_short_level_keeps_its_figures_and_says_why() {
        let w = steady_window(&waves(3)).expect("records");
        assert_eq!((w.ramp_up, w.requests, w.drain), (2, 2, 2));
        assert!(!w.used);
        let text = w.warning("short c2").expect("a warning");
        assert!(
            text.contains("holds 2 requests") && text.contains("ramp-up 2"),
            "{text}"
        );
        // One wave: the window is empty.
        let w = steady_window(&waves(1)).expect("records");
        assert_eq!((w.ramp_up, w.requests, w.drain, w.used), (2, 0, 0, false));
        assert!(steady_window(&[]).is_none());
    }
}
