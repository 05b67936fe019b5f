//! The vLLM Router's own Prometheus page (`vllm_router_*`, on its
//! `--prometheus-port`), as data: what one read says ([`RouterSnapshot`])
//! and what the router did between two reads ([`RouterFigures`]). Plain
//! functions, no I/O.
//!
//! Families read (names as vllm-router 0.1.17 exports them):
//! `vllm_router_processed_requests_total{worker}` (requests sent to each
//! worker, side calls such as `/tokenize` and `/metrics` included),
//! `vllm_router_policy_decisions_total{policy,worker}`,
//! `vllm_router_cb_outcomes_total{worker,outcome}` (a worker's answers as
//! its circuit breaker counts them: `success`, `failure`),
//! `vllm_router_worker_health{worker}` (1 healthy), `vllm_router_cb_state{worker}`
//! (0 closed, 1 open, 2 half-open), `vllm_router_requests_total{route}`,
//! `vllm_router_retries_total{route}`, `vllm_router_retries_exhausted_total{route}`,
//! and every other `vllm_router_*error*_total` counter (request errors),
//! summed per family.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::parse::{parse, Exposition, ParseError};
use super::window::counter_increase;
use crate::server_figures::router_figures::{RouterFigures, WorkerFigures};

/// One worker as one read of the router's page shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerReading {
    /// Requests the router sent it since the router started.
    pub processed: Option<f64>,
    /// Routing decisions that chose it, by policy, since the router started.
    pub decisions: BTreeMap<String, f64>,
    /// Answers its circuit breaker counted as failures (5xx, no connection).
    pub failures: Option<f64>,
    /// Answers counted as successes.
    pub successes: Option<f64>,
    /// 1 when the router holds it healthy, 0 when not.
    pub health: Option<f64>,
    /// Its circuit breaker: 0 closed, 1 open, 2 half-open.
    pub circuit: Option<f64>,
}

/// One read of the router's page.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RouterSnapshot {
    /// Each worker, by its URL as the router names it.
    pub workers: BTreeMap<String, WorkerReading>,
    /// Requests the router received, by route (`/v1/chat/completions`, `/metrics`, …).
    pub requests_by_route: BTreeMap<String, f64>,
    /// Retries the router made, by route.
    pub retries_by_route: BTreeMap<String, f64>,
    /// Requests whose retries ran out (the client saw the error), by route.
    pub retries_exhausted_by_route: BTreeMap<String, f64>,
    /// Other error counters (`vllm_router_*error*_total`), by family name.
    pub errors: BTreeMap<String, f64>,
    /// Workers the router counts active (`vllm_router_active_workers`).
    pub active_workers: Option<f64>,
}

/// The routes of model calls: what a bench or a class sends.
pub const MODEL_ROUTES: [&str; 2] = ["/v1/chat/completions", "/v1/completions"];

impl RouterSnapshot {
    /// Parses a page; a page without any `vllm_router_` sample is no router's.
    pub fn from_text(text: &str) -> Result<Self, ParseError> {
        Ok(Self::from_exposition(&parse(text)?))
    }

    /// Reads the router's figures from a parsed page.
    pub fn from_exposition(page: &Exposition<'_>) -> Self {
        let mut s = RouterSnapshot::default();
        for sample in &page.samples {
            if !sample.name.starts_with("vllm_router_") || !sample.value.is_finite() {
                continue;
            }
            let label = |name: &str| {
                sample
                    .label(name)
                    .map(|v| v.into_owned())
                    .unwrap_or_else(|| "unknown".to_string())
            };
            let add = |slot: &mut Option<f64>| *slot = Some(slot.unwrap_or(0.0) + sample.value);
            if sample.name.starts_with("vllm_router_") && sample.label("worker").is_some() {
                let w = s.workers.entry(label("worker")).or_default();
                match sample.name {
                    "vllm_router_processed_requests_total" => add(&mut w.processed),
                    "vllm_router_policy_decisions_total" => {
                        *w.decisions.entry(label("policy")).or_default() += sample.value
                    }
                    "vllm_router_cb_outcomes_total" => match label("outcome").as_str() {
                        "failure" => add(&mut w.failures),
                        "success" => add(&mut w.successes),
                        _ => {}
                    },
                    "vllm_router_worker_health" => w.health = Some(sample.value),
                    "vllm_router_cb_state" => w.circuit = Some(sample.value),
                    _ => {}
                }
                continue;
            }
            match sample.name {
                "vllm_router_active_workers" => s.active_workers = Some(sample.value),
                "vllm_router_requests_total" => {
                    *s.requests_by_route.entry(label("route")).or_default() += sample.value
                }
                "vllm_router_retries_total" => {
                    *s.retries_by_route.entry(label("route")).or_default() += sample.value
                }
                "vllm_router_retries_exhausted_total" => {
                    *s.retries_exhausted_by_route
                        .entry(label("route"))
                        .or_default() += sample.value
                }
                name if name.contains("error") && name.ends_with("_total") => {
                    *s.errors.entry(name.to_string()).or_default() += sample.value
                }
                _ => {}
            }
        }
        s
    }

    /// Whether the page had any router figure (false for a page that is
    /// not the vLLM Router's, such as a backend's `/metrics`).
    pub fn is_router(&self) -> bool {
        *self != RouterSnapshot::default()
    }
}

fn increase(before: Option<f64>, after: Option<f64>) -> Option<f64> {
    Some(counter_increase(before.unwrap_or(0.0), after?))
}

fn map_increase(before: &BTreeMap<String, f64>, after: &BTreeMap<String, f64>) -> f64 {
    after
        .iter()
        .map(|(k, v)| counter_increase(before.get(k).copied().unwrap_or(0.0), *v))
        .fold(0.0, |a, b| a + b)
}

/// What the router did from `before` to `after` (two reads of its page):
/// counters increase (reset-aware: a router that restarted counts from 0),
/// health and circuit state are `after`'s. A counter absent from `before`
/// counts from 0 (a worker the router saw first in between).
pub fn router_figures(before: &RouterSnapshot, after: &RouterSnapshot) -> RouterFigures {
    let none = WorkerReading::default();
    let workers = after
        .workers
        .iter()
        .map(|(name, now)| {
            let was = before.workers.get(name).unwrap_or(&none);
            WorkerFigures {
                worker: name.clone(),
                routed: increase(was.processed, now.processed),
                // A worker with outcomes but no failure among them failed 0 times.
                failures: increase(was.failures, now.failures)
                    .or_else(|| now.successes.map(|_| 0.0)),
                decisions: now
                    .decisions
                    .iter()
                    .map(|(policy, v)| {
                        let b = was.decisions.get(policy).copied().unwrap_or(0.0);
                        (policy.clone(), counter_increase(b, *v))
                    })
                    .collect(),
                healthy: now.health.map(|h| h >= 1.0),
                circuit: now.circuit.map(circuit_name),
            }
        })
        .collect();
    let model_calls = |m: &BTreeMap<String, f64>| -> BTreeMap<String, f64> {
        m.iter()
            .filter(|(k, _)| MODEL_ROUTES.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), *v))
            .collect()
    };
    RouterFigures {
        workers,
        requests: map_increase(&before.requests_by_route, &after.requests_by_route),
        model_calls: map_increase(
            &model_calls(&before.requests_by_route),
            &model_calls(&after.requests_by_route),
        ),
        retries: map_increase(&before.retries_by_route, &after.retries_by_route),
        retries_exhausted: map_increase(
            &before.retries_exhausted_by_route,
            &after.retries_exhausted_by_route,
        ),
        errors: after
            .errors
            .iter()
            .map(|(k, v)| {
                let b = before.errors.get(k).copied().unwrap_or(0.0);
                (k.clone(), counter_increase(b, *v))
            })
            .filter(|(_, v)| *v > 0.0)
            .collect(),
        reads: 2,
    }
}

/// `closed`, `open`, `half-open` for the router's circuit-breaker gauge.
fn circuit_name(state: f64) -> String {
    match state.round() as i64 {
        0 => "closed",
        1 => "open",
        2 => "half-open",
        _ => "unknown",
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "\
vllm_router_processed_requests_total{worker=\"http://a:1\"} 10
vllm_router_requests_total{route=\"/v1/chat/completions\"} 8
vllm_router_requests_total{route=\"/metrics\"} 2
";
    const AFTER: &str = "\
vllm_router_processed_requests_total{worker=\"http://a:1\"} 16
vllm_router_processed_requests_total{worker=\"http://b:2\"} 3
vllm_router_cb_outcomes_total{worker=\"http://b:2\",outcome=\"failure\"} 2
vllm_router_cb_state{worker=\"http://b:2\"} 1
vllm_router_worker_health{worker=\"http://b:2\"} 1
vllm_router_requests_total{route=\"/v1/chat/completions\"} 15
vllm_router_requests_total{route=\"/metrics\"} 4
vllm_router_retries_total{route=\"/v1/chat/completions\"} 2
";

    #[test]
    fn two_reads_give_what_the_router_did_between_them() {
        let a = RouterSnapshot::from_text(BEFORE).unwrap();
        let b = RouterSnapshot::from_text(AFTER).unwrap();
        let f = router_figures(&a, &b);
        assert_eq!(f.workers.len(), 2);
        assert_eq!(f.workers[0].routed, Some(6.0));
        assert_eq!(f.workers[1].routed, Some(3.0), "new worker from 0");
        assert_eq!(f.workers[1].failures, Some(2.0));
        assert_eq!(f.workers[1].circuit.as_deref(), Some("open"));
        assert_eq!(f.requests, 9.0);
        assert_eq!(f.model_calls, 7.0);
        assert_eq!(f.retries, 2.0);
    }

    #[test]
    fn a_vllm_page_is_no_router_page() {
        let s = RouterSnapshot::from_text("vllm:num_requests_running{engine=\"0\"} 3\n").unwrap();
        assert!(!s.is_router());
    }
}
