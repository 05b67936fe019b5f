//! The per-replica table `bench` and `classroom` print on stderr at the end
//! of a run against a fleet: each window's fleet row and one row per
//! replica, then the imbalance; and the per-replica readings of one
//! `codendum metrics` sample.

use super::render::{format_count, format_percent};
use codendum_core::prom::replicas::ReplicaSample;
use codendum_core::server_figures::FleetFigures;

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

/// One sample's replicas (`codendum metrics` against a fleet): gauges now
/// and counters since each replica started, a row per replica, and the
/// imbalance of the requests each has finished. Empty for a single server.
pub fn render_replica_readings(replicas: &[ReplicaSample]) -> String {
    if replicas.is_empty() {
        return String::new();
    }
    let w = replicas
        .iter()
        .map(|r| r.replica.len())
        .max()
        .unwrap_or(0)
        .max(7);
    let mut out = format!(
        "\n{:<w$} {:>5} {:>5} {:>8} {:>8} {:>8} {:>10} {:>12}\n",
        "replica", "run", "wait", "kv", "preempt", "hit", "finished", "generated"
    );
    let mut finished = Vec::new();
    for r in replicas {
        let Some(s) = &r.sample.snapshot else {
            // No count for this replica: no imbalance either.
            finished.push(None);
            let why = r.sample.error.as_deref().unwrap_or("no reading");
            out.push_str(&format!("{:<w$} {why}\n", r.replica));
            continue;
        };
        finished.push(s.finished_total());
        out.push_str(&format!(
            "{:<w$} {:>5} {:>5} {:>8} {:>8} {:>8} {:>10} {:>12}\n",
            r.replica,
            format_count(s.running),
            format_count(s.waiting),
            format_percent(s.kv_usage),
            format_count(s.preemptions),
            format_percent(s.prefix_hit_rate()),
            format_count(s.finished_total()),
            format_count(s.generation_tokens),
        ));
    }
    let served: Option<Vec<f64>> = finished.into_iter().collect();
    if let Some(x) = served
        .as_deref()
        .and_then(codendum_core::server_figures::imbalance)
    {
        out.push_str(&format!(
            "imbalance (max over mean of requests finished): {x:.2}\n"
        ));
    }
    out
}

/// One replica's gauges in a `--watch` line (indented under the fleet's).
pub fn render_replica_watch(replica: &ReplicaSample) -> String {
    match &replica.sample.snapshot {
        Some(s) => format!(
            "{}  running {}  waiting {}  KV {}",
            replica.replica,
            format_count(s.running),
            format_count(s.waiting),
            format_percent(s.kv_usage),
        ),
        None => format!(
            "{}  {}",
            replica.replica,
            replica.sample.error.as_deref().unwrap_or("no reading")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use codendum_core::server_figures::ReplicaFigures;

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

    #[test]
    fn a_sample_has_a_row_per_replica_and_a_failed_one_says_why() {
        use codendum_core::prom::{ServerSnapshot, TimelineSample};
        let at =
            |replica: &str, snapshot: Option<ServerSnapshot>, error: Option<&str>| ReplicaSample {
                replica: replica.into(),
                sample: TimelineSample {
                    utc: chrono::DateTime::from_timestamp(0, 0).expect("epoch"),
                    t: 0.0,
                    snapshot,
                    error: error.map(str::to_string),
                },
            };
        let mut busy = ServerSnapshot::from_text(
            "vllm:num_requests_running 3\nvllm:request_success_total{finished_reason=\"stop\"} 9\n",
        )
        .expect("page");
        busy.kv_usage = Some(0.5);
        let idle = ServerSnapshot::from_text(
            "vllm:num_requests_running 0\nvllm:request_success_total{finished_reason=\"stop\"} 3\n",
        )
        .expect("page");
        let both = [
            at("a:1", Some(busy.clone()), None),
            at("b:2", Some(idle), None),
        ];
        let table = render_replica_readings(&both);
        let lines: Vec<&str> = table.lines().collect();
        assert!(lines[1].starts_with("replica"), "{table}");
        assert!(
            lines[2].starts_with("a:1") && lines[2].contains("50.0 %"),
            "{table}"
        );
        assert!(lines[3].starts_with("b:2"), "{table}");
        assert_eq!(
            lines[4],
            "imbalance (max over mean of requests finished): 1.50"
        );
        let failed = [
            at("a:1", Some(busy), None),
            at("b:2", None, Some("connection refused")),
        ];
        let table = render_replica_readings(&failed);
        assert!(table.contains("b:2     connection refused"), "{table}");
        assert!(!table.contains("imbalance"), "{table}");
        assert_eq!(render_replica_readings(&[]), "");
    }
}
