//! One step's figures over its steady window, from the class's records and
//! the server's timeline (plain functions).
//!
//! - **Model calls**: those *started* in the window, each to its end:
//!   TTFT, output speed, errors and refused calls. The step holds its size
//!   until the calls still running can no longer change its outcome
//!   ([`bounds`]; a call streaming has its TTFT known), and its figures
//!   are measured again once they have all ended.
//! - **Coding requests**: those *completed* in the window give the figures'
//!   values; those still running at the window's end are censored (only
//!   how long they have run so far is known) and are counted and kept as
//!   bounds of the median ([`Censoring`]).
//! - **Server**: the timeline over the window: output tokens per second
//!   (the counter's increase over the window's length), peaks, preemptions
//!   and the prefix-cache hit rate.
//!
//! The figures are a [`ClassroomSummary`], so the targets module judges a
//! step as it judges a class.

use std::collections::HashSet;

use crate::classroom::{OpenCall, RunningTask};
use codendum_core::prom::{window_stats, TimelineSample};
use codendum_core::results::capacity::Censoring;
use codendum_core::results::classroom_records::TaskOutcome;
use codendum_core::results::classroom_records::{CallRecord, TaskRecord};
use codendum_core::results::classroom_summary::ServerFigures;
use codendum_core::results::ClassroomSummary;
use codendum_core::stats::censored::censored_percentile;

/// A step's steady window, seconds since the class started.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StepWindow {
    /// Its start: the end of the step's settling.
    pub start_s: f64,
    /// Its end.
    pub end_s: f64,
}

impl StepWindow {
    /// Its length, seconds.
    pub fn length_s(&self) -> f64 {
        (self.end_s - self.start_s).max(0.0)
    }

    /// Whether a model call started in the window.
    pub fn started_in(&self, started_at: f64) -> bool {
        started_at >= self.start_s && started_at < self.end_s
    }
}

/// What a step's judge reads of the class at one moment: the records so
/// far, the coding requests under way, and when each model call under way
/// started (both read before the records: a call or request is closed only
/// once recorded, so none falls between).
#[derive(Debug, Clone, Copy)]
pub struct Records<'a> {
    /// The model calls finished.
    pub calls: &'a [CallRecord],
    /// The coding requests finished.
    pub tasks: &'a [TaskRecord],
    /// The coding requests under way.
    pub running: &'a [RunningTask],
    /// The model calls under way: when each started, and its TTFT once
    /// its first token has come.
    pub open_calls: &'a [OpenCall],
}

/// The server's timeline (on the run's clock) and the class's start on it.
pub type Server<'a> = (&'a [TimelineSample], f64);

/// A step's figures over its window.
#[derive(Debug, Clone, PartialEq)]
pub struct Measured {
    /// The class figures of the finished calls started in the window and
    /// the coding requests completed in it, with the server's.
    pub summary: ClassroomSummary,
    /// The window's coding requests.
    pub censoring: Censoring,
    /// Calls started in the window still running when measured.
    pub unfinished: u64,
}

/// The step's class figures over `window`, with `users` students: the
/// finished calls started in it, the coding requests completed in it, and
/// the server's timeline over it.
pub fn measure(users: u32, r: Records<'_>, window: StepWindow, server: Server<'_>) -> Measured {
    let completed = completed_in(r.tasks, window);
    Measured {
        summary: summary_of(users, calls_in(r.calls, window), &completed, window, server),
        censoring: censoring(r.tasks, r.running, &completed, window),
        unfinished: r
            .open_calls
            .iter()
            .filter(|c| window.started_in(c.started_s))
            .count() as u64,
    }
}

/// The best and the worst the step's figures can still turn out, with the
/// calls started in the window that are still running counted at their
/// best (a first token at once, endless speed, a success) and at their
/// worst (no first token ever, no speed, an error). A call whose first
/// token has come has its TTFT known, and counts as answered on both
/// sides: its stream has begun, and should it break later the error shows
/// in the step's final figures but does not hold the decision back. When
/// every target comes out the same way on both, the step is decided
/// without waiting for the calls to end.
pub fn bounds(
    users: u32,
    r: Records<'_>,
    window: StepWindow,
    server: Server<'_>,
) -> (ClassroomSummary, ClassroomSummary) {
    let completed = completed_in(r.tasks, window);
    let open: Vec<OpenCall> = r
        .open_calls
        .iter()
        .copied()
        .filter(|c| window.started_in(c.started_s))
        .collect();
    const NEVER_S: f64 = 1.0e9;
    let with = |worst: bool| {
        let mut calls = calls_in(r.calls, window);
        calls.extend(open.iter().map(|c| {
            let ttft_s = match (c.ttft_s, worst) {
                (Some(t), _) => t,
                (None, false) => 0.0,
                (None, true) => NEVER_S,
            };
            // Endless speed at best; at worst two tokens over forever.
            let (duration_s, output_tokens) = match worst {
                false => (ttft_s + 1.0e-9, 1_000_000),
                true => (ttft_s + 2.0 * NEVER_S, 2),
            };
            CallRecord {
                user: usize::MAX,
                session: String::new(),
                task: 0,
                kind: codendum_core::results::classroom_records::CallKind::Agent,
                started_at: c.started_s,
                prompt_tokens: None,
                output_tokens,
                tokens_counted_by: codendum_core::openai::TokenSource::Server,
                ttft_s: Some(ttft_s),
                e2e_s: duration_s,
                wait_s: duration_s,
                retries: 0,
                retried_kinds: Vec::new(),
                error_kind: None,
                tool_calls: 0,
            }
        }));
        summary_of(users, calls, &completed, window, server)
    };
    let best = with(false);
    let mut worst = with(true);
    // At worst every one still waiting for its first token fails, with a
    // server error.
    let k = open.iter().filter(|c| c.ttft_s.is_none()).count() as u64;
    worst.errors += k;
    *worst
        .errors_by_kind
        .entry(codendum_core::openai::ErrorKind::Http5xx)
        .or_insert(0) += k;
    (best, worst)
}

fn calls_in(calls: &[CallRecord], window: StepWindow) -> Vec<CallRecord> {
    calls
        .iter()
        .filter(|c| window.started_in(c.started_at))
        .cloned()
        .collect()
}

fn completed_in(tasks: &[TaskRecord], window: StepWindow) -> Vec<TaskRecord> {
    tasks
        .iter()
        .filter(|t| {
            t.outcome == TaskOutcome::Completed && t.end > window.start_s && t.end <= window.end_s
        })
        .cloned()
        .collect()
}

fn summary_of(
    users: u32,
    calls: Vec<CallRecord>,
    completed: &[TaskRecord],
    window: StepWindow,
    (timeline, origin): Server<'_>,
) -> ClassroomSummary {
    let mut summary = ClassroomSummary::from_records(users as usize, &calls, completed);
    let length = window.length_s();
    summary.wall_s = length;
    summary.completed_per_hour = (length > 0.0).then(|| completed.len() as f64 * 3600.0 / length);
    summary.server = server_figures(timeline, origin, window);
    summary
}

/// The server's figures over the window: peaks, preemptions and the hit
/// rate over it, output tokens over its length. Empty without samples.
pub fn server_figures(timeline: &[TimelineSample], origin: f64, w: StepWindow) -> ServerFigures {
    let (t0, t1) = (origin + w.start_s, origin + w.end_s);
    let stats = window_stats(timeline, t0, t1);
    if stats.samples == stats.failed_scrapes {
        return ServerFigures::default();
    }
    ServerFigures {
        peak_running: stats.peak_running,
        peak_waiting: stats.peak_waiting,
        peak_kv_cache_usage: stats.peak_kv_usage,
        preemptions: stats.preemptions.map(|p| p.round() as u64),
        prefix_cache_hit_rate: stats.prefix_hit_rate,
        output_tokens_per_s: stats
            .generation_tokens
            .filter(|_| t1 > t0)
            .map(|g| g / (t1 - t0)),
        time_split: stats.time_split,
        server_restarted: false,
    }
}

/// The coding requests of the window: completed in it, and running at its
/// end (recorded later with an end past it, or still under way), each
/// counted once.
fn censoring(
    tasks: &[TaskRecord],
    running: &[RunningTask],
    completed: &[TaskRecord],
    w: StepWindow,
) -> Censoring {
    let mut seen: HashSet<(usize, usize)> = HashSet::new();
    let mut elapsed: Vec<f64> = Vec::new();
    for t in tasks
        .iter()
        .filter(|t| t.start < w.end_s && t.end > w.end_s)
    {
        if seen.insert((t.user, t.index)) {
            elapsed.push(w.end_s - t.start);
        }
    }
    for r in running.iter().filter(|r| r.start_s < w.end_s) {
        if seen.insert((r.user, r.index)) {
            elapsed.push(w.end_s - r.start_s);
        }
    }
    let done: Vec<f64> = completed.iter().map(|t| t.end - t.start).collect();
    Censoring {
        completed: done.len() as u64,
        running: elapsed.len() as u64,
        p50_bounds_s: censored_percentile(&done, &elapsed, 50.0),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use codendum_core::openai::TokenSource;
    use codendum_core::results::classroom_records::CallKind;

    /// A call record sent at `started_at` with this TTFT, ended 5 s after it.
    pub(crate) fn call(started_at: f64, ttft: f64, ok: bool) -> CallRecord {
        CallRecord {
            user: 0,
            session: "ses_0".into(),
            task: 0,
            kind: CallKind::Agent,
            started_at,
            prompt_tokens: Some(1000),
            output_tokens: 100,
            tokens_counted_by: TokenSource::Server,
            ttft_s: ok.then_some(ttft),
            e2e_s: ttft + 5.0,
            wait_s: ttft + 5.0,
            retries: 0,
            retried_kinds: Vec::new(),
            error_kind: (!ok).then_some(codendum_core::openai::ErrorKind::Http503),
            tool_calls: 0,
        }
    }

    fn task(user: usize, start: f64, end: f64, outcome: TaskOutcome) -> TaskRecord {
        TaskRecord {
            user,
            index: 0,
            start,
            end,
            model_time_s: end - start,
            calls: 10,
            output_tokens: 1000,
            tool_calls: 5,
            tool_errors: 0,
            compactions: 0,
            outcome,
            error_kind: None,
        }
    }

    #[test]
    fn only_the_calls_started_in_the_window_count() {
        let w = StepWindow {
            start_s: 100.0,
            end_s: 200.0,
        };
        let calls = [
            call(50.0, 90.0, true),  // before: left out
            call(100.0, 2.0, true),  // at the start: in
            call(150.0, 4.0, true),  // in
            call(199.0, 60.0, true), // started in, ends after: in
            call(160.0, 0.0, false), // a failure in the window
            call(200.0, 1.0, true),  // at the end: out
        ];
        let r = Records {
            calls: &calls,
            tasks: &[],
            running: &[],
            open_calls: &[open(150.0, None), open(120.0, None), open(250.0, None)],
        };
        let m = measure(10, r, w, (&[], 0.0));
        assert_eq!(
            m.unfinished, 2,
            "two of the open calls started in the window"
        );
        let s = m.summary;
        assert_eq!((s.users, s.requests, s.errors), (10, 4, 1));
        assert_eq!(s.ttft_p50_s, Some(4.0));
        assert_eq!(codendum_core::results::metrics::error_rate(&s), Some(0.25));
        assert_eq!(s.wall_s, 100.0);
        assert!(s.server.output_tokens_per_s.is_none(), "no timeline");
        // The two still running, at their best and at their worst.
        let (best, worst) = bounds(10, r, w, (&[], 0.0));
        assert_eq!((best.requests, best.errors), (6, 1));
        assert_eq!((worst.requests, worst.errors), (6, 3));
        assert_eq!(best.ttft_p95_s.map(|t| t < 60.0), Some(true));
        assert!(worst.ttft_p95_s.is_some_and(|t| t > 1.0e8));
    }

    fn open(started_s: f64, ttft_s: Option<f64>) -> OpenCall {
        OpenCall { started_s, ttft_s }
    }

    #[test]
    fn a_call_streaming_has_its_ttft_known_at_best_and_at_worst() {
        let w = StepWindow {
            start_s: 0.0,
            end_s: 100.0,
        };
        // Nineteen calls ended with TTFTs of 1 to 19 s.
        let calls: Vec<CallRecord> = (1..20)
            .map(|i| call(f64::from(i), f64::from(i), true))
            .collect();
        let waiting = [open(90.0, None)];
        let streaming = [open(90.0, Some(3.0))];
        let with = |open_calls: &[OpenCall]| {
            let r = Records {
                calls: &calls,
                tasks: &[],
                running: &[],
                open_calls,
            };
            (measure(5, r, w, (&[], 0.0)), bounds(5, r, w, (&[], 0.0)))
        };
        // Still waiting for its first token: its TTFT may be anything, and
        // it may yet fail.
        let (m, (best, worst)) = with(&waiting);
        assert_eq!(m.unfinished, 1);
        assert!(best.ttft_p95_s.is_some_and(|t| t <= 19.0));
        assert!(worst.ttft_p95_s.is_some_and(|t| t > 1.0e6));
        assert_eq!((best.errors, worst.errors), (0, 1));
        // Streaming: its 3 s counts on both sides, and it counts as
        // answered (only its speed is still open).
        let (m, (best, worst)) = with(&streaming);
        assert_eq!(m.unfinished, 1);
        assert_eq!(best.ttft_p95_s, worst.ttft_p95_s);
        assert_eq!(best.ttft_p50_s, worst.ttft_p50_s);
        assert_eq!((best.requests, best.errors, worst.errors), (20, 0, 0));
    }

    #[test]
    fn coding_requests_running_at_the_end_are_censored_once() {
        let w = StepWindow {
            start_s: 100.0,
            end_s: 200.0,
        };
        let tasks = [
            task(0, 20.0, 150.0, TaskOutcome::Completed), // 130 s, completed in
            task(1, 90.0, 120.0, TaskOutcome::Completed), // 30 s, completed in
            task(2, 10.0, 90.0, TaskOutcome::Completed),  // ended before: out
            task(3, 150.0, 260.0, TaskOutcome::Completed), // running at the end: ≥ 50 s
            task(4, 120.0, 170.0, TaskOutcome::Failed),   // failed in: neither
        ];
        let running = [
            RunningTask {
                user: 5,
                index: 0,
                start_s: 0.0,
            }, // ≥ 200 s
            RunningTask {
                user: 3,
                index: 0,
                start_s: 150.0,
            }, // the same as user 3's record
            RunningTask {
                user: 6,
                index: 0,
                start_s: 210.0,
            }, // started after: out
        ];
        let r = Records {
            calls: &[],
            tasks: &tasks,
            running: &running,
            open_calls: &[],
        };
        let Measured {
            summary: s,
            censoring: c,
            ..
        } = measure(7, r, w, (&[], 0.0));
        assert_eq!((s.completed, c.completed, c.running), (2, 2, 2));
        assert_eq!(s.task_time_p50_s, Some(80.0));
        let b = c.p50_bounds_s.expect("bounds");
        // 30, 50, 130, 200 → 90; 30, 130, ∞, ∞ → none.
        assert_eq!((b.lo, b.hi), (90.0, None));
        assert_eq!(s.completed_per_hour, Some(72.0));
    }
}
