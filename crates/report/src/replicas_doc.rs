//! A fleet's replicas in a report: one table row per replica and window
//! (columns from [`codendum_core::results::REPLICA_METRICS`]), the imbalance of
//! each window, and the server timeline drawn with one line per replica.

use super::doc::Doc;
use super::format::{fixed, opt_fixed, opt_percent, MISSING};
use super::model::{FleetWindow, ReplicaLine};
use super::svg::{AxisTitle, Chart, LineChart, Series};
use codendum_core::results::metrics::Unit;
use codendum_core::results::REPLICA_METRICS;

fn cell(unit: Unit, v: Option<f64>) -> String {
    match unit {
        Unit::Fraction => opt_percent(v),
        _ => opt_fixed(v, 0),
    }
}

/// The "Replicas" section: a table of every window's replicas, where the
/// figures came from, and the imbalance. Nothing for one server.
pub(crate) fn push_fleet(doc: &mut Doc, windows: &[FleetWindow]) {
    if windows.is_empty() {
        return;
    }
    doc.heading("Replicas");
    let source = &windows[0].fleet.source;
    doc.paragraph(format!(
        "Each replica's figures, read from {}: requests served (finished), peaks of running and \
         waiting requests and of KV-cache usage, preemptions and prefix-cache hit rate. \
         Imbalance is the most requests served by one replica over the mean per replica \
         (1.00 = even).",
        match source.as_str() {
            "prometheus" => "Prometheus (a range query over the run, one step per second)",
            _ => "each replica's /metrics (sampled every second)",
        }
    ));
    let mut header: Vec<String> = vec!["Window".into(), "Replica".into()];
    header.extend(REPLICA_METRICS.iter().map(|m| match m.unit {
        Unit::Fraction => format!("{} (%)", m.label),
        _ => m.label.to_string(),
    }));
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    let mut rows = Vec::new();
    for w in windows {
        for r in &w.fleet.replicas {
            let mut row = vec![w.label.clone(), r.replica.clone()];
            row.extend(REPLICA_METRICS.iter().map(|m| cell(m.unit, (m.read)(r))));
            rows.push(row);
        }
    }
    doc.table(&header, rows, 2);
    let imbalance: Vec<String> = windows
        .iter()
        .map(|w| {
            let v = w
                .fleet
                .imbalance
                .map_or(MISSING.to_string(), |x| fixed(x, 2));
            format!("{} {v}", w.label)
        })
        .collect();
    doc.paragraph(format!("Imbalance: {}.", imbalance.join(", ")));
}

/// The "Router" section: what the router in front of the replicas counted
/// (its own metrics), per worker, and its retries; for a class
/// (`client_failures`: the calls the client saw fail with a server error),
/// the retries the students never saw. Nothing without router figures.
pub(crate) fn push_router(
    doc: &mut Doc,
    router: Option<&codendum_core::server_figures::router_figures::RouterFigures>,
    client_failures: Option<u64>,
) {
    let Some(r) = router else {
        return;
    };
    doc.heading("Router");
    doc.paragraph(
        "What the router in front of the replicas counted over the run, from its own metrics: \
         requests it sent each worker (side calls such as /tokenize and /metrics included), the \
         worker's answers it counted as failures, and its health and circuit breaker at the end.",
    );
    let rows = r
        .workers
        .iter()
        .map(|w| {
            vec![
                w.worker.clone(),
                opt_fixed(w.routed, 0),
                opt_fixed(w.failures, 0),
                w.healthy
                    .map_or(MISSING.to_string(), |h| if h { "yes" } else { "no" }.into()),
                w.circuit.clone().unwrap_or_else(|| MISSING.to_string()),
            ]
        })
        .collect();
    doc.table(
        &["Worker", "Routed", "Failures", "Healthy", "Circuit"],
        rows,
        1,
    );
    doc.paragraph(format!(
        "Requests {} ({} model calls); retried {}; retries ran out {}.",
        fixed(r.requests, 0),
        fixed(r.model_calls, 0),
        fixed(r.retries, 0),
        fixed(r.retries_exhausted, 0)
    ));
    if let Some(note) = client_failures.and_then(|n| r.retry_note(n)) {
        doc.paragraph(super::format::upper_first(&note) + ".");
    }
}

/// The server timeline per replica: running requests (one line each) and
/// KV-cache usage in percent (one line each). None for one server.
pub(crate) fn replica_charts(lines: &[ReplicaLine]) -> Vec<Chart> {
    if lines.len() < 2 {
        return Vec::new();
    }
    let series = |pick: fn(&super::model::TimelinePoint) -> Option<f64>| -> Vec<Series> {
        lines
            .iter()
            .map(|l| {
                let points = l
                    .points
                    .iter()
                    .map(|p| (p.t_s, pick(p).unwrap_or(f64::NAN)))
                    .collect();
                Series::new(l.replica.as_str(), points)
            })
            .collect()
    };
    let time = AxisTitle::new("Time since start", "s");
    let mut running = LineChart::new(
        "Running requests per replica",
        time.clone(),
        AxisTitle::new("Running", "requests"),
        series(|p| p.running),
    );
    running.markers = false;
    let mut kv = LineChart::new(
        "KV-cache usage per replica",
        time,
        AxisTitle::new("KV cache", "%"),
        series(|p| p.kv_usage.map(|f| f * 100.0)),
    );
    kv.markers = false;
    vec![Chart::Line(running), Chart::Line(kv)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TimelinePoint;
    use codendum_core::server_figures::FleetFigures;
    use codendum_core::server_figures::ReplicaFigures;

    fn line(name: &str, running: &[f64]) -> ReplicaLine {
        ReplicaLine {
            replica: name.into(),
            points: running
                .iter()
                .enumerate()
                .map(|(i, r)| TimelinePoint {
                    t_s: i as f64,
                    running: Some(*r),
                    waiting: Some(0.0),
                    kv_usage: Some(r / 10.0),
                })
                .collect(),
        }
    }

    #[test]
    fn one_line_per_replica_in_both_charts() {
        let charts =
            replica_charts(&[line("a:1", &[0.0, 2.0, 1.0]), line("b:2", &[1.0, 1.0, 3.0])]);
        assert_eq!(charts.len(), 2);
        for chart in &charts {
            let Chart::Line(c) = chart else {
                panic!("a line chart")
            };
            let names: Vec<&str> = c.series.iter().map(|s| s.name.as_str()).collect();
            assert_eq!(names, ["a:1", "b:2"]);
            assert!(!c.markers);
            let svg = chart.render();
            assert!(svg.contains("a:1") && svg.contains("b:2"));
            assert!(svg.matches("<path").count() >= 2, "{svg}");
        }
        let Chart::Line(kv) = &charts[1] else {
            unreachable!()
        };
        assert_eq!(kv.series[1].points[2], (2.0, 30.0));
        assert!(replica_charts(&[line("a:1", &[1.0])]).is_empty());
    }

    #[test]
    fn the_table_has_a_row_per_replica_and_the_imbalance() {
        let r = |name: &str, served: f64| ReplicaFigures {
            replica: name.into(),
            requests_served: Some(served),
            prefix_hit_rate: Some(0.5),
            ..ReplicaFigures::default()
        };
        let windows = [FleetWindow {
            label: "short c4".into(),
            fleet: FleetFigures::new("prometheus", vec![r("a:1", 6.0), r("b:2", 2.0)]),
        }];
        let mut doc = Doc::new("t".into());
        push_fleet(&mut doc, &windows);
        let text = format!("{:?}", doc.blocks);
        assert!(text.contains("Prometheus"), "{text}");
        assert!(
            text.contains("Prefix hit rate (%)") && text.contains("50.0"),
            "{text}"
        );
        assert!(text.contains("Imbalance: short c4 1.50."), "{text}");
        let mut empty = Doc::new("t".into());
        push_fleet(&mut empty, &[]);
        assert_eq!(empty.blocks.len(), 1);
    }
}
