//! What a workload of the run lifecycle is: what it is given (the
//! connection, the server's facts, the settings, where to tell things), what
//! it plugs in (its plan against this server, the run itself) and what it
//! returns; and the part of a run every workload shares once it is going
//! (the results folder, the server's sampling, the report at the end).

use std::path::Path;

use tokio::sync::watch;

use super::guard::TimelineFlag;
use super::sampling::Sampling;
use crate::bench::ServerFacts;
use crate::connect::Connection;
use crate::events::{Events, Written};
use crate::scrape::router_reader::RouterWatch;
use crate::settings::{LiveServer, RunSettings};
use chrono::{DateTime, Utc};
use codendum_core::access::Secret;
use codendum_core::error::Error;
use codendum_core::results::{FolderKind, RunFolder, Verdict};

/// Asks the operator to go ahead with a plan; `false` refuses (exit 3).
pub type Confirm = dyn Fn(&str) -> bool + Send + Sync;

/// What a run is given besides its settings.
pub struct RunIo<'a> {
    /// Where the run tells its plan, progress, notes and results.
    pub events: Events,
    /// Asked before a live run without `--yes`.
    pub confirm: &'a Confirm,
    /// Becomes `true` on Ctrl-C / SIGTERM: stop starting requests.
    pub stop: watch::Receiver<bool>,
}

/// What a workload has to work with once the server is known.
pub struct Ctx<'a> {
    /// The connection (client, `/metrics` scraper, clock, the twin).
    pub conn: &'a Connection,
    /// The live server, if the run goes to one.
    pub live: Option<&'a LiveServer>,
    /// How the run starts and what it records.
    pub run: &'a RunSettings,
    /// What the server said of itself.
    pub facts: &'a ServerFacts,
    /// Where to tell things.
    pub events: &'a Events,
    /// The stop signal.
    pub stop: watch::Receiver<bool>,
    /// Whether the busy guard could read `/metrics` (`None`: not asked,
    /// the embedded twin).
    pub metrics_reachable: Option<bool>,
    /// Which run of `--repeat` this is, from 0 (0 for a single run): the
    /// workload's seeds are its given seed plus this.
    pub run_index: u32,
}

/// What the lifecycle started for the run, handed to the workload to use
/// and finish.
pub struct Started {
    /// The results folder.
    pub folder: RunFolder,
    /// When the run started (the folder's name).
    pub started_utc: DateTime<Utc>,
    /// Where the server's figures come from.
    pub sampling: Sampling,
    /// The router's reading at the start.
    pub router: Option<RouterWatch>,
}

/// What every finished workload tells the lifecycle.
pub trait Finished {
    /// The results folder.
    fn folder(&self) -> &Path;
    /// The run's verdict.
    fn verdict(&self) -> Option<&Verdict>;
    /// Whether the run was interrupted.
    fn interrupted(&self) -> bool;
    /// The final table.
    fn table(&self) -> String;
}

/// A workload of the lifecycle: bench, classroom, replay.
#[allow(async_fn_in_trait)]
pub trait Workload {
    /// What the workload decided against this server before it starts.
    type Prepared;
    /// What a finished run returns.
    type Output: Finished;
    /// How this command takes in a host timeline (for the guard's advice).
    const TIMELINE: TimelineFlag;
    /// The kind of its results folder.
    const KIND: FolderKind;

    /// Requests kept in flight at most: the connection pool follows.
    fn max_in_flight(&self) -> usize;

    /// The students' keys: the twin is then fronted by the lab's proxy.
    fn student_keys(&self) -> Vec<Secret> {
        Vec::new()
    }

    /// The agent spread the embedded twin's persona draws from (a
    /// class's); `None`: the default class's.
    fn agent_spread(&self) -> Option<std::sync::Arc<codendum_core::class::AgentSpread>> {
        None
    }

    /// Whether the plan is shown against the embedded twin too (against a
    /// live server it always is, for the confirmation).
    fn plan_on_twin(&self) -> bool {
        false
    }

    /// The random seed the run was given (`--seed`), for `--repeat`'s plan and
    /// its runs' list.
    fn seed(&self) -> u64 {
        0
    }

    /// The per-request objectives the run judges (`--slo`), judged again
    /// on the figures pooled over `--repeat`'s runs.
    fn slo(&self) -> Option<codendum_core::results::slo::Slo> {
        None
    }

    /// The prepared run once more, for another run of `--repeat`; `None`:
    /// the workload does not repeat.
    fn again(&self, _prepared: &Self::Prepared) -> Option<Self::Prepared> {
        None
    }

    /// One run's length against this server, simulated seconds, as far as
    /// the plan can tell (for `--repeat`'s total); `None`: unknown.
    fn run_estimate_s(&self, _prepared: &Self::Prepared, _ctx: &Ctx<'_>) -> Option<f64> {
        None
    }

    /// What the workload will do against this server, and its plan text.
    async fn prepare(&self, ctx: &Ctx<'_>) -> Result<(Self::Prepared, String), Error>;

    /// Runs it, reads the server's figures (finishing `started.sampling`)
    /// and writes its results into `started.folder`.
    async fn execute(
        &self,
        prepared: Self::Prepared,
        ctx: &Ctx<'_>,
        started: Started,
    ) -> Result<Self::Output, Error>;
}

/// Starts reading the server into `folder` and runs the prepared workload
/// there.
pub(super) async fn execute_in<W: Workload>(
    workload: &W,
    prepared: W::Prepared,
    ctx: &Ctx<'_>,
    router: Option<RouterWatch>,
    (folder, started_utc): (RunFolder, DateTime<Utc>),
) -> Result<W::Output, Error> {
    let sampling = Sampling::start(
        ctx.live,
        ctx.conn,
        &folder,
        ctx.metrics_reachable,
        ctx.events,
    )
    .await?;
    let started = Started {
        folder,
        started_utc,
        sampling,
        router,
    };
    workload.execute(prepared, ctx, started).await
}

/// Writes a run's `report.md` / `report.html` at its end, telling where;
/// a report that cannot be written is said and the run stands.
pub fn write_report_at_end(folder: &Path, events: &Events) {
    match codendum_report::files::write_report(folder, None) {
        Ok(paths) => {
            for p in paths {
                events.written(Written::Report, p);
            }
        }
        Err(e) => events.warn(format!("the report could not be written: {e}")),
    }
}
