//! The vLLM view of a `/metrics` page: the handful of figures codendum reports.
//!
//! Every field is optional: a metric the server does not export stays absent,
//! it never reads as zero. Current vLLM names and older ones
//! (`vllm:gpu_cache_usage_perc`, `vllm:gpu_prefix_cache_*`) are accepted; when
//! a server exports both, the current name wins. Samples of several engines
//! (data parallel, one `engine` label value each) are summed.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::latency::LatencyHistograms;
use super::parse::{parse, Exposition, ParseError, Sample};

/// What one scrape (or the sum of several replicas' scrapes) says about the server.
///
/// Counters are cumulative since the server started; gauges hold the state of
/// the latest engine step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerSnapshot {
    /// Requests in the running batch (`vllm:num_requests_running`), summed over engines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub running: Option<f64>,
    /// Requests in the waiting queue, preempted ones included (`vllm:num_requests_waiting`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub waiting: Option<f64>,
    /// KV-cache usage as a FRACTION 0..1 (`vllm:kv_cache_usage_perc`, despite
    /// its name); several engines: weighted by their KV capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_usage: Option<f64>,
    /// Preemptions since start (counter `vllm:num_preemptions_total`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preemptions: Option<f64>,
    /// Prompt tokens looked up in the prefix cache since start (counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_queries: Option<f64>,
    /// Prompt tokens found in the prefix cache since start (counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix_cache_hits: Option<f64>,
    /// Prompt tokens since start, cached ones included (counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<f64>,
    /// Prompt tokens since start by `source` (`local_compute`, `local_cache_hit`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_by_source: Option<BTreeMap<String, f64>>,
    /// Generated (output) tokens since start (counter).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation_tokens: Option<f64>,
    /// Finished requests since start by `finished_reason` (`stop`, `length`,
    /// `abort`, `error`, `repetition`), from `vllm:request_success_total`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finished_requests: Option<BTreeMap<String, f64>>,
    /// KV-cache capacity in tokens (`kv_cache_size_tokens` label of
    /// `vllm:cache_config_info`, else `num_gpu_blocks × block_size`), summed over engines.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kv_capacity_tokens: Option<u64>,
    /// KV block size in tokens (`block_size` label of `vllm:cache_config_info`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub block_size: Option<u64>,
    /// The served model (`model_name` label); distinct names joined by ", ".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_name: Option<String>,
    /// The latency histograms (queue, prefill, decode, TTFT, ...), summed
    /// over engines; absent on servers without them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyHistograms>,
    /// When the server's process started, Unix seconds
    /// (`process_start_time_seconds`): a new value means a restart, values
    /// that alternate mean several servers behind one URL
    /// ([`super::continuity`]). Absent for a sum of replicas.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub process_start_time_s: Option<f64>,
}

/// The scalar figures; the discriminant indexes the accumulator array.
#[derive(Clone, Copy)]
enum Scalar {
    Running = 0,
    Waiting,
    Preemptions,
    Queries,
    Hits,
    Prompt,
    Generation,
}

const SCALARS: usize = 7;
const VARIANTS: usize = 4;

/// What a sample name means to us: a figure and the rank of its name
/// (0 = current name; higher = older spelling, used only when 0 is absent).
enum Role {
    Scalar(Scalar, usize),
    KvUsage(usize),
    BySource(usize),
    Finished(usize),
    CacheConfig,
}

/// Every sample name a [`ServerSnapshot`] reads except the latency
/// histograms: what a Prometheus query must fetch to rebuild one.
pub const SNAPSHOT_SAMPLE_NAMES: [&str; 23] = [
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:num_preemptions_total",
    "vllm:num_preemptions",
    "vllm:prefix_cache_queries_total",
    "vllm:prefix_cache_queries",
    "vllm:gpu_prefix_cache_queries_total",
    "vllm:gpu_prefix_cache_queries",
    "vllm:prefix_cache_hits_total",
    "vllm:prefix_cache_hits",
    "vllm:gpu_prefix_cache_hits_total",
    "vllm:gpu_prefix_cache_hits",
    "vllm:prompt_tokens_total",
    "vllm:prompt_tokens",
    "vllm:generation_tokens_total",
    "vllm:generation_tokens",
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "vllm:prompt_tokens_by_source_total",
    "vllm:prompt_tokens_by_source",
    "vllm:request_success_total",
    "vllm:request_success",
    "vllm:cache_config_info",
];

/// Whether a sample name is one a snapshot reads (histograms aside).
pub fn is_snapshot_sample(name: &str) -> bool {
    role(name).is_some()
}

fn role(name: &str) -> Option<Role> {
    use Scalar::*;
    Some(match name {
        "vllm:num_requests_running" => Role::Scalar(Running, 0),
        "vllm:num_requests_waiting" => Role::Scalar(Waiting, 0),
        "vllm:num_preemptions_total" => Role::Scalar(Preemptions, 0),
        "vllm:num_preemptions" => Role::Scalar(Preemptions, 1),
        "vllm:prefix_cache_queries_total" => Role::Scalar(Queries, 0),
        "vllm:prefix_cache_queries" => Role::Scalar(Queries, 1),
        "vllm:gpu_prefix_cache_queries_total" => Role::Scalar(Queries, 2),
        "vllm:gpu_prefix_cache_queries" => Role::Scalar(Queries, 3),
        "vllm:prefix_cache_hits_total" => Role::Scalar(Hits, 0),
        "vllm:prefix_cache_hits" => Role::Scalar(Hits, 1),
        "vllm:gpu_prefix_cache_hits_total" => Role::Scalar(Hits, 2),
        "vllm:gpu_prefix_cache_hits" => Role::Scalar(Hits, 3),
        "vllm:prompt_tokens_total" => Role::Scalar(Prompt, 0),
        "vllm:prompt_tokens" => Role::Scalar(Prompt, 1),
        "vllm:generation_tokens_total" => Role::Scalar(Generation, 0),
        "vllm:generation_tokens" => Role::Scalar(Generation, 1),
        "vllm:kv_cache_usage_perc" => Role::KvUsage(0),
        "vllm:gpu_cache_usage_perc" => Role::KvUsage(1),
        "vllm:prompt_tokens_by_source_total" => Role::BySource(0),
        "vllm:prompt_tokens_by_source" => Role::BySource(1),
        "vllm:request_success_total" => Role::Finished(0),
        "vllm:request_success" => Role::Finished(1),
        "vllm:cache_config_info" => Role::CacheConfig,
        _ => return None,
    })
}

/// Sums per name rank; the best-ranked name present wins.
#[derive(Default)]
struct Ranked<T> {
    by_rank: [Option<T>; VARIANTS],
}

impl<T: Default> Ranked<T> {
    fn slot(&mut self, rank: usize) -> &mut T {
        self.by_rank[rank.min(VARIANTS - 1)].get_or_insert_with(T::default)
    }

    fn best(self) -> Option<T> {
        self.by_rank.into_iter().flatten().next()
    }
}

fn add_to_map(map: &mut BTreeMap<String, f64>, sample: &Sample<'_>, label: &str) {
    let key = sample
        .label(label)
        .unwrap_or(Cow::Borrowed("unknown"))
        .into_owned();
    *map.entry(key).or_insert(0.0) += sample.value;
}

fn label_u64(sample: &Sample<'_>, name: &str) -> Option<u64> {
    sample.label(name)?.trim().parse::<u64>().ok()
}

impl ServerSnapshot {
    /// Parses a page and reads the vLLM figures from it.
    pub fn from_text(text: &str) -> Result<Self, ParseError> {
        Ok(Self::from_exposition(&parse(text)?))
    }

    /// Reads the vLLM figures from a parsed page. A page from a server that is
    /// not vLLM gives a snapshot with every field absent.
    pub fn from_exposition(page: &Exposition<'_>) -> Self {
        let mut scalars: [Ranked<f64>; SCALARS] = Default::default();
        let mut kv: Ranked<Vec<(Option<Cow<'_, str>>, f64)>> = Ranked::default();
        let mut by_source: Ranked<BTreeMap<String, f64>> = Ranked::default();
        let mut finished: Ranked<BTreeMap<String, f64>> = Ranked::default();
        let mut capacity_by_engine: Vec<(Option<Cow<'_, str>>, u64)> = Vec::new();
        let mut block_size = None;
        let mut model_name: Option<Cow<'_, str>> = None;

        let mut process_start_time_s = None;
        for sample in &page.samples {
            if sample.name == "process_start_time_seconds" && sample.value.is_finite() {
                process_start_time_s = process_start_time_s.or(Some(sample.value));
                continue;
            }
            if !sample.name.starts_with("vllm:") || !sample.value.is_finite() {
                continue;
            }
            let Some(role) = role(sample.name) else {
                continue;
            };
            if model_name.is_none() {
                model_name = sample.label("model_name");
            }
            match role {
                Role::Scalar(which, rank) => *scalars[which as usize].slot(rank) += sample.value,
                Role::KvUsage(rank) => kv.slot(rank).push((sample.label("engine"), sample.value)),
                Role::BySource(rank) => add_to_map(by_source.slot(rank), sample, "source"),
                Role::Finished(rank) => add_to_map(finished.slot(rank), sample, "finished_reason"),
                Role::CacheConfig => {
                    let block = label_u64(sample, "block_size");
                    block_size = block_size.or(block);
                    let tokens = label_u64(sample, "kv_cache_size_tokens")
                        .or_else(|| label_u64(sample, "num_gpu_blocks")?.checked_mul(block?));
                    if let Some(tokens) = tokens {
                        capacity_by_engine.push((sample.label("engine"), tokens));
                    }
                }
            }
        }

        let [running, waiting, preemptions, queries, hits, prompt, generation] =
            scalars.map(Ranked::best);
        let kv_capacity_tokens = if capacity_by_engine.is_empty() {
            None
        } else {
            Some(capacity_by_engine.iter().map(|(_, c)| *c).sum())
        };
        let kv_usage = kv.best().and_then(|per_engine| {
            let weighted: Vec<(f64, Option<u64>)> = per_engine
                .iter()
                .map(|(engine, usage)| {
                    let cap = capacity_by_engine
                        .iter()
                        .find(|(e, _)| e == engine)
                        .map(|(_, c)| *c);
                    (*usage, cap)
                })
                .collect();
            combine_usage(&weighted)
        });
        ServerSnapshot {
            running,
            waiting,
            kv_usage,
            preemptions,
            prefix_cache_queries: queries,
            prefix_cache_hits: hits,
            prompt_tokens: prompt,
            prompt_tokens_by_source: by_source.best(),
            generation_tokens: generation,
            finished_requests: finished.best(),
            kv_capacity_tokens,
            block_size,
            model_name: model_name.map(Cow::into_owned),
            latency: LatencyHistograms::from_exposition(page),
            process_start_time_s,
        }
    }

    /// Each engine's figures of a page whose vLLM samples carry several
    /// `engine` label values (vLLM data parallel, the twin's fleet), in
    /// order of first appearance; empty for a page of one engine.
    pub fn per_engine(page: &Exposition<'_>) -> Vec<(String, ServerSnapshot)> {
        let mut engines: Vec<Cow<'_, str>> = Vec::new();
        for sample in page.samples.iter().filter(|s| s.name.starts_with("vllm:")) {
            if let Some(e) = sample.label("engine") {
                if !engines.contains(&e) {
                    engines.push(e);
                }
            }
        }
        if engines.len() < 2 {
            return Vec::new();
        }
        engines
            .iter()
            .map(|e| {
                let one = Exposition {
                    samples: page
                        .samples
                        .iter()
                        .filter(|s| s.label("engine").as_ref() == Some(e))
                        .cloned()
                        .collect(),
                    helps: page.helps.clone(),
                    types: page.types.clone(),
                };
                (e.to_string(), ServerSnapshot::from_exposition(&one))
            })
            .collect()
    }

    /// The sum over several replicas (one snapshot per `/metrics` URL):
    /// counts and counters add up, maps add up per key, KV usage is the
    /// capacity-weighted mean (plain mean when a capacity is missing), the
    /// block size is the first one known. A field absent everywhere stays absent.
    pub fn sum(snapshots: &[ServerSnapshot]) -> ServerSnapshot {
        fn add(values: impl Iterator<Item = Option<f64>>) -> Option<f64> {
            values
                .flatten()
                .fold(None, |acc, v| Some(acc.unwrap_or(0.0) + v))
        }
        fn merge(
            maps: impl Iterator<Item = Option<BTreeMap<String, f64>>>,
        ) -> Option<BTreeMap<String, f64>> {
            maps.flatten().fold(None, |acc, map| {
                let mut acc = acc.unwrap_or_default();
                for (k, v) in map {
                    *acc.entry(k).or_insert(0.0) += v;
                }
                Some(acc)
            })
        }
        let usage: Vec<(f64, Option<u64>)> = snapshots
            .iter()
            .filter_map(|s| Some((s.kv_usage?, s.kv_capacity_tokens)))
            .collect();
        let capacities: Vec<u64> = snapshots
            .iter()
            .filter_map(|s| s.kv_capacity_tokens)
            .collect();
        let mut models: Vec<&str> = Vec::new();
        for name in snapshots.iter().filter_map(|s| s.model_name.as_deref()) {
            if !models.contains(&name) {
                models.push(name);
            }
        }
        ServerSnapshot {
            running: add(snapshots.iter().map(|s| s.running)),
            waiting: add(snapshots.iter().map(|s| s.waiting)),
            kv_usage: combine_usage(&usage),
            preemptions: add(snapshots.iter().map(|s| s.preemptions)),
            prefix_cache_queries: add(snapshots.iter().map(|s| s.prefix_cache_queries)),
            prefix_cache_hits: add(snapshots.iter().map(|s| s.prefix_cache_hits)),
            prompt_tokens: add(snapshots.iter().map(|s| s.prompt_tokens)),
            prompt_tokens_by_source: merge(
                snapshots.iter().map(|s| s.prompt_tokens_by_source.clone()),
            ),
            generation_tokens: add(snapshots.iter().map(|s| s.generation_tokens)),
            finished_requests: merge(snapshots.iter().map(|s| s.finished_requests.clone())),
            kv_capacity_tokens: (!capacities.is_empty()).then(|| capacities.iter().sum()),
            block_size: snapshots.iter().find_map(|s| s.block_size),
            model_name: (!models.is_empty()).then(|| models.join(", ")),
            latency: snapshots.iter().filter_map(|s| s.latency.as_ref()).fold(
                None,
                |acc: Option<LatencyHistograms>, h| {
                    let mut total = acc.unwrap_or_default();
                    total.merge(h);
                    Some(total)
                },
            ),
            // Several processes have no one start time.
            process_start_time_s: None,
        }
    }

    /// Prefix-cache hit rate since the server started, as a FRACTION 0..1
    /// (hits / queries); `None` without both counters or before any query.
    pub fn prefix_hit_rate(&self) -> Option<f64> {
        let queries = self.prefix_cache_queries?;
        let hits = self.prefix_cache_hits?;
        (queries > 0.0).then(|| hits / queries)
    }

    /// Finished requests since start, all reasons together.
    pub fn finished_total(&self) -> Option<f64> {
        self.finished_requests.as_ref().map(|m| m.values().sum())
    }

    /// Whether any vLLM figure was found (false for a server that is not vLLM).
    pub fn has_vllm_metrics(&self) -> bool {
        ServerSnapshot {
            process_start_time_s: None,
            ..self.clone()
        } != ServerSnapshot::default()
    }
}

/// Combines usage fractions: weighted by capacity when every part has one,
/// else the plain mean. `None` for no parts.
fn combine_usage(parts: &[(f64, Option<u64>)]) -> Option<f64> {
    if parts.is_empty() {
        return None;
    }
    let total_capacity: Option<u64> = parts.iter().map(|(_, c)| *c).sum();
    match total_capacity {
        Some(total) if total > 0 => Some(
            parts
                .iter()
                .map(|(u, c)| u * c.unwrap_or(0) as f64)
                .sum::<f64>()
                / total as f64,
        ),
        _ => Some(parts.iter().map(|(u, _)| u).sum::<f64>() / parts.len() as f64),
    }
}
