//! `codendum calibrate --check PROFILE RUN_DIR…`: a backtest. Each bench
//! run is replayed on the embedded twin with the (fitted) profile, level by
//! level with the same prompt sizes, concurrency (or rate, arrival process
//! and seed, so a Poisson level gets the same arrivals), requests and
//! output tokens, in virtual time; the predicted figures are set beside the
//! measured ones with their error.
//!
//! Each figure is judged by the one rule of
//! [`codendum_core::bound::Bound::judge`]: the prediction `p` is within the
//! tolerance `t` of the measured truth `μ` when `μ` lies in
//! `[p / (1 + t), p / (1 − t)]`; the measured figure's 95 % interval decides
//! whether it surely does (**within**), surely does not (**beyond**: the
//! check fails) or cannot tell (**indeterminate**). A figure measured
//! without an interval is judged by its value.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;

use crate::bench::config::{Cell, Load, OpenLoop};
use crate::bench::BenchConfig;
use codendum_core::bound::{Bound, Outcome};
use codendum_core::error::{ConfigError, Error};
use codendum_core::profile::Profile;
use codendum_core::results::{self, BenchSummary, LevelSummary};
use codendum_core::shape::Shape;
use codendum_core::stats::Interval;

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
    /// The measured figure's 95 % interval, when the run gave one.
    pub interval: Option<Interval>,
    /// Whether `|error|` is within the tolerance (by the values alone).
    pub within: bool,
    /// Within, beyond (missed) or indeterminate, by the measured interval
    /// (see the module documentation).
    pub outcome: Outcome,
}

/// The backtest's judgement of one figure: whether the measured truth,
/// `measured` with its `interval`, lies within `tolerance` (a fraction below
/// 1) of `predicted`, by the one rule: within `[p / (1 + t), p / (1 − t)]`.
pub fn judge_backtest(
    measured: f64,
    interval: Option<Interval>,
    predicted: f64,
    tolerance: f64,
) -> Outcome {
    let low = predicted / (1.0 + tolerance);
    let high = if tolerance < 1.0 {
        predicted / (1.0 - tolerance)
    } else {
        f64::INFINITY
    };
    Outcome::worst([
        Bound::Min.judge(Some(measured), interval, low),
        Bound::Max.judge(Some(measured), interval, high),
    ])
}

/// The levels of a measured run that can be replayed: those with a
/// successful request and a prompt size the server counted, closed-loop and
/// rate levels alike, in run order.
fn replayable(summary: &BenchSummary) -> Vec<&LevelSummary> {
    summary
        .levels
        .iter()
        .filter(|l| l.successes > 0 && l.mean_input_tokens.is_some())
        .collect()
}

/// A level's cell: the prompt size the server counted, its concurrency (a
/// rate level's cap, 0 for none) and its requests.
fn cell_of(l: &LevelSummary) -> Cell {
    let tokens = l.mean_input_tokens.unwrap_or(1.0).round();
    Cell {
        shape: Shape::Sized(tokens.clamp(1.0, f64::from(u32::MAX)) as u32),
        concurrency: l.concurrency,
        requests: l.requests.max(1),
    }
}

/// Replays `levels` on the twin of `profile` in virtual time, with the
/// run's output tokens, endpoint and seed; the predicted levels in the same
/// order. The closed-loop levels run as one bench; each rate level as a
/// bench of its own on a fresh twin, with the run's seed, so its arrivals
/// are the measured level's.
fn replay(
    profile: &Profile,
    summary: &BenchSummary,
    levels: &[&LevelSummary],
    scratch: &Path,
) -> Result<Vec<LevelSummary>, Error> {
    let bench = |load: Load, shapes: Vec<Shape>, requests: Option<u64>| {
        let config = BenchConfig {
            load,
            shapes,
            requests_per_level: requests,
            output_tokens: summary.parameters.output_tokens,
            endpoint: summary.parameters.endpoint,
            seed: summary.parameters.seed,
            ..BenchConfig::default()
        };
        crate::virtual_time::bench_on_twin(profile, config, scratch)
    };
    let closed: Vec<Cell> = levels
        .iter()
        .filter(|l| l.rate.is_none())
        .map(|l| cell_of(l))
        .collect();
    let mut closed_out = if closed.is_empty() {
        Vec::new()
    } else {
        bench(Load::Cells(closed), Vec::new(), None)?
    }
    .into_iter();
    let mut out = Vec::with_capacity(levels.len());
    for l in levels {
        let Some(rate) = &l.rate else {
            out.extend(closed_out.next());
            continue;
        };
        let cell = cell_of(l);
        let load = Load::Rates {
            rates: vec![rate.rate_per_s],
            closed_first: false,
            open: OpenLoop {
                arrival: rate_arrival(&rate.arrival)?,
                max_concurrency: rate.max_concurrency,
            },
        };
        out.extend(bench(load, vec![cell.shape], Some(cell.requests))?);
    }
    Ok(out)
}

/// The arrival process a rate level names (`poisson`, `constant`,
/// `gamma(0.5)`).
fn rate_arrival(name: &str) -> Result<crate::bench::arrival::Arrival, Error> {
    let (kind, burstiness) = match name
        .strip_prefix("gamma(")
        .and_then(|r| r.strip_suffix(')'))
    {
        Some(b) => ("gamma", b.parse::<f64>().ok()),
        None => (name, None),
    };
    crate::bench::arrival::Arrival::parse(kind, burstiness)
        .map_err(|e| ConfigError::invalid("RUN_DIR", format!("a rate level's arrival: {e}")).into())
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
        let measured = replayable(&summary);
        if measured.is_empty() {
            return Err(ConfigError::invalid(
                "RUN_DIR",
                format!(
                    "{}: no level with a successful request and a prompt size the server counted",
                    run.display()
                ),
            )
            .into());
        }
        let predicted = replay(profile, &summary, &measured, scratch)?;
        for (m, p) in measured.iter().zip(&predicted) {
            let level = match &m.rate {
                Some(r) => format!(
                    "{}@{}/s",
                    m.shape,
                    results::records::trim_rate(r.rate_per_s)
                ),
                None => format!("{}@{}", m.shape, m.concurrency),
            };
            let i = |key: &str| m.intervals.get(key).copied();
            let figures: [Figure; 4] = [
                (
                    "output tok/s",
                    Some(m.output_tok_per_s),
                    i("output_tok_per_s"),
                    Some(p.output_tok_per_s),
                ),
                ("TPOT", m.tpot_mean_s, i("tpot_mean_s"), p.tpot_mean_s),
                ("TTFT P50", m.ttft_p50_s, i("ttft_p50_s"), p.ttft_p50_s),
                ("TTFT P95", m.ttft_p95_s, i("ttft_p95_s"), p.ttft_p95_s),
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
        seed: None,
    };
    let cell = std::thread::scope(|s| {
        s.spawn(|| crate::plan::cell::run_cell(&spec, profile, &config))
            .join()
            .unwrap_or_else(|_| Err(Error::Failed("the class replay stopped".into())))
    })?;
    let m = &class.summary;
    let level = format!("class of {}", p.users);
    let i = |key: &str| m.intervals.get(key).copied();
    let figures: [Figure; 4] = [
        (
            "server tok/s",
            m.server.output_tokens_per_s,
            i("server_output_tok_per_s"),
            cell.server_output_tok_per_s,
        ),
        ("TTFT P50", m.ttft_p50_s, i("ttft_p50_s"), cell.ttft_p50_s),
        ("TTFT P95", m.ttft_p95_s, i("ttft_p95_s"), cell.ttft_p95_s),
        (
            "completed",
            Some(m.completed as f64),
            None,
            Some(cell.completed as f64),
        ),
    ];
    Ok(figure_checks(run, &level, &figures, tolerance))
}

/// A figure of a backtest: its name, the measured value and interval, the
/// predicted value.
type Figure = (&'static str, Option<f64>, Option<Interval>, Option<f64>);

/// The checks of one level's figures that both sides have (and a measured
/// value above 0).
fn figure_checks(run: &Path, level: &str, figures: &[Figure], tolerance: f64) -> Vec<FigureCheck> {
    figures
        .iter()
        .filter_map(|&(figure, mv, interval, pv)| {
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
                    interval,
                    within: error.abs() <= tolerance,
                    outcome: judge_backtest(mv, interval, pv, tolerance),
                }
            })
        })
        .collect()
}

/// The table for stderr: one row per level, each figure measured (with its
/// interval when the run gave one) → predicted (error), a `!` beside each
/// beyond the tolerance and a `?` beside each the measured interval cannot
/// decide.
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
        let interval = match c.interval {
            Some(i) => format!(
                " [{}–{}]",
                i.lo.map_or("…".to_string(), fmt),
                i.hi.map_or("…".to_string(), fmt)
            ),
            None => String::new(),
        };
        let _ = writeln!(
            t,
            "{:<16} {:<13} {:>10} {:>10} {:>+7.1} %{}{interval}",
            c.level,
            c.figure,
            fmt(c.measured),
            fmt(c.predicted),
            c.error * 100.0,
            match c.outcome {
                Outcome::Met => "",
                Outcome::Missed => " !",
                Outcome::Indeterminate => " ?",
            }
        );
    }
    let count = |o: Outcome| checks.iter().filter(|c| c.outcome == o).count();
    let (beyond, open) = (count(Outcome::Missed), count(Outcome::Indeterminate));
    let _ = writeln!(
        t,
        "{} of {} figures within {:.0} %{}{}",
        count(Outcome::Met),
        checks.len(),
        tolerance * 100.0,
        if open > 0 {
            format!(
                ", {open} indeterminate (? its measured interval reaches beyond the tolerance: more requests decide it)"
            )
        } else {
            String::new()
        },
        if beyond > 0 { " (! beyond it)" } else { "" }
    );
    t
}
