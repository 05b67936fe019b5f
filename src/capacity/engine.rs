//! The search's steps against a running class: set the class's size, let
//! it settle, hold it over the step's steady window, wait until the calls
//! started in the window can no longer change its outcome (their first
//! tokens come, those still streaming counted at their best and worst),
//! measure and judge, and let the search choose the next size. The same
//! loop runs against a live server (the run lifecycle's sampler) and
//! against the twin in virtual time (the prediction), so the two mean the
//! same by every figure.

use std::time::Duration;

use tokio::sync::watch;

use super::judge::judge_step;
use super::search::Search;
use super::settle::settle_for;
use super::window::{bounds, measure, Records, Server, StepWindow};
use crate::classroom::{ClassSize, LiveStatus, MemorySink};
use codendum_core::bound::Outcome;
use codendum_core::clock::Clock;
use codendum_core::prom::TimelineSample;
use codendum_core::results::capacity::{CapacityStep, Censoring, StepKind, TierStep};
use codendum_core::results::classroom_records::{CallRecord, TaskRecord};
use codendum_core::results::ClassroomSummary;
use codendum_core::targets::Tier;

/// How often the drain checks for calls still in flight, seconds.
const DRAIN_POLL_S: f64 = 1.0;

/// What a step's judge reads of the class: its records so far and what is
/// under way.
pub trait ClassView {
    /// The model calls finished so far.
    fn calls(&self) -> Vec<CallRecord>;
    /// The coding requests finished so far.
    fn tasks(&self) -> Vec<TaskRecord>;
    /// The live status (what is under way).
    fn status(&self) -> &LiveStatus;
}

/// A class's records kept in memory and its live status.
pub struct Recorded<'a> {
    /// The records.
    pub sink: &'a MemorySink,
    /// The class's live status.
    pub status: &'a LiveStatus,
}

impl ClassView for Recorded<'_> {
    fn calls(&self) -> Vec<CallRecord> {
        self.sink.requests()
    }
    fn tasks(&self) -> Vec<TaskRecord> {
        self.sink.tasks()
    }
    fn status(&self) -> &LiveStatus {
        self.status
    }
}

/// Where a step reads the server's figures.
#[allow(async_fn_in_trait)]
pub trait ServerView {
    /// The server's samples over `[t0, t1]` (seconds on the run's clock),
    /// with the one before `t0` when there is one; empty without server
    /// figures.
    async fn window(&self, t0: f64, t1: f64) -> Vec<TimelineSample>;
}

/// How long a step settles.
#[derive(Debug, Clone, PartialEq)]
pub enum Settle {
    /// The same for every step, seconds.
    Fixed(f64),
    /// The twin's time to plateau at the nearest size it tried
    /// ([`settle_for`]), between `floor_s` and `ceiling_s`.
    Predicted {
        /// Sizes the twin tried and its seconds to plateau at each.
        plateaus: Vec<(u32, f64)>,
        /// The least settling, seconds (the join spread).
        floor_s: f64,
        /// The most, seconds.
        ceiling_s: f64,
    },
}

impl Settle {
    /// The longest a step settles while calls sent before its change are
    /// still running, seconds; `None` for a fixed settling, which is kept
    /// as asked.
    pub fn longest_s(&self) -> Option<f64> {
        match self {
            Settle::Fixed(_) => None,
            Settle::Predicted {
                floor_s, ceiling_s, ..
            } => Some(ceiling_s.max(*floor_s)),
        }
    }

    /// The settling of a step to `users` students, seconds.
    pub fn for_users(&self, users: u32) -> f64 {
        match self {
            Settle::Fixed(s) => *s,
            Settle::Predicted {
                plateaus,
                floor_s,
                ceiling_s,
            } => settle_for(users, plateaus, *floor_s, *ceiling_s),
        }
    }
}

/// The timing of a search's steps.
#[derive(Debug, Clone, PartialEq)]
pub struct Timing {
    /// Each step's steady window, seconds.
    pub hold_s: f64,
    /// New students join spread over this many seconds.
    pub join_over_s: f64,
    /// How long each step settles.
    pub settle: Settle,
    /// The longest wait for the window's calls to decide it, seconds (the
    /// per-request time limit).
    pub drain_cap_s: f64,
    /// The most server time the search may take, seconds.
    pub budget_s: Option<f64>,
    /// The most steps.
    pub step_cap: usize,
    /// The most windows a step is held for: a step whose figure is too
    /// close to a target to call (its interval straddles the limit) for a
    /// tier the step decides is held one window longer, and judged again
    /// over the longer window, up to this many (1: never held longer),
    /// while the budget allows.
    pub max_holds: u32,
}

/// Why the steps ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Every tier has its answer.
    Answered,
    /// The next step would have gone past the server-time budget.
    Budget,
    /// The step cap was reached.
    StepCap,
    /// A stop was asked for (Ctrl-C); the step under way is not judged.
    Stopped,
}

/// What a step tells while it goes.
pub enum StepEvent<'a> {
    /// The step's phase: settling, holding or draining, with the seconds
    /// it will take (`None` for a drain, which ends when its calls do).
    Phase {
        /// The step's number, from 1.
        index: u32,
        /// Students.
        users: u32,
        /// `settling`, `holding`, `waiting for its calls` or `holding
        /// longer (too close to call)`.
        phase: &'static str,
        /// How long it will take, seconds.
        seconds: Option<f64>,
    },
    /// A step was judged.
    Judged(&'a CapacityStep),
}

/// What the steps need besides the search.
pub struct StepIo<'a, C, S> {
    /// Sets the class's size.
    pub control: &'a watch::Sender<ClassSize>,
    /// The class's records and status.
    pub class: &'a C,
    /// The server's figures.
    pub server: &'a S,
    /// The run's clock.
    pub clock: &'a Clock,
    /// Clock seconds at the class's start.
    pub origin: f64,
    /// Turns true on Ctrl-C / SIGTERM.
    pub stop: watch::Receiver<bool>,
    /// Told of each phase and judged step.
    pub on_event: &'a (dyn Fn(StepEvent<'_>) + Sync),
}

/// The steps of a search.
#[derive(Debug, Clone, PartialEq)]
pub struct SearchRun {
    /// Every judged step, in order.
    pub steps: Vec<CapacityStep>,
    /// Why they ended.
    pub ended: Ended,
    /// Server time from the first change to the last step's end, seconds.
    pub server_time_s: f64,
}

/// Runs the search's steps until every tier is answered, the budget or
/// the step cap is reached, or a stop.
pub async fn run_steps<C: ClassView, S: ServerView>(
    search: &mut Search,
    tiers: &[Tier],
    timing: &Timing,
    io: StepIo<'_, C, S>,
) -> SearchRun {
    let since = |io: &StepIo<'_, C, S>| io.clock.now_secs() - io.origin;
    let first = since(&io);
    let mut steps: Vec<CapacityStep> = Vec::new();
    // The drain is judged by the last one (a first guess: a tenth of a hold).
    let mut last_drain_s = timing.hold_s / 10.0;
    let ended = loop {
        let Some((users, kind)) = search.next() else {
            break Ended::Answered;
        };
        if steps.len() >= timing.step_cap {
            break Ended::StepCap;
        }
        let settle_s = timing.settle.for_users(users);
        if let Some(budget) = timing.budget_s {
            let cost = settle_s + timing.hold_s + last_drain_s;
            if since(&io) - first + cost > budget {
                break Ended::Budget;
            }
        }
        let index = steps.len() as u32 + 1;
        let decides = search.decides(users, kind);
        let before = steps.last().map_or(0, |s| s.users);
        let Some(step) = one_step(
            (index, users, kind, before),
            (settle_s, timing),
            (tiers, &decides),
            &io,
            (&mut last_drain_s, timing.budget_s.map(|b| first + b)),
        )
        .await
        else {
            break Ended::Stopped;
        };
        let outcomes: Vec<Outcome> = step.tiers.iter().map(|t| t.outcome).collect();
        search.record(users, kind, &outcomes);
        (io.on_event)(StepEvent::Judged(&step));
        steps.push(step);
    };
    SearchRun {
        steps,
        ended,
        server_time_s: since(&io) - first,
    }
}

/// One step; `None` when a stop came first. `decides`: for each tier,
/// whether the step's outcome moves its search (only those are held
/// longer when too close to call); `budget_end`: when the budget runs
/// out, seconds since the class started.
async fn one_step<C: ClassView, S: ServerView>(
    (index, users, kind, before): (u32, u32, StepKind, u32),
    (settle_s, timing): (f64, &Timing),
    (tiers, decides): (&[Tier], &[bool]),
    io: &StepIo<'_, C, S>,
    (last_drain_s, budget_end): (&mut f64, Option<f64>),
) -> Option<CapacityStep> {
    let clock = io.clock;
    let now = || clock.now_secs() - io.origin;
    let phase = |phase, seconds| {
        (io.on_event)(StepEvent::Phase {
            index,
            users,
            phase,
            seconds,
        })
    };
    let changed_s = now();
    let _ = io.control.send(ClassSize {
        students: users as usize,
        join_over_s: timing.join_over_s,
    });
    phase("settling", Some(settle_s));
    wait_until(io, changed_s + settle_s).await?;
    // After a decrease, the calls sent before the change must have been
    // taken in (their first token come) before the window opens: waiting,
    // they are the larger class's queue, which a server slower than the
    // prediction takes longer to work off than the predicted settling;
    // judged while it drains, the smaller class would look worse than it
    // is. Once streaming they hold no more than the seats the smaller
    // class fills too. After an increase they are the smaller class's,
    // lighter than the new load: the settling covers the rise.
    let longest = timing.settle.longest_s().filter(|_| users < before);
    if let Some(cap_s) = longest {
        while io
            .class
            .status()
            .open_calls()
            .iter()
            .any(|c| c.started_s < changed_s && c.ttft_s.is_none())
            && now() - changed_s < cap_s
        {
            wait_until(io, now() + DRAIN_POLL_S).await?;
        }
    }
    let settle_s = now() - changed_s;
    let start_s = now();
    phase("holding", Some(timing.hold_s));
    let mut holds = 1;
    let mut end_s = start_s + timing.hold_s;
    loop {
        wait_until(io, end_s).await?;
        let window = StepWindow {
            start_s,
            end_s: now(),
        };
        phase("waiting for its calls", None);
        let drained_from = now();
        let (measured, judged) =
            judge_window(users, window, (changed_s, timing), tiers, io).await?;
        *last_drain_s = now() - drained_from;
        // A tier the step decides that its figures cannot call: hold the
        // class at this size one window longer (the window grows; its
        // calls so far stay in it), if the budget has room for it.
        let unsure = judged
            .iter()
            .zip(decides)
            .any(|(t, d)| *d && t.outcome == Outcome::Indeterminate);
        let room = budget_end.is_none_or(|b| now() + timing.hold_s + *last_drain_s <= b);
        if unsure && holds < timing.max_holds && room {
            holds += 1;
            end_s = window.end_s + timing.hold_s;
            phase("holding longer (too close to call)", Some(timing.hold_s));
            continue;
        }
        return Some(CapacityStep {
            index,
            users,
            kind,
            changed_s,
            settle_s,
            window_start_s: window.start_s,
            window_end_s: window.end_s,
            ended_s: now(),
            unfinished: measured.unfinished,
            holds,
            measured: measured.summary,
            predicted: None,
            censoring: measured.censoring,
            tiers: judged,
        });
    }
}

/// A window judged by every tier: once its calls have finished, or sooner
/// when every one has its first token and those still streaming can no
/// longer change any outcome (counted at their best and at their worst),
/// or when the drain's cap is reached; `None` when a stop came first.
async fn judge_window<C: ClassView, S: ServerView>(
    users: u32,
    window: StepWindow,
    (changed_s, timing): (f64, &Timing),
    tiers: &[Tier],
    io: &StepIo<'_, C, S>,
) -> Option<(super::window::Measured, Vec<TierStep>)> {
    let now = || io.clock.now_secs() - io.origin;
    let drained_from = now();
    let timeline = io
        .server
        .window(io.origin + changed_s, io.origin + window.end_s)
        .await;
    let server = (timeline.as_slice(), io.origin);
    loop {
        // What is under way first, then the records: a call or coding
        // request is closed only once recorded, so none falls between.
        let open_calls = io.class.status().open_calls();
        let running = io.class.status().running_tasks();
        let (calls, tasks) = (io.class.calls(), io.class.tasks());
        let records = Records {
            calls: &calls,
            tasks: &tasks,
            running: &running,
            open_calls: &open_calls,
        };
        let measured = measure(users, records, window, server);
        let out_of_time = now() - drained_from >= timing.drain_cap_s;
        if measured.unfinished == 0 || out_of_time {
            let tiers = judge_all(tiers, &measured.summary, &measured.censoring);
            return Some((measured, tiers));
        }
        // Not before every call of the window has its TTFT: an unknown one
        // counted at its worst (never) stretches a percentile's interval
        // so far that its outcome can come out better than with any real
        // value, so the worst case would not bound the outcome.
        let awaited = open_calls
            .iter()
            .any(|c| window.started_in(c.started_s) && c.ttft_s.is_none());
        if awaited {
            wait_until(io, now() + DRAIN_POLL_S).await?;
            continue;
        }
        let (best, worst) = bounds(users, records, window, server);
        let at_best = judge_all(tiers, &best, &measured.censoring);
        let at_worst = judge_all(tiers, &worst, &measured.censoring);
        let same = at_best
            .iter()
            .zip(&at_worst)
            .all(|(b, w)| b.outcome == w.outcome);
        if same {
            // The figures so far, each target decided where its best and
            // worst agree. A figure the same at both (a TTFT, every call's
            // known) is exact: it is shown with the streaming calls in it.
            let mut judged = judge_all(tiers, &measured.summary, &measured.censoring);
            for ((t, b), w) in judged.iter_mut().zip(&at_best).zip(&at_worst) {
                t.outcome = w.outcome;
                for ((c, cb), cw) in t.checks.iter_mut().zip(&b.checks).zip(&w.checks) {
                    if cb.measured == cw.measured && cb.interval == cw.interval {
                        *c = cw.clone();
                    } else if cb.outcome == cw.outcome {
                        c.outcome = cw.outcome;
                    }
                }
            }
            return Some((measured, judged));
        }
        wait_until(io, now() + DRAIN_POLL_S).await?;
    }
}

/// Every tier's judgement of a step with these figures.
fn judge_all(tiers: &[Tier], summary: &ClassroomSummary, censoring: &Censoring) -> Vec<TierStep> {
    tiers
        .iter()
        .map(|t| judge_step(t, summary, censoring))
        .collect()
}

/// The steps' figures again once the class is over, every call started in
/// a window finished: each step's measurement and its checks' figures,
/// the outcome the search went on kept (the calls still running when it
/// was judged could not change it).
pub fn finish_steps(
    steps: &mut [CapacityStep],
    tiers: &[Tier],
    r: Records<'_>,
    server: Server<'_>,
) {
    for step in steps.iter_mut() {
        let window = StepWindow {
            start_s: step.window_start_s,
            end_s: step.window_end_s,
        };
        let m = measure(step.users, r, window, server);
        let again = judge_all(tiers, &m.summary, &m.censoring);
        for (t, fresh) in step.tiers.iter_mut().zip(again) {
            t.checks = fresh.checks;
        }
        step.measured = m.summary;
        step.censoring = m.censoring;
    }
}

/// Waits until `t` (seconds since the class started); `None` when a stop
/// comes first.
async fn wait_until<C, S>(io: &StepIo<'_, C, S>, t: f64) -> Option<()> {
    let mut stop = io.stop.clone();
    if *stop.borrow() {
        return None;
    }
    let at = Duration::from_secs_f64((io.origin + t).max(0.0));
    // A dropped sender never stops.
    let stopped = async {
        if stop.wait_for(|s| *s).await.is_err() {
            std::future::pending::<()>().await;
        }
    };
    tokio::select! {
        // In order: a run in virtual time is the same every time.
        biased;
        _ = io.clock.sleep_until(at) => Some(()),
        _ = stopped => None,
    }
}
