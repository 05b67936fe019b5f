//! The students and the load shape: each student starts within the ramp-up,
//! sends the lab exercise and the follow-ups its class draws (the
//! scenario's follow-ups in turn), with the class's pauses between, while
//! the window for new coding requests (and the student's own session
//! length, when the class has one) is open; requests in flight at its end
//! finish. A class whose people go on to a next session (recorded
//! conversations: a user starts another when one ends) has each student
//! start a new session, after a pause, while the window is open.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::agent::coding_request;
use super::config::ClassroomConfig;
use super::records::RecordSink;
use super::scenario::Scenario;
use super::session::{session_id, Conversation, Shared, Student};
use super::shell::ShellState;
use super::status::LiveStatus;
use super::workspace::Workspace;
use codendum_core::class::sessions;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::openai::Transport;
use codendum_core::results::classroom_records::{CallRecord, TaskRecord};
use codendum_core::results::classroom_summary::ClassroomSummary;

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
    let person = &config.class.person;
    shared
        .clock
        .sleep_until(Duration::from_secs_f64(shared.origin + offset))
        .await;
    shared.status.student(true);
    let mut session = Session {
        user,
        key_index: user,
        start_s: offset,
        window_s: config.duration.as_secs_f64(),
        leave: None,
    };
    loop {
        rng = one_session(&shared, &session, rng).await;
        // A class whose people go on to their next session: a pause, then
        // a new one while the window is open.
        if !person.next_session || shared.stopping() {
            break;
        }
        let pause = person.pause_s.sample(&mut rng).max(0.0);
        if shared.now() + pause >= config.duration.as_secs_f64() {
            break;
        }
        if !pause_for(&shared, pause, None).await {
            break;
        }
        session.start_s = shared.now();
    }
    shared.status.student(false);
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

/// Runs one student's session to its end, for a class whose size changes
/// while it runs: waits for the session's start (or leaves before it), the
/// exercise and its follow-ups with pauses between, until the window
/// closes, a stop, or the student is told to leave.
pub(crate) async fn run_session(shared: &Shared, session: Session, rng: ChaCha8Rng) {
    let start = shared
        .clock
        .sleep_until(Duration::from_secs_f64(shared.origin + session.start_s));
    match session.leave.clone() {
        Some(mut leave) => tokio::select! {
            // In order: a run in virtual time is the same every time.
            biased;
            _ = start => {}
            _ = leave.wait_for(|l| *l) => return,
        },
        None => start.await,
    }
    shared.status.student(true);
    one_session(shared, &session, rng).await;
    shared.status.student(false);
}

/// Sleeps `pause_s` as a pausing student; `false` when a stop, or the
/// student's `leave`, cut it short.
async fn pause_for(
    shared: &Shared,
    pause_s: f64,
    leave: Option<tokio::sync::watch::Receiver<bool>>,
) -> bool {
    shared.status.pausing(true);
    let left = async {
        if let Some(mut l) = leave {
            if l.wait_for(|v| *v).await.is_ok() {
                return;
            }
        }
        std::future::pending::<()>().await
    };
    let slept = tokio::select! {
        // In order: a run in virtual time is the same every time.
        biased;
        _ = shared.clock.sleep(Duration::from_secs_f64(pause_s)) => true,
        _ = shared.stopped() => false,
        _ = left => false,
    };
    shared.status.pausing(false);
    slept
}

/// One session of a student, started at `session.start_s` (seconds since
/// the run's origin): a new conversation and workspace, the exercise and
/// the follow-ups its class draws, with the class's pauses between, while
/// the session's window (and its own length) is open and the student is
/// not told to leave. Hands the student's random source back.
async fn one_session(shared: &Shared, session: &Session, mut rng: ChaCha8Rng) -> ChaCha8Rng {
    let (user, start_s) = (session.user, session.start_s);
    let config = &shared.config;
    let person = &config.class.person;
    let mut shell = ShellState::new(
        config.scenario,
        config.class.agent.first_test_fails,
        Arc::clone(&shared.tool_s),
        &mut rng,
    );
    shell.client_times = config.client_times.clone();
    let mut follow_ups = person.follow_ups.sample_count(&mut rng) as usize;
    let session_end = person
        .session_s
        .as_ref()
        .map(|d| start_s + d.sample(&mut rng).max(0.0));
    let id = session_id(&mut rng);
    let mut conv = Conversation::main(config, id);
    let agent = &config.class.agent;
    if !agent.prompt_tokens_by_call.is_empty() {
        conv.growth_rank = Some(rng.gen());
    }
    let first_prompt = match conv.growth_rank {
        Some(u) => agent.prompt_tokens_at(0, u),
        None => agent.prompt_tokens.as_ref().map(|d| d.sample(&mut rng)),
    };
    if let Some(target) = first_prompt {
        // The class's first prompt: the system prompt grows by notes up to
        // the drawn size (with the tools and the exercise); notes every
        // session shares up to the class's shared head, the session's own
        // after it (all shared when the class does not say).
        let target = target.max(0.0) as u64;
        let have = super::sizes::estimate(
            conv.system.len()
                + serde_json::to_string(&conv.tools).map_or(0, |t| t.len())
                + config.scenario.exercise().len(),
        );
        if target > have {
            let missing = target - have;
            let shared = agent.shared_prompt_tokens.as_ref().map_or(missing, |d| {
                (d.sample(&mut rng).max(0.0) as u64)
                    .saturating_sub(have)
                    .min(missing)
            });
            conv.system.push_str("\n\n");
            conv.system.push_str(&super::sizes::notes(shared, 0));
            let own = missing - shared;
            if own > 0 {
                let tag = conv.id.clone();
                conv.system.push_str(&super::sizes::own_notes(own, &tag));
            }
        }
    }
    conv.compact_at = agent
        .compact_at_tokens
        .as_ref()
        .map(|d| d.sample(&mut rng).max(1.0) as u64);
    let mut st = Student {
        user,
        key: config.key_for_user(session.key_index).cloned(),
        rng,
        workspace: Workspace::new(config.scenario),
        shell,
        titled: false,
        leave: session.leave.clone(),
    };
    // No new request once the window, or the student's session, is over.
    let window = session_end.map_or(session.window_s, |end| end.min(session.window_s));
    let mut index = 0;
    loop {
        let text = request_text(config.scenario, index);
        if shared.now() >= window || shared.stopping() || st.leaving() {
            break;
        }
        coding_request(shared, &mut st, &mut conv, index, text).await;
        if index == 0 {
            // A class that draws sessions whole: the session's row, picked
            // from its first answer as the model picks it (kept apart, as a
            // compaction replaces it in the conversation), says how many
            // requests it makes.
            if let (Some(shapes), Some(first)) = (&agent.sessions, &conv.first_answer) {
                follow_ups = sessions::row_for(shapes, first).len() - 1;
            }
        }
        if index >= follow_ups {
            break;
        }
        let pause = person.pause_s.sample(&mut st.rng).max(0.0);
        if shared.now() + pause >= window || !pause_for(shared, pause, st.leave.clone()).await {
            break;
        }
        index += 1;
    }
    st.rng
}

/// The text of coding request `index`: the exercise, then the scenario's
/// follow-ups, asked again in turn past the last.
fn request_text(scenario: Scenario, index: usize) -> &'static str {
    let follow_ups = scenario.follow_ups();
    match index {
        0 => scenario.exercise(),
        i => follow_ups[(i - 1) % follow_ups.len()],
    }
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
    let shared = start_shared(
        config,
        transport,
        clock,
        (sink, status),
        stop,
        config.duration.as_secs_f64(),
    );
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
    window_end_s: f64,
) -> Arc<Shared> {
    let origin = clock.now_secs();
    status.start_at(origin);
    Arc::new(Shared {
        tool_s: Arc::new(config.class.agent.tool_s.clone()),
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
        window_end_s,
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
