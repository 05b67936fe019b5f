//! The students and the load shape: each student starts within the ramp-up,
//! sends the lab exercise and up to three follow-ups with pauses between,
//! while the window for new coding requests is open; requests in flight at
//! its end finish.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::agent::coding_request;
use super::config::ClassroomConfig;
use super::records::{CallRecord, RecordSink, TaskRecord};
use super::session::{session_id, Conversation, Shared, Student};
use super::shell::ShellState;
use super::status::LiveStatus;
use super::summary::ClassroomSummary;
use super::workspace::Workspace;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::openai::Transport;

/// What a finished run returns: its summary and every record (in the order
/// they finished). The summary's server figures are left empty for the
/// caller to fill from the `/metrics` sampler.
#[derive(Debug, Clone)]
pub struct ClassroomOutcome {
    /// The run's figures.
    pub summary: ClassroomSummary,
    /// Every model call.
    pub requests: Vec<CallRecord>,
    /// Every coding request.
    pub tasks: Vec<TaskRecord>,
    /// Set when students share API keys (see
    /// [`ClassroomConfig::key_sharing_note`]).
    pub key_note: Option<String>,
}

pub(crate) fn student_seed(seed: u64, user: usize) -> u64 {
    seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (user as u64 + 1).wrapping_mul(0xBF58_476D_1CE4_E5B9)
}

async fn run_student(shared: Arc<Shared>, user: usize) {
    let config = &shared.config;
    let mut rng = ChaCha8Rng::seed_from_u64(student_seed(config.seed, user));
    let offset = rng.gen_range(0.0..=config.ramp_up.as_secs_f64());
    let session = Session {
        user,
        key_index: user,
        start_s: offset,
        window_s: config.duration.as_secs_f64(),
        leave: None,
    };
    run_session(&shared, session, rng).await;
}

/// One student's session in a run: who the student is, when the session
/// starts and stops taking new requests, and whether it is told to leave.
pub(crate) struct Session {
    /// The student's number in the records.
    pub user: usize,
    /// Whose API key the student uses ([`ClassroomConfig::key_for_user`]).
    pub key_index: usize,
    /// When the student starts, seconds since the run started.
    pub start_s: f64,
    /// No new coding request after this, seconds since the run started.
    pub window_s: f64,
    /// Turns true when the student is to leave: the call in flight ends,
    /// and nothing new starts.
    pub leave: Option<tokio::sync::watch::Receiver<bool>>,
}

/// Runs one student's session to its end: the exercise and its
/// follow-ups, with pauses between, until the window closes, a stop, or
/// the student is told to leave.
pub(crate) async fn run_session(shared: &Shared, session: Session, mut rng: ChaCha8Rng) {
    let config = &shared.config;
    let user = session.user;
    let offset = session.start_s;
    let mut shell = ShellState::new(config.scenario, &mut rng);
    shell.client_times = config.client_times.clone();
    let id = session_id(&mut rng);
    let start = shared
        .clock
        .sleep_until(Duration::from_secs_f64(shared.origin + offset));
    match session.leave.clone() {
        Some(mut leave) => tokio::select! {
            _ = start => {}
            _ = leave.wait_for(|l| *l) => return,
        },
        None => start.await,
    }
    shared
        .status
        .active
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut conv = Conversation::main(config, id);
    let mut st = Student {
        user,
        key: config.key_for_user(session.key_index).cloned(),
        rng,
        workspace: Workspace::new(config.scenario),
        shell,
        titled: false,
        leave: session.leave,
    };
    let window = session.window_s;
    for index in 0..=config.follow_ups {
        let Some(text) = config.scenario.request(index) else {
            break;
        };
        if shared.now() >= window || shared.stopping() || st.leaving() {
            break;
        }
        coding_request(shared, &mut st, &mut conv, index, text).await;
        if index == config.follow_ups {
            break;
        }
        let pause = st
            .rng
            .gen_range(config.pause_min.as_secs_f64()..=config.pause_max.as_secs_f64());
        if shared.now() + pause >= window {
            break;
        }
        shared
            .status
            .pausing
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        tokio::select! {
            _ = shared.clock.sleep(Duration::from_secs_f64(pause)) => {}
            _ = shared.stopped() => {}
            _ = st.left() => {}
        }
        shared
            .status
            .pausing
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
    shared
        .status
        .active
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
}

/// Runs a classroom: `config.users` students against `transport`, timed on
/// `clock`, records written to `sink` as they finish, live figures in
/// `status` (render [`LiveStatus::snapshot`] every second). Returns when the
/// window for new requests has closed and every request has finished.
///
/// Errors: [`Error::Config`] for an invalid configuration (before anything
/// is sent); [`Error::Io`] when the sink failed to write a record (the run
/// still went to its end); [`Error::Failed`] if a student task panicked.
pub async fn run_classroom(
    config: &ClassroomConfig,
    transport: Arc<dyn Transport>,
    clock: Clock,
    sink: Arc<dyn RecordSink>,
    status: Arc<LiveStatus>,
) -> Result<ClassroomOutcome, Error> {
    run_classroom_until(config, transport, clock, sink, status, None).await
}

/// [`run_classroom`] that also ends early once `stop` turns true (Ctrl-C):
/// from then on no student starts another model call or coding request and
/// a student pausing between requests leaves; the calls in flight go on to
/// their end (the caller bounds that with its grace). A dropped sender is
/// read as "never stop".
pub async fn run_classroom_until(
    config: &ClassroomConfig,
    transport: Arc<dyn Transport>,
    clock: Clock,
    sink: Arc<dyn RecordSink>,
    status: Arc<LiveStatus>,
    stop: Option<tokio::sync::watch::Receiver<bool>>,
) -> Result<ClassroomOutcome, Error> {
    let shared = start_shared(config, transport, clock, (sink, status), stop);
    let mut students = tokio::task::JoinSet::new();
    for user in 0..config.users {
        students.spawn(run_student(Arc::clone(&shared), user));
    }
    let mut panicked = 0;
    while let Some(done) = students.join_next().await {
        if done.is_err() {
            panicked += 1;
        }
    }
    finish(&shared, config.users, panicked)
}

/// What every student of a run shares, the run starting now.
pub(crate) fn start_shared(
    config: &ClassroomConfig,
    transport: Arc<dyn Transport>,
    clock: Clock,
    (sink, status): (Arc<dyn RecordSink>, Arc<LiveStatus>),
    stop: Option<tokio::sync::watch::Receiver<bool>>,
) -> Arc<Shared> {
    let origin = clock.now_secs();
    status.start_at(origin);
    Arc::new(Shared {
        config: config.clone(),
        transport,
        clock,
        sink,
        status,
        origin,
        requests: Mutex::new(Vec::new()),
        tasks: Mutex::new(Vec::new()),
        sink_error: Mutex::new(None),
        stop,
    })
}

/// The outcome of a run whose students are done (`panicked` of them
/// stopped unexpectedly); `users`: the class size its summary states.
pub(crate) fn finish(
    shared: &Shared,
    users: usize,
    panicked: usize,
) -> Result<ClassroomOutcome, Error> {
    if panicked > 0 {
        return Err(Error::Failed(format!(
            "{panicked} simulated students stopped unexpectedly"
        )));
    }
    if let Some(e) = shared.sink_error.lock().ok().and_then(|mut s| s.take()) {
        return Err(Error::io("writing classroom records", e));
    }
    let requests = shared
        .requests
        .lock()
        .map(|v| v.clone())
        .unwrap_or_default();
    let tasks = shared.tasks.lock().map(|v| v.clone()).unwrap_or_default();
    Ok(ClassroomOutcome {
        summary: ClassroomSummary::from_records(users, &requests, &tasks),
        requests,
        tasks,
        key_note: shared.config.key_sharing_note(),
    })
}
