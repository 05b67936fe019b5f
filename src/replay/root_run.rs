//! One run of a root session (a session with its subagents): what its calls
//! leave each other (when an answer ended, its conversation), whom its
//! records name, the salt of its text, and, in a continuous replay, when it
//! is told to leave and what it tells the class's live status.
//!
//! A call waits only for calls of its own root session, so each run keeps
//! its own channels: the same recorded session can run twice at once (a
//! class larger than the trace) without one run reading the other's
//! answers.
//!
//! A call's answer wakes the calls waiting for it in the order they began
//! to wait (a [`Notify`]), not in the random order of a `watch` channel's
//! waiters: calls woken at one instant then ask for their timers, and so
//! reach the server, in the same order every run, which keeps a run in
//! virtual time the same from run to run when several calls share a start
//! (recorded waits capped to one length).

use std::collections::{BTreeMap, HashMap};
use std::pin::pin;
use std::sync::{Arc, Mutex};

use tokio::sync::{watch, Notify};

use super::sent::Sent;
use crate::classroom::status::{LiveStatus, Open, RunningTask};
use crate::classroom::RecordSink;
use codendum_core::openai::FirstToken;
use codendum_core::results::classroom_records::{CallKind, CallRecord, TaskOutcome, TaskRecord};

/// One run of root session `r`.
pub(super) struct RootRun {
    /// The root session's index in the trace's roots.
    pub r: usize,
    /// When it started, seconds since the replay started.
    pub start_s: f64,
    /// The user its records name.
    pub user: usize,
    /// The salt of its synthetic text.
    pub salt: u64,
    /// Appended to its session ids (a session sent again is a new session
    /// to the server).
    pub session_suffix: String,
    /// What each of its calls left, by call index.
    sent: HashMap<usize, Published>,
    /// Turns true when it is told to leave (a class that shrinks).
    leave: Option<watch::Receiver<bool>>,
    /// Its coding requests told to a class's live status as they go.
    live: Option<LiveTasks>,
}

/// What one call left, once it has ended, and the calls waiting for it.
#[derive(Default)]
struct Published {
    value: Mutex<Option<Arc<Sent>>>,
    ended: Notify,
}

impl Published {
    fn get(&self) -> Option<Arc<Sent>> {
        self.value.lock().ok().and_then(|v| v.clone())
    }
}

/// A run's coding requests as they go: each opened at its first call,
/// recorded (and closed) when its last call ends.
struct LiveTasks {
    status: Arc<LiveStatus>,
    sink: Arc<dyn RecordSink>,
    tasks: Mutex<HashMap<usize, OpenTask>>,
}

/// A coding request of a run under way.
struct OpenTask {
    /// Its calls not yet ended.
    left: usize,
    /// Its calls ended so far.
    records: Vec<CallRecord>,
    /// Its place in the live status, once its first call went out.
    open: Option<Open>,
}

impl RootRun {
    /// A run of root `r`, whose calls are `calls` (indices into the
    /// trace), from `start_s`, recorded as `user`.
    pub fn new(r: usize, calls: &[usize], start_s: f64, user: usize, salt: u64) -> Self {
        RootRun {
            r,
            start_s,
            user,
            salt,
            session_suffix: String::new(),
            sent: calls.iter().map(|&i| (i, Published::default())).collect(),
            leave: None,
            live: None,
        }
    }

    /// The same run told to leave through `leave`, and telling `status`
    /// and `sink` of its coding requests as they go; `tasks` is each
    /// call's coding request (by call index), when the trace says.
    pub fn continuous(
        mut self,
        leave: watch::Receiver<bool>,
        (status, sink): (Arc<LiveStatus>, Arc<dyn RecordSink>),
        tasks: impl Iterator<Item = usize>,
    ) -> Self {
        let mut open: HashMap<usize, OpenTask> = HashMap::new();
        for t in tasks {
            open.entry(t)
                .or_insert(OpenTask {
                    left: 0,
                    records: Vec::new(),
                    open: None,
                })
                .left += 1;
        }
        self.leave = Some(leave);
        self.live = Some(LiveTasks {
            status,
            sink,
            tasks: Mutex::new(open),
        });
        self
    }

    /// Whether it was told to leave: it sends nothing more.
    pub fn leaving(&self) -> bool {
        self.leave.as_ref().is_some_and(|l| *l.borrow())
    }

    /// Waits until it is told to leave (never, outside a continuous
    /// replay).
    pub async fn left(&self) {
        match self.leave.clone() {
            Some(mut l) => {
                let _ = l.wait_for(|v| *v).await;
            }
            None => std::future::pending::<()>().await,
        }
    }

    /// Publishes what call `i` left for the calls that wait for it.
    pub fn publish(&self, i: usize, sent: Sent) {
        if let Some(p) = self.sent.get(&i) {
            if let Ok(mut v) = p.value.lock() {
                *v = Some(Arc::new(sent));
            }
            p.ended.notify_waiters();
        }
    }

    /// What call `i` left, once it has ended (`None` for a call of
    /// another root, which nothing here waits for).
    pub async fn answer_of(&self, i: usize) -> Option<Arc<Sent>> {
        let p = self.sent.get(&i)?;
        loop {
            // Waiting before looking, so that an answer published in
            // between still wakes this call.
            let mut ended = pin!(p.ended.notified());
            ended.as_mut().enable();
            if let Some(v) = p.get() {
                return Some(v);
            }
            ended.await;
        }
    }

    /// What call `i` left, if it has ended.
    pub fn answered(&self, i: usize) -> Option<Arc<Sent>> {
        self.sent.get(&i).and_then(Published::get)
    }

    /// Notes a call going out at `started_s`, whose transport tells
    /// `first_token`: the live status's call, and its coding request's
    /// start when it is the first; hand the call back to
    /// [`RootRun::call_ended`].
    pub fn call_started(
        &self,
        task: Option<usize>,
        started_s: f64,
        first_token: &FirstToken,
    ) -> Option<Open> {
        let live = self.live.as_ref()?;
        live.status.attempt(true);
        if let (Some(t), Ok(mut tasks)) = (task, live.tasks.lock()) {
            if let Some(open) = tasks.get_mut(&t).filter(|o| o.open.is_none()) {
                open.open = Some(live.status.task_opened(RunningTask {
                    user: self.user,
                    index: t,
                    start_s: started_s,
                }));
            }
        }
        Some(live.status.call_opened(started_s, first_token.clone()))
    }

    /// Notes a call ended with `record` (already written): its coding
    /// request is recorded when it was the request's last call.
    pub fn call_ended(&self, task: Option<usize>, record: &CallRecord, open: Option<Open>) {
        let Some(live) = self.live.as_ref() else {
            return;
        };
        let status = &live.status;
        status.attempt(false);
        status.call_recorded(record);
        let finished = task.and_then(|t| {
            let mut tasks = live.tasks.lock().ok()?;
            let open = tasks.get_mut(&t)?;
            open.records.push(record.clone());
            open.left = open.left.saturating_sub(1);
            if open.left == 0 {
                tasks.remove(&t)
            } else {
                None
            }
        });
        if let Some(done) = finished {
            self.record_task(live, done, None);
        }
        if let Some(o) = open {
            status.closed(o);
        }
    }

    /// Notes a call of coding request `task` passed over (not sent): the
    /// request ends without it, cut off when `cut` (the run was stopped or
    /// told to leave) rather than skipped.
    pub fn call_passed(&self, task: Option<usize>, cut: bool) {
        let Some(live) = self.live.as_ref() else {
            return;
        };
        let finished = task.and_then(|t| {
            let mut tasks = live.tasks.lock().ok()?;
            let open = tasks.get_mut(&t)?;
            open.left = open.left.saturating_sub(1);
            (open.left == 0).then(|| tasks.remove(&t)).flatten()
        });
        if let Some(done) = finished {
            let cut = (cut || self.leaving()).then_some(TaskOutcome::CutOff);
            self.record_task(live, done, cut);
        }
    }

    /// Records a coding request that ended (from its calls; `outcome`
    /// overrides theirs) and closes it in the live status. A request none
    /// of whose calls went out is not one.
    fn record_task(&self, live: &LiveTasks, done: OpenTask, outcome: Option<TaskOutcome>) {
        let record = tasks_of(&done.records).into_iter().next().map(|mut t| {
            if let Some(o) = outcome {
                t.outcome = o;
            }
            t
        });
        if let Some(t) = record.filter(|t| t.calls > 0) {
            let _ = live.sink.task(&t);
            live.status.task_recorded(t.outcome);
        }
        if let Some(o) = done.open {
            live.status.closed(o);
        }
    }

    /// Ends the run: a coding request still open (its calls not all
    /// ended, the run left part-way) is recorded as cut off.
    pub fn finish(&self) {
        let Some(live) = self.live.as_ref() else {
            return;
        };
        let open: Vec<OpenTask> = live
            .tasks
            .lock()
            .map(|mut t| t.drain().map(|(_, o)| o).collect())
            .unwrap_or_default();
        for done in open {
            self.record_task(live, done, Some(TaskOutcome::CutOff));
        }
    }
}

/// The session a call of `run` is recorded and sent under: the recorded
/// one (or `call-<i>` without one) with the run's suffix.
pub(super) fn session_name(session: Option<&str>, i: usize, run: &RootRun) -> String {
    match session {
        Some(s) => format!("{s}{}", run.session_suffix),
        None => format!("call-{i}{}", run.session_suffix),
    }
}

/// The coding requests of replayed calls: per (user, task), from the first
/// call's start to the last one's end; completed when every call succeeded.
pub fn tasks_of(records: &[CallRecord]) -> Vec<TaskRecord> {
    let mut groups: BTreeMap<(usize, usize), Vec<&CallRecord>> = BTreeMap::new();
    for r in records {
        groups.entry((r.user, r.task)).or_default().push(r);
    }
    groups
        .into_iter()
        .map(|((user, index), calls)| {
            let failed = calls.iter().find(|r| !r.is_ok());
            TaskRecord {
                user,
                index,
                start: calls.iter().map(|r| r.started_at).fold(f64::MAX, f64::min),
                end: calls
                    .iter()
                    .map(|r| r.started_at + r.wait_s)
                    .fold(0.0, f64::max),
                model_time_s: TaskRecord::model_time_of(calls.iter().copied()),
                calls: calls.len(),
                output_tokens: calls.iter().map(|r| r.output_tokens).sum(),
                tool_calls: 0,
                tool_errors: 0,
                compactions: calls
                    .iter()
                    .filter(|r| r.kind == CallKind::Compaction)
                    .count(),
                outcome: if failed.is_some() {
                    TaskOutcome::Failed
                } else {
                    TaskOutcome::Completed
                },
                error_kind: failed.and_then(|r| r.error_kind),
            }
        })
        .collect()
}
