//! Does the live server run the profile? After a profile switch the first
//! question is whether the switch took: what the server states about itself
//! is compared with the profile's `[server]` table.
//!
//! | profile key | what the server states |
//! |---|---|
//! | `served_model_name` | an id of `/v1/models` (else the `model_name` label of `/metrics`, which may also be the profile's `model`) |
//! | `max_model_len` | `max_model_len` of that `/v1/models` entry (else of the first one) |
//! | `kv_cache_tokens` | `vllm:cache_config_info`: `kv_cache_size_tokens`, else `num_gpu_blocks × block_size` (data-parallel engines of one page summed) |
//! | `block_size` | `vllm:cache_config_info`: `block_size` |
//! | `enable_prefix_caching` | `vllm:cache_config_info`: `enable_prefix_caching` |
//!
//! Every value must be equal. A field the server does not state (no
//! `/metrics`, a server that is not vLLM, an older vLLM without the label)
//! is *not stated*: listed apart, never a difference.
//!
//! - [`compare`]: one profile against one set of stated values (a plain
//!   function);
//! - [`check`]: a profile against everything the server answered (several
//!   `/metrics` URLs: each replica is compared);
//! - [`check_live`]: `bench` and `classroom` against a live server with a
//!   stated profile: reads, compares, warns on stderr;
//! - [`read_profile_check`]: a run's `profile_check` (`summary.json`, where
//!   the bench and classroom summaries carry it as a field).

mod check;
mod live;

pub use check::{check, ServerAnswers};
pub use live::{check_live, check_target, read_metrics_pages, read_models, read_profile_check};

use std::time::Duration;

use crate::client::ModelInfo;
use codendum_core::profile::ServerSettings;
use codendum_core::prom::{parse, ServerSnapshot};
use codendum_core::results::profile_check::{Difference, Setting, MODELS_SOURCE};

/// The longest the check waits for `/v1/models` (real time).
pub const MODELS_LIMIT: Duration = Duration::from_secs(10);

/// What the server states about itself; `None`: not stated.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StatedSettings {
    /// The ids of `/v1/models` (`None`: not read).
    pub model_ids: Option<Vec<String>>,
    /// Context limit, tokens: `max_model_len` of the `/v1/models` entry.
    pub max_model_len: Option<u64>,
    /// The `model_name` label of `/metrics`.
    pub model_name_label: Option<String>,
    /// KV-cache capacity, tokens (`vllm:cache_config_info`).
    pub kv_cache_tokens: Option<u64>,
    /// KV block size, tokens (`vllm:cache_config_info`).
    pub block_size: Option<u64>,
    /// `enable_prefix_caching` label of `vllm:cache_config_info`.
    pub enable_prefix_caching: Option<bool>,
    /// The `/metrics` URL the last four came from (the `source` of their
    /// differences).
    pub metrics_source: String,
}

impl StatedSettings {
    /// The `/v1/models` part: every id, and the context limit of the entry
    /// named `served` (else of the first entry).
    pub fn from_models(models: &[ModelInfo], served: &str) -> StatedSettings {
        let entry = models
            .iter()
            .find(|m| m.id == served)
            .or_else(|| models.first());
        StatedSettings {
            model_ids: Some(models.iter().map(|m| m.id.clone()).collect()),
            max_model_len: entry.and_then(|m| m.max_model_len),
            ..StatedSettings::default()
        }
    }

    /// The `/metrics` part, from a page's text. `Err`: not Prometheus text.
    pub fn from_metrics_page(text: &str, source: &str) -> Result<StatedSettings, String> {
        let page =
            parse(text).map_err(|e| format!("{source} did not answer Prometheus metrics: {e}"))?;
        let snapshot = ServerSnapshot::from_exposition(&page);
        let prefix = page
            .samples_named("vllm:cache_config_info")
            .find_map(|s| python_bool(&s.label("enable_prefix_caching")?));
        Ok(StatedSettings {
            model_name_label: snapshot.model_name,
            kv_cache_tokens: snapshot.kv_capacity_tokens,
            block_size: snapshot.block_size,
            enable_prefix_caching: prefix,
            metrics_source: source.to_string(),
            ..StatedSettings::default()
        })
    }
}

/// `True` / `False` as vLLM's labels print them (also `true`, `1`, ...).
fn python_bool(text: &str) -> Option<bool> {
    match text.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Some(true),
        "false" | "0" | "no" => Some(false),
        _ => None,
    }
}

/// The outcome of [`compare`]: every field is in exactly one list.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Comparison {
    /// Fields the server states differently, in
    /// [`FIELDS`](codendum_core::results::profile_check::FIELDS) order.
    pub differences: Vec<Difference>,
    /// Fields the server states as the profile says.
    pub matched: Vec<String>,
    /// Fields the server does not state.
    pub not_stated: Vec<String>,
}

/// Compares the profile's `[server]` with what the server states. A field
/// the server does not state is listed in [`Comparison::not_stated`], not as
/// a difference.
pub fn compare(profile: &ServerSettings, stated: &StatedSettings) -> Comparison {
    let mut out = Comparison::default();
    let mut judge =
        |field: &str, profile: Setting, server: Option<(Setting, bool, &str)>| match server {
            None => out.not_stated.push(field.to_string()),
            Some((_, true, _)) => out.matched.push(field.to_string()),
            Some((server, false, source)) => out.differences.push(Difference {
                field: field.to_string(),
                profile,
                server,
                source: source.to_string(),
            }),
        };
    let metrics = stated.metrics_source.as_str();
    let served = &profile.served_model_name;
    let name = match (&stated.model_ids, &stated.model_name_label) {
        (Some(ids), _) => Some((
            Setting::Name(ids.join(", ")),
            ids.contains(served),
            MODELS_SOURCE,
        )),
        // vLLM labels its metrics with the served name; without
        // --served-model-name that is the model path.
        (None, Some(label)) => Some((
            Setting::Name(label.clone()),
            label == served || *label == profile.model,
            metrics,
        )),
        (None, None) => None,
    };
    judge("served_model_name", Setting::Name(served.clone()), name);
    let tokens = |want: u64, have: Option<u64>, source: &'static str| {
        have.map(|h| (Setting::Tokens(h), h == want, source))
    };
    judge(
        "max_model_len",
        Setting::Tokens(u64::from(profile.max_model_len)),
        tokens(
            u64::from(profile.max_model_len),
            stated.max_model_len,
            MODELS_SOURCE,
        ),
    );
    judge(
        "kv_cache_tokens",
        Setting::Tokens(profile.kv_cache_tokens),
        stated
            .kv_cache_tokens
            .map(|h| (Setting::Tokens(h), h == profile.kv_cache_tokens, metrics)),
    );
    let block = u64::from(profile.block_size);
    judge(
        "block_size",
        Setting::Tokens(block),
        stated
            .block_size
            .map(|h| (Setting::Tokens(h), h == block, metrics)),
    );
    let caching = profile.enable_prefix_caching;
    judge(
        "enable_prefix_caching",
        Setting::Flag(caching),
        stated
            .enable_prefix_caching
            .map(|h| (Setting::Flag(h), h == caching, metrics)),
    );
    out
}

#[cfg(test)]
mod tests;
