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
//! A window ([`SteadyWindow`], a level's field) holding fewer than
//! [`MIN_STEADY_REQUESTS`] requests is too short to judge: the level then
//! keeps the figures of all its requests, ramp-up and drain included, and
//! says so ([`SteadyWindow::used`]); the run's verdict names it as a reason
//! the run is not valid as a capacity figure.

use super::records::{RequestRecord, SteadyWindow, MIN_STEADY_REQUESTS};

/// The steady window of a closed-loop level's records (any order); `None`
/// without records.
pub fn steady_window(records: &[RequestRecord]) -> Option<SteadyWindow> {
    let first_end = records
        .iter()
        .map(RequestRecord::ended_at)
        .reduce(f64::min)?;
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
        } else if r.ended_at() > end_s {
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
            prompt_tokens: Some(10),
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
