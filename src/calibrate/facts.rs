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
    /// `--kv-cache-tokens`.
    pub kv_cache_tokens: Option<u64>,
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
        .map(|r| r.prompt_tokens.unwrap_or(0) + r.output_tokens)
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
    let read_kv = snapshots(runs)
        .find_map(|s| number(s, "kv_capacity_tokens"))
        .map(|t| fact(t as u64, "read: KV capacity of vllm:cache_config_info"));
    let kv_cache_tokens = match (overrides.kv_cache_tokens, read_kv) {
        (Some(n), _) => fact(n, "given: --kv-cache-tokens"),
        (None, Some(read)) => read,
        (None, None) => fact(
            u64::from(max_num_seqs.value) * max_model_len.value,
            "default: /metrics not read; seats × max_model_len (pass --kv-cache-tokens: `codendum metrics` on the GPU host shows it)",
        ),
    };
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

/// Seats from the timeline, read only where seats are what limits: the
/// levels of the smallest prompts (the decode ladder), where the step's
/// token budget admits every request at once, so a request waits only for
/// a seat. A level of N in flight whose readings never showed more than
/// R < N running while requests waited says the server has R seats (the
/// largest such R, as a reading can miss the peak). Elsewhere requests also
/// wait for the budget (a long prompt's prefill), which says nothing of the
/// seats. Without such a level, the most seen running (or the largest
/// level), marked as a lower bound.
fn inferred_seats(runs: &[RunInput]) -> Fact<u32> {
    let mut seats: Option<(u32, u32)> = None;
    let mut most_running = 0.0f64;
    let mut most_in_flight = 1u32;
    for r in runs {
        let levels = &r.summary.levels;
        let t0 = levels.first().map_or(0.0, |l| l.started_at_s);
        let smallest = levels
            .iter()
            .filter_map(|l| l.mean_input_tokens)
            .fold(f64::INFINITY, f64::min);
        for l in levels {
            most_in_flight = most_in_flight.max(l.concurrency);
            let (from, to) = (l.started_at_s - t0, l.started_at_s - t0 + l.wall_time_s);
            let inside: Vec<(f64, f64)> = r
                .sampled_at_s
                .iter()
                .zip(&r.timeline)
                .filter(|(t, _)| **t >= from && **t <= to)
                .filter_map(|(_, s)| Some((number(s, "running")?, number(s, "waiting")?)))
                .collect();
            let top = inside.iter().map(|p| p.0).fold(0.0, f64::max);
            most_running = most_running.max(top);
            let ladder = l.mean_input_tokens.is_some_and(|t| t <= smallest * 1.5);
            let waited_at_top = inside.iter().any(|&(run, wait)| run >= top && wait > 0.0);
            if ladder && top >= 1.0 && (top as u32) < l.concurrency && waited_at_top {
                let found = (top as u32, l.concurrency);
                seats = Some(seats.map_or(found, |s: (u32, u32)| s.max(found)));
            }
        }
    }
    match seats {
        Some((n, level)) if f64::from(n) >= most_running => fact(
            n,
            format!("inferred: at {level} in flight with short prompts, running stayed at {n} while requests waited"),
        ),
        _ => {
            let seen = (most_running as u32).max(most_in_flight);
            fact(
                seen,
                format!(
                    "lower bound: {seen} ran at once and none waited for a seat; pass --max-num-seqs (the server's vLLM flag)"
                ),
            )
        }
    }
}
