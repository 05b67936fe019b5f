//! Engine statistics of the in-process twin: the [`ServerSnapshot`] a
//! `/metrics` page would give ([`snapshot_from_stats`]) and a sampler of the
//! engine on the twin's clock ([`StatsSampler`]).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::InProcTransport;
use crate::engine_stats::EngineStats;
use codendum_core::profile::Profile;
use codendum_core::prom::{Histogram, LatencyHistograms, Phase};
use codendum_core::prom::{ServerSnapshot, TimelineSample};

/// The figures of engine statistics as [`ServerSnapshot::from_text`] reads
/// them from the twin's `/metrics` page (same fields, no text round trip).
pub fn snapshot_from_stats(stats: &EngineStats, profile: &Profile) -> ServerSnapshot {
    let by_source = BTreeMap::from([
        ("external_kv_transfer".to_string(), 0.0),
        (
            "local_cache_hit".to_string(),
            stats.prompt_tokens_cached as f64,
        ),
        (
            "local_compute".to_string(),
            stats.prompt_tokens_computed as f64,
        ),
    ]);
    let finished = BTreeMap::from([
        ("abort".to_string(), stats.finished_abort as f64),
        ("error".to_string(), 0.0),
        ("length".to_string(), stats.finished_length as f64),
        ("repetition".to_string(), 0.0),
        ("stop".to_string(), stats.finished_stop as f64),
    ]);
    ServerSnapshot {
        running: Some(stats.running as f64),
        waiting: Some(stats.waiting as f64),
        kv_usage: Some(stats.kv_usage),
        preemptions: Some(stats.preemptions as f64),
        prefix_cache_queries: Some(stats.prefix_queries as f64),
        prefix_cache_hits: Some(stats.prefix_hits as f64),
        prompt_tokens: Some(stats.prompt_tokens as f64),
        prompt_tokens_by_source: Some(by_source),
        generation_tokens: Some(stats.generation_tokens as f64),
        finished_requests: Some(finished),
        kv_capacity_tokens: Some(profile.server.kv_cache_tokens),
        block_size: Some(u64::from(profile.server.block_size)),
        model_name: Some(profile.server.model.clone()),
        latency: Some(latency_from_stats(stats)),
        process_start_time_s: None,
    }
}

/// The engine's latency histograms as the `/metrics` page shows them.
fn latency_from_stats(stats: &EngineStats) -> LatencyHistograms {
    let convert = |h: &crate::engine_stats::Histogram| Histogram {
        buckets: h
            .bounds
            .iter()
            .zip(h.cumulative())
            .map(|(&le, c)| (le, c as f64))
            .collect(),
        sum: h.sum,
        count: h.count as f64,
    };
    let phases = [
        (Phase::Queue, &stats.queue),
        (Phase::Prefill, &stats.prefill),
        (Phase::Decode, &stats.decode),
        (Phase::Inference, &stats.inference),
        (Phase::Ttft, &stats.ttft),
        (Phase::InterToken, &stats.itl),
        (Phase::E2e, &stats.e2e),
    ];
    LatencyHistograms {
        phases: phases.into_iter().map(|(p, h)| (p, convert(h))).collect(),
    }
}

/// Samples an [`InProcTransport`]'s engine every `interval` of simulated
/// time, as the `/metrics` sampler does in a live run.
#[derive(Debug)]
pub struct StatsSampler {
    transport: Arc<InProcTransport>,
    samples: Arc<Mutex<Vec<TimelineSample>>>,
    task: tokio::task::JoinHandle<()>,
}

impl StatsSampler {
    /// Takes a first sample now, then one every `interval` (at least 1 ms)
    /// on the transport's clock, on the current tokio runtime.
    pub fn spawn(transport: Arc<InProcTransport>, interval: Duration) -> Self {
        let interval = interval.max(Duration::from_millis(1));
        let samples = Arc::new(Mutex::new(vec![transport.sample()]));
        let (t, s) = (Arc::clone(&transport), Arc::clone(&samples));
        let task = tokio::spawn(async move {
            let clock = t.clock().clone();
            let mut next = clock.now() + interval;
            loop {
                clock.sleep_until(next).await;
                let sample = t.sample();
                if let Ok(mut v) = s.lock() {
                    v.push(sample);
                }
                next += interval;
            }
        });
        StatsSampler {
            transport,
            samples,
            task,
        }
    }

    /// The samples so far, sampling going on.
    pub fn so_far(&self) -> Vec<TimelineSample> {
        self.samples.lock().map(|v| v.clone()).unwrap_or_default()
    }

    /// Stops sampling, takes a last sample now and returns the timeline.
    pub fn finish(self) -> Vec<TimelineSample> {
        self.task.abort();
        let last = self.transport.sample();
        let mut samples = self
            .samples
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default();
        if samples.last().is_none_or(|s| s.t < last.t) {
            samples.push(last);
        }
        samples
    }
}

impl Drop for StatsSampler {
    fn drop(&mut self) {
        self.task.abort();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::metrics::{render, MetricsContext};

    #[test]
    fn snapshot_matches_the_metrics_page() {
        let profile = Profile::load("classroom-64k").expect("profile");
        let stats = EngineStats {
            running: 3,
            waiting: 2,
            kv_usage: 0.125,
            preemptions: 1,
            prefix_queries: 1000,
            prefix_hits: 900,
            prompt_tokens: 1000,
            prompt_tokens_computed: 100,
            prompt_tokens_cached: 900,
            generation_tokens: 77,
            finished_stop: 4,
            finished_length: 1,
            finished_abort: 2,
            ..EngineStats::default()
        };
        let http = BTreeMap::new();
        let ctx = MetricsContext {
            profile: &profile,
            started_unix: 1_790_000_000.0,
            http_requests: &http,
        };
        let page = render(&stats, &ctx);
        let parsed = ServerSnapshot::from_text(&page).expect("parses");
        // The page also names its process's start; the engine's stats do not.
        assert_eq!(parsed.process_start_time_s, Some(1_790_000_000.0));
        let parsed = ServerSnapshot {
            process_start_time_s: None,
            ..parsed
        };
        assert_eq!(snapshot_from_stats(&stats, &profile), parsed);
    }
}
