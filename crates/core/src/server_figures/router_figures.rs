//! The router in front of the replicas: what the vLLM Router's
//! own Prometheus page (`--router-metrics-url`) counted over a run
//! (`router` in `summary.json`), its table for people, and what it means
//! for a class whose 503s the router hid by retrying.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One worker (replica) as the router saw it over the run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerFigures {
    /// The worker's URL as the router names it (`http://127.0.0.1:18001`).
    pub worker: String,
    /// Requests the router sent it (every route: model calls and side calls
    /// such as `/tokenize`, `/version`, `/metrics`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub routed: Option<f64>,
    /// Its answers the router counted as failures (5xx, no connection),
    /// retried or not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<f64>,
    /// Routing decisions that chose it, by policy.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub decisions: BTreeMap<String, f64>,
    /// Whether the router held it healthy at the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub healthy: Option<bool>,
    /// Its circuit breaker at the end: `closed`, `open`, `half-open`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub circuit: Option<String>,
}

impl WorkerFigures {
    /// The worker's `host:port`, as the per-replica table names a replica.
    pub fn replica(&self) -> String {
        let rest = self
            .worker
            .split_once("://")
            .map_or(self.worker.as_str(), |(_, r)| r);
        rest.split('/').next().unwrap_or(rest).to_string()
    }
}

/// What the router did over a run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RouterFigures {
    /// Each worker, by URL.
    pub workers: Vec<WorkerFigures>,
    /// Requests the router received, every route.
    pub requests: f64,
    /// Of those, model calls (`/v1/chat/completions`, `/v1/completions`).
    pub model_calls: f64,
    /// Retries the router made (a worker's failure sent again, to it or another).
    pub retries: f64,
    /// Requests whose retries ran out: the client saw those fail.
    pub retries_exhausted: f64,
    /// Other error counters that moved, by family name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub errors: BTreeMap<String, f64>,
    /// Reads of the router's page the figures come from.
    pub reads: u32,
}

impl RouterFigures {
    /// Retries the client never saw as failures: every retry of a request
    /// that in the end succeeded (retries minus those that ran out).
    pub fn hidden_retries(&self) -> f64 {
        (self.retries - self.retries_exhausted).max(0.0)
    }

    /// The sentence a class report and stderr give when the router retried
    /// requests the client never saw fail; `None` when it retried none.
    /// `client_failures`: calls the client saw fail with a server error.
    pub fn retry_note(&self, client_failures: u64) -> Option<String> {
        if self.retries <= 0.0 {
            return None;
        }
        let failed_at_workers: f64 = self.workers.iter().filter_map(|w| w.failures).sum();
        Some(format!(
            "the router retried {} requests after {} worker failures; the client saw {} fail \
             ({} ran out of retries): the rest reached it as successes, so a client's back-off \
             on 503 (OpenCode's) never happened for them",
            self.retries, failed_at_workers, client_failures, self.retries_exhausted
        ))
    }
}

/// The Router table for stderr: routed, failures, health per worker, then
/// the retries.
pub fn router_table(r: &RouterFigures) -> String {
    let mut out = String::from("Router (from its own metrics):\n");
    out.push_str(&format!(
        "{:<28} {:>8} {:>9} {:>8} {:>9}\n",
        "worker", "routed", "failures", "healthy", "circuit"
    ));
    let show = |v: Option<f64>| v.map_or("–".to_string(), |v| format!("{v:.0}"));
    for w in &r.workers {
        out.push_str(&format!(
            "{:<28} {:>8} {:>9} {:>8} {:>9}\n",
            w.worker,
            show(w.routed),
            show(w.failures),
            w.healthy.map_or("–", |h| if h { "yes" } else { "no" }),
            w.circuit.as_deref().unwrap_or("–")
        ));
    }
    out.push_str(&format!(
        "requests {:.0} ({:.0} model calls), retried {:.0}, retries ran out {:.0}\n",
        r.requests, r.model_calls, r.retries, r.retries_exhausted
    ));
    for (family, n) in &r.errors {
        out.push_str(&format!("{family} {n:.0}\n"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_is_named_as_its_replica() {
        let w = WorkerFigures {
            worker: "http://127.0.0.1:18001".into(),
            ..Default::default()
        };
        assert_eq!(w.replica(), "127.0.0.1:18001");
    }

    #[test]
    fn retries_the_client_never_saw_are_said() {
        let r = RouterFigures {
            workers: vec![WorkerFigures {
                worker: "http://b:2".into(),
                failures: Some(6.0),
                ..Default::default()
            }],
            retries: 6.0,
            retries_exhausted: 1.0,
            ..Default::default()
        };
        assert_eq!(r.hidden_retries(), 5.0);
        let note = r.retry_note(1).expect("a note");
        assert!(
            note.contains("retried 6 requests after 6 worker failures"),
            "{note}"
        );
        assert!(note.contains("the client saw 1 fail"), "{note}");
        assert!(RouterFigures::default().retry_note(0).is_none());
    }
}
