//! The per-replica table `bench` and `classroom` print on stderr at the end
//! of a run against a fleet: each window's fleet row and one row per
//! replica, then the imbalance.

use super::render::{format_count, format_percent};
use crate::results::FleetFigures;

/// One window of the table: its label (`short c8`, `class`), the fleet's
/// own figures (peak running, peak waiting, peak KV fraction, preemptions,
/// prefix hit rate fraction) and its replicas.
#[derive(Debug, Clone)]
pub struct FleetRow<'a> {
    /// `short c8`, `class`.
    pub label: String,
    /// The fleet's figures over the window, in the order of the columns.
    pub fleet: [Option<f64>; 5],
    /// Requests the fleet finished in the window (the sum of the replicas').
    pub served: Option<f64>,
    /// The replicas.
    pub replicas: &'a FleetFigures,
}

/// The table: `window replica served run wait kv% preempt hit%`, a fleet
/// row first in each window, and the imbalance per window below.
pub fn render_fleet_table(rows: &[FleetRow<'_>]) -> String {
    let Some(first) = rows.first() else {
        return String::new();
    };
    let mut out = format!(
        "Replicas (server figures from {}):\n{:<12} {:<24} {:>7} {:>5} {:>5} {:>8} {:>8} {:>8}\n",
        first.replicas.source, "window", "replica", "served", "run", "wait", "kv", "preempt", "hit"
    );
    let mut line = |label: &str, name: &str, served: Option<f64>, f: [Option<f64>; 5]| {
        out.push_str(&format!(
            "{label:<12} {name:<24} {:>7} {:>5} {:>5} {:>8} {:>8} {:>8}\n",
            format_count(served),
            format_count(f[0]),
            format_count(f[1]),
            format_percent(f[2]),
            format_count(f[3]),
            format_percent(f[4]),
        ));
    };
    for row in rows {
        line(&row.label, "fleet", row.served, row.fleet);
        for r in &row.replicas.replicas {
            let figures = [
                r.peak_running,
                r.peak_waiting,
                r.peak_kv_usage,
                r.preemptions,
                r.prefix_hit_rate,
            ];
            line("", &r.replica, r.requests_served, figures);
        }
    }
    let imbalance: Vec<String> = rows
        .iter()
        .map(|r| match r.replicas.imbalance {
            Some(x) => format!("{} {x:.2}", r.label),
            None => format!("{} n/a", r.label),
        })
        .collect();
    out.push_str(&format!(
        "Imbalance (max over mean of requests served): {}\n",
        imbalance.join(", ")
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::ReplicaFigures;

    #[test]
    fn a_fleet_row_then_one_row_per_replica_and_the_imbalance() {
        let replica = |name: &str, served: f64| ReplicaFigures {
            replica: name.into(),
            requests_served: Some(served),
            peak_running: Some(served / 2.0),
            ..ReplicaFigures::default()
        };
        let fleet = FleetFigures::new("prometheus", vec![replica("a:1", 6.0), replica("b:2", 2.0)]);
        let rows = [FleetRow {
            label: "short c4".into(),
            fleet: [Some(4.0), Some(0.0), Some(0.25), Some(0.0), None],
            served: Some(8.0),
            replicas: &fleet,
        }];
        let table = render_fleet_table(&rows);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[0].contains("prometheus"), "{table}");
        assert!(
            lines[2].starts_with("short c4") && lines[2].contains("fleet"),
            "{table}"
        );
        assert!(
            lines[2].contains("25.0 %") && lines[2].contains("n/a"),
            "{table}"
        );
        assert!(
            lines[3].contains("a:1") && lines[4].contains("b:2"),
            "{table}"
        );
        assert!(lines[5].ends_with("short c4 1.50"), "{table}");
    }
}
