//! Which charts each report shows, built from the report models.

use super::model::{BenchReport, ClassroomReport};
use super::svg::{
    AxisTitle, CdfChart, CdfCurve, Chart, HistogramChart, LineChart, Series, TimelineChart,
    TimelineMarker,
};
use codendum_core::results::LevelSummary;
use codendum_core::results::Verdict as RunVerdict;

/// Reads one figure of a level.
type LevelGetter = fn(&LevelSummary) -> Option<f64>;

/// The x axis of every chart against concurrency.
pub(crate) fn concurrency_axis() -> AxisTitle {
    AxisTitle::new("Concurrency", "requests in flight")
}

/// The points (concurrency, figure) of one shape's closed-loop levels.
pub(crate) fn by_concurrency(
    levels: &[LevelSummary],
    shape: &str,
    figure: impl Fn(&LevelSummary) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = levels
        .iter()
        .filter(|l| l.shape == shape && l.rate.is_none())
        .map(|l| (f64::from(l.concurrency), figure(l).unwrap_or(f64::NAN)))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// The points (offered rate, figure) of one shape's rate levels.
pub(crate) fn by_rate(
    levels: &[LevelSummary],
    shape: &str,
    figure: impl Fn(&LevelSummary) -> Option<f64>,
) -> Vec<(f64, f64)> {
    let mut points: Vec<(f64, f64)> = levels
        .iter()
        .filter(|l| l.shape == shape)
        .filter_map(|l| Some((l.rate.as_ref()?.rate_per_s, figure(l).unwrap_or(f64::NAN))))
        .collect();
    points.sort_by(|a, b| a.0.total_cmp(&b.0));
    points
}

/// Latency against the offered rate, a series per shape and figure (a
/// sweep's or the rate levels' chart); `None` without rate levels.
fn latency_by_rate(r: &BenchReport, shapes: &[String]) -> Option<Chart> {
    if r.levels.iter().all(|l| l.rate.is_none()) {
        return None;
    }
    let mut series = Vec::new();
    for shape in shapes {
        let figures: [(&str, LevelGetter); 3] = [
            ("TTFT P50", |l| l.ttft_p50_s),
            ("TTFT P95", |l| l.ttft_p95_s),
            ("E2E P50", |l| l.e2e_p50_s),
        ];
        for (name, get) in figures {
            let points = by_rate(&r.levels, shape, get);
            if !points.is_empty() {
                series.push(Series::new(format!("{shape} {name}"), points));
            }
        }
    }
    Some(Chart::Line(LineChart::new(
        "Latency against the offered rate",
        AxisTitle::new("Offered rate", "requests/s"),
        AxisTitle::new("Latency from the scheduled start", "s"),
        series,
    )))
}

/// Charts of a benchmark: output tok/s against concurrency (a series per
/// shape), TTFT P50/P95/P99 per shape, E2E P50/P95, and the server timeline.
pub fn bench_charts(r: &BenchReport) -> Vec<Chart> {
    let shapes = r.shapes();
    let mut charts = Vec::new();
    let out = shapes
        .iter()
        .map(|s| {
            Series::new(
                s.as_str(),
                by_concurrency(&r.levels, s, |l| Some(l.output_tok_per_s)),
            )
        })
        .collect();
    charts.push(Chart::Line(LineChart::new(
        "Output tokens per second against concurrency",
        concurrency_axis(),
        AxisTitle::new("Output", "tok/s"),
        out,
    )));
    for shape in &shapes {
        let figures: [(&str, LevelGetter); 3] = [
            ("P50", |l| l.ttft_p50_s),
            ("P95", |l| l.ttft_p95_s),
            ("P99", |l| l.ttft_p99_s),
        ];
        let series = figures
            .iter()
            .map(|(name, f)| Series::new(*name, by_concurrency(&r.levels, shape, f)))
            .collect();
        charts.push(Chart::Line(LineChart::new(
            format!("Time to first token, {shape} prompts"),
            concurrency_axis(),
            AxisTitle::new("TTFT", "s"),
            series,
        )));
    }
    let mut e2e = Vec::new();
    for shape in &shapes {
        e2e.push(Series::new(
            format!("{shape} P50"),
            by_concurrency(&r.levels, shape, |l| l.e2e_p50_s),
        ));
        e2e.push(Series::new(
            format!("{shape} P95"),
            by_concurrency(&r.levels, shape, |l| l.e2e_p95_s),
        ));
    }
    charts.push(Chart::Line(LineChart::new(
        "End-to-end latency against concurrency",
        concurrency_axis(),
        AxisTitle::new("E2E latency", "s"),
        e2e,
    )));
    charts.extend(latency_by_rate(r, &shapes));
    // Outages are on the records' axis (seconds since the run started),
    // the timeline starts with the first level: shift them as the level
    // boundaries are shifted.
    let t0 = r.levels.first().map_or(0.0, |l| l.started_at_s);
    charts.push(Chart::Timeline(TimelineChart {
        title: "Server timeline".to_string(),
        samples: r.timeline.clone(),
        shaded: outage_spans(r.run_verdict.as_ref(), t0),
        markers: r
            .boundaries
            .iter()
            .map(|b| TimelineMarker {
                t_s: b.t_s,
                label: b.label.clone(),
            })
            .collect(),
    }));
    charts
}

/// Charts of a classroom run: TTFT distribution, output speed per user,
/// coding-request time as a cumulative curve, and the queue over time. A
/// chart with nothing to draw is left out (sessions imported from a store
/// that keeps no first-token time have no TTFT; a class without `/metrics`
/// no queue); the report's sentences say what is missing.
pub fn classroom_charts(r: &ClassroomReport) -> Vec<Chart> {
    let charts = vec![
        Chart::Histogram(HistogramChart {
            title: "Time to first token".to_string(),
            x: AxisTitle::new("TTFT", "s"),
            counted: "Requests".to_string(),
            values: r.ttft_s.clone(),
        }),
        Chart::Histogram(HistogramChart {
            title: "Output speed per user".to_string(),
            x: AxisTitle::new("Output speed", "tok/s"),
            counted: "Users".to_string(),
            values: r.user_output_tok_per_s.clone(),
        }),
        Chart::Cdf(CdfChart {
            title: "Time to complete a coding request".to_string(),
            x: AxisTitle::new("Coding-request time", "min"),
            counted: "coding requests".to_string(),
            curves: vec![CdfCurve {
                name: "coding requests".to_string(),
                values: minutes(&r.coding_request_s),
            }],
        }),
        Chart::Timeline(TimelineChart {
            title: "Server queue over time".to_string(),
            samples: r.timeline.clone(),
            shaded: outage_spans(r.run_verdict.as_ref(), 0.0),
            markers: Vec::new(),
        }),
    ];
    charts
        .into_iter()
        .filter(|c| match c {
            Chart::Histogram(h) => !h.values.is_empty(),
            Chart::Cdf(c) => c.curves.iter().any(|k| !k.values.is_empty()),
            Chart::Timeline(t) => !t.samples.is_empty(),
            _ => true,
        })
        .collect()
}

/// The outages of a run as shaded spans, shifted by `t0` seconds.
fn outage_spans(verdict: Option<&RunVerdict>, t0: f64) -> Vec<(f64, Option<f64>)> {
    verdict
        .map(|v| {
            v.outages
                .iter()
                .map(|o| (o.start_s - t0, o.end_s.map(|e| e - t0)))
                .collect()
        })
        .unwrap_or_default()
}

/// Seconds to minutes.
pub(crate) fn minutes(seconds: &[f64]) -> Vec<f64> {
    seconds.iter().map(|s| s / 60.0).collect()
}
