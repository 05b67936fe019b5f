//! The one run lifecycle of `bench`, `classroom` and `replay`: connect (or
//! start the twin), read what the server says of itself once, check a live
//! server (the busy guard and the stated profile, together), show the plan
//! and ask, make the results folder and start reading the server
//! ([`super::sampling::Sampling`]), let the workload run, say where the results are and the
//! verdict, write the report, and turn the verdict into the exit code. A
//! workload plugs in what is its own ([`Workload`]): its plan against this
//! server, and the run itself. Under `--repeat N` the run part happens N
//! times after the one guard and confirmation ([`super::repeated`]).

use std::path::Path;

use super::guard::{busy_guard, GuardVerdict, TimelineFlag, UNCHECKED_PLAN_LINE};
use super::router_watch;
use super::workload::{write_report_at_end, Ctx, Finished, RunIo, Workload};
use crate::bench::ServerFacts;
use crate::connect::{pool_size, ConnectOptions, Connection};
use crate::events::{Event, Events, Written};
use crate::settings::{LiveServer, RunSettings, Server};
use codendum_core::error::Error;
use codendum_core::results::{RunFolder, Verdict};

/// Runs `workload` against `server` from start to end. A finished run is
/// `Ok` whatever its verdict ([`exit_status`] turns that into the exit
/// code); an interrupted one writes its folder and returns
/// [`Error::Interrupted`].
pub async fn run<W: Workload>(
    server: &Server,
    settings: &RunSettings,
    workload: &W,
    io: RunIo<'_>,
) -> Result<W::Output, Error> {
    match lifecycle(server, settings, workload, io, 1).await? {
        Ran::One(output) => Ok(output),
        Ran::Repeated(r) => Err(Error::Failed(format!(
            "one run was asked and several were made; results in {}",
            r.folder.display()
        ))),
    }
}

/// Runs `workload` as the settings ask: once, or `settings.repeat` times
/// against the same server ([`super::repeated`]). An interrupted run or
/// repetition writes what it measured and returns [`Error::Interrupted`].
pub async fn run_as_asked<W: Workload>(
    server: &Server,
    settings: &RunSettings,
    workload: &W,
    io: RunIo<'_>,
) -> Result<Ran<W::Output>, Error> {
    lifecycle(server, settings, workload, io, settings.repeat.max(1)).await
}

/// What a run as asked gave: one run's output or a repetition's.
#[derive(Debug)]
pub enum Ran<O> {
    /// One run.
    One(O),
    /// Several runs of `--repeat`.
    Repeated(Box<super::repeated::RepeatedRuns>),
}

impl<O: Finished> Finished for Ran<O> {
    fn folder(&self) -> &Path {
        match self {
            Ran::One(o) => o.folder(),
            Ran::Repeated(r) => &r.folder,
        }
    }

    fn verdict(&self) -> Option<&Verdict> {
        match self {
            Ran::One(o) => o.verdict(),
            Ran::Repeated(r) => Some(&r.summary.verdict),
        }
    }

    fn interrupted(&self) -> bool {
        match self {
            Ran::One(o) => o.interrupted(),
            Ran::Repeated(r) => r.interrupted,
        }
    }

    fn table(&self) -> String {
        match self {
            Ran::One(o) => o.table(),
            Ran::Repeated(r) => codendum_report::repeat::text_table(&r.summary),
        }
    }
}

async fn lifecycle<W: Workload>(
    server: &Server,
    settings: &RunSettings,
    workload: &W,
    io: RunIo<'_>,
    repeat: u32,
) -> Result<Ran<W::Output>, Error> {
    let opts = ConnectOptions {
        max_connections: pool_size(workload.max_in_flight()),
        student_keys: workload.student_keys(),
        agent: workload.agent_spread(),
    };
    let conn = Connection::open(server, &settings.client, &opts).await?;
    let result = connected(server, settings, workload, &io, &conn, repeat).await;
    conn.close().await;
    let output = match result? {
        Ran::One(output) => output,
        Ran::Repeated(r) => {
            return super::repeated::finish(*r, settings, &io.events)
                .map(|r| Ran::Repeated(Box::new(r)))
        }
    };
    io.events.table(output.table());
    io.events.written(Written::Results, output.folder());
    // A verdict that fails the run is the command's error, said last by
    // the binary; any other ends the output here.
    if let Some(v) = output.verdict().filter(|v| v.exit_code() == 0) {
        io.events.emit(Event::Verdict(v.line.clone()));
    }
    if settings.write_report {
        write_report_at_end(output.folder(), &io.events);
    }
    if output.interrupted() {
        return Err(Error::Interrupted(output.folder().to_path_buf()));
    }
    Ok(Ran::One(output))
}

async fn connected<W: Workload>(
    server: &Server,
    settings: &RunSettings,
    workload: &W,
    io: &RunIo<'_>,
    conn: &Connection,
    repeat: u32,
) -> Result<Ran<W::Output>, Error> {
    let events = &io.events;
    let live = server.live();
    // Before any request through the base URL: the router's figures cover
    // every call of the command.
    let router = match live {
        Some(l) => router_watch::watch(&l.target, events).await?,
        None => None,
    };
    let mut facts = ServerFacts::read(
        conn.client.info(),
        settings.client.model.as_deref(),
        conn.label.clone(),
    )
    .await?;
    if let Some(p) = &conn.profile {
        facts = facts.with_twin_profile(p);
    }
    let guard = match live {
        Some(l) => Some(check_live(l, settings, conn, &mut facts, W::TIMELINE, events).await?),
        None => {
            events.emit(Event::Target(conn.label.clone()));
            None
        }
    };
    let ctx = Ctx {
        conn,
        live,
        run: settings,
        facts: &facts,
        events,
        stop: io.stop.clone(),
        metrics_reachable: guard.as_ref().map(GuardVerdict::checked),
        run_index: 0,
    };
    let (prepared, mut plan) = workload.prepare(&ctx).await?;
    if guard.as_ref().is_some_and(|g| !g.checked()) {
        plan = format!("{}\n  {UNCHECKED_PLAN_LINE}", plan.trim_end());
    }
    if repeat > 1 {
        let estimate = workload.run_estimate_s(&prepared, &ctx);
        plan = format!(
            "{}\n  {}",
            plan.trim_end(),
            super::repeated::plan_line(repeat, workload.seed(), estimate)
        );
    }
    if live.is_some() || workload.plan_on_twin() || repeat > 1 {
        events.emit(Event::Plan(plan.clone()));
    }
    if live.is_some() && !settings.yes && !(io.confirm)(&plan) {
        return Err(Error::Refused(
            "not confirmed: pass --yes to run without asking".into(),
        ));
    }
    if repeat > 1 {
        return super::repeated::repeat(workload, prepared, &ctx, router, repeat)
            .await
            .map(|r| Ran::Repeated(Box::new(r)));
    }
    let started_utc = conn.clock.utc_now();
    let folder = RunFolder::create(&settings.results_dir, W::KIND, started_utc)?;
    super::workload::execute_in(workload, prepared, &ctx, router, (folder, started_utc))
        .await
        .map(Ran::One)
}

/// Against a live server: the busy guard (its load, from Prometheus when
/// given, else `/metrics`) and the stated profile's check, together. A busy
/// server is refused unless `--allow-busy`; one whose load cannot be read
/// is said and the run goes on.
async fn check_live(
    live: &LiveServer,
    settings: &RunSettings,
    conn: &Connection,
    facts: &mut ServerFacts,
    timeline: TimelineFlag,
    events: &Events,
) -> Result<GuardVerdict, Error> {
    let load = async {
        match (&live.prometheus, &conn.scraper) {
            (Some(p), _) => super::fleet::prometheus_load(p, &live.target, events).await,
            (None, Some(s)) => Ok(super::seams::load_now(s).await),
            (None, None) => Ok(None),
        }
    };
    let check = crate::server_match::check_live(
        settings.provenance.profile.as_deref(),
        conn.client.http()?,
        Some(&facts.models),
        &live.target,
        events,
    );
    let (load, check) = tokio::join!(load, check);
    let load = load?;
    facts.profile_check = check;
    let guard = busy_guard(load, settings.allow_busy, timeline)?;
    if let Some(w) = guard.warning() {
        events.warn(w);
    }
    Ok(guard)
}

/// The command's answer for a finished run: `Ok` unless its verdict asks
/// for exit 1 (the run failed: the server stopped answering, nothing
/// completed; or its errors exceed `--max-error-rate` with their whole
/// interval), or, under `--strict` (`settings.strict`), the run is not
/// valid as a capacity figure; then [`Error::Failed`] naming why and where
/// the results are.
pub fn exit_status(output: &impl Finished, settings: &RunSettings) -> Result<(), Error> {
    let folder = output.folder().display();
    match output.verdict() {
        Some(v) if v.exit_code() != 0 => {
            Err(Error::Failed(format!("{}; results in {folder}", v.line)))
        }
        Some(v) if settings.strict && v.strict_exit_code() != 0 => Err(Error::Failed(format!(
            "not valid as a capacity figure (--strict): {}; results in {folder}",
            v.not_valid.join("; ")
        ))),
        _ => Ok(()),
    }
}
