//! [`REPLICA_METRICS`], the table the report draws its per-replica rows
//! from (the figures themselves are [`crate::server_figures::fleet`]'s).

use super::metrics::Unit;
use crate::server_figures::ReplicaFigures;

/// One per-replica figure: a column of the report's replica table.
#[derive(Debug, Clone, Copy)]
pub struct ReplicaMetric {
    /// The field name in `summary.json`.
    pub field: &'static str,
    /// The column heading for people.
    pub label: &'static str,
    /// The unit of [`ReplicaMetric::read`] (a fraction for [`Unit::Fraction`]).
    pub unit: Unit,
    /// How to read it.
    pub read: fn(&ReplicaFigures) -> Option<f64>,
}

/// Every per-replica figure, in the report's column order.
pub const REPLICA_METRICS: [ReplicaMetric; 8] = [
    ReplicaMetric {
        field: "requests_served",
        label: "Requests served",
        unit: Unit::Count,
        read: |r| r.requests_served,
    },
    ReplicaMetric {
        field: "peak_running",
        label: "Peak running",
        unit: Unit::Count,
        read: |r| r.peak_running,
    },
    ReplicaMetric {
        field: "peak_waiting",
        label: "Peak waiting",
        unit: Unit::Count,
        read: |r| r.peak_waiting,
    },
    ReplicaMetric {
        field: "peak_kv_usage",
        label: "Peak KV",
        unit: Unit::Fraction,
        read: |r| r.peak_kv_usage,
    },
    ReplicaMetric {
        field: "preemptions",
        label: "Preemptions",
        unit: Unit::Count,
        read: |r| r.preemptions,
    },
    ReplicaMetric {
        field: "prefix_hit_rate",
        label: "Prefix hit rate",
        unit: Unit::Fraction,
        read: |r| r.prefix_hit_rate,
    },
    ReplicaMetric {
        field: "prompt_tokens",
        label: "Prompt tokens",
        unit: Unit::Tokens,
        read: |r| r.prompt_tokens,
    },
    ReplicaMetric {
        field: "generation_tokens",
        label: "Output tokens",
        unit: Unit::Tokens,
        read: |r| r.generation_tokens,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_metric_reads_its_own_field() {
        let r = ReplicaFigures {
            replica: "x".into(),
            requests_served: Some(1.0),
            peak_running: Some(2.0),
            peak_waiting: Some(3.0),
            peak_kv_usage: Some(0.4),
            preemptions: Some(5.0),
            prefix_hit_rate: Some(0.6),
            prompt_tokens: Some(7.0),
            generation_tokens: Some(8.0),
            failed_samples: 0,
        };
        let json = serde_json::to_value(&r).unwrap();
        for m in REPLICA_METRICS {
            assert_eq!(json[m.field].as_f64(), (m.read)(&r), "{}", m.field);
        }
    }
}
