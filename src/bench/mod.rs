//! `codendum bench`: the closed-loop capacity benchmark.
//!
//! Order of use (the CLI's job is parsing flags and asking for confirmation):
//! 1. build and [`BenchConfig::validate`] a config;
//! 2. [`preflight`]: busy guard + plan text (print it, confirm unless `--yes`);
//! 3. [`run_bench`]: prompts sized, levels run, results folder written.
//!
//! The driver reaches the server only through [`codendum_core::openai::Transport`],
//! [`ServerInfo`] and [`ServerMetrics`] (see [`seams`]).

pub mod arrival;
pub mod calibration;
pub mod calibration_eta;
pub mod config;
mod driver;
pub mod guard;
pub mod level;
pub mod open_loop;
pub mod progress;
pub mod prompt;
pub mod seams;
mod twin_facts;

use std::collections::BTreeMap;
use std::path::PathBuf;

use chrono::{DateTime, Utc};
use tokio::sync::watch;

pub use self::config::{fit_shapes, parse_concurrency, parse_shapes, BenchConfig};
pub use self::guard::{
    busy_guard, estimate_duration, plan_text, GuardVerdict, SpeedGuess, TimelineFlag,
};
pub use self::seams::{ServerInfo, ServerLoad, ServerMetrics, ServerWindow};
pub use self::twin_facts::{run_on_twin, TwinFacts};

use self::config::OpenLoop;
use self::driver::{run_level, LevelContext};
use self::prompt::{size_prompts, ShapePrompt, SizingContext};
use crate::events::{Event, Events, Written};
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

/// The checks before a run, for the CLI to print.
#[derive(Debug, Clone, PartialEq)]
pub struct Preflight {
    /// The plan for the confirmation prompt.
    pub plan: String,
    /// The busy guard's verdict (a warning to print when `Allowed`).
    pub guard: GuardVerdict,
}

/// Busy guard and plan. Fails with [`Error::Refused`] (exit 3) on a busy or
/// unreadable server unless `--allow-busy`, and on a bad config (exit 2).
pub async fn preflight(
    config: &BenchConfig,
    metrics: Option<&dyn ServerMetrics>,
    model: &str,
    max_model_len: Option<u64>,
) -> Result<Preflight, Error> {
    let load = match metrics {
        Some(m) => m.load_now().await,
        None => None,
    };
    let guard = busy_guard(load, config.allow_busy, TimelineFlag::Report)?;
    let (fit, skipped) = fit_shapes(&config.shapes, config.output_tokens, max_model_len);
    let mut shown = config.clone();
    shown.shapes = fit;
    // A calibration run's length depends on the server it measures: it is
    // estimated from its first cells, on the progress line.
    let speed = config.calibration.is_none().then(SpeedGuess::default);
    let mut plan = plan_text(&shown, model, speed.as_ref());
    for s in &skipped {
        plan.push_str(&format!("  {}\n", s.reason()));
    }
    if !guard.checked() {
        plan.push_str(&format!("  {}\n", guard::UNCHECKED_PLAN_LINE));
    }
    Ok(Preflight { plan, guard })
}

/// The model to request: `--model`, else the server's first model.
pub async fn resolve_model(config: &BenchConfig, info: &dyn ServerInfo) -> Result<String, Error> {
    match &config.target.model {
        Some(m) => Ok(m.clone()),
        None => info
            .model_id()
            .await
            .map_err(|e| Error::Failed(format!("cannot find out the model (pass --model): {e}"))),
    }
}

/// Runs the benchmark and writes the results folder
/// (`<results_dir>/<UTC timestamp>/`). An interrupted run still writes
/// everything, with `interrupted: true`, and returns `Ok` with
/// [`BenchOutcome::interrupted`] set; the caller maps that to exit 130.
pub async fn run_bench(config: &BenchConfig, deps: BenchDeps<'_>) -> Result<BenchOutcome, Error> {
    let model = resolve_model(config, deps.info).await?;
    let server_version = deps.info.server_version().await;
    let max_model_len = deps.info.max_model_len(&model).await;
    let (shapes, skipped_shapes) = fit_shapes(&config.shapes, config.output_tokens, max_model_len);
    for s in &skipped_shapes {
        deps.events.note(s.reason());
    }
    let clock = deps.clock.clone();
    let run_t0 = clock.now_secs();
    let started_utc = clock.utc_now();
    let run_id = run_id_for(config, started_utc);
    let folder = RunFolder::create(
        &config.results_dir,
        codendum_core::results::FolderKind::Bench,
        started_utc,
    )?;
    let mut requests = folder.appender::<RequestRecord>(results::REQUESTS_JSONL)?;
    let mut timeline = match deps.metrics {
        Some(_) => Some(folder.appender::<serde_json::Value>(results::SERVER_TIMELINE_JSONL)?),
        None => None,
    };

    let (prompt_sizing, prompts) = size_run_prompts(config, &deps, &model, &run_id, &shapes).await;

    let ctx = LevelContext {
        config,
        transport: deps.transport,
        info: deps.info,
        metrics: deps.metrics,
        clock: &clock,
        stop: deps.stop.clone(),
        model: &model,
        run_id: &run_id,
        run_t0,
        events: deps.events.clone(),
    };
    let (levels, interrupted, rate_search) = match &config.open_loop {
        Some(open) => run_open_loop(&ctx, &prompts, open, &mut requests, &mut timeline).await?,
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
        results::verdict::bench_verdict(&records, &levels, &skipped_shapes, config.max_error_rate)
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
        parameters: parameters(config, &clock),
        server: ServerDescription {
            url: config.target.display_url(),
            model,
            server_version,
            metrics: deps.metrics.is_some(),
            max_model_len,
            engine: config.stated_engine,
        },
        provenance: config.provenance.clone(),
        prompt_sizing,
        levels: levels.clone(),
        skipped_shapes,
        profile_check: config.profile_check.clone(),
        verdict: Some(verdict),
        rate_search,
        metrics_continuity,
        router: None,
    };
    folder.write_bench_summary(&summary)?;
    let folder = folder.into_path();
    deps.events.table(progress::render_table(&levels));
    deps.events.written(Written::Results, &folder);
    // A verdict that fails the run is the command's error, said last by
    // the binary; any other ends the output here.
    if let Some(v) = summary.verdict.as_ref().filter(|v| v.exit_code() == 0) {
        deps.events.emit(Event::Verdict(v.line.clone()));
    }
    Ok(BenchOutcome {
        folder,
        levels,
        interrupted,
        summary,
    })
}

/// Sizes the prompt of each shape that fits, for the run's model.
async fn size_run_prompts(
    config: &BenchConfig,
    deps: &BenchDeps<'_>,
    model: &str,
    run_id: &str,
    shapes: &[codendum_core::kinds::Shape],
) -> (PromptSizing, Vec<ShapePrompt>) {
    let sizing_ctx = SizingContext {
        info: deps.info,
        transport: deps.transport,
        endpoint: config.endpoint,
        model,
        seed: config.seed,
        run_id,
        api_key: config.target.api_key.clone(),
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
    let cells = ctx.config.cells();
    let eta = ctx.config.calibration.is_some();
    for cell in &cells {
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
            ctx.events.note(calibration_eta::progress_line(
                ctx.config, &levels, &cells, elapsed,
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
    open: &OpenLoop,
    requests: &mut JsonlFile<RequestRecord>,
    timeline: &mut Option<JsonlFile<serde_json::Value>>,
) -> Result<(Vec<LevelSummary>, bool, Vec<RateSearch>), Error> {
    let mut levels = Vec::new();
    let mut searches = Vec::new();
    let mut out = open_loop::Outputs { requests, timeline };
    for shape in &ctx.config.shapes {
        let Some(prompt) = prompts.iter().find(|p| p.shape == *shape) else {
            continue;
        };
        let run = open_loop::run_shape(ctx, prompt, open, &mut out).await?;
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
fn parameters(config: &BenchConfig, clock: &Clock) -> BenchParameters {
    BenchParameters {
        concurrency: config.concurrency.clone(),
        shapes: config.shapes.iter().map(|s| s.name().to_string()).collect(),
        output_tokens: config.output_tokens,
        requests_per_level: config.requests_per_level,
        requests_by_concurrency: config
            .concurrency
            .iter()
            .map(|&n| (n, config.requests_for(n)))
            .collect::<BTreeMap<_, _>>(),
        level_duration_s: config.level_duration.map(|d| d.as_secs_f64()),
        endpoint: config.endpoint,
        seed: config.seed,
        allow_busy: config.allow_busy,
        yes: config.yes,
        timeout_s: config.target.request_timeout.as_secs_f64(),
        cancel_grace_s: config.cancel_grace.as_secs_f64(),
        clock_scale: clock.scale(),
        calibration: config.calibration.is_some(),
    }
}
