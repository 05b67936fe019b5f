//! vLLM's latency histograms on a `/metrics` page: where a request's time
//! goes on the server (queue, prefill, decode, inference, TTFT, inter-token
//! latency, end to end), and the increase over a window of a run, as means
//! and bucket-interpolated percentile estimates.
//!
//! Histogram percentiles are bounded by the buckets: a P95 inside the
//! `(2.5, 5]` bucket is somewhere in it, and the estimate assumes the
//! observations are spread evenly inside. Means (`Δsum / Δcount`) are exact.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::parse::Exposition;
use crate::server_figures::{PhaseTime, TimeSplit};

/// A phase of a request as vLLM times it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Phase {
    /// Waiting for a seat (`vllm:request_queue_time_seconds`).
    Queue,
    /// Reading the prompt (`vllm:request_prefill_time_seconds`).
    Prefill,
    /// Generating (`vllm:request_decode_time_seconds`).
    Decode,
    /// Prefill plus decode (`vllm:request_inference_time_seconds`).
    Inference,
    /// Arrival to first token (`vllm:time_to_first_token_seconds`).
    Ttft,
    /// Between two output tokens (`vllm:inter_token_latency_seconds`; older
    /// servers: `vllm:time_per_output_token_seconds`).
    InterToken,
    /// Arrival to the end (`vllm:e2e_request_latency_seconds`).
    E2e,
}

/// Every latency histogram a snapshot reads: its name, its phase, and its
/// rank among the names of that phase (0 = the current name; an older name
/// is read only when the current one is absent).
pub const LATENCY_HISTOGRAMS: [(&str, Phase, usize); 8] = [
    ("vllm:request_queue_time_seconds", Phase::Queue, 0),
    ("vllm:request_prefill_time_seconds", Phase::Prefill, 0),
    ("vllm:request_decode_time_seconds", Phase::Decode, 0),
    ("vllm:request_inference_time_seconds", Phase::Inference, 0),
    ("vllm:time_to_first_token_seconds", Phase::Ttft, 0),
    ("vllm:inter_token_latency_seconds", Phase::InterToken, 0),
    ("vllm:time_per_output_token_seconds", Phase::InterToken, 1),
    ("vllm:e2e_request_latency_seconds", Phase::E2e, 0),
];

/// The phase and rank of a histogram name ([`LATENCY_HISTOGRAMS`]).
fn phase_of(base: &str) -> Option<(Phase, usize)> {
    LATENCY_HISTOGRAMS
        .iter()
        .find(|(name, _, _)| *name == base)
        .map(|&(_, phase, rank)| (phase, rank))
}

/// One histogram summed over engines and label sets: cumulative counts by
/// upper bound (seconds), the sum of observations (seconds) and their count.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Histogram {
    /// `(le, cumulative count)` for the finite bounds, in increasing `le`;
    /// the `+Inf` bucket is [`Histogram::count`] (so the JSON form has
    /// only finite numbers).
    pub buckets: Vec<(f64, f64)>,
    /// Sum of the observations, seconds.
    pub sum: f64,
    /// Number of observations.
    pub count: f64,
}

impl Histogram {
    fn add_bucket(&mut self, le: f64, value: f64) {
        match self.buckets.iter_mut().find(|(b, _)| *b == le) {
            Some((_, v)) => *v += value,
            None => {
                let at = self.buckets.partition_point(|(b, _)| *b < le);
                self.buckets.insert(at, (le, value));
            }
        }
    }

    /// Adds another histogram (another replica) bucket by bucket.
    pub fn merge(&mut self, other: &Histogram) {
        self.sum += other.sum;
        self.count += other.count;
        for &(le, v) in &other.buckets {
            self.add_bucket(le, v);
        }
    }

    /// The observations between `earlier` and `self` (a later reading of the
    /// same counters); `None` when a counter went down (a restart).
    pub fn since(&self, earlier: &Histogram) -> Option<Histogram> {
        let mut d = Histogram {
            buckets: Vec::with_capacity(self.buckets.len()),
            sum: self.sum - earlier.sum,
            count: self.count - earlier.count,
        };
        if d.count < 0.0 || d.sum < -1e-9 {
            return None;
        }
        for &(le, v) in &self.buckets {
            let before = earlier
                .buckets
                .iter()
                .find(|(b, _)| *b == le)
                .map_or(0.0, |(_, v)| *v);
            d.buckets.push((le, (v - before).max(0.0)));
        }
        Some(d)
    }

    /// The mean observation, seconds; `None` without observations.
    pub fn mean(&self) -> Option<f64> {
        (self.count > 0.0).then(|| self.sum / self.count)
    }

    /// The `q` quantile (0..1) by linear interpolation inside its bucket,
    /// seconds: an estimate bounded by the bucket edges. A quantile in the
    /// `+Inf` bucket gives the largest finite bound.
    pub fn quantile_estimate(&self, q: f64) -> Option<f64> {
        let total = self.count;
        if total <= 0.0 {
            return None;
        }
        let rank = q.clamp(0.0, 1.0) * total;
        let mut lower = 0.0;
        let mut below = 0.0;
        for &(le, cum) in &self.buckets {
            if cum >= rank {
                let inside = cum - below;
                let frac = if inside > 0.0 {
                    (rank - below) / inside
                } else {
                    1.0
                };
                return Some(lower + (le - lower) * frac);
            }
            lower = le;
            below = cum;
        }
        // In the +Inf bucket: all that is known is the largest bound.
        Some(lower)
    }

    fn phase_time(&self) -> Option<PhaseTime> {
        // No observation exceeds the sum of them all (they are never
        // negative): that bounds an estimate inside a wide first bucket,
        // e.g. queue times that were all 0.
        let bounded = |q: f64| self.quantile_estimate(q).map(|v| v.min(self.sum.max(0.0)));
        Some(PhaseTime {
            mean_s: self.mean()?,
            p50_estimate_s: bounded(0.5),
            p95_estimate_s: bounded(0.95),
            requests: self.count.round() as u64,
        })
    }
}

/// Every latency histogram of a page, by phase.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LatencyHistograms {
    /// The histograms found; a phase the server does not export is absent.
    pub phases: BTreeMap<Phase, Histogram>,
}

impl LatencyHistograms {
    /// Reads the histograms of a parsed page (engines and label sets
    /// summed; an older name only when the current one is absent). `None`
    /// when the page has none (not vLLM, or too old).
    pub fn from_exposition(page: &Exposition<'_>) -> Option<LatencyHistograms> {
        let mut ranked: BTreeMap<(Phase, usize), Histogram> = BTreeMap::new();
        for sample in &page.samples {
            if !sample.name.starts_with("vllm:") || !sample.value.is_finite() {
                continue;
            }
            let (base, part) = match sample.name.rsplit_once('_') {
                Some((b, p @ ("bucket" | "sum" | "count"))) => (b, p),
                _ => continue,
            };
            let Some(key) = phase_of(base) else { continue };
            let h = ranked.entry(key).or_default();
            match part {
                "sum" => h.sum += sample.value,
                "count" => h.count += sample.value,
                _ => {
                    let le = sample
                        .label("le")
                        .and_then(|v| v.trim().parse::<f64>().ok());
                    // +Inf (and anything unreadable) is the count itself.
                    if let Some(le) = le.filter(|le| le.is_finite()) {
                        h.add_bucket(le, sample.value);
                    }
                }
            }
        }
        let mut phases: BTreeMap<Phase, Histogram> = BTreeMap::new();
        for ((phase, _rank), h) in ranked {
            phases.entry(phase).or_insert(h);
        }
        (!phases.is_empty()).then_some(LatencyHistograms { phases })
    }

    /// The sum over replicas.
    pub fn merge(&mut self, other: &LatencyHistograms) {
        for (phase, h) in &other.phases {
            self.phases.entry(*phase).or_default().merge(h);
        }
    }

    /// The server's time split over the requests that ended between two
    /// readings (`earlier`, then `self`); `None` when nothing ended or a
    /// counter went down.
    pub fn split_since(&self, earlier: &LatencyHistograms) -> Option<TimeSplit> {
        let phase = |p: Phase| -> Option<PhaseTime> {
            let now = self.phases.get(&p)?;
            let before = earlier.phases.get(&p).cloned().unwrap_or_default();
            now.since(&before)?.phase_time()
        };
        let split = TimeSplit {
            queue: phase(Phase::Queue),
            prefill: phase(Phase::Prefill),
            decode: phase(Phase::Decode),
            inference: phase(Phase::Inference),
            ttft: phase(Phase::Ttft),
            inter_token: phase(Phase::InterToken),
            e2e: phase(Phase::E2e),
            client_ttft_mean_s: None,
            client_e2e_mean_s: None,
        };
        split.has_any().then_some(split)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::prom::parse;

    const PAGE: &str = "\
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\"} 1
vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"1.0\"} 3
vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\"} 4
vllm:time_to_first_token_seconds_sum{engine=\"0\"} 6.05
vllm:time_to_first_token_seconds_count{engine=\"0\"} 4
vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.1\"} 0
vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"1.0\"} 1
vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"+Inf\"} 1
vllm:time_to_first_token_seconds_sum{engine=\"1\"} 0.5
vllm:time_to_first_token_seconds_count{engine=\"1\"} 1
";

    #[test]
    fn engines_are_summed_and_means_are_exact() {
        let page = parse(PAGE).unwrap();
        let h = LatencyHistograms::from_exposition(&page).unwrap();
        let ttft = &h.phases[&Phase::Ttft];
        assert_eq!(ttft.count, 5.0);
        assert_eq!(ttft.buckets, vec![(0.1, 1.0), (1.0, 4.0)]);
        assert!((ttft.mean().unwrap() - 6.55 / 5.0).abs() < 1e-12);
    }

    #[test]
    fn quantiles_interpolate_inside_their_bucket() {
        let h = Histogram {
            buckets: vec![(0.1, 1.0), (1.0, 3.0)],
            sum: 0.0,
            count: 4.0,
        };
        // Rank 2 of 4 is halfway through (0.1, 1.0].
        assert!((h.quantile_estimate(0.5).unwrap() - 0.55).abs() < 1e-12);
        // Rank 3.8 falls in +Inf: the largest finite bound.
        assert_eq!(h.quantile_estimate(0.95), Some(1.0));
        assert_eq!(Histogram::default().quantile_estimate(0.5), None);
    }

    #[test]
    fn a_window_is_the_increase_and_a_restart_gives_nothing() {
        let later = Histogram {
            buckets: vec![(1.0, 5.0)],
            sum: 9.0,
            count: 6.0,
        };
        let earlier = Histogram {
            buckets: vec![(1.0, 2.0)],
            sum: 1.0,
            count: 2.0,
        };
        let d = later.since(&earlier).unwrap();
        assert_eq!(d.count, 4.0);
        assert_eq!(d.mean(), Some(2.0));
        assert_eq!(d.buckets, vec![(1.0, 3.0)]);
        assert!(earlier.since(&later).is_none());
    }

    #[test]
    fn a_page_without_histograms_has_none() {
        let page = parse("vllm:num_requests_running 3\n").unwrap();
        assert!(LatencyHistograms::from_exposition(&page).is_none());
    }
}
