//! One call of a replay: when it goes out, what it sends, what it leaves;
//! and what the calls of a replay share (`Shared`: the trace, its root
//! sessions, the transport, what each call left).
//!
//! When: a call that waited for another in the recording goes out the
//! recorded wait after that call's replayed answer ended (a person's wait
//! capped by `max_think_s`), or with `Timing::Original` at its recorded
//! offset from its session's start; a call that waited for nothing (a
//! session's first call, every line of an open-loop trace) at that offset.
//! Both are divided by `speed`; `max_wait_s` caps any recorded wait.
//!
//! What: a prompt of its recorded size. A chat call that continues an
//! earlier call of its session ([`Trace::conversations`]) sends that
//! call's messages, then (when the recording says the answer follows) the
//! answer the server gave it as an `assistant` message, then a new `user`
//! message for the rest of its length; so the server's prefix cache sees
//! the history again, as in the real session (vLLM caches the blocks of
//! generated tokens too). Any other call is one `user` message whose
//! blocks are the recorded ones, so prompts that share blocks share text.
//! The server's chat-template tokens are taken off either way.
//!
//! A call whose prompt and output exceed the server's `max_model_len` is
//! skipped or shortened from the front (whole blocks dropped).
//!
//! [`Trace::conversations`]: codendum_core::trace::Trace::conversations

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::config::{ReplayConfig, Schedule, Timing, TooLong};
use super::root_run::{session_name, RootRun};
use super::sent::{Sent, Turn};
use crate::classroom::RecordSink;
use codendum_core::clock::Clock;
use codendum_core::openai::Transport;
use codendum_core::openai::{CallRequest, Endpoint, FirstToken};
use codendum_core::results::classroom_records::CallKind;
use codendum_core::results::classroom_records::CallRecord;
use codendum_core::trace::text::prompt_text;
use codendum_core::trace::theory::TheoreticalCache;
use codendum_core::trace::{Carry, Trace};
use codendum_core::trace::{Dependency, TraceCall, WaitReason};

/// Publishes a passed-over call if the task ends without a word: calls
/// waiting for it then go on, and its coding request ends without it.
struct Guard<'a> {
    shared: &'a Shared,
    run: &'a RootRun,
    i: usize,
    done: bool,
}

impl Guard<'_> {
    fn publish(&mut self, sent: Sent) {
        self.run.publish(self.i, sent);
        self.done = true;
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if !self.done {
            self.run.publish(self.i, Sent::not_sent(self.shared.now()));
            let cut = self.shared.stopped();
            self.run.call_passed(self.shared.calls[self.i].task, cut);
        }
    }
}

/// The wait kept of a recorded dependency, recorded seconds: a person's
/// capped by `max_think_s`, any capped by `max_wait_s`.
fn wait_s(d: &Dependency, schedule: &Schedule) -> f64 {
    let thought = match (d.reason, schedule.max_think_s) {
        (WaitReason::Person, Some(max)) => d.gap_s.min(max),
        _ => d.gap_s,
    };
    schedule.max_wait_s.map_or(thought, |max| thought.min(max))
}

/// `call` shortened from the front to fit `max_model_len` with its output:
/// whole blocks dropped. `None` when even a one-block prompt would not fit.
pub fn shorten(call: &TraceCall, max_model_len: u64, block_size: u32) -> Option<TraceCall> {
    let b = u64::from(block_size.max(1));
    let room = max_model_len.checked_sub(call.output_tokens.max(1))?;
    let drop_blocks = call.input_tokens.checked_sub(room)?.div_ceil(b);
    let input = call.input_tokens.checked_sub(drop_blocks * b)?;
    if input < b.min(room) || input == 0 {
        return None;
    }
    let mut short = call.clone();
    short.input_tokens = input;
    short.hash_ids = call
        .hash_ids
        .get(drop_blocks as usize..)
        .unwrap_or(&[])
        .to_vec();
    Some(short)
}

/// Sends call `i` of the root session `run` runs.
pub(super) async fn send(shared: Arc<Shared>, run: Arc<RootRun>, i: usize) {
    let (shared, run) = (shared.as_ref(), run.as_ref());
    let (r, root_start_s) = (run.r, run.start_s);
    let mut guard = Guard {
        shared,
        run,
        i,
        done: false,
    };
    let config = &shared.config;
    let call = &shared.calls[i];
    let speed = config.speed;
    let same_root = |j: usize| shared.roots.of_call[j] == r;
    let recorded = root_start_s + (call.at_s - shared.roots.at_s[r]).max(0.0) / speed;
    let schedule = &config.schedule;
    let start = match (schedule.timing, call.after) {
        (Timing::AfterAnswer, Some(d)) if same_root(d.call) => {
            let end = match run.answer_of(d.call).await {
                Some(p) => p.end,
                None => shared.now(),
            };
            end + wait_s(&d, schedule) / speed
        }
        _ => recorded,
    };
    let carry =
        shared.carries[i].filter(|k| config.endpoint == Endpoint::Chat && same_root(k.call));
    // The carried call has ended before the call it waits for in any
    // recording; waiting for it anyway costs nothing then.
    let mut previous = match (carry, schedule.timing) {
        (Some(k), Timing::AfterAnswer) => run.answer_of(k.call).await,
        _ => None,
    };
    // Asleep until its time, or until the run is stopped or its session
    // leaves (then it is not sent, and those waiting for it go on).
    let wake = shared
        .clock
        .sleep_until(Duration::from_secs_f64(shared.origin + start.max(0.0)));
    tokio::select! {
        // In order: a run in virtual time is the same every time.
        biased;
        () = wake => {}
        () = shared.until_stopped() => {}
        () = run.left() => {}
    }
    if shared.stopped() || run.leaving() {
        return;
    }
    if let (Some(k), Timing::Original) = (carry, schedule.timing) {
        previous = run.answered(k.call);
    }
    let previous = previous.filter(|p| p.ok && p.turn.is_some()).zip(carry);
    let fits = |c: &TraceCall| {
        config
            .max_model_len
            .is_none_or(|m| c.input_tokens + c.output_tokens.max(1) <= m)
    };
    let (to_send, previous): (Cow<TraceCall>, _) = if fits(call) {
        (Cow::Borrowed(call), previous)
    } else {
        let short = match schedule.too_long {
            TooLong::Shorten => config
                .max_model_len
                .and_then(|m| shorten(call, m, shared.block_size)),
            TooLong::Skip => None,
        };
        match short {
            Some(s) => {
                shared.shortened.fetch_add(1, Ordering::Relaxed);
                (Cow::Owned(s), None)
            }
            None => {
                shared.skipped.fetch_add(1, Ordering::Relaxed);
                guard.publish(Sent::not_sent(shared.now()));
                run.call_passed(call.task, false);
                return;
            }
        }
    };
    let b = u64::from(shared.block_size.max(1));
    // The recorded prompt less what the history already holds and what
    // the template adds (around a lone message, or a new turn).
    let (before, answer, covered, added) = match &previous {
        Some((p, k)) if k.answer => (
            p.turn.clone(),
            Some(p.answer.clone()),
            k.covered_tokens(&shared.calls),
            config.template.turn_tokens,
        ),
        Some((p, k)) => (
            p.turn.clone(),
            None,
            k.covered_tokens(&shared.calls),
            config.template.message_tokens,
        ),
        None => (None, None, 0, config.template.message_tokens),
    };
    let tokens = to_send
        .input_tokens
        .saturating_sub(covered)
        .saturating_sub(added)
        .max(1);
    let ids = to_send
        .hash_ids
        .get((covered / b) as usize..)
        .unwrap_or(&[]);
    let text = prompt_text(ids, tokens, shared.block_size, run.salt, i as u64);
    let turn = Arc::new(Turn {
        before,
        answer,
        user: text,
    });
    let mut body = super::call_body(config, "", to_send.output_tokens);
    match config.endpoint {
        Endpoint::Chat => body["messages"] = serde_json::Value::Array(turn.messages()),
        Endpoint::Completions => body["prompt"] = serde_json::Value::String(turn.user.clone()),
    }
    if let Some(Ok(mut theory)) = shared.tally.as_ref().map(|t| t.theory.lock()) {
        let carried = previous
            .as_ref()
            .map(|(_, k)| (&shared.calls[k.call], k.answer));
        theory.send(&to_send, carried);
    }
    let mut headers = Vec::new();
    if let Some(s) = &call.session {
        headers.push(("x-session-id".to_string(), session_name(Some(s), i, run)));
    }
    if let Some(p) = &call.parent {
        headers.push((
            "x-parent-session-id".to_string(),
            session_name(Some(p), i, run),
        ));
    }
    let started_at = shared.now();
    let first_token = FirstToken::default();
    let open = run.call_started(call.task, started_at, &first_token);
    let outcome = shared
        .transport
        .call(CallRequest {
            endpoint: config.endpoint,
            body: body.into(),
            api_key: config.api_key.clone(),
            headers,
            record_gaps: false,
            first_token: Some(first_token),
        })
        .await;
    let ended = shared.now();
    if let (Some(counted), Ok(mut sizes)) = (outcome.input_tokens(), shared.sizes.lock()) {
        sizes.add(to_send.input_tokens, counted);
    }
    let (output_tokens, tokens_counted_by) = outcome.output_tokens();
    let record = CallRecord {
        user: run.user,
        session: session_name(call.session.as_deref(), i, run),
        task: call.task.unwrap_or(0),
        kind: call.kind.unwrap_or(CallKind::Agent),
        started_at,
        prompt_tokens: outcome.input_tokens(),
        output_tokens,
        tokens_counted_by,
        ttft_s: outcome.ttft,
        e2e_s: outcome.e2e,
        wait_s: ended - started_at,
        retries: 0,
        retried_kinds: Vec::new(),
        error_kind: outcome.error.as_ref().map(|e| e.kind),
        tool_calls: outcome.message.tool_calls.len(),
    };
    let _ = shared.sink.request(&record);
    run.call_ended(call.task, &record, open);
    if let Some(Ok(mut v)) = shared.tally.as_ref().map(|t| t.records.lock()) {
        v.push((call.task.is_some(), record));
    }
    guard.publish(Sent {
        end: ended,
        ok: outcome.is_ok(),
        turn: Some(turn),
        answer: outcome.message.content.clone(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_is_shortened_by_whole_blocks_from_the_front() {
        let call = TraceCall::open(0.0, 100, 10, (1..=7).collect());
        let short = shorten(&call, 64, 16).expect("fits shortened");
        // 54 tokens of room: 3 blocks (48 tokens) dropped, 52 left.
        assert_eq!(short.input_tokens, 52);
        assert_eq!(short.hash_ids, vec![4, 5, 6, 7]);
        assert!(shorten(&call, 10, 16).is_none(), "no room for a block");
        assert!(
            shorten(&call, 8, 16).is_none(),
            "the output alone is too long"
        );
    }
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
    pub(super) fn of(trace: &Trace) -> Roots {
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
    pub(super) fn user_count(&self) -> usize {
        self.user.iter().max().map_or(1, |m| m + 1)
    }
}

/// What a replay keeps of its calls to say of itself at its end: the
/// theoretical prefix cache fed in the order they went out, and their
/// records (each with whether the trace names its coding request).
pub(super) struct Tally {
    pub theory: Mutex<TheoreticalCache>,
    pub records: Mutex<Vec<(bool, CallRecord)>>,
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
    /// What a replay keeps to say of itself at its end; `None` for a
    /// continuous one, whose records go to its sink only.
    pub tally: Option<Tally>,
    pub sizes: Mutex<SizeCheck>,
    pub skipped: AtomicUsize,
    pub shortened: AtomicUsize,
    pub before_part_way: AtomicUsize,
}

impl Shared {
    /// What the calls of a replay of `trace` share, from now on `clock`.
    pub fn new(
        trace: &Trace,
        config: ReplayConfig,
        (transport, clock): (Arc<dyn Transport>, Clock),
        (sink, tally): (Arc<dyn RecordSink>, bool),
        stop: Option<watch::Receiver<bool>>,
    ) -> Shared {
        Shared {
            calls: trace.calls.clone(),
            carries: trace.conversations(),
            block_size: trace.block_size,
            roots: Roots::of(trace),
            tally: tally.then(|| Tally {
                theory: Mutex::new(TheoreticalCache::new(trace.block_size)),
                records: Mutex::new(Vec::new()),
            }),
            sizes: Mutex::new(SizeCheck::default()),
            skipped: AtomicUsize::new(0),
            shortened: AtomicUsize::new(0),
            before_part_way: AtomicUsize::new(0),
            origin: clock.now_secs(),
            config,
            transport,
            clock,
            sink,
            stop,
        }
    }

    /// Seconds since the replay started.
    pub fn now(&self) -> f64 {
        self.clock.now_secs() - self.origin
    }

    /// Whether the run was asked to stop.
    pub fn stopped(&self) -> bool {
        self.stop.as_ref().is_some_and(|s| *s.borrow())
    }

    /// Waits until the run is asked to stop (never, without a stop).
    pub async fn until_stopped(&self) {
        match self.stop.clone() {
            Some(mut stop) => {
                let _ = stop.wait_for(|s| *s).await;
            }
            None => std::future::pending::<()>().await,
        }
    }
}
