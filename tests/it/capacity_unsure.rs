//! A capacity search against a scripted server whose TTFT P95 sits exactly
//! on the tier's ceiling at one class size: that step's figure has a 95 %
//! interval straddling the limit, so it is too close to call
//! (indeterminate), not met or missed. The search holds that size longer
//! while it may, then answers with a range that includes it, and says
//! what more time would buy. In virtual time (the continuous class and the
//! search's steps on a paused clock), a few seconds.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use tokio::sync::watch;

use crate::classroom_support::ScriptedModel;
use codendum::capacity::answer::{answers, Finished};
use codendum::capacity::engine::{run_steps, Ended, Recorded, Settle, StepIo, Timing};
use codendum::capacity::search::{Search, SearchBounds};
use codendum::classroom::{
    run_continuous_class, ClassSize, ClassroomConfig, LiveStatus, MemorySink,
};
use codendum::virtual_time::on_paused_runtime;
use codendum_core::bound::Outcome;
use codendum_core::clock::Clock;
use codendum_core::openai::{CallOutcome, CallRequest, Transport};
use codendum_core::prom::TimelineSample;
use codendum_core::results::capacity::{CapacityStep, TierAnswer};
use codendum_core::targets::parse_tiers;

/// The tier's TTFT P95 ceiling, seconds.
const LIMIT_S: f64 = 10.0;
/// The class size at which the server's TTFT P95 is the ceiling.
const EDGE: u32 = 6;
/// The scripted model's own time to first token, seconds.
const MODEL_TTFT_S: f64 = 0.5;
/// The scripted model's own call time, seconds.
const MODEL_CALL_S: f64 = 3.0;

/// A server whose queueing grows with the class: each call first waits a
/// time drawn uniformly from `0..a·n` (`n` students in the class), then the
/// scripted model answers. The TTFT P95 is `0.95·a·n + 0.5 s`, the ceiling
/// exactly at [`EDGE`] students, a sixth below it at one fewer, a sixth
/// above at one more.
struct OnTheLimit {
    model: ScriptedModel,
    size: watch::Receiver<ClassSize>,
    rng: Mutex<ChaCha8Rng>,
    clock: Clock,
}

impl OnTheLimit {
    /// The longest wait per student, seconds.
    fn wait_per_student_s() -> f64 {
        (LIMIT_S - MODEL_TTFT_S) / 0.95 / f64::from(EDGE)
    }
}

impl Transport for OnTheLimit {
    fn call(&self, request: CallRequest) -> BoxFuture<'_, CallOutcome> {
        Box::pin(async move {
            let sent_at = self.clock.now_secs();
            let students = self.size.borrow().students.max(1) as f64;
            let draw: f64 = self.rng.lock().expect("rng").gen_range(0.0..1.0);
            let wait_s = draw * Self::wait_per_student_s() * students;
            self.clock.sleep(Duration::from_secs_f64(wait_s)).await;
            let mut out = self.model.call(request).await;
            out.sent_at = sent_at;
            out.ttft = out.ttft.map(|t| t + wait_s);
            out.e2e = wait_s + MODEL_CALL_S;
            out
        })
    }
}

/// No server figures: the steps are judged on the class's calls.
struct NoMetrics;

impl codendum::capacity::engine::ServerView for NoMetrics {
    async fn window(&self, _t0: f64, _t1: f64) -> Vec<TimelineSample> {
        Vec::new()
    }
}

/// The search around a guess of [`EDGE`] against the scripted server: its
/// steps and the tier's answer.
fn search(max_holds: u32) -> (Vec<CapacityStep>, TierAnswer, Ended) {
    search_around(EDGE, (12, 300.0), max_holds)
}

/// The search around `guess` over `1..=max_users` with windows of
/// `hold_s` against the scripted server: its steps and the tier's answer.
fn search_around(
    guess: u32,
    (max_users, hold_s): (u32, f64),
    max_holds: u32,
) -> (Vec<CapacityStep>, TierAnswer, Ended) {
    let tiers = parse_tiers(&format!("edge:ttft_p95={LIMIT_S}s")).expect("tiers");
    let bounds = SearchBounds {
        max_users,
        resolution: 1,
        confirm: true,
    };
    let timing = Timing {
        hold_s,
        join_over_s: 10.0,
        settle: Settle::Fixed(60.0),
        drain_cap_s: 120.0,
        budget_s: None,
        step_cap: 20,
        max_holds,
    };
    on_paused_runtime(async {
        let clock = Clock::scaled(1.0);
        let (control, rx) = watch::channel(ClassSize {
            students: 0,
            join_over_s: timing.join_over_s,
        });
        let server = Arc::new(OnTheLimit {
            model: ScriptedModel::new(clock.clone()),
            size: control.subscribe(),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(11)),
            clock: clock.clone(),
        });
        let mut class = ClassroomConfig::new("test-model", None);
        class.seed = 5;
        let sink = Arc::new(MemorySink::default());
        let status = Arc::new(LiveStatus::new(clock.clone()));
        let origin = clock.now_secs();
        let task = {
            let (sink, status, clock) = (sink.clone(), status.clone(), clock.clone());
            let transport: Arc<dyn Transport> = server;
            tokio::spawn(async move {
                let sink: Arc<dyn codendum::classroom::RecordSink> = sink;
                run_continuous_class(&class, transport, clock, (sink, status), rx, None).await
            })
        };
        let mut search = Search::around(&[("edge".to_string(), guess)], bounds);
        let (_keep, stop) = watch::channel(false);
        let view = Recorded {
            sink: sink.as_ref(),
            status: status.as_ref(),
        };
        let io = StepIo {
            control: &control,
            class: &view,
            server: &NoMetrics,
            clock: &clock,
            origin,
            stop,
            on_event: &|_| {},
        };
        let run = run_steps(&mut search, &tiers, &timing, io).await;
        drop(control);
        task.await.expect("class task").expect("class");
        let answer = answers(&Finished {
            search: &search,
            bounds,
            steps: &run.steps,
            predicted: &[],
            ended: run.ended,
            step_s: 400.0,
        })
        .remove(0);
        Ok((run.steps, answer, run.ended))
    })
    .expect("searches")
}

fn show(steps: &[CapacityStep], answer: &TierAnswer) {
    for s in steps {
        let c = &s.tiers[0].checks[0];
        eprintln!(
            "step {}: {} students, {} windows, ttft p95 {:?} {:?} over {} calls: {:?}",
            s.index, s.users, s.holds, c.measured, c.interval, s.measured.requests, c.outcome
        );
    }
    eprintln!("{}", answer.sentence);
}

#[test]
fn a_step_whose_ttft_sits_on_the_ceiling_is_held_longer_then_answered_as_a_range() {
    let (steps, answer, ended) = search(3);
    show(&steps, &answer);
    assert_eq!(ended, Ended::Answered);
    // One fewer is clearly within the ceiling, one more clearly past it.
    let outcome_at = |n: u32| {
        steps
            .iter()
            .filter(|s| s.users == n)
            .map(|s| s.tiers[0].outcome)
            .collect::<Vec<_>>()
    };
    assert!(outcome_at(EDGE - 1).iter().all(|o| *o == Outcome::Met));
    assert_eq!(outcome_at(EDGE + 1), [Outcome::Missed]);
    // The size on the ceiling: its figure's interval straddles the limit
    // even after it was held three windows long.
    let edge: Vec<&CapacityStep> = steps.iter().filter(|s| s.users == EDGE).collect();
    assert_eq!(edge.len(), 1, "the size on the ceiling is tried once");
    let edge = edge[0];
    assert_eq!(edge.holds, 3, "held longer while too close to call");
    assert!(
        (edge.window_end_s - edge.window_start_s) >= 3.0 * 300.0,
        "its window grew by a hold each time"
    );
    let check = &edge.tiers[0].checks[0];
    assert_eq!(check.outcome, Outcome::Indeterminate);
    let interval = check.interval.expect("a percentile has its interval");
    assert!(
        interval.contains(LIMIT_S),
        "{interval:?} straddles the ceiling"
    );
    // The answer is the range from the last size met through the size too
    // close to call.
    assert_eq!((answer.carries, answer.upper), (EDGE - 1, EDGE));
    assert_eq!(answer.undecided, [EDGE]);
    assert!(
        answer
            .sentence
            .contains(&format!("carries {} to {EDGE} students", EDGE - 1))
            && answer.sentence.contains("too close to a target to call"),
        "{}",
        answer.sentence
    );
    assert!(answer
        .more_time
        .as_deref()
        .is_some_and(|m| m.contains(&format!("holding {EDGE} students longer"))));
}

#[test]
fn without_room_to_hold_longer_the_step_on_the_ceiling_is_judged_once() {
    let (steps, answer, _) = search(1);
    show(&steps, &answer);
    assert!(steps.iter().all(|s| s.holds == 1));
    let edge = steps
        .iter()
        .find(|s| s.users == EDGE)
        .expect("the size on the ceiling is tried");
    assert_eq!(edge.tiers[0].outcome, Outcome::Indeterminate);
    assert!((answer.carries..=answer.upper).contains(&EDGE));
}

/// Two students in a 60 s window make a handful of calls: their TTFT P95
/// is far under the ceiling, but so few calls give it no upper bound (a
/// P95 needs 72 for one), and the open side is the side that could cross
/// the ceiling. The step is too close to call, not met by its value, and
/// the answer says the size is undecided.
#[test]
fn a_step_with_too_few_calls_for_an_upper_bound_is_too_close_to_call() {
    let (steps, answer, _) = search_around(2, (2, 60.0), 1);
    show(&steps, &answer);
    let two = steps
        .iter()
        .find(|s| s.users == 2)
        .expect("two students are tried");
    assert!(
        (1..72).contains(&two.measured.requests),
        "a few calls: {}",
        two.measured.requests
    );
    let check = &two.tiers[0].checks[0];
    let interval = check.interval.expect("a percentile has its interval");
    assert!(
        interval.hi.is_none(),
        "{interval:?}: too few calls to bound it above"
    );
    assert!(
        check.measured.is_some_and(|v| v < LIMIT_S / 2.0),
        "its value alone is well within the ceiling: {:?}",
        check.measured
    );
    assert_eq!(check.outcome, Outcome::Indeterminate);
    assert_eq!(two.tiers[0].outcome, Outcome::Indeterminate);
    assert!(answer.undecided.contains(&2), "{}", answer.sentence);
    assert!(answer.carries < 2, "{}", answer.sentence);
}
