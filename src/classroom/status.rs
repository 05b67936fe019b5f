//! The live status of a classroom run, for a progress line the CLI renders
//! every second.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

use serde::Serialize;

use codendum_core::clock::Clock;
use codendum_core::openai::FirstToken;
use codendum_core::results::classroom_records::{CallRecord, TaskOutcome};
use codendum_core::stats::percentile;

/// Counters the students update while the run goes on.
#[derive(Debug)]
pub struct LiveStatus {
    clock: Clock,
    origin: Mutex<f64>,
    active: AtomicUsize,
    pausing: AtomicUsize,
    in_flight: AtomicUsize,
    calls: AtomicU64,
    retries: AtomicU64,
    completed: AtomicU64,
    failed: AtomicU64,
    ttfts: Mutex<Vec<f64>>,
    open: Mutex<OpenWork>,
}

/// The model calls and coding requests under way, by when they started
/// (seconds since the run started): what a window's judge waits for, and
/// what it counts as still running.
#[derive(Debug, Default)]
struct OpenWork {
    next: u64,
    calls: std::collections::BTreeMap<u64, (f64, FirstToken)>,
    tasks: std::collections::BTreeMap<u64, RunningTask>,
}

/// A coding request under way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunningTask {
    /// The student (as its records name it).
    pub user: usize,
    /// The coding request's index in the student's session.
    pub index: usize,
    /// When it started, seconds since the run started.
    pub start_s: f64,
}

/// A model call under way.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OpenCall {
    /// When it was sent, seconds since the run started.
    pub started_s: f64,
    /// Its TTFT once its first token has arrived, seconds from the
    /// attempt's send; `None` while it waits for one.
    pub ttft_s: Option<f64>,
}

/// A model call or coding request under way, handed back when it ends.
#[derive(Debug)]
pub(crate) struct Open(u64);

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
            open: Mutex::new(OpenWork::default()),
        }
    }

    /// Notes a model call started at `started_s` (seconds since the run
    /// started), whose transport tells `first_token`.
    pub(crate) fn call_opened(&self, started_s: f64, first_token: FirstToken) -> Open {
        self.open(|o, id| {
            o.calls.insert(id, (started_s, first_token));
        })
    }

    /// Notes a coding request under way.
    pub(crate) fn task_opened(&self, task: RunningTask) -> Open {
        self.open(|o, id| {
            o.tasks.insert(id, task);
        })
    }

    fn open(&self, note: impl FnOnce(&mut OpenWork, u64)) -> Open {
        let Ok(mut open) = self.open.lock() else {
            return Open(u64::MAX);
        };
        let id = open.next;
        open.next += 1;
        note(&mut open, id);
        Open(id)
    }

    /// Notes that the call or coding request `open` ended.
    pub(crate) fn closed(&self, open: Open) {
        if let Ok(mut o) = self.open.lock() {
            o.calls.remove(&open.0);
            o.tasks.remove(&open.0);
        }
    }

    /// The model calls under way: when each started and its TTFT once its
    /// first token has come (a call is closed only once its record is
    /// written).
    pub fn open_calls(&self) -> Vec<OpenCall> {
        self.open
            .lock()
            .map(|o| {
                o.calls
                    .values()
                    .map(|(started_s, first)| OpenCall {
                        started_s: *started_s,
                        ttft_s: first.get(),
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The coding requests under way (a request is closed only once its
    /// record is written, so a reader that takes these before the records
    /// misses none; the same request may then be in both).
    pub fn running_tasks(&self) -> Vec<RunningTask> {
        self.open
            .lock()
            .map(|o| o.tasks.values().copied().collect())
            .unwrap_or_default()
    }

    pub(crate) fn start_at(&self, origin: f64) {
        if let Ok(mut o) = self.origin.lock() {
            *o = origin;
        }
    }

    fn add_ttft(&self, ttft: f64) {
        if let Ok(mut v) = self.ttfts.lock() {
            v.push(ttft);
        }
    }

    /// Notes a student (or a replayed session) begun (`true`) or ended.
    pub(crate) fn student(&self, begun: bool) {
        match begun {
            true => self.active.fetch_add(1, Ordering::Relaxed),
            false => self.active.fetch_sub(1, Ordering::Relaxed),
        };
    }

    /// Notes a student's pause between requests begun (`true`) or ended.
    pub(crate) fn pausing(&self, begun: bool) {
        match begun {
            true => self.pausing.fetch_add(1, Ordering::Relaxed),
            false => self.pausing.fetch_sub(1, Ordering::Relaxed),
        };
    }

    /// Notes an attempt of a model call sent (`true`) or answered.
    pub(crate) fn attempt(&self, sent: bool) {
        match sent {
            true => self.in_flight.fetch_add(1, Ordering::Relaxed),
            false => self.in_flight.fetch_sub(1, Ordering::Relaxed),
        };
    }

    /// Notes a model call sent again after a failure.
    pub(crate) fn retried(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// Notes a model call finished with `record` (its TTFT counts when it
    /// succeeded).
    pub(crate) fn call_recorded(&self, record: &CallRecord) {
        self.calls.fetch_add(1, Ordering::Relaxed);
        if let (true, Some(t)) = (record.is_ok(), record.ttft_s) {
            self.add_ttft(t);
        }
    }

    /// Notes a coding request ended with `outcome`.
    pub(crate) fn task_recorded(&self, outcome: TaskOutcome) {
        let counter = match outcome {
            TaskOutcome::Completed => &self.completed,
            _ => &self.failed,
        };
        counter.fetch_add(1, Ordering::Relaxed);
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
