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
use super::records::{CallRecord, RecordSink, TaskRecord};
use super::scenario::Scenario;
use super::session::{session_id, Conversation, Shared, Student};
use super::shell::ShellState;
use super::status::LiveStatus;
use super::workspace::Workspace;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::openai::Transport;
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

fn student_seed(seed: u64, user: usize) -> u64 {
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
    shared
        .status
        .active
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut start = offset;
    loop {
        rng = run_session(&shared, user, rng, start).await;
        // A class whose people go on to their next session: a pause, then
        // a new one while the window is open.
        if !person.next_session || shared.stopping() {
            break;
        }
        let pause = person.pause_s.sample(&mut rng).max(0.0);
        if shared.now() + pause >= config.duration.as_secs_f64() {
            break;
        }
        if !pause_for(&shared, pause).await {
            break;
        }
        start = shared.now();
    }
    shared
        .status
        .active
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
}

/// Sleeps `pause_s` as a pausing student; `false` when a stop cut it short.
async fn pause_for(shared: &Shared, pause_s: f64) -> bool {
    shared
        .status
        .pausing
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let slept = tokio::select! {
        _ = shared.clock.sleep(Duration::from_secs_f64(pause_s)) => true,
        _ = shared.stopped() => false,
    };
    shared
        .status
        .pausing
        .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    slept
}

/// One session of a student, started at `start_s` (seconds since the run's
/// origin): a new conversation and workspace, the exercise and the
/// follow-ups its class draws, with the class's pauses between, while the
/// window (and the session's own length) is open. Hands the student's
/// random source back.
async fn run_session(
    shared: &Shared,
    user: usize,
    mut rng: ChaCha8Rng,
    start_s: f64,
) -> ChaCha8Rng {
    let config = &shared.config;
    let person = &config.class.person;
    let mut shell = ShellState::new(
        config.scenario,
        config.class.agent.first_test_fails,
        Arc::clone(&shared.tool_s),
        &mut rng,
    );
    shell.client_times = config.client_times.clone();
    let follow_ups = person.follow_ups.sample_count(&mut rng) as usize;
    let session_end = person
        .session_s
        .as_ref()
        .map(|d| start_s + d.sample(&mut rng).max(0.0));
    let id = session_id(&mut rng);
    let mut conv = Conversation::main(config, id);
    let agent = &config.class.agent;
    if let Some(d) = &agent.prompt_tokens {
        // The class's first prompt: the system prompt grows by shared notes
        // up to the drawn size (with the tools and the exercise).
        let target = d.sample(&mut rng).max(0.0) as u64;
        let have = super::sizes::estimate(
            conv.system.len()
                + serde_json::to_string(&conv.tools).map_or(0, |t| t.len())
                + config.scenario.exercise().len(),
        );
        if target > have {
            conv.system.push_str("\n\n");
            conv.system.push_str(&super::sizes::notes(target - have, 0));
        }
    }
    conv.compact_at = agent
        .compact_at_tokens
        .as_ref()
        .map(|d| d.sample(&mut rng).max(1.0) as u64);
    let mut st = Student {
        user,
        key: config.key_for_user(user).cloned(),
        rng,
        workspace: Workspace::new(config.scenario),
        shell,
        titled: false,
    };
    // No new request once the window, or the student's session, is over.
    let window = session_end.map_or(config.duration.as_secs_f64(), |end| {
        end.min(config.duration.as_secs_f64())
    });
    for index in 0..=follow_ups {
        let text = request_text(config.scenario, index);
        if shared.now() >= window || shared.stopping() {
            break;
        }
        coding_request(shared, &mut st, &mut conv, index, text).await;
        if index == follow_ups {
            break;
        }
        let pause = person.pause_s.sample(&mut st.rng).max(0.0);
        if shared.now() + pause >= window || !pause_for(shared, pause).await {
            break;
        }
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
    let origin = clock.now_secs();
    status.start_at(origin);
    let shared = Arc::new(Shared {
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
    });
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
        summary: ClassroomSummary::from_records(config.users, &requests, &tasks),
        requests,
        tasks,
        key_note: config.key_sharing_note(),
    })
}
