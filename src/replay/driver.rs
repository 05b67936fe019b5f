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

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tokio::sync::watch;

use super::call::{self, Sent};
use super::template::Template;
use crate::classroom::{CallRecord, RecordSink, TaskOutcome, TaskRecord};
use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::openai::{Endpoint, Transport};
use codendum_core::results::classroom_records::CallKind;
use codendum_core::trace::theory::TheoreticalCache;
use codendum_core::trace::{Carry, Trace, TraceCall};

/// When a call that waited for another is sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Timing {
    /// The recorded wait after the replayed answer it waited for ends: a
    /// slower server stretches the session as it would have.
    #[default]
    AfterAnswer,
    /// At its recorded offset from its session's start, whatever the
    /// server does (a conversation is carried on only when the answer it
    /// continues is back by then).
    Original,
}

/// What is done with a call the server's context cannot hold (its prompt
/// and output above `max_model_len`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TooLong {
    /// Not sent; its dependents go on after its recorded wait.
    #[default]
    Skip,
    /// Sent shortened from the front (whole blocks dropped), as a fresh
    /// prompt.
    Shorten,
}

/// How sessions are started and paced, and what is done with calls the
/// server cannot hold: what `--users`, `--timing`, `--max-think`,
/// `--max-wait`, `--start-part-way` and `--too-long` ask.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Schedule {
    /// Sessions kept running at once (`None`: every session at its
    /// recorded offset).
    pub users: Option<usize>,
    /// When a call that waited for another is sent.
    pub timing: Timing,
    /// The longest a person's recorded wait is kept, seconds (recorded
    /// seconds, before `speed`).
    pub max_think_s: Option<f64>,
    /// The longest any recorded wait is kept (a tool's too), seconds
    /// (recorded seconds, before `speed`).
    pub max_wait_s: Option<f64>,
    /// With `users`: the first sessions start part-way through their calls.
    pub start_part_way: bool,
    /// What is done with calls beyond `max_model_len`.
    pub too_long: TooLong,
}

/// How a trace is sent.
#[derive(Debug, Clone)]
pub struct ReplayConfig {
    /// The model requested.
    pub model: String,
    /// Timeline compression: 2 sends twice as fast as recorded.
    pub speed: f64,
    /// Salt of the synthetic text (a new salt: nothing cached from an
    /// earlier replay is hit).
    pub salt: u64,
    /// Chat or completions.
    pub endpoint: Endpoint,
    /// The key presented (never written).
    pub api_key: Option<Secret>,
    /// What the server's chat template adds, taken off each recorded
    /// prompt length.
    pub template: Template,
    /// How sessions are started and paced.
    pub schedule: Schedule,
    /// The server's context, tokens (prompt and output together), when
    /// known.
    pub max_model_len: Option<u64>,
}

impl ReplayConfig {
    /// A replay of `model` at the recorded pace and offsets, chat, no key,
    /// salt 0, the server's template `template`.
    pub fn new(model: impl Into<String>, template: Template) -> Self {
        ReplayConfig {
            model: model.into(),
            speed: 1.0,
            salt: 0,
            endpoint: Endpoint::Chat,
            api_key: None,
            template,
            schedule: Schedule::default(),
            max_model_len: None,
        }
    }
}

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

/// The prompt sizes a server counted against the recorded ones (as sent:
/// a shortened call's shortened size).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SizeCheck {
    /// Calls whose prompt the server counted.
    pub calls: usize,
    /// Of which within 1 % of the recorded size.
    pub within_1_pct: usize,
    /// The largest difference, a fraction of the recorded size.
    pub max_error: f64,
}

impl SizeCheck {
    /// Adds a call of `recorded` prompt tokens the server counted as
    /// `counted`.
    pub fn add(&mut self, recorded: u64, counted: u64) {
        let error = (counted as f64 - recorded as f64).abs() / recorded.max(1) as f64;
        self.calls += 1;
        if error <= 0.01 {
            self.within_1_pct += 1;
        }
        self.max_error = self.max_error.max(error);
    }
}

impl ReplayOutcome {
    /// The theoretical prefix-cache hit rate of what was sent (fraction
    /// 0–1); `None` when nothing was.
    pub fn theoretical_hit_rate(&self) -> Option<f64> {
        let (hit, all) = self.theoretical_tokens;
        (all > 0).then(|| hit as f64 / all as f64)
    }
}

/// The trace's root sessions: each call's root, each root's calls (in
/// arrival order) and first arrival, and each root's `user` index (calls
/// without a session share one after the named roots).
pub(super) struct Roots {
    pub of_call: Vec<usize>,
    pub calls: Vec<Vec<usize>>,
    pub at_s: Vec<f64>,
    pub user: Vec<usize>,
}

impl Roots {
    fn of(trace: &Trace) -> Roots {
        let names = trace.roots();
        let mut index: HashMap<&str, usize> = HashMap::new();
        let mut roots = Roots {
            of_call: Vec::with_capacity(names.len()),
            calls: Vec::new(),
            at_s: Vec::new(),
            user: Vec::new(),
        };
        let named = names
            .iter()
            .flatten()
            .filter(|n| index.insert(n.as_str(), usize::MAX).is_none())
            .count();
        index.clear();
        for (i, name) in names.iter().enumerate() {
            let found = name.as_deref().and_then(|n| index.get(n).copied());
            let r = found.unwrap_or_else(|| {
                let r = roots.calls.len();
                roots.calls.push(Vec::new());
                roots.at_s.push(trace.calls[i].at_s);
                roots
                    .user
                    .push(if name.is_some() { index.len() } else { named });
                if let Some(n) = name.as_deref() {
                    index.insert(n, r);
                }
                r
            });
            roots.of_call.push(r);
            roots.calls[r].push(i);
        }
        roots
    }

    /// Users of the records: one per named root, one for all calls
    /// without a session.
    fn user_count(&self) -> usize {
        self.user.iter().max().map_or(1, |m| m + 1)
    }
}

/// Everything the calls of a replay share.
pub(super) struct Shared {
    pub calls: Vec<TraceCall>,
    pub carries: Vec<Option<Carry>>,
    pub block_size: u32,
    pub roots: Roots,
    pub config: ReplayConfig,
    pub transport: Arc<dyn Transport>,
    pub clock: Clock,
    pub origin: f64,
    pub sink: Arc<dyn RecordSink>,
    pub stop: Option<watch::Receiver<bool>>,
    pub sent: Vec<watch::Sender<Option<Arc<Sent>>>>,
    pub theory: Mutex<TheoreticalCache>,
    pub records: Mutex<Vec<(bool, CallRecord)>>,
    pub sizes: Mutex<SizeCheck>,
    pub skipped: AtomicUsize,
    pub shortened: AtomicUsize,
    pub before_part_way: AtomicUsize,
}

impl Shared {
    /// Seconds since the replay started.
    pub fn now(&self) -> f64 {
        self.clock.now_secs() - self.origin
    }

    /// Whether the run was asked to stop.
    pub fn stopped(&self) -> bool {
        self.stop.as_ref().is_some_and(|s| *s.borrow())
    }

    /// Publishes what call `i` left for the calls that wait for it.
    pub fn publish(&self, i: usize, sent: Sent) {
        self.sent[i].send_replace(Some(Arc::new(sent)));
    }

    /// What call `i` left, once it has ended.
    pub async fn answer_of(&self, i: usize) -> Option<Arc<Sent>> {
        let mut rx = self.sent[i].subscribe();
        rx.wait_for(Option::is_some)
            .await
            .ok()
            .and_then(|v| v.clone())
    }

    /// What call `i` left, if it has ended.
    pub fn answered(&self, i: usize) -> Option<Arc<Sent>> {
        self.sent[i].borrow().clone()
    }
}

/// Runs root session `r` from `start_s` (seconds since the replay
/// started), its first `from` calls not sent.
async fn run_root(shared: Arc<Shared>, r: usize, start_s: f64, from: usize) {
    let mut set = tokio::task::JoinSet::new();
    for (pos, &i) in shared.roots.calls[r].iter().enumerate() {
        if pos < from {
            shared.before_part_way.fetch_add(1, Ordering::Relaxed);
            shared.publish(i, Sent::not_sent(start_s));
            continue;
        }
        set.spawn(call::send(shared.clone(), i, r, start_s));
    }
    while set.join_next().await.is_some() {}
    // Nobody else waits for this session's calls: let their text go.
    for &i in &shared.roots.calls[r] {
        shared.sent[i].send_modify(|v| {
            if let Some(s) = v {
                *v = Some(Arc::new(s.without_text()));
            }
        });
    }
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
    let roots = Roots::of(trace);
    let user_count = roots.user_count();
    let shared = Arc::new(Shared {
        calls: trace.calls.clone(),
        carries: trace.conversations(),
        block_size: trace.block_size,
        sent: trace.calls.iter().map(|_| watch::channel(None).0).collect(),
        roots,
        theory: Mutex::new(TheoreticalCache::new(trace.block_size)),
        records: Mutex::new(Vec::new()),
        sizes: Mutex::new(SizeCheck::default()),
        skipped: AtomicUsize::new(0),
        shortened: AtomicUsize::new(0),
        before_part_way: AtomicUsize::new(0),
        origin: clock.now_secs(),
        config,
        transport,
        clock,
        sink: sink.clone(),
        stop,
    });
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
    let done: Vec<(bool, CallRecord)> =
        shared.records.lock().map(|v| v.clone()).unwrap_or_default();
    let with_task: Vec<CallRecord> = done
        .iter()
        .filter(|(t, _)| *t)
        .map(|(_, r)| r.clone())
        .collect();
    let task_records = tasks_of(&with_task);
    for t in &task_records {
        let _ = sink.task(t);
    }
    let theory = shared
        .theory
        .lock()
        .map(|t| (t.hit_tokens(), t.prompt_tokens()))
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
