//! A class that holds the size it is told, for as long as it runs: the
//! load of `codendum capacity`, which moves one class from size to size
//! instead of starting a class per size.
//!
//! - Each place in the class (a *seat*) has one student at a time. When a
//!   student's session ends (the exercise and the follow-ups it drew), a
//!   new student takes the seat after one pause, with a fresh session, so
//!   the class holds its size.
//! - A larger size adds seats: their students join spread evenly (seeded)
//!   over [`ClassSize::join_over_s`].
//! - A smaller size retires the highest seats: their students finish the
//!   model call in flight and leave (the coding request is recorded as cut
//!   off); a student pausing leaves at once.
//! - The class ends when its control is dropped (or on a stop): every
//!   student leaves after the call in flight; the caller bounds that wait.
//!
//! Every session is a student of its own in the records (`user` counts
//! sessions in the order they started); a seat's students share the seat's
//! API key.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;

use super::config::ClassroomConfig;
use super::driver::{finish, run_session, start_shared, student_seed, ClassroomOutcome, Session};
use super::records::RecordSink;
use super::session::Shared;
use super::status::LiveStatus;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::openai::Transport;

/// The size a continuous class is told to hold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClassSize {
    /// Students.
    pub students: usize,
    /// New students join spread evenly over this many seconds from the
    /// change (0: at once).
    pub join_over_s: f64,
}

/// One seat's current student and how to tell it to leave.
struct Seat {
    leave: watch::Sender<bool>,
    task: tokio::task::JoinHandle<()>,
}

/// Runs a continuous class of `config`'s students (its `users`,
/// `duration` and `ramp_up` are not used: `control` sets the size) against
/// `transport` until `control`'s sender is dropped or `stop` turns true,
/// then lets every student finish the call in flight. Records go to `sink`
/// as they finish.
pub async fn run_continuous_class(
    config: &ClassroomConfig,
    transport: Arc<dyn Transport>,
    clock: Clock,
    (sink, status): (Arc<dyn RecordSink>, Arc<LiveStatus>),
    control: watch::Receiver<ClassSize>,
    stop: Option<watch::Receiver<bool>>,
) -> Result<ClassroomOutcome, Error> {
    let shared = start_shared(
        config,
        transport,
        clock,
        (sink, status),
        stop.clone(),
        f64::INFINITY,
    );
    let sessions = Arc::new(AtomicUsize::new(0));
    let join_seed = config.seed ^ 0x6A09_E667_F3BC_C908;
    let (largest, panicked) = hold_seats(control, stop, join_seed, |k, join_s, leave| {
        tokio::spawn(hold_seat(
            Arc::clone(&shared),
            k,
            shared.now() + join_s,
            leave,
            Arc::clone(&sessions),
        ))
    })
    .await;
    finish(&shared, largest, panicked)
}

/// Holds the size `control` says until its sender is dropped or `stop`
/// turns true, then tells every seat to leave and waits for them. A seat
/// is filled by `occupy(seat, join_s, leave)`, whose task keeps it from
/// `join_s` seconds on (drawn with `join_seed` over the size's join
/// spread) until `leave` turns true. Returns the largest size held and
/// the seats whose task panicked.
pub(crate) async fn hold_seats(
    mut control: watch::Receiver<ClassSize>,
    stop: Option<watch::Receiver<bool>>,
    join_seed: u64,
    mut occupy: impl FnMut(usize, f64, watch::Receiver<bool>) -> tokio::task::JoinHandle<()>,
) -> (usize, usize) {
    let mut join_rng = ChaCha8Rng::seed_from_u64(join_seed);
    let mut seats: Vec<Option<Seat>> = Vec::new();
    let mut largest = 0;
    loop {
        let size = *control.borrow_and_update();
        largest = largest.max(size.students);
        resize(&mut seats, size, &mut join_rng, &mut occupy);
        let stopped = async {
            match stop.clone() {
                Some(mut s) => {
                    let _ = s.wait_for(|v| *v).await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        tokio::select! {
            // In order: a run in virtual time is the same every time.
            biased;
            changed = control.changed() => if changed.is_err() { break },
            _ = stopped => break,
        }
    }
    let mut panicked = 0;
    for seat in seats.iter().flatten() {
        let _ = seat.leave.send(true);
    }
    for seat in seats.into_iter().flatten() {
        if seat.task.await.is_err() {
            panicked += 1;
        }
    }
    (largest, panicked)
}

/// Fills the seats below `size.students` that are empty or leaving, and
/// tells those above it to leave.
fn resize(
    seats: &mut Vec<Option<Seat>>,
    size: ClassSize,
    join_rng: &mut ChaCha8Rng,
    occupy: &mut impl FnMut(usize, f64, watch::Receiver<bool>) -> tokio::task::JoinHandle<()>,
) {
    if seats.len() < size.students {
        seats.resize_with(size.students, || None);
    }
    for (k, slot) in seats.iter_mut().enumerate() {
        let seated = slot.as_ref().is_some_and(|s| !*s.leave.borrow());
        if k < size.students && !seated {
            let join_s = if size.join_over_s > 0.0 {
                join_rng.gen_range(0.0..=size.join_over_s)
            } else {
                0.0
            };
            let (tx, rx) = watch::channel(false);
            let task = occupy(k, join_s, rx);
            // A student still leaving this seat finishes on its own.
            *slot = Some(Seat { leave: tx, task });
        } else if k >= size.students && seated {
            if let Some(s) = slot {
                let _ = s.leave.send(true);
            }
        }
    }
}

/// One seat: a student from `join_s` (seconds since the run started), and
/// a new one after a pause each time a session ends, until told to leave.
async fn hold_seat(
    shared: Arc<Shared>,
    seat: usize,
    join_s: f64,
    leave: watch::Receiver<bool>,
    sessions: Arc<AtomicUsize>,
) {
    let config = &shared.config;
    let mut start_s = join_s;
    for generation in 0u64.. {
        if *leave.borrow() || shared.stopping() {
            break;
        }
        let user = sessions.fetch_add(1, Ordering::Relaxed);
        // A seed of its own for every student of every seat.
        let seed =
            student_seed(config.seed, seat) ^ (generation + 1).wrapping_mul(0x94D0_49BB_1331_11EB);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        // The next student sits down after one pause.
        let pause = config.class.person.pause_s.sample(&mut rng).max(0.0);
        let session = Session {
            user,
            key_index: seat,
            start_s,
            window_s: f64::INFINITY,
            leave: Some(leave.clone()),
        };
        run_session(&shared, session, rng).await;
        start_s = shared.now() + pause;
    }
}
