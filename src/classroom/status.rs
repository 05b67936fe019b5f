//! The live status of a classroom run, for a progress line the CLI renders
//! every second.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::Serialize;

use codendum_core::clock::Clock;
use codendum_core::stats::percentile;

/// Counters the students update while the run goes on.
#[derive(Debug)]
pub struct LiveStatus {
    clock: Clock,
    origin: Mutex<f64>,
    pub(crate) active: AtomicUsize,
    pub(crate) pausing: AtomicUsize,
    pub(crate) in_flight: AtomicUsize,
    pub(crate) calls: AtomicU64,
    pub(crate) retries: AtomicU64,
    pub(crate) completed: AtomicU64,
    pub(crate) failed: AtomicU64,
    ttfts: Mutex<Vec<f64>>,
}

/// A point-in-time view of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StatusSnapshot {
    /// Simulated seconds since the run started.
    pub elapsed_s: f64,
    /// Students who have started and not yet finished.
    pub active_users: usize,
    /// Of those, students pausing between coding requests.
    pub pausing_users: usize,
    /// Model calls in flight (attempts being sent or streamed).
    pub in_flight: usize,
    /// Model calls finished (after retries).
    pub calls: u64,
    /// Retries made so far.
    pub retries: u64,
    /// TTFT median of successful calls so far, seconds.
    pub ttft_p50_s: Option<f64>,
    /// TTFT 95th percentile of successful calls so far, seconds.
    pub ttft_p95_s: Option<f64>,
    /// Coding requests completed.
    pub completed: u64,
    /// Coding requests failed or cut off.
    pub failed: u64,
}

impl LiveStatus {
    /// A fresh status on the run's clock.
    pub fn new(clock: Clock) -> Self {
        let origin = clock.now_secs();
        LiveStatus {
            clock,
            origin: Mutex::new(origin),
            active: AtomicUsize::new(0),
            pausing: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            calls: AtomicU64::new(0),
            retries: AtomicU64::new(0),
            completed: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            ttfts: Mutex::new(Vec::new()),
        }
    }

    pub(crate) fn start_at(&self, origin: f64) {
        if let Ok(mut o) = self.origin.lock() {
            *o = origin;
        }
    }

    pub(crate) fn add_ttft(&self, ttft: f64) {
        if let Ok(mut v) = self.ttfts.lock() {
            v.push(ttft);
        }
    }

    /// The current figures.
    pub fn snapshot(&self) -> StatusSnapshot {
        let origin = self.origin.lock().map(|o| *o).unwrap_or(0.0);
        let mut ttfts = self.ttfts.lock().map(|v| v.clone()).unwrap_or_default();
        ttfts.sort_by(f64::total_cmp);
        StatusSnapshot {
            elapsed_s: (self.clock.now_secs() - origin).max(0.0),
            active_users: self.active.load(Ordering::Relaxed),
            pausing_users: self.pausing.load(Ordering::Relaxed),
            in_flight: self.in_flight.load(Ordering::Relaxed),
            calls: self.calls.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            ttft_p50_s: percentile(&ttfts, 50.0),
            ttft_p95_s: percentile(&ttfts, 95.0),
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
        }
    }
}

impl std::fmt::Display for StatusSnapshot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}s"));
        write!(
            f,
            "{:>5.0}s  users {} ({} pausing)  in flight {}  calls {}  retries {}  TTFT p50 {} p95 {}  done {} failed {}",
            self.elapsed_s,
            self.active_users,
            self.pausing_users,
            self.in_flight,
            self.calls,
            self.retries,
            s(self.ttft_p50_s),
            s(self.ttft_p95_s),
            self.completed,
            self.failed
        )
    }
}
