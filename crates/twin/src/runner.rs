//! The engine loop: one tokio task owns the [`Engine`]. Requests arrive on a
//! channel; while there is work it runs a step, sleeps the modelled duration
//! on the [`Clock`] (until the step's end on the engine's own timeline, so
//! timer overshoot never accumulates) and then hands each request its tokens.
//! How late each hand-over is, against the step's scheduled end, is kept in a
//! [`StepLateness`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;

use super::engine::{Engine, EngineRequest, RequestId};
use super::engine_stats::{EngineStats, FinishReason, Histogram};
use codendum_core::clock::Clock;

/// What the HTTP layer sends the engine task.
#[derive(Debug)]
pub enum EngineCmd {
    /// Queue a request; its tokens go to `events`.
    Add {
        /// The request.
        request: EngineRequest,
        /// When the server received it (simulated): its queue time and TTFT
        /// count from here, though the engine takes it in only between
        /// steps.
        arrived: std::time::Duration,
        /// Where its tokens go.
        events: mpsc::UnboundedSender<EngineEvent>,
    },
    /// The client went away.
    Abort(RequestId),
}

/// What a request hears from the engine.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EngineEvent {
    /// New output tokens, and the finish reason with the last ones.
    Tokens {
        /// How many (0 or 1 per step).
        count: u32,
        /// Set on the last event.
        finish: Option<FinishReason>,
    },
    /// The engine refused the request.
    Rejected(String),
}

/// The latest engine statistics, shared with `/metrics`.
pub type SharedStats = Arc<Mutex<EngineStats>>;

/// Upper bounds of the step-lateness histogram, seconds (simulated).
pub const LATENESS_BUCKETS: &[f64] = &[
    0.0001, 0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.5, 1.0,
];

/// A step counts as on time when it starts at most this share of its
/// modelled duration after the previous step's scheduled end (0.05 = 5 %).
pub const ON_TIME_SHARE: f64 = 0.05;

/// How late the engine task woke after each step, against the step's
/// scheduled end on the engine's timeline: the test of whether the twin
/// keeps up with its own model. Times are simulated seconds.
#[derive(Debug, Clone, PartialEq)]
pub struct StepLateness {
    /// Steps measured.
    pub steps: u64,
    /// Steps whose lateness was at most [`ON_TIME_SHARE`] of their modelled
    /// duration.
    pub on_time: u64,
    /// Lateness per step, seconds ([`LATENESS_BUCKETS`]).
    pub histogram: Histogram,
    /// The largest lateness seen, seconds.
    pub max_seconds: f64,
    /// The largest lateness as a share of its step's duration (0..).
    pub max_share: f64,
    /// The first [`MAX_LATE_STEPS`] steps that were not on time: step number
    /// (0 = the first step measured) and lateness as a share of the step.
    pub late_steps: Vec<(u64, f64)>,
}

/// Most late steps listed in [`StepLateness::late_steps`].
pub const MAX_LATE_STEPS: usize = 32;

impl Default for StepLateness {
    fn default() -> Self {
        StepLateness {
            steps: 0,
            on_time: 0,
            histogram: Histogram::new(LATENESS_BUCKETS),
            max_seconds: 0.0,
            max_share: 0.0,
            late_steps: Vec::new(),
        }
    }
}

impl StepLateness {
    /// Records one step of modelled `duration` that woke `late` seconds
    /// after its scheduled end (both simulated seconds).
    pub fn record(&mut self, duration: f64, late: f64) {
        let late = late.max(0.0);
        let share = if duration > 0.0 { late / duration } else { 0.0 };
        if share <= ON_TIME_SHARE {
            self.on_time += 1;
        } else if self.late_steps.len() < MAX_LATE_STEPS {
            self.late_steps.push((self.steps, share));
        }
        self.steps += 1;
        self.histogram.observe(late);
        self.max_seconds = self.max_seconds.max(late);
        self.max_share = self.max_share.max(share);
    }

    /// Share of steps on time (0..1; 1 when none were measured).
    pub fn on_time_share(&self) -> f64 {
        if self.steps == 0 {
            1.0
        } else {
            self.on_time as f64 / self.steps as f64
        }
    }

    /// The Prometheus text of `codendum_twin_step_lateness_seconds` (a
    /// histogram) and `codendum_twin_steps_on_time_total`.
    pub fn render(&self) -> String {
        let name = "codendum_twin_step_lateness_seconds";
        let mut s = format!(
            "# HELP {name} Engine task wake-up after a step's scheduled end (simulated seconds).\n# TYPE {name} histogram\n"
        );
        for (bound, count) in self
            .histogram
            .bounds
            .iter()
            .zip(self.histogram.cumulative())
        {
            s.push_str(&format!("{name}_bucket{{le=\"{bound}\"}} {count}\n"));
        }
        s.push_str(&format!(
            "{name}_bucket{{le=\"+Inf\"}} {}\n{name}_sum {}\n{name}_count {}\n",
            self.histogram.count, self.histogram.sum, self.histogram.count
        ));
        let on = "codendum_twin_steps_on_time_total";
        s.push_str(&format!(
            "# HELP {on} Steps started within 5 % of their modelled duration.\n# TYPE {on} counter\n{on} {}\n",
            self.on_time
        ));
        s
    }
}

/// Step lateness shared with `/metrics` and the twin's handle.
pub type SharedLateness = Arc<Mutex<StepLateness>>;

/// Sends an abort when dropped, unless disarmed: a stream or handler that is
/// dropped before the request finished means the client went away.
#[derive(Debug)]
pub struct AbortOnDrop {
    id: RequestId,
    tx: mpsc::UnboundedSender<EngineCmd>,
    armed: bool,
}

impl AbortOnDrop {
    /// Arms a guard for `id`.
    pub fn new(id: RequestId, tx: mpsc::UnboundedSender<EngineCmd>) -> Self {
        AbortOnDrop {
            id,
            tx,
            armed: true,
        }
    }

    /// The request finished: no abort on drop.
    pub fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        if self.armed {
            let _ = self.tx.send(EngineCmd::Abort(self.id));
        }
    }
}

/// Starts the engine task. It ends when every command sender is dropped.
pub fn spawn_engine(
    engine: Engine,
    clock: Clock,
    stats: SharedStats,
) -> (
    mpsc::UnboundedSender<EngineCmd>,
    tokio::task::JoinHandle<()>,
) {
    spawn_engine_timed(engine, clock, stats, SharedLateness::default())
}

/// [`spawn_engine`], recording each step's lateness into `lateness`.
pub fn spawn_engine_timed(
    engine: Engine,
    clock: Clock,
    stats: SharedStats,
    lateness: SharedLateness,
) -> (
    mpsc::UnboundedSender<EngineCmd>,
    tokio::task::JoinHandle<()>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let handle = tokio::spawn(run(engine, clock, rx, stats, lateness, Wake::Timer));
    (tx, handle)
}

/// The engine loop running on its own OS thread (see [`spawn_engine_thread`]).
/// Dropping it, or [`EngineThread::stop`], ends the loop.
#[derive(Debug)]
pub struct EngineThread {
    stop: Option<tokio::sync::oneshot::Sender<()>>,
    join: Option<std::thread::JoinHandle<()>>,
    priority_raised: bool,
}

/// The niceness an engine thread asks for (Linux: −10, where the default is
/// 0). A step's work is tens of microseconds, so the engine never takes the
/// cores from the HTTP and client threads; it only gets them first when its
/// step is due. Granted to root or with `CAP_SYS_NICE`.
pub const ENGINE_NICENESS: i32 = -10;

/// Asks the OS to run the calling thread at [`ENGINE_NICENESS`]; whether it
/// was granted.
fn raise_this_thread_priority() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: `gettid` and `setpriority` take plain integers; on Linux,
        // PRIO_PROCESS with a thread id sets that one thread's niceness.
        let tid = unsafe { libc::gettid() };
        let who = libc::id_t::try_from(tid).unwrap_or(0);
        // SAFETY: as above.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, who, ENGINE_NICENESS) == 0 }
    }
    #[cfg(not(target_os = "linux"))]
    {
        false
    }
}

impl EngineThread {
    /// Whether the OS granted the thread [`ENGINE_NICENESS`]: without it the
    /// engine's steps start later under load (see `docs/performance.md`).
    pub fn priority_raised(&self) -> bool {
        self.priority_raised
    }

    /// Ends the loop and waits for the thread (briefly: it ends at once).
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        if let Some(j) = self.join.take() {
            let _ = j.join();
        }
    }
}

impl Drop for EngineThread {
    fn drop(&mut self) {
        self.halt();
    }
}

/// Like [`spawn_engine_timed`], but the loop runs on a dedicated OS thread
/// with its own single-threaded runtime, so the thousands of HTTP stream
/// tasks that wake on every step can never delay the next step's start; the
/// thread asks for [`ENGINE_NICENESS`] so that it also wins the cores when
/// it wakes. One thread per engine: a fleet whose engines shared one thread
/// started its later replicas' steps later (85–95 % of steps on time against
/// 99–100 % with a thread each, 4 × 256 seats, two busy loops beside). For
/// a real-time or scaled clock only: under tokio's paused (virtual) time the
/// loop must share the caller's runtime ([`spawn_engine_timed`]).
pub fn spawn_engine_thread(
    engine: Engine,
    clock: Clock,
    stats: SharedStats,
    lateness: SharedLateness,
) -> std::io::Result<(mpsc::UnboundedSender<EngineCmd>, EngineThread)> {
    let (tx, rx) = mpsc::unbounded_channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let (raised_tx, raised_rx) = std::sync::mpsc::channel();
    let join = std::thread::Builder::new()
        .name("codendum-twin-engine".into())
        .spawn(move || {
            let _ = raised_tx.send(raise_this_thread_priority());
            runtime.block_on(async move {
                tokio::select! {
                    _ = run(engine, clock, rx, stats, lateness, Wake::Precise) => {}
                    _ = stop_rx => {}
                }
            });
        })?;
    // The thread answers before it starts its loop: a wait of microseconds.
    let priority_raised = raised_rx.recv().unwrap_or(false);
    Ok((
        tx,
        EngineThread {
            stop: Some(stop_tx),
            join: Some(join),
            priority_raised,
        },
    ))
}

fn publish(engine: &Engine, stats: &SharedStats) {
    if let Ok(mut s) = stats.lock() {
        s.clone_from(engine.stats());
    }
}

fn apply(
    engine: &mut Engine,
    cmd: EngineCmd,
    senders: &mut HashMap<RequestId, mpsc::UnboundedSender<EngineEvent>>,
) {
    match cmd {
        EngineCmd::Add {
            request,
            arrived,
            events,
        } => {
            let id = request.id;
            match engine.add_arrived(request, arrived) {
                Ok(()) => {
                    senders.insert(id, events);
                }
                Err(e) => {
                    let _ = events.send(EngineEvent::Rejected(e.to_string()));
                }
            }
        }
        EngineCmd::Abort(id) => {
            if senders.remove(&id).is_some() {
                engine.abort(id);
            }
        }
    }
}

/// How the engine loop waits for a step's end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Wake {
    /// The runtime's timer: the loop shares its runtime (virtual time).
    Timer,
    /// [`Clock::sleep_until_precise`]: the loop has a thread of its own.
    Precise,
}

async fn run(
    mut engine: Engine,
    clock: Clock,
    mut rx: mpsc::UnboundedReceiver<EngineCmd>,
    stats: SharedStats,
    lateness: SharedLateness,
    wake: Wake,
) {
    let mut senders = HashMap::new();
    loop {
        if engine.is_idle() {
            publish(&engine, &stats);
            let Some(cmd) = rx.recv().await else {
                break;
            };
            engine.advance_to(clock.now());
            apply(&mut engine, cmd, &mut senders);
        }
        while let Ok(cmd) = rx.try_recv() {
            apply(&mut engine, cmd, &mut senders);
        }
        if engine.is_idle() {
            continue;
        }
        let report = engine.step();
        publish(&engine, &stats);
        let end = engine.now();
        match wake {
            Wake::Timer => clock.sleep_until(end).await,
            Wake::Precise => clock.sleep_until_precise(end).await,
        }
        // Late = how long after its scheduled end this step's work resumed:
        // the start of the next step (handing over this step's tokens is the
        // first thing it does).
        let late = clock.now().saturating_sub(end).as_secs_f64();
        if let Ok(mut l) = lateness.lock() {
            l.record(report.duration.as_secs_f64(), late);
        }
        for t in report.tokens {
            let event = EngineEvent::Tokens {
                count: t.new_tokens,
                finish: t.finish,
            };
            let gone = match senders.get(&t.id) {
                Some(tx) => tx.send(event).is_err(),
                None => false,
            };
            if t.finish.is_some() {
                senders.remove(&t.id);
            } else if gone {
                senders.remove(&t.id);
                engine.abort(t.id);
            }
        }
    }
}
