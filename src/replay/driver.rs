//! Sends a trace again, session by session: every call with a prompt of its
//! recorded size built from its blocks ([`codendum_core::trace::text`]), its
//! recorded output length (`max_tokens` = `min_tokens`, `ignore_eos`), its
//! session headers and its timing ([`super::call`]).
//!
//! Sessions are a trace's root sessions (a session with its subagents; a
//! call without a session is a root of its own). They start either
//! - at their recorded offsets (the default): the class as it was, every
//!   session at the time it started in the recording, `speed` dividing the
//!   timeline; or
//! - as users (`users` = N): N sessions run at once from the start, and
//!   when one finishes (every call of it answered) the next of the trace
//!   starts, until the trace is done. With `start_part_way`, the first N
//!   start part-way through their calls (the i-th at i/N of them), so the
//!   server sees sessions at every stage from the start, as in a class
//!   that has been going for a while; the calls before a session's start
//!   are not sent, and the first call sent is sent whole (its history is
//!   not in the server's cache, as after an eviction).
//!
//! What the run learns besides the records: the theoretical prefix-cache
//! hit rate of what it sent ([`codendum_core::trace::theory`], fed in the
//! order the calls went out), and the calls the server's context could not
//! hold (skipped, or shortened from the front).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use tokio::sync::watch;

use super::call::{self, Shared, SizeCheck};
use super::config::ReplayConfig;
use super::root_run::{tasks_of, RootRun};
use super::sent::Sent;
use crate::classroom::RecordSink;
use codendum_core::clock::Clock;
use codendum_core::openai::Transport;
use codendum_core::results::classroom_records::{CallRecord, TaskRecord};
use codendum_core::trace::Trace;

/// What a replay returns: every call's record and every coding request's,
/// and what the run learnt.
#[derive(Debug, Clone, Default)]
pub struct ReplayOutcome {
    /// The calls, in the order they finished.
    pub requests: Vec<CallRecord>,
    /// The coding requests (where the trace tells them).
    pub tasks: Vec<TaskRecord>,
    /// Users: the sessions run at once (`users`), else the root sessions
    /// (calls without a session counting as one).
    pub users: usize,
    /// Root sessions started.
    pub sessions_started: usize,
    /// Prompt tokens a cache that keeps everything serves of what was sent
    /// (the theoretical hit), and the prompt tokens sent, as recorded.
    pub theoretical_tokens: (u64, u64),
    /// Calls beyond the server's context: skipped, and shortened.
    pub too_long: (usize, usize),
    /// Calls not sent because their session started part-way.
    pub before_part_way: usize,
    /// The prompts the server counted against their recorded size.
    pub sizes: SizeCheck,
    /// As users: the stretch the server saw a steady load (seconds since
    /// the replay started): from the start when the first sessions started
    /// part-way, else from when the first session was replaced, to when
    /// the last session started (after it, fewer sessions run); `None` when
    /// no session was replaced (the whole replay).
    pub steady_s: Option<(f64, f64)>,
}

impl ReplayOutcome {
    /// The theoretical prefix-cache hit rate of what was sent (fraction
    /// 0–1); `None` when nothing was.
    pub fn theoretical_hit_rate(&self) -> Option<f64> {
        let (hit, all) = self.theoretical_tokens;
        (all > 0).then(|| hit as f64 / all as f64)
    }
}

/// Runs root session `r` from `start_s` (seconds since the replay
/// started) as its recorded user, its first `from` calls not sent.
async fn run_root(shared: Arc<Shared>, r: usize, start_s: f64, from: usize) {
    let calls = &shared.roots.calls[r];
    let run = RootRun::new(r, calls, start_s, shared.roots.user[r], shared.config.salt);
    run_calls(&shared, Arc::new(run), from).await;
}

/// Sends the calls of `run`'s root session, its first `from` not sent,
/// and waits for them all.
pub(super) async fn run_calls(shared: &Arc<Shared>, run: Arc<RootRun>, from: usize) {
    let mut set = tokio::task::JoinSet::new();
    for (pos, &i) in shared.roots.calls[run.r].iter().enumerate() {
        if pos < from {
            shared.before_part_way.fetch_add(1, Ordering::Relaxed);
            run.publish(i, Sent::not_sent(run.start_s));
            continue;
        }
        set.spawn(call::send(shared.clone(), run.clone(), i));
    }
    while set.join_next().await.is_some() {}
    run.finish();
}

/// Replays `trace` through `transport` on `clock`; records go to `sink` as
/// calls finish. Once `stop` turns true no further call is sent and no
/// further session started (those in flight finish).
pub async fn run_replay(
    trace: &Trace,
    config: &ReplayConfig,
    transport: Arc<dyn Transport>,
    clock: Clock,
    sink: Arc<dyn RecordSink>,
    stop: Option<watch::Receiver<bool>>,
) -> ReplayOutcome {
    let mut config = config.clone();
    if config.speed.is_nan() || config.speed <= 0.0 {
        config.speed = 1.0;
    }
    let shared = Arc::new(Shared::new(
        trace,
        config,
        (transport, clock),
        (sink.clone(), true),
        stop,
    ));
    let user_count = shared.roots.user_count();
    let n_roots = shared.roots.calls.len();
    let mut running = tokio::task::JoinSet::new();
    let mut started = 0usize;
    let mut replaced: Option<(f64, f64)> = None;
    match shared.config.schedule.users {
        None => {
            let speed = shared.config.speed;
            for r in 0..n_roots {
                running.spawn(run_root(shared.clone(), r, shared.roots.at_s[r] / speed, 0));
            }
            started = n_roots;
        }
        Some(n) => {
            let n = n.max(1);
            while started < n.min(n_roots) {
                let from = if shared.config.schedule.start_part_way {
                    shared.roots.calls[started].len() * started / n
                } else {
                    0
                };
                running.spawn(run_root(shared.clone(), started, 0.0, from));
                started += 1;
            }
            while running.join_next().await.is_some() {
                if started < n_roots && !shared.stopped() {
                    let now = shared.now();
                    running.spawn(run_root(shared.clone(), started, now, 0));
                    started += 1;
                    replaced = Some(replaced.map_or((now, now), |(first, _)| (first, now)));
                }
            }
        }
    }
    while running.join_next().await.is_some() {}
    let tally = shared.tally.as_ref();
    let done: Vec<(bool, CallRecord)> = tally
        .and_then(|t| t.records.lock().ok().map(|v| v.clone()))
        .unwrap_or_default();
    let with_task: Vec<CallRecord> = done
        .iter()
        .filter(|(t, _)| *t)
        .map(|(_, r)| r.clone())
        .collect();
    let task_records = tasks_of(&with_task);
    for t in &task_records {
        let _ = sink.task(t);
    }
    let theory = tally
        .and_then(|t| {
            t.theory
                .lock()
                .ok()
                .map(|t| (t.hit_tokens(), t.prompt_tokens()))
        })
        .unwrap_or_default();
    ReplayOutcome {
        requests: done.into_iter().map(|(_, r)| r).collect(),
        tasks: task_records,
        users: match shared.config.schedule.users {
            Some(n) => n.clamp(1, n_roots.max(1)),
            None => user_count,
        },
        sessions_started: started,
        theoretical_tokens: theory,
        too_long: (
            shared.skipped.load(Ordering::Relaxed),
            shared.shortened.load(Ordering::Relaxed),
        ),
        before_part_way: shared.before_part_way.load(Ordering::Relaxed),
        sizes: shared.sizes.lock().map(|s| *s).unwrap_or_default(),
        steady_s: replaced.map(|(first, last)| {
            let from = if shared.config.schedule.start_part_way {
                0.0
            } else {
                first
            };
            (from, last)
        }),
    }
}

/// The root sessions of `trace` (a session with its subagents; a call
/// without a session is one of its own).
pub fn root_count(trace: &Trace) -> usize {
    super::call::Roots::of(trace).calls.len()
}
