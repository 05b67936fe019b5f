//! `codendum capacity` as a workload of the run lifecycle
//! ([`super::run`]): before the server is touched, the twin's prediction
//! (its own search in virtual time) and the plan it makes (the steps, their
//! settling, the server time); then one class on the server for the whole
//! search, its steps chosen around the prediction; at the end the same
//! steps on the twin beside the measurements, each tier's answer, and
//! `capacity.json` with the class's records and the server's timeline.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use super::class_side::{class_server, STOP_GRACE};
use super::guard::TimelineFlag;
use super::sampling::Sampling;
use super::workload::{Ctx, Finished, RunIo, Started, Workload};
use crate::capacity::answer::{answers, Finished as SearchDone};
use crate::capacity::engine::{
    finish_steps, run_steps, Ended, Recorded, ServerView, Settle, StepEvent, StepIo, Timing,
};
use crate::capacity::predict::{predict, predict_steps, Predicted, TwinClass};
use crate::capacity::search::SearchBounds;
use crate::capacity::settings::{mean_step_s, plan_prediction};
use crate::capacity::students::{spawn_class, Students};
use crate::capacity::text::{
    minutes, predicted_text, step_line, steps_table, summary_line, targets_text,
};
use crate::capacity::window::Records;
use crate::classroom::{ClassSize, ClassroomConfig, JsonlSink, LiveStatus, RecordSink};
use crate::events::{Event, Events};
use crate::settings::{RunSettings, Server};
use codendum_core::access::Secret;
use codendum_core::clock::Clock;
use codendum_core::error::{Check, Error};
use codendum_core::prom::TimelineSample;
use codendum_core::results::capacity::{
    CapacityParameters, CapacityResults, CapacityStep, Prediction, TierSpec, CAPACITY_JSON,
};
use codendum_core::results::target_list::TargetList;
use codendum_core::results::{FolderKind, Verdict};

pub use crate::capacity::settings::{
    CapacitySettings, TiersFrom, DEFAULT_HOLD, DEFAULT_JOIN_OVER, DEFAULT_MAX_USERS,
};

/// What a finished search returns.
#[derive(Debug)]
pub struct CapacityResult {
    /// The results folder.
    pub folder: PathBuf,
    /// `capacity.json` as written.
    pub results: CapacityResults,
    /// Whether a stop ended it.
    pub interrupted: bool,
}

impl Finished for CapacityResult {
    fn folder(&self) -> &Path {
        &self.folder
    }

    fn verdict(&self) -> Option<&Verdict> {
        None
    }

    fn interrupted(&self) -> bool {
        self.interrupted
    }

    fn table(&self) -> String {
        let r = &self.results;
        let mut out = steps_table(&r.steps);
        for a in &r.answers {
            out.push_str(&format!("{}\n", a.sentence));
            if let Some(m) = &a.more_time {
                out.push_str(&format!("  {m}\n"));
            }
        }
        out.push_str(&format!(
            "server time {} (estimated {}); {}\n",
            minutes(r.server_time_s),
            minutes(r.prediction.server_time_s),
            r.summary
        ));
        out
    }
}

/// Runs the search against `server`; an interrupted one writes what it
/// measured and returns [`Error::Interrupted`].
pub async fn run(
    server: &Server,
    settings: &RunSettings,
    capacity: &CapacitySettings,
    io: RunIo<'_>,
) -> Result<CapacityResult, Error> {
    super::run::run(server, settings, &Capacity(capacity), io).await
}

/// The search workload.
struct Capacity<'a>(&'a CapacitySettings);

/// What the search decided before it starts.
struct Prepared {
    class: ClassroomConfig,
    predicted: Predicted,
    bounds: SearchBounds,
    timing: Timing,
    prediction: Prediction,
}

impl Workload for Capacity<'_> {
    type Prepared = Prepared;
    type Output = CapacityResult;
    const TIMELINE: TimelineFlag = TimelineFlag::Report;
    const KIND: FolderKind = FolderKind::Capacity;

    fn max_in_flight(&self) -> usize {
        self.0.max_users as usize * 2
    }

    fn student_keys(&self) -> Vec<Secret> {
        self.0.class.api_keys.clone()
    }

    fn agent_spread(&self) -> Option<std::sync::Arc<codendum_core::class::AgentSpread>> {
        Some(self.0.class.agent_spread())
    }

    fn plan_on_twin(&self) -> bool {
        true
    }

    async fn prepare(&self, ctx: &Ctx<'_>) -> Result<(Prepared, String), Error> {
        let s = self.0;
        let mut class = s.class.clone();
        class.model = ctx.facts.model.clone();
        if class.context_limit.is_none() {
            class.context_limit = ctx.facts.max_model_len;
        }
        // Replayed sessions bring their own sizes; only a simulated class
        // must fit the server's context.
        if s.replay.is_none() {
            class.check()?;
        }
        if let Some(note) = class.key_sharing_note() {
            ctx.events.note(note);
        }
        for why in &s.left_out {
            ctx.events.note(why.clone());
        }
        let request_timeout = ctx.run.client.request_timeout;
        let predicted = {
            let (profile, class, tiers) = (s.profile.clone(), s.class.clone(), s.tiers.clone());
            let replay = s.replay.clone();
            let timing = s.timing(&[], request_timeout);
            let max = s.max_users;
            tokio::task::spawn_blocking(move || {
                let input = TwinClass {
                    profile: &profile,
                    class: &class,
                    replay: replay.as_ref(),
                    tiers: &tiers,
                };
                predict(&input, max, &timing)
            })
            .await
            .map_err(|e| Error::Failed(format!("the prediction stopped: {e}")))??
        };
        let bounds = s.bounds(&predicted);
        let timing = s.timing(&predicted.plateaus, request_timeout);
        let prediction = plan_prediction(&predicted, &s.search(&predicted, bounds), &timing);
        let plan = plan_text(
            s,
            ctx,
            &class,
            (&prediction, &predicted.clears),
            (bounds, &timing),
        );
        Ok((
            Prepared {
                class,
                predicted,
                bounds,
                timing,
                prediction,
            },
            plan,
        ))
    }

    async fn execute(
        &self,
        p: Prepared,
        ctx: &Ctx<'_>,
        started: Started,
    ) -> Result<CapacityResult, Error> {
        let s = self.0;
        let (conn, events) = (ctx.conn, ctx.events);
        let Started {
            folder,
            started_utc,
            sampling,
            router: _,
        } = started;
        let clock = conn.clock.clone();
        let sink = Arc::new(JsonlSink::in_folder(&folder)?);
        let status = Arc::new(LiveStatus::new(clock.clone()));
        let (control, rx) = watch::channel(ClassSize {
            students: 0,
            join_over_s: p.timing.join_over_s,
        });
        let origin = clock.now_secs();
        let class_task = {
            let students = match &s.replay {
                Some(r) => {
                    let key = ctx.run.client.api_key.clone();
                    let key = key.or_else(|| p.class.api_keys.first().cloned());
                    // The server's chat template is measured by the class
                    // itself, once the search has been agreed to.
                    let server = (p.class.model.as_str(), ctx.facts.max_model_len);
                    let config = r.config(server, p.class.seed, key);
                    Students::Replayed(Arc::clone(r), config)
                }
                None => Students::Simulated(p.class.clone()),
            };
            let sink: Arc<dyn RecordSink> = sink.clone();
            let io = (conn.client.transport(), clock.clone());
            spawn_class(
                students,
                io,
                (sink, status.clone()),
                rx,
                Some(ctx.stop.clone()),
            )
        };
        let phase = Arc::new(Mutex::new(String::new()));
        let status_task = tokio::spawn(show_status(status.clone(), phase.clone(), events.clone()));
        let mut search = s.search(&p.predicted, p.bounds);
        let on_event = |e: StepEvent<'_>| match e {
            StepEvent::Phase {
                index,
                users,
                phase: what,
                seconds,
            } => {
                if let Ok(mut ph) = phase.lock() {
                    *ph = match seconds {
                        Some(s) => format!("step {index}, {users} students, {what} for {s:.0} s"),
                        None => format!("step {index}, {users} students, {what}"),
                    };
                }
            }
            StepEvent::Judged(step) => events.emit(Event::Line(step_line(step))),
        };
        let view = Recorded {
            sink: sink.memory(),
            status: status.as_ref(),
        };
        let server = SamplingView {
            sampling: &sampling,
            clock: &clock,
        };
        let io = StepIo {
            control: &control,
            class: &view,
            server: &server,
            clock: &clock,
            origin,
            stop: ctx.stop.clone(),
            on_event: &on_event,
        };
        let run = run_steps(&mut search, &s.tiers, &p.timing, io).await;
        // The class ends: every student finishes the call in flight.
        drop(control);
        let grace = match run.ended {
            Ended::Stopped => STOP_GRACE,
            _ => Duration::from_secs_f64(p.timing.drain_cap_s),
        };
        let ended = clock.timeout(grace, class_task).await;
        status_task.abort();
        events.emit(Event::StatusDone);
        if let Ok(Ok(Ok(notes))) = ended {
            for note in notes {
                events.warn(note);
            }
        }
        let has_metrics = !matches!(sampling, Sampling::Off);
        sampling.mark_end().await;
        let span = clock.now_secs() - origin;
        let read = sampling
            .finish(&clock, &folder, (origin, origin + span), events)
            .await;
        let mut steps = run.steps;
        let timeline = read.fleet;
        let (calls, tasks) = (sink.requests(), sink.tasks());
        let records = Records {
            calls: &calls,
            tasks: &tasks,
            running: &status.running_tasks(),
            open_calls: &status.open_calls(),
        };
        finish_steps(&mut steps, &s.tiers, records, (&timeline, origin));
        fill_predictions(s, &p, &mut steps, events).await;
        let step_s = mean_step_s(&steps, &p.timing);
        let answers = answers(&SearchDone {
            search: &search,
            bounds: p.bounds,
            steps: &steps,
            predicted: &p.predicted.answers,
            ended: run.ended,
            step_s,
        });
        match run.ended {
            Ended::Budget => events.warn(format!(
                "the search stopped at its server-time budget ({}) before every tier was answered",
                minutes(p.timing.budget_s.unwrap_or(0.0))
            )),
            Ended::StepCap => events.warn(format!(
                "the search stopped after {} steps before every tier was answered",
                steps.len()
            )),
            _ => {}
        }
        let interrupted = run.ended == Ended::Stopped;
        let results = CapacityResults {
            header: CapacityResults::header(started_utc, clock.utc_now(), interrupted),
            parameters: parameters(s, &p, clock.scale()),
            server: class_server(conn, ctx.facts, &p.class.model, has_metrics),
            prediction: p.prediction.clone(),
            summary: summary_line(&answers),
            steps,
            answers,
            server_time_s: run.server_time_s,
        };
        folder.write_json(CAPACITY_JSON, &results)?;
        Ok(CapacityResult {
            folder: folder.into_path(),
            results,
            interrupted,
        })
    }
}

/// The sampling as a step's view of the server.
struct SamplingView<'a> {
    sampling: &'a Sampling,
    clock: &'a Clock,
}

impl ServerView for SamplingView<'_> {
    async fn window(&self, t0: f64, t1: f64) -> Vec<TimelineSample> {
        match self.sampling {
            Sampling::Sampler(s) => s.timeline(),
            Sampling::Prometheus(p) => {
                let opened = p.opened();
                let lag = opened.source.step();
                // Prometheus holds a scrape a step or two after it happens.
                self.clock.sleep(lag * 2).await;
                opened
                    .source
                    .fetch(
                        &opened.instances,
                        self.clock,
                        (t0 - 2.0).floor(),
                        t1 + lag.as_secs_f64(),
                    )
                    .await
                    .map(|(fleet, _)| fleet)
                    .unwrap_or_default()
            }
            Sampling::Off => Vec::new(),
        }
    }
}

/// The status line every second: the step's phase, then the class's
/// figures (a reporter on a terminal redraws it in place).
async fn show_status(status: Arc<LiveStatus>, phase: Arc<Mutex<String>>, events: Events) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let now = phase.lock().map(|p| p.clone()).unwrap_or_default();
        events.emit(Event::Status(format!("{now} | {}", status.snapshot())));
    }
}

/// The plan shown before the search, and asked about against a live
/// server.
fn plan_text(
    s: &CapacitySettings,
    ctx: &Ctx<'_>,
    class: &ClassroomConfig,
    (prediction, clears): (&Prediction, &[(u32, f64)]),
    (bounds, timing): (SearchBounds, &Timing),
) -> String {
    let mut out = format!(
        "Capacity search against {}, model {}: how many students it carries, per tier\n",
        ctx.facts.label, class.model
    );
    let tiers: Vec<String> = s
        .tiers
        .iter()
        .map(|t| format!("{} ({})", t.name, targets_text(t)))
        .collect();
    out.push_str(&format!(
        "  tiers from {}: {}\n",
        s.tiers_from.name(),
        tiers.join("; ")
    ));
    out.push_str(&format!(
        "  the twin (profile {}, {:.1} s in virtual time) predicts: {}\n",
        s.profile.name,
        prediction.wall_s,
        predicted_text(&prediction.tiers)
    ));
    let confirms = prediction.planned.len().saturating_sub(
        prediction
            .planned
            .iter()
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
    );
    let path: Vec<String> = prediction.planned.iter().map(u32::to_string).collect();
    out.push_str(&format!(
        "  steps if the server behaves as the twin: {} ({} steps, {} of them holding an answer again; to within {})\n",
        path.join(" → "),
        prediction.planned.len(),
        confirms,
        match bounds.resolution {
            1 => "one student".to_string(),
            r => format!("{r} students"),
        }
    ));
    let settles: Vec<f64> = prediction
        .planned
        .iter()
        .map(|n| timing.settle.for_users(*n))
        .collect();
    let (lo, hi) = settles
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(a, b), x| (a.min(*x), b.max(*x)));
    let settle = match &timing.settle {
        Settle::Fixed(x) => format!("settles {x:.0} s (--settle)"),
        Settle::Predicted { floor_s, .. } if lo.is_finite() => format!(
            "settles {} s (the twin's time for the requests at the server to level off after the change, at least {floor_s:.0} s)",
            if hi - lo < 0.5 {
                format!("{lo:.0}")
            } else {
                format!("{lo:.0}–{hi:.0}")
            }
        ),
        Settle::Predicted { floor_s, .. } => format!("settles at least {floor_s:.0} s"),
    };
    // Past its settling a step waits for the calls sent before its change
    // to be taken in.
    let clear = match timing.settle.longest_s() {
        Some(cap) => clears
            .iter()
            .map(|(_, s)| s.min(cap))
            .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))))
            .map(|s| format!(" and, after a decrease, until the calls sent before it have their first token (the twin's: up to {s:.0} s)"))
            .unwrap_or_default(),
        None => String::new(),
    };
    out.push_str(&format!(
        "  each step: new students join over {:.0} s; it {settle}{clear}; then a {:.0} s window is judged on its own (the calls started in it, judged as soon as those still running cannot change the outcome, a call already streaming with its TTFT known; the coding requests completed in it, those still running counted as such){}\n",
        timing.join_over_s,
        timing.hold_s,
        match timing.max_holds {
            0 | 1 => String::new(),
            n => format!("; a step too close to call is held longer, up to {n} windows while the budget allows"),
        }
    ));
    let budget = timing
        .budget_s
        .map(|b| format!("; it stops at {} (--budget)", minutes(b)))
        .unwrap_or_default();
    // A server carrying fewer may need more steps or fewer: "up to" only
    // when it is more.
    let (twin_s, off_s) = (prediction.server_time_s, prediction.server_time_if_off_s);
    let off = if off_s > twin_s { "up to " } else { "" };
    out.push_str(&format!(
        "  server time: about {} if the server behaves as the twin, {off}{} if it carries a fifth fewer{budget}\n",
        minutes(twin_s),
        minutes(off_s)
    ));
    let students = match &s.replay {
        Some(r) => format!(
            "{} recorded sessions ({} calls) from {}, replayed as users: each seat replays the next session, and after the last the trace starts again with fresh text (seed {})",
            r.sessions(),
            r.trace.calls.len(),
            r.source.display(),
            class.seed
        ),
        None => format!(
            "class {}, {} scenario, seed {}",
            class.class.name,
            class.scenario.name(),
            class.seed
        ),
    };
    out.push_str(&format!(
        "  students: {students}; results in {}",
        ctx.run.results_dir.display()
    ));
    out
}

/// Each step's prediction beside its measurement: the live steps again on
/// the twin. A prediction that cannot be made is said and left out.
async fn fill_predictions(
    s: &CapacitySettings,
    p: &Prepared,
    steps: &mut [CapacityStep],
    events: &Events,
) {
    if steps.is_empty() {
        return;
    }
    let (profile, class, tiers) = (s.profile.clone(), s.class.clone(), s.tiers.clone());
    let replay = s.replay.clone();
    let (timing, live) = (p.timing.clone(), steps.to_vec());
    let replayed = tokio::task::spawn_blocking(move || {
        let input = TwinClass {
            profile: &profile,
            class: &class,
            replay: replay.as_ref(),
            tiers: &tiers,
        };
        predict_steps(&input, &live, &timing)
    })
    .await;
    match replayed {
        Ok(Ok(figures)) => {
            for (step, (summary, _)) in steps.iter_mut().zip(figures) {
                step.predicted = Some(summary);
            }
        }
        Ok(Err(e)) => events.warn(format!(
            "the twin's figures for the steps could not be made: {e}"
        )),
        Err(e) => events.warn(format!(
            "the twin's figures for the steps could not be made: {e}"
        )),
    }
}

/// What `capacity.json` records as asked.
fn parameters(s: &CapacitySettings, p: &Prepared, clock_scale: f64) -> CapacityParameters {
    CapacityParameters {
        profile: s.profile.name.clone(),
        tiers_from: s.tiers_from.name().into(),
        tiers: s
            .tiers
            .iter()
            .map(|t| TierSpec {
                name: t.name.clone(),
                targets: TargetList::from(&t.targets),
            })
            .collect(),
        left_out: s.left_out.clone(),
        max_users: p.bounds.max_users,
        hold_s: p.timing.hold_s,
        join_over_s: p.timing.join_over_s,
        resolution: p.bounds.resolution,
        budget_s: p.timing.budget_s,
        workload: if s.replay.is_some() {
            "replay"
        } else {
            "class"
        }
        .into(),
        replayed_from: s.replay.as_ref().map(|r| r.source.display().to_string()),
        replayed_sessions: s.replay.as_ref().map(|r| r.sessions()),
        scenario: p.class.scenario.name().into(),
        seed: p.class.seed,
        clock_scale,
    }
}
