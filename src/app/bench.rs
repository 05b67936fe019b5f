//! `codendum bench` end to end: connect (or start the twin), guard and
//! confirm, sample `/metrics` every second, run the closed loop, write the
//! results folder and its report.

use tokio::sync::watch;

use super::fleet_bench::BenchSampling;
use super::seams::SampledMetrics;
use crate::bench::{preflight, resolve_model, run_bench, BenchConfig, BenchDeps, BenchOutcome};
use crate::connect::{ConnectOptions, Connection};
use crate::events::{Event, Events};
use crate::server_match;
use codendum_core::error::{Checked, Error};

/// Asks the operator to go ahead with a plan; `false` refuses (exit 3).
pub type Confirm = dyn Fn(&str) -> bool + Send + Sync;

/// Everything `codendum bench` needs besides the benchmark's own config.
pub struct BenchRun<'a> {
    /// The benchmark, checked once by the command layer.
    pub config: Checked<BenchConfig>,
    /// How to start the embedded twin when no server is named.
    pub connect: ConnectOptions,
    /// Asked before a live run without `--yes`.
    pub confirm: &'a Confirm,
    /// Becomes `true` on Ctrl-C / SIGTERM: stop starting requests.
    pub stop: watch::Receiver<bool>,
    /// Where the run tells its progress, notes and results.
    pub events: Events,
    /// Write `report.md` and `report.html` into the folder at the end.
    pub write_report: bool,
}

/// Runs the benchmark; an interrupted run still writes its folder and
/// returns [`Error::Interrupted`] naming it.
pub async fn run(run: BenchRun<'_>) -> Result<BenchOutcome, Error> {
    let max_conn = run.config.concurrency.iter().copied().max().unwrap_or(1) as usize + 8;
    let mut connect = run.connect.clone();
    connect.max_connections = connect.max_connections.max(max_conn);
    let conn = Connection::open(&run.config.target, &connect).await?;
    let result = run_connected(&run, &conn).await;
    conn.close().await;
    let outcome = result?;
    if run.write_report {
        super::report::write_report_at_end(&outcome.folder, &run.events);
    }
    if outcome.interrupted {
        return Err(Error::Interrupted(outcome.folder));
    }
    Ok(outcome)
}

/// The fitted profile's warning when the run's contexts (prompt + output)
/// or its requests in flight (up to the seats) go beyond its calibration.
fn region_warning(
    config: &BenchConfig,
    profile: &codendum_core::profile::Profile,
) -> Option<String> {
    let cells = config.cells();
    let context = cells
        .iter()
        .map(|c| c.shape.input_tokens() + u64::from(config.output_tokens))
        .max();
    let batch = cells
        .iter()
        .map(|c| c.concurrency.min(profile.server.max_num_seqs))
        .max();
    profile.region_warning(context, batch)
}

async fn run_connected(run: &BenchRun<'_>, conn: &Connection) -> Result<BenchOutcome, Error> {
    let mut config = run.config.clone().into_inner();
    // Before any request through the base URL: the router's figures cover
    // every call of the command.
    let router = super::router::watch(&config.target, &run.events).await?;
    if conn.is_embedded() {
        // Nothing real is loaded: no busy guard and no confirmation.
        run.events.emit(Event::Target(conn.label.clone()));
        if let Some(p) = &conn.profile {
            config.provenance.profile = Some(p.name.clone());
            config.stated_engine = Some(codendum_core::results::EngineSettings {
                max_num_seqs: p.server.max_num_seqs,
                max_num_batched_tokens: p.server.max_num_batched_tokens,
                enable_prefix_caching: p.server.enable_prefix_caching,
            });
        }
    }
    // Prometheus (a live fleet whose /metrics are out of reach) or the 1 s
    // sampler of every /metrics URL.
    let sampling = BenchSampling::start(
        run.connect.prometheus.as_ref(),
        &config.target,
        conn,
        &run.events,
    )
    .await?;
    let metrics = match (&conn.scraper, sampling.sampler()) {
        (Some(scraper), Some(sampler)) => Some(SampledMetrics::new(scraper, sampler)),
        _ => None,
    };
    let metrics_dyn = match (sampling.prometheus(), &metrics) {
        (Some(p), _) => Some(p as &dyn crate::bench::ServerMetrics),
        (None, m) => m.as_ref().map(|m| m as &dyn crate::bench::ServerMetrics),
    };
    let mut profile_check = None;
    if config.calibration.is_some() {
        super::bench_calibration::plan_cells(&mut config, conn, &run.events).await?;
    }
    if let Some(w) = conn
        .profile
        .as_ref()
        .and_then(|p| region_warning(&config, p))
    {
        run.events.warn(w);
    }
    if !conn.is_embedded() {
        let model = resolve_model(&config, conn.client.as_ref()).await?;
        let limit = crate::bench::ServerInfo::max_model_len(conn.client.as_ref(), &model).await;
        // A stated profile is checked against the server (a warning when
        // they differ) while the busy guard reads /metrics.
        let (pre, check) = tokio::join!(
            preflight(&config, metrics_dyn, &model, limit),
            server_match::check_live(
                config.provenance.profile.as_deref(),
                &conn.client,
                None,
                &config.target,
                &run.events,
            ),
        );
        profile_check = check;
        let pre = pre?;
        if let Some(w) = pre.guard.warning() {
            run.events.warn(w);
        }
        run.events.emit(Event::Plan(pre.plan.clone()));
        if !config.yes && !(run.confirm)(&pre.plan) {
            return Err(Error::Refused(
                "not confirmed: pass --yes to run without asking".into(),
            ));
        }
    }
    let deps = BenchDeps {
        transport: conn.client.as_ref(),
        info: conn.client.as_ref(),
        metrics: metrics_dyn,
        clock: conn.clock.clone(),
        stop: run.stop.clone(),
        events: run.events.clone(),
    };
    config.profile_check = profile_check;
    let mut outcome = run_bench(&config, deps).await;
    sampling
        .finish(&mut outcome, &conn.clock, &run.events)
        .await?;
    if let Ok(o) = outcome.as_mut() {
        let server_errors: u64 = o
            .summary
            .levels
            .iter()
            .flat_map(|l| l.errors.iter())
            .filter(|(kind, _)| super::router::is_server_error(kind))
            .map(|(_, g)| g.count)
            .sum();
        o.summary.router = super::router::finish(router, server_errors, &run.events).await;
        if o.summary.router.is_some() {
            codendum_core::results::RunFolder::at(&o.folder).write_bench_summary(&o.summary)?;
        }
    }
    outcome
}

/// The command's answer for a finished bench: `Ok` unless its verdict asks
/// for exit 1 (the run failed: the server stopped answering, a shape could
/// not run, a level had no successful request; or its errors exceed
/// `--max-error-rate`), then [`Error::Failed`] naming why and where the
/// results are.
pub fn check_outcome(outcome: &BenchOutcome) -> Result<(), Error> {
    match &outcome.summary.verdict {
        Some(v) if v.exit_code() != 0 => Err(Error::Failed(format!(
            "{}; results in {}",
            v.line,
            outcome.folder.display()
        ))),
        _ => Ok(()),
    }
}
