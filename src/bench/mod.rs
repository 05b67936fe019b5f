//! `codendum bench`: the capacity benchmark (closed loop, rates, sweeps,
//! the rate search, the calibration workload).
//!
//! Order of use (the app's run lifecycle does the rest: the server, the
//! busy guard, the confirmation, the report):
//! 1. a [`BenchConfig`], typed and checked when the command line was read;
//! 2. the server's [`ServerFacts`], read once, and the [`BenchPlan`] of the
//!    config against them ([`plan_text`] shows it);
//! 3. [`run_bench`]: prompts sized, levels run, results folder written.
//!
//! The driver reaches the server only through [`codendum_core::openai::Transport`],
//! [`ServerInfo`] and [`ServerMetrics`] (see [`seams`]).

pub mod arrival;
pub mod calibration;
pub mod calibration_eta;
pub mod cells;
pub mod config;
mod driver;
pub mod level;
pub mod open_loop;
pub mod preview;
pub mod progress;
pub mod prompt;
pub mod seams;
mod twin_facts;

use std::collections::BTreeMap;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

pub use self::cells::BenchPlan;
pub use self::config::{fit_shapes, BenchConfig, Load};
pub use self::preview::{estimate_duration, plan_text, SpeedGuess};
pub use self::seams::{ServerFacts, ServerInfo, ServerLoad, ServerMetrics};
pub use self::twin_facts::{run_on_twin, TwinFacts};

use self::driver::{run_level, LevelContext};
use self::prompt::{size_prompts, ShapePrompt, SizingContext};
use crate::events::Events;
use crate::settings::RunSettings;
use codendum_core::clock::Clock;
use codendum_core::error::Error;
use codendum_core::openai::Transport;
use codendum_core::results::{
    self, BenchParameters, BenchSummary, JsonlFile, LevelEnd, LevelSummary, MetricsContinuity,
    PromptSizing, RateSearch, RequestRecord, RunFolder, RunHeader, ServerDescription,
};

/// The outside world of a run.
pub struct BenchDeps<'a> {
    /// Sends the requests (HTTP client, or the twin in process).
    pub transport: &'a dyn Transport,
    /// Model id, `/tokenize`, server version.
    pub info: &'a dyn ServerInfo,
    /// The `/metrics` sampler; `None` when there is no `/metrics`.
    pub metrics: Option<&'a dyn ServerMetrics>,
    /// The clock every time is taken on (the one the transport and the
    /// sampler use too).
    pub clock: Clock,
    /// Becomes `true` to interrupt (Ctrl-C): no new requests start, those
    /// in flight get `config.cancel_grace`, then partial results are written.
    pub stop: watch::Receiver<bool>,
    /// Where the run's progress, notes and final table are told.
    pub events: Events,
    /// Whether each level measures the client's CPU (the process's CPU
    /// time over the level): only against a server outside this process,
    /// whose work is then not counted as the client's, on a real clock.
    pub measure_client_cpu: bool,
}

/// What a finished (or interrupted) run produced.
#[derive(Debug, Clone)]
pub struct BenchOutcome {
    /// The results folder.
    pub folder: PathBuf,
    /// One summary per level × shape that ran, in run order.
    pub levels: Vec<LevelSummary>,
    /// Whether the run was interrupted (the CLI exits 130).
    pub interrupted: bool,
    /// Everything written to `summary.json`.
    pub summary: BenchSummary,
}

/// Reads the server's facts through `deps.info` (the model `run` asks
/// for, else its first), plans `config` against them and runs it: the
/// whole bench for a caller without a run lifecycle (the twin in process,
/// tests).
pub async fn run_reading_facts(
    config: &BenchConfig,
    run: &RunSettings,
    deps: BenchDeps<'_>,
) -> Result<BenchOutcome, Error> {
    let facts = ServerFacts::read(
        deps.info,
        run.client.model.as_deref(),
        "embedded twin".into(),
    )
    .await?;
    let plan = BenchPlan::new(config, &facts);
    let folder = RunFolder::create(
        &run.results_dir,
        codendum_core::results::FolderKind::Bench,
        deps.clock.utc_now(),
    )?;
    run_bench(config, (&plan, &facts), run, folder, deps).await
}

/// Runs the benchmark's `plan` against the server `facts` describe and
/// writes its results `folder`. An interrupted run still writes
/// everything, with `interrupted: true`, and returns `Ok` with
/// [`BenchOutcome::interrupted`] set; the caller maps that to exit 130.
pub async fn run_bench(
    config: &BenchConfig,
    (plan, facts): (&BenchPlan, &ServerFacts),
    run: &RunSettings,
    folder: RunFolder,
    deps: BenchDeps<'_>,
) -> Result<BenchOutcome, Error> {
    let model = facts.model.clone();
    for s in &plan.skipped {
        deps.events.note(s.reason());
    }
    let clock = deps.clock.clone();
    // The start on the clock and in UTC are taken together: the figures
    // filled in after the run find each level's window from the UTC start.
    let run_t0 = clock.now_secs();
    let started_utc = clock.utc_now();
    let run_id = run_id_for(config, started_utc);
    let mut requests = folder.appender::<RequestRecord>(results::REQUESTS_JSONL)?;
    let mut timeline = match deps.metrics {
        Some(_) => Some(folder.appender::<serde_json::Value>(results::SERVER_TIMELINE_JSONL)?),
        None => None,
    };

    let sizing = (run.client.api_key.clone(), run_id.as_str());
    let (prompt_sizing, prompts) = size_run_prompts(config, &deps, &model, sizing, &plan.fit).await;

    let ctx = LevelContext {
        config,
        plan,
        api_key: run.client.api_key.clone(),
        transport: deps.transport,
        info: deps.info,
        metrics: deps.metrics,
        clock: &clock,
        stop: deps.stop.clone(),
        model: &model,
        run_id: &run_id,
        run_t0,
        events: deps.events.clone(),
        measure_client_cpu: deps.measure_client_cpu,
    };
    let (levels, interrupted, rate_search) = match config.load.open_loop() {
        Some(_) => run_open_loop(&ctx, &prompts, &mut requests, &mut timeline).await?,
        None => {
            let (levels, interrupted) =
                run_levels(&ctx, &prompts, &mut requests, &mut timeline).await?;
            (levels, interrupted, Vec::new())
        }
    };
    drain_timeline(deps.metrics, timeline.as_mut())?;

    let records = results::read_bench_requests(folder.path())
        .map(|c| c.items)
        .unwrap_or_default();
    let mut levels = levels;
    let reads = deps.metrics.map(|m| m.continuity()).unwrap_or_default();
    let mut metrics_continuity: Vec<MetricsContinuity> = reads
        .iter()
        .filter_map(|(name, c)| MetricsContinuity::new(name, c.clone(), run_t0))
        .collect();
    // One URL that counted fewer finished requests than the client
    // completed shows one replica of several.
    if let ([(name, _)], Some(m)) = (reads.as_slice(), deps.metrics) {
        let now = clock.now_secs();
        let added = results::continuity::check_coverage(
            &mut metrics_continuity,
            name,
            m.requests_finished(run_t0, now),
            records.iter().filter(|r| r.ok).count() as u64,
            now - run_t0,
        );
        if let Some(note) = added {
            deps.events.note(note);
        }
    }
    results::continuity::apply_to_levels(&mut levels, &metrics_continuity);
    let verdict =
        results::verdict::bench_verdict(&records, &levels, &plan.skipped, run.max_error_rate)
            .with_restarts(metrics_continuity.iter().flat_map(|m| m.restart_times()));
    let summary = BenchSummary {
        header: RunHeader {
            schema_version: results::BENCH_SCHEMA_VERSION,
            kind: results::BENCH_KIND.to_string(),
            run_id,
            started_utc,
            finished_utc: clock.utc_now(),
            interrupted,
        },
        parameters: parameters(config, plan, run, &clock),
        server: ServerDescription {
            url: recorded_url(facts),
            model,
            server_version: facts.server_version.clone(),
            metrics: deps.metrics.is_some(),
            max_model_len: facts.max_model_len,
            engine: facts.stated_engine,
        },
        provenance: facts.provenance(&run.provenance),
        prompt_sizing,
        levels: levels.clone(),
        skipped_shapes: plan.skipped.clone(),
        profile_check: facts.profile_check.clone(),
        verdict: Some(verdict),
        rate_search,
        metrics_continuity,
        router: None,
    };
    folder.write_bench_summary(&summary)?;
    let folder = folder.into_path();
    Ok(BenchOutcome {
        folder,
        levels,
        interrupted,
        summary,
    })
}

/// How a bench's results name its server: the base URL, or for the
/// embedded twin just that (its profile and speed-up are recorded beside).
fn recorded_url(facts: &ServerFacts) -> String {
    match facts.twin_profile {
        Some(_) => "embedded twin".to_string(),
        None => facts.label.clone(),
    }
}

/// Sizes the prompt of each shape that fits, for the run's model.
async fn size_run_prompts(
    config: &BenchConfig,
    deps: &BenchDeps<'_>,
    model: &str,
    (api_key, run_id): (Option<codendum_core::access::Secret>, &str),
    shapes: &[codendum_core::shape::Shape],
) -> (PromptSizing, Vec<ShapePrompt>) {
    let sizing_ctx = SizingContext {
        info: deps.info,
        transport: deps.transport,
        endpoint: config.endpoint,
        model,
        seed: config.seed,
        run_id,
        api_key,
    };
    size_prompts(&sizing_ctx, shapes).await
}

/// The run's id: `--run-id`, else the start time with its nanoseconds.
fn run_id_for(config: &BenchConfig, started_utc: DateTime<Utc>) -> String {
    if config.run_id.is_empty() {
        format!(
            "{}-{:08x}",
            started_utc.format("%Y%m%dT%H%M%SZ"),
            started_utc.timestamp_subsec_nanos()
        )
    } else {
        config.run_id.clone()
    }
}

/// Runs every shape × level in order, the server timeline written after
/// each; stops at an interruption. Returns the levels that ran and whether
/// the run was interrupted.
async fn run_levels(
    ctx: &LevelContext<'_>,
    prompts: &[ShapePrompt],
    requests: &mut JsonlFile<RequestRecord>,
    timeline: &mut Option<JsonlFile<serde_json::Value>>,
) -> Result<(Vec<LevelSummary>, bool), Error> {
    let mut levels = Vec::new();
    let cells = &ctx.plan.cells;
    let eta = matches!(ctx.config.load, Load::Calibration { .. });
    for cell in cells {
        // A shape that did not fit has no prompt: its cells are not run.
        let Some(prompt) = prompts.iter().find(|p| p.shape == cell.shape) else {
            continue;
        };
        if *ctx.stop.borrow() {
            return Ok((levels, true));
        }
        let level = run_level(
            ctx,
            prompt,
            cell.concurrency,
            cell.requests,
            requests,
            timeline.as_mut(),
        )
        .await?;
        drain_timeline(ctx.metrics, timeline.as_mut())?;
        let stop_here = level.ended_by == LevelEnd::Interrupted;
        levels.push(level);
        if stop_here {
            return Ok((levels, true));
        }
        if eta {
            let elapsed = ctx.clock.now_secs() - ctx.run_t0;
            ctx.events.line(calibration_eta::progress_line(
                ctx.config, &levels, cells, elapsed,
            ));
        }
    }
    if eta {
        let elapsed = ctx.clock.now_secs() - ctx.run_t0;
        ctx.events.note(format!(
            "calibration run took {} ({} cells)",
            calibration_eta::took(elapsed),
            levels.len()
        ));
    }
    Ok((levels, false))
}

/// Runs each shape's open-loop levels in turn; stops at an interruption.
/// Returns the levels, whether the run was interrupted, and the searches.
async fn run_open_loop(
    ctx: &LevelContext<'_>,
    prompts: &[ShapePrompt],
    requests: &mut JsonlFile<RequestRecord>,
    timeline: &mut Option<JsonlFile<serde_json::Value>>,
) -> Result<(Vec<LevelSummary>, bool, Vec<RateSearch>), Error> {
    let mut levels = Vec::new();
    let mut searches = Vec::new();
    let mut out = open_loop::Outputs { requests, timeline };
    for shape in &ctx.plan.fit {
        let Some(prompt) = prompts.iter().find(|p| p.shape == *shape) else {
            continue;
        };
        let run = open_loop::run_shape(ctx, prompt, &mut out).await?;
        levels.extend(run.levels);
        if let Some(search) = run.search {
            ctx.events.line(search.line());
            searches.push(search);
        }
        if run.interrupted {
            return Ok((levels, true, searches));
        }
    }
    Ok((levels, false, searches))
}

pub(crate) fn drain_timeline(
    metrics: Option<&dyn ServerMetrics>,
    writer: Option<&mut JsonlFile<serde_json::Value>>,
) -> Result<(), Error> {
    if let (Some(m), Some(w)) = (metrics, writer) {
        for sample in m.drain_timeline() {
            w.append(&sample)?;
        }
    }
    Ok(())
}

/// The parameters block of `summary.json`.
fn parameters(
    config: &BenchConfig,
    plan: &BenchPlan,
    run: &RunSettings,
    clock: &Clock,
) -> BenchParameters {
    BenchParameters {
        concurrency: plan.levels.clone(),
        shapes: plan.shapes.iter().map(|s| s.name().to_string()).collect(),
        output_tokens: config.output_tokens,
        requests_per_level: config.requests_per_level,
        requests_by_concurrency: plan
            .levels
            .iter()
            .map(|&n| (n, config.requests_for(n)))
            .collect::<BTreeMap<_, _>>(),
        level_duration_s: config.level_duration.map(|d| d.as_secs_f64()),
        endpoint: config.endpoint,
        seed: config.seed,
        allow_busy: run.allow_busy,
        yes: run.yes,
        timeout_s: run.client.request_timeout.as_secs_f64(),
        cancel_grace_s: config.cancel_grace.as_secs_f64(),
        clock_scale: clock.scale(),
        calibration: matches!(config.load, Load::Calibration { .. }),
    }
}
