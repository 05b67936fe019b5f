//! `--repeat N`: the same workload run N times against the same server,
//! after the one busy guard and confirmation of the lifecycle
//! ([`super::run`]). Run i (from 0) takes the given seed plus i for
//! everything random; each run writes a normal results folder (`run-1/` …
//! inside the repetition's folder, with its own report) and, at the end,
//! `repeat.json` and the report of the figures across runs sit beside them.
//!
//! Between runs the server is let drain: a run's workload returns only
//! once its requests have ended (finished, or cut after the cancel grace,
//! which closes their streams), and before the next run starts the
//! server's `/metrics` is read until no request is running or waiting
//! (`drain`), so no request of one run is in flight when the next one
//! starts. A Ctrl-C or a run that fails ends the repetition; what the runs
//! before it measured is summed up and kept.

use std::path::PathBuf;
use std::time::Duration;

use super::seams::load_now;
use super::workload::{execute_in, write_report_at_end, Ctx, Finished, Workload};
use crate::bench::preview::about_duration;
use crate::connect::Connection;
use crate::events::{Event, Events, Written};
use crate::scrape::router_reader::RouterWatch;
use crate::settings::RunSettings;
use codendum_core::error::Error;
use codendum_core::results::repeat_folder::{
    run_folder_name, summarize_repeat, RepeatAsked, RepeatRun, RepeatSummary, REPEAT_JSON,
};
use codendum_core::results::{FolderKind, RunFolder, RunStatus};

/// The longest the server is waited for to drain between runs, simulated
/// seconds; past it the next run starts with a warning.
pub const DRAIN_LIMIT: Duration = Duration::from_secs(300);
/// How often `/metrics` is read while draining, simulated seconds.
const DRAIN_POLL: Duration = Duration::from_secs(1);

/// What a repetition gave.
#[derive(Debug)]
pub struct RepeatedRuns {
    /// The repetition's folder (`run-1/` … and `repeat.json`).
    pub folder: PathBuf,
    /// `repeat.json`.
    pub summary: RepeatSummary,
    /// Whether Ctrl-C stopped it.
    pub interrupted: bool,
}

/// The plan's line for `--repeat`: the runs, their seeds and the server
/// time in all (`estimate_s`: one run's, when known).
pub fn plan_line(runs: u32, seed: u64, estimate_s: Option<f64>) -> String {
    let total = match estimate_s {
        Some(s) => format!(
            "{} of server time in all",
            about_duration(s * f64::from(runs))
        ),
        None => format!("{runs} times one run's server time"),
    };
    format!(
        "repeat:             {runs} runs against the same server (seeds {seed}–{}), the server let drain between them; {total}",
        seed.wrapping_add(u64::from(runs - 1))
    )
}

/// What a workload's kind is called in `repeat.json`.
fn kind_name(kind: FolderKind) -> &'static str {
    match kind {
        FolderKind::Classroom => "classroom",
        FolderKind::Replay => "replay",
        _ => "bench",
    }
}

/// Makes the runs (see the module documentation) and sums them up into
/// `repeat.json`.
pub(super) async fn repeat<W: Workload>(
    workload: &W,
    prepared: W::Prepared,
    ctx: &Ctx<'_>,
    mut router: Option<RouterWatch>,
    runs_asked: u32,
) -> Result<RepeatedRuns, Error> {
    let (conn, events) = (ctx.conn, ctx.events);
    let started_utc = conn.clock.utc_now();
    let top = RunFolder::create(&ctx.run.results_dir, W::KIND, started_utc)?;
    let mut runs: Vec<RepeatRun> = Vec::new();
    let mut stop_reason = None;
    let mut next = Some(prepared);
    for i in 1..=runs_asked {
        let Some(this) = next.take() else { break };
        if *ctx.stop.borrow() {
            stop_reason = Some(format!("interrupted before run {i}"));
            break;
        }
        if i < runs_asked {
            next = workload.again(&this);
        }
        if i > 1 {
            drain(conn, &ctx.stop, events).await;
            if let Some(live) = ctx.live {
                router = super::router_watch::watch(&live.target, events).await?;
            }
        }
        let seed = workload.seed().wrapping_add(u64::from(i - 1));
        events.emit(Event::RepeatRun {
            run: i,
            of: runs_asked,
            seed,
        });
        let name = run_folder_name(i);
        let path = top.path().join(&name);
        std::fs::create_dir(&path)
            .map_err(|e| Error::io(format!("cannot create {}", path.display()), e))?;
        let run_ctx = Ctx {
            conn,
            live: ctx.live,
            run: ctx.run,
            facts: ctx.facts,
            events,
            stop: ctx.stop.clone(),
            metrics_reachable: ctx.metrics_reachable,
            run_index: i - 1,
        };
        let folder = (RunFolder::at(&path), conn.clock.utc_now());
        match execute_in(workload, this, &run_ctx, router.take(), folder).await {
            Ok(out) => {
                let line = out.verdict().map(|v| v.line.clone());
                events.table(out.table());
                events.written(Written::Results, out.folder());
                if let Some(l) = &line {
                    events.line(format!("Run {i}/{runs_asked}: {l}"));
                }
                if ctx.run.write_report {
                    write_report_at_end(out.folder(), events);
                }
                let failed = out.verdict().is_some_and(|v| v.status == RunStatus::Failed);
                runs.push(RepeatRun {
                    index: i,
                    folder: name,
                    seed,
                    interrupted: out.interrupted(),
                    verdict: line.clone(),
                });
                if out.interrupted() {
                    stop_reason = Some(format!("interrupted during run {i}"));
                    break;
                }
                if failed && i < runs_asked {
                    stop_reason = Some(format!(
                        "run {i} failed ({}); the runs after it were not made",
                        line.unwrap_or_default()
                    ));
                    break;
                }
            }
            Err(e) if runs.iter().any(|r| !r.interrupted) => {
                events.warn(format!("run {i} could not run: {e}"));
                stop_reason = Some(format!("run {i} could not run: {e}"));
                break;
            }
            Err(e) => return Err(e),
        }
    }
    let interrupted = *ctx.stop.borrow();
    let asked = RepeatAsked {
        of: kind_name(W::KIND).into(),
        runs_asked,
        stop_reason,
        slo: workload.slo(),
        max_error_rate: ctx.run.max_error_rate,
    };
    let summary = summarize_repeat(
        top.path(),
        runs,
        &asked,
        (started_utc, conn.clock.utc_now()),
    )?;
    top.write_json(REPEAT_JSON, &summary)?;
    Ok(RepeatedRuns {
        folder: top.into_path(),
        summary,
        interrupted,
    })
}

/// Waits until the server shows no request running or waiting (read from
/// its `/metrics`), at most [`DRAIN_LIMIT`]; without `/metrics` the
/// workload's own end (every request ended or cut) is what there is. A
/// Ctrl-C ends the wait.
async fn drain(conn: &Connection, stop: &tokio::sync::watch::Receiver<bool>, events: &Events) {
    let Some(scraper) = &conn.scraper else {
        return;
    };
    let start = conn.clock.now_secs();
    while !*stop.borrow() {
        match load_now(scraper).await {
            Some(load) if load.running + load.waiting > 0.0 => {}
            // Idle, or a page without vLLM's gauges: nothing to wait for.
            _ => return,
        }
        if conn.clock.now_secs() - start >= DRAIN_LIMIT.as_secs_f64() {
            events.warn(format!(
                "the server still had requests running or waiting {:.0} s after the run; the next run starts anyway",
                DRAIN_LIMIT.as_secs_f64()
            ));
            return;
        }
        conn.clock.sleep(DRAIN_POLL).await;
    }
}

/// Says what a repetition measured (its table across runs, where it is,
/// the unstable figures, the verdict on the pooled figures), writes its
/// report, and turns an interruption into [`Error::Interrupted`].
pub(super) fn finish(
    r: RepeatedRuns,
    settings: &RunSettings,
    events: &Events,
) -> Result<RepeatedRuns, Error> {
    let table = codendum_report::repeat::text_table(&r.summary);
    events.table(table);
    if let Some(why) = &r.summary.stop_reason {
        events.warn(format!(
            "{} of {} runs made: {why}; the figures across runs cover the finished ones",
            r.summary.runs.len(),
            r.summary.runs_asked
        ));
    }
    let unstable: Vec<String> = r
        .summary
        .unstable()
        .iter()
        .map(|(group, f)| {
            format!(
                "{group} {} (CV {:.0} %)",
                f.key,
                f.cv.unwrap_or(0.0) * 100.0
            )
        })
        .collect();
    if !unstable.is_empty() {
        events.warn(format!(
            "unstable across runs (coefficient of variation above {:.0} %): {}",
            r.summary.unstable_cv * 100.0,
            unstable.join(", ")
        ));
    }
    events.written(Written::Results, &r.folder);
    if r.summary.verdict.exit_code() == 0 {
        events.emit(Event::Verdict(format!(
            "{} runs: {}",
            r.summary.runs.len(),
            r.summary.verdict.line
        )));
    }
    if settings.write_report {
        write_report_at_end(&r.folder, events);
    }
    if r.interrupted {
        return Err(Error::Interrupted(r.folder));
    }
    Ok(r)
}
