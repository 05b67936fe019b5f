//! `codendum calibrate --check PROFILE RUN_DIR…`: a backtest. Each bench
//! run is replayed on the embedded twin with the (fitted) profile, level by
//! level with the same prompt sizes, concurrency, requests and output
//! tokens, in virtual time; the predicted figures are set beside the
//! measured ones with their error, and the check fails when one is beyond
//! the tolerance.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::bench::config::{Cell, Load};
use crate::bench::BenchConfig;
use codendum_core::error::{ConfigError, Error};
use codendum_core::kinds::Shape;
use codendum_core::profile::Profile;
use codendum_core::results::{self, BenchSummary, LevelSummary};

/// One figure of one level: measured, predicted, and the error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FigureCheck {
    /// The run folder.
    pub run: PathBuf,
    /// The level (`shape@N`).
    pub level: String,
    /// The figure (`output tok/s`, `TPOT`, `TTFT P50`, `TTFT P95`).
    pub figure: &'static str,
    /// Measured value (tok/s or seconds).
    pub measured: f64,
    /// The twin's value with the profile.
    pub predicted: f64,
    /// `predicted / measured - 1` (fraction).
    pub error: f64,
    /// Whether `|error|` is within the tolerance.
    pub within: bool,
}

/// The cells of a measured run: each level at the prompt size the server
/// counted, its concurrency and its requests.
fn cells_of(summary: &BenchSummary) -> Vec<Cell> {
    summary
        .levels
        .iter()
        .filter(|l| l.successes > 0 && l.rate.is_none())
        .filter_map(|l| {
            let tokens = l.mean_input_tokens?.round();
            Some(Cell {
                shape: Shape::Sized(tokens.clamp(1.0, f64::from(u32::MAX)) as u32),
                concurrency: l.concurrency,
                requests: l.requests.max(1),
            })
        })
        .collect()
}

/// Replays `cells` on the twin of `profile` in virtual time, with the
/// run's output tokens, endpoint and seed; the levels in the same order.
fn replay(
    profile: &Profile,
    summary: &BenchSummary,
    cells: Vec<Cell>,
    scratch: &Path,
) -> Result<Vec<LevelSummary>, Error> {
    let config = BenchConfig {
        load: Load::Cells(cells),
        output_tokens: summary.parameters.output_tokens,
        endpoint: summary.parameters.endpoint,
        seed: summary.parameters.seed,
        ..BenchConfig::default()
    };
    crate::virtual_time::bench_on_twin(profile, config, scratch)
}

/// Backtests `profile` on each bench run: every figure of every level,
/// measured against predicted. `tolerance` is a fraction (0.1: 10 %).
pub fn check_runs(
    profile: &Profile,
    runs: &[PathBuf],
    tolerance: f64,
) -> Result<Vec<FigureCheck>, Error> {
    // The replays' own results folders are scratch: removed afterwards.
    let scratch = std::env::temp_dir().join(format!("codendum-check-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)
        .map_err(|e| Error::io("cannot make a scratch folder for the replay", e))?;
    let out = check_each(profile, runs, tolerance, &scratch);
    let _ = std::fs::remove_dir_all(&scratch);
    out
}

fn check_each(
    profile: &Profile,
    runs: &[PathBuf],
    tolerance: f64,
    scratch: &Path,
) -> Result<Vec<FigureCheck>, Error> {
    let mut out = Vec::new();
    for run in runs {
        let read = results::read_summary(run).map_err(|e| {
            ConfigError::invalid(
                "RUN_DIR",
                format!("{}: not a bench or classroom run ({e})", run.display()),
            )
        })?;
        let summary = match read {
            results::RunSummary::Bench(s) => *s,
            results::RunSummary::Classroom(c) => {
                out.extend(check_class(profile, run, &c, tolerance)?);
                continue;
            }
        };
        let cells = cells_of(&summary);
        if cells.is_empty() {
            return Err(ConfigError::invalid(
                "RUN_DIR",
                format!(
                    "{}: no closed-loop level with a successful request",
                    run.display()
                ),
            )
            .into());
        }
        let measured: Vec<&LevelSummary> = summary
            .levels
            .iter()
            .filter(|l| l.successes > 0 && l.rate.is_none() && l.mean_input_tokens.is_some())
            .collect();
        let predicted = replay(profile, &summary, cells, scratch)?;
        for (m, p) in measured.iter().zip(&predicted) {
            let level = format!("{}@{}", m.shape, m.concurrency);
            let figures: [(&'static str, Option<f64>, Option<f64>); 4] = [
                (
                    "output tok/s",
                    Some(m.output_tok_per_s),
                    Some(p.output_tok_per_s),
                ),
                ("TPOT", m.tpot_mean_s, p.tpot_mean_s),
                ("TTFT P50", m.ttft_p50_s, p.ttft_p50_s),
                ("TTFT P95", m.ttft_p95_s, p.ttft_p95_s),
            ];
            out.extend(figure_checks(run, &level, &figures, tolerance));
        }
    }
    Ok(out)
}

/// A classroom run replayed as `plan` would simulate it: the same students,
/// scenario, window and seed on the twin with `profile`; the class figures
/// (server output, TTFT P50 and P95, coding requests completed).
fn check_class(
    profile: &Profile,
    run: &Path,
    class: &results::ClassroomRunSummary,
    tolerance: f64,
) -> Result<Vec<FigureCheck>, Error> {
    let p = &class.parameters;
    let mut config = crate::plan::PlanConfig::new();
    config.scenario = crate::classroom::scenario::Scenario::from_name(&p.scenario)?;
    config.duration = Duration::from_secs_f64(p.duration_s.max(1.0));
    config.seed = p.seed;
    let spec = crate::plan::config::CellSpec {
        profile: profile.name.clone(),
        max_num_seqs: profile.server.max_num_seqs,
        overridden: false,
        users: p.users,
    };
    let cell = std::thread::scope(|s| {
        s.spawn(|| crate::plan::cell::run_cell(&spec, profile, &config))
            .join()
            .unwrap_or_else(|_| Err(Error::Failed("the class replay stopped".into())))
    })?;
    let m = &class.summary;
    let level = format!("class of {}", p.users);
    let figures: [(&'static str, Option<f64>, Option<f64>); 4] = [
        (
            "server tok/s",
            m.server.output_tokens_per_s,
            cell.server_output_tok_per_s,
        ),
        ("TTFT P50", m.ttft_p50_s, cell.ttft_p50_s),
        ("TTFT P95", m.ttft_p95_s, cell.ttft_p95_s),
        (
            "completed",
            Some(m.completed as f64),
            Some(cell.completed as f64),
        ),
    ];
    Ok(figure_checks(run, &level, &figures, tolerance))
}

/// The checks of one level's figures that both sides have (and a measured
/// value above 0).
fn figure_checks(
    run: &Path,
    level: &str,
    figures: &[(&'static str, Option<f64>, Option<f64>)],
    tolerance: f64,
) -> Vec<FigureCheck> {
    figures
        .iter()
        .filter_map(|&(figure, mv, pv)| {
            let (mv, pv) = (mv?, pv?);
            (mv > 0.0).then(|| {
                let error = pv / mv - 1.0;
                FigureCheck {
                    run: run.to_path_buf(),
                    level: level.to_string(),
                    figure,
                    measured: mv,
                    predicted: pv,
                    error,
                    within: error.abs() <= tolerance,
                }
            })
        })
        .collect()
}

/// The table for stderr: one row per level, each figure measured →
/// predicted (error), a `!` beside each beyond the tolerance.
pub fn check_text(checks: &[FigureCheck], tolerance: f64) -> String {
    use std::fmt::Write as _;
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<16} {:<13} {:>10} {:>10} {:>8}",
        "level", "figure", "measured", "predicted", "error"
    );
    let mut last_run: Option<&Path> = None;
    for c in checks {
        if last_run != Some(c.run.as_path()) {
            let _ = writeln!(t, "{}", c.run.display());
            last_run = Some(c.run.as_path());
        }
        let fmt = |v: f64| {
            if c.figure == "completed" {
                format!("{v:.0}")
            } else if c.figure.ends_with("tok/s") {
                format!("{v:.1}")
            } else if c.figure == "TPOT" {
                format!("{:.1} ms", v * 1e3)
            } else {
                format!("{v:.3} s")
            }
        };
        let _ = writeln!(
            t,
            "{:<16} {:<13} {:>10} {:>10} {:>+7.1} %{}",
            c.level,
            c.figure,
            fmt(c.measured),
            fmt(c.predicted),
            c.error * 100.0,
            if c.within { "" } else { " !" }
        );
    }
    let beyond = checks.iter().filter(|c| !c.within).count();
    let _ = writeln!(
        t,
        "{} of {} figures within {:.0} %{}",
        checks.len() - beyond,
        checks.len(),
        tolerance * 100.0,
        if beyond > 0 { " (! beyond it)" } else { "" }
    );
    t
}
