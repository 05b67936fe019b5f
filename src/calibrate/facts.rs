//! What the runs say about the server's settings, each value with where it
//! came from: read from the server, stated by the embedded twin, inferred
//! from the timeline, given by a flag, or a stated default.

use serde::Serialize;
use serde_json::Value;

use super::input::RunInput;

/// A value and where it came from.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Fact<T> {
    /// The value.
    pub value: T,
    /// Where it came from, in a few words.
    pub source: String,
}

fn fact<T>(value: T, source: impl Into<String>) -> Fact<T> {
    Fact {
        value,
        source: source.into(),
    }
}

/// The `[server]` settings of the profile to write.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerFacts {
    /// The model id clients send.
    pub served_model_name: Fact<String>,
    /// The model path (`model_name` label of `/metrics`).
    pub model: Fact<String>,
    /// Context limit, tokens.
    pub max_model_len: Fact<u64>,
    /// Seats: most requests running at once.
    pub max_num_seqs: Fact<u32>,
    /// Token budget of a step, tokens.
    pub max_num_batched_tokens: Fact<u32>,
    /// KV block size, tokens.
    pub block_size: Fact<u32>,
    /// KV capacity, tokens.
    pub kv_cache_tokens: Fact<u64>,
    /// Prefix caching on.
    pub enable_prefix_caching: Fact<bool>,
}

/// Flags that override what the runs say.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FactOverrides {
    /// `--max-num-seqs`.
    pub max_num_seqs: Option<u32>,
    /// `--max-num-batched-tokens`.
    pub max_num_batched_tokens: Option<u32>,
}

/// vLLM's token budget per step when nothing says otherwise, tokens.
pub const DEFAULT_BATCHED_TOKENS: u32 = 8_192;
/// KV block size when `/metrics` was not read, tokens.
pub const DEFAULT_BLOCK_SIZE: u32 = 16;

fn snapshots(runs: &[RunInput]) -> impl Iterator<Item = &Value> {
    runs.iter().flat_map(|r| r.timeline.iter())
}

fn number(v: &Value, key: &str) -> Option<f64> {
    v.get(key).and_then(Value::as_f64)
}

/// Reads the settings from the runs, the flags winning.
pub fn server_facts(runs: &[RunInput], overrides: FactOverrides) -> ServerFacts {
    let first = &runs[0].summary;
    let engine = first.server.engine;
    let twin = first.server.url == "embedded twin";
    let stated = if twin {
        "stated by the embedded twin"
    } else {
        "stated by the server"
    };
    let served = first.server.model.clone();
    let model = snapshots(runs)
        .find_map(|s| {
            s.get("model_name")
                .and_then(Value::as_str)
                .map(str::to_string)
        })
        .map(|m| fact(m, "read: model_name of /metrics"))
        .unwrap_or_else(|| fact(served.clone(), "default: the served model name"));
    let largest_request = runs
        .iter()
        .flat_map(|r| r.requests.iter())
        .map(|r| r.input_tokens.unwrap_or(0) + r.output_tokens)
        .max()
        .unwrap_or(0);
    let max_model_len = runs
        .iter()
        .find_map(|r| r.summary.server.max_model_len)
        .map(|l| fact(l, "read: max_model_len of /v1/models"))
        .unwrap_or_else(|| {
            fact(
                largest_request.max(2_048),
                "default: not stated by the server; the largest request seen",
            )
        });
    let max_num_seqs = match (overrides.max_num_seqs, engine) {
        (Some(n), _) => fact(n, "given: --max-num-seqs"),
        (None, Some(e)) => fact(e.max_num_seqs, stated),
        (None, None) => inferred_seats(runs),
    };
    let max_num_batched_tokens = match (overrides.max_num_batched_tokens, engine) {
        (Some(n), _) => fact(n, "given: --max-num-batched-tokens"),
        (None, Some(e)) => fact(e.max_num_batched_tokens, stated),
        (None, None) => fact(
            DEFAULT_BATCHED_TOKENS,
            "default: vLLM does not state it; pass --max-num-batched-tokens",
        ),
    };
    let block_size = snapshots(runs)
        .find_map(|s| number(s, "block_size"))
        .map(|b| fact(b as u32, "read: block_size of vllm:cache_config_info"))
        .unwrap_or_else(|| fact(DEFAULT_BLOCK_SIZE, "default: /metrics not read"));
    let kv_cache_tokens = snapshots(runs)
        .find_map(|s| number(s, "kv_capacity_tokens"))
        .map(|t| fact(t as u64, "read: KV capacity of vllm:cache_config_info"))
        .unwrap_or_else(|| {
            fact(
                u64::from(max_num_seqs.value) * max_model_len.value,
                "default: /metrics not read; seats × max_model_len",
            )
        });
    let caching = match engine {
        Some(e) => fact(e.enable_prefix_caching, stated),
        None if snapshots(runs).any(|s| number(s, "prefix_cache_queries").unwrap_or(0.0) > 0.0) => {
            fact(true, "read: the server counted prefix-cache queries")
        }
        None if runs.iter().any(|r| !r.timeline.is_empty()) => {
            fact(false, "read: no prefix-cache queries counted")
        }
        None => fact(true, "default: vLLM's default (on)"),
    };
    let block = block_size.value.max(1);
    let kv = fact(
        (kv_cache_tokens.value / u64::from(block)).max(2) * u64::from(block),
        kv_cache_tokens.source.clone(),
    );
    ServerFacts {
        served_model_name: fact(served, "read: the model the runs requested"),
        model,
        max_model_len,
        max_num_seqs,
        max_num_batched_tokens,
        block_size,
        kv_cache_tokens: kv,
        enable_prefix_caching: caching,
    }
}

/// Seats from the timeline: the most requests ever running, when requests
/// waited while that many ran; else that many, marked as a lower bound.
fn inferred_seats(runs: &[RunInput]) -> Fact<u32> {
    let readings: Vec<(f64, f64)> = snapshots(runs)
        .filter_map(|s| Some((number(s, "running")?, number(s, "waiting")?)))
        .collect();
    let top = readings.iter().map(|r| r.0).fold(0.0, f64::max);
    if top >= 1.0 && readings.iter().any(|&(run, wait)| run >= top && wait > 0.0) {
        return fact(
            top as u32,
            format!("inferred: running stayed at {top:.0} while requests waited"),
        );
    }
    let level = runs
        .iter()
        .flat_map(|r| r.summary.levels.iter().map(|l| l.concurrency))
        .max()
        .unwrap_or(1);
    let seen = (top as u32).max(level);
    fact(
        seen,
        format!("lower bound: {seen} ran at once and none waited for a seat; pass --max-num-seqs"),
    )
}
