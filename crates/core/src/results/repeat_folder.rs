//! The folder of a repeated run (`--repeat N`): `run-1/` … `run-N/`, each a
//! normal results folder, and `repeat.json` beside them ([`RepeatSummary`]):
//! which runs there were, every figure across them
//! ([`super::repeat::Repeated`]) grouped as the runs measured it (a bench
//! level, a class), the targets judged on the pooled figures by the one
//! rule ([`crate::bound::Bound::judge`]) and the verdict over every run's
//! calls. Built from the run folders alone, so `report` rebuilds it from
//! files.

use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::classroom_records::{CallRecord, TaskRecord};
use super::repeat::{repeat_classes, RepeatGroup, Repeated, RunClass, UNSTABLE_CV};
use super::repeat_levels::{bench_groups, RunBench};
use super::slo::Slo;
use super::verdict::Verdict;
use super::{read_jsonl, read_summary, LevelSummary, RequestRecord, ResultsError, RunSummary};
use crate::bound::{Bound, Outcome};
use crate::stats::Interval;

/// File name of a repeated run's summary, at the top of its folder.
pub const REPEAT_JSON: &str = "repeat.json";
/// The `kind` of `repeat.json`.
pub const REPEAT_KIND: &str = "repeat";
/// The `schema_version` of `repeat.json`.
pub const REPEAT_SCHEMA_VERSION: u32 = 1;

/// The label of a classroom or replay repetition's group.
pub const CLASS_GROUP: &str = "class";

/// The name of run `index`'s folder (1-based): `run-2`.
pub fn run_folder_name(index: u32) -> String {
    format!("run-{index}")
}

/// One run of a repeated run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatRun {
    /// Its number, from 1.
    pub index: u32,
    /// Its folder, relative to the repeated run's (`run-1`).
    pub folder: String,
    /// The random seed it ran with (`--seed` plus its number − 1).
    pub seed: u64,
    /// Whether it was stopped before its end; its figures are then left out
    /// of the figures across runs.
    pub interrupted: bool,
    /// Its own verdict line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
}

/// A target judged on a pooled figure.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PooledJudgement {
    /// The group's label.
    pub group: String,
    /// The figure's key (`slo_share`, `error_rate`).
    pub figure: String,
    /// Ceiling or floor.
    pub bound: Bound,
    /// The limit, in the figure's unit.
    pub limit: f64,
    /// The pooled figure.
    pub pooled: Option<f64>,
    /// Its 95 % interval.
    pub interval: Option<Interval>,
    /// Met, missed or indeterminate.
    pub outcome: Outcome,
}

/// `repeat.json`: a repeated run's summary.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RepeatSummary {
    /// [`REPEAT_SCHEMA_VERSION`].
    pub schema_version: u32,
    /// [`REPEAT_KIND`].
    pub kind: String,
    /// What was repeated: `bench`, `classroom` or `replay`.
    pub of: String,
    /// When the first run started.
    pub started_utc: DateTime<Utc>,
    /// When the last run ended.
    pub finished_utc: DateTime<Utc>,
    /// Runs asked for (`--repeat`).
    pub runs_asked: u32,
    /// Whether the repetition stopped before every run was made (Ctrl-C, a
    /// run that failed or could not run).
    pub stopped_early: bool,
    /// Why it stopped early, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
    /// The runs made, in order.
    pub runs: Vec<RepeatRun>,
    /// The figures across the finished runs, per level or class.
    pub groups: Vec<RepeatGroup>,
    /// The coefficient of variation above which a figure is flagged
    /// unstable ([`UNSTABLE_CV`]).
    pub unstable_cv: f64,
    /// `--slo` and `--max-error-rate` judged on the pooled figures.
    pub judgements: Vec<PooledJudgement>,
    /// The verdict over every finished run's calls.
    pub verdict: Verdict,
}

impl RepeatSummary {
    /// The first run that finished (its folder stands for the repetition's
    /// workload and server); `None` when every run was interrupted.
    pub fn first_finished(&self) -> Option<&RepeatRun> {
        self.runs.iter().find(|r| !r.interrupted)
    }

    /// The group that pooled `level`, a level of run `run` (its number,
    /// from 1): the class's for a class; for a bench level, the group of
    /// its shape and load, found by its label (`short, N=8`, `short, 2
    /// req/s`) or, for a sweep's rate, by the rate run `run` measured there.
    pub fn group_of_level(&self, run: u32, level: &LevelSummary) -> Option<&RepeatGroup> {
        let closed =
            |g: &&RepeatGroup| g.label == format!("{}, N={}", level.shape, level.concurrency);
        let Some(rate) = &level.rate else {
            return self.groups.iter().find(closed);
        };
        let fixed = format!("{}, {} req/s", level.shape, rate.rate_per_s);
        let sweep = format!("{}, sweep rate ", level.shape);
        self.groups.iter().find(|g| {
            if g.label == fixed {
                return true;
            }
            if !g.label.starts_with(&sweep) {
                return false;
            }
            let at = g.runs.iter().position(|r| *r == run);
            let rates = g.figures.iter().find(|f| f.key == "rate_per_s");
            match (at, rates) {
                (Some(i), Some(f)) => f.values.get(i).copied().flatten() == Some(rate.rate_per_s),
                _ => false,
            }
        })
    }

    /// The class's group (classroom and replay repetitions).
    pub fn class_group(&self) -> Option<&RepeatGroup> {
        self.groups.iter().find(|g| g.label == CLASS_GROUP)
    }

    /// Every figure flagged unstable: `(group, figure)`.
    pub fn unstable(&self) -> Vec<(&str, &Repeated)> {
        self.groups
            .iter()
            .flat_map(|g| {
                g.figures
                    .iter()
                    .filter(|f| f.is_unstable())
                    .map(move |f| (g.label.as_str(), f))
            })
            .collect()
    }
}

/// What the repeated run asked, besides its runs' folders.
#[derive(Debug, Clone)]
pub struct RepeatAsked {
    /// `bench`, `classroom` or `replay`.
    pub of: String,
    /// `--repeat`.
    pub runs_asked: u32,
    /// Why the runs stopped before `runs_asked`, if they did.
    pub stop_reason: Option<String>,
    /// `--slo` (bench).
    pub slo: Option<Slo>,
    /// `--max-error-rate`.
    pub max_error_rate: f64,
}

/// One run's folder read back.
enum Loaded {
    Bench(Box<super::BenchSummary>, Vec<RequestRecord>),
    Class(
        Box<super::ClassroomRunSummary>,
        Vec<CallRecord>,
        Vec<TaskRecord>,
    ),
}

fn lines<T: serde::de::DeserializeOwned>(
    folder: &Path,
    name: &'static str,
) -> Result<Vec<T>, ResultsError> {
    match File::open(folder.join(name)) {
        Ok(f) => read_jsonl(BufReader::new(f), name).map(|c| c.items),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(source) => Err(ResultsError::Read { file: name, source }),
    }
}

fn load(folder: &Path) -> Result<Loaded, ResultsError> {
    Ok(match read_summary(folder)? {
        RunSummary::Bench(s) => Loaded::Bench(s, lines(folder, super::REQUESTS_JSONL)?),
        RunSummary::Classroom(s) => Loaded::Class(
            s,
            lines(folder, super::REQUESTS_JSONL)?,
            lines(folder, super::TASKS_JSONL)?,
        ),
    })
}

/// Reads the runs' folders (`top/run-i/`) and sums them up. Runs marked
/// interrupted are listed but left out of the figures and the verdict.
pub fn summarize_repeat(
    top: &Path,
    runs: Vec<RepeatRun>,
    asked: &RepeatAsked,
    (started_utc, finished_utc): (DateTime<Utc>, DateTime<Utc>),
) -> Result<RepeatSummary, ResultsError> {
    let mut loaded = Vec::new();
    for run in runs.iter().filter(|r| !r.interrupted) {
        loaded.push((run.index, load(&top.join(&run.folder))?));
    }
    let mut groups = Vec::new();
    let mut judgements = Vec::new();
    let mut verdicts: Vec<(u32, &Verdict)> = Vec::new();
    // Bench: one group per level, matched across runs by its slot.
    let benches: Vec<RunBench<'_>> = loaded
        .iter()
        .filter_map(|(i, l)| match l {
            Loaded::Bench(s, records) => Some(RunBench {
                index: *i,
                levels: &s.levels,
                searches: &s.rate_search,
                records,
            }),
            Loaded::Class(..) => None,
        })
        .collect();
    for group in bench_groups(&benches) {
        if let Some(slo) = &asked.slo {
            if let Some(f) = group.figures.iter().find(|f| f.key == "slo_share") {
                judgements.push(PooledJudgement {
                    group: group.label.clone(),
                    figure: f.key.clone(),
                    bound: Bound::Min,
                    limit: slo.share,
                    pooled: f.pooled,
                    interval: f.pooled_interval,
                    outcome: Bound::Min.judge(f.pooled, f.pooled_interval, slo.share),
                });
            }
        }
        groups.push(group);
    }
    // Classroom and replay: one group, the class.
    let class: Vec<(u32, RunClass<'_>)> = loaded
        .iter()
        .filter_map(|(i, l)| match l {
            Loaded::Class(s, calls, tasks) => Some((
                *i,
                RunClass {
                    summary: &s.summary,
                    calls,
                    tasks,
                },
            )),
            Loaded::Bench(..) => None,
        })
        .collect();
    if !class.is_empty() {
        let view: Vec<RunClass<'_>> = class.iter().map(|(_, c)| *c).collect();
        groups.push(RepeatGroup {
            label: CLASS_GROUP.into(),
            runs: class.iter().map(|(i, _)| *i).collect(),
            figures: repeat_classes(&view),
        });
    }
    for (i, l) in &loaded {
        let v = match l {
            Loaded::Bench(s, _) => s.verdict.as_ref(),
            Loaded::Class(s, ..) => s.verdict.as_ref(),
        };
        if let Some(v) = v {
            verdicts.push((*i, v));
        }
    }
    let verdict = Verdict::pooled(&verdicts, asked.max_error_rate);
    if verdict.calls > 0 {
        judgements.push(PooledJudgement {
            group: "all runs".into(),
            figure: "error_rate".into(),
            bound: Bound::Max,
            limit: asked.max_error_rate,
            pooled: verdict.error_rate,
            interval: verdict.error_rate_interval,
            outcome: verdict.error_rate_outcome.unwrap_or(Outcome::Missed),
        });
    }
    let made = runs.len() as u32;
    Ok(RepeatSummary {
        schema_version: REPEAT_SCHEMA_VERSION,
        kind: REPEAT_KIND.into(),
        of: asked.of.clone(),
        started_utc,
        finished_utc,
        runs_asked: asked.runs_asked,
        stopped_early: made < asked.runs_asked || runs.iter().any(|r| r.interrupted),
        stop_reason: asked.stop_reason.clone(),
        runs,
        groups,
        unstable_cv: UNSTABLE_CV,
        judgements,
        verdict,
    })
}

/// Whether `folder` is a repeated run's (it holds `repeat.json`).
pub fn is_repeat(folder: &Path) -> bool {
    folder.join(REPEAT_JSON).is_file()
}

/// Reads `repeat.json` of a repeated run's folder, refusing another kind
/// or a newer version.
pub fn read_repeat(folder: &Path) -> Result<RepeatSummary, ResultsError> {
    let text =
        std::fs::read_to_string(folder.join(REPEAT_JSON)).map_err(|source| ResultsError::Read {
            file: REPEAT_JSON,
            source,
        })?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| ResultsError::BadJson {
            file: REPEAT_JSON,
            line: e.line(),
            reason: e.to_string(),
        })?;
    match value.get("kind").and_then(serde_json::Value::as_str) {
        Some(REPEAT_KIND) => {}
        other => {
            return Err(ResultsError::WrongKind {
                expected: REPEAT_KIND,
                found: other.unwrap_or_default().to_string(),
            })
        }
    }
    match value
        .get("schema_version")
        .and_then(serde_json::Value::as_u64)
    {
        None => return Err(ResultsError::MissingSchemaVersion),
        Some(v) if v != u64::from(REPEAT_SCHEMA_VERSION) => {
            return Err(ResultsError::UnsupportedSchema {
                found: v,
                supported: REPEAT_SCHEMA_VERSION,
            })
        }
        Some(_) => {}
    }
    serde_json::from_value(value).map_err(|e| ResultsError::BadJson {
        file: REPEAT_JSON,
        line: 0,
        reason: e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::verdict::{judge, CallOutcome, Expectations};
    use crate::results::RunStatus;

    fn calls(n: usize, failed: usize) -> Vec<CallOutcome> {
        (0..n)
            .map(|i| CallOutcome {
                start_s: i as f64,
                end_s: i as f64 + 0.5,
                // Failures spread between successes: errors, not outages.
                error: (i % (n / failed.max(1)) == 1 && i / (n / failed.max(1)) < failed)
                    .then(|| "http_500".to_string()),
            })
            .collect()
    }

    #[test]
    fn the_pooled_verdict_sums_the_runs_and_judges_the_pooled_error_rate() {
        let limit = Expectations {
            unmet: Vec::new(),
            max_error_rate: 0.05,
        };
        let a = judge(&calls(100, 2), &limit);
        let b = judge(&calls(100, 4), &limit);
        assert_eq!((a.errors, b.errors), (2, 4));
        let pooled = Verdict::pooled(&[(1, &a), (2, &b)], 0.05);
        assert_eq!((pooled.calls, pooled.errors), (200, 6));
        assert_eq!(pooled.status, RunStatus::WithErrors);
        assert_eq!(pooled.error_rate, Some(0.03));
        let i = pooled.error_rate_interval.expect("interval");
        assert_eq!(i, crate::stats::wilson(6, 200).expect("wilson"));
        assert_eq!(
            pooled.error_rate_outcome,
            Some(Bound::Max.judge(Some(0.03), Some(i), 0.05))
        );
        assert_eq!(pooled.errors_by_kind["http_500"], 6);
        // A run that failed fails the repetition, named by its number.
        let failed = judge(
            &calls(10, 0),
            &Expectations {
                unmet: vec!["no coding request completed".into()],
                max_error_rate: 0.05,
            },
        );
        let pooled = Verdict::pooled(&[(1, &a), (2, &failed)], 0.05);
        assert_eq!(pooled.status, RunStatus::Failed);
        assert!(
            pooled.line.contains("run 2: no coding request completed"),
            "{}",
            pooled.line
        );
        assert_eq!(pooled.exit_code(), 1);
    }

    #[test]
    fn run_folders_are_numbered_from_one() {
        assert_eq!(run_folder_name(1), "run-1");
        assert_eq!(run_folder_name(12), "run-12");
    }
}
