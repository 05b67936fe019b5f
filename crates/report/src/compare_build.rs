//! Building a [`Comparison`] from benchmark or classroom reports.

use super::charts::{by_concurrency, concurrency_axis, minutes};
use super::compare::{
    labels_or_default, ComparedFigure, Comparison, ComparisonSection, RunKind, TooFewRuns,
};
use super::format::upper_first;
use super::model::{BenchReport, ClassroomReport};
use super::svg::{AxisTitle, CdfChart, CdfCurve, Chart, LineChart, Series};
use codendum_core::results::metrics::{class_metrics_in, level_metrics_in, View};
use codendum_core::results::repeat_folder::{RepeatGroup, RepeatSummary};
use codendum_core::results::LevelSummary;
use codendum_core::stats::Interval;

impl Comparison {
    /// Compares benchmark runs level by level. `runs` pairs a label (empty:
    /// `Run N`) with a report; the first run is the baseline.
    pub fn of_bench(runs: &[(String, &BenchReport)]) -> Result<Comparison, TooFewRuns> {
        Comparison::of_bench_pooled(runs, &vec![None; runs.len()])
    }

    /// [`Comparison::of_bench`] where some runs stand for a repetition
    /// (`pooled[i]`: the repetition's summary, `runs[i]`: its first
    /// finished run's report): their column shows the figures pooled over
    /// every run of the repetition with the pooled 95 % intervals, and a
    /// figure the repetition did not pool is left empty. Charts are left
    /// out when a column is pooled (they would show one run of it).
    pub fn of_bench_pooled(
        runs: &[(String, &BenchReport)],
        pooled: &[Option<&RepeatSummary>],
    ) -> Result<Comparison, TooFewRuns> {
        if runs.len() < 2 {
            return Err(TooFewRuns(runs.len()));
        }
        let labels = labels_or_default(runs.iter().map(|(l, _)| l.clone()).collect());
        let infos: Vec<_> = runs.iter().map(|(_, r)| r.run.clone()).collect();
        let (differences, same) = Comparison::provenance_fields(&infos);
        let keys = level_keys(runs);
        let sections = keys
            .iter()
            .map(|(shape, load)| level_section(runs, pooled, shape, load))
            .collect();
        let charts = if pooled.iter().any(Option::is_some) {
            Vec::new()
        } else {
            bench_charts(runs, &labels, &keys)
        };
        Ok(Comparison {
            pooled_runs: pooled_runs(pooled),
            kind: RunKind::Bench,
            labels,
            runs: infos,
            differences,
            same,
            sections,
            charts,
        })
    }

    /// Compares classroom runs on their headline figures, with overlaid
    /// distributions. The first run is the baseline.
    pub fn of_classroom(runs: &[(String, &ClassroomReport)]) -> Result<Comparison, TooFewRuns> {
        Comparison::of_classroom_pooled(runs, &vec![None; runs.len()])
    }

    /// [`Comparison::of_classroom`] where some runs stand for a repetition,
    /// as in [`Comparison::of_bench_pooled`].
    pub fn of_classroom_pooled(
        runs: &[(String, &ClassroomReport)],
        pooled: &[Option<&RepeatSummary>],
    ) -> Result<Comparison, TooFewRuns> {
        if runs.len() < 2 {
            return Err(TooFewRuns(runs.len()));
        }
        let labels = labels_or_default(runs.iter().map(|(l, _)| l.clone()).collect());
        let infos: Vec<_> = runs.iter().map(|(_, r)| r.run.clone()).collect();
        let (differences, same) = Comparison::provenance_fields(&infos);
        let figures = class_metrics_in(View::Compare)
            .map(|m| {
                let (values, intervals) = runs
                    .iter()
                    .zip(pooled)
                    .map(|((_, r), rep)| match rep {
                        Some(rep) => pooled_figure(rep.class_group(), m.key),
                        None => ((m.read)(&r.summary), m.interval_of(&r.summary)),
                    })
                    .unzip();
                ComparedFigure::new(m.label, m.unit, m.better, values)
                    .shown_as(m.shown)
                    .with_intervals(intervals)
            })
            .collect();
        let overlay = |values: fn(&ClassroomReport) -> Vec<f64>| -> Vec<CdfCurve> {
            runs.iter()
                .zip(&labels)
                .map(|((_, r), label)| CdfCurve {
                    name: label.clone(),
                    values: values(r),
                })
                .collect()
        };
        let waiting: Vec<Series> = runs
            .iter()
            .zip(&labels)
            .map(|((_, r), label)| {
                let pts = r
                    .timeline
                    .iter()
                    .map(|p| (p.t_s / 60.0, p.waiting.unwrap_or(f64::NAN)))
                    .collect();
                Series::new(label.as_str(), pts)
            })
            .collect();
        let mut queue = LineChart::new(
            "Waiting requests over time",
            AxisTitle::new("Time since start", "min"),
            AxisTitle::new("Waiting requests", ""),
            waiting,
        );
        queue.markers = false;
        let mut charts = vec![
            Chart::Cdf(CdfChart {
                title: "Time to first token".to_string(),
                x: AxisTitle::new("TTFT", "s"),
                counted: "requests".to_string(),
                curves: overlay(|r| r.ttft_s.clone()),
            }),
            Chart::Cdf(CdfChart {
                title: "Time to complete a coding request".to_string(),
                x: AxisTitle::new("Coding-request time", "min"),
                counted: "coding requests".to_string(),
                curves: overlay(|r| minutes(&r.coding_request_s)),
            }),
            Chart::Cdf(CdfChart {
                title: "Output speed per user".to_string(),
                x: AxisTitle::new("Output speed", "tok/s"),
                counted: "users".to_string(),
                curves: overlay(|r| r.user_output_tok_per_s.clone()),
            }),
            Chart::Line(queue),
        ];
        if pooled.iter().any(Option::is_some) {
            charts.clear();
        }
        Ok(Comparison {
            pooled_runs: pooled_runs(pooled),
            kind: RunKind::Classroom,
            labels,
            runs: infos,
            differences,
            same,
            sections: vec![ComparisonSection {
                title: "Classroom figures".to_string(),
                figures,
            }],
            charts,
        })
    }
}

/// Every (shape, load) level of the runs (`c16`, `0.8/s`), in the order
/// first met.
fn level_keys(runs: &[(String, &BenchReport)]) -> Vec<(String, String)> {
    let mut keys: Vec<(String, String)> = Vec::new();
    for (_, r) in runs {
        for l in &r.levels {
            let key = (l.shape.clone(), l.load_label());
            if !keys.contains(&key) {
                keys.push(key);
            }
        }
    }
    keys
}

/// How many runs each column pooled (`None`: a single run).
fn pooled_runs(pooled: &[Option<&RepeatSummary>]) -> Vec<Option<usize>> {
    pooled
        .iter()
        .map(|p| p.map(|r| r.runs.iter().filter(|x| !x.interrupted).count()))
        .collect()
}

/// A figure as a repetition pooled it: the pooled value and its 95 %
/// interval; nothing when the group or the figure is not there.
fn pooled_figure(group: Option<&RepeatGroup>, key: &str) -> (Option<f64>, Option<Interval>) {
    group
        .and_then(|g| g.figures.iter().find(|f| f.key == key))
        .map_or((None, None), |f| (f.pooled, f.pooled_interval))
}

/// One level's figures across the runs; a pooled column's from its
/// repetition's group of the level.
fn level_section(
    runs: &[(String, &BenchReport)],
    pooled: &[Option<&RepeatSummary>],
    shape: &str,
    load: &str,
) -> ComparisonSection {
    let rows: Vec<Option<&LevelSummary>> = runs
        .iter()
        .map(|(_, r)| {
            r.levels
                .iter()
                .find(|l| l.shape == shape && l.load_label() == load)
        })
        .collect();
    let level = rows
        .iter()
        .flatten()
        .next()
        .map_or_else(String::new, |l| match &l.rate {
            Some(r) => format!(
                "{} requests/s",
                codendum_core::results::records::trim_rate(r.rate_per_s)
            ),
            None => format!("{} concurrent", l.concurrency),
        });
    ComparisonSection {
        title: format!("{} prompts, {level}", upper_first(shape)),
        figures: level_metrics_in(View::Compare)
            .filter(|m| m.shown_for(&rows.iter().flatten().copied().collect::<Vec<_>>()))
            .map(|m| {
                let (values, intervals) = rows
                    .iter()
                    .zip(pooled)
                    .map(|(row, rep)| match (row, rep) {
                        (Some(l), Some(rep)) => {
                            let run = rep.first_finished().map_or(0, |r| r.index);
                            pooled_figure(rep.group_of_level(run, l), m.key())
                        }
                        (Some(l), None) => (m.number(l), m.interval_of(l)),
                        (None, _) => (None, None),
                    })
                    .unzip();
                ComparedFigure::new(m.label, m.unit, m.better, values)
                    .shown_as(m.shown)
                    .with_intervals(intervals)
            })
            .collect(),
    }
}

/// Per shape, output tokens/s, TTFT P95 and E2E P95 over concurrency, one
/// series per run.
fn bench_charts(
    runs: &[(String, &BenchReport)],
    labels: &[String],
    keys: &[(String, String)],
) -> Vec<Chart> {
    let mut shapes: Vec<String> = Vec::new();
    for (shape, _) in keys {
        if !shapes.contains(shape) {
            shapes.push(shape.clone());
        }
    }
    let mut charts = Vec::new();
    for shape in &shapes {
        let overlay = |get: fn(&LevelSummary) -> Option<f64>| -> Vec<Series> {
            runs.iter()
                .zip(labels)
                .map(|((_, r), label)| {
                    Series::new(label.as_str(), by_concurrency(&r.levels, shape, get))
                })
                .collect()
        };
        charts.push(Chart::Line(LineChart::new(
            format!("Output tokens per second, {shape} prompts"),
            concurrency_axis(),
            AxisTitle::new("Output", "tok/s"),
            overlay(|l| Some(l.output_tok_per_s)),
        )));
        charts.push(Chart::Line(LineChart::new(
            format!("TTFT P95, {shape} prompts"),
            concurrency_axis(),
            AxisTitle::new("TTFT P95", "s"),
            overlay(|l| l.ttft_p95_s),
        )));
        charts.push(Chart::Line(LineChart::new(
            format!("E2E latency P95, {shape} prompts"),
            concurrency_axis(),
            AxisTitle::new("E2E P95", "s"),
            overlay(|l| l.e2e_p95_s),
        )));
    }
    charts
}
