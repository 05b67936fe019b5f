//! Recorded sessions as a class that holds the size it is told: the load
//! of `codendum capacity --replay`, the replayed counterpart of
//! [`crate::classroom::continuous`].
//!
//! - Each seat replays one root session at a time from when its student
//!   joins, then the trace's next session at once (the seats take the
//!   trace's sessions in turn, from the first); after the last session
//!   the trace starts again, each pass with a salt of its own, so a
//!   session sent again shares nothing with its earlier pass in the
//!   server's cache (its sessions still share what they shared in the
//!   recording), under session ids of its own.
//! - A smaller size tells the highest seats to leave: their calls in
//!   flight finish, nothing more is sent, and the coding requests left
//!   part-way are recorded as cut off.
//! - Records go to the sink as calls and coding requests end; the class's
//!   live status holds what is under way, so a step's judge waits for the
//!   calls of its window as with simulated students.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;

use super::call::Shared;
use super::config::ReplayConfig;
use super::driver::run_calls;
use super::root_run::RootRun;
use crate::classroom::continuous::hold_seats;
use crate::classroom::{ClassSize, LiveStatus, RecordSink};
use codendum_core::clock::Clock;
use codendum_core::openai::Transport;
use codendum_core::trace::Trace;

/// What a continuous replay did.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ContinuousOutcome {
    /// The largest class it held, students.
    pub largest: usize,
    /// Root sessions started (a session sent again counts again).
    pub sessions_started: usize,
    /// Whole passes through the trace begun after the first.
    pub passes_after_first: usize,
    /// Calls beyond the server's context: skipped, and shortened.
    pub too_long: (usize, usize),
    /// Seats whose task panicked.
    pub panicked: usize,
}

/// Replays `trace`'s root sessions as a class of the size `control` says
/// (see the module's notes) through `transport` on `clock`, until
/// `control`'s sender is dropped or `stop` turns true; then the calls in
/// flight finish. `config.schedule.users` and `start_part_way` are not
/// used: `control` sets the size.
pub async fn run_continuous_replay(
    trace: &Trace,
    config: &ReplayConfig,
    (transport, clock): (Arc<dyn Transport>, Clock),
    (sink, status): (Arc<dyn RecordSink>, Arc<LiveStatus>),
    control: watch::Receiver<ClassSize>,
    stop: Option<watch::Receiver<bool>>,
) -> ContinuousOutcome {
    let mut config = config.clone();
    if config.speed.is_nan() || config.speed <= 0.0 {
        config.speed = 1.0;
    }
    let join_seed = config.salt ^ 0xBB67_AE85_84CA_A73B;
    let shared = Arc::new(Shared::new(
        trace,
        config,
        (transport, clock),
        (sink.clone(), false),
        stop.clone(),
    ));
    if shared.roots.calls.is_empty() {
        return ContinuousOutcome::default();
    }
    let started = Arc::new(AtomicUsize::new(0));
    let (largest, panicked) = hold_seats(control, stop, join_seed, |_, join_s, leave| {
        let seat = Seat {
            shared: Arc::clone(&shared),
            status: Arc::clone(&status),
            sink: Arc::clone(&sink),
            started: Arc::clone(&started),
        };
        let join_s = shared.now() + join_s;
        tokio::spawn(seat.hold(join_s, leave))
    })
    .await;
    let n = started.load(Ordering::Relaxed);
    ContinuousOutcome {
        largest,
        sessions_started: n,
        passes_after_first: n.saturating_sub(1) / shared.roots.calls.len(),
        too_long: (
            shared.skipped.load(Ordering::Relaxed),
            shared.shortened.load(Ordering::Relaxed),
        ),
        panicked,
    }
}

/// One seat of the class and what it shares.
struct Seat {
    shared: Arc<Shared>,
    status: Arc<LiveStatus>,
    sink: Arc<dyn RecordSink>,
    /// Root sessions started by every seat: the next session to take, and
    /// the user its records name.
    started: Arc<AtomicUsize>,
}

impl Seat {
    /// Replays sessions from `join_s` (seconds since the replay started),
    /// one after another, until told to leave or stopped.
    async fn hold(self, join_s: f64, leave: watch::Receiver<bool>) {
        let shared = &self.shared;
        let n_roots = shared.roots.calls.len();
        // The seat's student joins at `join_s`: not counted before, and
        // gone if told to leave or stopped while waiting to join.
        let joined = shared
            .clock
            .sleep_until(Duration::from_secs_f64(shared.origin + join_s.max(0.0)));
        let mut told = leave.clone();
        tokio::select! {
            // In order: a run in virtual time is the same every time.
            biased;
            () = joined => {}
            _ = told.wait_for(|l| *l) => return,
            () = shared.until_stopped() => return,
        }
        let mut start_s = join_s;
        loop {
            if *leave.borrow() || shared.stopped() {
                break;
            }
            let k = self.started.fetch_add(1, Ordering::Relaxed);
            let (r, pass) = (k % n_roots, k / n_roots);
            let calls = &shared.roots.calls[r];
            let salt = shared.config.salt.wrapping_add(pass as u64);
            let mut run = RootRun::new(r, calls, start_s, k, salt);
            if pass > 0 {
                run.session_suffix = format!("~{pass}");
            }
            let run = run.continuous(
                leave.clone(),
                (Arc::clone(&self.status), Arc::clone(&self.sink)),
                calls.iter().filter_map(|&i| shared.calls[i].task),
            );
            self.status.student(true);
            run_calls(shared, Arc::new(run), 0).await;
            self.status.student(false);
            // A session none of whose calls went out (each beyond the
            // server's context) takes no time: a second before the next,
            // so a trace the server cannot hold does not spin.
            if shared.now() - start_s < 1.0 {
                shared.clock.sleep(Duration::from_secs(1)).await;
            }
            start_s = shared.now().max(start_s);
        }
    }
}
