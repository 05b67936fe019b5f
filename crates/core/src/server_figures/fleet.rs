//! The figures of each replica of a fleet (one `/metrics` URL or one
//! Prometheus instance per replica) over a window: [`ReplicaFigures`], and
//! the fleet's [`FleetFigures`] with its [`imbalance`].

use serde::{Deserialize, Serialize};

/// Where per-replica figures were read: each replica's `/metrics`
/// directly, or its series in Prometheus.
pub const SOURCE_SCRAPE: &str = "scrape";
/// See [`SOURCE_SCRAPE`].
pub const SOURCE_PROMETHEUS: &str = "prometheus";

/// One replica's figures over a window (a bench level, a class).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplicaFigures {
    /// The replica: `host:port` of its `/metrics` URL (with the path when it
    /// is not `/metrics`), or its Prometheus `instance` label.
    pub replica: String,
    /// Requests the replica finished in the window (increase of
    /// `vllm:request_success_total`, all reasons).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_served: Option<f64>,
    /// Highest running-request count sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_running: Option<f64>,
    /// Highest waiting-request count sampled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_waiting: Option<f64>,
    /// Highest KV-cache usage sampled, FRACTION 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peak_kv_usage: Option<f64>,
    /// Preemptions in the window (counter increase).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<f64>,
    /// Prefix-cache hit rate over the window, FRACTION 0..1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_hit_rate: Option<f64>,
    /// Prompt tokens the replica processed in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<f64>,
    /// Tokens the replica generated in the window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tokens: Option<f64>,
    /// Samples of this replica that failed (scrape or Prometheus step
    /// without data) in the window.
    #[serde(default)]
    pub failed_samples: u64,
}

/// The replicas of a fleet side by side over one window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FleetFigures {
    /// [`SOURCE_SCRAPE`] or [`SOURCE_PROMETHEUS`].
    pub source: String,
    /// One entry per replica, in the order of `--metrics-url` (Prometheus:
    /// by instance).
    pub replicas: Vec<ReplicaFigures>,
    /// Max over mean of requests served per replica (1 = even; N replicas
    /// with all the load on one = N); absent when no replica served any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub imbalance: Option<f64>,
}

/// Max over mean of `served` (requests per replica): 1.0 for an even
/// fleet, `len` when one replica served everything. `None` for no replica
/// or no request served.
pub fn imbalance(served: &[f64]) -> Option<f64> {
    if served.is_empty() || served.iter().any(|s| !s.is_finite() || *s < 0.0) {
        return None;
    }
    let mean = served.iter().sum::<f64>() / served.len() as f64;
    let max = served.iter().copied().fold(0.0, f64::max);
    (mean > 0.0).then(|| max / mean)
}

impl FleetFigures {
    /// The fleet of `replicas` read from `source`, with its imbalance over
    /// the replicas' requests served (absent when any replica lacks the count).
    pub fn new(source: &str, replicas: Vec<ReplicaFigures>) -> Self {
        let served: Option<Vec<f64>> = replicas.iter().map(|r| r.requests_served).collect();
        FleetFigures {
            source: source.to_string(),
            imbalance: served.as_deref().and_then(imbalance),
            replicas,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn served(replica: &str, n: Option<f64>) -> ReplicaFigures {
        ReplicaFigures {
            replica: replica.into(),
            requests_served: n,
            ..ReplicaFigures::default()
        }
    }

    #[test]
    fn imbalance_is_max_over_mean() {
        assert_eq!(imbalance(&[10.0, 10.0]), Some(1.0));
        assert_eq!(imbalance(&[30.0, 10.0]), Some(1.5));
        assert_eq!(imbalance(&[12.0, 0.0, 0.0]), Some(3.0));
        assert_eq!(imbalance(&[0.0, 0.0]), None);
        assert_eq!(imbalance(&[]), None);
        assert_eq!(imbalance(&[f64::NAN, 1.0]), None);
    }

    #[test]
    fn a_fleet_without_every_count_has_no_imbalance() {
        let f = FleetFigures::new(
            SOURCE_SCRAPE,
            vec![served("a", Some(6.0)), served("b", Some(2.0))],
        );
        assert_eq!(f.imbalance, Some(1.5));
        let f = FleetFigures::new(
            SOURCE_PROMETHEUS,
            vec![served("a", Some(6.0)), served("b", None)],
        );
        assert_eq!(f.imbalance, None);
        assert_eq!(f.source, "prometheus");
    }
}
