//! A fleet's replicas over time: one [`ReplicaSample`] per replica and
//! sample (a line of `replica-timeline.jsonl`), and the per-replica figures
//! of a window ([`fleet_figures`]). Plain functions; the sums over the fleet
//! stay in `server-timeline.jsonl` as before.

use serde::{Deserialize, Serialize};

use chrono::{DateTime, Utc};

use super::snapshot::ServerSnapshot;
use super::window::{window_stats, TimelineSample};
use crate::server_figures::{FleetFigures, ReplicaFigures};

/// File name of the per-replica samples of a fleet.
pub const REPLICA_TIMELINE_JSONL: &str = "replica-timeline.jsonl";

/// One replica's sample: which replica, and what it said then.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplicaSample {
    /// The replica (see [`replica_name`], or a Prometheus `instance`).
    pub replica: String,
    /// Its reading; `t` and `utc` as in `server-timeline.jsonl`.
    #[serde(flatten)]
    pub sample: TimelineSample,
}

/// The name of the replica behind a `/metrics` URL: `host:port` (as
/// Prometheus names a scraped instance), followed by the path when it is
/// not `/metrics` (several replicas behind one port).
pub fn replica_name(url: &str) -> String {
    let Ok(parsed) = url::Url::parse(url) else {
        return url.to_string();
    };
    let host = parsed.host_str().unwrap_or("");
    let mut name = match parsed.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_string(),
    };
    if parsed.path() != "/metrics" {
        name.push_str(parsed.path());
    }
    name
}

/// The figures of [t0, t1] on a timeline whose reading at a step is up to
/// `lag` seconds older than the step (Prometheus: its latest scrape, one
/// scrape interval at most). Counters that move when a request ends
/// (finished requests, generated tokens, preemptions) read each boundary
/// `b` late, at the last step at or before `b + 2 × lag` (a scrape after
/// `b`): a bench level's requests all end just before its end, and none of
/// the next level's ends that soon. Counters that move when a request
/// starts (prompt tokens, prefix-cache queries and hits) read it early, at
/// the last step at or before `b` (a scrape before `b`): a level's last
/// prompts arrive well before its end, the next level's after it. Of the
/// latency histograms, TTFT (observed at a request's first token) is read
/// early and the others (observed at its end; inter-token latency as its
/// tokens come) late. Contiguous windows share their boundary readings, so a run's counters
/// add up. Peaks come from the steps in `[t0 + lag, t1]`, whose scrapes all
/// fall inside the window (every step read late when the window is shorter
/// than `lag`). `lag` 0 is [`window_stats`].
pub fn lagged_window(
    timeline: &[TimelineSample],
    t0: f64,
    t1: f64,
    lag: f64,
) -> super::window::WindowStats {
    let early = window_stats(timeline, t0, t1);
    if lag <= 0.0 {
        return early;
    }
    let late = window_stats(timeline, t0 + 2.0 * lag, t1 + 2.0 * lag);
    let inside = window_stats(timeline, t0 + lag, t1);
    let gauges = if inside.samples > 0 {
        inside
    } else {
        late.clone()
    };
    super::window::WindowStats {
        t0,
        t1,
        peak_running: gauges.peak_running,
        peak_waiting: gauges.peak_waiting,
        peak_kv_usage: gauges.peak_kv_usage,
        prompt_tokens: early.prompt_tokens,
        prefix_cache_queries: early.prefix_cache_queries,
        prefix_cache_hits: early.prefix_cache_hits,
        prefix_hit_rate: early.prefix_hit_rate,
        time_split: late.time_split.map(|mut split| {
            split.ttft = early.time_split.and_then(|e| e.ttft).or(split.ttft);
            split
        }),
        ..late
    }
}

/// The fleet's figures over [t0, t1]: peaks from the fleet's summed
/// timeline, counter increases as the sum of each replica's own (so a
/// replica that restarts counts from 0 in its own segments, and the other
/// replicas' totals are not counted again, as a reset of the sum would).
/// Without replica samples, [`window_stats`] of the fleet.
pub fn fleet_window(
    fleet: &[TimelineSample],
    replicas: &[ReplicaSample],
    t0: f64,
    t1: f64,
) -> super::window::WindowStats {
    let mut w = window_stats(fleet, t0, t1);
    let order = replica_order(replicas);
    if order.len() < 2 {
        return w;
    }
    let each: Vec<super::window::WindowStats> = order
        .iter()
        .map(|r| window_stats(&replica_timeline(replicas, r), t0, t1))
        .collect();
    let sum = |field: fn(&super::window::WindowStats) -> Option<f64>| {
        each.iter()
            .filter_map(field)
            .fold(None, |acc: Option<f64>, v| Some(acc.unwrap_or(0.0) + v))
    };
    w.preemptions = sum(|s| s.preemptions);
    w.prompt_tokens = sum(|s| s.prompt_tokens);
    w.generation_tokens = sum(|s| s.generation_tokens);
    w.prefix_cache_queries = sum(|s| s.prefix_cache_queries);
    w.prefix_cache_hits = sum(|s| s.prefix_cache_hits);
    w.requests_finished = sum(|s| s.requests_finished);
    w.prefix_hit_rate = match (w.prefix_cache_hits, w.prefix_cache_queries) {
        (Some(h), Some(q)) if q > 0.0 => Some((h / q).clamp(0.0, 1.0)),
        _ => None,
    };
    w
}

/// One `/metrics` page read: its figures, and each engine's when it holds
/// several (`engine` label values).
#[derive(Debug, Clone)]
pub struct Scraped {
    /// The page's figures (engines summed).
    pub total: ServerSnapshot,
    /// `(engine label value, figures)` per engine; empty for one engine.
    pub engines: Vec<(String, ServerSnapshot)>,
}

/// A sample from a result: a snapshot, or the error as text.
pub fn timeline_sample(
    utc: DateTime<Utc>,
    t: f64,
    result: Result<ServerSnapshot, String>,
) -> TimelineSample {
    let (snapshot, error) = match result {
        Ok(s) => (Some(s), None),
        Err(e) => (None, Some(e)),
    };
    TimelineSample {
        utc,
        t,
        snapshot,
        error,
    }
}

/// The name of one engine of a replica: `host:port engine=1`.
pub fn engine_name(replica: &str, engine: &str) -> String {
    format!("{replica} engine={engine}")
}

/// Each replica's sample of one reading of the servers `names` (results
/// in the same order; a URL's name is its [`replica_name`]): one per
/// server, or one per engine of a page with several engines (named by
/// [`engine_name`]); a failed server gives one error sample. None when
/// that makes fewer than two replicas (one server).
pub fn split_replicas<E: std::fmt::Display>(
    names: &[String],
    each: &[Result<Scraped, E>],
    utc: DateTime<Utc>,
    t: f64,
) -> Vec<ReplicaSample> {
    let mut out = Vec::new();
    let mut push = |replica: String, r: Result<ServerSnapshot, String>| {
        out.push(ReplicaSample {
            replica,
            sample: timeline_sample(utc, t, r),
        })
    };
    for (name, r) in names.iter().zip(each) {
        let name = name.clone();
        match r {
            Ok(s) if !s.engines.is_empty() => {
                for (engine, snapshot) in &s.engines {
                    push(engine_name(&name, engine), Ok(snapshot.clone()));
                }
            }
            Ok(s) => push(name, Ok(s.total.clone())),
            Err(e) => push(name, Err(e.to_string())),
        }
    }
    if out.len() < 2 {
        out.clear();
    }
    out
}

/// The replicas of a replica timeline in order of first appearance.
pub fn replica_order(samples: &[ReplicaSample]) -> Vec<String> {
    let mut order: Vec<String> = Vec::new();
    for s in samples {
        if !order.contains(&s.replica) {
            order.push(s.replica.clone());
        }
    }
    order
}

/// The samples of one replica, as a timeline.
pub fn replica_timeline(samples: &[ReplicaSample], replica: &str) -> Vec<TimelineSample> {
    samples
        .iter()
        .filter(|s| s.replica == replica)
        .map(|s| s.sample.clone())
        .collect()
}

/// Each replica's figures over [t0, t1] (simulated seconds; the same window
/// rules as [`window_stats`]) and the imbalance of requests served. `None`
/// with fewer than two replicas: one server has no fleet figures.
pub fn fleet_figures(
    samples: &[ReplicaSample],
    source: &str,
    t0: f64,
    t1: f64,
) -> Option<FleetFigures> {
    fleet_figures_with(samples, source, |timeline| window_stats(timeline, t0, t1))
}

/// [`fleet_figures`] with each replica's window computed by `window` (e.g.
/// [`lagged_window`] for a Prometheus timeline).
pub fn fleet_figures_with(
    samples: &[ReplicaSample],
    source: &str,
    window: impl Fn(&[TimelineSample]) -> super::window::WindowStats,
) -> Option<FleetFigures> {
    let order = replica_order(samples);
    if order.len() < 2 {
        return None;
    }
    let replicas = order
        .iter()
        .map(|name| {
            let w = window(&replica_timeline(samples, name));
            replica_figures(name.clone(), &w, w.requests_finished)
        })
        .collect();
    Some(FleetFigures::new(source, replicas))
}

/// One replica's figures from its window; `requests_served` from wherever
/// the caller counts them (the success counter, or the router's tally).
pub fn replica_figures(
    replica: String,
    w: &super::window::WindowStats,
    requests_served: Option<f64>,
) -> ReplicaFigures {
    ReplicaFigures {
        replica,
        requests_served,
        peak_running: w.peak_running,
        peak_waiting: w.peak_waiting,
        peak_kv_usage: w.peak_kv_usage,
        preemptions: w.preemptions,
        prefix_hit_rate: w.prefix_hit_rate,
        prompt_tokens: w.prompt_tokens,
        generation_tokens: w.generation_tokens,
        failed_samples: w.failed_scrapes as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn sample(replica: &str, t: f64, running: f64, served: f64) -> ReplicaSample {
        let snapshot = ServerSnapshot {
            running: Some(running),
            finished_requests: Some(BTreeMap::from([("length".to_string(), served)])),
            ..ServerSnapshot::default()
        };
        ReplicaSample {
            replica: replica.into(),
            sample: TimelineSample {
                utc: chrono::DateTime::from_timestamp(1_800_000_000 + t as i64, 0).unwrap(),
                t,
                snapshot: Some(snapshot),
                error: None,
            },
        }
    }

    #[test]
    fn a_page_of_two_engines_is_two_replicas() {
        let page = "vllm:num_requests_running{engine=\"0\"} 3\n\
                    vllm:num_requests_running{engine=\"1\"} 1\n\
                    vllm:request_success_total{engine=\"0\",finished_reason=\"stop\"} 5\n\
                    vllm:request_success_total{engine=\"1\",finished_reason=\"stop\"} 2\n";
        let parsed = crate::prom::parse(page).unwrap();
        let engines = ServerSnapshot::per_engine(&parsed);
        assert_eq!(engines.len(), 2);
        assert_eq!(engines[1].1.running, Some(1.0));
        let scraped = Scraped {
            total: ServerSnapshot::from_exposition(&parsed),
            engines,
        };
        assert_eq!(scraped.total.running, Some(4.0));
        let utc = chrono::DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let names = vec!["h:8000".to_string()];
        let each: Vec<Result<Scraped, String>> = vec![Ok(scraped.clone())];
        let split = split_replicas(&names, &each, utc, 0.0);
        let got: Vec<&str> = split.iter().map(|s| s.replica.as_str()).collect();
        assert_eq!(got, ["h:8000 engine=0", "h:8000 engine=1"]);
        assert_eq!(
            split[0].sample.snapshot.as_ref().unwrap().finished_total(),
            Some(5.0)
        );
        // One server of one engine is no fleet; a failed one is an error sample.
        let one = Scraped {
            engines: Vec::new(),
            ..scraped
        };
        assert!(split_replicas(&names, &[Ok::<_, String>(one.clone())], utc, 0.0).is_empty());
        let two = vec!["a:1".to_string(), "b:2".to_string()];
        let split = split_replicas(&two, &[Ok(one), Err("refused".to_string())], utc, 0.0);
        assert_eq!(split[1].sample.error.as_deref(), Some("refused"));
    }

    #[test]
    fn a_lagged_window_reads_boundaries_late_and_peaks_inside() {
        // Served counter and running gauge, one step a second.
        let samples = [
            (0.0, 0.0, 0.0),
            (1.0, 4.0, 0.0),
            (2.0, 4.0, 2.0),
            (3.0, 2.0, 5.0),
            (4.0, 9.0, 8.0),
        ];
        let timeline: Vec<TimelineSample> = samples
            .iter()
            .map(|&(t, running, served)| sample("a", t, running, served).sample)
            .collect();
        let w = lagged_window(&timeline, 1.0, 2.0, 1.0);
        // Counters from the reading at 3 to the one at 4; peaks from 2..2.
        assert_eq!(w.requests_finished, Some(3.0));
        assert_eq!(w.peak_running, Some(4.0));
        assert_eq!(
            lagged_window(&timeline, 1.0, 3.0, 0.0),
            window_stats(&timeline, 1.0, 3.0)
        );
    }

    #[test]
    fn a_replica_that_restarts_does_not_count_the_others_again() {
        // a serves 100 → 103, b 50 → 51 then restarts (its counter to 1).
        let samples = vec![
            sample("a", 0.0, 0.0, 100.0),
            sample("b", 0.0, 0.0, 50.0),
            sample("a", 1.0, 0.0, 103.0),
            sample("b", 1.0, 0.0, 51.0),
            sample("a", 2.0, 0.0, 105.0),
            sample("b", 2.0, 0.0, 1.0),
        ];
        let fleet: Vec<TimelineSample> = [(0.0, 150.0), (1.0, 154.0), (2.0, 106.0)]
            .iter()
            .map(|&(t, served)| sample("fleet", t, 0.0, served).sample)
            .collect();
        // The sum falls at 2 s: a reset of the sum would count all 106 again.
        assert_eq!(
            window_stats(&fleet, 0.0, 2.0).requests_finished,
            Some(110.0)
        );
        let w = fleet_window(&fleet, &samples, 0.0, 2.0);
        assert_eq!(w.requests_finished, Some(5.0 + 2.0));
    }

    #[test]
    fn names_are_host_and_port_with_an_unusual_path() {
        assert_eq!(
            replica_name("http://127.0.0.1:8001/metrics"),
            "127.0.0.1:8001"
        );
        assert_eq!(replica_name("https://gpu1.lab/metrics"), "gpu1.lab:443");
        assert_eq!(
            replica_name("http://h:9/engine/1/metrics"),
            "h:9/engine/1/metrics"
        );
    }

    #[test]
    fn figures_per_replica_and_the_imbalance_of_requests_served() {
        let samples = vec![
            sample("a", 0.0, 0.0, 100.0),
            sample("b", 0.0, 0.0, 7.0),
            sample("a", 1.0, 3.0, 103.0),
            sample("b", 1.0, 1.0, 8.0),
            sample("a", 2.0, 2.0, 106.0),
            sample("b", 2.0, 4.0, 9.0),
        ];
        let fleet = fleet_figures(&samples, "scrape", 0.0, 2.0).expect("two replicas");
        let names: Vec<&str> = fleet.replicas.iter().map(|r| r.replica.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(fleet.replicas[0].requests_served, Some(6.0));
        assert_eq!(fleet.replicas[1].requests_served, Some(2.0));
        assert_eq!(fleet.replicas[0].peak_running, Some(3.0));
        assert_eq!(fleet.replicas[1].peak_running, Some(4.0));
        // max 6 over mean 4
        assert_eq!(fleet.imbalance, Some(1.5));
        assert!(fleet_figures(&samples[..1], "scrape", 0.0, 2.0).is_none());
    }
}
