//! The twin's side of a search, in virtual time (the classroom joined to
//! the twin in process on a paused clock, as `plan` runs its cells): before
//! the server is touched, the same search against the twin of the profile
//! the user names, bounded over `1..=max` (it has no guess), which gives
//! each tier's predicted answer and, for each size it tried, how long the
//! load took to reach its plateau; after the live search, the live steps
//! again on the twin (the same sizes at the same times), so that every
//! step's measurement has the twin's figures beside it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::engine::{
    finish_steps, run_steps, Recorded, SearchRun, ServerView, Settle, StepIo, Timing,
};
use super::search::Search;
use super::search::SearchBounds;
use super::settle::{time_to_clear, time_to_plateau};
use super::students::{spawn_class, ReplayedSessions, Students};
use super::window::{measure, Records, StepWindow};
use crate::classroom::{ClassSize, ClassroomConfig, LiveStatus, MemorySink};
use crate::virtual_time::{on_paused_runtime, SAMPLE_INTERVAL};
use codendum_core::class::AgentSpread;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::openai::Transport;
use codendum_core::profile::fleet::FleetSpec;
use codendum_core::profile::Profile;
use codendum_core::prom::TimelineSample;
use codendum_core::results::capacity::{CapacityStep, Censoring, PredictedTier};
use codendum_core::results::ClassroomSummary;
use codendum_core::targets::Tier;
use codendum_twin::fleet::{FleetSampler, FleetTransport};
use codendum_twin::inproc::{InProcTransport, StatsSampler};
use codendum_twin::persona::AgentPersona;
use codendum_twin::TwinOptions;

/// How long the twin watches each change of its own search, simulated
/// seconds: the time to plateau is read within it, and it bounds the
/// settling of a live step.
pub const WATCH_S: f64 = 480.0;

/// What the twin predicts with.
#[derive(Debug, Clone)]
pub struct TwinClass<'a> {
    /// The profile the twin runs (a `[fleet]` of several replicas runs as
    /// a fleet behind its router).
    pub profile: &'a Profile,
    /// The students (their model and context limit are the profile's).
    pub class: &'a ClassroomConfig,
    /// Recorded sessions replayed as the students instead.
    pub replay: Option<&'a Arc<ReplayedSessions>>,
    /// The tiers.
    pub tiers: &'a [Tier],
}

/// The twin's own search.
#[derive(Debug, Clone, PartialEq)]
pub struct Predicted {
    /// Each tier's predicted answer, in the tiers' order.
    pub answers: Vec<PredictedTier>,
    /// Its steps.
    pub steps: Vec<CapacityStep>,
    /// Each size it tried and its seconds to plateau.
    pub plateaus: Vec<(u32, f64)>,
    /// Each change it made after the first: the larger of the sizes before
    /// and after, and the seconds until the calls sent before the change
    /// had ended ([`time_to_clear`]), which a live step waits past its
    /// settling.
    pub clears: Vec<(u32, f64)>,
    /// Real seconds it took.
    pub wall_s: f64,
}

/// The twin in process: one engine or a fleet, and its sampler.
enum Twin {
    One(Arc<InProcTransport>, StatsSampler),
    Fleet(Arc<FleetTransport>, FleetSampler),
}

impl Twin {
    /// The twin of `profile` whose persona answers as `agent` says (the
    /// class's agent spread).
    fn start(
        profile: &Profile,
        (seed, agent): (u64, Arc<AgentSpread>),
        clock: &Clock,
        timeout: Duration,
    ) -> Twin {
        let mut opts = TwinOptions::new(profile.clone());
        opts.clock = clock.clone();
        opts.responder = Arc::new(AgentPersona::with_spread(seed, agent));
        opts.seed = seed;
        if profile.fleet.replicas > 1 {
            let spec = FleetSpec {
                replicas: profile.fleet.replicas,
                router: profile.fleet.router,
            };
            let fleet = Arc::new(FleetTransport::start(opts, spec).with_timeout(Some(timeout)));
            let sampler = FleetSampler::spawn(Arc::clone(&fleet), SAMPLE_INTERVAL);
            Twin::Fleet(fleet, sampler)
        } else {
            let one = Arc::new(InProcTransport::start(opts).with_timeout(Some(timeout)));
            let sampler = StatsSampler::spawn(Arc::clone(&one), SAMPLE_INTERVAL);
            Twin::One(one, sampler)
        }
    }

    fn transport(&self) -> Arc<dyn Transport> {
        match self {
            Twin::One(t, _) => t.clone(),
            Twin::Fleet(f, _) => f.clone(),
        }
    }

    fn so_far(&self) -> Vec<TimelineSample> {
        match self {
            Twin::One(_, s) => s.so_far(),
            Twin::Fleet(_, s) => s.fleet_so_far(),
        }
    }

    fn stop(self) -> Vec<TimelineSample> {
        match self {
            Twin::One(t, s) => {
                let line = s.finish();
                t.stop();
                line
            }
            Twin::Fleet(f, s) => {
                let line = s.finish().fleet;
                f.stop();
                line
            }
        }
    }
}

impl ServerView for Twin {
    async fn window(&self, _t0: f64, _t1: f64) -> Vec<TimelineSample> {
        self.so_far()
    }
}

/// The class against the twin, on the current (paused) runtime: the
/// twin, the class's records and status, its control, and the class's
/// task.
struct Running {
    twin: Twin,
    sink: Arc<MemorySink>,
    status: Arc<LiveStatus>,
    control: watch::Sender<ClassSize>,
    class: tokio::task::JoinHandle<Result<Vec<String>, Error>>,
    clock: Clock,
    origin: f64,
}

fn start(input: &TwinClass<'_>, timing: &Timing) -> Running {
    let clock = Clock::scaled(1.0);
    let mut class = input.class.clone();
    class.model = input.profile.server.served_model_name.clone();
    class.context_limit = Some(u64::from(input.profile.server.max_model_len));
    let twin = Twin::start(
        input.profile,
        (class.seed, class.agent_spread()),
        &clock,
        Duration::from_secs_f64(timing.drain_cap_s.max(1.0)),
    );
    let sink = Arc::new(MemorySink::default());
    let status = Arc::new(LiveStatus::new(clock.clone()));
    let (control, rx) = watch::channel(ClassSize {
        students: 0,
        join_over_s: timing.join_over_s,
    });
    let origin = clock.now_secs();
    let students = match input.replay {
        Some(r) => {
            let limit = class.context_limit;
            let config = r.config((&class.model, limit), class.seed, None);
            Students::Replayed(Arc::clone(r), config)
        }
        None => Students::Simulated(class),
    };
    let task = {
        let sink: Arc<dyn crate::classroom::RecordSink> = sink.clone();
        let io = (twin.transport(), clock.clone());
        spawn_class(students, io, (sink, status.clone()), rx, None)
    };
    Running {
        twin,
        sink,
        status,
        control,
        class: task,
        clock,
        origin,
    }
}

impl Running {
    /// Ends the class (the calls in flight finish) and the twin; the
    /// twin's timeline.
    async fn end(self) -> Result<Vec<TimelineSample>, Error> {
        drop(self.control);
        self.class
            .await
            .map_err(|_| Error::Failed("the simulated class stopped unexpectedly".into()))??;
        Ok(self.twin.stop())
    }
}

/// A search against the twin of `input.profile` in virtual time, as it
/// ended.
#[derive(Debug, Clone, PartialEq)]
pub struct TwinRun {
    /// Its steps.
    pub run: SearchRun,
    /// The search as it ended.
    pub search: Search,
    /// Each size it tried and its seconds to plateau.
    pub plateaus: Vec<(u32, f64)>,
    /// Each change after the first: the larger size and the seconds until
    /// the calls sent before it had ended.
    pub clears: Vec<(u32, f64)>,
    /// Real seconds it took.
    pub wall_s: f64,
}

impl TwinRun {
    /// Each tier's answer as the search ended: (students carried, the
    /// largest size not yet missed), in the tiers' order.
    pub fn answers(&self) -> Vec<(u32, u32)> {
        self.search
            .tiers()
            .iter()
            .map(|t| (t.bisection.answer(), t.bisection.upper()))
            .collect()
    }
}

/// Runs `search` against the twin of `input.profile` in virtual time: the
/// steps of [`run_steps`], their figures taken again once the class is
/// over, and each step's time to plateau and to clear the calls sent
/// before it.
pub fn search_on_twin(
    input: &TwinClass<'_>,
    mut search: Search,
    timing: &Timing,
) -> Result<TwinRun, Error> {
    let began = Instant::now();
    let (run, search, timeline, origin, clears) = on_paused_runtime(async {
        let running = start(input, timing);
        let (_keep, stop) = watch::channel(false);
        let view = Recorded {
            sink: running.sink.as_ref(),
            status: running.status.as_ref(),
        };
        let io = StepIo {
            control: &running.control,
            class: &view,
            server: &running.twin,
            clock: &running.clock,
            origin: running.origin,
            stop,
            on_event: &|_| {},
        };
        let mut run = run_steps(&mut search, input.tiers, timing, io).await;
        let origin = running.origin;
        let (sink, status) = (running.sink.clone(), running.status.clone());
        let timeline = running.end().await?;
        let (calls, tasks) = (sink.requests(), sink.tasks());
        let records = Records {
            calls: &calls,
            tasks: &tasks,
            running: &status.running_tasks(),
            open_calls: &[],
        };
        finish_steps(&mut run.steps, input.tiers, records, (&timeline, origin));
        let clears: Vec<(u32, f64)> = run
            .steps
            .windows(2)
            .map(|w| {
                let larger = w[0].users.max(w[1].users);
                (larger, time_to_clear(&calls, w[1].changed_s))
            })
            .collect();
        Ok((run, search, timeline, origin, clears))
    })?;
    let plateaus = run
        .steps
        .iter()
        .filter_map(|s| {
            let t = time_to_plateau(&timeline, origin + s.changed_s, origin + s.window_end_s)?;
            Some((s.users, t))
        })
        .collect();
    Ok(TwinRun {
        run,
        search,
        plateaus,
        clears,
        wall_s: began.elapsed().as_secs_f64(),
    })
}

/// The twin's own search: bounded over `1..=max_users`, each change
/// watched for [`WATCH_S`] before the step's window of `timing.hold_s`.
pub fn predict(input: &TwinClass<'_>, max_users: u32, timing: &Timing) -> Result<Predicted, Error> {
    let names: Vec<String> = input.tiers.iter().map(|t| t.name.clone()).collect();
    let timing = Timing {
        settle: Settle::Fixed(WATCH_S),
        budget_s: None,
        max_holds: 1,
        ..timing.clone()
    };
    let twin = search_on_twin(input, Search::bounded(&names, max_users), &timing)?;
    let answers = twin
        .search
        .tiers()
        .iter()
        .map(|t| PredictedTier {
            tier: t.name.clone(),
            carries: t.bisection.answer(),
            upper: t.bisection.upper(),
        })
        .collect();
    Ok(Predicted {
        answers,
        steps: twin.run.steps,
        plateaus: twin.plateaus,
        clears: twin.clears,
        wall_s: twin.wall_s,
    })
}

/// One class of `users` students held at that size from its start against
/// the twin of `input.profile` (settling `timing`'s settle, then its
/// window), judged by every tier: a class size tried by hand.
pub fn hold_on_twin(
    input: &TwinClass<'_>,
    users: u32,
    timing: &Timing,
) -> Result<CapacityStep, Error> {
    let tiers: Vec<(String, u32)> = input
        .tiers
        .iter()
        .map(|t| (t.name.clone(), users))
        .collect();
    let bounds = SearchBounds {
        max_users: users,
        resolution: 1,
        confirm: false,
    };
    let once = Timing {
        step_cap: 1,
        budget_s: None,
        ..timing.clone()
    };
    let twin = search_on_twin(input, Search::around(&tiers, bounds), &once)?;
    twin.run
        .steps
        .into_iter()
        .next()
        .ok_or_else(|| Error::Failed(format!("the class of {users} students was not judged")))
}

/// The live steps again on the twin: the class set to each step's size at
/// the time the live search set it, every window measured as the live one
/// was. One entry per step.
pub fn predict_steps(
    input: &TwinClass<'_>,
    steps: &[CapacityStep],
    timing: &Timing,
) -> Result<Vec<(ClassroomSummary, Censoring)>, Error> {
    let Some(last) = steps.last() else {
        return Ok(Vec::new());
    };
    let last_end = last.window_end_s;
    on_paused_runtime(async {
        let running = start(input, timing);
        let at = |t: f64| Duration::from_secs_f64(running.origin + t);
        for s in steps {
            running.clock.sleep_until(at(s.changed_s)).await;
            let _ = running.control.send(ClassSize {
                students: s.users as usize,
                join_over_s: timing.join_over_s,
            });
        }
        running.clock.sleep_until(at(last_end)).await;
        let drain_until = last_end + timing.drain_cap_s;
        while running
            .status
            .open_calls()
            .iter()
            .any(|c| c.started_s < last_end)
            && running.clock.now_secs() - running.origin < drain_until
        {
            running.clock.sleep(Duration::from_secs(1)).await;
        }
        let open_calls = running.status.open_calls();
        let open = running.status.running_tasks();
        let (calls, tasks) = (running.sink.requests(), running.sink.tasks());
        let timeline = running.twin.so_far();
        let origin = running.origin;
        let records = Records {
            calls: &calls,
            tasks: &tasks,
            running: &open,
            open_calls: &open_calls,
        };
        let figures = steps
            .iter()
            .map(|s| {
                let window = StepWindow {
                    start_s: s.window_start_s,
                    end_s: s.window_end_s,
                };
                let m = measure(s.users, records, window, (&timeline, origin));
                (m.summary, m.censoring)
            })
            .collect();
        running.end().await?;
        Ok(figures)
    })
}
