//! Building a [`Comparison`] from benchmark or classroom reports.

use super::charts::{by_concurrency, concurrency_axis, minutes};
use super::compare::{
    labels_or_default, Combine, ComparedFigure, Comparison, ComparisonSection, RepeatColumn,
    RunKind, TooFewRuns,
};
use super::compare_levels::{level_sections, shapes_of};
use super::model::{BenchReport, ClassroomReport};
use super::svg::{AxisTitle, CdfChart, CdfCurve, Chart, LineChart, Series};
use codendum_core::results::metrics::{class_metrics_in, View};
use codendum_core::results::LevelSummary;

impl Comparison {
    /// Compares benchmark runs level by level. `runs` pairs a label (empty:
    /// `Run N`) with a report; the first run is the baseline.
    pub fn of_bench(runs: &[(String, &BenchReport)]) -> Result<Comparison, TooFewRuns> {
        Comparison::of_bench_pooled(runs, &vec![None; runs.len()])
    }

    /// [`Comparison::of_bench`] where some runs stand for a repetition
    /// (`pooled[i]`: the repetition, `runs[i]`: its first finished run's
    /// report): their column shows the figures pooled over every run of
    /// the repetition with the pooled 95 % intervals, counts summed over
    /// the runs and peaks the largest of them; a figure the repetition did
    /// not pool is left empty. Charts are left out when a column is pooled
    /// (they would show one run of it). Rate levels pair with the
    /// baseline's by their place in a sweep or by nearest rate (see
    /// [`crate::compare_pairs`]).
    pub fn of_bench_pooled(
        runs: &[(String, &BenchReport)],
        pooled: &[Option<&RepeatColumn<'_>>],
    ) -> Result<Comparison, TooFewRuns> {
        if runs.len() < 2 {
            return Err(TooFewRuns(runs.len()));
        }
        let labels = labels_or_default(runs.iter().map(|(l, _)| l.clone()).collect());
        let infos: Vec<_> = runs.iter().map(|(_, r)| r.run.clone()).collect();
        let (differences, same) = Comparison::provenance_fields(&infos);
        let (sections, pairings) = level_sections(runs, &labels, pooled);
        let charts = if pooled.iter().any(Option::is_some) {
            Vec::new()
        } else {
            bench_charts(runs, &labels, &shapes_of(runs))
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
            pairings,
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
        pooled: &[Option<&RepeatColumn<'_>>],
    ) -> Result<Comparison, TooFewRuns> {
        if runs.len() < 2 {
            return Err(TooFewRuns(runs.len()));
        }
        let labels = labels_or_default(runs.iter().map(|(l, _)| l.clone()).collect());
        let infos: Vec<_> = runs.iter().map(|(_, r)| r.run.clone()).collect();
        let (differences, same) = Comparison::provenance_fields(&infos);
        let figures = class_metrics_in(View::Compare)
            .map(|m| {
                let combine = Combine::of(m.key, m.unit, m.interval.is_some());
                let mut combined = Vec::new();
                let (values, intervals) = runs
                    .iter()
                    .zip(pooled)
                    .map(|((_, r), rep)| match (rep, combine) {
                        (Some(rep), Some(how)) => {
                            let each = rep.runs_classes(m.read);
                            combined.push(each.len());
                            (how.apply(&each), None)
                        }
                        (Some(rep), None) => {
                            combined.push(1);
                            rep.pooled_class_figure(m.key)
                        }
                        (None, _) => {
                            combined.push(1);
                            ((m.read)(&r.summary), m.interval_of(&r.summary))
                        }
                    })
                    .unzip();
                ComparedFigure::new(m.label, m.unit, m.better, values)
                    .shown_as(m.shown)
                    .with_intervals(intervals)
                    .combining(combine, pooled.iter().any(Option::is_some), combined)
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
                note: None,
            }],
            charts,
            pairings: Vec::new(),
        })
    }
}

/// How many runs each column pooled (`None`: a single run).
fn pooled_runs(pooled: &[Option<&RepeatColumn<'_>>]) -> Vec<Option<usize>> {
    pooled
        .iter()
        .map(|p| p.map(RepeatColumn::finished_runs))
        .collect()
}

/// Per shape, output tokens/s, TTFT P95 and E2E P95 over concurrency, one
/// series per run.
fn bench_charts(
    runs: &[(String, &BenchReport)],
    labels: &[String],
    shapes: &[String],
) -> Vec<Chart> {
    let mut charts = Vec::new();
    for shape in shapes {
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
